"""Node teams of forked processes for the Python tests, through
pgascol.engine._core.Team: the twin of team_fork.h, which does the same for
the C tests. Also where a team's segment can be reached from outside
(csrc/base/segment.h), for these tests and the MPI programs.

fork_team(P, body): the test process creates the segment (Team.create),
forked children attach as ranks 0..P-1 (or 1..P-1 when the test process
takes part as rank 0), the test process removes the name once everyone
attached and collects what each child's body returned or raised."""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
import traceback
from dataclasses import dataclass

import pgascol
from pgascol.engine import _core
from pgascol.node import config

NCPUS = len(os.sched_getaffinity(0))

# Small, fast defaults for forked teams: no spinning, no yielding (waits go
# straight to the futex), a timeout short enough that a bug fails the test
# instead of hanging it.
BASE_ENV = {
    "PGASCOL_TIMEOUT": "10",
    "PGASCOL_SPIN_US": "0",
    "PGASCOL_YIELD_US": "0",
    "PGASCOL_STAGING_BYTES": str(256 * 1024),
    "PGASCOL_CHUNK_BYTES": str(16 * 1024),
    "PGASCOL_XCHG_CHUNK_BYTES": str(16 * 1024),
}


def make_cfg(P, cfg_env=None):
    """The team_config of a P-member team, with BASE_ENV overridden by cfg_env."""
    return config.team_config(P > NCPUS, {**BASE_ENV, **(cfg_env or {})}, NCPUS)


# ---------------------------------------------------------------- fork_team

@dataclass
class Outcome:
    """What one member did: its body's return value or exception, and how
    its process ended (exit code, or -signal)."""
    rank: int
    pid: int
    status: int | None = None
    value: object = None
    error: dict | None = None   # {"type", "classes", "message", "peer", "traceback"}
    hung: bool = False          # killed by fork_team at its deadline

    def raised(self, *classes) -> bool:
        return self.error is not None and any(c.__name__ in self.error["classes"] for c in classes)

    def get(self):
        """The body's return value; an AssertionError with the member's
        traceback when it raised, hung or died."""
        __tracebackhide__ = True
        if self.error is not None:
            raise AssertionError(f"rank {self.rank} raised:\n{self.error['traceback']}")
        if self.hung or self.status != 0:
            raise AssertionError(f"rank {self.rank} (pid {self.pid}) ended with status "
                                 f"{self.status}{' after hanging' if self.hung else ''}")
        return self.value


def _describe(exc: BaseException) -> dict:
    return {"type": type(exc).__name__,
            "classes": [c.__name__ for c in type(exc).__mro__],
            "message": str(exc),
            "peer": getattr(exc, "peer", None),
            "traceback": "".join(traceback.format_exception(exc))}


def _write_all(fd, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _child(rank, P, name, body, go_r, go_w, att_w, res_w):
    """A forked member: attach, report, wait for the go, run body, report.
    Never returns (pytest must not continue in a child)."""
    code = 3
    try:
        os.close(go_w)
        try:
            team = _core.Team.attach(rank, P, name)
        except BaseException as exc:
            os.write(att_w, b"E")
            _write_all(res_w, pickle.dumps(("error", _describe(exc))))
            code = 0
            return
        os.write(att_w, b"A")
        os.read(go_r, 1)  # EOF once the parent closes go_w: everyone attached
        try:
            message = ("ok", body(team, rank))
            data = pickle.dumps(message)
        except BaseException as exc:
            data = pickle.dumps(("error", _describe(exc)))
        _write_all(res_w, data)
        code = 0
    except BaseException:
        code = 4
    finally:
        os._exit(code)


def _status(wait_status: int) -> int:
    return (os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status)
            else -os.WTERMSIG(wait_status))


def fork_team(P, body, cfg_env=None, *, cfg=None, parent_body=None, deadline=30.0):
    """Run body(team, rank) on every member of a fresh P-member team.

    Children attach as ranks 0..P-1; with parent_body, this process is
    rank 0 (the creator's handle) and runs parent_body(team, 0, pids) while
    its children, ranks 1..P-1 (pids: rank -> pid), are not reaped yet. Returns one Outcome per rank.
    A child still running after `deadline` seconds is killed (hung=True)."""
    cfg = make_cfg(P, cfg_env) if cfg is None else cfg
    creator = _core.Team.create(0, P, cfg)
    name = creator.name
    first = 1 if parent_body is not None else 0
    go_r, go_w = os.pipe()
    att_r, att_w = os.pipe()
    outcomes: dict[int, Outcome] = {}
    readers: dict[int, int] = {}   # result fd -> rank
    chunks: dict[int, list] = {}
    end = time.monotonic() + deadline
    try:
        for r in range(first, P):
            res_r, res_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                _child(r, P, name, body, go_r, go_w, att_w, res_w)
            os.close(res_w)
            outcomes[r] = Outcome(r, pid)
            readers[res_r] = r
            chunks[r] = []
        os.close(att_w)
        att_w = -1
        got = b""
        while len(got) < P - first:
            ready, _, _ = select.select([att_r], [], [], max(0.0, end - time.monotonic()))
            data = os.read(att_r, 64) if ready else b""
            if not data:
                raise AssertionError(f"only {len(got)} of {P - first} members attached")
            got += data
        creator.release()
        os.close(go_w)  # releases the children
        go_w = -1
        if parent_body is not None:
            mine = outcomes[0] = Outcome(0, os.getpid())
            try:
                mine.value = parent_body(creator, 0, {r: o.pid for r, o in outcomes.items() if r})
            except Exception as exc:
                mine.error = _describe(exc)
            mine.status = 0
        # Collect; reap each child as soon as its pipe closes.
        while readers:
            left = end - time.monotonic()
            ready, _, _ = select.select(list(readers), [], [], max(0.0, left)) if left > 0 else ([], [], [])
            if not ready:
                break
            for fd in ready:
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[readers[fd]].append(data)
                    continue
                r = readers.pop(fd)
                os.close(fd)
                outcome = outcomes[r]
                outcome.status = _status(os.waitpid(outcome.pid, 0)[1])
                if chunks[r]:
                    kind, payload = pickle.loads(b"".join(chunks[r]))
                    if kind == "ok":
                        outcome.value = payload
                    else:
                        outcome.error = payload
    finally:
        for fd in (go_w, att_w):
            if fd >= 0:
                os.close(fd)
        os.close(att_r)
        for fd, r in readers.items():  # still running at the deadline
            outcome = outcomes[r]
            outcome.hung = True
            try:
                os.kill(outcome.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            outcome.status = _status(os.waitpid(outcome.pid, 0)[1])
            os.close(fd)
        for outcome in outcomes.values():  # e.g. an exception before collecting
            if outcome.status is None and outcome.pid != os.getpid():
                try:
                    os.kill(outcome.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                outcome.status = _status(os.waitpid(outcome.pid, 0)[1])
        creator.destroy()
    return [outcomes[r] for r in range(P)]


def timed(call) -> dict:
    """Run call(); how it ended and after how long (for member bodies)."""
    start = time.monotonic()
    try:
        call()
    except pgascol.PgascolError as exc:
        return {"elapsed": time.monotonic() - start, "type": type(exc).__name__,
                "classes": [c.__name__ for c in type(exc).__mro__],
                "message": str(exc), "peer": exc.peer}
    return {"elapsed": time.monotonic() - start, "type": None, "message": "returned"}


# ---------------------------------------------------------------- a segment from outside

def segment_path(address: str) -> str:
    """A segment's file by path: its /dev/shm name, or the creator's
    /proc/<pid>/fd/<n> for a memfd (os.stat and os.chmod follow it)."""
    if address.startswith("memfd:"):
        _, pid, fd, _ = address.split(":", 3)
        return f"/proc/{pid}/fd/{fd}"
    return "/dev/shm/" + address.lstrip("/")


def segment_reachable(address: str) -> bool:
    """Whether a process could still attach: the name exists, or the
    creator's descriptor still is that memfd (not closed, not reused)."""
    if address.startswith("memfd:"):
        name = address.split(":", 3)[3]
        try:
            return os.readlink(segment_path(address)) == f"/memfd:{name.lstrip('/')} (deleted)"
        except OSError:
            return False
    return os.path.exists(segment_path(address))


# ---- closing a process's /proc entries to its peers, for real

_PR_SET_DUMPABLE = 4
_CAP_SYS_PTRACE = 19
_CAP_VERSION_3 = 0x20080522


def _libc():
    import ctypes
    return ctypes.CDLL(None, use_errno=True)


def set_dumpable(flag: bool) -> None:
    """prctl(PR_SET_DUMPABLE): a process that is not dumpable has its
    /proc/<pid>/fd closed to other processes of its user, unless they hold
    CAP_SYS_PTRACE (the kernel's ptrace_may_access, read mode)."""
    import ctypes
    if _libc().prctl(_PR_SET_DUMPABLE, int(flag), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")


def set_ptrace_capability(effective: bool) -> bool:
    """Raise or lower CAP_SYS_PTRACE in this process's effective set (root
    has it; it stays permitted, so it can be raised again). Returns whether
    it was effective before."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    libc = _libc()
    header, data = Header(_CAP_VERSION_3, 0), (Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    bit = 1 << _CAP_SYS_PTRACE
    was = bool(data[0].effective & bit)
    if effective and not data[0].permitted & bit:
        return was      # not ours to raise (an ordinary user): nothing to do
    data[0].effective = data[0].effective | bit if effective else data[0].effective & ~bit
    header = Header(_CAP_VERSION_3, 0)
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    return was
