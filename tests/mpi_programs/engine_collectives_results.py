"""The intra-node engine under MPI: every collective against numpy references.

Run by tests/test_mpi_programs.py with 1, 2, 3, 4 and 8 ranks and with
several configurations (default thresholds; small thresholds with single
copy off; small thresholds with single copy forced; a binary Bcast tree), so
each size below lands on both sides of every threshold. Data are
rank-dependent integers (exact in floats too), so references are exact.
Also misuse refused and calls out of step on every rank, buffers reused
at once, two teams in turn, messages of more than 16 MiB (default
thresholds only), and the statistics of the paths taken. The same launch
runs engine_collectives_paths.py after it; the team and the references
are in engine_collectives_common.py."""
import contextlib
import time

import numpy as np

import pgascol
from pgascol.engine import _core
from tests.mpi_programs.engine_collectives_common import (ME, P, WORLD, T, _block_of, code, contribution, reference,
                                                          valid_ops)

CFG = T.config
INLINE, CHUNK, XCHG = CFG["inline_max"], CFG["chunk_bytes"], CFG["xchg_chunk_bytes"]
RING = CFG["staging_bytes"]

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.bool_]


def byte_sizes():
    """Message sizes around every threshold of the configuration in force."""
    sizes = {0, 1, 7, INLINE - 1, INLINE, INLINE + 1, CHUNK - 1, CHUNK, CHUNK + 1,
             3 * CHUNK + 5, RING + CHUNK + 3, XCHG - 1, XCHG, XCHG + 1, 3 * XCHG + 5}
    return sorted(s for s in sizes if s >= 0)


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


def test_stats_show_the_paths():
    s = T.stats()
    for op in ("Bcast", "Allreduce", "Gatherv", "Allgatherv", "Alltoallv"):
        assert op in s and sum(s[op].values()) > 0
    if P > 1 and CFG["cma_enable"] and T.cma_ok and CFG["cma_min"].get("Allgatherv") == 0:
        assert s["Allgatherv"].get("cma", 0) > 0
    if not CFG["cma_enable"]:
        assert all("cma" not in paths for paths in s.values())
