# The buffers of one call and the size tables of the v collectives, checked
# before the C core moves any data.

@cython.freelist(8)   # one per call: reuse the object instead of allocating it
cdef class _Buffers:
    """The buffers of one call: acquired with their checks, released together."""
    cdef Py_buffer views[2]
    cdef int held[2]

    cdef char *get(self, int i, object obj, bint writable, size_t need, str what) except? NULL:
        cdef int flags = PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0)
        try:
            PyObject_GetBuffer(obj, &self.views[i], flags)
        except TypeError:
            raise ArgumentError("%s must support the buffer protocol, not %s" % (what, type(obj).__name__))
        except (BufferError, ValueError) as exc:
            if writable:
                try:
                    memoryview(obj).release()
                except (BufferError, ValueError, TypeError):
                    pass
                else:
                    if memoryview(obj).readonly:
                        raise ArgumentError("%s must be writable (got a read-only %s)"
                                            % (what, type(obj).__name__))
            raise ArgumentError("%s must be a contiguous buffer (%s)" % (what, exc))
        self.held[i] = 1
        if <size_t>self.views[i].len < need:
            raise ArgumentError("%s holds %d bytes but the call needs %d"
                                % (what, self.views[i].len, need))
        return <char *>self.views[i].buf

    def __dealloc__(self):
        for i in range(2):
            if self.held[i]:
                PyBuffer_Release(&self.views[i])


cdef inline size_t _sum(const size_t *v, int n) noexcept:
    cdef size_t s = 0
    for i in range(n):
        s += v[i]
    return s


cdef class _Sizes:
    """A Python sequence of non-negative integers as a C size_t array."""
    cdef size_t *v
    cdef Py_ssize_t n

    def __cinit__(self, object seq, Py_ssize_t n, str what):
        if seq is None:
            raise ArgumentError("%s is required" % what)
        if len(seq) != n:
            raise ArgumentError("%s has %d entries, the team has %d members" % (what, len(seq), n))
        self.v = <size_t *>malloc(max(n, 1) * sizeof(size_t))
        self.n = n
        if self.v == NULL:
            raise MemoryError()
        for i in range(n):
            x = seq[i]
            if x < 0:
                raise ArgumentError("%s[%d] is negative (%d)" % (what, i, x))
            self.v[i] = <size_t>x

    cdef size_t extent(self, _Sizes counts):
        """max(displ + count): the buffer size these displacements need."""
        cdef size_t e = 0
        for i in range(self.n):
            if counts.v[i] and self.v[i] + counts.v[i] > e:
                e = self.v[i] + counts.v[i]
        return e

    cdef size_t total(self):
        return _sum(self.v, self.n)

    def __dealloc__(self):
        free(self.v)


cdef _Sizes _packed_displs(_Sizes counts):
    """Displacements of blocks laid out one after another."""
    cdef _Sizes d = _Sizes([0] * counts.n, counts.n, "displs")
    cdef size_t off = 0
    for i in range(counts.n):
        d.v[i] = off
        off += counts.v[i]
    return d
