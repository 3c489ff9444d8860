"""Sparse BLAS level 1: susdot, a sparse vector times a dense global array.

The sparse vector is private to each rank, (values, indices), in one of two
ways (`replicated`):

- True (default; UPCBLAS's thread_src = THREADS): every rank passes the
  same vector. Each rank multiplies only the entries whose element of y it
  owns, reading y in place in its own part; one allreduce adds the ranks'
  sums. y is never replicated and nothing else moves.
- False: each rank passes its own entries (the vector is their union; no
  index twice over all ranks). Each rank multiplies its entries, reading
  the elements of y it does not own one-sided (in place from a same-node
  owner's shared memory, by MPI RMA across nodes), and the same allreduce
  adds the sums.

The result (y's dtype) is returned on every rank. Every rank checks its
arguments before anything moves and all raise ArgumentError if one refused."""
import numpy as np
from mpi4py import MPI

from ..comm.agree import agree
from ..errors import ArgumentError
from ..pgas import GlobalArray


def _check(x_values, x_indices, y, conj, replicated):
    """(what every rank must agree on, this rank's operands as (values in
    y's dtype, int64 indices))."""
    values, indices = np.asarray(x_values), np.asarray(x_indices)
    if values.ndim != 1 or indices.ndim != 1 or len(values) != len(indices):
        raise ArgumentError("x_values and x_indices must be 1-D of one length (shapes %s and %s)"
                            % (values.shape, indices.shape))
    if indices.dtype.kind not in "iu":
        raise ArgumentError("x_indices must be integers, not %s" % indices.dtype)
    if not np.can_cast(values.dtype, y.dtype, "same_kind"):
        raise ArgumentError("x_values (%s) cannot be combined with y (%s)" % (values.dtype, y.dtype))
    indices = indices.astype(np.int64, copy=False)
    if indices.size and (indices.min() < 0 or indices.max() >= y.size):
        raise ArgumentError("x_indices out of [0, %d): %d" % (y.size, indices[(indices < 0) | (indices >= y.size)][0]))
    values = values.astype(y.dtype, copy=False)
    return (y.size, y.dtype.str, bool(conj), bool(replicated)), (np.conj(values) if conj else values, indices)


def dot(x_values, x_indices, y, conj=False, replicated=True):
    """sum_k x_values[k] * y[x_indices[k]] (conj: conj(x_values[k])), on
    every rank; collective over y's communicator. See the module's doc for
    `replicated`."""
    if not isinstance(y, GlobalArray):
        raise ArgumentError("y must be a pgascol.pgas global array, not %s" % type(y).__name__)
    ctx = y._live()
    values, indices = agree(ctx.comm, "pgascol.sparse.dot",
                            lambda: _check(x_values, x_indices, y, conj, replicated))
    if replicated:
        mine = y.layout.owner(indices) == ctx.rank
        values, indices = values[mine], indices[mine]
        part = y.local()[y.layout.local_index(indices)]
    else:
        part = y[indices] if indices.size else np.empty(0, y.dtype)
    partial = np.array([np.dot(values, part)], y.dtype)
    total = np.empty_like(partial)
    ctx.comm.Allreduce(partial, total, MPI.SUM)
    return total[0]
