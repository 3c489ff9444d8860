"""Where a node segment can be reached (csrc/segment.h): shared by the tests
of the C core (forked teams) and the MPI rank programs."""

from __future__ import annotations

import os


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
