"""BLAS1 on global vectors: x and y must lie alike (same length, block
and first rank, or the same irregular counts), so each rank works on its
co-located parts with one local BLAS call; dot, nrm2 and asum combine the
ranks' partial results with one allreduce (nrm2: an allgather of the
ranks' norms) and return the scalar on every rank."""
import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError
from . import _kernels as K
from . import operands


def _pair(x, y):
    vx = operands.vector("x", x)
    vy = operands.vector("y", y, vx.dtype)
    ctx = operands.same_comm(vx, vy)
    if vx.n != vy.n:
        raise ArgumentError("x has %d elements, y %d" % (vx.n, vy.n))
    if vx.layout_key() != vy.layout_key():
        raise ArgumentError("x and y must be distributed alike (x: %s, y: %s)" % (vx.describe(), vy.describe()))
    return ctx, vx, vy


def copy(x, y):
    """y = x; returns y."""
    _, vx, vy = _pair(x, y)
    K.copy(vx.local(), vy.local())
    return y


def swap(x, y):
    """x, y = y, x; returns (x, y)."""
    _, vx, vy = _pair(x, y)
    K.swap(vx.local(), vy.local())
    return x, y


def scal(a, x):
    """x = a x; returns x."""
    K.scal(a, operands.vector("x", x).local())
    return x


def axpy(x, y, n=None, a=1.0):
    """y[:n] = a x[:n] + y[:n] (scipy.linalg.blas's argument order; n None:
    all); returns y."""
    _, vx, vy = _pair(x, y)
    if n is not None:
        if not 0 <= n <= vx.n:
            raise ArgumentError("n is %r, x has %d elements" % (n, vx.n))
        vx, vy = operands.Vec("x", vx.arr, vx.off, n), operands.Vec("y", vy.arr, vy.off, n)
    K.axpy(a, vx.local(), vy.local())
    return y


def _allreduce(ctx, value, dtype):
    buf = np.array([value], dtype)
    out = np.empty_like(buf)
    ctx.comm.Allreduce(buf, out, MPI.SUM)
    return out[0]


def dot(x, y):
    """sum(x * y) (unconjugated for complex, as dotu), on every rank."""
    ctx, vx, vy = _pair(x, y)
    return _allreduce(ctx, K.dot(vx.local(), vy.local(), False), vx.dtype)


def dotu(x, y):
    return dot(x, y)


def dotc(x, y):
    """sum(conj(x) * y), on every rank."""
    ctx, vx, vy = _pair(x, y)
    return _allreduce(ctx, K.dot(vx.local(), vy.local(), True), vx.dtype)


def nrm2(x):
    """The Euclidean norm, on every rank. Each rank's norm is BLAS's
    (scaled, no overflow); the ranks' norms are gathered and combined
    scaled by the largest, so no square overflows either."""
    vx = operands.vector("x", x)
    ctx = vx.ctx
    mine = np.array([K.nrm2(vx.local())], np.float64)
    norms = np.empty(ctx.size, np.float64)
    ctx.comm.Allgather(mine, norms)
    top = norms.max()
    real = _real(vx.dtype)
    if top == 0.0 or not np.isfinite(top):
        return real(top)
    return real(top * np.sqrt(np.sum((norms / top) ** 2)))


def asum(x):
    """sum(|x|) (complex: sum(|re| + |im|), BLAS's), on every rank."""
    vx = operands.vector("x", x)
    return _real(vx.dtype)(_allreduce(vx.ctx, K.asum(vx.local()), np.float64))


def _real(dtype):
    return np.dtype(dtype).type(0).real.dtype.type
