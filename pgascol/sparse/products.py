"""SpMV and SpMM on distributed sparse matrices: y <- alpha op(A) x + beta y.

Which way the data go depends only on whether op(A)'s rows are the
matrix's lines (`aligned`: CSR, COO, BSR, DIA split by rows, lower
skyline not transposed; CSC, upper skyline transposed; never DIA split by
diagonals):

- aligned: each rank computes its own rows of y in place, reading the x
  entries its lines touch. Formats with explicit indices (CSR, CSC, COO,
  BSR) use a plan built once per matrix and x layout
  (SparseMatrix._plan): the indices of x entries on the caller's node are remapped to element
  offsets in the node's shared segment of x (read in place, no copy);
  those of other nodes go to a halo buffer filled by neighbour messages
  of only the needed entries (Isend/Irecv on the matrix's own
  communicator), posted before the node part is multiplied and waited
  for after it (PETSc's split of the local matrix). DIA's row block
  touches one contiguous range of x: the same plan over that range, its
  diagonals read as runs (plan.RunRemap: a diagonal's rows whose x
  entries one rank owns, read in place on the node, from the halo off
  it). Skyline lines touch a contiguous range of x: it is read into a
  window (GlobalArray.get).
- not aligned (the transposes of row formats, CSC and upper skyline not
  transposed): CSC, CSR, COO and DIA by the plan's exchange reversed
  (plan.scatter: contributions to my own rows of y added in place, those
  to other ranks' rows sent to their owners) when the halos are narrow;
  otherwise, and for BSR and skyline, each rank multiplies its lines
  by its own x part into a private partial y of full length, and the
  communicator's Reduce_scatter sums the partials into y's layout
  (Allreduce when y is replicated).
- DIA split by diagonals (the default, UPCBLAS's cyclic deal), either
  way: each rank reads the whole of x (GlobalArray.get), multiplies its
  diagonals (each all of A's rows long) into a partial y of full length,
  and Reduce_scatter sums the partials: the same run kernels as by rows,
  with one run per diagonal.

Synchronisation: every product begins with a PGAS barrier (the first
step of its collective argument check: whatever every rank wrote to x
before the call is visible, as an aligned product that reads other ranks'
parts needs) and ends with one (y complete on every rank, and nobody
writes x while another still reads it): the dense BLAS routines' rule.

Failures after the check (an exception in one rank's packing of the halo,
its kernel, its read of x): the rank skips the rest of its local work but
still sends its halo messages (empty) and enters the collectives (with
zeros), so nobody waits for it; the closing barrier counts the failed
ranks (pgas.barrier_count: an Allreduce instead of the barrier) and every
rank raises OperationFailedError naming them and their causes. y is then
undefined; the matrix, x and the communicator stay usable (tests:
sparse.py's test_a_failure_mid_product_*). A failure while a matrix
builds its exchange plan (its first product with an x layout, collective)
raises OperationFailedError on every rank at once, the plan not kept
(SparseMatrix._plan). A rank that dies is found by the waits' peer liveness
check (or PGASCOL_TIMEOUT), as everywhere.

Operands: pgas GlobalArrays (mv) and pgas Matrices distributed by rows
(mm) laid out as A.vector / A.matrix make them; any other layout is copied
into one first (and y back after: one extra pass over each and two
barriers), or numpy arrays holding the whole vector or matrix on every
rank (replicated: the result is assembled on every rank)."""
import numpy as np

from .. import pgas
from ..engine import _core
from ..comm.agree import agree
from ..errors import ArgumentError
from ..pgas.layout import Irregular
from . import _kernels, plan

TRANS = ("N", "T", "C")
SCATTERED = ("csr", "csc", "coo", "bsr", "dia", "sky")   # not aligned: plan.scatter when narrow (else a partial y, Reduce_scatter)


def mv(A, x, y, alpha=1, beta=1, trans="N"):
    """SpMV: y <- alpha op(A) x + beta y (collective). x, y: global arrays,
    or numpy vectors replicated on every rank."""
    _apply(A, x, y, alpha, beta, trans, matrices=False)


def mm(A, B, C, alpha=1, beta=1, trans="N"):
    """SpMM: C <- alpha op(A) B + beta C (collective). B, C: pgas matrices
    distributed by rows, or numpy 2-D arrays replicated on every rank."""
    _apply(A, B, C, alpha, beta, trans, matrices=True)


# ---------------------------------------------------------------- checks

class _Dense:
    """One dense operand: a global array / matrix, or a replicated numpy array.
    rows, k: its shape as a matrix (a vector is rows x 1); ld its row stride."""

    def __init__(self, a, name, matrices, dtype):
        self.a, self.name = a, name
        self.glob = isinstance(a, pgas.GlobalArray)
        if matrices:
            if self.glob and not (isinstance(a, pgas.Matrix) and a.dist == "row"):
                raise ArgumentError("%s must be a pgas Matrix distributed by rows (A.matrix) or a numpy "
                                    "2-D array, not %r" % (name, a))
            if not self.glob and (not isinstance(a, np.ndarray) or a.ndim != 2):
                raise ArgumentError("%s must be a pgas Matrix or a numpy 2-D array, not %s" % (name, type(a).__name__))
        elif (self.glob and isinstance(a, pgas.Matrix)) or \
                (not self.glob and (not isinstance(a, np.ndarray) or a.ndim != 1)):
            raise ArgumentError("%s must be a global array (A.vector) or a numpy 1-D array, not %s"
                                % (name, type(a).__name__))
        if a.dtype != dtype:
            raise ArgumentError("%s has dtype %s, A has %s" % (name, a.dtype, dtype))
        if self.glob:
            a._live()
            self.rows, self.k = (a.rows, a.cols) if matrices else (a.size, 1)
            self.ld = a.ld if matrices else 1
        else:
            if not a.flags.c_contiguous:
                raise ArgumentError("%s must be C-contiguous" % name)
            self.rows, self.k = (a.shape[0], a.shape[1]) if matrices else (a.shape[0], 1)
            self.ld = self.k

    def laid_out(self, counts):
        """Is the global operand laid out as counts rows per rank?"""
        lay = self.a.layout
        return isinstance(lay, Irregular) and list(lay.counts) == [c * self.ld for c in counts]


def _check(A, x, y, alpha, beta, trans, matrices):
    """Every check before any data moves, on every rank (agree: a refusal
    on one rank raises ArgumentError on all, and so does a difference
    between the ranks' arguments). It is also the product's opening PGAS
    barrier (a fence, then the agreement's collective, then the fence's
    second half, as pgas.barrier): what every rank wrote to x before the
    call is visible after it."""
    A._live()
    names = ("B", "C") if matrices else ("x", "y")

    def prepare():
        if trans not in TRANS:
            raise ArgumentError("trans must be one of N, T, C, not %r" % (trans,))
        X, Y = _Dense(x, names[0], matrices, A.dtype), _Dense(y, names[1], matrices, A.dtype)
        if X.glob != Y.glob:
            raise ArgumentError("%s and %s must both be global or both be replicated numpy arrays" % names)
        if x is y or (not X.glob and np.shares_memory(x, y)):
            raise ArgumentError("%s and %s overlap" % names)
        m, n = A.shape if trans == "N" else A.shape[::-1]
        if X.rows != n or Y.rows != m:
            raise ArgumentError("op(A) is %d x %d: %s needs %d rows and %s %d, not %d and %d"
                                % (m, n, names[0], n, names[1], m, X.rows, Y.rows))
        if X.k != Y.k:
            raise ArgumentError("%s and %s have %d and %d columns" % (names + (X.k, Y.k)))
        a, b = (_scalar(v, A.dtype, w) for v, w in ((alpha, "alpha"), (beta, "beta")))
        return (X.glob, X.rows, X.k, Y.rows, trans, complex(a), complex(b)), (X, Y, a, b)
    # the agreement's Allreduce is the barrier: x's writes fenced before it, read after it
    checked = agree(A.comm, "pgascol.sparse." + ("mm" if matrices else "mv"), prepare,
                    lambda: pgas.fence(A.comm))
    _core.rma_fence()
    return checked


def _scalar(v, dtype, what):
    if not np.isscalar(v) or (np.iscomplexobj(v) and dtype.kind != "c" and np.imag(v) != 0):
        raise ArgumentError("%s must be a scalar of %s, not %r" % (what, dtype, v))
    return dtype.type(np.real(v) if dtype.kind != "c" else v)


# ---------------------------------------------------------------- the product

def _apply(A, x, y, alpha, beta, trans, matrices):
    X, Y, alpha, beta = _check(A, x, y, alpha, beta, trans, matrices)
    aligned = A.axis != "diag" and (A.axis == "row") == (trans == "N")
    xcounts, ycounts = (A.col_counts, A.row_counts) if trans == "N" else (A.row_counts, A.col_counts)
    guard, what = plan.Guard(), "pgascol.sparse." + ("mm" if matrices else "mv")
    if not X.glob:
        _replicated(A, X, Y, alpha, beta, trans, aligned, ycounts, guard)
        return _close(A, guard, what, Y.name)
    xs, ys = _fit(A, X, xcounts), _fit(A, Y, ycounts, keep=beta != 0)
    try:
        if aligned:                         # (_check's barrier: every owner's writes to x visible)
            _gather(A, xs, ys, alpha, beta, trans == "C", guard)
        else:
            _reduce(A, xs, ys, alpha, beta, trans, ycounts, guard)
        _close(A, guard, what, Y.name)      # y complete everywhere; nobody writes x while another reads it
        if ys is not Y:
            _put_back(A, ys, Y)
    finally:
        for tmp in (xs, ys):
            if tmp is not X and tmp is not Y:
                tmp.a.free()


def _close(A, guard, what, yname):
    """The product's closing barrier, which also tells every rank whether
    the local work failed on any (guard): if so every rank raises
    OperationFailedError naming the ranks and causes (one allgather, on
    failure only). Every rank took its part in the product's messages and
    collectives, so the communicator and the matrix stay usable."""
    if pgas.barrier_count(A.comm, guard.exc is not None):
        plan.fail_everywhere(A.comm, guard.exc, what, "%s is undefined, the matrix, the other operands and "
                             "the communicator remain usable" % yname)


def _fit(A, D, counts, keep=True):
    """D itself when laid out as counts, else a copy in such a layout
    (the documented cost: one pass over the operand and a barrier)."""
    if D.laid_out(counts):
        return D
    a = D.a
    if isinstance(a, pgas.Matrix):
        t = pgas.matrix(A.comm, (a.rows, a.cols), a.dtype, dist="row", ld=a.ld, counts=counts)
    else:
        t = pgas.array(A.comm, None, a.dtype, counts=counts)
    if keep:                                # (what every rank wrote to D is visible: _check's barrier)
        lo = sum(counts[:A._ctx.rank]) * D.ld
        part = pgas.GlobalArray.local(t)
        if len(part):
            a.get(lo, part)
        pgas.barrier(A.comm)                # the copy complete before the others read it in place
    T = _Dense.__new__(_Dense)
    T.a, T.name, T.glob, T.rows, T.k, T.ld = t, D.name, True, D.rows, D.k, D.ld
    return T


def _put_back(A, T, Y):
    pgas.barrier(A.comm)
    part = pgas.GlobalArray.local(T.a)
    lo = sum(T.a.layout.counts[:A._ctx.rank])
    if len(part):
        Y.a.put(lo, part)
    pgas.barrier(A.comm)


def _flat(D):
    return pgas.GlobalArray.local(D.a)


def _gather(A, X, Y, alpha, beta, conj, guard):
    """Aligned: my rows of y from the x entries my lines touch."""
    y = _flat(Y)
    if A.format == "sky":
        lo, hi = A._window()
        win = np.empty((hi - lo) * X.ld, A.dtype)
        if len(win):
            guard.run(X.a.get, lo * X.ld, win)
        p = A._piece
        guard.run(_kernels.sky_gather, p["ptr"], p["idx"], p["val"], win, X.ld, lo, y, Y.ld, X.k, alpha, beta, conj)
        return
    ex, rm = A._plan(X, guard)
    plan.multiply(A, ex, rm, X, y, Y.ld, alpha, beta, conj, guard)


def _reduce(A, X, Y, alpha, beta, trans, ycounts, guard):
    """Not aligned: the reversed exchange where it is narrow, else a partial
    y of full length, then Reduce_scatter (entered by a rank whose local
    work failed too, with zeros). DIA by diagonals: from the whole of x."""
    scattered = A.format in SCATTERED and A.axis != "diag"
    ex, rm = A._plan(Y, guard, scatter=True) if scattered else (None, None)
    if ex is not None:
        return plan.scatter(A, ex, rm, X, Y, alpha, beta, conj=trans == "C", guard=guard)
    k = X.k
    partial = np.zeros(Y.rows * k, A.dtype)
    if A.axis == "diag":                    # (a rank without diagonals reads none of x)
        x = np.empty(X.rows * X.ld if len(A._piece["idx"]) else 0, A.dtype)
        if len(x):
            guard.run(X.a.get, 0, x)
    else:
        x = _flat(X)
    guard.run(_scatter_local, A, x, X.ld, partial, k, alpha, trans)
    mine = np.empty(ycounts[A._ctx.rank] * k, A.dtype)
    A.comm.Reduce_scatter(partial, mine, recvcounts=[c * k for c in ycounts])
    guard.run(plan.axpby, _flat(Y).reshape(-1, Y.ld)[:, :k], beta, mine.reshape(-1, k))


def _scatter_local(A, x, ldx, partial, k, alpha, trans):
    """partial += alpha op(my piece) x (x: my lines' rows; DIA by
    diagonals: all of x, and not transposed too)."""
    p, conj = A._piece, trans == "C"
    fmt = A.format
    if fmt == "dia" and trans == "N":
        plan.kernel(A, plan.dia_part(A, A.shape[1]), x, ldx, ldx, partial, k, k, alpha, A.dtype.type(1), conj)
    elif fmt == "dia":
        plan.scatter_kernel(A, plan.dia_part(A, len(partial) // k), x, ldx, partial, k, k, k, alpha, conj)
    elif fmt == "sky":
        _kernels.sky_scatter(p["ptr"], p["idx"], p["val"], x, ldx, partial, k, 0, k, alpha, conj)
    elif fmt == "bsr":
        R, C = A.blocksize
        _kernels.bsr_scatter(p["ptr"], p["idx"], p["val"], R, C, x, ldx, partial, C * k, k, k, alpha, conj)
    elif fmt == "coo":
        _kernels.coo(p["idx"], A._rows(), p["val"], x, ldx, partial, k, k, alpha, conj)
    else:
        _kernels.csr_scatter(p["ptr"], p["idx"], p["val"], x, ldx, partial, k, k, alpha, conj)


def _replicated(A, X, Y, alpha, beta, trans, aligned, ycounts, guard):
    """numpy operands, the same on every rank: my part of the product, then
    Allgatherv (aligned) or Allreduce (partials) so every rank has y."""
    x, y, k = X.a.reshape(-1), Y.a.reshape(-1), X.k
    if aligned:
        rank = A._ctx.rank
        lo = sum(ycounts[:rank])
        mine = y[lo * k:(lo + ycounts[rank]) * k].copy()
        guard.run(_gather_replicated, A, x, mine, k, alpha, beta, trans == "C")
        A.comm.Allgatherv(mine, [y, [c * k for c in ycounts]])
        return
    partial = np.zeros(Y.rows * k, A.dtype)
    guard.run(_scatter_local, A, x[A.lo * k:], k, partial, k, alpha, trans)
    total = np.empty_like(partial)
    A.comm.Allreduce(partial, total)
    guard.run(plan.axpby, y, beta, total)


def _gather_replicated(A, x, y, k, alpha, beta, conj):
    """My rows of y from the whole x: the aligned kernels with the piece's
    own indices (x's stride per index: k, per BSR block column C*k)."""
    p = A._piece
    if A.format == "sky":
        _kernels.sky_gather(p["ptr"], p["idx"], p["val"], x, k, 0, y, k, k, alpha, beta, conj)
        return
    if A.format == "dia":
        part = plan.dia_part(A, A.shape[1])
    else:
        part = (p["ptr"], p["idx"], p["val"], A._rows() if A.format == "coo" else None)
    plan.kernel(A, part, x, k * A._unit, k, y, k, k, alpha, beta, conj)
