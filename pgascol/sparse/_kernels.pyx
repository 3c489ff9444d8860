# cython: boundscheck=False, wraparound=False, cdivision=True
"""Local kernels of pgascol.sparse, compiled, the GIL released.

Every kernel multiplies k dense columns at once (k = 1 for SpMV): the
dense operands are row-major, element (i, t) of x at x[i*sx + t] (or at
x[xi[p] + t] where the caller has folded the row stride into remapped
indices), of y at y[i*ldy + t]. Two shapes of loop:

- gather (a row-compressed piece times x: CSR, BSR, skyline by rows, DIA
  by row blocks, and the transposes of the column-compressed ones): y[i] = beta*y[i] +
  alpha * sum_p a_p x[col_p], one pass over each output row, beta = 0
  never reading y (so garbage in y cannot leak in);
- scatter (a compressed piece transposed: y[col_p] += alpha * a_p x[i]):
  into a private partial result that the caller zeroed and later
  combines with Reduce_scatter.

conj: use conj(a_p) (trans "C"). Indices are int32 or int64 (fused), the
values float32, float64, complex64, complex128 (fused)."""
from libc.stdlib cimport calloc, free

ctypedef fused scalar:
    float
    double
    float complex
    double complex

ctypedef fused index:
    int
    long long


cdef inline scalar cj(scalar v, bint c) noexcept nogil:
    if scalar is float or scalar is double:
        return v
    else:
        return v.conjugate() if c else v


cdef inline void store(scalar *y, scalar *acc, Py_ssize_t k, scalar alpha, scalar beta) noexcept nogil:
    """y[0:k] = beta*y + alpha*acc (beta 0: y not read); acc zeroed again."""
    cdef Py_ssize_t t
    for t in range(k):
        if beta == 0:
            y[t] = alpha * acc[t]
        else:
            y[t] = beta * y[t] + alpha * acc[t]
        acc[t] = 0


cdef scalar *zeros(Py_ssize_t k, scalar *like) except NULL:
    """k zeroed accumulators (of like's type)."""
    cdef scalar *acc = <scalar *>calloc(k if k > 0 else 1, sizeof(like[0]))
    if acc == NULL:
        raise MemoryError()
    return acc


def csr_gather(const index[::1] ptr, const index[::1] idx, const scalar[::1] val,
               const scalar[::1] x, Py_ssize_t sx, scalar[::1] y, Py_ssize_t ldy, Py_ssize_t k,
               scalar alpha, scalar beta, bint conj):
    """Row i of the piece: y[i*ldy + t] = beta*y + alpha * sum a_p x[idx_p*sx + t]."""
    cdef Py_ssize_t m = ptr.shape[0] - 1, i, p, t, xo
    cdef scalar a
    cdef scalar *acc = zeros(k, &alpha)
    with nogil:
        for i in range(m):
            if k == 1:                                  # SpMV: one sum in a register
                a = 0
                for p in range(ptr[i], ptr[i + 1]):
                    a = a + cj(val[p], conj) * x[idx[p] * sx]
                y[i * ldy] = alpha * a if beta == 0 else beta * y[i * ldy] + alpha * a
            else:
                for p in range(ptr[i], ptr[i + 1]):
                    a = cj(val[p], conj)
                    xo = idx[p] * sx
                    for t in range(k):
                        acc[t] = acc[t] + a * x[xo + t]
                store(&y[i * ldy], acc, k, alpha, beta)
    free(acc)


def csr_scatter(const index[::1] ptr, const index[::1] idx, const scalar[::1] val,
                const scalar[::1] x, Py_ssize_t sx, scalar[::1] y, Py_ssize_t ldy, Py_ssize_t k,
                scalar alpha, bint conj):
    """Line i of the piece: y[idx_p*ldy + t] += alpha * a_p x[i*sx + t]."""
    cdef Py_ssize_t m = ptr.shape[0] - 1, i, p, t, yo
    cdef scalar a
    with nogil:
        for i in range(m):
            for p in range(ptr[i], ptr[i + 1]):
                a = alpha * cj(val[p], conj)
                yo = idx[p] * ldy
                for t in range(k):
                    y[yo + t] = y[yo + t] + a * x[i * sx + t]


def coo(const index[::1] yi, const index[::1] xi, const scalar[::1] val,
        const scalar[::1] x, Py_ssize_t sx, scalar[::1] y, Py_ssize_t ldy, Py_ssize_t k,
        scalar alpha, bint conj):
    """Triplets: y[yi_p*ldy + t] += alpha * a_p x[xi_p*sx + t] (either direction)."""
    cdef Py_ssize_t p, t, yo, xo
    cdef scalar a
    with nogil:
        for p in range(val.shape[0]):
            a = alpha * cj(val[p], conj)
            yo = yi[p] * ldy
            xo = xi[p] * sx
            for t in range(k):
                y[yo + t] = y[yo + t] + a * x[xo + t]


def bsr_gather(const index[::1] ptr, const index[::1] bidx, const scalar[::1] val, Py_ssize_t R, Py_ssize_t C,
               const scalar[::1] x, Py_ssize_t sx, Py_ssize_t ldx, scalar[::1] y, Py_ssize_t ldy, Py_ssize_t k,
               scalar alpha, scalar beta, bint conj):
    """Block row I (R x C blocks): y[(I*R + r)*ldy + t] = beta*y + alpha * sum
    over its blocks p and c of a_p[r, c] x[bidx_p*sx + c*ldx + t]."""
    cdef Py_ssize_t mb = ptr.shape[0] - 1, I, p, r, c, t, xo, vo
    cdef scalar a
    cdef scalar *acc = zeros(R * k, &alpha)
    with nogil:
        for I in range(mb):
            for p in range(ptr[I], ptr[I + 1]):
                vo = p * R * C
                for r in range(R):
                    for c in range(C):
                        a = cj(val[vo + r * C + c], conj)
                        xo = bidx[p] * sx + c * ldx
                        for t in range(k):
                            acc[r * k + t] = acc[r * k + t] + a * x[xo + t]
            for r in range(R):
                store(&y[(I * R + r) * ldy], &acc[r * k], k, alpha, beta)
    free(acc)


def bsr_scatter(const index[::1] ptr, const index[::1] bidx, const scalar[::1] val, Py_ssize_t R, Py_ssize_t C,
                const scalar[::1] x, Py_ssize_t ldx, scalar[::1] y, Py_ssize_t sy, Py_ssize_t ldy, Py_ssize_t k,
                scalar alpha, bint conj):
    """The transpose: y[bidx_p*sy + c*ldy + t] += alpha * a_p[r, c] x[(I*R + r)*ldx + t]
    (sy: y's stride per block column, C*ldy unless remapped)."""
    cdef Py_ssize_t mb = ptr.shape[0] - 1, I, p, r, c, t, xo, yo
    cdef scalar a
    with nogil:
        for I in range(mb):
            for p in range(ptr[I], ptr[I + 1]):
                for r in range(R):
                    xo = (I * R + r) * ldx
                    for c in range(C):
                        a = alpha * cj(val[(p * R + r) * C + c], conj)
                        yo = bidx[p] * sy + c * ldy
                        for t in range(k):
                            y[yo + t] = y[yo + t] + a * x[xo + t]


def sky_gather(const index[::1] ptr, const index[::1] first, const scalar[::1] val,
               const scalar[::1] x, Py_ssize_t ldx, Py_ssize_t x0, scalar[::1] y, Py_ssize_t ldy, Py_ssize_t k,
               scalar alpha, scalar beta, bint conj):
    """Skyline line i holds the contiguous run of indices first_i ..
    first_i + len_i - 1: y[i*ldy + t] = beta*y + alpha * sum_q a[ptr_i + q]
    x[(first_i + q - x0)*ldx + t] (x a window starting at index x0)."""
    cdef Py_ssize_t m = ptr.shape[0] - 1, i, q, t, xo
    cdef scalar a
    cdef scalar *acc = zeros(k, &alpha)
    with nogil:
        for i in range(m):
            xo = (first[i] - x0) * ldx
            for q in range(ptr[i + 1] - ptr[i]):
                a = cj(val[ptr[i] + q], conj)
                for t in range(k):
                    acc[t] = acc[t] + a * x[xo + q * ldx + t]
            store(&y[i * ldy], acc, k, alpha, beta)
    free(acc)


def sky_scatter(const index[::1] ptr, const index[::1] first, const scalar[::1] val,
                const scalar[::1] x, Py_ssize_t ldx, scalar[::1] y, Py_ssize_t ldy, Py_ssize_t y0, Py_ssize_t k,
                scalar alpha, bint conj):
    """The transpose of sky_gather: y[(first_i + q - y0)*ldy + t] += alpha * a x[i*ldx + t]."""
    cdef Py_ssize_t m = ptr.shape[0] - 1, i, q, t, yo
    cdef scalar a
    with nogil:
        for i in range(m):
            yo = (first[i] - y0) * ldy
            for q in range(ptr[i + 1] - ptr[i]):
                a = alpha * cj(val[ptr[i] + q], conj)
                for t in range(k):
                    y[yo + q * ldy + t] = y[yo + q * ldy + t] + a * x[i * ldx + t]


cdef inline Py_ssize_t chunk_rows(Py_ssize_t k) noexcept nogil:
    """Rows of y (or x) kept in cache while every diagonal passes over them."""
    return 65536 // k if k < 1024 else 64


cdef inline void vector_run(scalar *y, const scalar *v, const scalar *x, Py_ssize_t a0, Py_ssize_t a1,
                            scalar alpha, bint conj) noexcept nogil:
    """y[i] += alpha v[i] x[i] for a0 <= i < a1: DIA's inner loop for one
    vector (distinct arrays: gcc vectorises it after its overlap check)."""
    cdef Py_ssize_t i
    if conj:
        for i in range(a0, a1):
            y[i] = y[i] + alpha * cj(v[i], True) * x[i]
    else:
        for i in range(a0, a1):
            y[i] = y[i] + alpha * v[i] * x[i]


def dia_gather(const long long[::1] runs, const scalar[::1] val, Py_ssize_t nl,
               const scalar[::1] x, Py_ssize_t sx, Py_ssize_t ldx, scalar[::1] y, Py_ssize_t ldy, Py_ssize_t k,
               scalar alpha, scalar beta, bint conj):
    """A DIA piece of nl rows, diagonal d's values val[d*nl + i] for local
    row i, read as runs (d, i0, i1, base): rows i0 <= i < i1 of diagonal d
    read x[base*sx + (i - i0)*ldx + t]. y[i*ldy + t] = beta*y + alpha *
    sum over the runs, by chunks of rows (each chunk scaled by beta, then
    every run passes over it while it is in cache; beta 0: y not read)."""
    cdef Py_ssize_t nruns = runs.shape[0] // 4, step = chunk_rows(k), c0, c1, q, d, i, i0, a0, a1, t, xo
    cdef scalar a
    with nogil:
        c0 = 0
        while c0 < nl:
            c1 = c0 + step if c0 + step < nl else nl
            if beta != 1:
                for i in range(c0, c1):
                    for t in range(k):
                        y[i * ldy + t] = 0 if beta == 0 else beta * y[i * ldy + t]
            for q in range(nruns):
                d, i0 = runs[4 * q], runs[4 * q + 1]
                a0 = i0 if i0 > c0 else c0
                a1 = runs[4 * q + 2] if runs[4 * q + 2] < c1 else c1
                xo = runs[4 * q + 3] * sx - i0 * ldx        # row i's x at xo + i*ldx
                if k == 1 and ldx == 1 and ldy == 1:        # a vector: one stream each, vectorised
                    vector_run(&y[0], &val[d * nl], &x[0] + xo, a0, a1, alpha, conj)
                    continue
                for i in range(a0, a1):
                    a = alpha * cj(val[d * nl + i], conj)
                    for t in range(k):
                        y[i * ldy + t] = y[i * ldy + t] + a * x[xo + i * ldx + t]
            c0 = c1


def dia_scatter(const long long[::1] runs, const scalar[::1] val, Py_ssize_t nl,
                const scalar[::1] x, Py_ssize_t ldx, scalar[::1] y, Py_ssize_t sy, Py_ssize_t ldy, Py_ssize_t k,
                scalar alpha, bint conj):
    """The transpose of dia_gather: y[base*sy + (i - i0)*ldy + t] += alpha
    a x[i*ldx + t] for the runs' rows i of the piece, by chunks of rows."""
    cdef Py_ssize_t nruns = runs.shape[0] // 4, step = chunk_rows(k), c0, c1, q, d, i, i0, a0, a1, t, xo, yo
    cdef scalar a
    with nogil:
        c0 = 0
        while c0 < nl:
            c1 = c0 + step if c0 + step < nl else nl
            for q in range(nruns):
                d, i0 = runs[4 * q], runs[4 * q + 1]
                a0 = i0 if i0 > c0 else c0
                a1 = runs[4 * q + 2] if runs[4 * q + 2] < c1 else c1
                yo = runs[4 * q + 3] * sy - i0 * ldy        # row i's y at yo + i*ldy
                if k == 1 and ldx == 1 and ldy == 1:
                    vector_run(&y[0] + yo, &val[d * nl], &x[0], a0, a1, alpha, conj)
                    continue
                for i in range(a0, a1):
                    a = alpha * cj(val[d * nl + i], conj)
                    for t in range(k):
                        y[yo + i * ldy + t] = y[yo + i * ldy + t] + a * x[i * ldx + t]
            c0 = c1


def sky_runs_scatter(const long long[::1] runs, const index[::1] ptr, const scalar[::1] val,
                     const scalar[::1] x, Py_ssize_t ldx, scalar[::1] y, Py_ssize_t sy, Py_ssize_t ldy,
                     Py_ssize_t k, scalar alpha, bint conj):
    """sky_scatter read as runs (i, q0, q1, base): values q0 <= q < q1 of
    line i go to y[base*sy + (q - q0)*ldy + t] += alpha a x[i*ldx + t]."""
    cdef Py_ssize_t nruns = runs.shape[0] // 4, n, i, q, q0, t, xo, yo
    cdef scalar a
    with nogil:
        for n in range(nruns):
            i, q0 = runs[4 * n], runs[4 * n + 1]
            xo = i * ldx
            for q in range(q0, runs[4 * n + 2]):
                a = alpha * cj(val[ptr[i] + q], conj)
                yo = runs[4 * n + 3] * sy + (q - q0) * ldy
                for t in range(k):
                    y[yo + t] = y[yo + t] + a * x[xo + t]
