"""Two-dimensional row-major matrices as views on global arrays, as UPCBLAS
uses them.

By rows (dist="row"): blocks of b rows, the UPC block factor b*ld. By
columns (dist="col"): blocks of b columns, with ld a multiple of b*P so
that column j lives on rank (j // b) % P in every row; the caller's part is
then an (m, ld / P) row-major matrix of its columns. Element (i, j) is
element i*ld + j of the underlying array."""
import operator

import numpy as np

from ..errors import ArgumentError, IndexOutOfRangeError
from . import context
from .array import GlobalArray, _agree
from .layout import BlockCyclic, Irregular


class Matrix(GlobalArray):
    """An m x n matrix of a global array of m*ld elements."""

    def __init__(self, comm, shape, dtype, block, dist, ld, fill, counts=None):
        ctx = context.of(comm)
        m, n, ld, layout = _agree(ctx, "pgascol.pgas.matrix",
                                  lambda: _prepare(ctx.size, shape, dtype, block, dist, ld, fill, counts))
        self.rows, self.cols, self.ld, self.dist, self.bsize = m, n, int(ld), dist, int(block)
        super().__init__(comm, layout, dtype, fill, "matrix")

    @property
    def shape(self):
        return (self.rows, self.cols)

    def local(self):
        """The caller's elements as a 2-D view: its rows (m_local x n) by
        rows, all rows of its columns (m x ld/P, padding included) by columns."""
        part = super().local()
        if self.dist == "row":
            return part.reshape(-1, self.ld)[:, :self.cols]
        return part.reshape(self.rows, -1) if self.rows else part.reshape(0, 0)

    def owner(self, i, j=None):
        return super().owner(self._flat(i, j))

    def local_index(self, i, j=None):
        return super().local_index(self._flat(i, j))

    def owned_rows(self):
        """By rows: the row ranges [lo, hi) of the caller's blocks."""
        if self.dist != "row":
            raise ArgumentError("owned_rows is for matrices distributed by rows")
        return [(lo // self.ld, -(-hi // self.ld)) for lo, hi in self.owned()]

    def owned_cols(self):
        """By columns: the column ranges [lo, hi) of the caller's blocks (in row 0)."""
        if self.dist != "col":
            raise ArgumentError("owned_cols is for matrices distributed by columns")
        return [(lo, min(hi, self.cols)) for lo, hi in self.owned() if lo < self.cols and hi <= self.ld]

    def _flat(self, i, j):
        if j is None:
            return i
        i, j = np.asarray(i), np.asarray(j)
        if (i < 0).any() or (i >= self.rows).any() or (j < 0).any() or (j >= self.cols).any():
            raise IndexOutOfRangeError("index out of range for a %d x %d matrix" % (self.rows, self.cols))
        return i * self.ld + j

    def _resolve(self, key):
        if not isinstance(key, tuple) or len(key) != 2:
            raise ArgumentError("a matrix takes two indices, A[i, j]")
        rows = self._axis(key[0], self.rows, "row")
        cols = self._axis(key[1], self.cols, "column")
        g = (rows[0][:, None] * self.ld + cols[0][None, :]).reshape(-1)
        if rows[1] and cols[1]:
            return g, None
        shape = tuple(len(a) for a, scalar in (rows, cols) if not scalar)
        return g, shape

    @staticmethod
    def _axis(k, n, what):
        if isinstance(k, (int, np.integer)):
            i = int(k) + (n if k < 0 else 0)
            if not 0 <= i < n:
                raise IndexOutOfRangeError("%s %d out of range (%d %ss)" % (what, k, n, what))
            return np.array([i], np.int64), True
        if isinstance(k, slice):
            return np.arange(*k.indices(n), dtype=np.int64), False
        a = np.asarray(k)
        if a.dtype.kind not in "iu" or a.ndim != 1:
            raise ArgumentError("%s indices must be an integer, a slice or a 1-D integer array" % what)
        a = np.where(a < 0, a + n, a).astype(np.int64)
        if a.size and (a.min() < 0 or a.max() >= n):
            raise IndexOutOfRangeError("%s index out of range (%d %ss)" % (what, n, what))
        return a, False

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            raise ArgumentError("a matrix takes two indices, A[i, j]")
        return super().__getitem__(key)


def matrix(comm, shape, dtype=np.float64, block=1, dist="row", ld=None, fill=0, counts=None):
    """Allocate (collectively) an m x n row-major matrix distributed by
    blocks of `block` rows (dist="row") or columns (dist="col"); or, by
    rows, counts=[...] rows per rank, one contiguous range each (the
    Irregular layout of m*ld elements, counts[r]*ld on rank r)."""
    return Matrix(comm, shape, dtype, block, dist, ld, fill, counts)


def _prepare(P, shape, dtype, block, dist, ld, fill, counts=None):
    """Check one rank's arguments: (their key, (m, n, ld, layout))."""
    m, n = (operator.index(x) for x in shape)
    if m < 0 or n < 0:
        raise ArgumentError("matrix shape must be non-negative, not %r" % (shape,))
    if dist not in ("row", "col"):
        raise ArgumentError('dist must be "row" or "col", not %r' % (dist,))
    if not isinstance(block, (int, np.integer)) or block < 1:
        raise ArgumentError("block must be a positive number of %ss, not %r" % (dist, block))
    np.array(fill, np.dtype(dtype))
    key = ((m, n), np.dtype(dtype).str, int(block), dist, ld, None if counts is None else tuple(counts))
    if dist == "row":
        if ld is None:
            ld = n
        elif ld < n:
            raise ArgumentError("ld %d is smaller than the %d columns" % (ld, n))
        if counts is not None:
            return key, (m, n, ld, _rows(P, m, ld, counts))
        return key, (m, n, ld, BlockCyclic(m * ld, P, block * ld if m * ld else 1))
    if counts is not None:
        raise ArgumentError('counts distributes rows: dist must be "row"')
    unit = block * P
    if ld is None:
        ld = max(-(-n // unit) * unit, unit)
    elif ld < n or ld % unit:
        raise ArgumentError("by columns, ld must be >= n and a multiple of block*P = %d (got %d)" % (unit, ld))
    return key, (m, n, ld, BlockCyclic(m * ld, P, block))


def _rows(P, m, ld, counts):
    """The Irregular layout of counts[r] rows of ld elements on rank r."""
    cs = [operator.index(c) for c in counts]
    if len(cs) != P or min(cs, default=0) < 0 or sum(cs) != m:
        raise ArgumentError("counts must be %d row counts >= 0 adding up to %d rows, not %r" % (P, m, counts))
    return Irregular([c * ld for c in cs])
