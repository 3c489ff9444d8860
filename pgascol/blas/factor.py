"""Dense factorizations on global matrices distributed by rows in blocks
of NB rows (the UPCBLAS thesis's applications, right-looking, one block column
per step): Cholesky (gemm- and syrk-based trailing updates) and LU without
and with partial pivoting. Every rank holds its own block rows; per step
one collective moves the panel (LU on one node: read in place):

- cholesky: one Allgatherv of the block column below the diagonal (the
  ranks' parts of it); every rank factors the diagonal tile and solves the
  panel (redundant, NB^2 (n - k) flops), keeps its own rows of L and
  updates its own rows of the trailing matrix;
- lu on one node (_lu_node): the parts are in shared memory, so a block
  step's work is shared out in place regardless of who owns the rows, with
  a look-ahead of one panel: rank (k+1) % P factors panel k+1 (once) while
  the others update the rest of step k's trailing matrix;
- lu across nodes, no pivoting: the owner of the diagonal block row
  factors its tile and solves its row of U; one Bcast of that block row;
  every rank solves its rows of the block column and updates its trailing
  rows;
- lu across nodes with pivoting: one Allgatherv of the block column (rows
  >= k), every rank runs LAPACK's getrf on it (identical input, identical
  pivots), the row interchanges of the rest of the matrix move in one
  Alltoallv (each moved row from its source's owner to its
  destination's), then as without pivoting.

The factors overwrite a (L below the diagonal, U or L^T/L^H on and above
as LAPACK's); lu returns the pivots (0-based, LAPACK's ipiv - 1) on every rank."""
import numpy as np
import scipy.linalg.lapack as lapack

from ..errors import ArgumentError, PgascolError
from . import _kernels as K
from . import operands
from ..pgas import array as pgas_array


def _setup(a, what):
    va = operands.matrix("a", a)
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
    ctx.comm.Allgatherv(send.reshape(-1), [buf, counts, displs, operands.MPI._typedict[a.dtype.char]])
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
    operands.sync(ctx)
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
    operands.sync(ctx)
    return arr


def _potrf(tile):
    fn = getattr(lapack, {"f": "spotrf", "d": "dpotrf", "F": "cpotrf", "D": "zpotrf"}[tile.dtype.char])
    L, info = fn(tile, lower=1, clean=1)
    return np.ascontiguousarray(L), info


def _getrf(panel):
    fn = getattr(lapack, {"f": "sgetrf", "d": "dgetrf", "F": "cgetrf", "D": "zgetrf"}[panel.dtype.char])
    lu, piv, info = fn(panel, overwrite_a=1)      # in place when panel is in Fortran order
    return lu, piv, info


def lu(a, pivoting=True):
    """a = P L U in place (L unit lower, U upper); returns the pivots: row i
    was interchanged with row piv[i] (0-based), on every rank. Without
    pivoting, piv[i] = i. A singular matrix (an exactly zero pivot) raises
    on every rank at the block step that meets it."""
    a, ctx, n, nb, nblocks, mine, pos = _setup(a, "lu")
    if ctx.nnodes == 1 and ctx.size > 1:
        return _lu_node(a, ctx, n, nb, nblocks, pivoting)
    operands.sync(ctx)
    aloc = a.local()
    piv = np.arange(n)
    for k in range(nblocks):
        k0, k1 = k * nb, min(n, k * nb + nb)
        w, owner = k1 - k0, a.owner(k0)
        if pivoting:
            panel = _gather_column(ctx, a, aloc, k, k0, k1, mine, pos, nb, n)
            lu_p, p, info = _getrf(panel)
            if info > 0:
                raise _zero_pivot(True, k0 + info - 1)
            piv[k0:k1] = k0 + p[:w]
            _interchange(ctx, a, aloc, k0, p[:w], pos, nb, n)
            for i in mine:
                if i >= k:
                    i0 = i * nb
                    aloc[_rows(i, nb, n, pos), k0:k1] = lu_p[i0 - k0:i0 - k0 + min(nb, n - i0)]
        ukk, uk = _u_row(ctx, a, aloc, k, k0, k1, owner, pos, nb, n, pivoting)
        for i in mine:
            if i <= k:
                continue
            rows = _rows(i, nb, n, pos)
            if not pivoting:
                K.trsm(False, False, 0, False, 1.0, ukk, aloc[rows, k0:k1])
            K.gemm(0, 0, -1.0, aloc[rows, k0:k1], uk, 1.0, aloc[rows, k1:n])
    operands.sync(ctx)
    return piv


def _u_row(ctx, a, aloc, k, k0, k1, owner, pos, nb, n, pivoting):
    """Block row k of U on every rank, (tile, right of it): its owner factors
    the tile (without pivoting) and solves the row, then one Bcast, whose
    last element says on every rank whether the tile had a zero pivot."""
    w = k1 - k0
    buf = np.zeros(w * (n - k0) + 1, a.dtype)
    row = buf[:-1].reshape(w, n - k0)
    if owner == ctx.rank:
        rk = _rows(k, nb, n, pos)
        zero = None if pivoting else _lu_tile_nopivot(aloc[rk, k0:k1])
        if zero is None:
            K.trsm(True, True, 0, True, 1.0, np.ascontiguousarray(aloc[rk, k0:k1]), aloc[rk, k1:n])
            row[...] = aloc[rk, k0:n]
        else:
            buf[-1] = zero + 1
    ctx.comm.Bcast(buf, root=owner)
    if buf[-1] != 0:
        raise _zero_pivot(False, k0 + int(buf[-1].real) - 1)
    return np.ascontiguousarray(np.triu(row[:, :w])), row[:, w:]


def _zero_pivot(pivoting, i):
    """The error every rank raises for an exactly zero pivot at row i."""
    if pivoting:
        return PgascolError("lu: the matrix is singular: U(%d, %d) is exactly zero" % (i, i))
    return PgascolError("lu without pivoting: zero pivot at row %d" % i)


def _lu_tile_nopivot(t):
    """LU of one tile without pivoting, in place (unit L below, U on and
    above); the row of the first zero pivot, else None."""
    w = t.shape[0]
    for j in range(w):
        if t[j, j] == 0:
            return j
        t[j + 1:, j] /= t[j, j]
        t[j + 1:, j + 1:] -= np.outer(t[j + 1:, j], t[j, j + 1:])
    return None


def _interchange(ctx, a, aloc, k0, p, pos, nb, n):
    """Apply the panel's row interchanges (LAPACK's, p 0-based from k0) to
    whole rows (the panel's columns are overwritten after): one Alltoallv in
    which each moved row goes from its source's owner to its destination's
    owner, rows that stay on a rank included (sent to itself), so no rank
    writes a row before every rank has read its sources."""
    perm = np.arange(n - k0)
    for j, q in enumerate(p):
        perm[j], perm[q] = perm[q], perm[j]
    moved = k0 + np.flatnonzero(perm != np.arange(n - k0))
    if not len(moved):
        return
    src = k0 + perm[moved - k0]
    dst_owner = np.array([a.owner(g) for g in moved])
    src_owner = np.array([a.owner(g) for g in src])
    local = lambda g: pos[g // nb] + g % nb                            # noqa: E731
    send_rows = [local(g) for r in range(ctx.size) for g in src[(src_owner == ctx.rank) & (dst_owner == r)]]
    recv_rows = [local(g) for r in range(ctx.size) for g in moved[(dst_owner == ctx.rank) & (src_owner == r)]]
    scount = [int(np.count_nonzero((src_owner == ctx.rank) & (dst_owner == r))) * n for r in range(ctx.size)]
    rcount = [int(np.count_nonzero((dst_owner == ctx.rank) & (src_owner == r))) * n for r in range(ctx.size)]
    send, recv = aloc[send_rows], np.empty((len(recv_rows), n), a.dtype)
    t = operands.MPI._typedict[a.dtype.char]
    displs = lambda c: np.concatenate(([0], np.cumsum(c)[:-1])).astype(int).tolist()   # noqa: E731
    ctx.comm.Alltoallv([send, scount, displs(scount), t], [recv, rcount, displs(rcount), t])
    aloc[recv_rows] = recv


#: A panel's factorization (getrf, or the tile's LU and trsm without
#: pivoting) counted as this many of its flops in trailing-update flops,
#: when the look-ahead shares out the columns (_columns): getrf on a tall
#: panel runs at about 2/3 of gemm's speed.
PANEL_WEIGHT = 1.5


def _lu_node(a, ctx, n, nb, nblocks, pivoting):
    """LU on one node: every rank reads and writes every rank's rows in
    place (the parts are in shared memory), so a block step's work is
    shared out by columns regardless of who owns the rows. Step k: each rank
    takes a range of the columns right of panel k and, for those columns
    alone, applies the panel's interchanges, solves U's block row and
    updates every trailing row; rank (k+1) % P takes panel k+1's columns
    first and then factors panel k+1 (once, in place, pivots and info
    published in a small global array): a look-ahead of one panel, that
    rank given fewer of the other columns so the step stays balanced. A
    column's work depends only on panel k and on that column, so the step
    needs one barrier, at its end."""
    P = ctx.size
    parts = [a.part(r) for r in range(P)]
    pub = pgas_array(ctx.comm, P * (nb + 1), np.int64, block=nb + 1)   # per rank: pivots, info
    try:
        piv = _lu_node_steps(a, ctx, n, nb, nblocks, pivoting, parts, pub)
    finally:
        pub.free()
    return piv


def _lu_node_steps(a, ctx, n, nb, nblocks, pivoting, parts, pub):
    P, me = ctx.size, ctx.rank

    def block(i):                       # block row i of the view, in its owner's part
        r = a.owner(i * nb)
        lb = (i - (r - a.first) % P) // P
        return parts[r][lb * nb:lb * nb + min(nb, n - i * nb)]

    piv = np.arange(n)
    operands.sync(ctx)
    if me == 0:
        _factor_panel(block, pub, 0, nb, nblocks, n, pivoting)
    operands.sync(ctx)
    for k in range(nblocks):
        k0, k1 = k * nb, min(n, k * nb + nb)
        k2 = min(n, k1 + nb)
        got = np.array(pub.node_view(k % P))
        if got[nb]:
            operands.sync(ctx)
            raise _zero_pivot(pivoting, k0 + int(got[nb]) - 1)
        if pivoting:
            piv[k0:k1] = k0 + got[:k1 - k0]
            _swap_rows(block, nb, k0, got[:k1 - k0], n, [_share(k0, P, me)])     # L's columns left of the panel
        top, below = block(k), [block(i) for i in range(k + 1, nblocks)]
        lkk = np.ascontiguousarray(top[:, k0:k1])
        ahead = k + 1 < nblocks and me == (k + 1) % P
        for c in _columns(k1, k2, n, nb, P, me, (k + 1) % P if k + 1 < nblocks else None):
            if pivoting:
                _swap_rows(block, nb, k0, got[:k1 - k0], n, [c])
            K.trsm(True, True, 0, True, 1.0, lkk, top[:, c])
            for b in below:
                K.gemm(0, 0, -1.0, b[:, k0:k1], top[:, c], 1.0, b[:, c])
            if ahead and c.start == k1:                 # panel k+1's columns are done: factor it
                _factor_panel(block, pub, k + 1, nb, nblocks, n, pivoting)
        operands.sync(ctx)                                   # step k complete, panel k+1 factored
    return piv


def _share(extent, P, r, lo=0):
    """Rank r's part of [lo, lo + extent) split evenly in P."""
    return slice(lo + extent * r // P, lo + extent * (r + 1) // P)


def _columns(k1, k2, n, nb, P, me, ahead):
    """The caller's columns right of panel k at step k, as slices: rank
    `ahead` takes panel k+1's [k1, k2) first and, of [k2, n), as much less
    than the others as factoring the panel costs (PANEL_WEIGHT)."""
    if ahead is None:
        return [c for c in [_share(n - k1, P, me, k1)] if c.stop > c.start]
    extra = (k2 - k1) * (1 + PANEL_WEIGHT / 2)        # getrf of m x nb ~ m nb^2 flops, a column's update 2 m nb
    each = (n - k2 + extra) / P
    sizes = [max(0.0, each - extra) if r == ahead else each for r in range(P)]
    bounds = np.rint(np.concatenate(([0.0], np.cumsum(sizes))) * (n - k2) / max(sum(sizes), 1e-9)).astype(int) + k2
    out = [slice(k1, k2)] if me == ahead else []
    return out + [c for c in [slice(int(bounds[me]), int(bounds[me + 1]))] if c.stop > c.start]


def _factor_panel(block, pub, k, nb, nblocks, n, pivoting):
    """Factor panel k (rows >= k*nb of its nb columns) in place and publish
    its pivots and info in the caller's part of pub."""
    k0, k1 = k * nb, min(n, k * nb + nb)
    w = k1 - k0
    blocks = [block(i) for i in range(k, nblocks)]
    panel = np.empty((n - k0, w), blocks[0].dtype, order="F")    # getrf's own order: factored in place
    row = 0
    for b in blocks:
        panel[row:row + len(b)] = b[:, k0:k1]
        row += len(b)
    out = pub.local()
    out[:] = 0
    if pivoting:
        panel, p, info = _getrf(panel)
        out[:w] = p[:w]
    else:
        panel = np.ascontiguousarray(panel)
        zero = _lu_tile_nopivot(panel[:w])
        info = 0 if zero is None else zero + 1
        if not info and len(panel) > w:
            K.trsm(False, False, 0, False, 1.0, np.ascontiguousarray(np.triu(panel[:w])), panel[w:])
    out[nb] = info
    row = 0
    for b in blocks:
        b[:, k0:k1] = panel[row:row + len(b)]
        row += len(b)


def _swap_rows(block, nb, k0, p, n, cols):
    """Apply the panel's interchanges (p 0-based from k0) to the caller's
    share of the columns left and right of the panel, in place: the source
    rows read block row by block row, then written likewise."""
    perm = np.arange(n - k0)
    for j, q in enumerate(p):
        perm[j], perm[q] = perm[q], perm[j]
    moved = k0 + np.flatnonzero(perm != np.arange(n - k0))
    src = k0 + perm[moved - k0]
    for c in cols:
        if c.stop > c.start and len(moved):
            vals = np.empty((len(moved), c.stop - c.start), block(k0 // nb).dtype)
            for i in np.unique(src // nb):
                at = src // nb == i
                vals[at] = block(i)[src[at] - i * nb, c]
            for i in np.unique(moved // nb):
                at = moved // nb == i
                block(i)[moved[at] - i * nb, c] = vals[at]
