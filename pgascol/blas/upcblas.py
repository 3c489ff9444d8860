"""UPCBLAS's interface (Gonzalez-Dominguez's thesis, Appendix A), for code
ported from UPC: the routines' names and argument order, the enumerations,
and UPCBLAS's return codes.

A shared pointer is a (global array, element offset) pair. The routines
treat the arrays as the appendix says for each distribution and case (for
example gemv by rows: A as shared [block_size*lda], x as
shared [sec_block_size], y as shared [block_size]): the array's own block
must be that one. The scalar results of dot, nrm2 and asum are written to
the (array, offset) given as dst, by the rank that owns it, and are
visible to every rank on return.

Return values, UPCBLAS's local code: 0; -j when the j-th argument is wrong
(a dtype or block that is not the routine's, a pointer not at phase 0, A
and y not starting on the same rank, an ld that is not a multiple of
block_size*P where the appendix requires it, ld and sec_block_size not
multiples of each other, a size that does not fit); +1 when memory could
not be allocated. As in UPC, each rank checks its own arguments; with
check_all=True the ranks also agree (one allgather) and all return the
first non-zero code. The computation is pgascol.blas's (which raises
instead of returning codes)."""
import numpy as np

from ..errors import ArgumentError
from ..pgas import GlobalArray
from . import level1, level2, level3
from . import operands
from .level2 import scale

upc_pblas_rowDist, upc_pblas_colDist = 0, 1
upc_pblas_noTrans, upc_pblas_trans, upc_pblas_conjTrans = 0, 1, 2
upc_pblas_upper, upc_pblas_lower = 0, 1
upc_pblas_nonUnit, upc_pblas_unit = 0, 1
upc_pblas_left, upc_pblas_right = 0, 1

DTYPES = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}


class _Wrong(Exception):
    """Argument j is wrong (UPCBLAS returns -j)."""

    def __init__(self, j, why=""):
        super().__init__(j, why)
        self.j = j


def _enum(j, value, allowed):
    if value not in allowed:
        raise _Wrong(j, "not one of %r" % (allowed,))
    return value


def _size(j, value):
    if not isinstance(value, (int, np.integer)) or value < 0:
        raise _Wrong(j, "a size must be a non-negative integer")
    return int(value)


def _positive(j, value):
    if not isinstance(value, (int, np.integer)) or value < 1:
        raise _Wrong(j, "must be a positive integer")
    return int(value)


def _array(j, ptr, dtype):
    if (not isinstance(ptr, tuple) or len(ptr) != 2 or not isinstance(ptr[0], GlobalArray)
            or not isinstance(ptr[1], (int, np.integer))):
        raise _Wrong(j, "a shared pointer is a (global array, offset) pair")
    arr, off = ptr
    if arr.dtype != np.dtype(dtype) or getattr(arr.layout, "block", None) is None:
        raise _Wrong(j, "not a block-cyclic array of %s" % np.dtype(dtype))
    arr._live()
    return arr, int(off)


def _vec(j, ptr, dtype, block, n, jblock):
    """x as shared [block] T [n], phase 0."""
    arr, off = _array(j, ptr, dtype)
    if arr.layout.block != block:
        raise _Wrong(jblock if jblock else j, "the array's block is %d, not %d" % (arr.layout.block, block))
    try:
        return operands.Vec("x", arr, off, n)
    except ArgumentError as exc:
        raise _Wrong(j, str(exc))


def _mat(j, jld, ptr, dtype, dist, b, m, n, ld, jblock):
    """A as shared [b*ld] (by rows) or shared [b] with ld % (b*P) == 0 (by columns)."""
    arr, off = _array(j, ptr, dtype)
    if ld < max(n, 1) or (dist == "col" and ld % (b * arr._ctx.size)):
        raise _Wrong(jld, "ld %d" % ld)
    if arr.layout.block != (b * ld if dist == "row" else b):
        raise _Wrong(jblock if jblock else j, "the array's block is %d" % arr.layout.block)
    try:
        return operands.Mat("A", arr, off, m, n, ld, dist, b)
    except ArgumentError as exc:
        raise _Wrong(j, str(exc))


def _replicated(j, jld, ptr, dtype, sec, m, n, ld, jsec):
    """A replicated operand as shared [sec] T [m*ld], ld and sec multiples
    of each other: by rows when sec is a multiple of ld, by columns when ld
    is a multiple of sec*P, else read whole (one-sided gets) on every rank."""
    arr, off = _array(j, ptr, dtype)
    if ld < max(n, 1):
        raise _Wrong(jld, "ld %d < %d" % (ld, n))
    if ld % sec and sec % ld:
        raise _Wrong(jld, "ld %d and sec_block_size %d are not multiples of each other" % (ld, sec))
    if arr.layout.block != sec:
        raise _Wrong(jsec, "the array's block is %d, not %d" % (arr.layout.block, sec))
    if off % ld and sec % ld == 0:
        raise _Wrong(j, "not at the first element of a row")
    P = arr._ctx.size
    try:
        if sec % ld == 0:
            return operands.Mat("B", arr, off, m, n, ld, "row", sec // ld)
        if ld % (sec * P) == 0:
            return operands.Mat("B", arr, off, m, n, ld, "col", sec)
    except ArgumentError as exc:
        raise _Wrong(j, str(exc))
    if off < 0 or (m and off + (m - 1) * ld + n > arr.size):
        raise _Wrong(j, "does not fit the array")
    return operands.Gathered("B", np.empty((m, n), arr.dtype), (arr, off, ld))     # MemoryError: +1


def _whole(rep):
    return rep.fill() if isinstance(rep, operands.Gathered) else rep


def _same_rank(j, a, b):
    if a.first != b.first:
        raise _Wrong(j, "does not start on the rank of its partner (%d, not %d)" % (b.first, a.first))


def _call(check, work, check_all, comm_of):
    """UPCBLAS's code of one call: check, optionally agree, work."""
    try:
        state = check()
        code = 0
    except _Wrong as exc:
        code, state = -exc.j, None
    except MemoryError:
        code, state = 1, None
    if check_all:
        ctx = comm_of()
        if ctx is not None:
            codes = ctx.comm.allgather(code)
            code = next((c for c in codes if c), 0)
    if code:
        return code
    try:
        work(*state)
    except MemoryError:
        return 1
    return 0


def _ctx_of(*ptrs):
    for p in ptrs:
        if isinstance(p, tuple) and p and isinstance(p[0], GlobalArray):
            return p[0]._ctx
    return None


def _store(dst, value, dtype):
    """Write a scalar result to dst, by its owner; visible to all after the barrier."""
    arr, off = dst
    ctx = arr._ctx
    if int(arr.layout.owner(off)) == ctx.rank:
        arr[off] = value
    operands.sync(ctx)


# ---------------------------------------------------------------- BLAS1

def _blas1(t):
    dt = DTYPES[t]
    real = np.float32 if t in "sc" else np.float64

    def pair(block_size, size, x, y, jx):
        """The checks of x and y (arguments jx and jx + 1) as shared [block_size] T [size]."""
        b, n = _positive(1, block_size), _size(2, size)
        vx, vy = _vec(jx, x, dt, b, n, 1), _vec(jx + 1, y, dt, b, n, 1)
        _same_rank(jx + 1, vx, vy)
        return vx, vy

    def copy(block_size, size, x, y, check_all=False):
        return _call(lambda: pair(block_size, size, x, y, 3), lambda vx, vy: level1.copy(vx, vy), check_all,
                     lambda: _ctx_of(x, y))

    def swap(block_size, size, x, y, check_all=False):
        return _call(lambda: pair(block_size, size, x, y, 3), lambda vx, vy: level1.swap(vx, vy), check_all,
                     lambda: _ctx_of(x, y))

    def scal(block_size, size, alpha, x, check_all=False):
        def check():
            return (_vec(4, x, dt, _positive(1, block_size), _size(2, size), 1),)
        return _call(check, lambda vx: level1.scal(alpha, vx), check_all, lambda: _ctx_of(x))

    def axpy(block_size, size, alpha, x, y, check_all=False):
        return _call(lambda: pair(block_size, size, x, y, 4), lambda vx, vy: level1.axpy(vx, vy, a=alpha),
                     check_all, lambda: _ctx_of(x, y))

    def dot_like(fn, rdt):
        def dot(block_size, size, x, y, dst, check_all=False):
            def check():
                vx, vy = pair(block_size, size, x, y, 3)
                arr, off = _array(5, dst, rdt)
                if not 0 <= off < arr.size:
                    raise _Wrong(5, "offset out of the array")
                return vx, vy
            return _call(check, lambda vx, vy: _store(dst, fn(vx, vy), rdt), check_all, lambda: _ctx_of(x, y))
        return dot

    def norm_like(fn):
        def norm(block_size, size, x, dst, check_all=False):
            def check():
                vx = _vec(3, x, dt, _positive(1, block_size), _size(2, size), 1)
                arr, off = _array(4, dst, real)
                if not 0 <= off < arr.size:
                    raise _Wrong(4, "offset out of the array")
                return (vx,)
            return _call(check, lambda vx: _store(dst, fn(vx), real), check_all, lambda: _ctx_of(x))
        return norm

    out = {"copy": copy, "swap": swap, "scal": scal, "axpy": axpy}
    if t in "sd":
        out["dot"] = dot_like(level1.dot, dt)
        out["nrm2"] = norm_like(level1.nrm2)
        out["asum"] = norm_like(level1.asum)
    else:
        out["dotu"] = dot_like(level1.dotu, dt)
        out["dotc"] = dot_like(level1.dotc, dt)
        out["_nrm2"] = norm_like(level1.nrm2)
        out["_asum"] = norm_like(level1.asum)
        out["_sscal"] = scal
    return out


# ---------------------------------------------------------------- BLAS2

def _gemv(t):
    dt = DTYPES[t]

    def gemv(dimmDist, block_size, sec_block_size, transpose, m, n, alpha, A, lda, x, beta, y, check_all=False):
        def check():
            dist = _enum(1, dimmDist, (0, 1))
            b, sec = _positive(2, block_size), _positive(3, sec_block_size)
            tr = _enum(4, transpose, (0, 1, 2) if t in "cz" else (0, 1, 2))
            mm, nn = _size(5, m), _size(6, n)
            by_rows = (dist == upc_pblas_rowDist) == (tr == 0)    # A stored by rows
            va = _mat(8, 9, A, dt, "row" if by_rows else "col", b, mm, nn, lda, 2)
            xl, yl = (nn, mm) if tr == 0 else (mm, nn)
            if dist == upc_pblas_rowDist:
                vx, vy = _vec(10, x, dt, sec, xl, 3), _vec(12, y, dt, b, yl, 2)
                _same_rank(12, va, vy)
            else:
                vx, vy = _vec(10, x, dt, b, xl, 2), _vec(12, y, dt, sec, yl, 3)
                _same_rank(10, va, vx)
            return va, vx, vy, tr
        return _call(check, lambda va, vx, vy, tr: level2.gemv(alpha, va, vx, beta, vy, tr), check_all,
                     lambda: _ctx_of(A, x, y))

    def ger(conj):
        def ger(dimmDist, block_size, sec_block_size, m, n, alpha, x, y, A, lda, check_all=False):
            def check():
                dist = _enum(1, dimmDist, (0, 1))
                b, sec = _positive(2, block_size), _positive(3, sec_block_size)
                mm, nn = _size(4, m), _size(5, n)
                by_rows = dist == upc_pblas_rowDist
                va = _mat(9, 10, A, dt, "row" if by_rows else "col", b, mm, nn, lda, 2)
                if by_rows:
                    vx, vy = _vec(7, x, dt, b, mm, 2), _vec(8, y, dt, sec, nn, 3)
                    _same_rank(7, va, vx)
                else:
                    vx, vy = _vec(7, x, dt, sec, mm, 3), _vec(8, y, dt, b, nn, 2)
                    _same_rank(8, va, vy)
                return va, vx, vy
            return _call(check, lambda va, vx, vy: level2.ger(alpha, vx, vy, a=va, conj=conj), check_all,
                         lambda: _ctx_of(A, x, y))
        return ger

    def trsv(dimmDist, block_size, uplo, transpose, diag, n, T, ldt, x, check_all=False):
        def check():
            dist = _enum(1, dimmDist, (0, 1))
            b = _positive(2, block_size)
            lo, tr, dg = _enum(3, uplo, (0, 1)), _enum(4, transpose, (0, 1, 2)), _enum(5, diag, (0, 1))
            nn = _size(6, n)
            by_rows = (dist == upc_pblas_rowDist) == (tr == 0)
            vt = _mat(7, 8, T, dt, "row" if by_rows else "col", b, nn, nn, ldt, 2)
            vx = _vec(9, x, dt, b, nn, 2)
            _same_rank(9, vt, vx)
            return vt, vx, lo, tr, dg
        return _call(check, lambda vt, vx, lo, tr, dg: level2.trsv(vt, vx, lo, tr, dg), check_all,
                     lambda: _ctx_of(T, x))

    out = {"gemv": gemv, "trsv": trsv}
    if t in "sd":
        out["ger"] = ger(False)
    else:
        out["geru"], out["gerc"] = ger(False), ger(True)
    return out


# ---------------------------------------------------------------- BLAS3

def _blas3(t):
    dt = DTYPES[t]

    def gemm(dimmDist, block_size, sec_block_size, transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C,
             ldc, check_all=False):
        def check():
            dist = _enum(1, dimmDist, (0, 1))
            b, sec = _positive(2, block_size), _positive(3, sec_block_size)
            ta, tb = _enum(4, transA, (0, 1, 2)), _enum(5, transB, (0, 1, 2))
            mm, nn, kk = _size(6, m), _size(7, n), _size(8, k)
            ash = (mm, kk) if ta == 0 else (kk, mm)
            bsh = (kk, nn) if tb == 0 else (nn, kk)
            if dist == upc_pblas_rowDist:
                vc = _mat(15, 16, C, dt, "row", b, mm, nn, ldc, 2)
                va = _mat(10, 11, A, dt, "row" if ta == 0 else "col", b, ash[0], ash[1], lda, 2)
                _same_rank(10, vc, va)
                vb = _replicated(12, 13, B, dt, sec, bsh[0], bsh[1], ldb, 3)
            else:
                vc = _mat(15, 16, C, dt, "col", b, mm, nn, ldc, 2)
                vb = _mat(12, 13, B, dt, "col" if tb == 0 else "row", b, bsh[0], bsh[1], ldb, 2)
                _same_rank(12, vc, vb)
                va = _replicated(10, 11, A, dt, sec, ash[0], ash[1], lda, 3)
            return va, vb, vc, ta, tb
        return _call(check, lambda *s: _gemm(alpha, beta, *s), check_all, lambda: _ctx_of(A, B, C))

    def trsm(dimmDist, block_size, sec_block_size, side, uplo, transpose, diag, m, n, alpha, T, ldt, X, ldx,
             check_all=False):
        def check():
            dist = _enum(1, dimmDist, (0, 1))
            b, sec = _positive(2, block_size), _positive(3, sec_block_size)
            sd, lo = _enum(4, side, (0, 1)), _enum(5, uplo, (0, 1))
            tr, dg = _enum(6, transpose, (0, 1, 2)), _enum(7, diag, (0, 1))
            mm, nn = _size(8, m), _size(9, n)
            nt = mm if sd == upc_pblas_left else nn
            vx = _mat(13, 14, X, dt, "row" if dist == upc_pblas_rowDist else "col", b, mm, nn, ldx, 2)
            if (sd == upc_pblas_left) == (dist == upc_pblas_rowDist):      # T in blocks like X
                by_rows = (dist == upc_pblas_rowDist) == (tr == 0)
                vt = _mat(11, 12, T, dt, "row" if by_rows else "col", b, nt, nt, ldt, 2)
                _same_rank(11, vx, vt)
            else:
                vt = _replicated(11, 12, T, dt, sec, nt, nt, ldt, 3)
            return vt, vx, sd, lo, tr, dg
        return _call(check, lambda vt, vx, sd, lo, tr, dg: _trsm(alpha, vt, vx, sd, lo, tr, dg), check_all,
                     lambda: _ctx_of(T, X))

    def syrk(dimmDist, block_size, uplo, transpose, n, k, alpha, A, lda, beta, C, ldc, check_all=False):
        def check():
            dist = _enum(1, dimmDist, (0, 1))
            b = _positive(2, block_size)
            lo, tr = _enum(3, uplo, (0, 1)), _enum(4, transpose, (0, 1))
            nn, kk = _size(5, n), _size(6, k)
            ash = (nn, kk) if tr == 0 else (kk, nn)
            dc = "row" if dist == upc_pblas_rowDist else "col"
            vc = _mat(11, 12, C, dt, dc, b, nn, nn, ldc, 2)
            by_rows = (dist == upc_pblas_rowDist) == (tr == 0)
            va = _mat(8, 9, A, dt, "row" if by_rows else "col", b, ash[0], ash[1], lda, 2)
            _same_rank(8, vc, va)
            return va, vc, lo, tr
        return _call(check, lambda va, vc, lo, tr: level3.syrk(alpha, va, beta, vc, tr, lo), check_all,
                     lambda: _ctx_of(A, C))

    return {"gemm": gemm, "trsm": trsm, "syrk": syrk}


def _gemm(alpha, beta, va, vb, vc, ta, tb):
    """C = alpha op(A) op(B) + beta C with UPCBLAS's replicated operand."""
    ctx = vc.ctx
    operands.sync(ctx)
    va, vb = _whole(va), _whole(vb)
    cl = vc.local()
    scale(beta, cl)
    level3._gemm_into(cl, vc, va, vb, ta, tb, alpha)
    operands.sync(ctx)


def _trsm(alpha, vt, vx, side, lower, trans, diag):
    if isinstance(vt, operands.Gathered):
        operands.sync(vx.ctx)
        vt = _whole(vt)
        operands.sync(vx.ctx)
        from . import _kernels as K
        K.trsm(side == 0, bool(lower), trans, bool(diag), alpha, vt.array, vx.local())
        operands.sync(vx.ctx)
        return
    level3.trsm(alpha, vt, vx, side, lower, trans, diag)


# ---------------------------------------------------------------- the names

def _export():
    names = {}
    for t in "sdcz":
        for family in (_blas1(t), _gemv(t), _blas3(t)):
            for name, fn in family.items():
                if name.startswith("_"):
                    continue
                names["upc_blas_%s%s" % (t, name)] = fn
    # complex nrm2/asum are scnrm2, dznrm2, scasum, dzasum; csscal/zdscal: a real alpha
    for t, pre in (("c", "sc"), ("z", "dz")):
        b1 = _blas1(t)
        names["upc_blas_%snrm2" % pre] = b1["_nrm2"]
        names["upc_blas_%sasum" % pre] = b1["_asum"]
        names["upc_blas_%s%sscal" % (t, "s" if t == "c" else "d")] = b1["_sscal"]
    return names


globals().update(_export())
__all__ = sorted(n for n in globals() if n.startswith(("upc_blas_", "upc_pblas_")))
