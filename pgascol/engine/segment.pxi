# Shared segments of the PGAS layer (csrc/base/segment.h): one per global
# array and node, created by the node's first member and attached by the
# others through its address, then released so that nothing can outlive
# the job, whoever is killed when.

cdef extern from "base/segment.h" nogil:
    ctypedef enum pgc_segment_kind:
        PGC_SEGMENT_MEMFD, PGC_SEGMENT_NAMED
    int pgc_segment_create(pgc_segment *seg, size_t size, int hugepages, pgc_segment_kind kind,
                           pgc_error *err)
    int pgc_segment_attach(pgc_segment *seg, const char *address, size_t size, pgc_error *err)
    int pgc_segment_release(pgc_segment *seg, pgc_error *err)
    void pgc_segment_detach(pgc_segment *seg)


cdef class Segment:
    """A node shared segment as a writable buffer. ``Segment.create(size)``
    on one member, ``Segment.attach(address, size)`` on the others, then
    ``release()`` everywhere once all attached. The mapping lasts as long as
    this object and every view of it (numpy arrays made with np.frombuffer
    keep it alive): a view can never point at unmapped memory."""
    cdef pgc_segment seg
    cdef bint mapped

    @staticmethod
    def create(size_t size, str kind="memfd"):
        cdef Segment s = Segment.__new__(Segment)
        cdef pgc_error err
        memset(&err, 0, sizeof(err))
        cdef int rc = pgc_segment_create(&s.seg, max(size, 1), 0,
                                         PGC_SEGMENT_NAMED if kind == "named" else PGC_SEGMENT_MEMFD, &err)
        if rc != PGC_OK:
            _raise(rc, &err)
        s.mapped = True
        return s

    @staticmethod
    def attach(str address, size_t size):
        cdef Segment s = Segment.__new__(Segment)
        cdef pgc_error err
        memset(&err, 0, sizeof(err))
        cdef int rc = pgc_segment_attach(&s.seg, address.encode(), max(size, 1), &err)
        if rc != PGC_OK:
            _raise(rc, &err)
        s.mapped = True
        return s

    @property
    def address(self):
        return self.seg.name.decode()

    @property
    def size(self):
        return self.seg.size

    @property
    def base(self):
        """The address of this process's mapping."""
        return <uint64_t><size_t>self.seg.base

    def release(self):
        """Nobody else may attach from now on (idempotent)."""
        cdef pgc_error err
        memset(&err, 0, sizeof(err))
        cdef int rc = pgc_segment_release(&self.seg, &err)
        if rc != PGC_OK:
            _raise(rc, &err)

    def __getbuffer__(self, Py_buffer *view, int flags):
        if not self.mapped:
            raise ValueError("segment not mapped")
        view.buf = self.seg.base
        view.obj = self
        view.len = self.seg.size
        view.readonly = 0
        view.itemsize = 1
        view.format = NULL      # unsigned bytes
        if flags & PyBUF_FORMAT:
            view.format = b"B"
        view.ndim = 1
        view.shape = NULL
        view.strides = NULL
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer *view):
        pass

    def __dealloc__(self):
        if self.mapped:
            pgc_segment_detach(&self.seg)
            self.mapped = False
