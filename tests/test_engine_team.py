"""Tests of the C core's primitives through pgascol.engine._core.Team, without MPI.

Teams are formed by forking (tests/c/team_fork.py). Everything here is
real: real shared memory, futexes, process_vm_readv, real process deaths.
"""

from __future__ import annotations

import os
import select
import signal
import time

import numpy as np
import pytest

import pgascol
from pgascol.engine import _core
from pgascol.errors import ArgumentError
from pgascol.node import config, topology
from tests.c.team_fork import fork_team, make_cfg, timed


# ---------------------------------------------------------------- the helper itself

def test_fork_team_runs_every_rank_and_reports_errors():
    def body(team, rank):
        if rank == 2:
            raise ValueError("deliberate")
        return (rank, team.rank, team.size, os.getpid())

    out = fork_team(3, body)
    assert [o.status for o in out] == [0, 0, 0]
    assert out[0].get()[:3] == (0, 0, 3) and out[1].get()[:3] == (1, 1, 3)
    assert out[0].get()[3] == out[0].pid and out[0].pid != os.getpid()
    assert out[2].raised(ValueError) and out[2].error["message"] == "deliberate"
    with pytest.raises(AssertionError, match="deliberate"):
        out[2].get()


# ---------------------------------------------------------------- futex wait / wake

@pytest.mark.parametrize("P", [2, 3, 8])
def test_barrier_futex_wait_and_late_arrival(P):
    """With no spin and no yield budget, waiters sleep on the futex; a member
    arriving 0.3 s late must wake them all, promptly."""
    late = P - 1 if P > 2 else 0  # P=2: the late one is the fan-in root

    def body(team, rank):
        assert team.config["yield_ns"] == 0 and team.config["spin_ns"] == 0
        for _ in range(50):  # many back-to-back barriers through the sleep path
            team.barrier()
        team.barrier()
        if rank == late:
            time.sleep(0.3)
            entered = time.monotonic()
            team.barrier()
            return {"entered": entered}
        start, cpu0 = time.monotonic(), time.process_time()
        team.barrier()
        left = time.monotonic()
        return {"start": start, "left": left, "cpu": time.process_time() - cpu0}

    out = fork_team(P, body)
    results = [o.get() for o in out]
    entered = results[late]["entered"]
    for rank, res in enumerate(results):
        if rank == late:
            continue
        # Barrier semantics: nobody leaves before the late member entered...
        assert res["left"] >= entered, (rank, res, entered)
        # ...the wake-up is prompt (far below the 10 s timeout)...
        assert res["left"] - entered < 2.0, (rank, res["left"] - entered)
        # ...and the waiters slept instead of burning CPU (yield would cost
        # a large share of the 0.3 s on this machine).
        assert res["cpu"] < 0.05 + 0.1 * (res["left"] - res["start"]), (rank, res)
    assert results[late]["entered"] - min(r["start"] for i, r in enumerate(results) if i != late) > 0.25


# ---------------------------------------------------------------- timeout

@pytest.mark.parametrize("P,missing", [(2, 1), (3, 0)])
def test_barrier_times_out(P, missing):
    """PGASCOL_TIMEOUT=1 and one member (alive) never enters the barrier: the
    others fail within 1-3 s with PgascolTimeoutError (or TeamAbortedError,
    when another member timed out first and aborted the team)."""
    done_r, done_w = os.pipe()  # the waiters tell the missing member they are done

    def body(team, rank):
        if rank == missing:  # stays away (and alive) up to 5 s
            got, stop = b"", time.monotonic() + 5.0
            while len(got) < P - 1 and time.monotonic() < stop:
                ready, _, _ = select.select([done_r], [], [], stop - time.monotonic())
                if ready:
                    got += os.read(done_r, 16)
            return "stayed away"
        try:
            return timed(team.barrier)
        finally:
            os.write(done_w, b"x")

    try:
        out = fork_team(P, body, {"PGASCOL_TIMEOUT": "1"})
    finally:
        os.close(done_r)
        os.close(done_w)
    assert out[missing].get() == "stayed away"
    waiters = [o.get() for o in out if o.rank != missing]
    for res in waiters:
        assert res["type"] in ("PgascolTimeoutError", "TeamAbortedError"), res
        assert 0.9 <= res["elapsed"] < 3.0, res
        assert "Barrier" in res["message"]
        # the team timeout is what ended the wait, whoever noticed first
        assert "timed out after 1.0 s" in res["message"]
        assert "PGASCOL_TIMEOUT" in res["message"]
    timeouts = [res for res in waiters if res["type"] == "PgascolTimeoutError"]
    assert timeouts, waiters
    for res in timeouts:
        assert "TimeoutError" in res["classes"]  # also a builtin TimeoutError
    if P == 2:
        # the only waiter waited for the missing member: it must name it
        (res,) = timeouts
        assert res["peer"] == missing
        assert f"waiting for local rank {missing} (pid {out[missing].pid})" in res["message"]
    else:
        # missing is the fan-in root: every waiter waits for it
        for res in waiters:
            assert f"waiting for local rank {missing} (pid {out[missing].pid})" in res["message"], res
        for res in timeouts:
            assert res["peer"] == missing


def test_timeout_duration():
    """The waiter gives up after about PGASCOL_TIMEOUT seconds, not earlier."""
    done_r, done_w = os.pipe()

    def body(team, rank):
        if rank == 1:  # alive but absent, until the waiter gave up (at most 4 s)
            select.select([done_r], [], [], 4.0)
            return None
        try:
            return timed(team.barrier)
        finally:
            os.write(done_w, b"x")

    try:
        out = fork_team(2, body, {"PGASCOL_TIMEOUT": "1.5"})
    finally:
        os.close(done_r)
        os.close(done_w)
    res = out[0].get()
    assert res["type"] == "PgascolTimeoutError", res
    assert 1.45 <= res["elapsed"] < 2.5, res
    assert out[1].get() is None


# ---------------------------------------------------------------- dead peers

def _wait_for_death(dies, how, P):
    def body(team, rank):
        if rank == dies:
            time.sleep(0.3)
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(0)
        return timed(team.barrier)

    return fork_team(P, body, {"PGASCOL_TIMEOUT": "30"})


@pytest.mark.parametrize("how", ["kill", "exit"])
@pytest.mark.parametrize("P,dies", [(2, 1), (4, 0), (4, 3)])
def test_dead_peer_detected(P, dies, how):
    out = _wait_for_death(dies, how, P)
    assert out[dies].status == (-signal.SIGKILL if how == "kill" else 0)
    assert out[dies].value is None and out[dies].error is None
    types = []
    for o in out:
        if o.rank == dies:
            continue
        res = o.get()
        types.append(res["type"])
        assert res["type"] in ("PeerDeadError", "TeamAbortedError"), res
        # 0.3 s until the death, then a liveness check every 0.1 s
        assert res["elapsed"] < 2.0, res
        assert f"local rank {dies} (pid {out[dies].pid}) of the node team died or exited" in res["message"]
        assert "Barrier" in res["message"]
        if res["type"] == "PeerDeadError":
            assert res["peer"] == dies
    assert "PeerDeadError" in types  # somebody detected it rather than everybody timing out


@pytest.mark.parametrize("nbytes", [8, 64 * 1024])   # inline, copy-in/copy-out
def test_a_member_that_finished_and_exited_is_not_dead(nbytes):
    """Gather to local rank 1: rank 2 contributes, returns as soon as its
    part is done and its process ends; rank 0 comes 0.6 s late, so the root
    sleeps on it and checks liveness several times meanwhile. Only the member
    waited for is judged (a program's ranks may end at different times): the
    Gather completes with every block."""
    def body(team, rank):
        if rank == 0:
            time.sleep(0.6)
        send = bytes([rank + 1]) * nbytes
        recv = bytearray(3 * nbytes) if rank == 1 else None
        team.gather(send, nbytes, recv, [nbytes] * 3, None, 1)
        return bytes(recv) if rank == 1 else "sent"

    out = fork_team(3, body, {"PGASCOL_TIMEOUT": "30"})
    assert out[1].get() == b"".join(bytes([r + 1]) * nbytes for r in range(3))
    assert out[0].get() == out[2].get() == "sent"


def test_dead_peer_zombie_detected_by_parent():
    """The waiting member is the dead member's parent and has not reaped it:
    a zombie counts as dead."""
    def child(team, rank):
        if rank == 1:
            time.sleep(0.3)
            os._exit(0)
        team.barrier()  # rank 2: waits with the parent; fails too
        return "barrier returned"

    seen = {}

    def parent(team, rank, pids):
        start = time.monotonic()
        with pytest.raises((pgascol.PeerDeadError, pgascol.TeamAbortedError)) as info:
            team.barrier()
        seen["elapsed"] = time.monotonic() - start
        seen["error"] = info.value
        seen["pids"] = pids
        with open(f"/proc/{pids[1]}/stat") as f:  # still unreaped
            seen["state"] = f.read().rsplit(")", 1)[1].split()[0]
        return "raised"

    out = fork_team(3, child, {"PGASCOL_TIMEOUT": "30"}, parent_body=parent)
    assert out[0].get() == "raised"
    pids = seen["pids"]
    assert pids == {1: out[1].pid, 2: out[2].pid}
    assert seen["state"] == "Z"
    assert seen["elapsed"] < 2.0
    err = seen["error"]
    assert f"local rank 1 (pid {pids[1]})" in str(err)
    if isinstance(err, pgascol.PeerDeadError):
        assert err.peer == 1
    assert out[1].status == 0
    assert out[2].raised(pgascol.PeerDeadError, pgascol.TeamAbortedError)
    assert "local rank 1" in out[2].error["message"]


def test_check_peers_names_dead_member():
    def child(team, rank):
        if rank == 1:
            os._exit(0)
        time.sleep(0.5)
        with pytest.raises(pgascol.PeerDeadError) as info:
            team.check_peers()
        assert info.value.peer == 1
        # check_peers aborts the team: the next collective fails at once
        # (with the member's own reason, as it aborted the team itself)
        start = time.monotonic()
        with pytest.raises((pgascol.PeerDeadError, pgascol.TeamAbortedError), match="local rank 1"):
            team.barrier()
        assert time.monotonic() - start < 0.5
        return str(info.value)

    out = fork_team(2, child, {"PGASCOL_TIMEOUT": "30"})
    assert "local rank 1" in out[0].get()


# ---------------------------------------------------------------- abort

def test_abort_propagates():
    P = 4
    msg = "custom abort reason 7f3a"

    def body(team, rank):
        if rank == 2:
            time.sleep(0.2)
            team.abort(msg)
            return timed(team.barrier)  # the aborter's own next wait fails too
        return timed(team.barrier)

    out = fork_team(P, body, {"PGASCOL_TIMEOUT": "30"})
    for o in out:
        res = o.get()
        assert res["type"] == "TeamAbortedError", (o.rank, res)
        assert msg in res["message"]
        assert "aborted by local rank 2" in res["message"]
        assert res["peer"] == 2
        assert res["elapsed"] < 2.0  # woken, not timed out (30 s)


def test_abort_before_anyone_waits():
    """An abort is sticky: members that start a collective later fail at once."""
    def body(team, rank):
        if rank == 0:
            team.abort("early")
        time.sleep(0.2)
        return [timed(team.barrier), timed(lambda: team.bcast(bytearray(4), 4, 0))]

    out = fork_team(3, body, {"PGASCOL_TIMEOUT": "30"})
    for o in out:
        for res in o.get():
            assert res["type"] == "TeamAbortedError" and "early" in res["message"], res
            assert res["elapsed"] < 0.5


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


# ---------------------------------------------------------------- bad input

def test_bad_input_is_refused_and_team_stays_usable():
    def body(team, rank):
        checks = []
        for root in (2, -1, 99):
            with pytest.raises(pgascol.ArgumentError, match="root"):
                team.bcast(bytearray(8), 8, root)
        team.barrier()
        checks.append("root")

        # Refused before any data moved: only one member makes the bad call,
        # the other does not call at all; the op counts stay in step.
        if rank == 1:
            with pytest.raises(pgascol.ArgumentError, match="writable"):
                team.bcast(b"12345678", 8, 0)
            ro = np.full(4096, 7, np.uint8)
            ro.flags.writeable = False
            with pytest.raises(pgascol.ArgumentError, match="writable"):
                team.bcast(ro, 4096, 0)
            assert (ro == 7).all()
            small = bytearray(b"\x01" * 10)
            with pytest.raises(pgascol.ArgumentError, match="10 bytes"):
                team.bcast(small, 11, 0)
            assert small == bytearray(b"\x01" * 10)
            for junk in (42, "a string?", None, [1, 2, 3]):
                with pytest.raises(pgascol.ArgumentError):
                    team.bcast(junk, 1, 0)
            checks.append("recvbuf")
        else:
            # the root only reads: a read-only buffer is fine, but too small is not
            with pytest.raises(pgascol.ArgumentError, match="needs 100"):
                team.bcast(b"x" * 99, 100, 0)
            checks.append("sendbuf")
        team.barrier()

        # The team works, and a root's read-only buffer is accepted.
        payload = bytes(range(256)) * 40
        buf = payload if rank == 0 else bytearray(len(payload))
        team.bcast(buf, len(payload), 0)
        assert bytes(buf) == payload
        team.barrier()
        stats = team.stats()
        assert stats == {"Barrier": {"inline": 3}, "Bcast": {"cico": 1}}, stats
        return checks

    out = fork_team(2, body)
    assert out[0].get() == ["root", "sendbuf"]
    assert out[1].get() == ["root", "recvbuf"]


def test_mismatched_bcast_sizes_abort():
    """A reader expecting another size than the root sends is refused (and
    the team aborted) rather than overrunning or truncating its buffer."""
    def body(team, rank):
        n = 100 if rank == 0 else 64
        buf = bytearray(b"r" * n) if rank == 0 else bytearray(n)
        try:
            team.bcast(buf, n, 0)
        except pgascol.PgascolError as exc:
            return type(exc).__name__, str(exc), bytes(buf)
        return None, "", bytes(buf)

    out = fork_team(2, body, {"PGASCOL_TIMEOUT": "5"})
    kind, message, data = out[1].get()
    assert kind in ("ArgumentError", "TeamAbortedError")
    assert "100" in message and "64" in message
    assert data == bytes(64)  # nothing was written
    # (the root, on the inline path, may have finished before the reader looked)
    assert out[0].status == 0


def test_use_after_destroy():
    team = _core.Team.create(0, 1, make_cfg(1))
    team.release()
    team.barrier()
    buf = bytearray(b"abc")
    team.bcast(buf, 3, 0)
    assert team.stats() == {"Barrier": {"inline": 1}, "Bcast": {"inline": 1}}
    assert not team.closed
    team.destroy()
    assert team.closed
    for call in (team.barrier, lambda: team.bcast(buf, 3, 0), lambda: team.name,
                 team.stats, team.probe_cma, lambda: team.abort("x"), team.check_peers,
                 lambda: team.config):
        with pytest.raises(pgascol.TeamClosedError):
            call()
    team.destroy()  # idempotent


@pytest.mark.parametrize("name,cls", [
    ("/pgascol-" + "0" * 32, pgascol.PgascolError),       # no such segment
    ("/not-ours", pgascol.ArgumentError),                  # not a pgascol name
    ("pgascol-" + "0" * 32, pgascol.ArgumentError),        # no leading slash
    ("/pgascol-" + "0" * 100, pgascol.ArgumentError),      # too long
    ("", pgascol.ArgumentError),
])
def test_attach_bogus_name(name, cls):
    with pytest.raises(cls):
        _core.Team.attach(1, 2, name)


def test_attach_wrong_geometry():
    team = _core.Team.create(0, 2, make_cfg(2))
    try:
        for rank, size in ((1, 3), (2, 2), (-1, 2)):
            with pytest.raises(pgascol.ArgumentError):
                _core.Team.attach(rank, size, team.name)
    finally:
        team.destroy()


@pytest.mark.parametrize("chunk,staging", [(100, 4096), (0, 4096), (32, 4096), (4096, 4096)])
def test_create_refuses_bad_chunking(chunk, staging):
    cfg = make_cfg(2)
    cfg["chunk_bytes"] = chunk
    cfg["staging_bytes"] = staging
    before = set(os.listdir("/dev/shm"))
    with pytest.raises(pgascol.ArgumentError, match="chunk_bytes"):
        _core.Team.create(0, 2, cfg)
    assert not {n for n in set(os.listdir("/dev/shm")) - before if n.startswith("pgascol-")}


@pytest.mark.parametrize("rank,size", [(0, 0), (2, 2), (-1, 1)])
def test_create_refuses_bad_geometry(rank, size):
    with pytest.raises(pgascol.ArgumentError):
        _core.Team.create(rank, size, make_cfg(2))


def test_config_refuses_bad_values():
    with pytest.raises(pgascol.ArgumentError):
        make_cfg(2, {"PGASCOL_CHUNK_BYTES": "100"})
    for bad in ("0", "100", "-64"):
        with pytest.raises(pgascol.ArgumentError, match="PGASCOL_XCHG_CHUNK_BYTES"):
            make_cfg(2, {"PGASCOL_XCHG_CHUNK_BYTES": bad})
    # the exchange ring has its own chunk (pgc_xchg_ring shrinks it to fit a small staging area)
    cfg = make_cfg(2, {"PGASCOL_XCHG_CHUNK_BYTES": str(1 << 20), "PGASCOL_STAGING_BYTES": "65536"})
    assert cfg["xchg_chunk_bytes"] == 1 << 20 and cfg["chunk_bytes"] == 16 * 1024
    with pytest.raises(pgascol.ArgumentError):
        make_cfg(2, {"PGASCOL_TIMEOUT": "0"})
    for radix in ("1", "17"):
        with pytest.raises(pgascol.ArgumentError, match="PGASCOL_BCAST_RADIX"):
            make_cfg(2, {"PGASCOL_BCAST_RADIX": radix})
    cfg = make_cfg(2)
    cfg["timeout_s"] = -1.0
    with pytest.raises(pgascol.ArgumentError, match="timeout"):
        _core.Team.create(0, 2, cfg)


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
