# Buffer specifications (mpi4py's message rules, msgbuffer.pxi of mpi4py 4.x)
# and the packing of derived datatypes; _Layout, the blocks per rank the engine gets.

# ----------------------------------------------------------------- buffer specs

@cython.freelist(8)   # several per call: reuse instead of allocating
cdef class _Msg:
    """One parsed buffer specification (mpi4py's message_simple/_vector)."""
    cdef object obj          # what the engine gets (the buffer, a byte view at the displacement, or packed bytes)
    cdef object mpitype      # the MPI datatype (for the inter-node legs)
    cdef Py_ssize_t nbytes   # bytes available from obj's start
    cdef Py_ssize_t esize
    cdef Py_ssize_t count    # elements per block (simple)
    cdef Py_ssize_t displ    # simple: mpi4py's displacement, in elements
    cdef int code, opclass
    cdef bint derived        # a derived datatype (not for reductions)
    cdef bint writable       # a receive buffer
    cdef object counts, displs   # vector: lists of element counts / displacements
    # A packed message (_packed): obj is a uint8 temporary holding the blocks
    # one after another, esize 1, counts and displacements in bytes.
    cdef bint packed
    cdef object user, utype      # the user's buffer (or MPI.BOTTOM) and datatype
    cdef list ucounts, udispls   # the user's blocks, in elements of utype (simple: one block)
    cdef Py_ssize_t usize        # packed bytes per element of utype (MPI_Type_size)
    # The buffer the engine works on, acquired once and held for the call
    # (released with the message): ptr is where the engine starts
    # (the displacement included; packed: the temporary).
    cdef Py_buffer view
    cdef bint held
    cdef char *ptr

    cdef inline void release(self):
        if self.held:
            self.held = False
            PyBuffer_Release(&self.view)

    def __dealloc__(self):
        self.release()


cdef list _FMT1 = [None] * 256         # single-character format -> info (cache)
cdef unsigned char _FMT1_SET[256]
# numpy type number -> info, learnt from the buffer path, native byte order only
cdef list _NPY_INFO = [None] * 256
cdef int _NPY_CONTIGUOUS = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_F_CONTIGUOUS
# NumPy's internal "warn on write" flag (numpy/ndarraytypes.h): such arrays
# take the buffer protocol, which warns
cdef int _NPY_WARN_ON_WRITE = <int>(1u << 31)


cdef inline bint _numpy_direct(object buf, bint writable, bint fmt, _Msg m):
    """A numpy array read in place, without the buffer protocol (whose
    format string costs NumPy more than a small collective): contiguous,
    writable for a receive buffer, a type the buffer path has seen. m.obj
    (set by the caller) keeps the array alive; an array referenced from
    outside cannot be resized."""
    if Py_TYPE(buf) != _NDARRAY:     # (NULL until numpy is seen: numpy_lazy.pxi)
        return False
    cdef PyArrayObject *a = <PyArrayObject *>buf
    cdef int flags = PyArray_FLAGS(a)
    if not flags & _NPY_CONTIGUOUS or (writable and (not flags & NPY_ARRAY_WRITEABLE
                                                      or flags & _NPY_WARN_ON_WRITE)):
        return False
    cdef int tn = PyArray_TYPE(a)
    if fmt:
        if tn < 0 or tn >= 256 or not PyArray_ISNOTSWAPPED(a):
            return False
        info = _NPY_INFO[tn]
        if info is None:
            return False
        m.mpitype, m.code, m.opclass, m.esize = info
    m.release()
    m.ptr = <char *>PyArray_DATA(a)
    m.nbytes = PyArray_NBYTES(a)
    return True


cdef int _getbuf(object buf, bint writable, bint fmt, _Msg m) except -1:
    """Acquire buf for the call (m holds it): length, format, m.ptr.
    1 ok, 0 not accelerated."""
    if _numpy_direct(buf, writable, fmt, m):
        return 1
    cdef int flags = PyBUF_ANY_CONTIGUOUS | (PyBUF_FORMAT if fmt else 0) | (PyBUF_WRITABLE if writable else 0)
    m.release()
    try:
        PyObject_GetBuffer(buf, &m.view, flags)
    except BaseException as exc:
        if writable:
            try:
                ro = memoryview(buf).readonly
            except BaseException:
                ro = False
            if ro:
                raise ArgumentError("the receive buffer is read-only (%s)" % type(buf).__name__)
        if _other_buffer_kind(buf) and not _is_ndarray(buf):
            return 0
        # mpi4py asks for the same buffer (any contiguous, writable to
        # receive) and fails alike: not contiguous, or no buffer at all (a
        # numpy array's DLPack view, mpi4py's second try, has its layout)
        _bad_message(str(exc), ArgumentBufferError if isinstance(exc, BufferError) or _is_ndarray(buf)
                     else ArgumentTypeError if isinstance(exc, TypeError) else ArgumentError)
    m.held = True
    m.ptr = <char *>m.view.buf
    m.nbytes = m.view.len
    if _NDARRAY == NULL:
        _numpy_seen()       # numpy's arrays take _numpy_direct from now on
    if not fmt:
        return 1
    cdef const char *f = m.view.format
    cdef unsigned char ch
    if f == NULL:
        # mpi4py: no format is MPI.BYTE, while a format "B" (uint8 arrays,
        # bytearray) is looked up like any other: MPI.UNSIGNED_CHAR
        info = _predefined_info(_BYTE)
    elif f[0] != 0 and f[1] == 0 and _FMT1_SET[<unsigned char>f[0]]:
        ch = <unsigned char>f[0]
        info = _FMT1[ch]
    else:
        info = _fmt_info((<bytes>f).decode())
        if f[0] != 0 and f[1] == 0:
            ch = <unsigned char>f[0]
            _FMT1[ch] = info
            _FMT1_SET[ch] = 1
    if info is None:
        return 0
    m.mpitype, m.code, m.opclass, m.esize = info
    cdef int tn
    if Py_TYPE(buf) == _NDARRAY and PyArray_ISNOTSWAPPED(<PyArrayObject *>buf):
        tn = PyArray_TYPE(<PyArrayObject *>buf)
        if 0 <= tn < 256:
            _NPY_INFO[tn] = info
    return 1


cdef inline bint _other_buffer_kind(object buf):
    """A buffer mpi4py takes without the buffer protocol (DLPack, CUDA's
    array interface): left to MPI, as everything pgascol does not accelerate."""
    return hasattr(buf, "__dlpack__") or hasattr(buf, "__cuda_array_interface__")


cdef int _bad_message(str why, object kind=ArgumentError) except -1:
    """A buffer specification mpi4py raises for (with its message; kind: the
    ArgumentError that is also mpi4py's exception class): refused here
    before anything moves, so that the other ranks are told (_refused)
    instead of waiting in the engine while this rank's call goes to MPI."""
    raise kind("message: " + why)


cdef bint _index(object x, Py_ssize_t *value) except -1:
    """x is one integer (int, numpy integer, anything with __index__ that
    is not a sequence): *value. 0 otherwise (e.g. a list or an array of
    counts), without raising."""
    if PySequence_Check(x):
        return 0
    try:
        value[0] = PyNumber_Index(x)
    except TypeError:
        return 0
    return 1


cdef list _index_list(object xs, int blocks, str what):
    """A sequence of `blocks` integers as a list of ints (numpy arrays
    too); ArgumentError where mpi4py raises (not integers, wrong length)."""
    try:
        out = [PyNumber_Index(x) for x in xs]
    except TypeError:
        _bad_message("%s must be integers (got %r)" % (what, xs), ArgumentTypeError)
    if len(out) != blocks:
        _bad_message("expecting %d %s, got %d" % (blocks, what, len(out)))
    return out


cdef int _not_negative(Py_ssize_t value, str what) except -1:
    """Negative counts and displacements are refused on every rank alike
    (MPI would read or write before the buffer's start; handing them to MPI
    on this rank alone would strand the others)."""
    if value < 0:
        raise ArgumentError("negative %s %d in a buffer specification" % (what, value))
    return 0


cdef bint _size_arg(object x, str what, Py_ssize_t *value) except -1:
    """A count or displacement of a simple message: 1 with *value;
    ArgumentError where mpi4py raises (not an integer, too large, negative)."""
    try:
        value[0] = x
    except (TypeError, OverflowError) as exc:
        _bad_message("%s %r: %s" % (what, x, exc), ArgumentTypeError if isinstance(exc, TypeError) else ArgumentError)
    _not_negative(value[0], what)
    return 1


cdef int _simple_layout(object o_count, object o_displ, Py_ssize_t length, Py_ssize_t extent,
                        int blocks, _Msg m) except -1:
    """mpi4py's count (per block) and displacement of a simple message, in
    elements `extent` bytes apart, in a buffer of `length` bytes: m.count,
    m.displ; ArgumentError where mpi4py raises, with its message."""
    cdef Py_ssize_t c
    m.displ = 0
    if o_displ is not None:
        _size_arg(o_displ, "displacement", &m.displ)
        if m.displ:
            if extent <= 0:
                _bad_message("cannot handle displacement, datatype extent %d" % extent)
            if m.displ * extent > length:
                _bad_message("displacement %d out of bounds, number of datatype entries %d"
                             % (m.displ, length // extent))
            length -= m.displ * extent
    if o_count is not None:
        return _size_arg(o_count, "count", &m.count)
    m.count = 0
    if length > 0:
        _check_multiple(length, extent)
        c = length // extent
        if blocks >= 2:
            if c % blocks:
                _bad_message("cannot infer count, number of entries %d is not a multiple of required "
                             "number of blocks %d" % (c, blocks))
            c //= blocks
        m.count = c
    return 1


cdef int _check_multiple(Py_ssize_t length, Py_ssize_t extent) except -1:
    if extent <= 0:
        _bad_message("cannot infer count, datatype extent %d" % extent)
    if length % extent:
        _bad_message("cannot infer count, buffer length %d is not a multiple of datatype extent %d"
                     % (length, extent))
    return 0


cdef int _vector_layout(object o_count, object o_displ, Py_ssize_t length, Py_ssize_t extent,
                        int blocks, _Msg m) except -1:
    """mpi4py's counts and displacements of a vector message, in elements
    `extent` bytes apart, in a buffer of `length` bytes: m.counts, m.displs;
    ArgumentError where mpi4py raises, and for negative values."""
    cdef Py_ssize_t csize = 0, c, i
    if o_count is None:
        if length > 0:
            _check_multiple(length, extent)
            csize = length // extent
        m.counts = [csize // blocks + (1 if csize % blocks > i else 0) for i in range(blocks)]
    elif _index(o_count, &c):
        m.counts = [c] * blocks
    else:
        m.counts = _index_list(o_count, blocks, "counts")
    if o_displ is None:
        m.displs = []
        c = 0
        for x in m.counts:
            m.displs.append(c)
            c += x
    elif _index(o_displ, &c):
        m.displs = [c * i for i in range(blocks)]
    else:
        m.displs = _index_list(o_displ, blocks, "displacements")
    for i in range(blocks):
        _not_negative(m.counts[i], "count")
        _not_negative(m.displs[i], "displacement")
    return 1


cdef int _parse(object msg, bint writable, int blocks, bint vector, bint pack, _Msg m) except -1:
    """Fill m from a buffer specification; 1 if pgascol can run it, 0 to
    leave it to MPI (which then behaves, or fails, exactly as natively).
    pack (data-movement collectives only): a datatype the engine does not
    take as it is, or MPI.BOTTOM, makes a packed message (_packed)."""
    cdef object o_buf, o_count = None, o_displ = None, o_type = None
    cdef Py_ssize_t nargs, k = 1
    m.writable = writable
    if PyObject_CheckBuffer(msg):
        o_buf = msg
    elif PyList_Check(msg) or PyTuple_Check(msg):
        nargs = len(msg)
        if nargs == 2:
            o_buf, o_count = msg
            if isinstance(o_count, (_Datatype, str)):
                o_count, o_type = None, o_count
            elif PyTuple_Check(o_count) or (not vector and PyList_Check(o_count)):
                o_count, o_displ = o_count
        elif nargs == 3:
            o_buf, o_count, o_type = msg
            if PyTuple_Check(o_count) or (not vector and PyList_Check(o_count)):
                o_count, o_displ = o_count
        elif nargs == 4:
            o_buf, o_count, o_displ, o_type = msg
        else:
            _bad_message("expecting 2 to 4 items")
        if pack and o_type is not None and (o_buf is None or o_buf is _BOTTOM):
            # absolute addresses (mpi4py reads None as BOTTOM; to Python,
            # BOTTOM is a buffer of no bytes)
            return _packed(o_buf, o_count, o_displ, o_type, blocks, vector, m)
        if not PyObject_CheckBuffer(o_buf):
            if o_buf is None or o_buf is _BOTTOM or _other_buffer_kind(o_buf):
                return 0
            _bad_message("expecting a buffer, got %s" % type(o_buf).__name__, ArgumentTypeError)
    elif _other_buffer_kind(msg):
        return 0
    else:
        _bad_message("expecting buffer or list/tuple, got %s" % type(msg).__name__, ArgumentTypeError)
    if o_type is not None:
        info = _type_info(o_type)
        if info is None:
            cinfo = _contiguous_info(o_type) if isinstance(o_type, _Datatype) else None
            if cinfo is None or cinfo[1] < 1:
                return _packed(o_buf, o_count, o_displ, o_type, blocks, vector, m) if pack else 0
            # parse in elements of the derived type, then count base elements
            info, k = cinfo
            m.derived = True
            info = (info[0], info[1], info[2], info[3] * k)
        m.mpitype, m.code, m.opclass, m.esize = info
        if not _getbuf(o_buf, writable, False, m):
            return 0
    elif not _getbuf(o_buf, writable, True, m):
        return 0
    m.obj = o_buf
    if not vector:
        if not _simple_layout(o_count, o_displ, m.nbytes, m.esize, blocks, m):
            return 0
        if m.displ:
            try:
                m.obj = memoryview(o_buf).cast("B")[m.displ * m.esize:]
            except (TypeError, ValueError):
                return 0
            m.nbytes -= m.displ * m.esize
            m.ptr += m.displ * m.esize
        if k > 1:
            m.count *= k
            m.esize //= k
        return 1
    if not _vector_layout(o_count, o_displ, m.nbytes, m.esize, blocks, m):
        return 0
    if k > 1:
        m.counts = [x * k for x in m.counts]
        m.displs = [x * k for x in m.displs]
        m.esize //= k
    return 1


cdef inline _Msg _simple(object msg, bint writable, int blocks, bint pack):
    cdef _Msg m = _Msg.__new__(_Msg)
    if _parse(msg, writable, blocks, False, pack, m):
        return m
    return None


cdef inline _Msg _vector(object msg, bint writable, int blocks, bint pack):
    cdef _Msg m = _Msg.__new__(_Msg)
    if _parse(msg, writable, blocks, True, pack, m):
        return m
    return None


# ----------------------------------------------------------------- packed messages

# A buffer described by a datatype the engine cannot take as it is (vector,
# indexed, struct, resized, subarray, ..., or a predefined type outside the
# table such as DOUBLE_INT), or addressed from MPI.BOTTOM, takes part in a
# data-movement collective as packed bytes. MPI requires only the type
# signatures to match there, so the other ranks may describe the same data
# with a predefined type: everyone meets in the engine's byte collectives,
# whose methods (inline/cico/cma) follow byte counts that are equal on both
# sides, and no rank falls back to MPI alone while the others wait in the
# engine. MPI packs and unpacks, by a message to self: MPI_PACKED matches any
# type signature.

cdef int _BYTE_CODE = _DT[MPI.BYTE.handle][1]
cdef int _pack_tag = 0       # the last tag of a message to self (_move)
cdef object _SELF = None    # a private Dup of COMM_SELF: pgascol's messages to self never
                            # match the user's own on COMM_SELF
cdef int _raw = -1          # MPI packs to the native bytes: -1 not probed yet, 0 no, 1 yes
_probe_lock = threading.Lock()


cdef bint _packs_raw() except -1:
    """Whether MPI's packed form is the data's native bytes, probed once: the
    engine hands packed bytes to ranks that may read them as a predefined
    type. True of MPICH and Open MPI within a machine; an MPI that packs
    differently (external32, a header) keeps such buffers on MPI as before
    (and every rank of the job runs the same MPI, so all decide alike)."""
    if _raw < 0:
        with _probe_lock:   # threads: one probes, the others wait for its answer
            if _raw < 0:
                _probe_packing()
    return _raw


cdef int _probe_packing() except -1:
    global _SELF, _raw
    cdef int raw = 0
    x = _np().arange(6, dtype="float64") + 0.25
    out = _np().zeros(24, "uint8")
    back = _np().zeros(6)
    vec = None
    try:
        _SELF = MPI.COMM_SELF.Dup()
        vec = MPI.DOUBLE.Create_vector(3, 1, 2).Commit()
        _SELF.Sendrecv([x, 1, vec], 0, 0, [out, 24, _PACKED], 0, 0)
        _SELF.Sendrecv([out, 24, _PACKED], 0, 0, [back, 1, vec], 0, 0)
        raw = (out.tobytes() == x[::2].tobytes() and back[::2].tobytes() == x[::2].tobytes()
               and not back[1::2].any())
    except MPI.Exception:
        pass
    finally:
        if vec is not None:
            vec.Free()
    _raw = raw      # last: a thread that sees it finds _SELF set
    return 0


cdef int _packed(object o_buf, object o_count, object o_displ, object o_type, int blocks, bint vector,
                 _Msg m) except -1:
    """Fill m as a packed message: MPI_Type_size bytes per element, the
    blocks one after another in block order. A send buffer is packed here;
    a receive buffer gets a temporary, unpacked by _done once the collective
    succeeded. Raises ArgumentError when the layout does not fit the buffer;
    0: leave it to MPI."""
    cdef bint bottom = o_buf is None or o_buf is _BOTTOM    # absolute addresses
    cdef Py_ssize_t size, extent, tlb, textent, length = 0, nbytes, i, c, d, lo, hi
    dt = _typedict.get(o_type) if isinstance(o_type, str) else o_type
    if not isinstance(dt, _Datatype) or not _packs_raw():
        return 0
    try:
        size = dt.Get_size()
        extent = dt.Get_extent()[1]
        tlb, textent = dt.Get_true_extent()
    except MPI.Exception:
        return 0        # e.g. DATATYPE_NULL: MPI's own error
    if not bottom and not _getbuf(o_buf, m.writable, False, m):   # (a read-only receive buffer raises)
        return 0
    if not bottom:
        length = m.nbytes
    if vector:
        if not _vector_layout(o_count, o_displ, length, extent, blocks, m):
            return 0
        m.ucounts, m.udispls = m.counts, m.displs
        m.counts, m.displs = [], []
        nbytes = 0
        for c in m.ucounts:
            m.counts.append(c * size)
            m.displs.append(nbytes)
            nbytes += c * size
    else:
        if not _simple_layout(o_count, o_displ, length, extent, blocks, m):
            return 0
        if o_buf is None and m.count:
            return 0    # mpi4py: "buffer is None but count is ..."
        m.ucounts, m.udispls = [m.count * max(blocks, 1)], [m.displ]
        nbytes = m.ucounts[0] * size
        m.count *= size
    if not bottom and size:
        # every block must lie inside the buffer (MPI would read or write past it)
        for i in range(len(m.ucounts)):
            c, d = m.ucounts[i], m.udispls[i]
            if c:
                lo = min(d * extent, (d + c - 1) * extent) + tlb
                hi = max(d * extent, (d + c - 1) * extent) + tlb + textent
                if lo < 0 or hi > length:
                    raise ArgumentError("the %s buffer holds %d bytes but its datatype's layout spans bytes "
                                        "%d to %d" % ("receive" if m.writable else "send", length, lo, hi))
    m.packed = m.derived = True
    m.user = _BOTTOM if bottom else o_buf
    m.utype, m.usize = dt, size
    m.mpitype, m.code, m.opclass, m.esize = _BYTE, _BYTE_CODE, OPC_NONE, 1
    m.obj = _np().empty(nbytes, "uint8")
    _getbuf(m.obj, True, False, m)     # the engine's buffer from now on
    if not m.writable:
        try:
            _pack(m, -1)
        except MPI.Exception:
            return 0    # e.g. a datatype not committed: MPI reports it
    return 1


cdef int _move(_Msg m, int block, bint unpack) except -1:
    """Pack block `block` (-1: all blocks) of the user's buffer into its
    place in m.obj, or unpack m.obj into the user's buffer: one message to
    self through a datatype covering the blocks."""
    global _pack_tag
    cdef Py_ssize_t off = 0, nb = m.nbytes, c
    counts, displs = m.ucounts, m.udispls
    if block >= 0:
        if m.counts is not None:    # vector
            counts, displs = [m.ucounts[block]], [m.udispls[block]]
            off, nb = m.displs[block], m.counts[block]
        else:                       # simple: equal blocks, consecutive in the buffer
            off, nb = block * m.count, m.count
            if nb:
                c = m.count // m.usize
                counts, displs = [c], [m.udispls[0] + block * c]
    if nb == 0:
        return 0
    dt = m.utype
    layout = None
    if len(counts) > 1 or displs[0]:
        layout = dt = dt.Create_indexed(counts, displs).Commit()
    usr = [m.user, 1 if layout is not None else counts[0], dt]
    tmp = [m.obj[off:off + nb], nb, _PACKED]
    # A tag of its own: threads running collectives on different
    # communicators share _SELF, and MPI releases the GIL in Sendrecv, so
    # two packings may be in flight at once (taken under the GIL).
    _pack_tag = _pack_tag % 32767 + 1       # MPI guarantees tags up to 32767
    tag = _pack_tag
    try:
        if unpack:
            _SELF.Sendrecv(tmp, 0, tag, usr, 0, tag)
        else:
            _SELF.Sendrecv(usr, 0, tag, tmp, 0, tag)
    finally:
        if layout is not None:
            layout.Free()
    return 0


cdef inline int _pack(_Msg m, int block) except -1:
    return _move(m, block, False)


cdef inline int _unpack(_Msg m) except -1:
    """Into the user's buffer, what the collective left in a packed receive
    message's temporary."""
    if m is not None and m.packed and m.writable:
        _move(m, -1, True)
    return 0


cdef Py_ssize_t _vec_extent(_Msg m) except -1:
    cdef Py_ssize_t e = 0, i
    for i in range(len(m.counts)):
        if m.counts[i] and m.displs[i] + m.counts[i] > e:
            e = m.displs[i] + m.counts[i]
    return e * m.esize


cdef int _need(_Msg m, Py_ssize_t nbytes, str what) except -1:
    if m.nbytes < nbytes:
        raise ArgumentError("%s holds %d bytes but the call needs %d" % (what, m.nbytes, nbytes))
    return 0


@cython.freelist(8)
cdef class _Layout:
    """The blocks of a buffer laid out per rank, in bytes, as C arrays for the
    engine (Team.c_*). One per call and side: a thread that calls a
    collective on a communicator already in one gets the engine's error, not
    another call's blocks. Up to 16 ranks without an allocation."""
    cdef size_t *counts
    cdef size_t *displs
    cdef Py_ssize_t n
    cdef size_t inline_[32]

    def __cinit__(self, Py_ssize_t n):
        self.n = n
        if n <= 16:
            self.counts = self.inline_
        else:
            self.counts = <size_t *>malloc(2 * n * sizeof(size_t))
            if self.counts == NULL:
                raise MemoryError()
        self.displs = self.counts + max(n, 16)

    def __dealloc__(self):
        if self.counts != self.inline_:
            free(self.counts)

    cdef int fill(self, _Msg m, bint v, str what) except -1:
        """m's blocks (v: its counts and displacements; else m.count elements
        each, one after another), once m's buffer is known to hold them."""
        cdef Py_ssize_t esize = m.esize, c, i
        if v:
            _need(m, _vec_extent(m), what)
            for i in range(self.n):
                self.counts[i] = <Py_ssize_t>m.counts[i] * esize
                self.displs[i] = <Py_ssize_t>m.displs[i] * esize
            return 0
        c = m.count * esize
        _need(m, c * self.n, what)
        for i in range(self.n):
            self.counts[i] = c
            self.displs[i] = i * c
        return 0

    cdef int set_counts(self, list counts) except -1:
        """Counts as given (Reduce_scatter's, in elements); no displacements."""
        cdef Py_ssize_t i
        for i in range(self.n):
            self.counts[i] = counts[i]
        return 0

    cdef Py_ssize_t total(self):
        cdef Py_ssize_t i, t = 0
        for i in range(self.n):
            t += self.counts[i]
        return t

    cdef bint consecutive(self):
        """Every block starts where the one of the rank before ends."""
        cdef Py_ssize_t i
        for i in range(1, self.n):
            if self.displs[i] != self.displs[i - 1] + self.counts[i - 1]:
                return False
        return True

    cdef list count_list(self):
        return [self.counts[i] for i in range(self.n)]

    cdef list displ_list(self):
        return [self.displs[i] for i in range(self.n)]


cdef inline int _basic(_Msg m) except -2:
    """The basic type of a message's elements, as the engine's dtype code,
    for the signature of a rooted collective (PGC_SIG_ROOTED,
    csrc/team/team.h): a contiguous message's own (a derived contiguous
    type's base, as MPI's type signature has it), a packed one's from its
    datatype (_derived_basic)."""
    if not m.packed:
        return m.code       # every small call: no further call
    return _derived_basic(m.utype)

