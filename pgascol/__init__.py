"""pgascol: shared-memory collectives for mpi4py programs.

    from mpi4py import MPI
    import pgascol
    comm = pgascol.Comm(MPI.COMM_WORLD)   # a drop-in mpi4py communicator

See README.md and docs/ARCHITECTURE.md."""
from ._version import __version__  # noqa: F401


def _open_mpi_defaults():
    """Open MPI 5.0's osc/rdma loses bitwise accumulates between hosts
    (BAND, BOR, BXOR) that it gives the network's atomics: up to 32
    eight-byte elements, and every Fetch_and_op. OMPI_MCA_osc_rdma_acc_use_amo=0
    takes them to its lock-protected path, which is right
    (docs/EMULATED-CLUSTER.md has the reproducer). Open MPI reads it when
    MPI starts: set here where it has not started yet (a program that
    imports pgascol before mpi4py.MPI, python -m pgascol); MPICH ignores it.
    Global arrays refuse such updates where it is not set
    (pgascol/pgas/context.py, bitwise_updates_lost)."""
    import os
    import sys
    if "mpi4py.MPI" not in sys.modules:
        os.environ.setdefault("OMPI_MCA_osc_rdma_acc_use_amo", "0")


_open_mpi_defaults()


def _refuse_an_unbuilt_checkout():
    """Python puts a job's working directory first on sys.path: started in
    a directory that holds a pgascol checkout, every rank imports its source
    folder instead of the installed package, and fails later on a missing
    extension. Say so here (a few stat calls; an installed package has no
    setup.py beside it)."""
    import os
    from importlib.machinery import EXTENSION_SUFFIXES
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.exists(os.path.join(here, os.pardir, "setup.py")):
        return
    core = os.path.join(here, "engine", "_core")
    if any(os.path.exists(core + suffix) for suffix in EXTENSION_SUFFIXES):
        return
    raise ImportError("pgascol was imported from the source folder %s, whose C extensions are not built: "
                      "Python looks first in the working directory (or a script's folder), and %s holds a "
                      "pgascol checkout. Start the job from another directory to use the installed pgascol, "
                      "or build the checkout in place (pip install -e . in it)."
                      % (here, os.path.dirname(here)), name="pgascol")


_refuse_an_unbuilt_checkout()

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
