"""Iterative solvers on distributed sparse matrices (SparseMatrix).

    x, info = sparse.cg(A, b)          # b: a global array, e.g. A.vector("row")

cg is scipy.sparse.linalg.cg's algorithm (no preconditioner) on global
arrays: one SpMV (sparse.mv on the matrix: the halo exchange the matrix
planned once) and two collective dot products per iteration, the vector
updates local (pgascol.blas level 1: every vector lies like b, so each rank
updates its own part with one BLAS call). Collective: every rank calls it
with the same arguments and gets the same info."""
import math

import numpy as np

from ..blas import level1 as blas_level1
from ..errors import ArgumentError
from ..pgas import GlobalArray
from ..pgas import array as pgas_array
from .products import mv


def like(v, fill=0):
    """A new global array of v's length, dtype and layout (collective)."""
    lay = v.layout
    if lay.block is None:
        return pgas_array(v._ctx.comm, v.size, v.dtype, counts=list(lay.counts), fill=fill)
    return pgas_array(v._ctx.comm, v.size, v.dtype, block=lay.spec, fill=fill)


def _same_layout(a, b):
    la, lb = a.layout, b.layout
    return (la.kind == lb.kind and la.n == lb.n and la.block == lb.block
            and (la.block is not None or np.array_equal(la.counts, lb.counts)))


def _check(A, b, x0):
    if not hasattr(A, "shape") or not hasattr(A, "vector"):
        raise ArgumentError("A must be a pgascol.sparse.SparseMatrix, not %s" % type(A).__name__)
    if A.shape[0] != A.shape[1]:
        raise ArgumentError("cg needs a square matrix, A is %d x %d" % A.shape)
    for name, v in (("b", b), ("x0", x0)):
        if v is None and name == "x0":
            continue
        if not isinstance(v, GlobalArray):
            raise ArgumentError("%s must be a pgascol.pgas global array, not %s" % (name, type(v).__name__))
        if v.size != A.shape[0] or v.dtype != A.dtype:
            raise ArgumentError("%s has %d elements of %s; A is %d x %d of %s"
                                % (name, v.size, v.dtype, A.shape[0], A.shape[1], A.dtype))
    if x0 is not None and not _same_layout(b, x0):
        raise ArgumentError("x0 must be distributed like b")


def cg(A, b, x0=None, tol=1e-8, maxiter=None, callback=None, atol=0.0):
    """Solve A x = b, A Hermitian positive definite, by conjugate gradients.

    Stops when ||b - A x|| <= max(tol * ||b||, atol) (scipy's rtol and
    atol), or after maxiter iterations (default 10 n). x0: the starting
    guess, a global array laid out like b, which becomes the solution in
    place and is returned (x0 = 0 costs no product: scipy's test); None: start from 0 in a new array like b (the
    caller frees it). callback(x) after every iteration. Returns (x, info):
    info 0 when converged, else the number of iterations done (scipy's
    convention). The residual r and directions p, A p are work arrays like
    b, freed on return."""
    _check(A, b, x0)
    n = A.shape[0]
    maxiter = 10 * n if maxiter is None else int(maxiter)
    x = like(b) if x0 is None else x0
    r, p, q = like(b), like(b), like(b)
    try:
        blas_level1.copy(b, r)
        bnorm = math.sqrt(abs(blas_level1.dotc(b, b)))
        if x0 is not None and blas_level1.asum(x) != 0:     # scipy's x.any(): no product for x0 = 0
            mv(A, x, r, alpha=-1.0, beta=1.0)               # r = b - A x
        limit = max(tol * bnorm, atol)
        rho_prev = None
        for iteration in range(maxiter):
            rho = blas_level1.dotc(r, r)
            if math.sqrt(abs(rho)) <= limit:
                return x, 0
            if rho_prev is None:
                blas_level1.copy(r, p)
            else:
                blas_level1.scal(rho / rho_prev, p)         # p = r + (rho / rho_prev) p
                blas_level1.axpy(r, p)
            mv(A, p, q, alpha=1.0, beta=0.0)                # q = A p
            alpha = rho / blas_level1.dotc(p, q)
            blas_level1.axpy(p, x, a=alpha)
            blas_level1.axpy(q, r, a=-alpha)
            rho_prev = rho
            if callback is not None:
                callback(x)
        return x, maxiter
    except BaseException:
        if x0 is None:
            x.free()
        raise
    finally:
        for v in (r, p, q):
            v.free()
