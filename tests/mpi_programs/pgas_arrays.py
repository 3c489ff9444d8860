"""pgascol.pgas: global arrays on one node and across (virtual) nodes.

Every rank runs every test function; results are checked against numpy
computing the same thing on every rank. Run with 1, 2, 3, 4 and 8 ranks,
and with PGASCOL_NODE_SIZE for the inter-node (MPI RMA) paths."""
import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas
from pgascol.errors import ArgumentError, FreedError, IndexOutOfRangeError, PgascolTimeoutError

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
BLOCKS = (1, 3, "*", 0)


def _expect(exc_type, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc_type as exc:
        return exc
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc_type.__name__))


def test_layouts_follow_upc_formulas():
    for block in BLOCKS:
        with pgas.zeros(COMM, 37, np.int64, block=block) as a:
            B = {1: 1, 3: 3, "*": -(-37 // P), 0: 37}[block]
            i = np.arange(37)
            assert np.array_equal(a.owner(i), (i // B) % P)
            assert np.array_equal(a.local_index(i), (i // (B * P)) * B + i % B)
            mine = [j for lo, hi in a.owned() for j in range(lo, hi)]
            assert mine == list(i[(i // B) % P == ME])
            assert len(a.local()) == len(mine) and a.block == B and a.nbytes == 37 * 8


def test_irregular_counts():
    counts = [(r * 7 + 3) % 5 for r in range(P)]
    with pgas.zeros(COMM, None, np.float64, counts=counts) as a:
        assert len(a.local()) == counts[ME]
        a.local()[:] = np.arange(counts[ME]) + 100 * ME
        pgas.barrier(COMM)
        want = np.concatenate([np.arange(c) + 100 * r for r, c in enumerate(counts)])
        assert np.array_equal(a[:], want)


def test_local_writes_then_global_reads():
    for block in BLOCKS:
        with pgas.zeros(COMM, 101, np.int64, block=block) as a:
            g = np.concatenate([np.arange(lo, hi) for lo, hi in a.owned()] + [np.zeros(0, np.int64)])
            a.local()[:] = g * 10
            pgas.barrier(COMM)
            assert np.array_equal(a[:], np.arange(101) * 10)
            assert a[7] == 70 and a[-1] == 1000
            idx = np.array([5, 99, 0, 5, 42])
            assert np.array_equal(a[idx], idx * 10)
            assert np.array_equal(a[3:90:7], np.arange(3, 90, 7) * 10)
            out = np.empty(20, np.int64)
            a.get(30, out)
            assert np.array_equal(out, np.arange(30, 50) * 10)


def test_random_put_get_round_trips():
    rng = np.random.default_rng(7)
    for block in BLOCKS:
        with pgas.zeros(COMM, 257, np.float64, block=block) as a:
            for writer in range(P):
                idx = rng.permutation(257)[:60]
                vals = rng.random(60)
                if ME == writer:
                    a[idx] = vals
                pgas.barrier(COMM)
                got = a[idx]
                assert np.array_equal(got, vals), (block, writer)
                pgas.barrier(COMM)


def test_bulk_put_and_copy():
    with pgas.zeros(COMM, 200, np.int32, block=4) as a, pgas.zeros(COMM, 200, np.int32, block="*") as b:
        if ME == P - 1:
            a.put(10, np.arange(150, dtype=np.int32), strict=True)
        pgas.barrier(COMM)
        assert np.array_equal(a[10:160], np.arange(150))
        if ME == 0:
            pgas.copy(b, 0, a, 10, 150)
        pgas.barrier(COMM)
        assert np.array_equal(b[0:150], np.arange(150)) and (b[150:] == 0).all()
        out = np.empty(150, np.int32)
        assert np.array_equal(b.get(0, out), np.arange(150))      # one contiguous run per owner
        assert np.array_equal(b.get_nb(50, np.empty(100, np.int32)).wait(), np.arange(50, 150))
        h = a.get_nb(10, np.empty(150, np.int32))
        assert np.array_equal(h.wait(), np.arange(150))


def test_put_with_duplicates_last_wins():
    with pgas.zeros(COMM, 50, np.int64, block=1) as a:
        if ME == 0:
            a[np.array([3, 7, 3])] = np.array([1, 2, 9])
        pgas.barrier(COMM)
        assert a[3] == 9 and a[7] == 2


def test_updates_with_duplicates_are_exact():
    for block in (1, 3, "*"):
        with pgas.zeros(COMM, 64, np.int64, block=block) as a:
            idx = np.array([3, 3, 50, 3, 63])
            a.update(idx, np.array([1, 2, 3, 4, 5]), MPI.SUM)
            pgas.barrier(COMM)
            want = np.zeros(64, np.int64)
            np.add.at(want, idx, np.array([1, 2, 3, 4, 5]) * P)
            assert np.array_equal(a[:], want), block
            pgas.barrier(COMM)                      # everyone has read before anyone updates again
            a.update(np.arange(64), ME + 1, "bxor")
            pgas.barrier(COMM)
            x = 0
            for r in range(P):
                x ^= r + 1
            assert np.array_equal(a[:], want ^ x)


def test_bitwise_updates_between_nodes_are_refused_where_open_mpi_would_lose_them():
    """Under Open MPI with osc/rdma's network atomics on
    (OMPI_MCA_osc_rdma_acc_use_amo not 0), an array across nodes refuses
    BAND, BOR and BXOR updates and fetch_ops before anything moves, naming
    the setting; SUM and MAX, which it applies right, still run. Elsewhere
    (MPICH, one node, the setting 0) bitwise updates run."""
    from pgascol.pgas.context import bitwise_updates_lost
    with pgas.zeros(COMM, 8, np.int64) as a:
        if a._win is not None and bitwise_updates_lost():
            for op in ("band", "bor", MPI.BXOR):
                for call in (lambda: a.update(np.arange(8), 1, op), lambda: a.fetch_op(0, 1, op)):
                    assert "OMPI_MCA_osc_rdma_acc_use_amo=0" in str(_expect(ArgumentError, call))
            pgas.barrier(COMM)
            assert not a[:].any()                   # nothing moved
        else:
            a.update(np.arange(8), ME + 1, "bor")
            pgas.barrier(COMM)
            want = 0
            for r in range(P):
                want |= r + 1
            assert (a[:] == want).all(), a[:]
        pgas.barrier(COMM)
    with pgas.zeros(COMM, 8, np.int64) as a:
        a.update(np.arange(8), 1, "sum")
        pgas.barrier(COMM)
        a.update(np.arange(8), 2 * ME, MPI.MAX)
        pgas.barrier(COMM)
        assert (a[:] == max(P, 2 * (P - 1))).all(), a[:]


def test_updates_on_every_layout_dtype_and_operator():
    """update finds each index's owner (on one node in C: shifts and masks
    for a power-of-two block and rank count, divisions otherwise); the
    result is numpy's ufunc.at of everyone's updates."""
    cases = ((np.uint64, "bxor", np.bitwise_xor), (np.int32, "sum", np.add),
             (np.float64, "max", np.maximum), (np.int64, "min", np.minimum))
    for block in (1, 3, 4, "*", 0):
        for dtype, op, ufunc in cases:
            with pgas.full(COMM, 70, 50, dtype, block=block) as a:
                def mine(r):
                    rng = np.random.default_rng(r)
                    return rng.integers(0, 70, 40), rng.integers(0, 100, 40).astype(dtype)
                a.update(*mine(ME), op)
                pgas.barrier(COMM)
                want = np.full(70, 50, dtype)
                for r in range(P):
                    ufunc.at(want, *mine(r))
                assert np.array_equal(a[:], want), (block, dtype, op)
                pgas.barrier(COMM)


def test_update_refuses_a_bad_index_before_applying_any():
    with pgas.zeros(COMM, 10, np.int64, block=3) as a:
        _expect(IndexOutOfRangeError, a.update, np.array([1, 2, 10]), 1, "sum")
        _expect(IndexOutOfRangeError, a.update, np.array([4, -1]), 1, "sum")
        _expect(ArgumentError, a.update, np.array([1.0]), 1, "sum")
        _expect(ArgumentError, a.update, 4, np.array(1.5), "sum")      # float values, one element
        a.update(4, 7, "sum")                       # one element
        pgas.barrier(COMM)
        want = np.zeros(10, np.int64)
        want[4] = 7 * P
        assert np.array_equal(a[:], want)


def test_elements_and_slices():
    for block in BLOCKS:
        with pgas.zeros(COMM, 50, np.float64, block=block) as a:
            want = np.zeros(50)
            want[0:50:7] = np.arange(0, 50, 7) + 0.5
            want[10:20] = np.arange(10.0)
            want[-1] = -1.0
            if ME == P - 1:
                for i in range(0, 50, 7):
                    a[i] = i + 0.5
                a[10:20] = np.arange(10.0)
                a[-1] = -1.0
            pgas.barrier(COMM)
            assert np.array_equal(a[:], want) and np.array_equal(a[10:20], want[10:20])
            assert a[-1] == -1.0 and a[7] == 7.5 and len(a[5:5]) == 0
            _expect(IndexOutOfRangeError, a.__setitem__, 50, 1.0)
            _expect(ArgumentError, a.__setitem__, slice(0, 3), np.arange(4.0))
            pgas.barrier(COMM)


def test_all_ranks_hammer_one_word():
    with pgas.zeros(COMM, 1, np.int64, block=0) as a, pgas.full(COMM, 1, -1e300, np.float64, block=0) as m:
        for _ in range(20):
            a.update(np.zeros(50, np.int64), 1, "sum")
        m.update([0], float(ME), "max")
        pgas.barrier(COMM)
        assert a[0] == 20 * 50 * P and m[0] == P - 1


def test_fetch_op_and_compare_swap_counters():
    with pgas.zeros(COMM, 2, np.int64, block=1) as a:
        olds = [int(a.fetch_op(0, 1, "sum")) for _ in range(25)]
        pgas.barrier(COMM)
        assert a[0] == 25 * P
        everyone = sorted(sum(COMM.allgather(olds), []))
        assert everyone == list(range(25 * P))      # every ticket taken exactly once
        for _ in range(10):             # an increment by compare-and-swap, retried until it wins
            while True:
                cur = int(a[1])
                if a.compare_swap(1, cur, cur + 1) == cur:
                    break
        pgas.barrier(COMM)
        assert a[1] == 10 * P


def test_lock_guards_read_modify_write():
    lock = pgas.Lock(COMM)
    with pgas.zeros(COMM, 1, np.int64, block=0) as count:
        for _ in range(30):
            with lock:
                v = count[0]
                count.put(0, np.array([v + 1]), strict=True)
        pgas.barrier(COMM)
        assert count[0] == 30 * P
    assert lock.held_by() == -1
    _expect(ArgumentError, lock.release)                 # not the holder
    pgas.barrier(COMM)
    if ME == 0:
        assert lock.acquire(blocking=False)
    pgas.barrier(COMM)
    if ME != 0:
        assert not lock.acquire(blocking=False)
        assert lock.held_by() == 0
    pgas.barrier(COMM)
    if ME == 0:
        lock.release()
    lock.free()


def test_lock_timeout_gives_up_the_ticket():
    lock = pgas.Lock(COMM)
    if ME == 0:
        lock.acquire()
    pgas.barrier(COMM)
    if ME != 0:
        assert not lock.acquire(timeout=0.2)        # rank 0 holds it
    pgas.barrier(COMM)
    if ME == 0:
        lock.release()
    pgas.barrier(COMM)
    with lock:                                      # the given-up tickets are skipped
        pass
    lock.free()


def test_fence_orders_data_before_flag():
    with pgas.zeros(COMM, 1000 * P, np.float64, block=1000) as data, \
            pgas.zeros(COMM, P, np.int64, block=1) as flag:
        writer, reader = P - 1, 0
        if ME == writer:
            data[0:1000] = np.arange(1000.0)        # rank 0's block
            pgas.fence(COMM)
            flag[reader] = 1
            pgas.fence(COMM)
        if ME == reader:
            pgas.wait_until(flag, reader, "==", 1, timeout=60)
            assert np.array_equal(data.local(), np.arange(1000.0))
        pgas.barrier(COMM)


def test_split_phase_barrier():
    with pgas.zeros(COMM, P, np.int64, block=1) as a:
        a.local()[:] = ME + 1
        pgas.notify(COMM)
        local_work = np.arange(1000).sum()          # overlapped with the barrier
        pgas.wait(COMM)
        assert local_work == 499500
        assert np.array_equal(a[:], np.arange(1, P + 1))
        _expect(ArgumentError, pgas.wait, COMM)     # wait without notify


def test_matrix_by_rows_and_columns():
    m, n = 7, 9
    want = np.arange(m * n, dtype=np.float64).reshape(m, n)
    for dist, b in (("row", 1), ("row", 2), ("col", 1), ("col", 2)):
        with pgas.matrix(COMM, (m, n), np.float64, block=b, dist=dist) as A:
            if ME == 0:
                for i in range(m):
                    A[i, :] = want[i]
            pgas.barrier(COMM)
            assert np.array_equal(A[:, :], want), dist
            assert A[3, 4] == want[3, 4] and np.array_equal(A[:, 2], want[:, 2])
            assert np.array_equal(A[1:3, :], want[1:3])
            loc = A.local()
            if dist == "row":
                rows = [i for lo, hi in A.owned_rows() for i in range(lo, hi)]
                assert np.array_equal(loc, want[rows])
            else:
                assert A.ld % (b * P) == 0 and loc.shape[0] == m
                for j in range(n):
                    assert A.owner(0, j) == (j // b) % P
            _expect(ArgumentError, A.__getitem__, 3)
    _expect(ArgumentError, pgas.matrix, COMM, (4, 4), np.float64, 1, "col", 3)    # ld < n
    if P > 1:
        _expect(ArgumentError, pgas.matrix, COMM, (4, 4), np.float64, 1, "col", 5)    # not a multiple of P


def test_views_of_node_peers():
    with pgas.zeros(COMM, 40, np.int64, block=2) as a:
        a.local()[:] = ME
        pgas.barrier(COMM)
        ctx = a._ctx
        for r in range(P):
            if ctx.on_node[r]:
                assert (a.node_view(r) == r).all()
            else:
                _expect(ArgumentError, a.node_view, r)


def test_misuse_raises_before_data_moves_and_comm_stays_usable():
    with pgas.zeros(COMM, 10, np.int64) as a:
        _expect(IndexOutOfRangeError, a.__getitem__, 10)
        _expect(IndexOutOfRangeError, a.__getitem__, np.array([0, 11]))
        _expect(IndexOutOfRangeError, a.__setitem__, np.array([-20]), 1)
        _expect(ArgumentError, a.__setitem__, slice(0, 3), np.array([1, 2]))
        _expect(ArgumentError, a.__setitem__, slice(0, 3), np.array([1.5, 2, 3]))
        _expect(ArgumentError, a.update, [0], 1, "prod")
        ro = np.zeros(3, np.int64)
        ro.flags.writeable = False
        _expect(ArgumentError, a.get, 0, ro)
        _expect(ArgumentError, a.get, 0, np.zeros(3, np.float32))
        assert (a[:] == 0).all()                    # nothing was written
    _expect(FreedError, a.__getitem__, 0)
    f = pgas.zeros(COMM, 4, np.float64)
    _expect(ArgumentError, f.update, [0], 1, "bxor")     # bitwise on float64
    f.free()
    # different arguments on one rank: every rank raises, nothing allocated
    if P > 1:
        _expect(ArgumentError, pgas.zeros, COMM, 10 + (ME == P - 1), np.int64)
        _expect(ArgumentError, pgas.zeros, COMM, 10, np.int64, 2 if ME == 0 else 3)
    b = np.ones(4)
    c = np.empty(4)
    COMM.Allreduce(b, c)                            # the communicator still works
    assert (c == P).all()


LAST = P - 1        # the rank whose arguments differ
MISMATCHES = {      # name: (function, arguments on rank LAST, arguments elsewhere)
    "n": (pgas.zeros, (COMM, 11, np.int64), (COMM, 10, np.int64)),
    "dtype": (pgas.zeros, (COMM, 10, np.int32), (COMM, 10, np.int64)),
    "block": (pgas.zeros, (COMM, 10, np.int64, "*"), (COMM, 10, np.int64, 1)),
    "counts": (pgas.zeros, (COMM, None, np.int64, 1, [2] * (P - 1) + [3]), (COMM, None, np.int64, 1, [2] * P)),
    "matrix dist": (pgas.matrix, (COMM, (4, 4), np.float64, 1, "row"), (COMM, (4, 4), np.float64, 1, "col")),
    # refused on LAST alone, before it could take part: the others must not wait for it
    "n not an integer": (pgas.zeros, (COMM, "ten", np.int64), (COMM, 10, np.int64)),
    "no such dtype": (pgas.zeros, (COMM, 10, "int77"), (COMM, 10, np.int64)),
    "counts of another length": (pgas.zeros, (COMM, None, np.int64, 1, [1] * (P + 1)),
                                 (COMM, None, np.int64, 1, [1] * P)),
    "fill the dtype cannot hold": (pgas.full, (COMM, 10, "x", np.int64), (COMM, 10, 7, np.int64)),
    "matrix shape": (pgas.matrix, (COMM, (-1, 4), np.float64), (COMM, (4, 4), np.float64)),
}


def test_allocation_misuse_on_one_rank_raises_on_every_rank():
    """Whatever one rank gets wrong in a collective allocation, every rank
    raises ArgumentError, nothing is allocated, and the communicator (and
    the layer) still works."""
    ctx = pgas.zeros(COMM, 1, np.int64)._ctx
    ctx.objects[-1].free()
    before = len(ctx.objects)
    for name, (fn, theirs, ours) in MISMATCHES.items():
        if P == 1 and not name.startswith(("n not", "no such", "counts of", "fill", "matrix shape")):
            continue                                # one rank cannot disagree with itself
        exc = _expect(ArgumentError, fn, *(theirs if ME == LAST else ours))
        assert "pgascol.pgas" in str(exc), (name, exc)
        assert len(ctx.objects) == before, name     # nothing allocated
        assert COMM.allreduce(1) == P, name         # the communicator still works
    with pgas.zeros(COMM, 3 * P, np.int64, block=3) as a:     # and so does the layer
        a[ME] = ME + 1
        pgas.barrier(COMM)
        assert list(a[0:P]) == list(range(1, P + 1))


def test_freed_objects_refuse_every_access():
    a = pgas.zeros(COMM, 4 * P, np.int64)
    lock = pgas.Lock(COMM)
    a.free()
    lock.free()
    a.free()                                        # freeing twice is harmless
    out = np.zeros(2, np.int64)
    for fn, args in ((a.__getitem__, (0,)), (a.__setitem__, (0, 1)), (a.get, (0, out)), (a.get_nb, (0, out)),
                     (a.put, (0, out)), (a.put_nb, (0, out)), (a.update, ([0], 1, "sum")),
                     (a.fetch_op, (0, 1, "sum")), (a.compare_swap, (0, 0, 1)), (a.atomic_read, (0,)),
                     (a.local, ()), (a.node_view, (ME,)), (pgas.wait_until, (a, 0, "==", 0)),
                     (lock.acquire, ()), (lock.release, ()), (lock.held_by, ())):
        _expect(FreedError, fn, *args)
    assert "freed" in repr(a)


def test_bad_access_raises_before_data_moves():
    with pgas.zeros(COMM, 10 * P, np.int64, block=2) as a:
        pgas.barrier(COMM)
        n = 10 * P
        _expect(IndexOutOfRangeError, a.update, [0, 1, n], 5, "sum")       # the good ones not applied either
        _expect(IndexOutOfRangeError, a.__setitem__, np.array([0, 1, n + 3]), 5)
        _expect(IndexOutOfRangeError, a.put, n - 1, np.ones(2, np.int64))
        _expect(IndexOutOfRangeError, a.put_nb, -1, np.ones(2, np.int64))
        _expect(IndexOutOfRangeError, a.get_nb, n - 1, np.zeros(2, np.int64))
        _expect(IndexOutOfRangeError, a.fetch_op, n, 1, "sum")
        _expect(IndexOutOfRangeError, a.compare_swap, n, 0, 1)
        _expect(ArgumentError, a.fetch_op, 0, 1, "prod")
        _expect(ArgumentError, a.update, [0], np.ones(2, np.int64), "sum")      # 2 values for 1 index
        _expect(ArgumentError, a.update, [0.5], 1, "sum")                       # not an integer index
        ro = np.zeros(2, np.int64)
        ro.flags.writeable = False
        _expect(ArgumentError, a.get_nb, 0, ro)
        _expect(ArgumentError, a.get, 0, np.zeros((2, 1), np.int64))            # not 1-D
        _expect(ArgumentError, pgas.wait_until, a, a.owned()[0][0] if a.owned() else 0, "=<", 0)
        other = (ME + 1) % P
        if P > 1:
            _expect(ArgumentError, pgas.wait_until, a, 2 * other, "==", 0)  # not the caller's element
        pgas.barrier(COMM)
        assert (a[:] == 0).all()                    # nothing was written anywhere
        pgas.barrier(COMM)


def test_wait_until_times_out_naming_the_wait():
    with pgas.zeros(COMM, P, np.int64, block=1) as flags:
        exc = _expect(PgascolTimeoutError, pgas.wait_until, flags, ME, "==", 1, timeout=0.2)
        assert "wait_until(a[%d] == 1)" % ME in str(exc) and "0.2s" in str(exc), exc
        pgas.barrier(COMM)


def test_arrays_left_allocated_are_freed_with_the_communicator():
    c = pgascol.Comm(WORLD.Dup())
    a = pgas.zeros(c, 16, np.int64)
    lock = pgas.Lock(c)
    c.Free()
    _expect(FreedError, a.__getitem__, 0)
    _expect(FreedError, lock.held_by)


def test_writers_do_not_wait_for_a_busy_target():
    import time
    with pgas.zeros(COMM, P, np.int64, block=1) as a:
        pgas.barrier(COMM)
        if ME == 0:
            end = time.monotonic() + 1.5
            x = np.ones(1 << 16)
            while time.monotonic() < end:           # busy in numpy, no call into pgascol or MPI
                x = np.sqrt(x + 1.0)
        else:
            t0 = time.monotonic()
            a.put(0, np.array([ME]), strict=True)   # element 0 lives on rank 0
            a.fetch_op(0, 1, "sum")
            assert time.monotonic() - t0 < 1.0, time.monotonic() - t0
        pgas.barrier(COMM)
        if P > 1:
            assert a[0] >= 1
