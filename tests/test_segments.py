"""Tests of the node segment: name, permissions, size, unlinking, and the
checks made when attaching (csrc/base/segment.c, csrc/team/team.c)."""

from __future__ import annotations

import os
import re
import stat
import time

import numpy as np
import pytest

import pgascol
from pgascol.engine import _core
from tests.c.team_fork import fork_team, make_cfg, segment_path, segment_reachable

PAGE = 4096
NAME_RE = re.compile(r"^/pgascol-[0-9a-f]{32}$")
ADDRESS_RE = {"named": NAME_RE,
              "memfd": re.compile(r"^memfd:%d:[0-9]+:/pgascol-[0-9a-f]{32}$" % os.getpid())}


@pytest.fixture(params=["memfd", "named"])
def kind(request):
    return request.param


@pytest.fixture
def created(kind):
    """Teams of the segment kind `kind` created in this process, destroyed
    (their names removed, their memfds closed) at the end."""
    teams = []

    def create(P=2, cfg_env=None, cfg=None):
        team = _core.Team.create(0, P, make_cfg(P, {"PGASCOL_SEGMENT": kind, **(cfg_env or {})})
                                 if cfg is None else cfg)
        assert team.segment_kind == kind
        teams.append(team)
        return team

    yield create
    for team in teams:
        name = None if team.closed else team.name
        team.destroy()
        if name:
            assert not segment_reachable(name)


def test_segment_file_name_mode_owner(created, kind):
    team = created(3)
    assert ADDRESS_RE[kind].match(team.name), team.name
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


def test_segment_names_are_unique(created, kind):
    names = {created(2).name.split(":")[-1] for _ in range(8)}
    assert len(names) == 8
    assert all(NAME_RE.match(n) for n in names)


def test_release_ends_attaching_and_is_idempotent(created):
    team = created(2)
    assert segment_reachable(team.name)
    _core.Team.attach(1, 2, team.name).destroy()
    team.release()
    assert not segment_reachable(team.name)
    team.release()  # a name already gone, a memfd already closed: not an error
    with pytest.raises(pgascol.PgascolError):
        _core.Team.attach(1, 2, team.name)  # nobody can join any more


def test_destroy_releases(created):
    team = created(2)
    name = team.name
    team.destroy()
    assert not segment_reachable(name)


def test_team_works_after_release(kind):
    """fork_team releases once everyone attached; the members still share the
    segment: check it is out of reach from inside, then synchronise and move data."""
    payload = np.arange(200_000, dtype=np.int64)  # 1.6 MB: several staging rounds

    def body(team, rank):
        gone = not segment_reachable(team.name)
        team.barrier()
        buf = payload.copy() if rank == 2 else np.zeros_like(payload)
        team.bcast(buf, buf.nbytes, 2)
        team.barrier()
        small = bytearray(b"%d" % rank * 10) if rank == 1 else bytearray(10)
        team.bcast(small, 10, 1)
        return gone, bool(np.array_equal(buf, payload)), bytes(small)

    out = fork_team(4, body, {"PGASCOL_SEGMENT": kind})
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
    # PGC_RUNAHEAD (64) inline slots of inline_max bytes (8 KiB by default)
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


# ---------------------------------------------------------------- memfd segments

def test_memfd_segment_is_never_named():
    before = set(os.listdir("/dev/shm"))
    team = _core.Team.create(0, 2, make_cfg(2))   # the default kind
    try:
        assert team.segment_kind == "memfd" and team.config["segment"] == "memfd"
        member = _core.Team.attach(1, 2, team.name)
        assert set(os.listdir("/dev/shm")) == before
        member.destroy()
    finally:
        team.destroy()


def _address(pid, fd, name=None):
    return "memfd:%d:%d:%s" % (pid, fd, name or "/pgascol-" + os.urandom(16).hex())


def test_attach_refuses_bad_memfd_addresses():
    """Malformed addresses, a descriptor that is another file, or a creator
    that is gone: a clear error, nothing opened."""
    team = _core.Team.create(0, 2, make_cfg(2))
    good = team.name
    _, pid, fd, name = good.split(":", 3)
    try:
        for bad in ("memfd:", "memfd:x:1:" + name, "memfd:%s:%s" % (pid, fd), "memfd:%s:%s:%s" % (pid, fd, name[:-1]),
                    "memfd:%s:%s:%sg" % (pid, fd, name[:-1]), "memfd:%s:-1:%s" % (pid, name),
                    "memfd:0:%s:%s" % (fd, name), "memfd:%s:%s:/etc/passwd" % (pid, fd)):
            with pytest.raises(pgascol.ArgumentError, match="not a pgascol segment address"):
                _core.Team.attach(1, 2, bad)
        # the right descriptor with another unguessable name: not the segment
        with pytest.raises(pgascol.ArgumentError, match="not the segment"):
            _core.Team.attach(1, 2, _address(int(pid), int(fd)))
        # another open file of the creator's
        with open(__file__) as f:
            with pytest.raises(pgascol.ArgumentError, match="not the segment"):
                _core.Team.attach(1, 2, _address(int(pid), f.fileno(), name))
        # a descriptor the creator does not have
        with pytest.raises(pgascol.PgascolError, match="cannot open /proc/"):
            _core.Team.attach(1, 2, _address(int(pid), 999_999, name))
        _core.Team.attach(1, 2, good).destroy()   # control
    finally:
        team.destroy()


def test_attach_to_a_dead_creators_memfd_fails_cleanly():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            team = _core.Team.create(0, 2, make_cfg(2))
            os.write(w, team.name.encode())
        finally:
            os._exit(0)
    os.close(w)
    address = os.read(r, 200).decode()
    os.close(r)
    os.waitpid(pid, 0)
    with pytest.raises(pgascol.PgascolError, match="cannot open /proc/%d/fd/" % pid):
        _core.Team.attach(1, 2, address)


def test_attach_to_an_undumpable_creators_memfd_is_refused_by_the_kernel():
    """A creator that is not dumpable has its /proc/<pid>/fd closed to
    processes without CAP_SYS_PTRACE: attaching fails with the kernel's
    reason (and NodeTeam then falls back to a name: tests/mpi_programs/node_team.py)."""
    from tests.c.team_fork import set_dumpable, set_ptrace_capability

    addr_r, addr_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(addr_r)
            os.close(go_w)
            team = _core.Team.create(0, 2, make_cfg(2))
            set_dumpable(False)
            os.write(addr_w, team.name.encode())
            os.read(go_r, 1)      # until the parent is done
        finally:
            os._exit(0)
    os.close(addr_w)
    os.close(go_r)
    address = os.read(addr_r, 200).decode()
    os.close(addr_r)
    had_cap = set_ptrace_capability(False)
    try:
        with pytest.raises(pgascol.PgascolError, match="cannot open /proc/%d/fd/.*(Permission denied|not permitted)" % pid):
            _core.Team.attach(1, 2, address)
    finally:
        if had_cap:
            set_ptrace_capability(True)
        os.close(go_w)
        os.waitpid(pid, 0)


def _deny_memfd_create():
    """Install a seccomp filter on this process: memfd_create fails with
    ENOSYS (as on a kernel without it), every other call is allowed."""
    import ctypes
    import platform

    if platform.machine() != "x86_64":
        raise OSError("the filter is written for x86_64")
    nr_memfd_create, enosys = 319, 38

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Filter))]

    ld_nr, jeq, ret = 0x20, 0x15, 0x06          # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K
    ret_errno, ret_allow = 0x00050000, 0x7FFF0000
    code = (Filter * 4)(Filter(ld_nr, 0, 0, 0), Filter(jeq, 0, 1, nr_memfd_create),
                        Filter(ret, 0, 0, ret_errno | enosys), Filter(ret, 0, 0, ret_allow))
    prog = Prog(4, code)
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) or \
            libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(prog), 0, 0):
        raise OSError(ctypes.get_errno(), "seccomp")


def test_without_memfd_create_a_named_segment():
    """Where the kernel has no memfd_create (played by a seccomp filter in a
    forked team), a memfd request makes a named segment, which works."""
    def body(team, rank):
        return team.segment_kind, team.name

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.close(r)
            try:
                _deny_memfd_create()
            except OSError as exc:
                os.write(w, ("skip: %s" % exc).encode())
                code = 0
            else:
                out = fork_team(2, body)
                kinds = {o.get() for o in out}
                os.write(w, repr(sorted(kinds)).encode())
                code = 0
        finally:
            os._exit(code)
    os.close(w)
    got = os.read(r, 500).decode()
    os.close(r)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, got
    if got.startswith("skip:"):
        pytest.skip(got)
    kinds = eval(got)
    assert len(kinds) == 1 and kinds[0][0] == "named" and NAME_RE.match(kinds[0][1]), kinds
    assert not os.path.exists(segment_path(kinds[0][1]))


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
@pytest.mark.parametrize("kind", ["named"])   # a memfd has no name to sweep
def test_sweep_removes_dead_teams_segment_only(created):
    """A segment whose creator died before unlinking it is stale and swept;
    a live team's segment (still named) is left alone."""
    live = created(2)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            team = _core.Team.create(0, 2, make_cfg(2, {"PGASCOL_SEGMENT": "named"}))
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
    cfg = make_cfg(2, {"PGASCOL_STAGING_BYTES": "8192", "PGASCOL_CHUNK_BYTES": "64",
                       "PGASCOL_SEGMENT": "named"})
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
