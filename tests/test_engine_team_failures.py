"""Tests of the C core's primitives through pgascol.engine._core.Team, without MPI:
waits and failures. The fork helper itself; barriers whose waiters sleep on
the futex; timeouts naming the missing members; dead peers (killed,
exited, zombies) detected; an abort reaching every member; bad input
refused with the team still usable, and teams that cannot be created or
attached. The paths a call takes: tests/test_engine_team_paths.py.

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
