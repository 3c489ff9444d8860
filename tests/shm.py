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
