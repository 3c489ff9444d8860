"""pgascol.pgas: UPC-style global arrays over a pgascol communicator.

    from mpi4py import MPI
    import pgascol
    from pgascol import pgas

    comm = pgascol.Comm(MPI.COMM_WORLD)
    with pgas.zeros(comm, 1 << 20, "int64", block=4) as a:   # collective
        a.local()[:] += 1                  # the caller's elements, no copy
        pgas.barrier(comm)                 # everyone's local work done before the updates
        a.update([0, 0, 5], 1, "sum")      # atomic remote updates (relaxed)
        pgas.barrier(comm)                 # ... complete everywhere after a barrier
        print(a[0], a[5:9])                # one-sided reads from any rank

Layouts (UPC's): element i of a block-cyclic array lives on rank
(i // B) % P at local offset (i // (B*P))*B + i % B (block=1 cyclic,
block="*" blocked, block=0 all on rank 0); counts=[...] gives one
contiguous range per rank. Inside a node every part is in shared memory
(plain loads and stores, C atomics for updates); across nodes MPI RMA."""
from .array import GlobalArray, array, empty, full, zeros  # noqa: F401
from .lock import Lock  # noqa: F401
from .matrix import Matrix, matrix  # noqa: F401
from .nonblocking import Handle, copy, copy_nb  # noqa: F401
from .sync import barrier, barrier_count, fence, notify, wait, wait_until  # noqa: F401

__all__ = ["GlobalArray", "Matrix", "Handle", "Lock", "array", "zeros", "empty", "full", "matrix", "copy",
           "copy_nb", "fence", "barrier", "barrier_count", "notify", "wait", "wait_until"]
