"""Tests of the C core's primitives through pgascol.engine._core.Team, without MPI:
the paths a call takes. The single-copy probe; Bcast by single copy and by
copy-in/copy-out, back to back at other sizes and from every root; the
configuration that chooses the paths (oversubscribed teams, one window for
reductions, streaming receive buffers, the run-time choice); inline
reductions bounded by what a member folds. Waits and failures:
tests/test_engine_team_failures.py.

Teams are formed by forking (tests/c/team_fork.py). Everything here is
real: real shared memory, futexes, process_vm_readv.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import pgascol
from pgascol.engine import _core
from pgascol.errors import ArgumentError
from pgascol.node import config, topology
from tests.c.team_fork import fork_team, make_cfg


# ---------------------------------------------------------------- single copy

def test_cma_probe_between_members():
    def body(team, rank):
        verdict = team.probe_cma()
        team.barrier()  # the member probed stays alive until everyone probed
        return verdict

    out = fork_team(3, body)
    assert [o.get() for o in out] == [(True, "")] * 3


def test_cma_probe_disabled_by_config():
    def body(team, rank):
        return team.probe_cma(), team.config["cma_enable"]

    out = fork_team(2, body, {"PGASCOL_CMA": "0"})
    for o in out:
        (ok, reason), enabled = o.get()
        assert ok is False and enabled == 0
        assert "PGASCOL_CMA" in reason


def test_cma_probe_fork():
    assert _core.cma_probe_fork() == (True, "")


@pytest.mark.parametrize("P", [2, 4])
def test_bcast_cma_and_cico_agree(P):
    nbytes = 3 * 1024 * 1024 + 5  # not a multiple of the chunk
    cfg = make_cfg(P)
    cfg["cma_min"]["Bcast"] = 0
    root = P - 1

    def body(team, rank):
        expected = np.random.default_rng(1234).integers(0, 256, nbytes, dtype=np.uint8)
        ok, reason = team.probe_cma()
        assert ok, reason
        results = {}
        for mode in ("cma", "cico"):
            if mode == "cma":
                team.set_cma(True, "")
            else:
                team.set_cma(False, "test")
                assert team.cma_reason == "test"
            assert team.cma_ok == (mode == "cma")
            before = team.stats().get("Bcast", {}).get(mode, 0)
            buf = expected.copy() if rank == root else np.zeros(nbytes, np.uint8)
            team.bcast(buf, nbytes, root)
            assert np.array_equal(buf, expected), mode
            results[mode] = team.stats()["Bcast"][mode] - before
        return results, team.stats()

    out = fork_team(P, body, cfg=cfg)
    for o in out:
        results, stats = o.get()
        assert results == {"cma": 1, "cico": 1}
        assert stats["Bcast"] == {"cma": 1, "cico": 1}


@pytest.mark.parametrize("first,second", [(8, 100_000), (100_000, 8), (8, 600)])
def test_bcast_back_to_back_sizes_with_late_reader(first, second):
    """The root runs ahead into a second Bcast of another size (a new path)
    while a reader has not started the first: both must arrive intact."""
    def body(team, rank):
        a = bytearray(b"a" * first) if rank == 0 else bytearray(first)
        b = bytearray(b"b" * second) if rank == 0 else bytearray(second)
        if rank == 1:
            time.sleep(0.2)
        team.bcast(a, first, 0)
        team.bcast(b, second, 0)
        return bytes(a) == b"a" * first and bytes(b) == b"b" * second

    out = fork_team(2, body, {"PGASCOL_TIMEOUT": "5"})
    assert [o.get() for o in out] == [True, True]


@pytest.mark.parametrize("first,second", [(8, 100_000), (100_000, 8)])
def test_bcast_back_to_back_sizes_in_step(first, second):
    """The same pair of Bcasts with a barrier in between works (the control
    of the test above)."""
    def body(team, rank):
        a = bytearray(b"a" * first) if rank == 0 else bytearray(first)
        b = bytearray(b"b" * second) if rank == 0 else bytearray(second)
        if rank == 1:
            time.sleep(0.2)
        team.bcast(a, first, 0)
        team.barrier()
        team.bcast(b, second, 0)
        return bytes(a) == b"a" * first and bytes(b) == b"b" * second

    out = fork_team(2, body, {"PGASCOL_TIMEOUT": "5"})
    assert [o.get() for o in out] == [True, True]


@pytest.mark.parametrize("P", [2, 5])
def test_bcast_many_sizes_and_roots_in_step(P):
    """Bcasts of every path from every root, each followed by a barrier."""
    inline = make_cfg(P)["inline_max"]      # below the chunk (16 KiB)
    sizes = (0, 1, inline, inline + 1, 16 * 1024, 16 * 1024 + 1, 300_000)

    def body(team, rank):
        bad = []
        for root in range(P):
            for n in sizes:
                want = bytes((i * 31 + root) & 0xFF for i in range(n)) if n < 1024 else \
                    (np.arange(n, dtype=np.uint64) * 31 + root).astype(np.uint8).tobytes()
                buf = bytearray(want) if rank == root else bytearray(n)
                team.bcast(buf, n, root)
                if bytes(buf) != want:
                    bad.append((root, n))
                team.barrier()
        return bad, team.stats()["Bcast"]

    out = fork_team(P, body)
    for o in out:
        bad, stats = o.get()
        assert bad == []
        assert stats == {"inline": 3 * P, "cico": 4 * P}, stats


# ---------------------------------------------------------------- the configuration of the paths

def test_oversubscribed_bcast_policy():
    """With more ranks than CPUs, Bcast stays flat until the CPUs alone
    reach the tree's threshold, and stages payloads that fit the ring;
    explicit settings win."""
    env = {"PGASCOL_STAGING_BYTES": str(2 << 20), "PGASCOL_CALIBRATION": "/nonexistent"}
    tree_min = int(config.VARIABLES["PGASCOL_BCAST_TREE_MIN"][0])
    fits = config.team_config(False, env, 2)
    over = config.team_config(True, env, 2)
    wide = config.team_config(True, env, tree_min)
    assert fits["bcast_tree_min"] == tree_min
    assert over["bcast_tree_min"] == 0 and config.team_config(True, env)["bcast_tree_min"] == 0
    assert wide["bcast_tree_min"] == tree_min
    assert fits["cma_min"]["Bcast"] < 2 << 20
    assert over["cma_min"]["Bcast"] == 2 << 20
    assert over["cma_min"]["Scatter"] == fits["cma_min"]["Scatter"]
    mine = config.team_config(True, {**env, "PGASCOL_BCAST_TREE_MIN": "4",
                                     "PGASCOL_CMA_MIN_BCAST": "4096"}, 2)
    assert mine["bcast_tree_min"] == 4 and mine["cma_min"]["Bcast"] == 4096
    never = config.team_config(True, {**env, "PGASCOL_CMA_MIN_BCAST": "never"})
    assert never["cma_min"]["Bcast"] is None
    # Allgather(v): single copy for large totals only when ranks fit the CPUs
    for name in ("Allgather", "Allgatherv"):
        assert fits["cma_min"][name] == 8 << 20 and over["cma_min"][name] is None
    forced = config.team_config(True, {**env, "PGASCOL_CMA_MIN_ALLGATHER": "65536"}, 2)
    assert forced["cma_min"]["Allgather"] == 65536 and forced["cma_min"]["Allgatherv"] is None


def test_oversubscribed_reductions_take_one_window():
    """Reductions take one window instead of two when the blocks fit, on
    oversubscribed teams only; the team adopts the creator's choice."""
    env = {"PGASCOL_CALIBRATION": "/nonexistent"}
    assert config.team_config(False, env, 2)["reduce_one_window"] == 0
    assert config.team_config(True, env, 2)["reduce_one_window"] == 1
    for flag in (0, 1):
        cfg = make_cfg(1)
        cfg["reduce_one_window"] = flag
        t = _core.Team.create(0, 1, cfg)
        t.release()
        try:
            assert t.config["reduce_one_window"] == flag
        finally:
            t.destroy()


def test_recv_streaming_config(tmp_path):
    """PGASCOL_RECV_STREAM_MIN: auto is the last-level cache over 2 x the
    team's members (0, never, when either is unknown); a number of bytes
    is taken as given; anything else is refused. The creator's value
    becomes the team's."""
    env = {"PGASCOL_CALIBRATION": "/nonexistent"}
    assert config.recv_stream_min({}, 2, llc=32 << 20) == 8 << 20
    assert config.recv_stream_min({"PGASCOL_RECV_STREAM_MIN": "auto"}, 8, llc=32 << 20) == 2 << 20
    assert config.recv_stream_min({}, 0, llc=32 << 20) == 0
    assert config.recv_stream_min({}, 2, llc=0) == 0
    assert config.recv_stream_min({"PGASCOL_RECV_STREAM_MIN": "0"}, 2, llc=32 << 20) == 0
    assert config.recv_stream_min({"PGASCOL_RECV_STREAM_MIN": "65536"}, 2, llc=32 << 20) == 65536
    for bad in ("-1", "1M", "x"):
        with pytest.raises(ArgumentError, match="PGASCOL_RECV_STREAM_MIN"):
            config.recv_stream_min({"PGASCOL_RECV_STREAM_MIN": bad}, 2)
    llc = topology.last_level_cache()
    assert config.team_config(False, env, 2, 2)["recv_stream_min"] == (llc // 4 if llc else 0)
    assert config.team_config(False, env, 2)["recv_stream_min"] == 0      # team size unknown
    # sysfs as the kernel lays it out (sizes in K), instruction caches skipped
    for i, (level, kind, size) in enumerate(((1, "Instruction", "64K"), (2, "Unified", "512K"))):
        d = tmp_path / ("index%d" % i)
        d.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (d / name).write_text("%s\n" % value)
    assert topology.last_level_cache(tmp_path) == 512 << 10
    assert topology.last_level_cache(tmp_path / "none") == 0
    cfg = make_cfg(1)
    cfg["recv_stream_min"] = 12345
    t = _core.Team.create(0, 1, cfg)
    t.release()
    try:
        assert t.config["recv_stream_min"] == 12345
    finally:
        t.destroy()
    cfg["recv_stream_min"] = -1
    with pytest.raises(ArgumentError, match="recv_stream_min"):
        _core.Team.create(0, 1, cfg)


def test_run_time_path_choice_config():
    """Gather/Allgather/Alltoall(v) and the reductions follow the measured
    costs unless PGASCOL_ADAPT=0, a PGASCOL_CMA_MIN_<NAME> fixes their path
    by size, or single copy is ruled out for them (Allgather when
    oversubscribed); reductions take single copy by size only when told."""
    env = {"PGASCOL_CALIBRATION": "/nonexistent"}
    fits = config.team_config(False, env, 2)
    assert fits["adapt"] == list(config.ADAPTIVE)
    assert set(config.REDUCTIONS) <= set(fits["adapt"])
    assert all(fits["cma_min"][name] is None for name in config.REDUCTIONS)
    told = config.team_config(False, {**env, "PGASCOL_CMA_MIN_ALLREDUCE": "0",
                                      "PGASCOL_CMA_MIN_SCAN": "never"}, 2)
    assert told["cma_min"]["Allreduce"] == 0 and told["cma_min"]["Scan"] is None
    assert "Allreduce" not in told["adapt"] and "Scan" not in told["adapt"] and "Exscan" in told["adapt"]
    assert fits["adapt_min"] == int(config.VARIABLES["PGASCOL_ADAPT_MIN"][0]) == 256 << 10
    over = config.team_config(True, env, 2)
    assert "Allgather" not in over["adapt"] and "Alltoall" in over["adapt"] and "Allreduce" in over["adapt"]
    assert config.team_config(False, {**env, "PGASCOL_ADAPT": "0"}, 2)["adapt"] == []
    fixed = config.team_config(False, {**env, "PGASCOL_CMA_MIN_ALLTOALL": "0",
                                       "PGASCOL_ADAPT_MIN": "65536"}, 2)
    assert "Alltoall" not in fixed["adapt"] and "Alltoallv" in fixed["adapt"]
    assert fixed["adapt_min"] == 65536
    with pytest.raises(pgascol.ArgumentError, match="PGASCOL_ADAPT_MIN"):
        config.team_config(False, {**env, "PGASCOL_ADAPT_MIN": "-1"}, 2)
    with pytest.raises(pgascol.ArgumentError, match="unknown collectives Bogus"):
        _core.check_config({**fits, "adapt": ["Alltoall", "Bogus"]})
    # Team.create refuses it the same way, before reading the configuration
    with pytest.raises(pgascol.ArgumentError, match="unknown collectives Bogus"):
        _core.Team.create(0, 1, {**fits, "adapt": ["Alltoall", "Bogus"]})


def test_inline_reductions_bounded_by_what_a_member_folds():
    """Inline, every Allreduce/Scan member folds all P inputs: once that
    would exceed PGC_INLINE_FOLD_MAX (64 KiB) the vector is partitioned,
    though it fits the inline slot; Reduce_scatter members fold their own
    block only and stay inline."""
    P = 12
    f64, add = _core.DTYPES["float64"], _core.OPS["SUM"]

    def body(team, rank):
        results = []
        for n in (500, 1000):        # 4000 bytes (48000 folded), 8000 (96000)
            x = np.arange(n, dtype=np.float64) * (rank + 1)
            y = np.zeros(n)
            team.allreduce(x, y, n, f64, add)
            results.append(np.array_equal(y, np.arange(n) * (P * (P + 1) // 2)))
            team.scan(x, y, n, f64, add)
            results.append(np.array_equal(y, np.arange(n) * ((rank + 1) * (rank + 2) // 2)))
        x = np.arange(P * 80, dtype=np.float64) + rank     # 7680 bytes, 80 elements each
        y = np.zeros(80)
        team.reduce_scatter(x, y, [80] * P, f64, add, block=True)
        results.append(np.array_equal(y, (np.arange(80) + rank * 80) * P + P * (P - 1) // 2))
        return results, team.stats()

    for o in fork_team(P, body, deadline=60.0):
        results, stats = o.get()
        assert all(results), results
        assert stats["Allreduce"] == {"inline": 1, "cico": 1}, stats["Allreduce"]
        assert stats["Scan"] == {"inline": 1, "cico": 1}, stats["Scan"]
        assert stats["Reduce_scatter_block"] == {"inline": 1}, stats["Reduce_scatter_block"]
