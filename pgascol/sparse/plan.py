"""The communication plan of an aligned product with explicit indices
(CSR, CSC transposed, COO, BSR): built once per matrix, its remapping once
per layout of x (row stride and the node segment's part offsets).

Exchange (collective, once): the x entries ("units": columns, BSR block
columns) that the caller's lines touch on other nodes, grouped by owner
(ascending: the Irregular layout is monotonic), and, by one alltoall, the
rows of its own part that each other rank needs from it.

Remap (local): the piece split by the owner's node, PETSc's diagonal and
off-diagonal parts. On the node: indices become element offsets into the
node's shared segment of x (x.node_segment()), read in place by the
kernel. Off the node: indices into the halo buffer, filled by Irecv of
exactly those entries, posted before the node part is multiplied."""
import numpy as np
from mpi4py import MPI

from ..errors import OperationFailedError
from ..pgas import GlobalArray
from . import _kernels, formats


class Exchange:
    """direct: per rank, whether the units it owns are accessed in place
    (gather: the ranks of my node, read in their shared segment; scatter:
    myself only, as other ranks' rows are written by their owners) rather
    than through the halo. The same on every rank when all are direct."""

    def __init__(self, A, xcounts, units, unit, direct, guard):
        """Collective. The local steps run under guard (a rank whose own
        step failed still takes its part in the alltoall, asking for
        nothing); A._plan then gives the verdict (verdict())."""
        self.unit = unit
        self.halo, self.sources, self.send = np.zeros(0, np.int64), [], []
        wanted = guard.run(self._split, xcounts, units, direct, A._ctx.size)
        if all(direct):
            return
        asked = A._mpi.alltoall(wanted if wanted is not None else [[]] * A._ctx.size)
        guard.run(self._asked, asked, A._ctx.rank)

    def _split(self, xcounts, units, direct, nranks):
        """Which units are read in place, which come by the halo, from whom:
        the units wanted of each rank."""
        unit = self.unit
        self.xoff = np.concatenate(([0], np.cumsum(xcounts))).astype(np.int64)
        self.owner = np.searchsorted(self.xoff, units.astype(np.int64) * unit, side="right") - 1
        self.direct = np.asarray(direct, bool)
        self.on = self.direct[self.owner] if len(units) else np.ones(0, bool)
        self.halo = np.unique(units[~self.on]).astype(np.int64)
        hown = np.searchsorted(self.xoff, self.halo * unit, side="right") - 1
        wanted = [[] for _ in range(nranks)]
        for r in np.unique(hown):
            a, b = np.searchsorted(hown, [r, r + 1])
            self.sources.append((int(r), int(a), int(b)))
            wanted[r] = self.halo[a:b]
        return wanted

    def _asked(self, asked, me):
        """The rows of my part that each rank asked for."""
        unit = self.unit
        for s, units_s in enumerate(asked):
            if len(units_s):
                rows = (np.asarray(units_s, np.int64)[:, None] * unit - self.xoff[me] + np.arange(unit)).reshape(-1)
                self.send.append((s, rows))

    def verdict(self, A, guard, what):
        """Collective, once per plan: the entries of all ranks' halos
        together, or OperationFailedError on every rank when building the
        plan failed on any (one Allreduce either way)."""
        counts = np.array([len(self.halo) * self.unit, guard.exc is not None], np.int64)
        A._mpi.Allreduce(MPI.IN_PLACE, counts)
        if counts[1]:
            fail_everywhere(A._mpi, guard.exc, what, "no plan was kept; the matrix, the operands and the "
                            "communicator remain usable")
        return int(counts[0])

    @staticmethod
    def narrow(total, n):
        """Whether the halos of all ranks together (total, from verdict())
        hold at most half of the n entries of the vector: then the reversed
        exchange (scatter) moves less than a Reduce_scatter of partial
        vectors of full length. NAS CG's random columns at np=2 touch every row."""
        return total * 2 <= n

    def start(self, A, X, k, guard):
        """Post the receives and the sends: (halo buffer, requests, buffers
        in flight). A rank whose packing failed (guard) still sends, empty
        messages: its peers' receives complete, their halo undefined (the
        product then fails on every rank, products._close)."""
        halo = np.empty(len(self.halo) * self.unit * k, A.dtype)
        bufs = guard.run(self._pack, X)
        if bufs is None:
            bufs = [np.empty(0, A.dtype)] * len(self.send)
        w = self.unit * k
        reqs = [(r, A._mpi.Irecv(halo[a * w:b * w], source=r, tag=7)) for r, a, b in self.sources]
        reqs += [(s, A._mpi.Isend(buf, dest=s, tag=7)) for (s, _), buf in zip(self.send, bufs)]
        return halo, reqs, bufs

    def _pack(self, X):
        """The rows of my part of X that each rank asked for, one buffer each."""
        mine = _part(X)
        return [np.ascontiguousarray(mine[rows]) for _, rows in self.send]

    @staticmethod
    def finish(A, reqs):
        for r, req in reqs:
            A._ctx.wait_request(req, "the halo exchange with rank %d" % r)


def _part(X):
    """The caller's rows of X, as a (rows, k) view."""
    return GlobalArray.local(X.a).reshape(-1, X.ld)[:, :X.k]


class Remap:
    """The piece split into its node part (segment offsets) and off-node part (halo indices)."""

    def __init__(self, A, ex, lines, ptr, units, val, rows, starts, ld):
        on = ex.on
        elem = starts[ex.owner[on]] + (units[on].astype(np.int64) * ex.unit - ex.xoff[ex.owner[on]]) * ld
        idt = formats.index_dtype(int(elem.max()) if len(elem) else 0, len(val))
        self.node = _part_of(on, lines, ptr, elem, val, rows, idt)
        off = ~on
        self.has_off = bool(off.any())
        if self.has_off:
            h = np.searchsorted(ex.halo, units[off])
            self.off = _part_of(off, lines, ptr, h, val, rows, idt)


class RunRemap:
    """A DIA or skyline piece's runs (dia_runs, sky_runs: stretches of
    consecutive indices of x, or of y when scattering, that one rank owns)
    split as Remap splits a piece: those on the node, their base an element
    offset into the node's segment (row stride ld), and those of the halo,
    their base an index into the halo."""

    def __init__(self, A, ex, starts, ld):
        runs = dia_runs if A.format == "dia" else sky_runs
        line, q0, q1, first, owner = runs(A, ex.xoff)
        on = ex.direct[owner]
        base = np.where(on, starts[owner] + (first - ex.xoff[owner]) * ld, np.searchsorted(ex.halo, first))
        table = np.stack([line, q0, q1, base], 1).astype(np.int64)
        self.node = _runs_part(A, table[on])
        self.has_off = not on.all()
        self.off = _runs_part(A, table[~on])


def _runs_part(A, table):
    """What the run kernels take: (runs flat, values, rows of the piece or its offsets)."""
    p = A._piece
    return table.reshape(-1), p["val"], (A._dia_rows()[1] if A.format == "dia" else p["ptr"])


def sky_runs(A, bounds):
    """A skyline piece read as runs: each line's stretch of indices first ..
    first + length - 1 cut where it crosses a bound (a rank's part):
    arrays (line, q0, q1, first index, r), values q0 <= q < q1 of the line."""
    bounds = np.asarray(bounds, np.int64)
    p = A._piece
    lens = np.diff(p["ptr"]).astype(np.int64)
    lines = np.nonzero(lens)[0]
    f, e = p["idx"][lines].astype(np.int64), p["idx"][lines] + lens[lines]
    r0 = np.searchsorted(bounds, f, side="right") - 1
    cnt = np.searchsorted(bounds, e - 1, side="right") - r0
    at = np.repeat(np.arange(len(lines)), cnt)
    r = r0[at] + np.arange(len(at)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    u0, u1 = np.maximum(f[at], bounds[r]), np.minimum(e[at], bounds[r + 1])
    return lines[at], u0 - f[at], u1 - f[at], u0, r


def dia_runs(A, bounds):
    """A DIA piece read by runs: for every diagonal d and every range
    [bounds[r], bounds[r+1]) of indices of x (a rank's part), the rows i0 <=
    i < i1 of my piece whose column i + lo + offset_d lies in it, from index
    `first` on: arrays (d, i0, i1, first, r). bounds from 0 to n: rows
    whose column falls outside A are in no run. (Split by diagonals, my
    piece's rows are all of A's: lo 0.)"""
    bounds = np.asarray(bounds, np.int64)
    lo, nl = A._dia_rows()
    shift = A._piece["idx"].astype(np.int64)[:, None] + lo       # row i's column: i + shift
    i0 = np.clip(bounds[None, :-1] - shift, 0, nl)
    i1 = np.clip(bounds[None, 1:] - shift, 0, nl)
    d, r = np.nonzero(i1 > i0)
    return d, i0[d, r], i1[d, r], i0[d, r] + shift[d, 0], r


def dia_part(A, n):
    """The runs of my DIA piece over the whole of an x of n indices (one
    part, base the index itself): for replicated or whole x, or a partial y."""
    d, i0, i1, first, _ = dia_runs(A, [0, n])
    return _runs_part(A, np.stack([d, i0, i1, first], 1).astype(np.int64))


def _part_of(mask, lines, ptr, idx, val, rows, idt):
    """(ptr, idx, val, rows) of the entries in mask, in their order."""
    if ptr is not None:
        line = np.repeat(np.arange(lines), np.diff(ptr))
        counts = np.bincount(line[mask], minlength=lines)
        p = np.zeros(lines + 1, idt)
        np.cumsum(counts, out=p[1:])
    else:
        p = None
    v = val if mask.all() else val[mask]
    r = None if rows is None else (rows if mask.all() else rows[mask]).astype(idt)
    return p, np.ascontiguousarray(idx, idt), np.ascontiguousarray(v).reshape(-1), r


def multiply(A, ex, rm, X, y, ldy, alpha, beta, conj, guard):
    """y (my rows, row stride ldy) = beta*y + alpha op(A) X: the halo
    posted, the node part multiplied meanwhile, then the off-node part.
    A failure of this rank's packing or kernels (guard) skips its local
    work but not its messages."""
    k = X.k
    xs, _ = X.a.node_segment()
    halo, reqs, bufs = ex.start(A, X, k, guard)
    if rm is not None:                  # (None: its remap failed on this rank, guard holds why)
        guard.run(kernel, A, rm.node, xs, 1, X.ld, y, ldy, k, alpha, beta, conj)
    ex.finish(A, reqs)                  # bounded; the send buffers (bufs) live until here
    if rm is not None and rm.has_off:
        guard.run(kernel, A, rm.off, halo, k * ex.unit, k, y, ldy, k, alpha, A.dtype.type(1), conj)


def scatter(A, ex, rm, X, Y, alpha, beta, conj, guard):
    """y = beta*y + alpha op(A) X for a product whose rows of op(A) are not
    the matrix's lines (CSC; CSR and COO transposed): the exchange
    reversed. My lines' contributions to my own rows of y are added in
    place; those to other ranks' rows go to the halo buffer (zeroed), sent
    to their owners, who add what they receive: only the rows touched move,
    where a Reduce_scatter would sum a partial y of full length."""
    k, unit = X.k, ex.unit
    x = GlobalArray.local(X.a)          # my lines' rows of X, row stride X.ld
    ys, _ = Y.a.node_segment()
    mine = _part(Y)
    halo = np.zeros(len(ex.halo) * unit * k, A.dtype)
    got = [np.empty(len(rows) * k, A.dtype) for _, rows in ex.send]
    reqs = [(s, A._mpi.Irecv(buf, source=s, tag=8)) for (s, _), buf in zip(ex.send, got)]
    if rm is not None and rm.has_off:   # (None: its remap failed on this rank, guard holds why)
        guard.run(scatter_kernel, A, rm.off, x, X.ld, halo, k * unit, k, k, alpha, conj)
    w = unit * k
    reqs += [(r, A._mpi.Isend(halo[a * w:b * w], dest=r, tag=8)) for r, a, b in ex.sources]
    guard.run(axpby, mine, beta, 0)
    if rm is not None:
        guard.run(scatter_kernel, A, rm.node, x, X.ld, ys, 1, Y.ld, k, alpha, conj)
    ex.finish(A, reqs)                  # bounded; the halo (sent) lives until here
    for (_, rows), buf in zip(ex.send, got):
        guard.run(_add_rows, mine, rows, buf.reshape(-1, k))


def _add_rows(mine, rows, add):
    mine[rows] += add                   # rows: distinct (one sender's), so no add.at needed


def scatter_kernel(A, part, x, ldx, y, sy, ldy, k, alpha, conj):
    """y[idx_p*sy + t] += alpha op(a_p) x[line*ldx + t] for a remapped part
    (BSR: a block's column c at y[idx_p*sy + c*ldy]; DIA, skyline: a run's
    entries from y[base*sy] on, row stride ldy)."""
    if A.format == "dia":
        runs, val, nl = part
        _kernels.dia_scatter(runs, val, nl, x, ldx, y, sy, ldy, k, alpha, conj)
        return
    if A.format == "sky":
        runs, val, ptr = part
        _kernels.sky_runs_scatter(runs, ptr, val, x, ldx, y, sy, ldy, k, alpha, conj)
        return
    ptr, idx, val, rows = part
    if A.format == "bsr":
        R, C = A.blocksize
        _kernels.bsr_scatter(ptr, idx, val, R, C, x, ldx, y, sy, ldy, k, alpha, conj)
    elif A.format == "coo":
        _kernels.coo(idx, rows, val, x, ldx, y, sy, k, alpha, conj)
    else:
        _kernels.csr_scatter(ptr, idx, val, x, ldx, y, sy, k, alpha, conj)


def fail_everywhere(comm, exc, what, consequence):
    """Collective, once the ranks know that some step failed on at least
    one of them: OperationFailedError on every rank, naming the failed ranks
    and their causes (one allgather), chained to this rank's own exception."""
    causes = comm.allgather(None if exc is None else "%s: %s" % (type(exc).__name__, exc))
    raise OperationFailedError("%s failed on %s; %s" % (what, ", ".join(
        "rank %d (%s)" % (r, c) for r, c in enumerate(causes) if c is not None), consequence)) from exc


class Guard:
    """The first exception of this rank's local work in a product. After
    it the rank skips its local work but keeps taking its part in the
    product's communication (placeholder data), so that every rank reaches
    the closing verdict (products._close), which raises on all of them, instead
    of the others waiting for this rank until PGASCOL_TIMEOUT."""

    def __init__(self):
        self.exc = None

    def run(self, fn, *args):
        """fn(*args), unless an earlier step failed; None if it or this fails."""
        if self.exc is None:
            try:
                return fn(*args)
            except Exception as exc:        # whatever it is, every rank must hear of it
                self.exc = exc
        return None


def kernel(A, part, x, sx, ldx, y, ldy, k, alpha, beta, conj):
    """y = beta*y + alpha op(part) x for an aligned part (ptr, idx, val, rows):
    x's entry for index i, column c at x[i*sx + c] (sx: x's stride per
    index, ldx its row stride where an index is an element offset; DIA: a
    run's rows from x[base*sx] on, row stride ldx)."""
    if A.format == "dia":
        runs, val, nl = part
        _kernels.dia_gather(runs, val, nl, x, sx, ldx, y, ldy, k, alpha, beta, conj)
        return
    ptr, idx, val, rows = part
    if A.format == "bsr":
        R, C = A.blocksize
        _kernels.bsr_gather(ptr, idx, val, R, C, x, sx, ldx, y, ldy, k, alpha, beta, conj)
    elif A.format == "coo":
        axpby(y.reshape(-1, ldy)[:, :k], beta, 0)
        _kernels.coo(rows, idx, val, x, sx, y, ldy, k, alpha, conj)
    else:
        _kernels.csr_gather(ptr, idx, val, x, sx, y, ldy, k, alpha, beta, conj)


def axpby(y, beta, add):
    """y = beta*y + add, y not read when beta is 0."""
    if beta == 0:
        y[...] = add
    else:
        if beta != 1:
            y *= beta
        y += add
