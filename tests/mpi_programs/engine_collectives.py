"""The intra-node engine under MPI: every collective against numpy references.

Run by tests/test_mpi_programs.py with 1, 2, 3, 4 and 8 ranks and with
several configurations (default thresholds; small thresholds with single
copy off; small thresholds with single copy forced; a binary Bcast tree), so
each size below lands on both sides of every threshold. Data are
rank-dependent integers (exact in floats too), so references are exact."""
import contextlib
import itertools
import os
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.engine import _core

WORLD = MPI.COMM_WORLD
TEAM = pgascol.NodeTeam(WORLD)
T = TEAM.core
P, ME = T.size, T.rank
CFG = T.config
INLINE, CHUNK, XCHG = CFG["inline_max"], CFG["chunk_bytes"], CFG["xchg_chunk_bytes"]
RING = CFG["staging_bytes"]

NUMPY_OP = {"SUM": np.add, "PROD": np.multiply, "MIN": np.minimum, "MAX": np.maximum,
            "LAND": np.logical_and, "LOR": np.logical_or, "LXOR": np.logical_xor,
            "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}
DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.bool_]


def code(dtype):
    name = {np.dtype(np.longdouble): "longdouble", np.dtype(np.clongdouble): "clongdouble",
            np.dtype(np.bool_): "bool"}.get(np.dtype(dtype), np.dtype(dtype).name)
    return _core.DTYPES[name]


def byte_sizes():
    """Message sizes around every threshold of the configuration in force."""
    sizes = {0, 1, 7, INLINE - 1, INLINE, INLINE + 1, CHUNK - 1, CHUNK, CHUNK + 1,
             3 * CHUNK + 5, RING + CHUNK + 3, XCHG - 1, XCHG, XCHG + 1, 3 * XCHG + 5}
    return sorted(s for s in sizes if s >= 0)


def contribution(rank, n, dtype, salt=0):
    """Rank r's input: small integers so sums/products stay exact."""
    i = np.arange(n, dtype=np.int64)
    if np.dtype(dtype) == np.bool_:
        return ((i + rank + salt) % 3 == 0)
    base = (i * 7 + rank * 3 + salt) % 5 + 1  # 1..5: products of 8 ranks fit in int32/float32
    return base.astype(dtype)


def reference(op, dtype, n, ranks, salt=0):
    acc = contribution(ranks[0], n, dtype, salt)
    for r in ranks[1:]:
        acc = NUMPY_OP[op](acc, contribution(r, n, dtype, salt))
    return acc.astype(dtype)


def valid_ops(dtype):
    return [op for op in NUMPY_OP if _core.op_valid(_core.OPS[op], code(dtype))]


def _fresh_env(**settings):
    """This process's environment with no PGASCOL_* variable but `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGASCOL_")}
    env.update({k: str(v) for k, v in settings.items()})
    return env


def counts_for(n_total_hint, salt):
    """Uneven per-rank counts, some zero."""
    return [((r * 5 + salt) % 4) * n_total_hint // 3 + (r % 2) for r in range(P)]


# ------------------------------------------------------------------ tests

def test_barrier():
    for _ in range(200):
        T.barrier()
    assert T.stats()["Barrier"]["inline"] >= 200


def test_bcast_every_root_and_size():
    for n in byte_sizes():
        for root in range(P):
            buf = np.full(n, 255, dtype=np.uint8)
            if ME == root:
                buf[:] = (np.arange(n) * 13 + root) % 251
            T.bcast(buf, n, root)
            assert np.array_equal(buf, (np.arange(n) * 13 + root) % 251), (n, root)


def test_allreduce_every_type_and_op():
    for dtype in DTYPES:
        for op in valid_ops(dtype):
            for n in (1, 3, max(1, INLINE // np.dtype(dtype).itemsize + 1), 2 * CHUNK // np.dtype(dtype).itemsize + 3):
                send = contribution(ME, n, dtype)
                recv = np.zeros(n, dtype)
                T.allreduce(send, recv, n, code(dtype), _core.OPS[op])
                expect = reference(op, dtype, n, list(range(P)))
                assert np.array_equal(recv, expect), (dtype, op, n)


def test_allreduce_sizes_and_in_place():
    for nbytes in byte_sizes():
        n = nbytes // 8
        x = contribution(ME, n, np.float64, salt=1)
        expect = reference("SUM", np.float64, n, list(range(P)), salt=1)
        out = np.full(n, -1.0)
        T.allreduce(x, out, n, code(np.float64), _core.OPS["SUM"])
        assert np.array_equal(out, expect), n
        T.allreduce(None, x, n, code(np.float64), _core.OPS["SUM"])  # in place
        assert np.array_equal(x, expect), n


def test_reduce_every_root_in_place():
    for n in (0, 1, INLINE // 4 + 1, 3 * CHUNK // 4 + 1):
        for root in range(P):
            for in_place in (False, True):
                send = contribution(ME, n, np.int32, salt=root)
                recv = np.full(n, -7, np.int32)
                if in_place and ME == root:
                    recv[:] = send
                    T.reduce(None, recv, n, code(np.int32), _core.OPS["MAX"], root)
                else:
                    T.reduce(send, recv if ME == root else None, n, code(np.int32), _core.OPS["MAX"], root)
                if ME == root:
                    assert np.array_equal(recv, reference("MAX", np.int32, n, list(range(P)), salt=root))
                else:
                    assert np.all(recv == -7)  # untouched at non-roots


REDUCE_SCATTER_PER = (0, 1, 5, INLINE // 8 + 1, CHUNK // 8 + 3)


def test_reduce_scatter():
    for per in REDUCE_SCATTER_PER:
        counts = [per + (r % 3) for r in range(P)]
        total = sum(counts)
        full = reference("SUM", np.int64, total, list(range(P)))
        start = sum(counts[:ME])
        send = contribution(ME, total, np.int64)
        recv = np.zeros(counts[ME], np.int64)
        T.reduce_scatter(send, recv, counts, code(np.int64), _core.OPS["SUM"])
        assert np.array_equal(recv, full[start:start + counts[ME]])
        inplace = send.copy()
        T.reduce_scatter(None, inplace, counts, code(np.int64), _core.OPS["SUM"])
        assert np.array_equal(inplace[:counts[ME]], full[start:start + counts[ME]])


def test_reduce_scatter_block():
    for per in REDUCE_SCATTER_PER:
        block = np.zeros(per, np.int64)
        fullb = reference("SUM", np.int64, per * P, list(range(P)))
        T.reduce_scatter(contribution(ME, per * P, np.int64), block, [per] * P, code(np.int64),
                         _core.OPS["SUM"], block=True)
        assert np.array_equal(block, fullb[ME * per:(ME + 1) * per])


SCAN_SIZES = (0, 1, INLINE // 8 + 1, 3 * CHUNK // 8 + 1)


def test_scan():
    for n in SCAN_SIZES:
        send = contribution(ME, n, np.float64)
        out = np.full(n, -1.0)
        T.scan(send, out, n, code(np.float64), _core.OPS["SUM"])
        assert np.array_equal(out, reference("SUM", np.float64, n, list(range(ME + 1))))


def test_exscan():
    for n in SCAN_SIZES:
        send = contribution(ME, n, np.float64)
        ex = np.full(n, -1.0)
        T.exscan(send, ex, n, code(np.float64), _core.OPS["SUM"])
        if ME == 0:
            assert np.all(ex == -1.0)  # untouched on rank 0
        else:
            assert np.array_equal(ex, reference("SUM", np.float64, n, list(range(ME))))


def _blocks(counts, gap=3):
    """Displacements with gaps between blocks (gaps must stay untouched)."""
    displs, off = [], gap
    for c in counts:
        displs.append(off)
        off += c + gap
    return displs, off


def _block_of(rank, n, salt):
    return ((np.arange(n) * 11 + rank * 7 + salt) % 250 + 1).astype(np.uint8)


def _v_layouts():
    """(unit, counts, displs, extent) of the Gatherv and Scatterv tests:
    uneven counts around every threshold, gaps between the blocks."""
    for unit in byte_sizes():
        counts = counts_for(unit, 1)
        displs, extent = _blocks(counts)
        yield unit, counts, displs, extent


def test_gatherv_every_root():
    for unit, counts, displs, extent in _v_layouts():
        for root in range(P):
            recv = np.zeros(extent, np.uint8)
            T.gather(_block_of(ME, counts[ME], root), counts[ME], recv, counts, displs, root, v=True)
            if ME == root:
                expect = np.zeros(extent, np.uint8)
                for r in range(P):
                    expect[displs[r]:displs[r] + counts[r]] = _block_of(r, counts[r], root)
                assert np.array_equal(recv, expect), (unit, root)


def test_scatterv_every_root():
    for unit, counts, displs, extent in _v_layouts():
        for root in range(P):
            send = np.zeros(extent, np.uint8)
            for r in range(P):
                send[displs[r]:displs[r] + counts[r]] = _block_of(r, counts[r], root + 1)
            mine = np.zeros(counts[ME], np.uint8)
            T.scatter(send, counts, displs, mine, counts[ME], root, v=True)
            assert np.array_equal(mine, _block_of(ME, counts[ME], root + 1)), (unit, root)


IN_PLACE_BYTES = 2 * CHUNK + 1


def test_gather_in_place():
    n = IN_PLACE_BYTES
    for root in range(P):
        if ME == root:
            recv = np.zeros(n * P, np.uint8)
            recv[root * n:(root + 1) * n] = _block_of(root, n, 9)
            T.gather(None, n, recv, [n] * P, None, root)
            assert np.array_equal(recv, np.concatenate([_block_of(r, n, 9) for r in range(P)]))
        else:
            T.gather(_block_of(ME, n, 9), n, None, None, None, root)


def test_scatter_in_place():
    n = IN_PLACE_BYTES
    for root in range(P):
        if ME == root:
            T.scatter(np.concatenate([_block_of(r, n, 9) for r in range(P)]), [n] * P, None, None, n, root)
        else:
            got = np.zeros(n, np.uint8)
            T.scatter(None, None, None, got, n, root)
            assert np.array_equal(got, _block_of(ME, n, 9))


def test_allgather_v_and_in_place():
    for unit in byte_sizes():
        counts = counts_for(unit, 2)
        displs, extent = _blocks(counts)
        expect = np.zeros(extent, np.uint8)
        for r in range(P):
            expect[displs[r]:displs[r] + counts[r]] = _block_of(r, counts[r], 3)
        recv = np.zeros(extent, np.uint8)
        T.allgather(_block_of(ME, counts[ME], 3), counts[ME], recv, counts, displs, v=True)
        assert np.array_equal(recv, expect), unit
        inplace = np.zeros(extent, np.uint8)
        inplace[displs[ME]:displs[ME] + counts[ME]] = _block_of(ME, counts[ME], 3)
        T.allgather(None, counts[ME], inplace, counts, displs, v=True)
        assert np.array_equal(inplace, expect), unit


def test_alltoallv():
    for unit in byte_sizes():
        # rank s sends (s + d) % 3 * unit // 2 + 1 bytes to rank d
        def cnt(s, d):
            return ((s + d) % 3) * unit // 2 + (d % 2)
        scounts = [cnt(ME, d) for d in range(P)]
        rcounts = [cnt(s, ME) for s in range(P)]
        sd, sext = _blocks(scounts)
        rd, rext = _blocks(rcounts, gap=5)
        send = np.zeros(sext, np.uint8)
        for d in range(P):
            send[sd[d]:sd[d] + scounts[d]] = _block_of(ME * P + d, scounts[d], 4)
        recv = np.zeros(rext, np.uint8)
        T.alltoall(send, scounts, sd, recv, rcounts, rd, v=True)
        for s in range(P):
            assert np.array_equal(recv[rd[s]:rd[s] + rcounts[s]], _block_of(s * P + ME, rcounts[s], 4)), (unit, s)
        gaps = np.ones(rext, bool)
        for s in range(P):
            gaps[rd[s]:rd[s] + rcounts[s]] = False
        assert np.all(recv[gaps] == 0)


def test_alltoall_in_place():
    n = CHUNK + 3
    buf = np.concatenate([_block_of(ME * P + d, n, 5) for d in range(P)])
    T.alltoall(None, None, None, buf, [n] * P, None)
    assert np.array_equal(buf, np.concatenate([_block_of(s * P + ME, n, 5) for s in range(P)]))


def test_misuse_refused_and_team_usable():
    x = np.zeros(4, np.float64)
    for bad in (lambda: T.allreduce(x, x.copy(), 4, code(np.float64), _core.OPS["BAND"]),
                lambda: T.allreduce(x, np.zeros(2), 4, code(np.float64), _core.OPS["SUM"]),
                lambda: T.bcast(x, 32, P),
                lambda: T.reduce(x, x.copy(), 4, code(np.float64), _core.OPS["SUM"], -1),
                lambda: T.allreduce(x, b"12345678" * 4, 4, code(np.float64), _core.OPS["SUM"]),
                lambda: T.allgather(x, 32, np.zeros(4 * P - 1), [32] * P, None),
                lambda: T.allreduce(object(), x, 4, code(np.float64), _core.OPS["SUM"])):
        try:
            bad()
        except pgascol.ArgumentError:
            pass
        else:
            raise AssertionError("misuse was accepted")
    ro = np.zeros(4)
    ro.flags.writeable = False
    try:
        T.allreduce(x, ro, 4, code(np.float64), _core.OPS["SUM"])
    except pgascol.ArgumentError as exc:
        assert "writable" in str(exc)
    else:
        raise AssertionError("read-only receive buffer accepted")
    y = np.ones(4)
    T.allreduce(None, y, 4, code(np.float64), _core.OPS["SUM"])
    assert np.all(y == P)


@contextlib.contextmanager
def _own_team():
    """A team of its own (the cases below abort it), or None on one rank."""
    if P == 1:
        yield None
        return
    c = WORLD.Dup()
    team = pgascol.NodeTeam(c)
    try:
        yield team.core
    finally:
        team.free()
        c.Free()


def _expect_mismatch(call, *named):
    """call() must raise: CollectiveMismatchError naming `named` on the
    rank that noticed, TeamAbortedError carrying its message on the others."""
    try:
        call()
    except pgascol.CollectiveMismatchError as exc:
        assert all(n in str(exc) for n in named), str(exc)
    except pgascol.TeamAbortedError as exc:
        assert "collectives out of step" in str(exc), str(exc)
    else:
        raise AssertionError("rank %d: the mismatch went unnoticed" % ME)


def _expect_aborted_later(team, reason):
    """A later call on the aborted team raises TeamAbortedError on every
    rank, the one that aborted it included, naming the later call and
    carrying the original reason."""
    try:
        team.barrier()
    except pgascol.TeamAbortedError as exc:
        assert str(exc).startswith("Barrier: the node team was aborted by local rank"), str(exc)
        assert reason in str(exc), str(exc)
    else:
        raise AssertionError("rank %d: a call on an aborted team ran" % ME)


def test_calls_out_of_step_abort_before_data_moves():
    """Rank 0 runs a Bcast the others skip, then all run an Allreduce: the
    ranks' sequence numbers (seq) pair rank 0's Bcast with the others'
    Allreduce. Every rank must raise (one names both collectives) and no
    receive buffer may be written."""
    with _own_team() as team:
        if team is None:
            return
        n = 3 * CHUNK // 8 + 1      # several chunks, whatever the configuration
        y = np.full(n, -7.0)

        def calls():
            if ME == 0:   # it may be the one that notices (a Bcast root waits for its readers)
                team.bcast(np.zeros(n), 8 * n, 0)
            team.allreduce(np.ones(n), y, n, code(np.float64), _core.OPS["SUM"])
        _expect_mismatch(calls, "collectives out of step", "Bcast (root 0)", "Allreduce (float64, SUM)")
        assert np.all(y == -7.0), "a receive buffer was written"
        _expect_aborted_later(team, "collectives out of step")


def test_reductions_must_agree_on_type_and_operator():
    """Rank 0 asks for MAX where the others ask for SUM: refused on every
    rank, naming both, before any result is written."""
    with _own_team() as team:
        if team is None:
            return
        y = np.full(4, -7.0)
        op = _core.OPS["MAX" if ME == 0 else "SUM"]
        _expect_mismatch(lambda: team.allreduce(np.ones(4), y, 4, code(np.float64), op),
                         "Allreduce (float64, MAX)", "Allreduce (float64, SUM)")
        assert np.all(y == -7.0), "a receive buffer was written"
        _expect_aborted_later(team, "Allreduce (float64, MAX)")


def test_ranks_far_apart_stay_told_apart():
    """Zero-count reductions wait for nobody, so the root could run hundreds
    of calls ahead of a late reader of its Bcast; the reader's signature check
    must still find the Bcast, not a later call in the same slot. 256 of them
    put the root's seq 257 in the Bcast's slot with the same seq byte as seq 1
    (pgc_sig_seqbyte): without the bound on run-ahead the reader saw an
    Allreduce there."""
    with _own_team() as team:
        if team is None:
            return
        b = np.full(1, 7.0 if ME == 0 else 0.0)
        if ME != 0:
            time.sleep(0.3)
        team.bcast(b, 8, 0)
        for _ in range(256):
            team.allreduce(np.zeros(0), np.zeros(0), 0, code(np.float64), _core.OPS["SUM"])
        team.barrier()
        assert b[0] == 7.0


def test_buffers_reused_right_after_return():
    n = 3 * CHUNK // 8 + 1
    a = np.zeros(n)
    for it in range(60):
        a[:] = ME + it
        T.allreduce(None, a, n, code(np.float64), _core.OPS["SUM"])
        assert np.all(a == sum(r + it for r in range(P)))
        a[:] = -1  # modified immediately: no peer may still read it
        b = np.full(2 * CHUNK + 7, it % 256, np.uint8) if ME == it % P else np.zeros(2 * CHUNK + 7, np.uint8)
        T.bcast(b, b.size, it % P)
        assert np.all(b == it % 256)
        b[:] = 0


def test_two_teams_alternately():
    other_comm = WORLD.Dup()
    other = pgascol.NodeTeam(other_comm)
    try:
        for it in range(30):
            for team in (T, other.core):
                v = np.array([ME + it], np.int64)
                out = np.zeros(1, np.int64)
                team.allreduce(v, out, 1, code(np.int64), _core.OPS["SUM"])
                assert out[0] == sum(range(P)) + P * it
    finally:
        other.free()
        other_comm.Free()


# ------------------------------------------------------------------ more than 16 MiB in play

LARGE_BYTES = 17 << 20
LARGE_N = LARGE_BYTES // 8              # float64 elements of the reductions
LARGE_BLOCK = -(-LARGE_BYTES // P)      # bytes per rank of the data movement (the receive buffer's > 16 MiB)


def _large_x():
    return np.full(LARGE_N, float(ME + 1))


def _large_blocks():
    """(this rank's block, every rank's blocks in rank order)."""
    return (np.full(LARGE_BLOCK, ME + 1, np.uint8),
            np.repeat(np.arange(1, P + 1, dtype=np.uint8), LARGE_BLOCK))


def test_large_allreduce():
    y = np.empty(LARGE_N)
    T.allreduce(_large_x(), y, LARGE_N, code(np.float64), _core.OPS["SUM"])
    assert y[0] == y[-1] == P * (P + 1) / 2 and np.all(y == y[0])


def test_large_reduce():
    y = np.empty(LARGE_N)
    T.reduce(_large_x(), y, LARGE_N, code(np.float64), _core.OPS["MAX"], 0)
    if ME == 0:
        assert np.all(y == P)


def test_large_scan():
    y = np.empty(LARGE_N)
    T.scan(_large_x(), y, LARGE_N, code(np.float64), _core.OPS["SUM"])
    assert np.all(y == (ME + 1) * (ME + 2) / 2)


def test_large_reduce_scatter_block():
    per = LARGE_N // P
    y = np.empty(per)
    T.reduce_scatter(_large_x()[:per * P], y, [per] * P, code(np.float64), _core.OPS["SUM"], block=True)
    assert np.all(y == P * (P + 1) / 2)


def test_large_bcast():
    x = _large_x()
    T.bcast(x, x.nbytes, P - 1)
    assert np.all(x == P)


def test_large_allgather():
    mine, expect = _large_blocks()
    every = np.zeros(LARGE_BLOCK * P, np.uint8)
    T.allgather(mine, LARGE_BLOCK, every, [LARGE_BLOCK] * P, None)
    assert np.array_equal(every, expect)


def test_large_gather():
    mine, expect = _large_blocks()
    every = np.zeros(LARGE_BLOCK * P, np.uint8)
    T.gather(mine, LARGE_BLOCK, every, [LARGE_BLOCK] * P, None, P - 1)
    if ME == P - 1:
        assert np.array_equal(every, expect)


def test_large_scatter():
    mine, expect = _large_blocks()
    mine[:] = 0
    T.scatter(expect, [LARGE_BLOCK] * P, None, mine, LARGE_BLOCK, 0)
    assert np.all(mine == ME + 1)


def test_large_alltoall():
    every = np.zeros(LARGE_BLOCK * P, np.uint8)
    send = np.repeat(np.arange(P, dtype=np.uint8) + 10 * ME, LARGE_BLOCK)
    T.alltoall(send, [LARGE_BLOCK] * P, None, every, [LARGE_BLOCK] * P, None)
    assert np.array_equal(every, np.repeat(np.arange(P, dtype=np.uint8) * 10 + ME, LARGE_BLOCK))


# ------------------------------------------------------------------ transfer paths, stores and loops


def test_paths_follow_the_measured_costs():
    """Alltoall payloads that the thresholds stage go by single copy while
    the team's measured costs say so; the path not taken is re-measured
    after 12.5 ms in a new team, after 100 ms once costs are seeded; the
    data arrive whatever path each sender takes."""
    if P == 1:
        return
    env = _fresh_env(PGASCOL_ADAPT_MIN=64 << 10)
    c = WORLD.Dup()
    team = pgascol.NodeTeam(c, env)
    t = team.core
    try:
        assert t.probe_interval == 0.0125, t.probe_interval   # a new team
        cfg = t.config
        assert cfg["adapt_min"] == 64 << 10
        assert set(cfg["adapt"]) == {n for n in ("Gather", "Gatherv", "Allgather", "Allgatherv",
                                                 "Alltoall", "Alltoallv") if cfg["cma_min"][n] is not None} | \
            {"Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan"}
        blk = (1 << 20) // P                 # 1 MiB in all: staged by size
        send = np.repeat((np.arange(P, dtype=np.uint8) + 10 * ME) % 251, blk)
        expect = np.repeat((np.arange(P, dtype=np.uint8) * 10 + ME) % 251, blk)
        recv = np.zeros_like(send)

        def alltoalls(k):
            before = dict(t.stats().get("Alltoall", {}))
            for _ in range(k):
                recv[:] = 0
                t.alltoall(send, [blk] * P, None, recv, [blk] * P, None)
                assert np.array_equal(recv, expect)
            after = t.stats()["Alltoall"]
            return {p: after.get(p, 0) - before.get(p, 0) for p in after}

        alltoalls(6)
        costs = t.costs
        assert costs["stage"] and costs["copyout"], costs   # staged, and measured
        if not t.cma_ok:
            assert alltoalls(4).get("cma", 0) == 0
            return
        # cross-core copies made to look very slow: single copy from now on
        # (every rank seeds the same figures, so none can fail alone)
        t.seed_costs(stage=10 ** 6, copyout=10 ** 6, cma=10)
        assert t.probe_interval == 0.1, t.probe_interval
        t.barrier()
        taken = alltoalls(5)
        assert taken.get("cico", 0) == 0 and taken.get("cma", 0) == 5, taken
        # 100 ms later copy-in/copy-out is stale: a probe re-measures it
        time.sleep(0.15)
        t.barrier()
        taken = alltoalls(8)
        assert taken.get("cico", 0) >= 1 and taken.get("cico", 0) + taken.get("cma", 0) == 8, taken
        t.barrier()
        assert t.costs["copyout"] < 10 ** 6, t.costs
        try:
            t.seed_costs(speed=1)
        except pgascol.ArgumentError as exc:
            assert "unknown costs" in str(exc)
        else:
            raise AssertionError("an unknown cost was accepted")
    finally:
        team.free()
        c.Free()


def test_reductions_follow_the_measured_costs():
    """Each member of a reduction stages its input or, while the team's
    measured costs say single copy is clearly cheaper, exposes its buffers
    for the block owners to pull (never in place): members may differ, the
    results stay bit-identical to the staged ones (same order of
    operations), for every reduction, root and window count, with the
    staging and copy-out costs measured by the reductions themselves."""
    if P == 1:
        return
    env = _fresh_env(PGASCOL_ADAPT_MIN=16 << 10, PGASCOL_STAGING_BYTES=1 << 20)
    c = WORLD.Dup()
    team = pgascol.NodeTeam(c, env)
    t = team.core
    f64, ops = code(np.float64), _core.OPS
    # in place on odd ranks where MPI allows it per rank (the engine does
    # everywhere): those stage while the others expose
    mixed = ME % 2 == 1
    try:
        assert {"Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block", "Scan",
                "Exscan"} <= set(t.config["adapt"])

        def reductions(n, before=lambda: None):
            """Every reduction of n float64 (before(): called before each)."""
            x = inexact_sample(ME, np.float64, n)
            out = []
            y = np.zeros(n)
            if mixed:
                y[:] = x
            before()
            t.allreduce(None if mixed else x, y, n, f64, ops["SUM"])
            out.append(y)
            for root in range(P):
                y = np.zeros(n)
                if mixed and ME == root:
                    y[:] = x
                before()
                t.reduce(None if mixed and ME == root else x, y if ME == root else None, n, f64, ops["PROD"], root)
                out.append(y if ME == root else None)
            counts = [n // P + (r < n % P) for r in range(P)]
            y = np.zeros(n)
            if mixed:
                y[:] = x
            before()
            t.reduce_scatter(None if mixed else x, y, counts, f64, ops["SUM"])
            out.append(y[:counts[ME]].copy())
            for scan in (t.scan, t.exscan):
                y = np.full(n, -1.0)
                before()
                scan(x, y, n, f64, ops["SUM"])
                out.append(y)
            return out

        def cross_core_copies_look_slow():
            # every rank seeds the same figures, so none can choose alone;
            # again before every call, since the members that stage measure
            # staging again (its cost falls to what they measure within a
            # few ops). Within one op every choice precedes every measurement:
            # no member completes an op before all have posted their inputs.
            t.seed_costs(stage=10 ** 6, copyout=10 ** 6, cma=10)
            t.barrier()

        def taken(before):
            after = t.stats()
            return {op: {p: after.get(op, {}).get(p, 0) - before.get(op, {}).get(p, 0) for p in ("cico", "cma")}
                    for op in ("Reduce", "Allreduce", "Reduce_scatter", "Scan", "Exscan")}

        # one window, several (slots of 32-128 KiB), ragged blocks of at
        # least 16 KiB (copies that short are not timed)
        sizes = [(20 << 10) // 8 * P + 3, (300 << 10) // 8 * P + 5]
        # staged by size; once staging is measured, single copy is probed
        # for a few ops (never measured before), and loses on a quiet machine
        before = t.stats()
        staged = [reductions(n) for n in sizes]
        costs = t.costs
        assert costs["stage"] and costs["copyout"], costs   # measured by the reductions
        if not t.cma_ok:
            assert all(v["cma"] == 0 for v in taken(before).values()), taken(before)
            return
        # cross-core copies made to look very slow: members not in place expose
        before = t.stats()
        pulled = [reductions(n, cross_core_copies_look_slow) for n in sizes]
        got = taken(before)
        calls = {"Reduce": P, "Allreduce": 1, "Reduce_scatter": 1, "Scan": 1, "Exscan": 1}
        for op, k in calls.items():
            k *= len(sizes)
            if op == "Exscan" and ME == P - 1:
                assert got[op] == {"cico": k, "cma": 0}, got    # nobody reads its input
            elif op == "Reduce" and mixed:
                assert got[op] == {"cico": len(sizes), "cma": k - len(sizes)}, got  # in place at its root
            elif mixed and op in ("Allreduce", "Reduce_scatter"):
                assert got[op] == {"cico": k, "cma": 0}, got
            else:
                assert got[op] == {"cico": 0, "cma": k}, got
        for a, b in zip(staged, pulled):
            for u, v in zip(a, b):
                assert (u is None and v is None) or u.tobytes() == v.tobytes()
        t.barrier()
        assert t.costs["cma"] != 10, t.costs                 # measured again: pulled
    finally:
        team.free()
        c.Free()
    # Members of a Reduce_scatter copy nothing out: their staging's cost
    # alone decides, and they probe single copy once they measured it.
    c = WORLD.Dup()
    team = pgascol.NodeTeam(c, env)
    t = team.core
    try:
        n = (300 << 10) // 8 * P
        x, y = inexact_sample(ME, np.float64, n), np.zeros(n // P)
        want = None
        for i in range(12):
            if i == 8:
                assert t.costs["stage"] and t.costs["copyout"] is None, t.costs
                if not t.cma_ok:
                    break
                before = t.stats().get("Reduce_scatter_block", {}).get("cma", 0)
                t.seed_costs(stage=10 ** 6, cma=10)          # slow staging, nothing else known
                t.barrier()
            t.reduce_scatter(x, y, [n // P] * P, f64, ops["SUM"], block=True)
            want = y.copy() if want is None else want
            assert y.tobytes() == want.tobytes(), i
        else:
            assert t.stats()["Reduce_scatter_block"]["cma"] >= before + 1, t.stats()
    finally:
        team.free()
        c.Free()


def test_bcast_staging_stores_follow_the_measured_costs():
    """A copy-in/copy-out Bcast root writes its staging with streaming
    stores while ordinary ones measure more than 3x dearer (PGASCOL_STREAM
    1), always (2) or never (0); the data arrive either way, at every size
    and alignment, flat or down a tree (whose relays stage too)."""
    if P == 1:
        return
    for tree, mode in itertools.product((False, True), (0, 1, 2)):
        env = _fresh_env(PGASCOL_STREAM=mode, PGASCOL_CMA_MIN_BCAST="never")
        if tree:
            env.update(PGASCOL_BCAST_TREE_MIN="2", PGASCOL_BCAST_RADIX="2")
        c = WORLD.Dup()
        team = pgascol.NodeTeam(c, env)
        t = team.core
        try:
            assert t.config["stream"] == mode
            nbytes = 3 * t.config["chunk_bytes"] + 77      # several chunks and a ragged end
            whole = np.zeros(nbytes + 64, np.uint8)

            def bcasts(k, root):
                for i in range(k):
                    for skew in (0, 1, 13):                  # unaligned user buffers too
                        buf = whole[skew:skew + nbytes]
                        expect = (np.arange(nbytes) * 7 + i + skew + root) % 251
                        buf[:] = expect if ME == root else 0
                        t.bcast(buf, nbytes, root)
                        assert np.array_equal(buf, expect), (tree, mode, i, skew, root)

            bcasts(2, 0)
            t.barrier()
            costs = t.costs
            if mode == 0:
                assert costs["stage"] and costs["stream"] is None, costs
            elif mode == 2:
                assert costs["stream"] and costs["stage"] is None, costs
            else:
                assert costs["stage"], costs                 # the ordinary way first
                # ordinary stores made to look 1000x dearer: the root streams
                t.seed_costs(stage=10 ** 6, stream=1000)
                t.barrier()
                bcasts(2, P - 1)
                t.barrier()
                assert t.costs["stream"] != 1000, t.costs   # measured again: streamed
        finally:
            team.free()
            c.Free()


def _staged_exchanges(t, salt):
    """Alltoall, Allgather and Gather of 64 KiB blocks and more (long enough
    to be timed) with ragged ends, checked."""
    n = (64 << 10) + 13
    send = np.concatenate([_block_of(ME * P + d + salt, n, 6) for d in range(P)])
    recv = np.zeros(n * P, np.uint8)
    t.alltoall(send, [n] * P, None, recv, [n] * P, None)
    assert np.array_equal(recv, np.concatenate([_block_of(s * P + ME + salt, n, 6) for s in range(P)])), salt
    mine = _block_of(ME + salt, n, 7)
    everyone = np.concatenate([_block_of(r + salt, n, 7) for r in range(P)])
    recv[:] = 0
    t.allgather(mine, n, recv, [n] * P, None)
    assert np.array_equal(recv, everyone), salt
    root = salt % P
    recv[:] = 0
    t.gather(mine, n, recv, [n] * P, None, root)
    assert np.array_equal(recv, everyone if ME == root else np.zeros_like(recv)), salt


def _staged_reductions(t, salt):
    """Reduce_scatter_block and Allreduce with blocks of 64 KiB and more,
    checked."""
    k = (64 << 10) // 8 + 5                                  # elements per block
    x = contribution(ME, k * P, np.int64, salt)
    want = reference("SUM", np.int64, k * P, list(range(P)), salt)
    y = np.zeros(k, np.int64)
    t.reduce_scatter(x, y, [k] * P, code(np.int64), _core.OPS["SUM"], block=True)
    assert np.array_equal(y, want[ME * k:(ME + 1) * k]), salt
    z = np.zeros(k * P, np.int64)
    t.allreduce(x, z, k * P, code(np.int64), _core.OPS["SUM"])
    assert np.array_equal(z, want), salt


def test_staging_stores_follow_the_measured_costs():
    """The same choice for every other copy-in/copy-out writer: exchange
    producers and reduction members. Never (0) and always (2) give the
    right bytes (the exchanges' costs show the stores; the reductions time
    theirs only with their run-time choice, absent here); with the
    measured choice (1), ordinary stores made to look 1000x dearer (and
    single copy as dear, so that staging stays chosen) make each of them
    stream."""
    if P == 1:
        return
    for mode in (0, 2, 1):
        # 0 and 2 without single copy: everything staged. 1 needs the
        # reductions' measurements, which come with their run-time choice
        # (single copy available, payloads past PGASCOL_ADAPT_MIN).
        env = _fresh_env(PGASCOL_STREAM=mode, PGASCOL_ADAPT_MIN=16 << 10,
                         **({"PGASCOL_CMA": 0} if mode != 1 else {}))
        c = WORLD.Dup()
        team = pgascol.NodeTeam(c, env)
        t = team.core
        try:
            if mode == 1 and not t.cma_ok:
                continue
            for ops in (_staged_exchanges, _staged_reductions):
                if mode == 1:
                    t.seed_costs(stage=10 ** 6, stream=1000, cma=10 ** 6)
                    t.barrier()
                for salt in range(3):                        # a member's first measurement is discarded
                    ops(t, salt)
                t.barrier()
                costs = t.costs
                t.barrier()                                  # read before anyone seeds again
                if mode == 0:
                    assert costs["stage"] and costs["stream"] is None, (ops, costs)
                elif mode == 2:
                    assert costs["stream"] and costs["stage"] is None, (ops, costs)
                else:
                    assert costs["stream"] != 1000, (ops, costs)   # measured again: streamed
        finally:
            team.free()
            c.Free()


def inexact_sample(rank, dtype, n):
    """Rank r's normally distributed floats (NaNs and -0.0 among the reals)."""
    rng = np.random.default_rng([rank, n, np.dtype(dtype).num])
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    x = rng.standard_normal(n).astype(dtype)
    x[::17] = -0.0
    x[5::97] = np.nan
    return x


def test_vector_loops_give_the_same_bytes():
    """Copies and reduction kernels run the AVX2 loops where the CPU has
    them (PGASCOL_SIMD 1) or the baseline ones (0): a team of each gives
    bit-identical results on inexact floating-point data (NaNs, signed
    zeros and rounding included), at sizes that take every loop's steps,
    and a sum equal to numpy's in rank order."""
    cpu = _core.cpu_simd()
    cases = list(itertools.product((np.float32, np.float64, np.complex64, np.complex128), (1, 63, 1000, 5000)))
    blocks = [np.arange(3 * 4096 + 77, dtype=np.uint8) * (r + 3) for r in range(P)]
    results = []
    for simd in (0, 1):
        env = _fresh_env(PGASCOL_SIMD=simd, PGASCOL_STAGING_BYTES=64 * 1024,
                         PGASCOL_CHUNK_BYTES=4096, PGASCOL_XCHG_CHUNK_BYTES=4096)
        c = WORLD.Dup()
        team = pgascol.NodeTeam(c, env)
        t = team.core
        out = []
        try:
            assert t.config["simd"] == simd
            assert t.simd == ("avx2" if simd and cpu == "avx2" else "baseline"), (t.simd, cpu)
            for dtype, n in cases:
                x = inexact_sample(ME, dtype, n)
                for op in valid_ops(dtype):
                    y, z = np.zeros_like(x), np.zeros_like(x)
                    t.allreduce(x, y, n, code(dtype), _core.OPS[op])
                    t.scan(x, z, n, code(dtype), _core.OPS[op])
                    out += [y, z]
                    if op == "SUM":
                        want = inexact_sample(0, dtype, n)
                        for r in range(1, P):
                            want = want + inexact_sample(r, dtype, n)
                        np.testing.assert_array_equal(y, want)
            whole = np.zeros(blocks[ME].nbytes * P, np.uint8)
            t.allgather(blocks[ME], blocks[ME].nbytes, whole, [blocks[ME].nbytes] * P, None)
            b = blocks[ME].copy()
            t.bcast(b, b.nbytes, P - 1)
            assert np.array_equal(whole, np.concatenate(blocks)) and np.array_equal(b, blocks[-1])
            results.append(out)
        finally:
            team.free()
            c.Free()
    base, wide = results
    assert len(base) == len(wide) > 0
    for i, (u, v) in enumerate(zip(base, wide)):
        assert u.tobytes() == v.tobytes(), i


def test_receive_buffers_streamed_give_the_same_bytes():
    """Receive buffers written with streaming stores (PGASCOL_RECV_STREAM_MIN
    from 1 byte: every own block and copy-out, whatever its length and
    alignment) get the same bytes as with ordinary stores: Gather(v) and
    Scatter(v) at every root, Allgather(v), Alltoall(v), on copy-in/copy-out
    and by single copy where it works. So does an Allgather(v) whose caller
    declares its receive buffer cold (recv_cold), in place too, also on a
    team that streams nothing else (PGASCOL_RECV_STREAM_MIN=0)."""
    n = 3 * 4096 + 77
    for cma_min, recv_min in (("never", 1), ("0", 1), ("never", 0)):
        env = _fresh_env(PGASCOL_RECV_STREAM_MIN=recv_min, PGASCOL_STAGING_BYTES=64 * 1024,
                         PGASCOL_CHUNK_BYTES=4096, PGASCOL_XCHG_CHUNK_BYTES=4096, PGASCOL_ADAPT=0,
                         **{"PGASCOL_CMA_MIN_" + name: cma_min for name in
                            ("GATHER", "GATHERV", "SCATTER", "SCATTERV", "ALLGATHER", "ALLGATHERV",
                             "ALLTOALL", "ALLTOALLV")})
        c = WORLD.Dup()
        team = pgascol.NodeTeam(c, env)
        t = team.core
        try:
            assert t.config["recv_stream_min"] == recv_min
            for count in (1, 63, n):
                counts = [count + r for r in range(P)]
                displs = [sum(counts[:r]) + 3 * r for r in range(P)]   # odd offsets
                extent = displs[-1] + counts[-1]
                want = np.zeros(extent, np.uint8)
                for r in range(P):
                    want[displs[r]:displs[r] + counts[r]] = _block_of(r, counts[r], 11)
                mine = _block_of(ME, counts[ME], 11)
                for root in range(P):
                    got = np.zeros(extent, np.uint8)
                    t.gather(mine, counts[ME], got, counts, displs, root, v=True)
                    if ME == root:
                        assert np.array_equal(got, want), (cma_min, recv_min, count, root)
                    back = np.zeros(counts[ME], np.uint8)
                    t.scatter(want, counts, displs, back, counts[ME], root, v=True)
                    assert np.array_equal(back, mine), (cma_min, recv_min, count, root)
                got = np.zeros(extent, np.uint8)
                t.allgather(mine, counts[ME], got, counts, displs, v=True)
                assert np.array_equal(got, want), (cma_min, recv_min, count)
                got = np.zeros(extent, np.uint8)
                t.allgather(mine, counts[ME], got, counts, displs, v=True, recv_cold=True)
                assert np.array_equal(got, want), (cma_min, recv_min, count, "recv_cold")
                got = np.zeros(extent, np.uint8)
                got[displs[ME]:displs[ME] + counts[ME]] = mine
                t.allgather(None, counts[ME], got, counts, displs, v=True, recv_cold=True)
                assert np.array_equal(got, want), (cma_min, recv_min, count, "recv_cold in place")
                send = np.concatenate([_block_of(ME * P + d, count, 12) for d in range(P)])
                recv = np.zeros_like(send)
                t.alltoall(send, [count] * P, None, recv, [count] * P, None)
                expect = np.concatenate([_block_of(s * P + ME, count, 12) for s in range(P)])
                assert np.array_equal(recv, expect), (cma_min, recv_min, count)
            if P > 1 and cma_min == "0" and t.cma_ok:
                assert t.stats()["Alltoall"].get("cma", 0) > 0, t.stats()
        finally:
            team.free()
            c.Free()


def test_stats_show_the_paths():
    s = T.stats()
    for op in ("Bcast", "Allreduce", "Gatherv", "Allgatherv", "Alltoallv"):
        assert op in s and sum(s[op].values()) > 0
    if P > 1 and CFG["cma_enable"] and T.cma_ok and CFG["cma_min"].get("Allgatherv") == 0:
        assert s["Allgatherv"].get("cma", 0) > 0
    if not CFG["cma_enable"]:
        assert all("cma" not in paths for paths in s.values())
