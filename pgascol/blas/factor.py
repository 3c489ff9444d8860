"""Dense factorizations on global matrices distributed by rows in blocks
of NB rows (the UPCBLAS thesis's applications, right-looking, one block column
per step): Cholesky (gemm- and syrk-based trailing updates) and LU without
and with partial pivoting. Every rank holds its own block rows; per step
one collective moves the panel:

- cholesky: one Allgatherv of the block column below the diagonal (the
  ranks' parts of it); every rank factors the diagonal tile and solves the
  panel (redundant, NB^2 (n - k) flops), keeps its own rows of L and
  updates its own rows of the trailing matrix;
- lu (no pivoting): the owner of the diagonal block row factors its tile
  and solves its row of U; one Bcast of that block row; every rank solves
  its rows of the block column and updates its trailing rows;
- lu with pivoting: one Allgatherv of the block column (rows >= k), every
  rank runs LAPACK's getrf on it (identical input, identical pivots), the
  row interchanges of the rest of the matrix move by one-sided gets of the
  source rows between two barriers, then as without pivoting.

The factors overwrite a (L below the diagonal, U or L^T/L^H on and above
as LAPACK's); lu returns the pivots (0-based, LAPACK's ipiv - 1) on every rank."""
import numpy as np
import scipy.linalg.lapack as lapack

from ..errors import ArgumentError, PgascolError
from . import _kernels as K
from . import operands as ops


def _setup(a, what):
    va = ops.matrix("a", a)
    if va.dist != "row" or va.rows != va.cols:
        raise ArgumentError("%s needs a square matrix distributed by rows (NB = its block), not %s by %ss"
                            % (what, "x".join(map(str, va.shape)), va.dist))
    ctx = va.ctx
    nb, n = va.bsize, va.rows
    nblocks = -(-n // nb)
    mine = [k for k in range(nblocks) if va.owner(k * nb) == ctx.rank]
    pos = {k: i * nb for i, k in enumerate(mine)}
    return va, ctx, n, nb, nblocks, mine, pos


def _rows(k, nb, n, pos):
    return slice(pos[k], pos[k] + min(nb, n - k * nb))


def _gather_column(ctx, a, aloc, k, c0, c1, mine, pos, nb, n):
    """Block column a[k*nb:, c0:c1] on every rank: one Allgatherv of the
    ranks' own rows of it (local rows from their first block >= k on)."""
    P, w = ctx.size, c1 - c0
    first = next((i for i in mine if i >= k), None)
    send = np.ascontiguousarray(aloc[pos[first]:, c0:c1] if first is not None else aloc[:0, c0:c1])
    nblocks = -(-n // nb)
    counts, blocks_of = [], []
    for r in range(P):
        bl = [i for i in range(k, nblocks) if a.owner(i * nb) == r]
        blocks_of.append(bl)
        counts.append(sum(min(nb, n - i * nb) for i in bl) * w)
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(int).tolist()
    buf = np.empty(sum(counts), a.dtype)
    ctx.comm.Allgatherv(send.reshape(-1), [buf, counts, displs, ops.MPI._typedict[a.dtype.char]])
    out = np.empty((n - k * nb, w), a.dtype)
    for r in range(P):
        part = buf[displs[r]:displs[r] + counts[r]].reshape(-1, w)
        row = 0
        for i in blocks_of[r]:
            h = min(nb, n - i * nb)
            out[i * nb - k * nb:i * nb - k * nb + h] = part[row:row + h]
            row += h
    return out


def cholesky(a, variant="syrk"):
    """a = L L^H (L lower, written over a's lower triangle), a distributed
    by rows in blocks of NB rows. variant "gemm": each trailing block row
    is updated up to and including its diagonal tile by one gemm; "syrk":
    left of the tile by gemm, the tile itself by syrk (half its flops), and
    on one rank (real types) the whole trailing triangle by one syrk, a
    call big enough for several BLAS threads (the hybrid mode)."""
    if variant not in ("gemm", "syrk"):
        raise ArgumentError('variant must be "gemm" or "syrk", not %r' % (variant,))
    arr = a
    a, ctx, n, nb, nblocks, mine, pos = _setup(a, "cholesky")
    ops.sync(ctx)
    aloc = a.local()
    for k in range(nblocks):
        k0, k1 = k * nb, min(n, k * nb + nb)
        panel = _gather_column(ctx, a, aloc, k, k0, k1, mine, pos, nb, n)
        w = k1 - k0
        tile = np.array(panel[:w])
        L, info = _potrf(tile)
        if info:
            raise PgascolError("cholesky: the leading minor of order %d is not positive definite" % (k0 + info))
        below = panel[w:]
        K.trsm(False, True, 2, False, 1.0, L, below)     # below = below L^-H
        whole = ctx.size == 1 and variant == "syrk" and a.dtype.kind != "c"
        if whole:                                        # one rank: the trailing triangle by one syrk
            K.syrk(True, 0, -1.0, below, 1.0, aloc[k1:n, k1:n])
        for i in mine:
            if i < k:
                continue
            rows = _rows(i, nb, n, pos)
            if i == k:
                aloc[rows, k0:k1] = L
                continue
            i0, i1 = i * nb, min(n, i * nb + nb)
            Li = below[i0 - k1:i1 - k1]
            aloc[rows, k0:k1] = Li
            if whole:
                continue
            if variant == "gemm" or a.dtype.kind == "c":      # complex: herk's update, by gemm
                K.gemm(0, 2, -1.0, Li, below[:i1 - k1], 1.0, aloc[rows, k1:i1])
            else:
                if i0 > k1:
                    K.gemm(0, 2, -1.0, Li, below[:i0 - k1], 1.0, aloc[rows, k1:i0])
                K.syrk(True, 0, -1.0, Li, 1.0, aloc[rows, i0:i1])
    ops.sync(ctx)
    return arr


def _potrf(tile):
    fn = getattr(lapack, {"f": "spotrf", "d": "dpotrf", "F": "cpotrf", "D": "zpotrf"}[tile.dtype.char])
    L, info = fn(tile, lower=1, clean=1)
    return np.ascontiguousarray(L), info


def _getrf(panel):
    fn = getattr(lapack, {"f": "sgetrf", "d": "dgetrf", "F": "cgetrf", "D": "zgetrf"}[panel.dtype.char])
    lu, piv, info = fn(panel)
    return np.ascontiguousarray(lu), piv, info


def _lu_tile_nopivot(t):
    """LU of one tile without pivoting, in place (unit L below, U on and above)."""
    w = t.shape[0]
    for j in range(w):
        if t[j, j] == 0:
            raise PgascolError("lu without pivoting: zero pivot at row %d of a diagonal tile" % j)
        t[j + 1:, j] /= t[j, j]
        t[j + 1:, j + 1:] -= np.outer(t[j + 1:, j], t[j, j + 1:])


def lu(a, pivoting=True):
    """a = P L U in place (L unit lower, U upper); returns the pivots: row i
    was interchanged with row piv[i] (0-based), on every rank. Without
    pivoting, piv[i] = i."""
    a, ctx, n, nb, nblocks, mine, pos = _setup(a, "lu")
    ops.sync(ctx)
    aloc = a.local()
    piv = np.arange(n)
    for k in range(nblocks):
        k0, k1 = k * nb, min(n, k * nb + nb)
        w, owner = k1 - k0, a.owner(k0)
        if pivoting:
            panel = _gather_column(ctx, a, aloc, k, k0, k1, mine, pos, nb, n)
            lu_p, p, info = _getrf(panel)
            piv[k0:k1] = k0 + p[:w]
            _interchange(ctx, a, aloc, k0, k1, p[:w], mine, pos, nb, n)
            for i in mine:
                if i >= k:
                    i0 = i * nb
                    aloc[_rows(i, nb, n, pos), k0:k1] = lu_p[i0 - k0:i0 - k0 + min(nb, n - i0)]
        # the owner of block row k: its tile factored, then its row of U
        row = np.empty((w, n - k0), a.dtype)
        if owner == ctx.rank:
            rk = _rows(k, nb, n, pos)
            if not pivoting:
                _lu_tile_nopivot(aloc[rk, k0:k1])
            K.trsm(True, True, 0, True, 1.0, np.ascontiguousarray(aloc[rk, k0:k1]), aloc[rk, k1:n])
            row[...] = aloc[rk, k0:n]
        ctx.comm.Bcast(row, root=owner)
        ukk, uk = np.ascontiguousarray(np.triu(row[:, :w])), row[:, w:]
        for i in mine:
            if i <= k:
                continue
            rows = _rows(i, nb, n, pos)
            if not pivoting:
                K.trsm(False, False, 0, False, 1.0, ukk, aloc[rows, k0:k1])
            K.gemm(0, 0, -1.0, aloc[rows, k0:k1], uk, 1.0, aloc[rows, k1:n])
    ops.sync(ctx)
    return piv


def _interchange(ctx, a, aloc, k0, k1, p, mine, pos, nb, n):
    """Apply the panel's row interchanges (LAPACK's, p 0-based from k0) to
    the columns outside the panel: each rank reads the source rows of its
    own changed rows with one-sided gets, a barrier, then writes them."""
    perm = np.arange(n - k0)
    for j, q in enumerate(p):
        perm[j], perm[q] = perm[q], perm[j]
    moved = np.flatnonzero(perm != np.arange(n - k0))
    ops.sync(ctx)
    got = []
    for t in moved:
        g = k0 + t
        if a.owner(g) != ctx.rank:
            continue
        src = k0 + perm[t]
        buf = np.empty(n, a.dtype)
        a.arr.get((a.i0 + src) * a.ld + a.j0, buf)
        got.append((g, buf))
    ops.sync(ctx)
    for g, buf in got:
        r = pos[g // nb] + g % nb
        aloc[r, :k0] = buf[:k0]
        aloc[r, k1:] = buf[k1:]
    ops.sync(ctx)
