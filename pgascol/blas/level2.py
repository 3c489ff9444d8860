"""BLAS2 on global arrays (UPCBLAS's algorithms, pgascol's collectives).

gemv, y = alpha op(A) x + beta y:
- op(A)'s rows on their ranks (A by rows, or A by columns transposed):
  y lies like those rows, every rank reads the whole x (replicated:
  in place on one node, one Allgatherv across nodes) and computes its
  part of y with one local gemv per piece of x;
- otherwise (A by columns, or by rows transposed): x lies like A's
  columns of op(A), each rank computes a partial y of full length from its
  columns, and one Reduce_scatter sums them into y's parts.
ger, A += alpha x y^T (y^H for gerc): by rows x lies like A's rows and y
is replicated; by columns y lies like A's columns and x is replicated.
trsv, x = op(A)^-1 x: A and x by rows (Algorithm 2.1, level3.trsm's
row solve with one column)."""
import numpy as np

from ..errors import ArgumentError
from ..pgas import array as pgas_array
from . import _kernels as K
from . import operands as ops


def gemv(alpha, a, x, beta=0.0, y=None, trans=0):
    """y = alpha op(a) x + beta y (scipy.linalg.blas.gemv's order); returns y
    (a new global vector, distributed as the result naturally is, when None)."""
    a = ops.matrix("a", a)
    x = ops.vector("x", x, a.dtype)
    t = ops.trans_code("trans", trans)
    m, n = (a.rows, a.cols) if t == 0 else (a.cols, a.rows)
    named = [("a", a), ("x", x)] + ([("y", y)] if y is not None else [])
    ctx = ops.same_comm(*named)
    rows = ops.rows_or_cols_local(a, t)
    what = "the rows of op(a)" if rows is not None else "the columns of op(a)"
    if rows is not None:
        ops.size("x", x, n)
    else:
        ops.colocated("x", x, n, a.bsize, what)
    if y is None:
        y = pgas_array(ctx.comm, m, a.dtype, block=a.bsize if rows is not None else "*")
        beta = 0.0
    else:
        y = ops.vector("y", y, a.dtype)
        if rows is not None:
            ops.colocated("y", y, m, a.bsize, what)
        else:
            ops.size("y", y, m)
    ops.sync(ctx)
    if rows is not None:
        _gemv_rows(alpha, rows, x, beta, y.local())
    else:
        _gemv_cols(ctx, alpha, a, t, x, beta, y)
    ops.sync(ctx)
    return y


def _gemv_rows(alpha, rows, x, beta, yl):
    aloc, f = rows
    scale(beta, yl)
    for lo, hi, piece in ops.pieces(x):
        part = aloc[:, lo:hi] if f == 0 else aloc[lo:hi, :]
        local_gemv(f, alpha, part, piece, 1.0, yl)


def _gemv_cols(ctx, alpha, a, t, x, beta, y):
    aloc = a.local() if a.dist == "row" else ops.local_cols(a)
    # op(A)'s columns held here are op(aloc)'s: partial = op(aloc) x_loc, of full length
    partial = np.zeros(y.size, a.dtype)
    local_gemv(0 if a.dist == "col" else t, alpha, aloc, x.local(), 0.0, partial)
    got = ops.reduce_scatter(ctx, partial, y)
    yl = y.local()
    scale(beta, yl)
    yl += got


def local_gemv(t, alpha, a, x, beta, y):
    """One local gemv (trans C through gemm with one column)."""
    if t == 2:
        K.gemm(2, 0, alpha, a, x.reshape(-1, 1), beta, y.reshape(-1, 1))
    else:
        K.gemv(t, alpha, a, x, beta, y)


def scale(beta, v):
    """v = beta v, with beta == 0 overwriting (NaN and Inf included), as BLAS."""
    if beta == 0:
        v[...] = 0
    elif beta != 1:
        if v.ndim == 1:
            K.scal(beta, v)
        else:
            np.multiply(v, beta, out=v)


def ger(alpha, x, y, a, conj=False):
    """a += alpha x y^T (y^H with conj): geru / gerc. a is updated in place and returned."""
    a = ops.matrix("a", a)
    x = ops.vector("x", x, a.dtype)
    y = ops.vector("y", y, a.dtype)
    ctx = ops.same_comm(("a", a), ("x", x), ("y", y))
    if a.dist == "row":
        ops.colocated("x", x, a.rows, a.bsize, "the rows of a")
        ops.size("y", y, a.cols)
    else:
        ops.size("x", x, a.rows)
        ops.colocated("y", y, a.cols, a.bsize, "the columns of a")
    ops.sync(ctx)
    if a.dist == "row":
        aloc, xl = a.local(), x.local()
        for lo, hi, piece in ops.pieces(y):
            K.geru(alpha, xl, np.conj(piece) if conj else piece, aloc[:, lo:hi])
    else:
        aloc, yl = ops.local_cols(a), y.local()
        yl = np.conj(yl) if conj else yl
        for lo, hi, piece in ops.pieces(x):
            K.geru(alpha, piece, yl, aloc[lo:hi, :])
    ops.sync(ctx)
    return a


def geru(alpha, x, y, a):
    return ger(alpha, x, y, a)


def gerc(alpha, x, y, a):
    return ger(alpha, x, y, a, conj=True)


def trsv(a, x, lower=0, trans=0, diag=0, overwrite_x=True):
    """x = op(a)^-1 x, a triangular (scipy.linalg.blas.trsv's flags:
    lower=1 for the lower triangle, diag=1 for a unit diagonal); a and x by
    rows with the same block. Solves in place and returns x."""
    from .level3 import trsm_rows_left
    a = ops.matrix("a", a)
    x = ops.vector("x", x, a.dtype)
    t = ops.trans_code("trans", trans)
    ctx = ops.same_comm(("a", a), ("x", x))
    if a.rows != a.cols:
        raise ArgumentError("a must be square, not %d x %d" % a.shape)
    if a.dist != "row":
        raise ArgumentError("trsv needs a distributed by rows (Algorithm 2.1)")
    ops.colocated("x", x, a.rows, a.bsize, "the rows of a")
    ops.sync(ctx)
    trsm_rows_left(ctx, a, x.local().reshape(-1, 1), bool(lower), t, bool(diag), 1.0)
    ops.sync(ctx)
    return x
