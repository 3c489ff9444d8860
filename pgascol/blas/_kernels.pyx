# cython: boundscheck=False, wraparound=False
"""Local kernels of pgascol.blas: SciPy's BLAS (scipy.linalg.cython_blas)
on row-major numpy views, with the GIL released.

BLAS is column-major; a row-major m x n matrix with leading dimension ld
is, read column-major, its transpose (n x m, same ld). So every routine
calls BLAS on the transposed problem, never copying to column-major:
C = op(A) op(B) is C^T = op(B)^T op(A)^T, and op(X)^T is op(X^T) with the
same trans code (N, T or C), so gemm swaps its operands and keeps its
codes; trsm and syrk swap side or trans and flip uplo. gemv and trsv with
trans C have no such form (conj(A) without transposing is not a BLAS
operation): they go through gemm and trsm with one column.

Every function takes numpy arrays whose last axis has unit stride (the
Python layer, pgascol/blas/_local.py, checks shapes, dtypes and strides)
and a dtype char of "fdFD" (s, d, c, z).

One body per routine, whatever the type: a Python-visible function fills a
Call (its operands, row-major as the caller gave them) and _run makes it.
_run is the one place that reads the dtype: it picks the specialization of
_blas for the fused type num, whose line per routine is the column-major
BLAS call, through an xNAME helper (BLAS's name for "any type") that picks
sNAME, dNAME, cNAME or zNAME by num at compile time."""
cimport numpy as cnp
from scipy.linalg.cython_blas cimport (
    sgemm, dgemm, cgemm, zgemm, sgemv, dgemv, cgemv, zgemv, strsm, dtrsm, ctrsm, ztrsm,
    ssyrk, dsyrk, csyrk, zsyrk, sger, dger, cgeru, zgeru,
    scopy, dcopy, ccopy, zcopy, sswap, dswap, cswap, zswap, sscal, dscal, cscal, zscal,
    saxpy, daxpy, caxpy, zaxpy, sdot, ddot, cdotu, zdotu, cdotc, zdotc,
    snrm2, dnrm2, scnrm2, dznrm2, sasum, dasum, scasum, dzasum)

cnp.import_array()

ctypedef float complex cfloat
ctypedef double complex cdouble

ctypedef fused num:
    float
    double
    cfloat
    cdouble

cdef char *TRANS = b"NTC"


cdef enum Routine:
    GEMM, GEMV, GER, TRSM, SYRK, COPY, SWAP, SCAL, AXPY, DOTU, DOTC, NRM2, ASUM


cdef struct Call:
    # One kernel call, row-major as the caller gave it; each routine sets
    # the fields it uses.
    Routine routine
    char type                       # the dtype char: f, d, F or D
    char side, uplo, ta, tb, diag   # BLAS's codes, already flipped for column-major
    int m, n, k
    char *a
    char *b
    char *c
    char *x
    char *y
    int lda, ldb, ldc, incx, incy
    cdouble alpha, beta             # as given; _scalar narrows them to the type
    cdouble out                     # the result of dot, nrm2 and asum


cdef inline char *_p(cnp.ndarray a) noexcept:
    return <char *>cnp.PyArray_DATA(a)


cdef inline int _ld(cnp.ndarray a) noexcept:
    """The leading dimension of a row-major 2-D view (elements between rows)."""
    if a.shape[0] <= 1:
        return max(<int>a.shape[1], 1)
    return <int>(a.strides[0] // a.itemsize)


cdef inline int _inc(cnp.ndarray v) noexcept:
    return <int>(v.strides[0] // v.itemsize) if v.shape[0] > 1 else 1


cdef inline void _start(Call *s, Routine routine, cnp.ndarray a) noexcept:
    """s for routine on the dtype of a."""
    s.routine = routine
    s.type = a.descr.type


cdef inline void _coefs(Call *s, alpha, beta) except *:
    """alpha and beta into s; a real type refuses a complex one (TypeError), as BLAS's argument would."""
    if s.type == b'f' or s.type == b'd':
        s.alpha, s.beta = <double>alpha, <double>beta
    else:
        s.alpha, s.beta = <cdouble>alpha, <cdouble>beta


cdef inline void _vectors(Call *s, Routine routine, cnp.ndarray x, cnp.ndarray y) noexcept:
    """s for a BLAS1 routine on the 1-D views x and y (y None: x alone)."""
    _start(s, routine, x)
    s.n, s.x, s.incx = x.shape[0], _p(x), _inc(x)
    if y is not None:
        s.y, s.incy = _p(y), _inc(y)


cdef void _run(Call *s) noexcept:
    """Make the call s with the BLAS of its dtype, the GIL released."""
    with nogil:
        if s.type == b'f':
            _blas(<float *>NULL, s)
        elif s.type == b'd':
            _blas(<double *>NULL, s)
        elif s.type == b'F':
            _blas(<cfloat *>NULL, s)
        else:
            _blas(<cdouble *>NULL, s)


cdef inline void _blas(num *of, Call *s) noexcept nogil:
    """s with BLAS on num (of is a null pointer that only names the type):
    the row-major problem as its column-major transpose (module docstring)."""
    cdef num alpha = _scalar(of, s.alpha), beta = _scalar(of, s.beta)
    cdef num *a = <num *>s.a
    cdef num *b = <num *>s.b
    cdef num *c = <num *>s.c
    cdef num *x = <num *>s.x
    cdef num *y = <num *>s.y
    if s.routine == GEMM:
        xgemm(&s.tb, &s.ta, &s.n, &s.m, &s.k, &alpha, b, &s.ldb, a, &s.lda, &beta, c, &s.ldc)
    elif s.routine == GEMV:
        xgemv(&s.ta, &s.n, &s.m, &alpha, a, &s.lda, x, &s.incx, &beta, y, &s.incy)
    elif s.routine == GER:
        xger(&s.n, &s.m, &alpha, y, &s.incy, x, &s.incx, a, &s.lda)
    elif s.routine == TRSM:
        xtrsm(&s.side, &s.uplo, &s.ta, &s.diag, &s.n, &s.m, &alpha, a, &s.lda, b, &s.ldb)
    elif s.routine == SYRK:
        xsyrk(&s.uplo, &s.ta, &s.n, &s.k, &alpha, a, &s.lda, &beta, c, &s.ldc)
    elif s.routine == COPY or s.routine == SWAP:
        xmove(s.routine == SWAP, &s.n, x, &s.incx, y, &s.incy)
    elif s.routine == SCAL:
        xscal(&s.n, &alpha, x, &s.incx)
    elif s.routine == AXPY:
        xaxpy(&s.n, &alpha, x, &s.incx, y, &s.incy)
    elif s.routine == DOTU or s.routine == DOTC:
        s.out = xdot(s.routine == DOTC, &s.n, x, &s.incx, y, &s.incy)
    else:
        s.out = xnorm(s.routine == NRM2, &s.n, x, &s.incx)


cdef inline num _scalar(num *of, cdouble v) noexcept nogil:
    """v as a num (a real type takes its real part: _coefs refused any other)."""
    if num is float or num is double:
        return <num>v.real
    else:
        return <num>v


# ---------------------------------------------------------------- xNAME: sNAME, dNAME, cNAME or zNAME by num

cdef inline void xgemm(char *ta, char *tb, int *m, int *n, int *k, num *alpha, num *a, int *lda,
                       num *b, int *ldb, num *beta, num *c, int *ldc) noexcept nogil:
    if num is float:
        sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    elif num is double:
        dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    elif num is cfloat:
        cgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    else:
        zgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)


cdef inline void xgemv(char *t, int *m, int *n, num *alpha, num *a, int *lda, num *x, int *incx,
                       num *beta, num *y, int *incy) noexcept nogil:
    if num is float:
        sgemv(t, m, n, alpha, a, lda, x, incx, beta, y, incy)
    elif num is double:
        dgemv(t, m, n, alpha, a, lda, x, incx, beta, y, incy)
    elif num is cfloat:
        cgemv(t, m, n, alpha, a, lda, x, incx, beta, y, incy)
    else:
        zgemv(t, m, n, alpha, a, lda, x, incx, beta, y, incy)


cdef inline void xger(int *m, int *n, num *alpha, num *x, int *incx, num *y, int *incy,
                      num *a, int *lda) noexcept nogil:
    """a += alpha x y^T (geru: no conjugate)."""
    if num is float:
        sger(m, n, alpha, x, incx, y, incy, a, lda)
    elif num is double:
        dger(m, n, alpha, x, incx, y, incy, a, lda)
    elif num is cfloat:
        cgeru(m, n, alpha, x, incx, y, incy, a, lda)
    else:
        zgeru(m, n, alpha, x, incx, y, incy, a, lda)


cdef inline void xtrsm(char *side, char *uplo, char *t, char *diag, int *m, int *n, num *alpha,
                       num *a, int *lda, num *b, int *ldb) noexcept nogil:
    if num is float:
        strsm(side, uplo, t, diag, m, n, alpha, a, lda, b, ldb)
    elif num is double:
        dtrsm(side, uplo, t, diag, m, n, alpha, a, lda, b, ldb)
    elif num is cfloat:
        ctrsm(side, uplo, t, diag, m, n, alpha, a, lda, b, ldb)
    else:
        ztrsm(side, uplo, t, diag, m, n, alpha, a, lda, b, ldb)


cdef inline void xsyrk(char *uplo, char *t, int *n, int *k, num *alpha, num *a, int *lda,
                       num *beta, num *c, int *ldc) noexcept nogil:
    if num is float:
        ssyrk(uplo, t, n, k, alpha, a, lda, beta, c, ldc)
    elif num is double:
        dsyrk(uplo, t, n, k, alpha, a, lda, beta, c, ldc)
    elif num is cfloat:
        csyrk(uplo, t, n, k, alpha, a, lda, beta, c, ldc)
    else:
        zsyrk(uplo, t, n, k, alpha, a, lda, beta, c, ldc)


cdef inline void xmove(bint both, int *n, num *x, int *incx, num *y, int *incy) noexcept nogil:
    """swap (both) or copy."""
    if num is float:
        if both:
            sswap(n, x, incx, y, incy)
        else:
            scopy(n, x, incx, y, incy)
    elif num is double:
        if both:
            dswap(n, x, incx, y, incy)
        else:
            dcopy(n, x, incx, y, incy)
    elif num is cfloat:
        if both:
            cswap(n, x, incx, y, incy)
        else:
            ccopy(n, x, incx, y, incy)
    elif both:
        zswap(n, x, incx, y, incy)
    else:
        zcopy(n, x, incx, y, incy)


cdef inline void xscal(int *n, num *alpha, num *x, int *incx) noexcept nogil:
    if num is float:
        sscal(n, alpha, x, incx)
    elif num is double:
        dscal(n, alpha, x, incx)
    elif num is cfloat:
        cscal(n, alpha, x, incx)
    else:
        zscal(n, alpha, x, incx)


cdef inline void xaxpy(int *n, num *alpha, num *x, int *incx, num *y, int *incy) noexcept nogil:
    if num is float:
        saxpy(n, alpha, x, incx, y, incy)
    elif num is double:
        daxpy(n, alpha, x, incx, y, incy)
    elif num is cfloat:
        caxpy(n, alpha, x, incx, y, incy)
    else:
        zaxpy(n, alpha, x, incx, y, incy)


cdef inline num xdot(bint conj, int *n, num *x, int *incx, num *y, int *incy) noexcept nogil:
    """sum(x * y), or sum(conj(x) * y) with conj (complex; a real type ignores it)."""
    if num is float:
        return sdot(n, x, incx, y, incy)
    elif num is double:
        return ddot(n, x, incx, y, incy)
    elif num is cfloat:
        return cdotc(n, x, incx, y, incy) if conj else cdotu(n, x, incx, y, incy)
    else:
        return zdotc(n, x, incx, y, incy) if conj else zdotu(n, x, incx, y, incy)


cdef inline double xnorm(bint two, int *n, num *x, int *incx) noexcept nogil:
    """nrm2 (two) or asum."""
    if num is float:
        return snrm2(n, x, incx) if two else sasum(n, x, incx)
    elif num is double:
        return dnrm2(n, x, incx) if two else dasum(n, x, incx)
    elif num is cfloat:
        return scnrm2(n, x, incx) if two else scasum(n, x, incx)
    else:
        return dznrm2(n, x, incx) if two else dzasum(n, x, incx)


# ---------------------------------------------------------------- the Python-visible routines

def gemm(int trans_a, int trans_b, alpha, cnp.ndarray a, cnp.ndarray b, beta, cnp.ndarray c):
    """c = alpha op(a) op(b) + beta c, row-major, c m x n, op(a) m x k."""
    cdef Call s
    _start(&s, GEMM, c)
    s.m, s.n, s.k = c.shape[0], c.shape[1], a.shape[1] if trans_a == 0 else a.shape[0]
    s.ta, s.tb = TRANS[trans_a], TRANS[trans_b]
    s.a, s.lda, s.b, s.ldb, s.c, s.ldc = _p(a), _ld(a), _p(b), _ld(b), _p(c), _ld(c)
    if s.m == 0 or s.n == 0:
        return
    _coefs(&s, alpha, beta)
    _run(&s)


def gemv(int trans, alpha, cnp.ndarray a, cnp.ndarray x, beta, cnp.ndarray y):
    """y = alpha op(a) x + beta y, a row-major (trans 0 or 1; C goes through gemm)."""
    cdef Call s
    _vectors(&s, GEMV, x, y)
    s.m, s.n, s.a, s.lda = a.shape[0], a.shape[1], _p(a), _ld(a)
    s.ta = b'T' if trans == 0 else b'N'     # a read column-major is a^T
    if y.shape[0] == 0:
        return
    if s.m == 0 or s.n == 0:        # y = beta y; beta 0 overwrites (NaN included), as BLAS
        if beta == 0:
            y[...] = 0
        elif beta != 1:
            scal(beta, y)
        return
    _coefs(&s, alpha, beta)
    _run(&s)


def geru(alpha, cnp.ndarray x, cnp.ndarray y, cnp.ndarray a):
    """a += alpha x y^T, a row-major m x n (a^T += alpha y x^T column-major)."""
    cdef Call s
    _vectors(&s, GER, x, y)
    s.m, s.n, s.a, s.lda = a.shape[0], a.shape[1], _p(a), _ld(a)
    if s.m == 0 or s.n == 0:
        return
    _coefs(&s, alpha, 0)
    _run(&s)


def trsm(int left, int lower, int trans, int unit, alpha, cnp.ndarray a, cnp.ndarray b):
    """b = alpha op(a)^-1 b (left) or alpha b op(a)^-1 (right), row-major;
    column-major that is b^T = alpha b^T op(a^T)^-1: side and uplo flip."""
    cdef Call s
    _start(&s, TRSM, b)
    s.m, s.n, s.a, s.lda, s.b, s.ldb = b.shape[0], b.shape[1], _p(a), _ld(a), _p(b), _ld(b)
    s.side = b'R' if left else b'L'
    s.uplo = b'U' if lower else b'L'
    s.ta = TRANS[trans]
    s.diag = b'U' if unit else b'N'
    if s.m == 0 or s.n == 0:
        return
    _coefs(&s, alpha, 0)
    _run(&s)


def syrk(int lower, int trans, alpha, cnp.ndarray a, beta, cnp.ndarray c):
    """The uplo triangle of c = alpha op(a) op(a)^T + beta c, row-major;
    column-major the transposed problem: trans and uplo flip."""
    cdef Call s
    _start(&s, SYRK, c)
    s.n, s.k = c.shape[0], a.shape[1] if trans == 0 else a.shape[0]
    s.a, s.lda, s.c, s.ldc = _p(a), _ld(a), _p(c), _ld(c)
    s.uplo = b'U' if lower else b'L'
    s.ta = b'T' if trans == 0 else b'N'
    if s.n == 0:
        return
    _coefs(&s, alpha, beta)
    _run(&s)


# ---------------------------------------------------------------- BLAS1 on 1-D views

def copy(cnp.ndarray x, cnp.ndarray y):
    """y = x."""
    cdef Call s
    _vectors(&s, COPY, x, y)
    _run(&s)


def swap(cnp.ndarray x, cnp.ndarray y):
    """x, y = y, x."""
    cdef Call s
    _vectors(&s, SWAP, x, y)
    _run(&s)


def scal(alpha, cnp.ndarray x):
    """x = alpha x."""
    cdef Call s
    _vectors(&s, SCAL, x, None)
    _coefs(&s, alpha, 0)
    _run(&s)


def axpy(alpha, cnp.ndarray x, cnp.ndarray y):
    """y += alpha x."""
    cdef Call s
    _vectors(&s, AXPY, x, y)
    _coefs(&s, alpha, 0)
    _run(&s)


def dot(cnp.ndarray x, cnp.ndarray y, bint conj):
    """sum(x * y), or sum(conj(x) * y) with conj (complex)."""
    cdef Call s
    _vectors(&s, DOTC if conj else DOTU, x, y)
    _run(&s)
    return _result(&s)


def nrm2(cnp.ndarray x):
    """The Euclidean norm, scaled by BLAS (no overflow)."""
    cdef Call s
    _vectors(&s, NRM2, x, None)
    _run(&s)
    return s.out.real


def asum(cnp.ndarray x):
    """sum(|x|), for complex sum(|re| + |im|) (BLAS's)."""
    cdef Call s
    _vectors(&s, ASUM, x, None)
    _run(&s)
    return s.out.real


cdef object _result(Call *s):
    """s.out as Python's float (a real type) or complex."""
    if s.type == b'f' or s.type == b'd':
        return s.out.real
    return complex(s.out)
