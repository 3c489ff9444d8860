"""Collectives on buffers in node shared memory (pgascol.empty / zeros /
free): the engine reads peers' blocks through its own mapping of them.

Every collective with shared buffers on both sides, mixed (shared send and
private receive, and the reverse) and in place, checked against numpy;
proof that no kernel copy (process_vm_readv/writev) moves shared buffers
on one node, and that single copy is taken with it disabled
(PGASCOL_CMA=0); free, use after free, the communicator's Free. Run with
1, 2, 3, 4 and 8 ranks, without single copy, and on virtual nodes."""
import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas
from pgascol.errors import ArgumentError
from tests.mpi_programs import raises

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
ST = COMM._pg
# inline (a few elements), staged or single copy (40 KB), large (1.2 MB)
SIZES = (3, 5000, 150000)
KINDS = (("shared", "shared"), ("shared", "private"), ("private", "shared"))


class Buffers:
    """Arrays by (role, shape): shared ones allocated once per role and shape."""

    def __init__(self):
        self.shared = {}

    def get(self, role, kind, shape, dtype=np.float64):
        if kind == "private":
            return np.zeros(shape, dtype)
        key = (role, shape, np.dtype(dtype).str)
        if key not in self.shared:
            self.shared[key] = pgascol.zeros(COMM, shape, dtype)
        buf = self.shared[key]
        buf.fill(0)
        return buf

    def free(self):
        for buf in self.shared.values():
            pgascol.free(buf)
        self.shared.clear()


def _copies():
    return dict(ST.core.single_copies())


def _one_node():
    """The engine runs whole collectives (no hierarchy) with peers to copy from."""
    return not ST.hier and P > 1


def _check_no_kernel_copy(before, what):
    after = _copies()
    if _one_node():
        assert after["kernel"] == before["kernel"], (what, before, after)
        assert after["shared"] > before["shared"], (what, before, after)


def test_empty_and_zeros():
    before = ST.core.regions
    a = pgascol.empty(COMM, (3, 5), np.int32)
    z = pgascol.zeros(COMM, 7)
    assert type(a) is np.ndarray and a.shape == (3, 5) and a.dtype == np.int32
    assert z.dtype == np.float64 and (z == 0).all() and z.flags.writeable
    assert a.__array_interface__["data"][0] % 4096 == 0
    assert ST.core.regions == before + 2
    # each rank's part is its own: a peer's array lies elsewhere in the node's segment
    mine = a.__array_interface__["data"][0]
    assert ST.team.region_of(mine) is not None
    e = pgascol.empty(COMM, 0)
    assert e.size == 0
    for buf in (a, z, e):
        pgascol.free(buf)
    assert ST.core.regions == before
    raises(ArgumentError, lambda: pgascol.free(a))
    raises(ArgumentError, lambda: pgascol.free(np.zeros(3)))


def test_mismatched_allocation_refused_everywhere():
    if P > 1:
        raises(ArgumentError, lambda: pgascol.empty(COMM, 10 + (ME == P - 1)))
    raises(ArgumentError, lambda: pgascol.empty(COMM, -1))
    raises(ArgumentError, lambda: pgascol.empty(COMM, 4, object))
    # refused on one rank only: every rank raises, none waits for the others
    raises(ArgumentError, lambda: pgascol.empty(COMM, -1 if ME == 0 else 4))
    x = np.full(4, ME, np.int64)
    y = np.zeros(4 * P, np.int64)
    COMM.Allgather(x, y)    # still usable
    assert np.array_equal(y, np.repeat(np.arange(P), 4))


def test_gather_allgather_alltoall():
    bufs = Buffers()
    for n in SIZES:
        for skind, rkind in KINDS:
            before = _copies()
            s = bufs.get("s", skind, n)
            s[:] = np.arange(n) + 1000.0 * ME
            want = np.concatenate([np.arange(n) + 1000.0 * r for r in range(P)])
            r = bufs.get("r", rkind, n * P)
            COMM.Allgather(s, r)
            assert np.array_equal(r, want), ("Allgather", n, skind, rkind)
            r.fill(0)
            counts = [n] * P
            COMM.Allgatherv(s, [r, counts])
            assert np.array_equal(r, want), ("Allgatherv", n, skind, rkind)
            for root in range(P):
                r.fill(0)
                COMM.Gather(s, r if ME == root else None, root)
                if ME == root:
                    assert np.array_equal(r, want), ("Gather", n, skind, rkind, root)
            root = P - 1
            r.fill(0)
            COMM.Gatherv(s, [r, counts] if ME == root else None, root)
            if ME == root:
                assert np.array_equal(r, want), ("Gatherv", n, skind, rkind)
            # Alltoall: the block for q holds (ME, q)
            s2 = bufs.get("s", skind, n * P)
            s2[:] = np.repeat(np.arange(P) + 100.0 * ME, n)
            r2 = bufs.get("r", rkind, n * P) if rkind == "private" else bufs.get("r", rkind, (P, n))
            COMM.Alltoall(s2, r2)
            want2 = np.repeat(ME + 100.0 * np.arange(P), n)
            assert np.array_equal(r2.ravel(), want2), ("Alltoall", n, skind, rkind)
            r2.fill(0)
            COMM.Alltoallv([s2, counts], [r2, counts])
            assert np.array_equal(r2.ravel(), want2), ("Alltoallv", n, skind, rkind)
            if skind == rkind == "shared" and n == SIZES[-1]:
                _check_no_kernel_copy(before, "gather/allgather/alltoall")
    bufs.free()


def test_bcast_scatter_and_reductions():
    bufs = Buffers()
    for n in SIZES:
        for skind, rkind in KINDS:
            for root in sorted({0, P - 1}):
                b = bufs.get("r", rkind, n)
                if ME == root:
                    b[:] = np.arange(n) * 3.0
                COMM.Bcast(b, root)
                assert np.array_equal(b, np.arange(n) * 3.0), ("Bcast", n, rkind, root)
                s = bufs.get("s", skind, n * P)
                if ME == root:
                    s[:] = np.arange(n * P)
                r = bufs.get("r", rkind, n)
                COMM.Scatter(s if ME == root else None, r, root)
                assert np.array_equal(r, np.arange(ME * n, (ME + 1) * n)), ("Scatter", n, skind, rkind)
            x = bufs.get("s", skind, n)
            x[:] = np.arange(n) * (ME + 1)
            total = np.arange(n) * (P * (P + 1) // 2)
            y = bufs.get("r", rkind, n)
            COMM.Allreduce(x, y, MPI.SUM)
            assert np.array_equal(y, total), ("Allreduce", n, skind, rkind)
            y.fill(0)
            COMM.Reduce(x, y, MPI.SUM, P - 1)
            if ME == P - 1:
                assert np.array_equal(y, total), ("Reduce", n, skind, rkind)
            y.fill(0)
            COMM.Scan(x, y, MPI.SUM)
            assert np.array_equal(y, np.arange(n) * ((ME + 1) * (ME + 2) // 2)), ("Scan", n)
            big = bufs.get("s", skind, n * P)
            big[:] = np.arange(n * P) + ME
            part = bufs.get("r", rkind, n)
            COMM.Reduce_scatter_block(big, part, MPI.SUM)
            want = np.arange(ME * n, (ME + 1) * n) * P + P * (P - 1) // 2
            assert np.array_equal(part, want), ("Reduce_scatter_block", n, skind, rkind)
    bufs.free()


def test_in_place():
    bufs = Buffers()
    for n in SIZES:
        r = bufs.get("r", "shared", n * P)
        r[ME * n:(ME + 1) * n] = np.arange(n) + 10.0 * ME
        COMM.Allgather(MPI.IN_PLACE, r)
        assert np.array_equal(r, np.concatenate([np.arange(n) + 10.0 * q for q in range(P)]))
        r[:] = np.repeat(np.arange(P) + 100.0 * ME, n)
        COMM.Alltoall(MPI.IN_PLACE, r)
        assert np.array_equal(r, np.repeat(ME + 100.0 * np.arange(P), n))
        r.fill(0)
        r[ME * n:(ME + 1) * n] = ME + 1
        if ME == 0:
            COMM.Gather(MPI.IN_PLACE, r, 0)
            assert np.array_equal(r, np.repeat(np.arange(P) + 1.0, n))
        else:
            COMM.Gather(r[ME * n:(ME + 1) * n], None, 0)
        y = bufs.get("r", "shared", n)
        y[:] = ME + 1
        COMM.Allreduce(MPI.IN_PLACE, y, MPI.SUM)
        assert (y == P * (P + 1) // 2).all()
    bufs.free()


def test_single_copy_without_process_vm_readv():
    """Shared buffers above the inline size take single copy on one node,
    also where the kernel's single copy is off (PGASCOL_CMA=0)."""
    n = 20000
    s, r = pgascol.zeros(COMM, n), pgascol.zeros(COMM, n * P)
    s[:] = ME
    before = dict(pgascol.stats(COMM).get("Allgather", {}))
    copies = _copies()
    COMM.Allgather(s, r)
    assert np.array_equal(r, np.repeat(np.arange(P, dtype=float), n))
    if _one_node():
        after = pgascol.stats(COMM)["Allgather"]
        assert after.get("cma", 0) == before.get("cma", 0) + 1, (before, after, ST.core.cma_ok)
        _check_no_kernel_copy(copies, "Allgather")
    pgascol.free(s)
    pgascol.free(r)


def test_bcast_readers_pull_a_shared_root_buffer():
    """A Bcast whose root buffer is shared moves by single copy whatever the
    team's path for the size (staging below the single-copy threshold, or
    without process_vm_readv): every reader pulls the message through its
    own mapping of the root's buffer, into a private or a shared buffer."""
    for n in (2000, 20000, 300000):               # 16 KB to 2.4 MB: both sides of the thresholds
        b = pgascol.zeros(COMM, n)
        private = np.zeros(n)
        for root in sorted({0, P - 1}):
            for out in (b, private):
                if ME == root:
                    b[:] = np.arange(n) + root
                    out = b
                else:
                    out.fill(-1)
                copies = _copies()
                COMM.Bcast(out, root)
                assert np.array_equal(out, np.arange(n) + root), (n, root)
                if ME != root:
                    _check_no_kernel_copy(copies, "Bcast")
            COMM.Barrier()
        pgascol.free(b)


def test_freed_buffer_is_ordinary_memory():
    n = 20000
    s, r = pgascol.zeros(COMM, n), pgascol.zeros(COMM, n * P)
    pgascol.free(s)
    pgascol.free(r)
    s[:] = ME + 0.5
    copies = _copies()
    COMM.Allgather(s, r)      # private buffers to the engine now: kernel copy or staging
    assert np.array_equal(r, np.repeat(np.arange(P) + 0.5, n))
    after = _copies()
    if _one_node():
        assert after["shared"] == copies["shared"], (copies, after)


def test_global_array_local_views():
    n = 20000 * P
    with pgas.zeros(COMM, n, np.float64, block="*") as a:
        mine = a.local()
        mine[:] = ME
        out = pgascol.zeros(COMM, len(mine) * P)
        copies = _copies()
        COMM.Allgather(mine, out)
        assert np.array_equal(out, np.repeat(np.arange(P, dtype=float), len(mine)))
        _check_no_kernel_copy(copies, "Allgather of local() views")
        pgascol.free(out)


def test_freed_with_the_communicator():
    dup = COMM.Dup()
    team = dup._pg.team
    buf = pgascol.zeros(dup, 1000)
    assert team.core.regions == 1
    dup.Free()
    assert team.core is None and not team.regions
    buf[:] = 1      # still mapped: ordinary memory
    assert buf.sum() == 1000
    raises(ArgumentError, lambda: pgascol.free(buf))
