"""Distributed sparse matrices (SparseMatrix): made once (collectively) and
freed explicitly.

from_scipy splits the matrix on the root as its format's distribution
says (formats.py) and sends each rank its piece with the communicator's
Scatterv, array by array (no pickle of scipy objects); with root=None
every rank already holds A and takes its own piece. The matrix keeps the
piece as flat arrays for the kernels (_kernels.pyx), the distribution
(row_counts, col_counts: the Irregular layouts of its vectors) and the
communication plans of mv/mm (products.py), built on first use."""
import operator

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI
from mpi4py.util.dtlib import from_numpy_dtype

from .. import pgas
from ..comm.agree import agree
from ..errors import ArgumentError, FreedError
from ..pgas import context
from . import formats, plan


class SparseMatrix:
    """An m x n sparse matrix distributed over a pgascol communicator.

    `row_counts` / `col_counts`: how many rows / columns each rank's
    vectors hold (A.vector("row") and A.vector("col")). Freed by free()
    (collective) or at the end of a ``with`` block, never by the GC."""

    def __init__(self, comm, shape, dtype, fmt, uplo, blocksize, nnz, counts, piece, split=None):
        self.comm = comm
        self._ctx = context.of(comm)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.format, self.uplo, self.blocksize, self.nnz = fmt, uplo, blocksize, int(nnz)
        self.split = split                        # DIA: "diagonals" (cyclic) or "rows"; else None
        self.axis = formats.axis(fmt, uplo, split)
        self.line_counts = list(counts)           # lines of each rank (rows, columns or diagonals)
        self.row_counts, self.col_counts = self._vector_counts()
        unit = blocksize[0] if fmt == "bsr" else 1
        first = int(np.sum(self.line_counts[:self._ctx.rank])) * unit
        self.lo = 0 if self.axis == "diag" else first     # first row/column of my lines (diagonals: whole)
        self._piece = piece
        self._plans = {}
        self._mpi = None                # its own communicator (_made: once every rank has its piece)
        self._freed = False

    def _vector_counts(self):
        """Rows and columns per rank: the distributed dimension as the lines
        go, the other one like it when A is square (so that y = A x and x
        share a layout), else evenly; by diagonals evenly."""
        m, n = self.shape
        P = self._ctx.size
        if self.axis == "diag":
            return formats.even(m, P), formats.even(n, P)
        if self.format == "bsr":
            R, C = self.blocksize
            rows = [c * R for c in self.line_counts]
            return rows, (rows if (m, R) == (n, C) else formats.even(n, P, C))
        if self.axis == "row":
            return self.line_counts, (self.line_counts if m == n else formats.even(n, P))
        return (self.line_counts if m == n else formats.even(m, P)), self.line_counts

    # ------------------------------------------------------------ lifetime

    def free(self):
        """Collective: release the matrix (its plans and message communicator)."""
        if self._freed:
            return
        self._freed = True
        self._piece, self._plans = None, {}
        self._mpi.Free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def _live(self):
        if self._freed:
            raise FreedError("this sparse matrix was freed")
        return self._ctx

    # ------------------------------------------------------------ vectors

    def vector(self, kind="row", fill=0):
        """A global array laid out as A's rows ("row": y of y = A x) or
        columns ("col": x), collective."""
        return pgas.array(self.comm, None, self.dtype, counts=self._counts(kind), fill=fill)

    def matrix(self, kind, ncols, fill=0):
        """A dense (rows or columns of A) x ncols pgas Matrix distributed by
        rows as A's rows or columns: SpMM's B and C."""
        counts = self._counts(kind)
        return pgas.matrix(self.comm, (sum(counts), ncols), self.dtype, dist="row", counts=counts, fill=fill)

    def _counts(self, kind):
        self._live()
        if kind not in ("row", "col"):
            raise ArgumentError('kind must be "row" or "col", not %r' % (kind,))
        return self.row_counts if kind == "row" else self.col_counts

    # ------------------------------------------------------------ what the products use (products.py)

    @property
    def _unit(self):
        """Elements of x per column index: a BSR block column's C, else 1."""
        return self.blocksize[1] if self.format == "bsr" else 1

    def _rows(self):
        """COO: each entry's local line."""
        if "rows" not in self._piece:
            p = self._piece["ptr"]
            self._piece["rows"] = np.repeat(np.arange(len(p) - 1), np.diff(p)).astype(p.dtype)
        return self._piece["rows"]

    def _dia_rows(self):
        """DIA: (first row, rows) of my piece's diagonals: my row block, or
        all of A's rows when split by diagonals."""
        return self.lo, (self.shape[0] if self.axis == "diag" else self.line_counts[self._ctx.rank])

    def _window(self):
        """Skyline and DIA: the range [lo, hi) of indices that my lines touch."""
        if "window" not in self._plans:
            if self.format == "dia":
                _, i0, i1, first, _ = plan.dia_runs(self, [0, self.shape[1]])
                last = first + i1 - i0
            else:
                p = self._piece
                lens = np.diff(p["ptr"])
                first = p["idx"][lens > 0]
                last = first + lens[lens > 0]
            self._plans["window"] = (int(first.min()), int(last.max())) if len(first) else (0, 0)
        return self._plans["window"]

    def _plan(self, D, guard, scatter=False):
        """The exchange (built once, collectively: every rank's first
        product with global operands of that direction) and the remap for
        D's layout. D: x, whose entries my lines read (gather), or y, into
        whose rows my lines add (scatter, plan.scatter); (None, None) when
        a scatter's halo is too wide to gain on a Reduce_scatter (narrow).

        A failure while the exchange is built, on any rank, raises
        OperationFailedError on every rank (Exchange.verdict) and keeps no
        plan; one while the remap is built (local) is the product's
        (guard: the remap None, the product fails on every rank at its end)."""
        name = "reverse" if scatter else "exchange"
        if name not in self._plans:
            building = plan.Guard()
            counts = self.col_counts if self.axis == "row" else self.row_counts
            direct = [r == self._ctx.rank for r in range(self._ctx.size)] if scatter else self._ctx.on_node
            units = building.run(self._units)
            ex = plan.Exchange(self, counts, units, self._unit, direct, building)
            total = ex.verdict(self, building, "pgascol.sparse: building the exchange plan of %r" % self)
            self._plans[name] = ex if not scatter or ex.narrow(total, sum(counts) * self._unit) else None
        ex = self._plans[name]
        if ex is None:
            return None, None
        _, starts = D.a.node_segment()
        key = ("remap", name, D.ld, starts.tobytes())
        if key not in self._plans:
            if sum(1 for k in self._plans if k[0] == "remap") >= 4:      # a few layouts of x at most
                self._plans = {k: v for k, v in self._plans.items() if k[0] != "remap"}
            rm = guard.run(self._remap, ex, starts, D.ld)
            if rm is None:
                return ex, None
            self._plans[key] = rm
        return ex, self._plans[key]

    def _units(self):
        """The indices of x (y when scattering) that my lines touch, with
        repeats: DIA's and skyline's window, else the piece's own indices."""
        return np.arange(*self._window()) if self.format in ("dia", "sky") else self._piece["idx"]

    def _remap(self, ex, starts, ld):
        if self.format in ("dia", "sky"):
            return plan.RunRemap(self, ex, starts, ld)
        p = self._piece
        val = p["val"].reshape(-1, self.blocksize[0] * self.blocksize[1]) if self.format == "bsr" else p["val"]
        rows = self._rows() if self.format == "coo" else None
        ptr = None if self.format == "coo" else p["ptr"]
        return plan.Remap(self, ex, len(p["ptr"]) - 1, ptr, p["idx"], val, rows, starts, ld)

    # ------------------------------------------------------------ for tests and inspection

    def local(self):
        """This rank's piece as a scipy matrix: its rows (m_local x n) by
        rows (DIA by rows too), its columns (m x n_local) by columns, its
        diagonals (m x n) DIA by diagonals."""
        self._live()
        lo, nlines = self._dia_rows() if self.format == "dia" else (self.lo, self.line_counts[self._ctx.rank])
        return formats.to_scipy(self.format, self.shape, self.uplo, self.blocksize, self._piece, lo, nlines)

    def to_scipy(self, root=0):
        """The whole matrix as CSR on root (None elsewhere); collective."""
        ctx = self._live()
        mine = sp.coo_array(self.local())
        r, c = mine.row, mine.col
        if self.axis == "row":
            r = r + self.lo
        elif self.axis == "col":
            c = c + self.lo
        parts = self.comm.gather((r, c, mine.data), root=root)
        if ctx.rank != root:
            return None
        rows, cols, vals = (np.concatenate([p[i] for p in parts]) for i in range(3))
        return sp.csr_array((vals.astype(self.dtype), (rows, cols)), shape=self.shape)

    def __repr__(self):
        state = "freed" if self._freed else "%d ranks" % self._ctx.size
        fmt = self.format if self.split is None else "%s by %s" % (self.format, self.split)
        return "<pgascol.sparse.SparseMatrix %dx%d %s %s, %d nonzeros, %s>" % (
            self.shape[0], self.shape[1], fmt, self.dtype, self.nnz, state)


# ---------------------------------------------------------------- construction

def from_scipy(comm, A, root=0, format="csr", blocksize=None, split=None):
    """Distribute scipy.sparse matrix A (collective): held by `root` (A is
    ignored elsewhere: pass None), or by every rank with root=None
    (replicated: each rank takes its piece, nothing moves). split: how
    format dia is distributed, "diagonals" (the default: cyclically, partial
    products summed by Reduce_scatter) or "rows" (row blocks balanced by
    stored entries, y written in place, x by halo); refused for the other
    formats, which have one distribution each."""
    ctx = context.of(comm)
    fmt = format.lower() if isinstance(format, str) else format

    def prepare():
        if root is not None and not 0 <= operator.index(root) < ctx.size:
            raise ArgumentError("root %r out of range for %d ranks" % (root, ctx.size))
        how = formats.split_of(fmt, split) if fmt in formats.FORMATS else None
        key = (root, fmt, None if blocksize is None else tuple(blocksize), how)
        if root is not None and ctx.rank != root:
            return key, None            # A is significant on the root only (mpi4py's rule)
        G = formats.check(A, fmt, blocksize)
        return key, (G, formats.split(G, fmt, ctx.size, how))
    mine = agree(comm, "pgascol.sparse.from_scipy", prepare, ctx.barrier)
    built = plan.Guard()                # the steps after the agreement (_made: their verdict)
    if root is None:
        G, (counts, fields) = mine
        meta = built.run(_meta, G, fmt, counts, fields, split)
        arrays = built.run(lambda: [_own_slice(a, cnt, ctx.rank) for (a, _, _), cnt in zip(fields, meta["counts"])])
    else:
        meta = comm.bcast(None if mine is None else built.run(_meta, mine[0], fmt, *mine[1], split), root=root)
        arrays = None
        if meta is not None:            # (None: it failed on the root)
            fields = None if mine is None else mine[1][1]
            arrays = [_scatter(comm, None if fields is None else fields[i][0], cnt, dt, root, built)
                      for i, (cnt, dt) in enumerate(zip(meta["counts"], meta["dtypes"]))]
    return _made(comm, "pgascol.sparse.from_scipy", built, meta, arrays)


def from_local_rows(comm, rows, shape=None, format="csr", split=None):
    """Each rank's own consecutive rows (a scipy matrix of its rows, all
    columns; ranks in row order): no data moves. format: a row format csr
    or coo, or dia with split="rows" (by diagonals, data would move:
    from_scipy makes that one)."""
    ctx = context.of(comm)
    fmt = format.lower() if isinstance(format, str) else format

    def prepare():
        if fmt not in ("csr", "coo", "dia"):
            raise ArgumentError("from_local_rows makes format csr, coo or dia, not %r" % (fmt,))
        if formats.split_of(fmt, split) not in (None, "rows"):
            raise ArgumentError('from_local_rows makes dia split by rows only: pass split="rows" '
                                '(from_scipy splits by diagonals)')
        G = formats.check(rows, "csr", None)
        return (G.shape[1], np.dtype(G.dtype).str, fmt, split, None if shape is None else tuple(shape)), G
    G = agree(comm, "pgascol.sparse.from_local_rows", prepare, ctx.barrier)
    counts = comm.allgather(G.shape[0])
    m = sum(counts)
    shape = (m, G.shape[1]) if shape is None else tuple(shape)
    if shape != (m, G.shape[1]):        # (the same verdict on every rank: counts and shape agreed)
        raise ArgumentError("shape %r, but the ranks' rows make %r" % (shape, (m, G.shape[1])))
    nnz = comm.allreduce(G.nnz)
    built = plan.Guard()
    fields = built.run(formats.local_rows, G, fmt, sum(counts[:ctx.rank]))
    meta = dict(shape=shape, dtype=np.dtype(G.dtype).str, format=fmt, uplo=None, blocksize=None, nnz=nnz, lines=counts,
                split=split)
    return _made(comm, "pgascol.sparse.from_local_rows", built, meta, fields and [f[0] for f in fields])


def _meta(G, fmt, counts, fields, split=None):
    """What every rank needs before receiving its piece: the elements of
    each field per rank and their dtypes (indices int32 where they fit)."""
    idt = formats.index_dtype(*G.shape, G.nnz if fmt != "sky" else len(fields[2][0]))
    bounds = np.concatenate(([0], np.cumsum(counts)))
    ptr = np.concatenate(([0], np.cumsum(fields[0][0])))       # where each line's entries start
    per = []
    for a, kind, unit in fields:
        if isinstance(kind, list):                            # given per rank (DIA)
            per.append(kind)
            continue
        ends = bounds if kind == "line" else ptr[bounds]
        per.append((np.diff(ends) * unit).tolist())
    dtypes = [idt.str, idt.str, np.dtype(G.dtype).str]
    return dict(shape=G.shape, dtype=np.dtype(G.dtype).str, format=fmt, uplo=formats.uplo_of(G, fmt),
                blocksize=G.blocksize if fmt == "bsr" else None, nnz=G.nnz, lines=counts, counts=per,
                dtypes=dtypes, split=formats.split_of(fmt, split))


def _own_slice(a, counts, rank):
    lo = sum(counts[:rank])
    return a[lo:lo + counts[rank]]


def _scatter(comm, a, counts, dtype, root, built):
    """Scatterv of one field: rank r receives counts[r] elements. A root
    whose preparation failed (built) still sends (zeros)."""
    dt = np.dtype(dtype)
    recv = np.empty(counts[comm.Get_rank()], dt)
    send = None
    if comm.Get_rank() == root:
        displs = np.concatenate(([0], np.cumsum(counts)[:-1])).tolist()
        data = built.run(np.ascontiguousarray, a, dt)
        send = [np.zeros(sum(counts), dt) if data is None else data, (counts, displs), from_numpy_dtype(dt)]
    comm.Scatterv(send, [recv, from_numpy_dtype(dt)], root=root)
    return recv


def _made(comm, what, built, meta, arrays):
    """The matrix, once every rank knows that building it went well on all
    (one Allreduce); else OperationFailedError on every rank, no matrix
    made: a failure after the argument check on one rank (built) ends the
    others at once instead of leaving them in a collective."""
    A = None if meta is None else built.run(_piece_matrix, comm, meta, arrays)    # (None: failed on the root)
    if comm.allreduce(int(built.exc is not None)):
        plan.fail_everywhere(comm, built.exc, what, "no matrix was made; the communicator remains usable")
    A._mpi = MPI.Intracomm(comm).Dup()      # the halo's messages: never mixed with the caller's
    return A


def _piece_matrix(comm, meta, arrays):
    """The SparseMatrix from this rank's fields: (lengths, idx/first, val)."""
    idt = formats.index_dtype(*meta["shape"], meta["nnz"], sum(len(a) for a in arrays[2:]))
    length, idx, val = arrays
    ptr = np.zeros(len(length) + 1, idt)
    np.cumsum(length, out=ptr[1:])
    piece = dict(ptr=ptr, idx=np.ascontiguousarray(idx, idt), val=np.ascontiguousarray(val, meta["dtype"]))
    return SparseMatrix(comm, meta["shape"], meta["dtype"], meta["format"], meta["uplo"],
                        None if meta["blocksize"] is None else tuple(meta["blocksize"]), meta["nnz"],
                        meta["lines"], piece, meta.get("split"))
