"""pgascol.Comm when only some ranks err: the rank that sees the misuse
raises at once; the others, already in the engine, raise a timeout naming the
operation within PGASCOL_TIMEOUT (or the team's abort by the first of them
that timed out, naming the operation too) (tests/test_comm_robustness.py sets it to
3 s). Also with virtual nodes, where the others wait in an inter-node MPI
phase: those waits are bounded the same way."""
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import ArgumentError, PgascolTimeoutError, TeamAbortedError

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()


def _partial(op_name, call_bad, call_good):
    c = pgascol.Comm(WORLD.Dup())
    start = time.monotonic()
    try:
        if ME == 0:
            try:
                call_bad(c)
            except ArgumentError:
                pass
            else:
                raise AssertionError("the bad call did not raise")
        else:
            try:
                call_good(c)
            except (PgascolTimeoutError, TeamAbortedError) as exc:
                # the first to time out aborts the team: the others see that
                assert op_name in str(exc), str(exc)
                assert time.monotonic() - start < 30
            else:
                raise AssertionError("no timeout on rank %d" % ME)
    finally:
        c.Free()


def test_partial_allreduce_error_times_out_others():
    ro = np.zeros(4)
    ro.flags.writeable = False
    _partial("Allreduce", lambda c: c.Allreduce(np.ones(4), ro),
             lambda c: c.Allreduce(np.ones(4), np.zeros(4)))


def test_partial_bcast_error_times_out_others():
    _partial("Bcast", lambda c: c.Bcast(np.zeros(4), root=P),
             lambda c: c.Bcast(np.zeros(4), root=0))


def test_world_still_usable():
    c = pgascol.Comm(WORLD)
    x = np.ones(3)
    c.Allreduce(MPI.IN_PLACE, x)
    assert np.all(x == P)
    c.Free()
