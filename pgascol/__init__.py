"""pgascol: shared-memory collectives for mpi4py programs.

    from mpi4py import MPI
    import pgascol
    comm = pgascol.Comm(MPI.COMM_WORLD)   # a drop-in mpi4py communicator

See README.md and docs/ARCHITECTURE.md."""
from ._version import __version__  # noqa: F401

from .errors import (ArgumentError, CollectiveMismatchError, DatatypeMismatchError,  # noqa: F401
                     OperationFailedError, PeerDeadError, PeerRefusedError, PgascolError, PgascolTimeoutError,
                     RevokedError, RootRefusedError, TeamAbortedError, TeamClosedError)

# Loaded on first use (PEP 562), so that tools which only launch jobs
# (pgascol-bench, the test harness) do not initialise MPI by importing pgascol.
_LAZY = {"Comm": ".comm", "NodeTeam": ".node.team", "stats": ".comm", "tuning": ".comm", "empty": ".comm.buffers",
         "zeros": ".comm.buffers", "free": ".comm.buffers"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError("module 'pgascol' has no attribute %r" % name)


__all__ = ["Comm", "NodeTeam", "stats", "tuning", "empty", "zeros", "free", "ArgumentError",
           "CollectiveMismatchError", "DatatypeMismatchError", "OperationFailedError", "PeerDeadError",
           "PeerRefusedError", "PgascolError", "PgascolTimeoutError", "RevokedError", "RootRefusedError",
           "TeamAbortedError", "TeamClosedError"]
