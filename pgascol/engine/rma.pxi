# One-sided updates of a part in node shared memory (csrc/rma/atomic.h):
# the PGAS layer's atomics, fence and flag waits. Arguments are numpy
# arrays (the part, int64 local indices, values of the part's dtype) that
# the caller has checked: in range, of the right dtype, contiguous.

from libc.stdint cimport int64_t

cdef extern from "rma/atomic.h" nogil:
    ctypedef enum pgc_cmp:
        PGC_CMP_EQ, PGC_CMP_NE, PGC_CMP_LT, PGC_CMP_LE, PGC_CMP_GT, PGC_CMP_GE
    int pgc_rma_update_valid(pgc_op op, pgc_dtype t)
    void pgc_rma_update(void *base, pgc_dtype t, pgc_op op, const int64_t *idx, const void *values, size_t n)
    ctypedef struct pgc_rma_cyclic:
        char *base
        const int64_t *offsets
        int64_t n, block, nranks
    int64_t pgc_rma_update_cyclic(const pgc_rma_cyclic *a, pgc_dtype t, pgc_op op, const int64_t *idx,
                                  const void *values, size_t count)
    void pgc_rma_fetch_op(void *word, pgc_dtype t, pgc_op op, const void *value, void *old)
    void pgc_rma_compare_swap(void *word, pgc_dtype t, const void *expected, const void *value, void *old)
    void pgc_rma_fence()
    int pgc_rma_wait_until(const void *word, pgc_dtype t, pgc_cmp cmp, const void *value, uint32_t spin,
                           uint64_t budget_ns)

#: Comparisons of wait_until, in the order of pgc_cmp.
RMA_CMPS = ("==", "!=", "<", "<=", ">", ">=")


cdef class _Held:
    """Buffers held for one call, released together."""
    cdef Py_buffer views[4]
    cdef int n

    cdef char *get(self, object obj, bint writable) except NULL:
        PyObject_GetBuffer(obj, &self.views[self.n],
                           PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
        self.n += 1
        return <char *>self.views[self.n - 1].buf

    def __dealloc__(self):
        for i in range(self.n):
            PyBuffer_Release(&self.views[i])


def rma_update_valid(int op, int dtype):
    """Whether rma_update / rma_fetch_op define (op, dtype)."""
    return bool(pgc_rma_update_valid(<pgc_op>op, <pgc_dtype>dtype))


def rma_update(part, idx, values, int dtype, int op):
    """part[idx[k]] (op)= values[k], atomically, k in order (relaxed)."""
    cdef _Held h = _Held()
    cdef char *base = h.get(part, True)
    cdef const int64_t *ip = <const int64_t *>h.get(idx, False)
    cdef const char *vp = h.get(values, False)
    cdef size_t n = len(idx)
    with nogil:
        pgc_rma_update(base, <pgc_dtype>dtype, <pgc_op>op, ip, vp, n)


def rma_update_one(part, int64_t i, value, int dtype, int op):
    """part[i] (op)= value[0], atomically (relaxed; value: a 1-element array)."""
    cdef _Held h = _Held()
    cdef char *base = h.get(part, True)
    pgc_rma_update(base, <pgc_dtype>dtype, <pgc_op>op, &i, h.get(value, False), 1)


def rma_update_cyclic(segment, offsets, int64_t n, int64_t block, int64_t nranks, idx, values, int dtype,
                      int op):
    """Element idx[k] (op)= values[k] of a block-cyclic array whose parts all
    lie in `segment` (rank r's at byte offsets[r]), atomically, k in order
    (relaxed). Returns the position of the first index outside [0, n), having
    applied none, or -1 once all are applied."""
    cdef _Held h = _Held()
    cdef pgc_rma_cyclic a
    a.base = h.get(segment, True)
    a.offsets = <const int64_t *>h.get(offsets, False)
    a.n, a.block, a.nranks = n, block, nranks
    cdef const int64_t *ip = <const int64_t *>h.get(idx, False)
    cdef const char *vp = h.get(values, False)
    cdef size_t count = len(idx)
    cdef int64_t bad
    with nogil:
        bad = pgc_rma_update_cyclic(&a, <pgc_dtype>dtype, <pgc_op>op, ip, vp, count)
    return bad


def rma_fetch_op(part, Py_ssize_t i, value, old, int dtype, int op):
    """old[0] = part[i]; part[i] (op)= value[0], atomically (value, old: 1-element arrays)."""
    cdef _Held h = _Held()
    cdef char *base = h.get(part, True)
    pgc_rma_fetch_op(base + i * pgc_dtype_size(<pgc_dtype>dtype), <pgc_dtype>dtype, <pgc_op>op,
                     h.get(value, False), h.get(old, True))


def rma_compare_swap(part, Py_ssize_t i, expected, value, old, int dtype):
    """old[0] = part[i]; part[i] = value[0] if it was expected[0], atomically."""
    cdef _Held h = _Held()
    cdef char *base = h.get(part, True)
    pgc_rma_compare_swap(base + i * pgc_dtype_size(<pgc_dtype>dtype), <pgc_dtype>dtype,
                         h.get(expected, False), h.get(value, False), h.get(old, True))


def rma_fence():
    """A full memory barrier: the caller's earlier stores before its later accesses."""
    pgc_rma_fence()


def rma_wait_until(part, Py_ssize_t i, int cmp, value, int dtype, uint32_t spin, uint64_t budget_ns):
    """True once (part[i] cmp value[0]) holds, False after budget_ns without it."""
    cdef _Held h = _Held()
    cdef const char *word = h.get(part, False) + i * pgc_dtype_size(<pgc_dtype>dtype)
    cdef const char *vp = h.get(value, False)
    cdef int ok
    with nogil:
        ok = pgc_rma_wait_until(word, <pgc_dtype>dtype, <pgc_cmp>cmp, vp, spin, budget_ns)
    return bool(ok)
