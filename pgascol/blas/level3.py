"""BLAS3 on global matrices (UPCBLAS's algorithms, pgascol's collectives).

gemm, C = alpha op(A) op(B) + beta C:
- C by rows: the caller's rows of op(A) are local (A by rows, or A by
  columns transposed, with C's block); op(B) is replicated, moved panel
  by panel in its own distribution (operands.panels: in place on one node,
  double-buffered Rget across nodes, the next panel's get in flight
  during the current local gemm). A panel of rows of op(B) (k-panel) meets
  the matching columns of op(A)'s local rows; a panel of its columns
  (j-panel) gives those columns of C.
- C by columns: the mirror image, op(B)'s columns local, op(A) replicated.
syrk: gemm with B = A, only the uplo triangle of C written.
trsm: side left with A and B by rows (Algorithm 2.2: block-cyclic tiles,
one broadcast per step, or one reduce per step for trans); side left with
B by columns and side right with B by rows need no communication in the
solve: A is replicated once and every rank solves for its own columns
(rows)."""
import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError
from ..pgas import matrix as pgas_matrix
from . import _kernels as K
from . import operands as ops
from .level2 import scale


def _take(x, idx, axis):
    if isinstance(idx, slice):
        return x[idx, :] if axis == 0 else x[:, idx]
    return np.take(x, idx, axis=axis)


def _op_rows(x, f, idx):
    """(view, f) with op(view) = op(x)[idx, :]."""
    return (_take(x, idx, 0), f) if f == 0 else (_take(x, idx, 1), f)


def _op_cols(x, f, idx):
    """(view, f) with op(view) = op(x)[:, idx]."""
    return (_take(x, idx, 1), f) if f == 0 else (_take(x, idx, 0), f)


def _accumulate(c, idx, axis, a, fa, b, fb, alpha):
    """c[idx along axis] += alpha op(a) op(b) (a view when idx is a run)."""
    if idx is None:
        K.gemm(fa, fb, alpha, a, b, 1.0, c)
    elif isinstance(idx, slice):
        K.gemm(fa, fb, alpha, a, b, 1.0, c[idx, :] if axis == 0 else c[:, idx])
    else:
        tmp = np.ascontiguousarray(np.take(c, idx, axis=axis))
        K.gemm(fa, fb, alpha, a, b, 1.0, tmp)
        if axis == 0:
            c[idx, :] = tmp
        else:
            c[:, idx] = tmp


def gemm_rows(cl, aloc, fa, b, tb, alpha):
    """cl (the caller's rows of C) += alpha op(aloc) op(b), b replicated."""
    kpanel = (b.dist == "row") == (tb == 0)
    for kind, idx, view in ops.panels(b):
        if kpanel:                  # op(b)[idx, :] = op(view): meets op(aloc)[:, idx]
            pa, f = _op_cols(aloc, fa, idx)
            _accumulate(cl, None, 0, pa, f, view, tb, alpha)
        else:                       # op(b)[:, idx] = op(view): gives cl[:, idx]
            _accumulate(cl, idx, 1, aloc, fa, view, tb, alpha)


def gemm_cols(cl, bloc, fb, a, ta, alpha):
    """cl (the caller's columns of C) += alpha op(a) op(bloc), a replicated."""
    kpanel = (a.dist == "col") == (ta == 0)
    for kind, idx, view in ops.panels(a):
        if kpanel:                  # op(a)[:, idx] = op(view): meets op(bloc)[idx, :]
            pb, f = _op_rows(bloc, fb, idx)
            _accumulate(cl, None, 0, view, ta, pb, f, alpha)
        else:                       # op(a)[idx, :] = op(view): gives cl[idx, :]
            _accumulate(cl, idx, 0, view, ta, bloc, fb, alpha)


def _gemm_plan(a, b, c, ta, tb):
    """("row", local op(a) rows) or ("col", local op(b) columns) for C's distribution."""
    m, k = (a.rows, a.cols) if ta == 0 else (a.cols, a.rows)
    kb, n = (b.rows, b.cols) if tb == 0 else (b.cols, b.rows)
    if k != kb:
        raise ArgumentError("op(a) is %d x %d but op(b) is %d x %d" % (m, k, kb, n))
    rows = ops.rows_or_cols_local(a, ta)
    cols = ops.rows_or_cols_local(b, 0 if tb else 1)      # op(b)'s columns = rows of op(b)^T
    if c is None:
        if rows is not None:
            return "row", m, n, a.bsize
        if cols is not None:
            return "col", m, n, b.bsize
        raise ArgumentError("neither op(a)'s rows nor op(b)'s columns are distributed (a is by %ss with "
                            "trans_a=%d, b by %ss with trans_b=%d)" % (a.dist, ta, b.dist, tb))
    if c.shape != (m, n):
        raise ArgumentError("c is %d x %d, op(a) op(b) is %d x %d" % (c.rows, c.cols, m, n))
    mine = a if c.dist == "row" else b
    local = rows if c.dist == "row" else cols
    name = "a" if c.dist == "row" else "b"
    if local is None or mine.bsize != c.bsize:
        raise ArgumentError("c is by %ss of %d: %s must hold op(%s)'s %ss alike (by %ss of %d%s)"
                            % (c.dist, c.bsize, name, name, c.dist, "row" if (c.dist == "row") == (
                                (ta if name == "a" else tb) == 0) else "col", c.bsize,
                               ", transposed" if (ta if name == "a" else tb) else ""))
    return c.dist, m, n, c.bsize


def gemm(alpha, a, b, beta=0.0, c=None, trans_a=0, trans_b=0):
    """c = alpha op(a) op(b) + beta c (scipy.linalg.blas.gemm's order); returns c."""
    a = ops.matrix("a", a)
    b = ops.matrix("b", b, a.dtype)
    ta, tb = ops.trans_code("trans_a", trans_a), ops.trans_code("trans_b", trans_b)
    if c is not None:
        c = ops.matrix("c", c, a.dtype)
    ctx = ops.same_comm(*([("a", a), ("b", b)] + ([("c", c)] if c is not None else [])))
    dist, m, n, block = _gemm_plan(a, b, c, ta, tb)
    if c is None:
        c = pgas_matrix(ctx.comm, (m, n), a.dtype, block=block, dist=dist)
        beta = 0.0
    ops.sync(ctx)
    _gemm_local(c, a, b, ta, tb, alpha, beta)
    ops.sync(ctx)
    return c


def _gemm_local(c, a, b, ta, tb, alpha, beta, cl=None):
    if c.dist == "row":
        cl = c.local() if cl is None else cl
        scale(beta, cl)
        aloc, fa = ops.rows_or_cols_local(a, ta)
        gemm_rows(cl, aloc, fa, b, tb, alpha)
    else:
        cl = ops.local_cols(c) if cl is None else cl
        scale(beta, cl)
        bloc, fb = ops.rows_or_cols_local(b, 0 if tb else 1)
        # op(b)'s local columns: b by columns (tb 0) -> bloc; b by rows transposed -> op(bloc)
        gemm_cols(cl, bloc, tb if b.dist == "row" else 0, a, ta, alpha)


def syrk(alpha, a, beta=0.0, c=None, trans=0, lower=0):
    """The upper (lower=1: lower) triangle of c = alpha op(a) op(a)^T + beta c
    (scipy.linalg.blas.syrk's order); the other triangle is left as it was."""
    a = ops.matrix("a", a)
    t = ops.trans_code("trans", trans)
    if t == 2:
        raise ArgumentError("syrk's trans is 0 (a a^T) or 1 (a^T a); conjugate transposes are herk's")
    if c is not None:
        c = ops.matrix("c", c, a.dtype)
    ctx = ops.same_comm(*([("a", a)] + ([("c", c)] if c is not None else [])))
    ta, tb = t, 1 - t
    dist, m, n, block = _gemm_plan(a, a, c, ta, tb)
    if c is None:
        c = pgas_matrix(ctx.comm, (m, n), a.dtype, block=block, dist=dist)
        beta = 0.0
    ops.sync(ctx)
    cl = c.local() if c.dist == "row" else ops.local_cols(c)
    new = np.array(cl)
    _gemm_local(c, a, a, ta, tb, alpha, beta, new)
    mine = ops.local_index_set(c)
    mine = np.arange(mine.start, mine.stop) if isinstance(mine, slice) else mine
    full = np.arange(n)
    if c.dist == "row":
        keep = full[None, :] <= mine[:, None] if lower else full[None, :] >= mine[:, None]
    else:
        keep = mine[None, :] <= full[:, None] if lower else mine[None, :] >= full[:, None]
    np.copyto(cl, new, where=keep)
    ops.sync(ctx)
    return c


def trsm(alpha, a, b, side=0, lower=0, trans_a=0, diag=0):
    """b = alpha op(a)^-1 b (side=0) or alpha b op(a)^-1 (side=1), in place
    (scipy.linalg.blas.trsm's order and flags); returns b."""
    a = ops.matrix("a", a)
    b = ops.matrix("b", b, a.dtype)
    t = ops.trans_code("trans_a", trans_a)
    ctx = ops.same_comm(("a", a), ("b", b))
    if a.rows != a.cols:
        raise ArgumentError("a must be square, not %d x %d" % a.shape)
    if side not in (0, 1):
        raise ArgumentError("side must be 0 (left) or 1 (right), not %r" % (side,))
    k = b.rows if side == 0 else b.cols
    if a.rows != k:
        raise ArgumentError("a is %d x %d but b has %d %s" % (a.rows, a.cols, k, "rows" if side == 0 else "columns"))
    if side == 0 and b.dist == "row":
        if a.dist != "row" or a.bsize != b.bsize:
            raise ArgumentError("trsm by rows (side left, b by rows) needs a by rows with b's block %d" % b.bsize)
    elif side == 1 and b.dist == "col":
        raise ArgumentError("trsm with side right needs b by rows (by columns is not implemented)")
    ops.sync(ctx)
    if side == 0 and b.dist == "row":
        trsm_rows_left(ctx, a, b.local(), bool(lower), t, bool(diag), alpha)
    else:
        whole = ops.assemble(a)
        bl = b.local() if b.dist == "row" else ops.local_cols(b)
        K.trsm(side == 0, bool(lower), t, bool(diag), alpha, whole, bl)
    ops.sync(ctx)
    return b


def trsm_rows_left(ctx, a, bl, lower, t, unit, alpha):
    """op(A) X = alpha B with A and B by rows (same block): the caller's rows
    bl of B become X's. Step by step over the blocks of b rows, in the
    order op(A)'s triangle solves them: without transpose, the owner of
    block k solves its diagonal tile and broadcasts X_k, every rank then
    updates its later blocks with its own tiles A_ik; transposed, each rank
    sums its tiles' contributions A_ik^T X_i to block k and one reduce to
    k's owner precedes that owner's solve."""
    if alpha != 1:
        scale(alpha, bl)
    n, b, P, me = a.rows, a.bsize, ctx.size, ctx.rank
    aloc = a.local()
    nblocks = -(-n // b)
    forward = lower == (t == 0)
    order = range(nblocks) if forward else range(nblocks - 1, -1, -1)
    mine = [k for k in range(nblocks) if k % P == me]
    pos = {k: i * b for i, k in enumerate(mine)}         # local row of my block k
    nrhs = bl.shape[1]
    done = []                                             # my blocks already solved
    for k in order:
        lo, hi = k * b, min(k * b + b, n)
        owner = k % P
        if t == 0:
            xk = np.empty((hi - lo, nrhs), a.dtype)
            if owner == me:
                rows = slice(pos[k], pos[k] + hi - lo)
                K.trsm(True, lower, 0, unit, 1.0, aloc[rows, lo:hi], bl[rows])
                xk[...] = bl[rows]
            ctx.comm.Bcast(xk, root=owner)
            for i in mine:
                if (i > k) == forward and i != k:
                    rows = slice(pos[i], pos[i] + min(b, n - i * b))
                    K.gemm(0, 0, -1.0, aloc[rows, lo:hi], xk, 1.0, bl[rows])
        else:
            part = np.zeros((hi - lo, nrhs), a.dtype)
            for i in done:
                rows = slice(pos[i], pos[i] + min(b, n - i * b))
                K.gemm(t, 0, 1.0, aloc[rows, lo:hi], bl[rows], 1.0, part)
            total = np.empty_like(part) if owner == me else None
            ctx.comm.Reduce(part, total, MPI.SUM, root=owner)
            if owner == me:
                rows = slice(pos[k], pos[k] + hi - lo)
                bl[rows] -= total
                K.trsm(True, lower, t, unit, 1.0, aloc[rows, lo:hi], bl[rows])
                done.append(k)
