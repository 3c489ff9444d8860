"""What the comm_errors_*.py programs share: they run in one launch, in the
chapter test_errors of tests/test_mpi_programs.py (PGASCOL_TIMEOUT=3).
COMM_WORLD's rank and size, a fresh communicator on one node team, the
checks that a communicator is still usable after a call that failed on some
ranks, and a buffer that pgascol leaves to MPI."""
import time

import numpy as np
from mpi4py import MPI

import pgascol

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()


def _next_allreduce_fails_or_is_right(c, *where):
    """After a call that failed on some ranks: the next Allreduce raises or
    gives the right sum on every rank, at once (never another call's data)."""
    start = time.monotonic()
    y = np.zeros(3)
    try:
        c.Allreduce(np.full(3, ME, "d"), y)
    except pgascol.PgascolError:
        pass
    else:
        assert np.all(y == sum(range(P))), (ME, y) + where
    assert time.monotonic() - start < 2.5, (ME, time.monotonic() - start) + where


def _flat_comm():
    """A fresh communicator on one node team, or None (hierarchies and one
    rank: the cases below are about ranks of one team)."""
    c = pgascol.Comm(WORLD.Dup())
    if c._pg.hier or P == 1:
        c.Free()
        return None
    return c


def _still_usable(c):
    """The next collectives pair up as called and give the right results."""
    for k in range(2):
        x = np.full(100, ME + k, "d")
        y = np.zeros_like(x)
        c.Allreduce(x, y)
        assert np.all(y == sum(range(P)) + P * k), (k, y[0])
        b = np.full(10, ME + 100 * k, "d")
        c.Bcast(b, root=P - 1)
        assert np.all(b == P - 1 + 100 * k), (k, b[0])
        out = np.zeros(2)
        c.Scatter(np.repeat(np.arange(P, dtype="d"), 2) if ME == 0 else None, out, root=0)
        assert np.all(out == ME), out


class _DLPackOnly:
    """A buffer mpi4py takes through DLPack alone (no buffer protocol):
    pgascol leaves a call with it to MPI."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()
