"""Revoked communicators (MPI's ULFM, mpi4py's test_ulfm) on pgascol.Comm.
Where the MPI has ULFM (Open MPI 5), a communicator revoked by any rank
makes every collective on it, on every rank, raise an MPI.Exception whose
error class is MPI.ERR_REVOKED (pgascol.errors.RevokedError), ranks already
waiting in a node collective at once, ranks on other nodes through MPI's
own revocation of the inter-node communicators. Where it has none (MPICH's
default build) Revoke raises NotImplementedError, as mpi4py's does, and the
communicator stays usable."""
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import RevokedError

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
ULFM = MPI.ERR_REVOKED != MPI.ERR_UNKNOWN    # mpi4py's value where the MPI lacks ULFM


def _assert_revoked(call, what, within):
    start = time.monotonic()
    try:
        call()
    except MPI.Exception as exc:
        assert isinstance(exc, RevokedError) or exc.Get_error_class() == MPI.ERR_REVOKED, repr(exc)
        assert exc.Get_error_class() == MPI.ERR_REVOKED, (exc.Get_error_class(), repr(exc))
        assert time.monotonic() - start < within, (what, time.monotonic() - start)
        return str(exc)
    raise AssertionError("%s on a revoked communicator did not raise" % what)


def test_revoke_by_one_rank_reaches_every_rank(comm):
    c = pgascol.Comm(comm.Dup())
    c.Barrier()
    assert not c.Is_revoked()
    x = np.ones(4)
    if not ULFM:
        if ME == 0:
            try:
                c.Revoke()
            except NotImplementedError:
                pass
            else:
                raise AssertionError("Revoke did not raise NotImplementedError without ULFM")
        # nothing was revoked: the communicator works
        y = np.empty(4)
        c.Allreduce(x, y)
        assert (y == P).all()
        c.Free()
        return
    if ME == P - 1:
        time.sleep(0.5)         # the others are waiting in the Barrier
        c.Revoke()
        assert c.Is_revoked()
    # well under PGASCOL_TIMEOUT (20 s): those waiting leave at once
    msg = _assert_revoked(c.Barrier, "Barrier", 5.0)
    assert "Barrier" in msg, msg
    _assert_revoked(lambda: c.Allreduce(x, np.empty(4)), "Allreduce", 2.0)
    _assert_revoked(lambda: c.Bcast(x, 0), "Bcast", 2.0)
    if not c._pg.hier:
        # one node: through the node team; across nodes the pickle-based
        # collectives are mpi4py's own over MPI, which reports the
        # revocation only where it carried it (mpiexec --with-ft ulfm)
        _assert_revoked(lambda: c.allreduce(1), "allreduce", 2.0)
    # Is_revoked is MPI's: true on the rank that revoked; on the others
    # once MPI's revocation reached them (Open MPI carries it only when
    # its fault tolerance is enabled at launch, mpiexec --with-ft ulfm)
    assert c.Is_revoked() or ME != P - 1
    c.Free()
    WORLD.Barrier()


def test_revoke_by_every_rank(comm):
    """mpi4py's testRevoke: every rank revokes, then Barrier."""
    c = pgascol.Comm(comm.Dup())
    c.Set_errhandler(MPI.ERRORS_RETURN)
    assert not c.Is_revoked()
    try:
        c.Revoke()
    except NotImplementedError:
        assert not ULFM
        c.Barrier()         # still usable
        c.Free()
        return
    assert ULFM and c.Is_revoked()
    _assert_revoked(c.Barrier, "Barrier", 2.0)
    _assert_revoked(lambda: c.Gather(np.ones(2), np.empty(2 * P) if ME == 0 else None, 0), "Gather", 2.0)
    c.Free()
    WORLD.Barrier()


def test_other_communicators_stay_usable(comm):
    """A revoked communicator does not touch another one (its own node team)."""
    a = pgascol.Comm(comm.Dup())
    b = pgascol.Comm(comm.Dup())
    if ULFM:
        if ME == 0:
            a.Revoke()
        _assert_revoked(a.Barrier, "Barrier", 5.0)
    y = np.empty(3)
    b.Allreduce(np.full(3, ME, np.float64), y)
    assert (y == P * (P - 1) / 2).all()
    a.Free()
    b.Free()


def test_error_classes():
    """pgascol's errors carry MPI's classes; what the engine raises once MPI
    is loaded is also an MPI.Exception (in_mpi)."""
    from pgascol.errors import ArgumentError, PeerDeadError, TeamAbortedError, in_mpi
    assert issubclass(in_mpi(PeerDeadError), (PeerDeadError, MPI.Exception))
    assert issubclass(in_mpi(PeerDeadError), MPI.Exception)
    assert PeerDeadError("x").Get_error_class() == MPI.ERR_PROC_FAILED
    assert in_mpi(RevokedError)("x").Get_error_class() == MPI.ERR_REVOKED
    assert ArgumentError("x").Get_error_class() == MPI.ERR_ARG
    assert TeamAbortedError("x").Get_error_class() == MPI.ERR_OTHER
    assert str(in_mpi(ArgumentError)("bad count")) == "bad count"


def test_engine_errors_are_mpi_exceptions(comm):
    """A mismatch found by the engine (one rank skipped a Bcast) is an
    MPI.Exception, error class ERR_OTHER, on the ranks that find it."""
    c = pgascol.Comm(comm.Dup())
    if c._pg.hier or P == 1:
        c.Free()
        return
    x = np.zeros(1)
    try:
        if ME == 0:
            c.Allreduce(x, np.empty(1))
        else:
            c.Barrier()
    except MPI.Exception as exc:
        assert isinstance(exc, pgascol.PgascolError), repr(exc)
        assert exc.Get_error_class() == MPI.ERR_OTHER
    else:
        raise AssertionError("the mismatch did not raise")
    c.Free()
