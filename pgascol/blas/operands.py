"""The operands of pgascol.blas: vectors (Vec) and matrices (Mat) as views
of global arrays, their checks, and the movement of replicated operands.

A view starts at a block boundary of its array (UPC's phase 0), so its
layout is the array's shifted: element i of a vector view at offset o of
an array of block B lives on rank (first + i // B) % P, first = (o // B) % P,
in one contiguous run of that rank's part. A matrix view is m x n with
leading dimension ld at offset o = i0*ld + j0: by rows (blocks of b rows,
block factor b*ld) i0 must start a block, by columns (blocks of b
columns, ld a multiple of b*P) j0 must. Whole arrays are views at 0.

Checks read only the arrays' collective metadata, so every rank reaches
the same verdict: a misuse raises on every rank before any data moves.

Replicated operands (gemv's x by rows, ger's other vector, trsm's
triangle when the solve needs no communication): on one node every part
is read in place from its owner's shared memory; across nodes one
Allgatherv of the parts (local() views, passed to the collective as they
are). gemm's and syrk's replicated matrix moves panel by panel (panels())."""

import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError
from ..pgas import GlobalArray, Matrix
from ..pgas import barrier as pgas_barrier
from ..pgas import matrix as pgas_matrix
from ..pgas.layout import BlockCyclic
from . import threads
from .panel import panel_bytes

DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64), np.dtype(np.complex128))
#: On one node a replicated vector is read in place in pieces of at least
#: this many elements; smaller blocks (cyclic layouts) are assembled first.
MIN_PIECE = 256
TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}


def trans_code(name, value):
    if isinstance(value, bool) or value not in TRANS:
        raise ArgumentError("%s must be 0, 1, 2 or 'N', 'T', 'C', not %r" % (name, value))
    return TRANS[value]


def _ranges(first, P, r, extent, b):
    """[lo, hi) of the blocks of b along `extent` that rank r holds, the
    view's block 0 being on rank `first`."""
    q0 = (r - first) % P
    return [(q * b, min(q * b + b, extent)) for q in range(q0, -(-extent // b), P)]


def _count(ranges):
    return sum(hi - lo for lo, hi in ranges)


def _index_set(ranges):
    """Indices of [lo, hi) ranges: a slice when they are one run."""
    if not ranges:
        return slice(0, 0)
    if all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1)):
        return slice(ranges[0][0], ranges[-1][1])
    return np.concatenate([np.arange(lo, hi) for lo, hi in ranges])


class Vec:
    """n elements of global array `arr` from element `off` on."""

    def __init__(self, name, arr, off=0, n=None):
        self.name, self.arr, self.off = name, arr, int(off)
        self.n = arr.size - self.off if n is None else int(n)
        self.dtype, self.ctx = arr.dtype, arr._ctx
        lay = arr.layout
        P = self.ctx.size
        if self.off < 0 or self.n < 0 or self.off + self.n > arr.size:
            raise ArgumentError("%s: elements [%d, %d) out of an array of %d"
                                % (name, self.off, self.off + self.n, arr.size))
        if isinstance(lay, BlockCyclic):
            self.block = lay.block
            if self.off % self.block:
                raise ArgumentError("%s must start at a block boundary (phase 0): offset %d, block %d"
                                    % (name, self.off, self.block))
            self.first = (self.off // self.block) % P
            self._owned = [_ranges(self.first, P, r, self.n, self.block) for r in range(P)]
            self._base = [lay.runs(r, 0, self.off)[1] for r in range(P)]
        else:                                   # irregular: whole arrays only
            if self.off or self.n != arr.size:
                raise ArgumentError("%s: a view of an irregular array must be the whole array" % name)
            self.block, self.first = None, 0
            self._owned = [lay.owned(r) for r in range(P)]
            self._base = [0] * P
        self._sizes = [_count(o) for o in self._owned]
        self._sets = [_index_set(o) for o in self._owned]

    def layout_key(self):
        """What two vectors must share for their parts to be co-located."""
        if self.block is None:
            return ("irregular", tuple(self.arr.layout.counts))
        return ("block-cyclic", self.n, self.block, self.first)

    def describe(self):
        return ("irregular" if self.block is None else
                "blocks of %d from rank %d" % (self.block, self.first))

    def owned(self, r):
        return self._owned[r]

    def local_size(self, r):
        return self._sizes[r]

    def index_set(self, r):
        """Rank r's elements of the view: a slice when they are one run."""
        return self._sets[r]

    def part(self, r):
        """Rank r's elements (a same-node rank's, or the caller's): a view."""
        whole = GlobalArray.local(self.arr) if r == self.ctx.rank else self.arr.node_view(r)
        return whole[self._base[r]:self._base[r] + self.local_size(r)]

    def local(self):
        return self.part(self.ctx.rank)

    def colocated(self, n, block, first, against):
        """This vector must lie as `against` says: n elements in blocks of
        `block` from rank `first`, so its element i is on the rank of row
        or column i of the matrix."""
        if self.n != n:
            raise ArgumentError("%s has %d elements, %d expected" % (self.name, self.n, n))
        if self.block != block or self.first != first:
            raise ArgumentError("%s must be distributed like %s: blocks of %d elements from rank %d (it has %s)"
                                % (self.name, against, block, first, self.describe()))


class Mat:
    """An m x n row-major matrix of leading dimension ld at element `off` of
    global array `arr` (a pgascol.pgas.Matrix, or any global array whose
    block-cyclic layout is the distribution's: b*ld by rows, b by columns)."""

    def __init__(self, name, arr, off, m, n, ld, dist, b):
        self.name, self.arr, self.off = name, arr, int(off)
        self.rows, self.cols, self.ld, self.dist, self.bsize = int(m), int(n), int(ld), dist, int(b)
        self.dtype, self.ctx = arr.dtype, arr._ctx
        P = self.ctx.size
        lay = arr.layout
        if not isinstance(lay, BlockCyclic) or lay.block != (b * ld if dist == "row" else b):
            raise ArgumentError("%s: by %ss with blocks of %d, the array's block must be %d (it is %s)"
                                % (name, dist, b, b * ld if dist == "row" else b, lay.describe()))
        if dist == "col" and ld % (b * P):
            raise ArgumentError("%s: by columns, ld (%d) must be a multiple of block*P = %d" % (name, ld, b * P))
        if self.cols > ld or self.off < 0 or (self.rows and self.off + (self.rows - 1) * ld + self.cols > arr.size):
            raise ArgumentError("%s: a %d x %d matrix with ld %d at offset %d does not fit an array of %d"
                                % (name, m, n, ld, off, arr.size))
        self.i0, self.j0 = divmod(self.off, ld)
        if self.j0 + self.cols > ld:
            raise ArgumentError("%s: columns %d..%d go past ld %d" % (name, self.j0, self.j0 + self.cols, ld))
        start = self.i0 if dist == "row" else self.j0
        if start % b:
            raise ArgumentError("%s must start at a block boundary (phase 0): its first %s %d is inside a block of %d"
                                % (name, dist, start, b))
        self.first = (start // b) % P
        self.extent = self.rows if dist == "row" else self.cols
        self._owned = [_ranges(self.first, P, r, self.extent, b) for r in range(P)]
        # each rank's first row (by rows) or column (by columns) of the view, in its part
        self._base = [_count(_ranges(0, P, r, start, b)) for r in range(P)]
        self._sizes = [_count(o) for o in self._owned]
        self._sets = [_index_set(o) for o in self._owned]

    @property
    def shape(self):
        return (self.rows, self.cols)

    def owned(self, r):
        """Rank r's rows (by rows) or columns (by columns) of the view, in local order."""
        return self._owned[r]

    def count(self, r):
        return self._sizes[r]

    def index_set(self, r=None):
        return self._sets[self.ctx.rank if r is None else r]

    def owner(self, k):
        """The rank of row (by rows) or column (by columns) k."""
        return (self.first + k // self.bsize) % self.ctx.size

    def part(self, r):
        """Rank r's elements as a 2-D view: its rows x the view's columns
        (by rows), the view's rows x its columns (by columns)."""
        whole = GlobalArray.local(self.arr) if r == self.ctx.rank else self.arr.node_view(r)
        c = self.count(r)
        if self.dist == "row":
            if not c or not self.cols:
                return np.zeros((c, self.cols), self.dtype)
            rows = whole[:len(whole) - len(whole) % self.ld].reshape(-1, self.ld)
            return rows[self._base[r]:self._base[r] + c, self.j0:self.j0 + self.cols]
        ldl = self.ld // self.ctx.size
        if not c or not self.rows:
            return np.zeros((self.rows, c), self.dtype)
        return whole[:len(whole) - len(whole) % ldl].reshape(-1, ldl)[self.i0:self.i0 + self.rows,
                                                                       self._base[r]:self._base[r] + c]

    def local(self):
        return self.part(self.ctx.rank)

    def fetch(self, r, lo, hi):
        """Start reading rank r's local rows/columns [lo, hi) of the view
        from another node: (buffer, request), a vector datatype over r's part."""
        isz_type = self.arr._mpitype
        if self.dist == "row":
            buf = np.empty((hi - lo, self.cols), self.dtype)
            disp = (self._base[r] + lo) * self.ld + self.j0
            shape = (hi - lo, self.cols, self.ld)
        else:
            ldl = self.ld // self.ctx.size
            buf = np.empty((self.rows, hi - lo), self.dtype)
            disp = self.i0 * ldl + self._base[r] + lo
            shape = (self.rows, hi - lo, ldl)
        if buf.size == 0:
            return buf, None
        vec = isz_type.Create_vector(*shape).Commit()
        try:
            req = self.arr._win.Rget([buf, isz_type], r, (disp, 1, vec))
        finally:
            vec.Free()
        return buf, req


class Gathered:
    """A replicated matrix whole on every rank (UPCBLAS's replicated operand
    in a layout that is neither by rows nor by columns): one panel. Its
    private buffer is allocated when the operand is checked, so a matrix
    that does not fit is refused before any data moves; fill() reads it
    from (global array, offset, ld), one get per row, all in flight together."""

    dist, first = "row", 0

    def __init__(self, name, array, source=None):
        self.name, self.array, self.dtype, self.source = name, array, array.dtype, source
        self.rows, self.cols = array.shape
        self.bsize = max(self.rows, 1)

    @property
    def shape(self):
        return (self.rows, self.cols)

    def fill(self):
        if self.source is not None and self.cols:
            arr, off, ld = self.source
            for handle in [arr.get_nb(off + i * ld, self.array[i]) for i in range(self.rows)]:
                handle.wait()
        return self


# ---------------------------------------------------------------- arguments

def vector(name, x, dtype=None):
    """A Vec of x (a global vector or a Vec), its dtype checked."""
    if isinstance(x, Vec):
        v = x
    elif isinstance(x, GlobalArray) and not isinstance(x, Matrix):
        x._live()
        v = _whole(x, name, lambda: Vec(name, x))
    else:
        raise ArgumentError("%s must be a pgascol.pgas global array (a vector) or a blas.subvector, not %r"
                            % (name, x))
    v.name = name
    return _typed(v, dtype)


def matrix(name, a, dtype=None):
    """A Mat of a (a pgascol.pgas.Matrix or a Mat), its dtype checked."""
    if isinstance(a, Mat):
        v = a
    elif isinstance(a, Matrix):
        a._live()
        v = _whole(a, name, lambda: Mat(name, a, 0, a.rows, a.cols, a.ld, a.dist, a.bsize))
    else:
        raise ArgumentError("%s must be a pgascol.pgas.Matrix or a blas.submatrix, not %r" % (name, a))
    v.name = name
    return _typed(v, dtype)


def _whole(arr, name, make):
    """The view of a whole array in the role `name`, made once and kept on
    the array (its layout never changes; a freed array fails _live first):
    a call's fixed cost is then its checks against the other operands."""
    views = arr.__dict__.setdefault("_blas_views", {})
    if name not in views:
        views[name] = make()
    return views[name]


def _typed(v, dtype):
    v.arr._live()
    if v.dtype not in DTYPES:
        raise ArgumentError("%s has dtype %s: BLAS is for float32, float64, complex64, complex128" % (v.name, v.dtype))
    if dtype is not None and v.dtype != dtype:
        raise ArgumentError("%s has dtype %s, the other operands %s" % (v.name, v.dtype, dtype))
    threads.ensure()
    return v


def same_comm(*views):
    if len({id(v.ctx) for v in views}) > 1:
        raise ArgumentError("%s are not on the same communicator" % ", ".join(v.name for v in views))
    return views[0].ctx


def op_by_rows(v, trans):
    """Whether op(v)'s rows are what v distributes (v by rows untransposed,
    or by columns transposed); otherwise op(v)'s columns are."""
    return (v.dist == "row") == (trans == 0)


def rows_local(a, trans):
    """(local 2-D view, trans code) whose op() is the caller's rows of
    op(a), or None when a's distribution does not hold op(a) by rows."""
    return (a.local(), trans) if op_by_rows(a, trans) else None


# ---------------------------------------------------------------- replicated operands

def rank_major(v):
    """Every rank's part of v (Vec, or Mat as flat rows/columns), in rank
    order: in place (views of the owners' parts) on one node, else one
    Allgatherv of the caller's part."""
    ctx = v.ctx
    if ctx.nnodes == 1:
        return [v.part(r) for r in range(ctx.size)]
    if isinstance(v, Vec):
        counts = [v.local_size(r) for r in range(ctx.size)]
        send, shape = v.local(), lambda r, c: (c,)
    else:
        width = v.cols if v.dist == "row" else v.rows
        counts = [v.count(r) * width for r in range(ctx.size)]
        loc = v.local()
        send = np.ascontiguousarray(loc if v.dist == "row" else loc.T).reshape(-1)
        shape = (lambda r, c: (v.count(r), width))
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(int).tolist()
    buf = np.empty(sum(counts), v.dtype)
    ctx.comm.Allgatherv(send, [buf, counts, displs, MPI._typedict[v.dtype.char]])
    parts = [buf[d:d + c].reshape(shape(r, c)) for r, (d, c) in enumerate(zip(displs, counts))]
    if isinstance(v, Mat) and v.dist == "col":
        parts = [p.T for p in parts]
    return parts


def pieces(x):
    """The whole vector x on every rank as [(lo, hi, view)] in order: views
    of the owners' parts where blocks are large, else one assembled vector."""
    parts = rank_major(x)
    if x.block is not None and x.block < MIN_PIECE and x.ctx.size > 1:
        return [(0, x.n, assemble(x, parts))]
    out = []
    for r, part in enumerate(parts):
        pos = 0
        for lo, hi in x.owned(r):
            out.append((lo, hi, part[pos:pos + hi - lo]))
            pos += hi - lo
    return sorted(out, key=lambda p: p[0])


def assemble(v, parts=None):
    """The whole of v (a vector, or a matrix as m x n) in one array on every rank."""
    if isinstance(v, Gathered):
        return v.array
    parts = rank_major(v) if parts is None else parts
    if isinstance(v, Vec):
        out = np.empty(v.n, v.dtype)
        for r, part in enumerate(parts):
            out[v.index_set(r)] = part
        return out
    out = np.empty((v.rows, v.cols), v.dtype)
    for r, part in enumerate(parts):
        if v.dist == "row":
            out[v.index_set(r), :] = part
        else:
            out[:, v.index_set(r)] = part
    return out


def reduce_scatter(ctx, partial, y):
    """Sum the ranks' partial results (a vector of y's n elements, or the
    whole m x n matrix y) into the caller's part of y: one Reduce_scatter,
    the parts in rank order (a matrix's rows by rows, columns by columns)."""
    by_cols = isinstance(y, Mat) and y.dist == "col"
    order = [y.index_set(r) for r in range(ctx.size)]
    parts = [partial[:, o] if by_cols else partial[o] for o in order]
    send = np.concatenate([p.reshape(-1) for p in parts]) if ctx.size > 1 else partial.reshape(-1)
    counts = [p.size for p in parts]
    out = np.empty(counts[ctx.rank], y.dtype)
    ctx.comm.Reduce_scatter(np.ascontiguousarray(send), out, counts, MPI.SUM)
    return out.reshape(parts[ctx.rank].shape)


# ---------------------------------------------------------------- redistribution

def redistributed(v, trans, along, block, first):
    """A temporary copy of matrix v whose op(v) rows (along="rows") or
    columns ("cols") lie in blocks of `block` from rank `first`, for the
    cases no algorithm serves with v where it is: each rank reads the whole
    of v once (panels(): in place on one node, gets across nodes) and keeps
    its own rows or columns. Returns the copy's Mat; free its .arr (a
    collective free) when done."""
    dist = "row" if (along == "rows") == (trans == 0) else "col"
    pad = first * block
    shape = (v.rows + pad, v.cols) if dist == "row" else (v.rows, v.cols + pad)
    tmp = pgas_matrix(v.ctx.comm, shape, v.dtype, block=block, dist=dist)
    new = Mat(v.name, tmp, pad * tmp.ld if dist == "row" else pad, v.rows, v.cols, tmp.ld, dist, block)
    dst, mine = new.local(), _index_array(new.owned(v.ctx.rank))
    for idx, view in panels(v):
        idx = np.arange(idx.start, idx.stop) if isinstance(idx, slice) else idx
        if dist == v.dist:                  # the same rows (columns) in other blocks
            _, at_view, at_dst = np.intersect1d(idx, mine, assume_unique=True, return_indices=True)
            if dist == "row":
                dst[at_dst, :] = view[at_view, :]
            else:
                dst[:, at_dst] = view[:, at_view]
        elif dist == "row":                 # a panel of v's columns: my rows of them
            dst[:, idx] = view[mine, :]
        else:                               # a panel of v's rows: my columns of them
            dst[idx, :] = view[:, mine]
    return new


def _index_array(ranges):
    return np.concatenate([np.arange(lo, hi) for lo, hi in ranges] + [np.zeros(0, np.int64)])


def sync(ctx):
    """A pgas barrier: what every rank wrote before is visible to all."""
    pgas_barrier(ctx.comm)


def panels(m):
    """A replicated matrix m, panel by panel: yields (global indices, view),
    rows of m (by rows) or columns (by columns). A same-node owner's part
    is one panel, read in place; another node's come in panels of
    PGASCOL_BLAS_PANEL_BYTES by Rget into fresh buffers, the next panel's
    get issued before the current one is used (double buffering)."""
    if isinstance(m, Gathered):
        yield slice(0, m.rows), m.array
        return
    pending = None
    for item in list(_panel_plan(m)) + [None]:
        started = _start_panel(m, item) if item is not None else None
        if pending is not None:
            idx, view, req = pending
            if req is not None:
                m.ctx.wait_request(req, "a panel of a replicated matrix")
            yield idx, view
        pending = started


def _panel_plan(m):
    ctx = m.ctx
    limit = panel_bytes()
    width = max((m.cols if m.dist == "row" else m.rows) * m.dtype.itemsize, 1)
    for r in range(ctx.size):
        idx = _index_array(m.owned(r))
        step = max(len(idx), 1) if ctx.on_node[r] else max(limit // width, 1)
        for lo in range(0, len(idx), step):
            part = idx[lo:lo + step]
            run = slice(int(part[0]), int(part[-1]) + 1) if part[-1] - part[0] == len(part) - 1 else part
            yield r, lo, lo + len(part), run


def _start_panel(m, item):
    r, lo, hi, idx = item
    if m.ctx.on_node[r]:
        part = m.part(r)
        return idx, (part[lo:hi] if m.dist == "row" else part[:, lo:hi]), None
    buf, req = m.fetch(r, lo, hi)
    return idx, buf, req
