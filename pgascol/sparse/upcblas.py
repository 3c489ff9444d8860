"""UPCBLAS's sparse routines (Gonzalez-Dominguez's thesis, chapter 5), for
code ported from UPC: one entry point per operation, type and format,

    upc_blas_{s,d,c,z}susdot(x, indx, y, dst, thread_src)
    upc_blas_{s,d,c,z}susmv_<fmt>(transpose, alpha, <A's arrays>, x, y, thread_src)
    upc_blas_{s,d,c,z}susmm_<fmt>(transpose, alpha, <A's arrays>, B, C, thread_src)

with <fmt> and <A's arrays> (private numpy arrays, 0-based indices):

    csr: val, col_ind, row_ptr, m, n       csc: val, row_ind, col_ptr, m, n
    coo: val, row_ind, col_ind, m, n       bsr: val, col_ind, row_ptr, m, n, r, c
    dia: val, distance, m, n               sky: val, ptr, n, uplo

(bsr: val holds the r x c blocks by rows, block after block; dia: val is
(len(distance), n), scipy.sparse.dia's layout, distance > 0 above the
diagonal; sky: the values of each row (uplo "L") or column ("U") from its
first nonzero to the diagonal, ptr of n + 1 offsets.) SparseBLAS's
semantics: y = alpha op(A) x + y and C = alpha op(A) B + C; transpose is
0, 1, 2 (or "N", "T", "C"). x and y are global arrays, B and C
row-distributed matrices (pgascol.pgas.Matrix); susdot writes its result to
dst, a (global array, offset) pair, and returns it.

The sparse operands live in private memory on rank thread_src, or on every
rank (replicated) when thread_src is the number of ranks: UPCBLAS's
semantics. As in UPCBLAS every call distributes them anew: it builds a
temporary matrix (sparse.from_scipy in the thesis's distributions: rows
or columns balanced by nonzeros, DIA's diagonals dealt cyclically),
multiplies and frees it. This is the slow path, kept for fidelity with ported code;
a loop that multiplies by one matrix should create the SparseMatrix once
(sparse.from_scipy) and call sparse.mv / sparse.mm, which does not move the
matrix again (pgascol-bench sparse measures both)."""
import numpy as np
import scipy.sparse as sp

from ..blas.upcblas import _store
from ..errors import ArgumentError
from ..pgas import GlobalArray
from .matrix import from_scipy
from .level1 import dot
from .products import mm, mv

DTYPES = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}
TRANSPOSE = {0: "N", 1: "T", 2: "C", "N": "N", "T": "T", "C": "C"}


def _comm_of(arr):
    if not isinstance(arr, GlobalArray):
        raise ArgumentError("a dense operand must be a pgascol.pgas global array, not %s" % type(arr).__name__)
    return arr._live().comm


def _root(comm, thread_src):
    P = comm.Get_size()
    if isinstance(thread_src, bool) or not isinstance(thread_src, (int, np.integer)) or not 0 <= thread_src <= P:
        raise ArgumentError("thread_src must be a rank in [0, %d] (%d: replicated), not %r" % (P, P, thread_src))
    return None if thread_src == P else int(thread_src)


def _skyline(val, ptr, n, uplo, dtype):
    """UPCBLAS's skyline arrays as scipy CSR (lower, by rows) or CSC (upper, by columns)."""
    ptr = np.asarray(ptr, np.int64)
    if uplo not in ("L", "U") or ptr.shape != (n + 1,) or ptr[0] != 0 or (np.diff(ptr) < 0).any() \
            or (np.diff(ptr) > np.arange(1, n + 1)).any() or ptr[-1] != len(val):
        raise ArgumentError("sky: uplo must be 'L' or 'U' and ptr %d offsets from 0 to len(val), "
                            "line i holding at most i + 1 values" % (n + 1))
    length = np.diff(ptr)
    line = np.repeat(np.arange(n), length)
    other = line - (ptr[line + 1] - 1 - np.arange(len(val)))       # the diagonal is each line's last value
    make = sp.csr_array if uplo == "L" else sp.csc_array
    pair = (line, other) if uplo == "L" else (other, line)
    return make((np.asarray(val, dtype), pair), shape=(n, n))


def _build(fmt, args, dtype):
    """A's private arrays -> (scipy matrix, blocksize)."""
    if fmt == "csr":
        val, col_ind, row_ptr, m, n = args
        return sp.csr_array((np.asarray(val, dtype), col_ind, row_ptr), shape=(m, n)), None
    if fmt == "csc":
        val, row_ind, col_ptr, m, n = args
        return sp.csc_array((np.asarray(val, dtype), row_ind, col_ptr), shape=(m, n)), None
    if fmt == "coo":
        val, row_ind, col_ind, m, n = args
        return sp.coo_array((np.asarray(val, dtype), (row_ind, col_ind)), shape=(m, n)), None
    if fmt == "bsr":
        val, col_ind, row_ptr, m, n, r, c = args
        blocks = np.asarray(val, dtype).reshape(-1, r, c)
        return sp.bsr_array((blocks, col_ind, row_ptr), shape=(m, n)), (r, c)
    if fmt == "dia":
        val, distance, m, n = args
        return sp.dia_array((np.asarray(val, dtype), distance), shape=(m, n)), None
    val, ptr, n, uplo = args
    return _skyline(val, ptr, n, uplo, dtype), None


NARGS = {"csr": 5, "csc": 5, "coo": 5, "bsr": 7, "dia": 4, "sky": 4}


def _temporary_matrix(fmt, args, dtype, comm, thread_src):
    """A temporary SparseMatrix from the private arrays on thread_src (every rank
    when replicated). Arrays refused where they are refuse the call on every
    rank (one allgather of the verdicts) before the matrix moves."""
    root = _root(comm, thread_src)
    A, blocksize, error = None, None, None
    if root is None or comm.Get_rank() == root:
        try:
            if len(args) != NARGS[fmt]:
                raise ArgumentError("%s takes %d arrays and sizes for A, not %d" % (fmt, NARGS[fmt], len(args)))
            A, blocksize = _build(fmt, args, dtype)
        except (TypeError, ValueError) as exc:      # ours, or scipy's refusal of malformed arrays
            error = "%s: A's arrays are refused: %s" % (fmt, exc)
    verdicts = comm.allgather((error, blocksize))
    for r, (err, _) in enumerate(verdicts):
        if err is not None:
            raise ArgumentError("rank %d: %s" % (r, err))
    blocksize = verdicts[0 if root is None else root][1]
    return from_scipy(comm, A, root=root, format=fmt, blocksize=blocksize)


def _product(t, fmt, name, operands):
    """upc_blas_<t><name>_<fmt>: op(A) times the dense operands, A's arrays
    on thread_src (see the module); `operands` names them in the doc."""
    dtype = DTYPES[t]

    def product(transpose, alpha, *args):
        *a_args, x, y, thread_src = args
        comm, trans = _comm_of(x), _trans(transpose)
        with _temporary_matrix(fmt, a_args, dtype, comm, thread_src) as A:
            (mv if name == "susmv" else mm)(A, x, y, alpha=alpha, beta=1, trans=trans)
        return 0
    product.__name__ = product.__qualname__ = "upc_blas_%s%s_%s" % (t, name, fmt)
    product.__doc__ = "%s, A's arrays on thread_src (see the module)." % operands
    return product


def _susdot(t):
    dtype = DTYPES[t]

    def susdot(x, indx, y, dst, thread_src):
        """dst = sum x[k] y[indx[k]]; the sparse vector on thread_src (sent
        to every rank on each call) or on every rank; returns the value."""
        comm = _comm_of(y)
        root = _root(comm, thread_src)
        if root is not None:
            x, indx = comm.bcast((x, indx) if comm.Get_rank() == root else None, root=root)
        value = dot(np.asarray(x, dtype), indx, y)
        _store(dst, value, dtype)
        return value
    susdot.__name__ = susdot.__qualname__ = "upc_blas_%ssusdot" % t
    return susdot


def arrays_of(G, fmt, blocksize=(2, 2)):
    """scipy matrix G as the private arrays of format fmt, in the entry
    points' order (sky: G's lower triangle by rows; bsr: blocks of
    `blocksize`): what code ported from UPC passes."""
    m, n = G.shape
    if fmt in ("csr", "csc"):
        C = sp.csr_array(G) if fmt == "csr" else sp.csc_array(G)
        C.sum_duplicates()
        return C.data, C.indices, C.indptr, m, n
    if fmt == "coo":
        C = sp.csr_array(G).tocoo()
        C.sum_duplicates()
        return C.data, C.row, C.col, m, n
    if fmt == "bsr":
        C = sp.bsr_array(G, blocksize=blocksize)
        C.sum_duplicates()
        return C.data.reshape(-1), C.indices, C.indptr, m, n, blocksize[0], blocksize[1]
    if fmt == "dia":
        C = sp.dia_array(G)
        return C.data, C.offsets, m, n
    L = sp.tril(G, format="csr")
    L.sum_duplicates()
    counts = np.diff(L.indptr)
    first = np.arange(m)
    first[counts > 0] = L.indices[L.indptr[:-1][counts > 0]]     # sorted: each row's first column
    ptr = np.concatenate(([0], np.cumsum(np.arange(m) - first + 1)))
    val = np.zeros(ptr[-1], G.dtype)
    rows = np.repeat(np.arange(m), counts)
    val[ptr[rows] + L.indices - first[rows]] = L.data
    return val, ptr, m, "L"


def _trans(transpose):
    if isinstance(transpose, bool) or transpose not in TRANSPOSE:
        raise ArgumentError("transpose must be 0, 1, 2 or 'N', 'T', 'C', not %r" % (transpose,))
    return TRANSPOSE[transpose]


def _export():
    names = {}
    for t in DTYPES:
        names["upc_blas_%ssusdot" % t] = _susdot(t)
        for fmt in NARGS:
            names["upc_blas_%ssusmv_%s" % (t, fmt)] = _product(t, fmt, "susmv", "y = alpha op(A) x + y")
            names["upc_blas_%ssusmm_%s" % (t, fmt)] = _product(t, fmt, "susmm", "C = alpha op(A) B + C")
    return names


globals().update(_export())
__all__ = sorted(n for n in globals() if n.startswith("upc_blas_"))
