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
and a dtype char of "fdFD" (s, d, c, z)."""
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

cdef char *TRANS = b"NTC"


cdef inline char *_p(cnp.ndarray a):
    return <char *>cnp.PyArray_DATA(a)


cdef inline int _ld(cnp.ndarray a):
    """The leading dimension of a row-major 2-D view (elements between rows)."""
    if a.shape[0] <= 1:
        return max(<int>a.shape[1], 1)
    return <int>(a.strides[0] // a.itemsize)


cdef inline int _inc(cnp.ndarray v):
    return <int>(v.strides[0] // v.itemsize) if v.shape[0] > 1 else 1


def gemm(int trans_a, int trans_b, alpha, cnp.ndarray a, cnp.ndarray b, beta, cnp.ndarray c):
    """c = alpha op(a) op(b) + beta c, row-major, c m x n, op(a) m x k."""
    cdef int m = c.shape[0], n = c.shape[1]
    cdef int k = a.shape[1] if trans_a == 0 else a.shape[0]
    cdef char ta = TRANS[trans_a], tb = TRANS[trans_b]
    cdef int lda = _ld(a), ldb = _ld(b), ldc = _ld(c)
    cdef char t = ord(c.dtype.char)
    cdef float sa, sb
    cdef double da, db
    cdef cfloat ca, cb
    cdef cdouble za, zb
    cdef char *pa = _p(a)
    cdef char *pb = _p(b)
    cdef char *pc = _p(c)
    if m == 0 or n == 0:
        return
    if t == b'f':
        sa, sb = alpha, beta
        with nogil:
            sgemm(&tb, &ta, &n, &m, &k, &sa, <float *>pb, &ldb, <float *>pa, &lda, &sb, <float *>pc, &ldc)
    elif t == b'd':
        da, db = alpha, beta
        with nogil:
            dgemm(&tb, &ta, &n, &m, &k, &da, <double *>pb, &ldb, <double *>pa, &lda, &db, <double *>pc, &ldc)
    elif t == b'F':
        ca, cb = alpha, beta
        with nogil:
            cgemm(&tb, &ta, &n, &m, &k, &ca, <cfloat *>pb, &ldb, <cfloat *>pa, &lda, &cb, <cfloat *>pc, &ldc)
    else:
        za, zb = alpha, beta
        with nogil:
            zgemm(&tb, &ta, &n, &m, &k, &za, <cdouble *>pb, &ldb, <cdouble *>pa, &lda, &zb, <cdouble *>pc, &ldc)


def gemv(int trans, alpha, cnp.ndarray a, cnp.ndarray x, beta, cnp.ndarray y):
    """y = alpha op(a) x + beta y, a row-major (trans 0 or 1; C goes through gemm)."""
    cdef int m = a.shape[0], n = a.shape[1], lda = _ld(a), incx = _inc(x), incy = _inc(y)
    cdef char tf = b'T' if trans == 0 else b'N'     # a read column-major is a^T
    cdef char t = ord(a.dtype.char)
    cdef float sa, sb
    cdef double da, db
    cdef cfloat ca, cb
    cdef cdouble za, zb
    cdef char *pa = _p(a)
    cdef char *px = _p(x)
    cdef char *py = _p(y)
    if y.shape[0] == 0:
        return
    if m == 0 or n == 0:            # y = beta y; beta 0 overwrites (NaN included), as BLAS
        if beta == 0:
            y[...] = 0
        elif beta != 1:
            scal(beta, y)
        return
    if t == b'f':
        sa, sb = alpha, beta
        with nogil:
            sgemv(&tf, &n, &m, &sa, <float *>pa, &lda, <float *>px, &incx, &sb, <float *>py, &incy)
    elif t == b'd':
        da, db = alpha, beta
        with nogil:
            dgemv(&tf, &n, &m, &da, <double *>pa, &lda, <double *>px, &incx, &db, <double *>py, &incy)
    elif t == b'F':
        ca, cb = alpha, beta
        with nogil:
            cgemv(&tf, &n, &m, &ca, <cfloat *>pa, &lda, <cfloat *>px, &incx, &cb, <cfloat *>py, &incy)
    else:
        za, zb = alpha, beta
        with nogil:
            zgemv(&tf, &n, &m, &za, <cdouble *>pa, &lda, <cdouble *>px, &incx, &zb, <cdouble *>py, &incy)


def geru(alpha, cnp.ndarray x, cnp.ndarray y, cnp.ndarray a):
    """a += alpha x y^T, a row-major m x n (a^T += alpha y x^T column-major)."""
    cdef int m = a.shape[0], n = a.shape[1], lda = _ld(a), incx = _inc(x), incy = _inc(y)
    cdef char t = ord(a.dtype.char)
    cdef float sa
    cdef double da
    cdef cfloat ca
    cdef cdouble za
    cdef char *pa = _p(a)
    cdef char *px = _p(x)
    cdef char *py = _p(y)
    if m == 0 or n == 0:
        return
    if t == b'f':
        sa = alpha
        with nogil:
            sger(&n, &m, &sa, <float *>py, &incy, <float *>px, &incx, <float *>pa, &lda)
    elif t == b'd':
        da = alpha
        with nogil:
            dger(&n, &m, &da, <double *>py, &incy, <double *>px, &incx, <double *>pa, &lda)
    elif t == b'F':
        ca = alpha
        with nogil:
            cgeru(&n, &m, &ca, <cfloat *>py, &incy, <cfloat *>px, &incx, <cfloat *>pa, &lda)
    else:
        za = alpha
        with nogil:
            zgeru(&n, &m, &za, <cdouble *>py, &incy, <cdouble *>px, &incx, <cdouble *>pa, &lda)


def trsm(int left, int lower, int trans, int unit, alpha, cnp.ndarray a, cnp.ndarray b):
    """b = alpha op(a)^-1 b (left) or alpha b op(a)^-1 (right), row-major;
    column-major that is b^T = alpha b^T op(a^T)^-1: side and uplo flip."""
    cdef int m = b.shape[0], n = b.shape[1], lda = _ld(a), ldb = _ld(b)
    cdef char side = b'R' if left else b'L'
    cdef char uplo = b'U' if lower else b'L'
    cdef char ta = TRANS[trans]
    cdef char diag = b'U' if unit else b'N'
    cdef char t = ord(b.dtype.char)
    cdef float sa
    cdef double da
    cdef cfloat ca
    cdef cdouble za
    cdef char *pa = _p(a)
    cdef char *pb = _p(b)
    if m == 0 or n == 0:
        return
    if t == b'f':
        sa = alpha
        with nogil:
            strsm(&side, &uplo, &ta, &diag, &n, &m, &sa, <float *>pa, &lda, <float *>pb, &ldb)
    elif t == b'd':
        da = alpha
        with nogil:
            dtrsm(&side, &uplo, &ta, &diag, &n, &m, &da, <double *>pa, &lda, <double *>pb, &ldb)
    elif t == b'F':
        ca = alpha
        with nogil:
            ctrsm(&side, &uplo, &ta, &diag, &n, &m, &ca, <cfloat *>pa, &lda, <cfloat *>pb, &ldb)
    else:
        za = alpha
        with nogil:
            ztrsm(&side, &uplo, &ta, &diag, &n, &m, &za, <cdouble *>pa, &lda, <cdouble *>pb, &ldb)


def syrk(int lower, int trans, alpha, cnp.ndarray a, beta, cnp.ndarray c):
    """The uplo triangle of c = alpha op(a) op(a)^T + beta c, row-major;
    column-major the transposed problem: trans and uplo flip."""
    cdef int n = c.shape[0], ldc = _ld(c), lda = _ld(a)
    cdef int k = a.shape[1] if trans == 0 else a.shape[0]
    cdef char uplo = b'U' if lower else b'L'
    cdef char tf = b'T' if trans == 0 else b'N'
    cdef char t = ord(c.dtype.char)
    cdef float sa, sb
    cdef double da, db
    cdef cfloat ca, cb
    cdef cdouble za, zb
    cdef char *pa = _p(a)
    cdef char *pc = _p(c)
    if n == 0:
        return
    if t == b'f':
        sa, sb = alpha, beta
        with nogil:
            ssyrk(&uplo, &tf, &n, &k, &sa, <float *>pa, &lda, &sb, <float *>pc, &ldc)
    elif t == b'd':
        da, db = alpha, beta
        with nogil:
            dsyrk(&uplo, &tf, &n, &k, &da, <double *>pa, &lda, &db, <double *>pc, &ldc)
    elif t == b'F':
        ca, cb = alpha, beta
        with nogil:
            csyrk(&uplo, &tf, &n, &k, &ca, <cfloat *>pa, &lda, &cb, <cfloat *>pc, &ldc)
    else:
        za, zb = alpha, beta
        with nogil:
            zsyrk(&uplo, &tf, &n, &k, &za, <cdouble *>pa, &lda, &zb, <cdouble *>pc, &ldc)


# ---------------------------------------------------------------- BLAS1 on 1-D views

def copy(cnp.ndarray x, cnp.ndarray y):
    """y = x."""
    _move(x, y, False)


def swap(cnp.ndarray x, cnp.ndarray y):
    """x, y = y, x."""
    _move(x, y, True)


cdef void _move(cnp.ndarray x, cnp.ndarray y, bint both):
    """swap (both) or copy of 1-D views."""
    cdef int n = x.shape[0], incx = _inc(x), incy = _inc(y)
    cdef char t = ord(x.dtype.char)
    cdef char *px = _p(x)
    cdef char *py = _p(y)
    with nogil:
        if t == b'f':
            if both:
                sswap(&n, <float *>px, &incx, <float *>py, &incy)
            else:
                scopy(&n, <float *>px, &incx, <float *>py, &incy)
        elif t == b'd':
            if both:
                dswap(&n, <double *>px, &incx, <double *>py, &incy)
            else:
                dcopy(&n, <double *>px, &incx, <double *>py, &incy)
        elif t == b'F':
            if both:
                cswap(&n, <cfloat *>px, &incx, <cfloat *>py, &incy)
            else:
                ccopy(&n, <cfloat *>px, &incx, <cfloat *>py, &incy)
        elif both:
            zswap(&n, <cdouble *>px, &incx, <cdouble *>py, &incy)
        else:
            zcopy(&n, <cdouble *>px, &incx, <cdouble *>py, &incy)


def scal(alpha, cnp.ndarray x):
    """x = alpha x."""
    cdef int n = x.shape[0], incx = _inc(x)
    cdef char t = ord(x.dtype.char)
    cdef float sa
    cdef double da
    cdef cfloat ca
    cdef cdouble za
    cdef char *px = _p(x)
    if t == b'f':
        sa = alpha
        with nogil:
            sscal(&n, &sa, <float *>px, &incx)
    elif t == b'd':
        da = alpha
        with nogil:
            dscal(&n, &da, <double *>px, &incx)
    elif t == b'F':
        ca = alpha
        with nogil:
            cscal(&n, &ca, <cfloat *>px, &incx)
    else:
        za = alpha
        with nogil:
            zscal(&n, &za, <cdouble *>px, &incx)


def axpy(alpha, cnp.ndarray x, cnp.ndarray y):
    """y += alpha x."""
    cdef int n = x.shape[0], incx = _inc(x), incy = _inc(y)
    cdef char t = ord(x.dtype.char)
    cdef float sa
    cdef double da
    cdef cfloat ca
    cdef cdouble za
    cdef char *px = _p(x)
    cdef char *py = _p(y)
    if t == b'f':
        sa = alpha
        with nogil:
            saxpy(&n, &sa, <float *>px, &incx, <float *>py, &incy)
    elif t == b'd':
        da = alpha
        with nogil:
            daxpy(&n, &da, <double *>px, &incx, <double *>py, &incy)
    elif t == b'F':
        ca = alpha
        with nogil:
            caxpy(&n, &ca, <cfloat *>px, &incx, <cfloat *>py, &incy)
    else:
        za = alpha
        with nogil:
            zaxpy(&n, &za, <cdouble *>px, &incx, <cdouble *>py, &incy)


def dot(cnp.ndarray x, cnp.ndarray y, bint conj):
    """sum(x * y), or sum(conj(x) * y) with conj (complex)."""
    cdef int n = x.shape[0], incx = _inc(x), incy = _inc(y)
    cdef char t = ord(x.dtype.char)
    cdef char *px = _p(x)
    cdef char *py = _p(y)
    cdef double d
    cdef cfloat c
    cdef cdouble z
    if t == b'f':
        with nogil:
            d = sdot(&n, <float *>px, &incx, <float *>py, &incy)
        return d
    if t == b'd':
        with nogil:
            d = ddot(&n, <double *>px, &incx, <double *>py, &incy)
        return d
    if t == b'F':
        with nogil:
            c = cdotc(&n, <cfloat *>px, &incx, <cfloat *>py, &incy) if conj else \
                cdotu(&n, <cfloat *>px, &incx, <cfloat *>py, &incy)
        return complex(c)
    with nogil:
        z = zdotc(&n, <cdouble *>px, &incx, <cdouble *>py, &incy) if conj else \
            zdotu(&n, <cdouble *>px, &incx, <cdouble *>py, &incy)
    return complex(z)


def nrm2(cnp.ndarray x):
    """The Euclidean norm, scaled by BLAS (no overflow)."""
    return _norm(x, True)


def asum(cnp.ndarray x):
    """sum(|x|), for complex sum(|re| + |im|) (BLAS's)."""
    return _norm(x, False)


cdef double _norm(cnp.ndarray x, bint two):
    """nrm2 (two) or asum of a 1-D view."""
    cdef int n = x.shape[0], incx = _inc(x)
    cdef char t = ord(x.dtype.char)
    cdef char *px = _p(x)
    cdef double d
    with nogil:
        if t == b'f':
            d = snrm2(&n, <float *>px, &incx) if two else sasum(&n, <float *>px, &incx)
        elif t == b'd':
            d = dnrm2(&n, <double *>px, &incx) if two else dasum(&n, <double *>px, &incx)
        elif t == b'F':
            d = scnrm2(&n, <cfloat *>px, &incx) if two else scasum(&n, <cfloat *>px, &incx)
        else:
            d = dznrm2(&n, <cdouble *>px, &incx) if two else dzasum(&n, <cdouble *>px, &incx)
    return d
