"""The operands of pgascol.blas: checks (every rank reaches the same
verdict from the arrays' collective metadata, so a misuse raises on every
rank before any data moves) and the movement of a replicated operand.

Replicated operands (gemv's x by rows, ger's other vector, trsm's
triangle when the solve needs no communication): on one node every part is
read in place from its owner's shared memory; across nodes one Allgatherv
of the parts (local() views, passed to the collective as they are).
gemm's and syrk's replicated matrix moves panel by panel (panels())."""
import os

import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError
from ..pgas import GlobalArray, Matrix
from ..pgas import barrier as pgas_barrier
from ..pgas import context
from ..pgas.layout import BlockCyclic
from . import threads

DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64), np.dtype(np.complex128))
#: Read in place on one node only in pieces of at least this many elements;
#: smaller blocks (cyclic layouts) are first assembled into one vector.
MIN_PIECE = 256
#: Panel of a replicated matrix, in bytes (PGASCOL_BLAS_PANEL_BYTES overrides).
PANEL_BYTES = 4 << 20
TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}


def trans_code(name, value, dtype=None):
    if value not in TRANS:
        raise ArgumentError("%s must be 0, 1, 2 or 'N', 'T', 'C', not %r" % (name, value))
    return TRANS[value]


def flag(name, value, choices):
    """uplo/diag/side as 'U'/'L', 'N'/'U', 'L'/'R' (any case) or 0/1 (lower=1, unit=1, left=0... as given)."""
    v = value.upper()[:1] if isinstance(value, str) else value
    if v not in choices:
        raise ArgumentError("%s must be one of %s, not %r" % (name, ", ".join(map(repr, choices)), value))
    return choices[v]


def vector(name, x, dtype=None):
    if not isinstance(x, GlobalArray) or isinstance(x, Matrix):
        raise ArgumentError("%s must be a pgascol.pgas global array (a vector), not %r" % (name, x))
    return _typed(name, x, dtype)


def matrix(name, a, dtype=None):
    if not isinstance(a, Matrix):
        raise ArgumentError("%s must be a pgascol.pgas.Matrix, not %r" % (name, a))
    return _typed(name, a, dtype)


def _typed(name, a, dtype):
    a._live()
    if a.dtype not in DTYPES:
        raise ArgumentError("%s has dtype %s: BLAS is for float32, float64, complex64, complex128" % (name, a.dtype))
    if dtype is not None and a.dtype != dtype:
        raise ArgumentError("%s has dtype %s, the other operands %s" % (name, a.dtype, dtype))
    threads.ensure()
    return a


def same_comm(*named):
    ctxs = {id(a._ctx) for _, a in named}
    if len(ctxs) > 1:
        raise ArgumentError("%s are not on the same communicator" % ", ".join(n for n, _ in named))
    return named[0][1]._ctx


def size(name, x, n):
    if x.size != n:
        raise ArgumentError("%s has %d elements, %d expected" % (name, x.size, n))


def colocated(name, x, n, block, against):
    """x (a vector of n elements) must lie as `against` says: block-cyclic
    with `block` elements per block, so that its element i is on the rank
    of row/column i of the matrix (or of the other vector)."""
    size(name, x, n)
    if not isinstance(x.layout, BlockCyclic) or x.layout.block != block:
        raise ArgumentError("%s must be distributed like %s: block-cyclic with blocks of %d elements (it is %s)"
                            % (name, against, block, x.layout.describe()))


def vector_block(a):
    """The block of a vector co-located with matrix a's distributed dimension."""
    return a.bsize


def rows_or_cols_local(a, trans):
    """(local 2-D row-major view, trans code) such that op(local) are the
    caller's rows of op(a), or None when a's distribution does not put
    op(a)'s rows on their rank."""
    if a.dist == "row" and trans == 0:
        return a.local(), 0
    if a.dist == "col" and trans != 0:
        return local_cols(a), trans
    return None


def local_cols(a):
    """By columns: the caller's (rows x its columns) part, padding left out."""
    return a.local()[:, :ncols_local(a)]


def ncols_local(a):
    return sum(hi - lo for lo, hi in a.owned_cols())


def local_index_set(a):
    """The global rows (by rows) or columns (by columns) of the caller, in local order."""
    ranges = a.owned_rows() if a.dist == "row" else a.owned_cols()
    return index_set(ranges, a.rows if a.dist == "row" else a.cols)


def index_set(ranges, limit):
    """Global indices of [lo, hi) ranges, as a slice when they are one run."""
    ranges = [(lo, min(hi, limit)) for lo, hi in ranges if lo < limit]
    if not ranges:
        return slice(0, 0)
    if all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1)):
        return slice(ranges[0][0], ranges[-1][1])
    return np.concatenate([np.arange(lo, hi) for lo, hi in ranges])


# ---------------------------------------------------------------- replicated vectors and matrices

def rank_major(a):
    """Every rank's part of a, in rank order: in place (node views) on one
    node, else one Allgatherv of the local() parts."""
    ctx = a._ctx
    lay = a.layout
    if ctx.nnodes == 1:
        return [a.node_view(r) for r in range(ctx.size)]
    counts = [lay.local_size(r) for r in range(ctx.size)]
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).tolist()
    buf = np.empty(sum(counts), a.dtype)
    ctx.comm.Allgatherv(a.local(), [buf, counts, displs, MPI._typedict[a.dtype.char]])
    return [buf[d:d + c] for d, c in zip(displs, counts)]


def pieces(x):
    """The whole vector x on every rank as [(lo, hi, view)] in global order:
    views of the owners' parts where its blocks are large, else one
    assembled vector."""
    parts = rank_major(x)
    lay = x.layout
    if isinstance(lay, BlockCyclic) and lay.block >= MIN_PIECE or lay.nranks == 1 or not isinstance(lay, BlockCyclic):
        out = []
        for r, part in enumerate(parts):
            pos = 0
            for lo, hi in lay.owned(r):
                out.append((lo, hi, part[pos:pos + hi - lo]))
                pos += hi - lo
        return sorted(out, key=lambda p: p[0])
    return [(0, x.size, assemble(x, parts))]


def assemble(a, parts=None):
    """The whole of a (vector, or matrix as m x n) in one array on every rank."""
    parts = rank_major(a) if parts is None else parts
    lay = a.layout
    flat = np.empty(lay.n, a.dtype)
    for r, part in enumerate(parts):
        for (lo, hi), pos in zip(lay.owned(r), _offsets(lay.owned(r))):
            flat[lo:hi] = part[pos:pos + hi - lo]
    if isinstance(a, Matrix):
        return flat.reshape(a.rows, a.ld)[:, :a.cols] if a.rows else flat.reshape(0, a.cols)
    return flat


def _offsets(ranges):
    pos, out = 0, []
    for lo, hi in ranges:
        out.append(pos)
        pos += hi - lo
    return out


def scatter_order(y):
    """Positions, in y's global order, of the elements in rank-major order
    (None when that is the identity: y blocked)."""
    lay = y.layout
    order = np.concatenate([np.arange(lo, hi) for r in range(lay.nranks) for lo, hi in lay.owned(r)] +
                           [np.zeros(0, np.int64)])
    return None if np.array_equal(order, np.arange(lay.n)) else order


def reduce_scatter(ctx, partial, y):
    """Sum the ranks' partial vectors (y's n elements in global order) into
    the caller's part of y: one Reduce_scatter, in rank-major order."""
    order = scatter_order(y)
    send = partial if order is None else partial[order]
    counts = [y.layout.local_size(r) for r in range(ctx.size)]
    out = np.empty(counts[ctx.rank], y.dtype)
    ctx.comm.Reduce_scatter(send, out, counts, MPI.SUM)
    return out


def sync(ctx):
    """A pgas barrier: what every rank wrote before is visible to all."""
    pgas_barrier(ctx.comm)


def panels(m):
    """A replicated matrix m, panel by panel: yields (kind, global indices,
    view) with kind "row" (view = m[idx, :]) or "col" (view = m[:, idx]).
    Same-node panels are views of the owner's part (read in place); other
    nodes' are fetched with Rget into one of two buffers, the next panel's
    get issued before the current one is used (double buffering)."""
    ctx = m._ctx
    plan = list(_panel_plan(m))
    if ctx.nnodes == 1:
        for r, kind, lo, hi, idx in plan:
            yield kind, idx, _node_panel(m, r, kind, lo, hi)
        return
    pending = None
    for step, item in enumerate(plan + [None]):
        started = _start_panel(m, item) if item is not None else None
        if pending is not None:
            kind, idx, view, req = pending
            if req is not None:
                ctx.wait_request(req, "a panel of a replicated matrix")
            yield kind, idx, view
        pending = started


def _panel_plan(m):
    """(owner, kind, first local row/column, end, global indices) of each
    panel: a same-node owner's whole part in one (read in place, nothing
    to overlap), another node's in panels of PGASCOL_BLAS_PANEL_BYTES."""
    ctx = m._ctx
    limit = int(os.environ.get("PGASCOL_BLAS_PANEL_BYTES", PANEL_BYTES))
    for r in range(ctx.size):
        if m.dist == "row":
            ranges = [(lo // m.ld, -(-hi // m.ld)) for lo, hi in m.layout.owned(r)]
            width = max(m.ld * m.dtype.itemsize, 1)
        else:
            ranges = [(lo, min(hi, m.cols)) for lo, hi in m.layout.owned(r) if lo < m.cols and hi <= m.ld]
            width = max(m.rows * m.dtype.itemsize, 1)
        idx = np.concatenate([np.arange(lo, hi) for lo, hi in ranges] + [np.zeros(0, np.int64)])
        step = len(idx) if ctx.on_node[r] else max(limit // width, 1)
        for lo in range(0, len(idx), max(step, 1)):
            part = idx[lo:lo + step]
            run = slice(int(part[0]), int(part[-1]) + 1) if part[-1] - part[0] == len(part) - 1 else part
            yield r, m.dist, lo, lo + len(part), run


def _node_panel(m, r, kind, lo, hi):
    part = m.node_view(r)
    if kind == "row":
        return part.reshape(-1, m.ld)[lo:hi, :m.cols] if m.ld else np.zeros((hi - lo, 0), m.dtype)
    return part.reshape(m.rows, -1)[:, lo:hi] if m.rows else np.zeros((0, hi - lo), m.dtype)


def _start_panel(m, item):
    r, kind, lo, hi, idx = item
    if m._ctx.on_node[r]:
        return kind, idx, _node_panel(m, r, kind, lo, hi), None
    if kind == "row":
        buf = np.empty((hi - lo, m.ld), m.dtype)
        req = m._win.Rget([buf, m._mpitype], r, (lo * m.ld, (hi - lo) * m.ld, m._mpitype))
        return kind, idx, buf[:, :m.cols], req
    buf = np.empty((m.rows, hi - lo), m.dtype)
    ldl = m.ld // m._ctx.size
    vec = m._mpitype.Create_vector(m.rows, hi - lo, ldl).Commit()
    try:
        req = m._win.Rget([buf, m._mpitype], r, (lo, 1, vec))
    finally:
        vec.Free()
    return kind, idx, buf, req
