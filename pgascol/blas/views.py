"""Sub-vectors and sub-matrices of global arrays as BLAS operands (UPC's
rule: a view starts at a block boundary of its array, phase 0)."""
from ..errors import ArgumentError
from ..pgas import GlobalArray, Matrix
from .operands import Mat, Vec


def subvector(x, start, n):
    """Elements [start, start + n) of global vector x; start must begin a block."""
    if not isinstance(x, GlobalArray) or isinstance(x, Matrix):
        raise ArgumentError("subvector takes a global vector, not %r" % (x,))
    x._live()
    return Vec("x", x, start, n)


def submatrix(a, i, j, m, n):
    """The m x n block of pgascol.pgas.Matrix a at (i, j): by rows, row i must
    begin a block of rows; by columns, column j a block of columns."""
    if not isinstance(a, Matrix):
        raise ArgumentError("submatrix takes a pgascol.pgas.Matrix, not %r" % (a,))
    a._live()
    if not (0 <= i and 0 <= j and m >= 0 and n >= 0 and i + m <= a.rows and j + n <= a.cols):
        raise ArgumentError("submatrix (%d, %d) of %d x %d is outside the %d x %d matrix" % (i, j, m, n, a.rows, a.cols))
    return Mat("a", a, i * a.ld + j, m, n, a.ld, a.dist, a.bsize)
