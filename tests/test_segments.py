"""Tests of the node segment: name, permissions, size, unlinking, and the
checks made when attaching (csrc/segment.c, csrc/team.c)."""

from __future__ import annotations

import os
import re
import stat
import time

import numpy as np
import pytest

import pgascol
from pgascol import _core
from tests.test_primitives import fork_team, make_cfg, segment_path

PAGE = 4096
NAME_RE = re.compile(r"^/pgascol-[0-9a-f]{32}$")


@pytest.fixture
def created():
    """Teams created in this process, destroyed (and their names removed) at the end."""
    teams = []

    def create(P=2, cfg_env=None, cfg=None):
        team = _core.Team.create(0, P, make_cfg(P, cfg_env) if cfg is None else cfg)
        teams.append(team)
        return team

    yield create
    for team in teams:
        path = None if team.closed else segment_path(team.name)
        team.destroy()
        if path:
            assert not os.path.exists(path)


def test_segment_file_name_mode_owner(created):
    team = created(3)
    assert NAME_RE.match(team.name), team.name
    st = os.stat(segment_path(team.name))
    assert stat.S_ISREG(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.geteuid()
    assert st.st_size == team.segment_bytes


def test_segment_mode_ignores_umask(created):
    old = os.umask(0)
    try:
        team = created(2)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(segment_path(team.name)).st_mode) == 0o600


def test_segment_names_are_unique(created):
    names = {created(2).name for _ in range(8)}
    assert len(names) == 8
    assert all(NAME_RE.match(n) for n in names)


def test_unlink_removes_name_and_is_idempotent(created):
    team = created(2)
    path = segment_path(team.name)
    assert os.path.exists(path)
    team.unlink()
    assert not os.path.exists(path)
    team.unlink()  # a name already gone is not an error
    with pytest.raises(pgascol.PgascolError):
        _core.Team.attach(1, 2, team.name)  # nobody can join any more


def test_destroy_removes_name(created):
    team = created(2)
    path = segment_path(team.name)
    team.destroy()
    assert not os.path.exists(path)


def test_team_works_after_unlink():
    """fork_team unlinks once everyone attached; the members still share the
    segment: check the name is gone from inside, then synchronise and move data."""
    payload = np.arange(200_000, dtype=np.int64)  # 1.6 MB: several staging rounds

    def body(team, rank):
        gone = not os.path.exists(segment_path(team.name))
        team.barrier()
        buf = payload.copy() if rank == 2 else np.zeros_like(payload)
        team.bcast(buf, buf.nbytes, 2)
        team.barrier()
        small = bytearray(b"%d" % rank * 10) if rank == 1 else bytearray(10)
        team.bcast(small, 10, 1)
        return gone, bool(np.array_equal(buf, payload)), bytes(small)

    out = fork_team(4, body)
    for o in out:
        assert o.get() == (True, True, b"1" * 10)


def test_segment_size_respects_staging(created):
    P = 3
    sizes = {}
    for staging in (64 * 1024, 1024 * 1024, 3 * 1024 * 1024):
        team = created(P, {"PGASCOL_STAGING_BYTES": str(staging)})
        assert team.config["staging_bytes"] == staging
        sizes[staging] = team.segment_bytes
        assert team.segment_bytes % PAGE == 0
        assert team.segment_bytes >= P * staging
        assert os.stat(segment_path(team.name)).st_size == team.segment_bytes
    # every member gets its own staging area: the size grows by P per staging byte
    assert sizes[1024 * 1024] - sizes[64 * 1024] == P * (1024 - 64) * 1024
    assert sizes[3 * 1024 * 1024] - sizes[1024 * 1024] == P * 2 * 1024 * 1024
    # and the control part is small: per member a few lines and
    # PGC_RUNAHEAD (64) inline slots of inline_max bytes (512 by default)
    assert sizes[64 * 1024] - P * 64 * 1024 <= 4 * PAGE + P * (PAGE + 64 * team.config["inline_max"])


def test_segment_staging_rounded_to_pages(created):
    P = 2
    a = created(P, {"PGASCOL_STAGING_BYTES": str(2 * PAGE), "PGASCOL_CHUNK_BYTES": "64"})
    b = created(P, {"PGASCOL_STAGING_BYTES": str(2 * PAGE + 64), "PGASCOL_CHUNK_BYTES": "64"})
    assert b.segment_bytes - a.segment_bytes == P * PAGE


def test_segment_size_grows_with_members(created):
    staging = 256 * 1024
    s2 = created(2, {"PGASCOL_STAGING_BYTES": str(staging)}).segment_bytes
    s8 = created(8, {"PGASCOL_STAGING_BYTES": str(staging)}).segment_bytes
    assert s8 - s2 >= 6 * staging


def test_attach_refuses_group_readable_segment(created):
    team = created(2)
    path = segment_path(team.name)
    os.chmod(path, 0o644)
    with pytest.raises(pgascol.PgascolError, match="mode 644"):
        _core.Team.attach(1, 2, team.name)
    os.chmod(path, 0o666)
    with pytest.raises(pgascol.PgascolError, match="mode 666"):
        _core.Team.attach(1, 2, team.name)
    # control: with the mode back at 0600 the same attach works
    os.chmod(path, 0o600)
    member = _core.Team.attach(1, 2, team.name)
    assert member.rank == 1 and member.name == team.name
    member.destroy()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_attach_refuses_foreign_owner(created):
    team = created(2)
    path = segment_path(team.name)
    os.chown(path, 4242, -1)
    with pytest.raises(pgascol.PgascolError, match="owner 4242"):
        _core.Team.attach(1, 2, team.name)
    os.chown(path, os.geteuid(), -1)
    _core.Team.attach(1, 2, team.name).destroy()


def test_attach_refuses_truncated_or_foreign_file():
    """A /dev/shm file with a pgascol-looking name that is not a team."""
    name = "/pgascol-" + os.urandom(16).hex()
    path = segment_path(name)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, b"\0" * 16)  # shorter than a header
        with pytest.raises(pgascol.PgascolError, match="bytes"):
            _core.Team.attach(1, 2, name)
        os.ftruncate(fd, 64 * 1024)  # big enough, but no magic
        with pytest.raises(pgascol.PgascolError, match="does not hold a pgascol team"):
            _core.Team.attach(1, 2, name)
    finally:
        os.close(fd)
        os.unlink(path)


# ---------------------------------------------------------------- stale-segment sweep

needs_sweep = pytest.mark.skipif(not hasattr(_core, "sweep_stale_segments"),
                                 reason="no _core.sweep_stale_segments")


@needs_sweep
def test_sweep_removes_dead_teams_segment_only(created):
    """A segment whose creator died before unlinking it is stale and swept;
    a live team's segment (still named) is left alone."""
    live = created(2)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            team = _core.Team.create(0, 2, make_cfg(2))
            os.write(w, team.name.encode())
        finally:
            os._exit(0)  # dies with the name still there
    os.close(w)
    stale = os.read(r, 100).decode()
    os.close(r)
    os.waitpid(pid, 0)
    try:
        assert NAME_RE.match(stale) and os.path.exists(segment_path(stale))
        removed = _core.sweep_stale_segments()
        assert not os.path.exists(segment_path(stale))
        assert removed >= 1
        assert os.path.exists(segment_path(live.name))
        _core.Team.attach(1, 2, live.name).destroy()  # and still usable
    finally:
        if os.path.exists(segment_path(stale)):
            os.unlink(segment_path(stale))


@needs_sweep
def test_concurrent_sweep_spares_segments_being_created():
    """One process sweeps in a loop while this one creates teams: no team may
    lose its name before it unlinks it itself."""
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(go_w)
            os.set_blocking(go_r, False)
            while True:
                try:
                    if os.read(go_r, 1) == b"":
                        break
                except BlockingIOError:
                    pass
                _core.sweep_stale_segments()
        finally:
            os._exit(0)
    os.close(go_r)
    cfg = make_cfg(2, {"PGASCOL_STAGING_BYTES": "8192", "PGASCOL_CHUNK_BYTES": "64"})
    lost, created_n = [], 0
    end = time.monotonic() + 1.5
    try:
        while time.monotonic() < end and not lost:
            team = _core.Team.create(0, 2, cfg)
            created_n += 1
            if not os.path.exists(segment_path(team.name)):
                lost.append(team.name)
            team.destroy()
    finally:
        os.close(go_w)
        os.waitpid(pid, 0)
    assert not lost, f"the sweep removed {lost[0]} while it was being created (after {created_n} creates)"
