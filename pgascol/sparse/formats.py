"""The six storage formats: how a global scipy matrix is checked, split
into the ranks' pieces, and how a piece is rebuilt as scipy for local().

A piece is `lines` (the compressed dimension: rows of CSR, COO, BSR and
lower skyline and of DIA split by rows, columns of CSC and upper skyline,
diagonals of DIA split by diagonals) and its
arrays. `split()` returns the global arrays reordered so that each rank's
piece is one contiguous slice of each (what Scatterv sends), with the
number of lines per rank; no Python loop over lines anywhere.

Fields of a piece (every format has three, "len" being the lines'
lengths in entries, from which the receiver rebuilds the offsets):
  csr, csc: len, idx (the other dimension's global index), val
  coo:      len (rows, as CSR), idx (column), val
  bsr:      len (blocks per block row), idx (block column), val (R*C per block)
  sky:      len, first (global index of each line's first entry), val
  dia:      len (the rank's rows, per diagonal), idx (offset), val (per diagonal,
            its entries in the rank's rows: val[d*rows + i] is A[lo+i, lo+i+offset_d])

DIA has two splits (SPLITS, the `split` keyword of from_scipy):
- "diagonals" (the default, UPCBLAS's): the diagonals dealt cyclically,
  rank r keeping diagonals r, r+P, ... whole (all m rows: lo 0); every
  rank touches every row of y, so partial products are summed by
  Reduce_scatter (products.py).
- "rows": by row blocks, as the row formats: a rank keeps, of every
  diagonal that crosses its rows, the part in its rows, so that y = A x
  is written in place and x needs only a halo. Its fields' per-rank
  element counts are given explicitly (split's kind a list) since its
  lines (rows) are not its arrays' units (diagonals).
Both store a diagonal by row (zero where the column falls outside A), so
one pair of kernels (dia_gather, dia_scatter) serves both."""
import numpy as np
import scipy.sparse as sp

from ..errors import ArgumentError

FORMATS = ("csr", "coo", "bsr", "csc", "dia", "sky")
SPLITS = {"dia": ("diagonals", "rows")}     # the splits a format offers, its default first
DTYPES = tuple(np.dtype(t) for t in ("f4", "f8", "c8", "c16"))


def index_dtype(*sizes):
    """int32 when every size fits, else int64."""
    return np.dtype(np.int32 if max(sizes, default=0) < 2 ** 31 - 1 else np.int64)


def split_of(fmt, split):
    """The split format fmt takes (its default for None), or ArgumentError:
    an unknown one, or one given to a format that has a single distribution."""
    if split is None:
        return SPLITS.get(fmt, (None,))[0]
    if fmt not in SPLITS:
        raise ArgumentError("split is for format %s only (format %r has one distribution)"
                            % (" or ".join(SPLITS), fmt))
    if split not in SPLITS[fmt]:
        raise ArgumentError("split of format %s must be one of %s, not %r" % (fmt, ", ".join(SPLITS[fmt]), split))
    return split


def axis(fmt, uplo, split=None):
    """Which dimension the format distributes: "row", "col" or "diag"."""
    if split == "diagonals":
        return "diag"
    if fmt == "csc" or (fmt == "sky" and uplo == "U"):
        return "col"
    return "row"


def balanced(weights, nranks):
    """Line counts per rank, consecutive ranges, balanced by the lines'
    weights (their nonzeros): rank r's range ends at the first line whose
    middle lies past r/P of the weight. By line count when there is none."""
    n = len(weights)
    total = int(np.sum(weights))
    if total == 0:
        return [n // nranks + (r < n % nranks) for r in range(nranks)]
    middles = np.cumsum(weights) - np.asarray(weights) / 2
    targets = total * np.arange(1, nranks) / nranks
    bounds = np.concatenate(([0], np.searchsorted(middles, targets, side="right"), [n]))
    return np.diff(bounds).tolist()


def even(n, nranks, unit=1):
    """n split as evenly as units of `unit` allow."""
    u = n // unit
    return [(u // nranks + (r < u % nranks)) * unit for r in range(nranks)]


def check(A, fmt, blocksize):
    """The canonical global matrix in format fmt (sky: CSR for lower, CSC for
    upper), or ArgumentError naming what is wrong with A."""
    if not sp.issparse(A):
        raise ArgumentError("A must be a scipy.sparse matrix or array, not %s" % type(A).__name__)
    if A.ndim != 2:
        raise ArgumentError("A must be 2-D, not of shape %r" % (A.shape,))
    if np.dtype(A.dtype) not in DTYPES:
        raise ArgumentError("A has dtype %s: float32, float64, complex64 or complex128 only" % A.dtype)
    if fmt not in FORMATS:
        raise ArgumentError("format must be one of %s, not %r" % (", ".join(FORMATS), fmt))
    if A.format in ("csr", "csc"):
        _check_compressed(A)
    if fmt == "bsr":
        R, C = _blocksize(A, blocksize)
        return sp.bsr_array(A, blocksize=(R, C)) if A.format != "bsr" or A.blocksize != (R, C) else A
    if blocksize is not None:
        raise ArgumentError("blocksize is for format bsr only")
    if fmt == "sky":
        return _triangular(A)
    if fmt == "coo":
        B = sp.csr_array(A)          # row-sorted, duplicates summed
        B.sum_duplicates()
        return B
    B = getattr(sp, fmt + "_array")(A)
    if fmt != "dia":
        B.sum_duplicates()
    return B


def _check_compressed(A):
    """A CSR or CSC as given: offsets, indices in range, sorted, no duplicates."""
    lines, other = A.shape if A.format == "csr" else A.shape[::-1]
    ptr, idx = np.asarray(A.indptr), np.asarray(A.indices)
    if ptr.shape != (lines + 1,) or ptr[0] != 0 or (np.diff(ptr) < 0).any() or ptr[-1] > len(idx) \
            or len(A.data) < ptr[-1]:
        raise ArgumentError("A is a malformed %s: indptr must be %d non-decreasing offsets from 0 "
                            "within its %d indices" % (A.format.upper(), lines + 1, len(idx)))
    idx = idx[:ptr[-1]]
    if idx.size and (idx.min() < 0 or idx.max() >= other):
        raise ArgumentError("A is a malformed %s: an index is out of range [0, %d)" % (A.format.upper(), other))
    steps = np.diff(idx)
    starts = ptr[1:-1][(ptr[1:-1] > 0) & (ptr[1:-1] < len(idx))] - 1     # steps across a line boundary
    inside = np.ones(len(steps), bool)
    inside[starts] = False
    if (steps[inside] <= 0).any():
        raise ArgumentError("A is a %s whose indices are unsorted or repeated within a line: "
                            "call A.sum_duplicates() (or sort_indices()) first" % A.format.upper())


def _blocksize(A, blocksize):
    R, C = blocksize if blocksize is not None else (A.blocksize if A.format == "bsr" else (1, 1))
    if R < 1 or C < 1 or A.shape[0] % R or A.shape[1] % C:
        raise ArgumentError("blocksize %r must divide A's shape %r" % ((R, C), A.shape))
    return int(R), int(C)


def _triangular(A):
    C = sp.coo_array(A)
    C.sum_duplicates()
    if (C.col <= C.row).all():
        return sp.csr_array(C)
    if (C.col >= C.row).all():
        return sp.csc_array(C)
    raise ArgumentError("format sky holds a triangular matrix (lower: by rows, upper: by columns); "
                        "A has entries on both sides of its diagonal")


def uplo_of(G, fmt):
    return ("L" if G.format == "csr" else "U") if fmt == "sky" else None


def line_weights(G, fmt):
    """Entries per line of the canonical global matrix (skyline: its
    envelope; DIA: the diagonals crossing each row inside A, its work)."""
    if fmt == "dia":
        m, n = G.shape
        starts, ends = _dia_rows(G.offsets, m, n)
        edges = np.zeros(m + 1, np.int64)
        np.add.at(edges, starts, 1)
        np.add.at(edges, ends, -1)
        return np.cumsum(edges[:-1])
    if fmt == "sky":
        return _skyline(G)[0]
    return np.diff(G.indptr)


def _dia_rows(offsets, m, n):
    """The rows [start, end) in which each diagonal has its column inside A."""
    off = np.asarray(offsets, np.int64)
    starts = np.clip(-off, 0, m)
    return starts, np.maximum(np.clip(n - off, 0, m), starts)


def _skyline(G):
    """A triangular CSR (lower) or CSC (upper) as skyline lines: each
    line's length and first index, and the envelope's values (zeros inside
    it stored), by line. A line runs from its first nonzero to the diagonal."""
    lines, other = G.shape if G.format == "csr" else G.shape[::-1]
    ptr, idx = G.indptr, G.indices
    counts = np.diff(ptr)
    line = np.repeat(np.arange(lines), counts)
    first = np.arange(lines, dtype=np.int64)
    nonempty = counts > 0
    first[nonempty] = idx[ptr[:-1][nonempty]]           # sorted: the line's smallest index
    last = np.minimum(np.arange(lines), other - 1)      # the diagonal (a wide/tall matrix: the last index)
    length = np.where(nonempty, last - first + 1, 0)
    offsets = np.concatenate(([0], np.cumsum(length)))
    val = np.zeros(offsets[-1], G.dtype)
    val[offsets[line] + idx - first[line]] = G.data
    return length, first, val


def split(G, fmt, nranks, how=None):
    """(lines per rank, [(global array, kind, unit)]): each rank's piece a
    contiguous slice of every array; kind "line" or "entry" (per line, per
    entry) or the elements of each rank (DIA by rows). unit: elements per
    entry (R*C for BSR values, m for DIA's by diagonals). how: DIA's split."""
    if fmt == "dia" and how != "rows":
        return _dia_cyclic(G, nranks)
    counts = balanced(line_weights(G, fmt), nranks)
    if fmt == "dia":
        return counts, _dia_split(G, counts)
    if fmt == "sky":
        length, first, val = _skyline(G)
        return counts, [(length, "line", 1), (first, "line", 1), (val, "entry", 1)]
    unit = G.blocksize[0] * G.blocksize[1] if fmt == "bsr" else 1
    return counts, [(np.diff(G.indptr), "line", 1), (G.indices, "entry", 1),
                    (np.ascontiguousarray(G.data).reshape(-1), "entry", unit)]


def local_rows(G, fmt, lo):
    """The fields of one rank's own rows G (CSR, rows lo.. of A) as a piece
    of format csr, coo or dia by rows (offsets made global: the column
    minus A's row, not G's)."""
    if fmt != "dia":
        return split(G, "csr", 1)[1]
    lens, off, val = _dia_split(sp.dia_array(G), [G.shape[0]])
    return [lens, (off[0] - lo, off[1], off[2]), val]


def _dia_by_row(G):
    """(offsets, starts, ends, byrow): byrow[d, i] = A[i, i + offset_d]
    (zero outside A), the rows [start, end) where diagonal d lies in A."""
    m, n = G.shape
    off = np.asarray(G.offsets, np.int64)
    starts, ends = _dia_rows(off, m, n)
    byrow = np.zeros((len(off), m), G.dtype)
    for d, o in enumerate(off):                     # (a loop over diagonals, not rows)
        j0, j1 = starts[d] + o, min(ends[d] + o, G.data.shape[1])
        if j1 > j0:
            byrow[d, starts[d]:starts[d] + j1 - j0] = G.data[d, j0:j1]
    return off, starts, ends, byrow


def _dia_cyclic(G, nranks):
    """DIA's fields by diagonals: diagonal d to rank d % P, whole (m values
    by row); a rank's diagonals in their order."""
    off, _, _, byrow = _dia_by_row(G)
    deal = np.arange(len(off)) % nranks
    order = np.argsort(deal, kind="stable")
    m = G.shape[0]
    counts = np.bincount(deal, minlength=nranks).tolist()
    return counts, [(np.full(len(off), m), "line", 1), (off[order], "line", 1),
                    (byrow[order].reshape(-1), "line", m)]


def _dia_split(G, counts):
    """DIA's fields by row blocks: rank r keeps the diagonals that cross its
    rows [lo, hi) inside A, each as its hi - lo values by row."""
    off, starts, ends, byrow = _dia_by_row(G)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    lens, offs, vals = [], [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):     # (a loop over ranks)
        keep = (np.maximum(starts, lo) < np.minimum(ends, hi)).nonzero()[0]
        lens.append(np.full(len(keep), hi - lo))
        offs.append(off[keep])
        vals.append(byrow[keep, lo:hi].reshape(-1))
    return [(np.concatenate(lens), [len(a) for a in lens], 1), (np.concatenate(offs), [len(a) for a in offs], 1),
            (np.concatenate(vals), [len(a) for a in vals], 1)]


def to_scipy(fmt, shape, uplo, blocksize, piece, lo, nlines):
    """A piece as a scipy matrix of the global shape restricted to its lines
    (rows [lo, lo+nlines) by rows, columns by columns; DIA: its diagonals)."""
    ptr, idx, val = piece["ptr"], piece["idx"], piece["val"]
    m, n = shape
    if fmt == "dia":                                # my rows, as scipy's DIA of nlines x n
        off = np.asarray(idx, np.int64)
        starts, ends = _dia_rows(off + lo, nlines, n)
        data = np.zeros((len(off), n), val.dtype)
        rows = val.reshape(len(off), nlines)
        for d, o in enumerate(off + lo):            # local row i, column i + o: data[d, i + o]
            data[d, starts[d] + o:ends[d] + o] = rows[d, starts[d]:ends[d]]
        return sp.dia_array((data, off + lo), shape=(nlines, n))
    if fmt == "sky":
        length = np.diff(ptr)
        line = np.repeat(np.arange(nlines), length)
        other = (np.arange(len(val)) - ptr[:-1][line]) + idx[line]
        keep = val != 0
        if uplo == "L":
            return sp.csr_array((val[keep], (line[keep], other[keep])), shape=(nlines, n))
        return sp.csc_array((val[keep], (other[keep], line[keep])), shape=(m, nlines))
    if fmt == "csc":
        return sp.csc_array((val, idx, ptr), shape=(m, nlines))
    if fmt == "bsr":
        R, C = blocksize
        return sp.bsr_array((val.reshape(-1, R, C), idx, ptr), shape=(nlines * R, n))
    A = sp.csr_array((val, idx, ptr), shape=(nlines, n))
    return A.tocoo() if fmt == "coo" else A
