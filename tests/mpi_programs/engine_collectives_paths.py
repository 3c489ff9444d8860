"""The intra-node engine under MPI: the transfer paths, stores and loops
that follow the team's measured costs or the configuration. Single copy or
copy-in/copy-out for exchanges and reductions as the measured costs say
(re-measured in time); a Bcast root's and every other copy-in/copy-out
writer's streaming stores; the AVX2 and baseline loops, bit-identical on
inexact data; receive buffers written with streaming stores. Each test
makes teams of its own, with its own configuration (PGASCOL_* settings
read from a fresh environment).

Run by tests/test_mpi_programs.py with 1, 2, 3, 4 and 8 ranks and several
configurations, in one launch after engine_collectives_results.py; the
shared inputs are in engine_collectives_common.py."""
import itertools
import os
import time

import numpy as np

import pgascol
from pgascol.engine import _core
from tests.mpi_programs.engine_collectives_common import (ME, P, WORLD, _block_of, code, contribution, reference,
                                                          valid_ops)


# ------------------------------------------------------------------ transfer paths, stores and loops

def _fresh_env(**settings):
    """This process's environment with no PGASCOL_* variable but `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGASCOL_")}
    env.update({k: str(v) for k, v in settings.items()})
    return env


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
