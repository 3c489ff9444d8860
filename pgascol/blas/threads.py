"""How many threads the local BLAS calls use (threadpoolctl).

Default: one BLAS thread per rank (PGASCOL_BLAS_THREADS unset or 1), the
MPI-everywhere mode: the ranks are the parallelism. Hybrid mode (one rank
per node, all the node's cores to BLAS): PGASCOL_BLAS_THREADS=k, or
pgascol.blas.set_threads(k), or "node" for as many threads as the rank's
CPU affinity allows. The limit applies to every BLAS library loaded in the
process (SciPy's, which the kernels call, and numpy's)."""
import os

from threadpoolctl import threadpool_limits

from ..errors import ArgumentError

_applied = None


def _parse(value):
    if value in (None, ""):
        return 1
    if value == "node":
        return len(os.sched_getaffinity(0))
    try:
        k = int(value)
    except ValueError:
        k = 0
    if k < 1:
        raise ArgumentError('PGASCOL_BLAS_THREADS must be a positive integer or "node", not %r' % (value,))
    return k


def set_threads(k):
    """Limit the BLAS libraries of this process to k threads (k >= 1 or "node");
    returns the number applied."""
    global _applied
    k = _parse(k if isinstance(k, str) else str(k))
    threadpool_limits(limits=k, user_api="blas")
    _applied = k
    return k


def ensure():
    """Apply the configured limit once (the first BLAS call of the process)."""
    if _applied is None:
        set_threads(os.environ.get("PGASCOL_BLAS_THREADS") or "1")


def threads():
    """The limit in force (None before the first BLAS call)."""
    return _applied
