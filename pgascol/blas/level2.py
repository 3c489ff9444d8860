"""BLAS2 on global arrays (UPCBLAS's algorithms, pgascol's collectives).

gemv, y = alpha op(A) x + beta y:
- op(A) by rows (A by rows, or A by columns transposed): y lies like
  those rows, every rank reads the whole x (replicated: in place on one
  node, one Allgatherv across nodes), copies it into one private vector
  and computes its part of y with one local gemv;
- op(A) by columns (A by columns, or by rows transposed): x lies like
  op(A)'s columns, each rank computes a partial y of full length from its
  columns, and one Reduce_scatter sums them into y's parts.
ger, A += alpha x y^T (y^H for gerc): by rows x lies like A's rows and y
is replicated; by columns y lies like A's columns and x is replicated.
trsv, x = op(A)^-1 x: x lies like A's rows (by rows) or columns (by
columns) (Algorithm 2.1: trsm's row solve, trsm_rows_left, with one column)."""
import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError
from ..pgas import array as pgas_array
from ..pgas import matrix as pgas_matrix
from . import _kernels as K
from . import operands


def gemv(alpha, a, x, beta=0.0, y=None, trans=0):
    """y = alpha op(a) x + beta y (scipy.linalg.blas.gemv's order); returns y
    (a new global vector, distributed as the result naturally is, when None)."""
    va = operands.matrix("a", a)
    vx = operands.vector("x", x, va.dtype)
    t = operands.trans_code("trans", trans)
    vy = operands.vector("y", y, va.dtype) if y is not None else None
    ctx = operands.same_comm(*[v for v in (va, vx, vy) if v is not None])
    m, n = (va.rows, va.cols) if t == 0 else (va.cols, va.rows)
    rows = operands.rows_local(va, t)
    against = "the rows of op(a)" if rows is not None else "the columns of op(a)"
    if rows is None:
        vx.colocated(n, va.bsize, va.first, against)
    elif vx.n != n:
        raise ArgumentError("x has %d elements, op(a) has %d columns" % (vx.n, n))
    if vy is None:
        if rows is not None and va.first:
            raise ArgumentError("a's rows start on rank %d: pass y (a new vector starts on rank 0)" % va.first)
        y = pgas_array(ctx.comm, m, va.dtype, block=va.bsize if rows is not None else "*")
        vy, beta = operands.vector("y", y), 0.0
    if rows is not None:
        vy.colocated(m, va.bsize, va.first, against)
    elif vy.n != m:
        raise ArgumentError("y has %d elements, op(a) has %d rows" % (vy.n, m))
    operands.sync(ctx)
    if rows is not None:
        _gemv_rows(alpha, rows, vx, beta, vy.local())
    else:
        _gemv_cols(ctx, alpha, va, t, vx, beta, vy)
    operands.sync(ctx)
    return y


def _gemv_rows(alpha, rows, vx, beta, yl):
    # x's pieces copied into one private vector (n elements, against the
    # caller's rows x n read): one local gemv over the whole row block runs
    # faster than one per piece on column slices of it
    aloc, f = rows
    parts = operands.pieces(vx)
    x = parts[0][2] if len(parts) == 1 else np.concatenate([piece for _, _, piece in parts])
    if aloc.shape[0 if f == 0 else 1] and vx.n:
        local_gemv(f, alpha, aloc, x, beta, yl)
    else:
        scale(beta, yl)


def _gemv_cols(ctx, alpha, va, t, vx, beta, vy):
    # the caller's columns of op(A) are op(local): a partial y of full length
    partial = np.zeros(vy.n, va.dtype)
    local_gemv(t, alpha, va.local(), vx.local(), 0.0, partial)
    got = operands.reduce_scatter(ctx, partial, vy)
    yl = vy.local()
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


def ger(alpha, x, y, incx=1, incy=1, a=None, conj=False):
    """a += alpha x y^T (y^H with conj: gerc), scipy.linalg.blas's order
    (incx and incy must be 1); returns a, a new matrix by rows like x when
    a is None."""
    if incx != 1 or incy != 1:
        raise ArgumentError("incx and incy must be 1 (use blas.subvector for parts of a vector)")
    vx = operands.vector("x", x)
    vy = operands.vector("y", y, vx.dtype)
    if a is None:
        ctx = operands.same_comm(vx, vy)
        if vx.block is None or vx.first:
            raise ArgumentError("ger with a=None needs x block-cyclic from rank 0 (its rows' distribution)")
        a = pgas_matrix(ctx.comm, (vx.n, vy.n), vx.dtype, block=vx.block, dist="row")
    va = operands.matrix("a", a, vx.dtype)
    ctx = operands.same_comm(va, vx, vy)
    if va.dist == "row":
        vx.colocated(va.rows, va.bsize, va.first, "the rows of a")
        if vy.n != va.cols:
            raise ArgumentError("y has %d elements, a has %d columns" % (vy.n, va.cols))
    else:
        vy.colocated(va.cols, va.bsize, va.first, "the columns of a")
        if vx.n != va.rows:
            raise ArgumentError("x has %d elements, a has %d rows" % (vx.n, va.rows))
    operands.sync(ctx)
    aloc = va.local()
    if va.dist == "row":
        xl = vx.local()
        for lo, hi, piece in operands.pieces(vy):
            K.geru(alpha, xl, np.conj(piece) if conj else piece, aloc[:, lo:hi])
    else:
        yl = np.conj(vy.local()) if conj else vy.local()
        for lo, hi, piece in operands.pieces(vx):
            K.geru(alpha, piece, yl, aloc[lo:hi, :])
    operands.sync(ctx)
    return a


def geru(alpha, x, y, incx=1, incy=1, a=None):
    return ger(alpha, x, y, incx, incy, a)


def gerc(alpha, x, y, incx=1, incy=1, a=None):
    return ger(alpha, x, y, incx, incy, a, conj=True)


def trsv(a, x, lower=0, trans=0, diag=0):
    """x = op(a)^-1 x, a triangular (scipy.linalg.blas.trsv's flags: lower=1
    for the lower triangle, diag=1 for a unit diagonal); x lies like a's
    rows or columns. Solves in place; returns x."""
    va = operands.matrix("a", a)
    vx = operands.vector("x", x, va.dtype)
    t = operands.trans_code("trans", trans)
    ctx = operands.same_comm(va, vx)
    if va.rows != va.cols:
        raise ArgumentError("a must be square, not %d x %d" % va.shape)
    vx.colocated(va.rows, va.bsize, va.first, "the %ss of a" % va.dist)
    operands.sync(ctx)
    trsm_rows_left(ctx, va, vx.local().reshape(-1, 1), bool(lower), t, bool(diag), 1.0)
    operands.sync(ctx)
    return x


def trsm_rows_left(ctx, va, bl, lower, t, unit, alpha):
    """op(A) X = alpha B with B by rows, A in blocks like B's rows: the
    caller's rows bl of B become X's. Step by step over the blocks of b
    rows, in the order op(A)'s triangle solves them. When the caller holds
    op(A)'s tiles of its rows (A by rows, or by columns transposed), the
    owner of block k solves its diagonal tile and broadcasts X_k, every
    rank then updates its later blocks with its own tiles; otherwise (A by
    rows transposed, or by columns) each rank sums its tiles'
    contributions op(A)_ki X_i to block k and one reduce to k's owner
    precedes that owner's solve."""
    scale(alpha, bl)
    n, b, me = va.rows, va.bsize, ctx.rank
    aloc = va.local()
    nblocks = -(-n // b)
    mine = [k for k in range(nblocks) if va.owner(k * b) == me]
    pos = {k: i * b for i, k in enumerate(mine)}         # my block k's first local row (column)
    forward = lower == (t == 0)
    order = range(nblocks) if forward else range(nblocks - 1, -1, -1)
    nrhs = bl.shape[1]
    by_rows = va.dist == "row"

    def rows(i):
        return slice(pos[i], pos[i] + min(b, n - i * b))

    def tile(i, lo, hi):
        """(view, flag): op(view) is op(A)'s tile of my block i x [lo, hi) when
        broadcasting, A's tile [lo, hi) x block i's rows otherwise."""
        return aloc[rows(i), lo:hi] if by_rows else aloc[lo:hi, rows(i)]
    broadcast = by_rows == (t == 0)
    done = []                                             # my blocks already solved
    for k in order:
        lo, hi = k * b, min(k * b + b, n)
        owner = va.owner(lo)
        if broadcast:
            xk = np.empty((hi - lo, nrhs), va.dtype)
            if owner == me:
                K.trsm(True, lower, t, unit, 1.0, tile(k, lo, hi), bl[rows(k)])
                xk[...] = bl[rows(k)]
            ctx.comm.Bcast(xk, root=owner)
            for i in mine:
                if i != k and (i > k) == forward:
                    K.gemm(t, 0, -1.0, tile(i, lo, hi), xk, 1.0, bl[rows(i)])
        else:
            part = np.zeros((hi - lo, nrhs), va.dtype)
            for i in done:
                K.gemm(t, 0, 1.0, tile(i, lo, hi), bl[rows(i)], 1.0, part)
            total = np.empty_like(part) if owner == me else None
            ctx.comm.Reduce(part, total, MPI.SUM, root=owner)
            if owner == me:
                bl[rows(k)] -= total
                K.trsm(True, lower, t, unit, 1.0, tile(k, lo, hi), bl[rows(k)])
                done.append(k)
