"""BLAS1 on global vectors: x and y must lie alike (same length, same
block-cyclic or irregular layout), so each rank works on its co-located
parts with one local BLAS call; dot, nrm2 and asum combine the ranks'
partial results with one allreduce, and return the scalar on every rank."""
import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError
from . import _kernels as K
from . import operands as ops


def _pair(x, y):
    x = ops.vector("x", x)
    y = ops.vector("y", y, x.dtype)
    ctx = ops.same_comm(("x", x), ("y", y))
    if x.size != y.size:
        raise ArgumentError("x has %d elements, y %d" % (x.size, y.size))
    lx, ly = x.layout, y.layout
    if lx.kind != ly.kind or lx.block != ly.block or (lx.kind == "irregular" and
                                                       not np.array_equal(lx.counts, ly.counts)):
        raise ArgumentError("x and y must be distributed alike (x is %s, y is %s)" % (lx.describe(), ly.describe()))
    return ctx, x.local(), y.local()


def copy(x, y):
    """y = x."""
    _, xl, yl = _pair(x, y)
    K.copy(xl, yl)
    return y


def swap(x, y):
    """x, y = y, x."""
    _, xl, yl = _pair(x, y)
    K.swap(xl, yl)
    return x, y


def scal(a, x):
    """x = a x."""
    xl = ops.vector("x", x).local()
    K.scal(a, xl)
    return x


def axpy(x, y, a=1.0):
    """y = a x + y (scipy.linalg.blas's argument order)."""
    _, xl, yl = _pair(x, y)
    K.axpy(a, xl, yl)
    return y


def _allreduce(ctx, value, dtype):
    buf = np.array([value], dtype)
    out = np.empty_like(buf)
    ctx.comm.Allreduce(buf, out, MPI.SUM)
    return out[0]


def dot(x, y):
    """sum(x * y) (unconjugated for complex, as dotu), on every rank."""
    ctx, xl, yl = _pair(x, y)
    return _allreduce(ctx, K.dot(xl, yl, False), x.dtype)


def dotu(x, y):
    return dot(x, y)


def dotc(x, y):
    """sum(conj(x) * y), on every rank."""
    ctx, xl, yl = _pair(x, y)
    return _allreduce(ctx, K.dot(xl, yl, True), x.dtype)


def nrm2(x):
    """The Euclidean norm, on every rank. Each rank's norm is BLAS's
    (scaled, no overflow); the ranks' norms are gathered and combined
    scaled by the largest, so no square overflows either."""
    x = ops.vector("x", x)
    ctx = x._ctx
    real = np.empty(1, np.float64)
    real[0] = K.nrm2(x.local())
    norms = np.empty(ctx.size, np.float64)
    ctx.comm.Allgather(real, norms)
    top = norms.max() if ctx.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return _real(x.dtype)(top)
    return _real(x.dtype)(top * np.sqrt(np.sum((norms / top) ** 2)))


def asum(x):
    """sum(|x|) (complex: sum(|re| + |im|), BLAS's), on every rank."""
    x = ops.vector("x", x)
    return _real(x.dtype)(_allreduce(x._ctx, K.asum(x.local()), np.float64))


def _real(dtype):
    return np.dtype(dtype).type(0).real.dtype.type
