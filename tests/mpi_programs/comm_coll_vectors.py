"""Vector collectives of pgascol.Comm (mpi4py's test_cco_vec): Gatherv,
Scatterv, Allgatherv and Alltoallv with uneven counts, with and without gaps
between the blocks, each against the native communicator on the same data;
run in one launch with comm_coll_buffers.py (see there)."""
import numpy as np
from mpi4py import MPI

from tests.mpi_programs import assert_same as same
from tests.mpi_programs import both, data, world_comms

NATIVE, PG = world_comms()
P, ME = PG.Get_size(), PG.Get_rank()


def _uneven_layouts():
    """(counts, displs, extent) of the Gatherv and Scatterv tests: uneven
    counts (zeros included), small and large, with gaps and without."""
    for scale, gap in ((1, 2), (3000, 2), (3000, 0)):
        counts = [((r * 5 + 1) % 4) * scale for r in range(P)]
        displs = [sum(counts[:r]) + gap * r for r in range(P)]
        yield counts, displs, displs[-1] + counts[-1] + 3


def test_gatherv():
    for counts, displs, total in _uneven_layouts():
        for root in range(P):
            def f(c):
                s = data(ME, counts[ME], np.int16, salt=root)
                r = np.full(total, -1, np.int16)
                c.Gatherv(s, [r, (counts, displs), MPI.SHORT] if ME == root else None, root)
                return r if ME == root else np.zeros(0, np.int16)
            a, b = both(f)
            same(a, b, ("Gatherv", counts, displs, root))


def test_scatterv():
    for counts, displs, total in _uneven_layouts():
        for root in range(P):
            def f(c):
                src = np.arange(total, dtype=np.int16) if ME == root else None
                out = np.full(counts[ME] + 2, -1, np.int16)
                c.Scatterv([src, counts, displs, MPI.SHORT] if ME == root else None,
                           [out, counts[ME], MPI.SHORT], root)
                return out
            a, b = both(f)
            same(a, b, ("Scatterv", counts, displs, root))


def test_allgatherv():
    counts = [(r % 3) * 11 + 1 for r in range(P)]
    displs = [sum(counts[:r]) + r for r in range(P)]
    total = displs[-1] + counts[-1] + 1
    tight = [sum(counts[:r]) for r in range(P)]       # blocks one after another (hierarchy: in order)

    def f(c):
        r = np.full(total, -1.0)
        c.Allgatherv(data(ME, counts[ME]), [r, (counts, displs), MPI.DOUBLE])
        t = np.full(sum(counts) + 1, -1.0)
        c.Allgatherv(data(ME, counts[ME]), [t, (counts, tight), MPI.DOUBLE])
        ti = np.full(sum(counts), -1.0)
        ti[tight[ME]:tight[ME] + counts[ME]] = data(ME, counts[ME])
        c.Allgatherv(MPI.IN_PLACE, [ti, (counts, tight), MPI.DOUBLE])
        return np.concatenate([r, t, ti])
    a, b = both(f)
    same(a, b, "Allgatherv")


def test_alltoallv():
    def f(c):
        sc = [(ME + j) % 3 + 1 for j in range(P)]
        rc = [(j + ME) % 3 + 1 for j in range(P)]
        sd = [sum(sc[:j]) for j in range(P)]
        rd = [sum(rc[:j]) + j for j in range(P)]
        sbuf = np.arange(sum(sc), dtype=np.float64) + 100 * ME
        rbuf = np.full(rd[-1] + rc[-1] + 1, -1.0)
        c.Alltoallv([sbuf, (sc, sd), MPI.DOUBLE], [rbuf, (rc, rd), MPI.DOUBLE])
        return rbuf
    a, b = both(f)
    same(a, b, "Alltoallv")
