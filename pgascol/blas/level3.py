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
- op(A) by columns and op(B) by rows, alike (the outer product, gemm_outer):
  each rank's columns and rows give a partial product, one
  Reduce_scatter into C's distribution.
- anything else (C by rows with op(A) by columns and op(B)'s columns
  local, or op(A)'s rows in other blocks than C's; the mirrors; the outer
  product with op(B)'s rows in other blocks than op(A)'s columns): the
  operand that is not where the nearest case needs it is redistributed
  into a temporary matrix first (operands.redistributed: each rank reads
  it whole once and keeps its part), then that case runs.
syrk: gemm with B = A, only the uplo triangle of C written.
trsm: side left with A and B by rows (Algorithm 2.2: block-cyclic tiles,
one broadcast per step, or one reduce per step for trans); side left with
B by columns and side right with B by rows need no communication in the
solve: A is replicated once and every rank solves for its own columns
(rows)."""
import contextlib

import numpy as np

from ..errors import ArgumentError
from ..pgas import matrix as pgas_matrix
from . import _kernels as K
from . import operands
from .level2 import scale, trsm_rows_left


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


def gemm_rows(cl, aloc, fa, vb, tb, alpha):
    """cl (the caller's rows of C) += alpha op(aloc) op(b), b replicated."""
    kpanel = (vb.dist == "row") == (tb == 0)
    for idx, view in operands.panels(vb):
        if kpanel:                  # op(b)[idx, :] = op(view): meets op(aloc)[:, idx]
            pa, f = _op_cols(aloc, fa, idx)
            _accumulate(cl, None, 0, pa, f, view, tb, alpha)
        else:                       # op(b)[:, idx] = op(view): gives cl[:, idx]
            _accumulate(cl, idx, 1, aloc, fa, view, tb, alpha)


def gemm_cols(cl, bloc, fb, va, ta, alpha):
    """cl (the caller's columns of C) += alpha op(a) op(bloc), a replicated."""
    kpanel = (va.dist == "col") == (ta == 0)
    for idx, view in operands.panels(va):
        if kpanel:                  # op(a)[:, idx] = op(view): meets op(bloc)[idx, :]
            pb, f = _op_rows(bloc, fb, idx)
            _accumulate(cl, None, 0, view, ta, pb, f, alpha)
        else:                       # op(a)[idx, :] = op(view): gives cl[idx, :]
            _accumulate(cl, idx, 0, view, ta, bloc, fb, alpha)


def _gemm_plan(va, vb, vc, ta, tb):
    """(C's distribution, m, n, block, first rank) for op(a) op(b), checked."""
    m, k = (va.rows, va.cols) if ta == 0 else (va.cols, va.rows)
    kb, n = (vb.rows, vb.cols) if tb == 0 else (vb.cols, vb.rows)
    if k != kb:
        raise ArgumentError("op(a) is %d x %d but op(b) is %d x %d" % (m, k, kb, n))
    if vc is not None:
        if vc.shape != (m, n):
            raise ArgumentError("c is %d x %d, op(a) op(b) is %d x %d" % (vc.rows, vc.cols, m, n))
        return vc.dist, m, n, vc.bsize, vc.first
    if operands.op_by_rows(va, ta):
        plan = ("row", m, n, va.bsize, va.first)
    elif not operands.op_by_rows(vb, tb):
        plan = ("col", m, n, vb.bsize, vb.first)
    else:
        return "row", m, n, max(-(-m // va.ctx.size), 1), 0
    if plan[4] != 0:
        raise ArgumentError("op(%s) starts on rank %d: pass c (a new matrix starts on rank 0)"
                            % ("a" if plan[0] == "row" else "b", plan[4]))
    return plan


def _result(ctx, va, vb, c, vc, ta, tb, beta):
    """(c, its view, beta) for op(a) op(b), checked; a new matrix (beta 0)
    distributed as the product naturally is when c is None."""
    dist, m, n, block, first = _gemm_plan(va, vb, vc, ta, tb)
    if vc is not None:
        return c, vc, beta
    c = pgas_matrix(ctx.comm, (m, n), va.dtype, block=block, dist=dist)
    return c, operands.matrix("c", c), 0.0


def gemm(alpha, a, b, beta=0.0, c=None, trans_a=0, trans_b=0):
    """c = alpha op(a) op(b) + beta c (scipy.linalg.blas.gemm's order); returns c."""
    va = operands.matrix("a", a)
    vb = operands.matrix("b", b, va.dtype)
    ta, tb = operands.trans_code("trans_a", trans_a), operands.trans_code("trans_b", trans_b)
    vc = operands.matrix("c", c, va.dtype) if c is not None else None
    ctx = operands.same_comm(*[v for v in (va, vb, vc) if v is not None])
    c, vc, beta = _result(ctx, va, vb, c, vc, ta, tb, beta)
    operands.sync(ctx)
    cl = vc.local()
    scale(beta, cl)
    _gemm_into(cl, vc, va, vb, ta, tb, alpha)
    operands.sync(ctx)
    return c


def _gemm_into(cl, vc, va, vb, ta, tb, alpha):
    """cl (the caller's part of vc) += alpha op(a) op(b): C by rows with
    op(a)'s rows like C's, by columns with op(b)'s columns like C's, or the
    outer product (op(a) by columns, op(b) by rows); other operands are
    first redistributed into the nearest of these (operands.redistributed)."""
    by_rows, by_cols = operands.op_by_rows(va, ta), not operands.op_by_rows(vb, tb)
    if vc.dist == "row" and by_rows and _alike(va, vc):
        gemm_rows(cl, va.local(), ta, vb, tb, alpha)
    elif vc.dist == "col" and by_cols and _alike(vb, vc):
        gemm_cols(cl, vb.local(), tb, va, ta, alpha)
    elif not by_rows and not by_cols:
        with _like(vb, tb, "rows", va) as vk:       # op(b)'s rows like op(a)'s columns
            gemm_outer(cl, vc, va, vk, ta, tb, alpha)
    elif vc.dist == "row":
        with _like(va, ta, "rows", vc) as vr:
            gemm_rows(cl, vr.local(), ta, vb, tb, alpha)
    else:
        with _like(vb, tb, "cols", vc) as vr:
            gemm_cols(cl, vr.local(), tb, va, ta, alpha)


def _alike(v, w):
    return v.bsize == w.bsize and v.first == w.first


@contextlib.contextmanager
def _like(v, t, along, w):
    """v itself when its op(v) rows/columns lie like w's blocks, else a
    temporary redistributed copy, freed on leaving."""
    if _alike(v, w):
        yield v
        return
    new = operands.redistributed(v, t, along, w.bsize, w.first)
    try:
        yield new
    finally:
        new.arr.free()


def gemm_outer(cl, vc, va, vb, ta, tb, alpha):
    """op(a)'s columns and op(b)'s rows distributed alike (the k of the
    product): each rank's local columns and rows give a partial m x n
    product, one Reduce_scatter sums them into C's distribution."""
    aloc, bloc = va.local(), vb.local()
    partial = np.zeros(vc.shape, vc.dtype)
    if aloc.size and bloc.size:
        K.gemm(ta, tb, alpha, aloc, bloc, 0.0, partial)
    cl += operands.reduce_scatter(vc.ctx, partial, vc)


def syrk(alpha, a, beta=0.0, c=None, trans=0, lower=0):
    """The upper (lower=1: lower) triangle of c = alpha op(a) op(a)^T + beta c
    (scipy.linalg.blas.syrk's order); the other triangle is left as it was."""
    va = operands.matrix("a", a)
    t = operands.trans_code("trans", trans)
    if t == 2:
        raise ArgumentError("syrk's trans is 0 (a a^T) or 1 (a^T a); conjugate transposes are herk's")
    vc = operands.matrix("c", c, va.dtype) if c is not None else None
    ctx = operands.same_comm(*[v for v in (va, vc) if v is not None])
    ta, tb = t, 1 - t
    c, vc, beta = _result(ctx, va, va, c, vc, ta, tb, beta)
    n = vc.cols
    operands.sync(ctx)
    cl = vc.local()
    new = np.array(cl)
    scale(beta, new)
    _gemm_into(new, vc, va, va, ta, tb, alpha)
    mine = vc.index_set()
    mine = np.arange(mine.start, mine.stop) if isinstance(mine, slice) else mine
    full = np.arange(n)
    if vc.dist == "row":
        keep = full[None, :] <= mine[:, None] if lower else full[None, :] >= mine[:, None]
    else:
        keep = mine[None, :] <= full[:, None] if lower else mine[None, :] >= full[:, None]
    np.copyto(cl, new, where=keep)
    operands.sync(ctx)
    return c


def trsm(alpha, a, b, side=0, lower=0, trans_a=0, diag=0):
    """b = alpha op(a)^-1 b (side=0) or alpha b op(a)^-1 (side=1), in place
    (scipy.linalg.blas.trsm's order and flags); returns b.

    Left with b by rows, and right with b by columns (the same solve on the
    transposes): a's tiles are needed by their rows' owners, so a must hold
    op(a)'s rows (or its transposed tiles) like b; left with b by columns
    and right with b by rows: a is replicated, no communication in the solve."""
    va = operands.matrix("a", a)
    vb = operands.matrix("b", b, va.dtype)
    t = operands.trans_code("trans_a", trans_a)
    ctx = operands.same_comm(va, vb)
    if side not in (0, 1):
        raise ArgumentError("side must be 0 (left) or 1 (right), not %r" % (side,))
    if va.rows != va.cols:
        raise ArgumentError("a must be square, not %d x %d" % va.shape)
    k = vb.rows if side == 0 else vb.cols
    if va.rows != k:
        raise ArgumentError("a is %d x %d but b has %d %s" % (va.rows, va.cols, k, "rows" if side == 0 else "columns"))
    blocked = (side == 0) == (vb.dist == "row")
    if blocked:
        check_tiles(va, vb.bsize, vb.first, "b's %ss" % vb.dist)
    operands.sync(ctx)
    if not blocked:
        K.trsm(side == 0, bool(lower), t, bool(diag), alpha, operands.assemble(va), vb.local())
    elif side == 0:
        trsm_rows_left(ctx, va, vb.local(), bool(lower), t, bool(diag), alpha)
    else:
        # X op(A) = B  <=>  op(A)^T X^T = B^T: op(A)^T is A^T, A, or conj(A) (solved as A conj(X^T) = conj(B^T))
        bl = vb.local()
        xt = np.ascontiguousarray(bl.T)
        if t == 2:
            np.conjugate(xt, out=xt)
        trsm_rows_left(ctx, va, xt, bool(lower), 1 if t == 0 else 0, bool(diag), np.conj(alpha) if t == 2 else alpha)
        bl[...] = xt.T.conj() if t == 2 else xt.T
    operands.sync(ctx)
    return b


def check_tiles(va, block, first, against):
    """The row solve's triangle: by rows, or by columns, with the rows or
    columns of the unknowns' blocks (same block, same first rank)."""
    if va.bsize != block or va.first != first:
        raise ArgumentError("a must be distributed like %s: blocks of %d from rank %d (a has blocks of %d from rank %d)"
                            % (against, block, first, va.bsize, va.first))
