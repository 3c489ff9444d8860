# cython: boundscheck=False, wraparound=False, cdivision=True
"""pgascol.Comm: a drop-in mpi4py intracommunicator whose buffer collectives
run on the node engine (one node) or on the engine plus MPI among nodes
(several nodes, real or virtual).

The class is a Python-level subclass of mpi4py.MPI.Intracomm defined here so
its methods compile to fast cyfunctions; nothing here includes mpi.h or
cimports mpi4py (MPICH and Open MPI have different ABIs). Buffer specifications
are parsed in cdef code following mpi4py's own rules (msgbuffer.pxi of mpi4py
4.x); anything not accelerated goes to the MPI method of the base class.

The pgascol state of a communicator (node team, inter-node communicators,
rank <-> (node, local rank) map, counters) lives in a _State object in the
`_pg` attribute. It is created eagerly (collectively) by Comm(comm) and by the
communicator constructors (Dup, Split, ...), and released by Free().
"""
import os
import sys
import threading
from time import monotonic as _monotonic, sleep as _sleep

cimport cython
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from cpython.buffer cimport (PyBUF_ANY_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE,
                             PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer)
from cpython.list cimport PyList_Check
from cpython.number cimport PyNumber_Index
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.sequence cimport PySequence_Check
from cpython.tuple cimport PyTuple_Check
cimport numpy as cnp

import numpy as np
from mpi4py import MPI

from ..engine import _core
from ..engine._core cimport Team
from ..errors import ArgumentError, PgascolError, PgascolTimeoutError
from ..node.team import NodeTeam

# ----------------------------------------------------------------- datatypes

# opclass: which reductions MPI defines on a datatype.
cdef enum:
    OPC_NONE = 0     # movement only (CHAR, WCHAR, PACKED)
    OPC_BITWISE = 1  # MPI_BYTE: BAND, BOR, BXOR only
    OPC_FULL = 2     # the engine's (op, dtype) table, which follows MPI's
    OPC_MPI = 3      # a contiguous predefined type outside the table (e.g. float16):
                     # moved as bytes, its reductions left to MPI

cdef dict _DT = {}      # datatype handle -> (Datatype, code, opclass, size)
cdef dict _FMT = {}     # PEP 3118 format -> same tuple, or None (not accelerated)
cdef dict _OP = {}      # op handle -> op code


def _build_tables():
    D = _core.DTYPES
    sized_int = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}
    sized_uint = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
    entries = []
    for name in ("SIGNED_CHAR", "SHORT", "INT", "LONG", "LONG_LONG", "INT8_T", "INT16_T",
                 "INT32_T", "INT64_T"):
        entries.append((name, sized_int, OPC_FULL))
    for name in ("UNSIGNED_CHAR", "UNSIGNED_SHORT", "UNSIGNED", "UNSIGNED_LONG",
                 "UNSIGNED_LONG_LONG", "UINT8_T", "UINT16_T", "UINT32_T", "UINT64_T"):
        entries.append((name, sized_uint, OPC_FULL))
    entries += [("FLOAT", {4: "float32"}, OPC_FULL), ("DOUBLE", {8: "float64"}, OPC_FULL),
                ("LONG_DOUBLE", {np.dtype(np.longdouble).itemsize: "longdouble"}, OPC_FULL),
                ("C_FLOAT_COMPLEX", {8: "complex64"}, OPC_FULL),
                ("CXX_FLOAT_COMPLEX", {8: "complex64"}, OPC_FULL),
                ("C_DOUBLE_COMPLEX", {16: "complex128"}, OPC_FULL),
                ("CXX_DOUBLE_COMPLEX", {16: "complex128"}, OPC_FULL),
                ("C_LONG_DOUBLE_COMPLEX", {np.dtype(np.clongdouble).itemsize: "clongdouble"}, OPC_FULL),
                ("CXX_LONG_DOUBLE_COMPLEX", {np.dtype(np.clongdouble).itemsize: "clongdouble"}, OPC_FULL),
                ("C_BOOL", {1: "bool"}, OPC_FULL), ("CXX_BOOL", {1: "bool"}, OPC_FULL),
                ("BYTE", {1: "uint8"}, OPC_BITWISE), ("CHAR", {1: "int8"}, OPC_NONE),
                ("PACKED", {1: "uint8"}, OPC_NONE), ("WCHAR", {2: "uint16", 4: "uint32"}, OPC_NONE)]
    for name, by_size, opc in entries:
        dt = getattr(MPI, name, None)
        if dt is None or dt == MPI.DATATYPE_NULL:
            continue
        try:
            size = dt.Get_size()
            lb, extent = dt.Get_extent()
        except MPI.Exception:
            continue
        code = by_size.get(size)
        if code is None or lb != 0 or extent != size or _core.dtype_size(D[code]) != size:
            continue
        _DT[dt.handle] = (dt, D[code], opc, size)
    for name in ("SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"):
        _OP[getattr(MPI, name).handle] = _core.OPS[name]


_build_tables()

cdef unsigned char _VALID[32][32]      # [op code][dtype code]: MPI defines it
for _o in range(len(_core.OPS)):
    for _d in range(len(_core.DTYPES)):
        _VALID[_o][_d] = 1 if _core.op_valid(_o, _d) else 0

cdef object _SUM = MPI.SUM
cdef object _IN_PLACE = MPI.IN_PLACE
cdef object _BOTTOM = MPI.BOTTOM
cdef object _PACKED = MPI.PACKED
cdef object _BYTE = MPI.BYTE
cdef object _Datatype = MPI.Datatype
cdef object _Op = MPI.Op
cdef object _typedict = MPI._typedict
cdef object _Intracomm = MPI.Intracomm
cdef int _BITWISE_OPS = (1 << _core.OPS["BAND"]) | (1 << _core.OPS["BOR"]) | (1 << _core.OPS["BXOR"])

cdef tuple _fmt_info(str fmt):
    """mpi4py's format -> datatype rule (getdatatype), then our table."""
    try:
        return _FMT[fmt]
    except KeyError:
        pass
    info = None
    key = fmt
    if key and key[0] == "@":
        key = key[1:]
    elif key and key[0] == "<" and sys.byteorder == "little":
        key = key[1:]
    elif key and key[0] == ">" and sys.byteorder == "big":
        key = key[1:]
    dt = _typedict.get(key)
    if dt is not None:
        info = _predefined_info(dt)
    _FMT[fmt] = info
    return info


cdef tuple _predefined_info(object dt):
    """The table's entry for a predefined datatype. A contiguous predefined
    type outside the table (float16, Fortran types, ...) gets one on first
    use, as bytes (OPC_MPI): every rank passing such a buffer moves it on
    pgascol like those describing the same bytes with a table type, instead
    of going to MPI alone."""
    info = _DT.get(dt.handle)
    if info is not None:
        return info
    try:
        if not dt.is_predefined:
            return None
        size = dt.Get_size()
        lb, extent = dt.Get_extent()
    except Exception:
        return None
    if size <= 0 or lb != 0 or extent != size:
        return None     # gaps (DOUBLE_INT, ...): packed (_packed)
    info = _DT[dt.handle] = (dt, _DT[_BYTE.handle][1], OPC_MPI, size)
    return info


cdef inline tuple _type_info(object t):
    if isinstance(t, _Datatype):
        return _predefined_info(t)
    if isinstance(t, str):
        dt = _typedict.get(t)
        return None if dt is None else _predefined_info(dt)
    return None


cdef tuple _contiguous_info(object t):
    """A derived datatype that is a contiguous run of a predefined one
    (Create_contiguous or Dup, nested): (the predefined type's info, how many
    of it one element holds), or None. Ranks may describe the same buffer
    with such a type or with its base type (same type signature); both run
    on pgascol, so neither falls back alone (reductions excepted: MPI
    defines its operations on predefined types only, so they go to MPI).
    Not cached: the handle of a freed derived type may be reused for
    another one."""
    cdef Py_ssize_t k = 1
    cur = t
    decoded = []
    try:
        while True:
            if cur.is_predefined:
                info = _predefined_info(cur)
                return None if info is None else (info, k)
            base, combiner, params = cur.decode()
            if not base.is_predefined:
                decoded.append(base)
            if combiner == "CONTIGUOUS":
                k *= params["count"]
            elif combiner != "DUP":
                return None
            cur = base
    except Exception:
        return None
    finally:
        for d in decoded:
            try:
                d.Free()
            except Exception:
                pass


cdef inline bint _is_in_place(object x):
    return x is None or x is _IN_PLACE


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
cdef int _NPY_CONTIGUOUS = cnp.NPY_ARRAY_C_CONTIGUOUS | cnp.NPY_ARRAY_F_CONTIGUOUS
# NumPy's internal "warn on write" flag (numpy/ndarraytypes.h): such arrays
# take the buffer protocol, which warns
cdef int _NPY_WARN_ON_WRITE = <int>(1u << 31)
cnp.import_array()


cdef inline bint _numpy_direct(object buf, bint writable, bint fmt, _Msg m):
    """A numpy array read in place, without the buffer protocol (whose
    format string costs NumPy more than a small collective): contiguous,
    writable for a receive buffer, a type the buffer path has seen. m.obj
    (set by the caller) keeps the array alive; an array referenced from
    outside cannot be resized."""
    if type(buf) is not cnp.ndarray:
        return False
    cdef cnp.ndarray a = <cnp.ndarray>buf
    cdef int flags = cnp.PyArray_FLAGS(a)
    if not flags & _NPY_CONTIGUOUS or (writable and (not flags & cnp.NPY_ARRAY_WRITEABLE
                                                      or flags & _NPY_WARN_ON_WRITE)):
        return False
    cdef int tn = cnp.PyArray_TYPE(a)
    if fmt:
        if tn < 0 or tn >= 256 or not cnp.PyArray_ISNOTSWAPPED(a):
            return False
        info = _NPY_INFO[tn]
        if info is None:
            return False
        m.mpitype, m.code, m.opclass, m.esize = info
    m.release()
    m.ptr = <char *>cnp.PyArray_DATA(a)
    m.nbytes = cnp.PyArray_NBYTES(a)
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
    except BaseException:
        if writable:
            try:
                ro = memoryview(buf).readonly
            except BaseException:
                ro = False
            if ro:
                raise ArgumentError("the receive buffer is read-only (%s)" % type(buf).__name__)
        return 0
    m.held = True
    m.ptr = <char *>m.view.buf
    m.nbytes = m.view.len
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
    if type(buf) is cnp.ndarray and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>buf):
        tn = cnp.PyArray_TYPE(<cnp.ndarray>buf)
        if 0 <= tn < 256:
            _NPY_INFO[tn] = info
    return 1


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


cdef list _index_list(object xs, int blocks):
    """A sequence of `blocks` integers as a list of ints (numpy arrays
    too), or None where mpi4py raises (not integers, wrong length)."""
    try:
        out = [PyNumber_Index(x) for x in xs]
    except TypeError:
        return None
    return out if len(out) == blocks else None


cdef int _not_negative(Py_ssize_t value, str what) except -1:
    """Negative counts and displacements are refused on every rank alike
    (MPI would read or write before the buffer's start; handing them to MPI
    on this rank alone would strand the others)."""
    if value < 0:
        raise ArgumentError("negative %s %d in a buffer specification" % (what, value))
    return 0


cdef bint _size_arg(object x, str what, Py_ssize_t *value) except -1:
    """A count or displacement of a simple message: 1 with *value, 0 where
    mpi4py raises (not an integer); ArgumentError if negative."""
    try:
        value[0] = x
    except (TypeError, OverflowError):
        return 0
    _not_negative(value[0], what)
    return 1


cdef int _simple_layout(object o_count, object o_displ, Py_ssize_t length, Py_ssize_t extent,
                        int blocks, _Msg m) except -1:
    """mpi4py's count (per block) and displacement of a simple message, in
    elements `extent` bytes apart, in a buffer of `length` bytes: m.count,
    m.displ. 0 where mpi4py raises; ArgumentError for negative values."""
    cdef Py_ssize_t c
    m.displ = 0
    if o_displ is not None:
        if not _size_arg(o_displ, "displacement", &m.displ):
            return 0
        if m.displ:
            if extent <= 0 or m.displ * extent > length:
                return 0
            length -= m.displ * extent
    if o_count is not None:
        return _size_arg(o_count, "count", &m.count)
    m.count = 0
    if length > 0:
        if extent <= 0 or length % extent:
            return 0
        c = length // extent
        if blocks >= 2:
            if c % blocks:
                return 0
            c //= blocks
        m.count = c
    return 1


cdef int _vector_layout(object o_count, object o_displ, Py_ssize_t length, Py_ssize_t extent,
                        int blocks, _Msg m) except -1:
    """mpi4py's counts and displacements of a vector message, in elements
    `extent` bytes apart, in a buffer of `length` bytes: m.counts, m.displs.
    0 where mpi4py raises; ArgumentError for negative values."""
    cdef Py_ssize_t csize = 0, c, i
    if o_count is None:
        if length > 0:
            if extent <= 0 or length % extent:
                return 0
            csize = length // extent
        m.counts = [csize // blocks + (1 if csize % blocks > i else 0) for i in range(blocks)]
    elif _index(o_count, &c):
        m.counts = [c] * blocks
    else:
        m.counts = _index_list(o_count, blocks)
        if m.counts is None:
            return 0
    if o_displ is None:
        m.displs = []
        c = 0
        for x in m.counts:
            m.displs.append(c)
            c += x
    elif _index(o_displ, &c):
        m.displs = [c * i for i in range(blocks)]
    else:
        m.displs = _index_list(o_displ, blocks)
        if m.displs is None:
            return 0
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
            return 0
        if pack and o_type is not None and (o_buf is None or o_buf is _BOTTOM):
            # absolute addresses (mpi4py reads None as BOTTOM; to Python,
            # BOTTOM is a buffer of no bytes)
            return _packed(o_buf, o_count, o_displ, o_type, blocks, vector, m)
        if not PyObject_CheckBuffer(o_buf):
            return 0
    else:
        return 0
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
    x = np.arange(6, dtype=np.float64) + 0.25
    out = np.zeros(24, np.uint8)
    back = np.zeros(6)
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
    m.obj = np.empty(nbytes, np.uint8)
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


cdef object _last_op = None
cdef int _last_opc = -1

cdef int _op_code(object op, _Msg m) except -2:
    """Engine op code for (op, m's datatype); -1: leave to MPI (user-defined
    or MINLOC/MAXLOC/REPLACE/NO_OP); raises for pairs MPI does not define."""
    global _last_op, _last_opc
    cdef int c
    if op is _last_op:
        c = _last_opc
    else:
        if op is not None and not isinstance(op, _Op):
            raise TypeError("Argument 'op' has incorrect type (expected mpi4py.MPI.Op, got %s)"
                            % type(op).__name__)
        code = _OP.get(op.handle) if op is not None else None
        c = -1 if code is None else code
        _last_op, _last_opc = op, c
    if c < 0 or m.derived or m.opclass == OPC_MPI:
        return -1      # MPI's predefined operations are defined on predefined types only;
                       # the engine's kernels, on the types of its table
    if m.opclass == OPC_FULL:
        if _VALID[c][m.code]:
            return c
        raise ArgumentError("MPI does not define %s on %s" % (_op_name(op), _type_name(m.mpitype)))
    if m.opclass == OPC_BITWISE and (_BITWISE_OPS >> c) & 1:
        return c
    # BYTE with arithmetic, CHAR, ...: the standard leaves them out, yet the
    # libraries differ (MPICH sums CHAR, Open MPI BYTE too): MPI decides, on
    # every rank alike (the pair is the same on all)
    return -1


cdef int _same_types(_Msg s, _Msg r, str name) except -1:
    """A reduction's send and receive datatypes must be the same (mpi4py:
    ValueError), a derived contiguous type too: it is parsed as its base
    type, so compare what the caller passed. Raised on the rank that sees
    it, refused on the node team, instead of that rank going to MPI alone."""
    if (s.mpitype is not r.mpitype and s.mpitype.handle != r.mpitype.handle) or s.derived != r.derived:
        raise ArgumentError("%s: mismatch in send and receive MPI datatypes" % name)
    return 0


def _op_name(op):
    """MPI.SUM -> 'MPI.SUM' (mpi4py's Op has no Get_name)."""
    for name in _core.OPS:
        if getattr(MPI, name, None) == op:
            return "MPI." + name
    return repr(op)


def _type_name(dt):
    try:
        return dt.Get_name() or repr(dt)
    except Exception:
        return repr(dt)


# ----------------------------------------------------------------- state

# Operations counted by the communicator layer (index -> name).
_OPNAMES = ("Barrier", "Bcast", "Reduce", "Allreduce", "Gather", "Gatherv", "Scatter", "Scatterv",
            "Allgather", "Allgatherv", "Alltoall", "Alltoallv", "Reduce_scatter",
            "Reduce_scatter_block", "Scan", "Exscan", "bcast", "reduce", "allreduce", "gather",
            "scatter", "allgather", "alltoall", "barrier")
_PATHNAMES = ("engine", "hier", "mpi", "shm")
cdef enum:
    O_BARRIER, O_BCAST, O_REDUCE, O_ALLREDUCE, O_GATHER, O_GATHERV, O_SCATTER, O_SCATTERV
    O_ALLGATHER, O_ALLGATHERV, O_ALLTOALL, O_ALLTOALLV, O_RS, O_RSB, O_SCAN, O_EXSCAN
    O_LBCAST, O_LREDUCE, O_LALLREDUCE, O_LGATHER, O_LSCATTER, O_LALLGATHER, O_LALLTOALL, O_LBARRIER
    NOPS_
cdef enum:
    P_ENGINE, P_HIER, P_MPI, P_SHM
    NPATHS_

# Tags of the private point-to-point communicator of the hierarchy.
cdef enum:
    TAG_GATHER = 11
    TAG_SCATTER = 12
    TAG_REDUCE = 13

# Pipeline segment of the inter-node legs: 1 MiB measured faster than
# 256 KiB-16 MiB for a 16 MiB Allreduce on 2 virtual nodes.
cdef Py_ssize_t _SEGMENT = 1 << 20

# Hierarchical Allreduce of vectors up to this many bytes: node reduce, one
# leaders' allreduce per node, node broadcast, instead of the partitioned
# pipeline (node reduce-scatter, every local rank's own allreduce, node
# allgather) that spreads large vectors over all local ranks. 2 virtual
# nodes of 2 (pgascol-bench, one job each way): 16 KiB 116 against 361 us,
# 64 KiB 135 against 455 us; 256 KiB-1 MiB the partitioned one ahead
# (docs/PERFORMANCE.md, twenty-first session).
cdef Py_ssize_t _HIER_ROOTED_MAX = 64 << 10


def _u8(obj):
    """A writable-if-possible flat uint8 numpy view of a contiguous buffer."""
    try:
        return np.frombuffer(obj, dtype=np.uint8)
    except (ValueError, TypeError, BufferError):
        return np.asarray(obj).reshape(-1, order="A").view(np.uint8)


cdef class _State:
    """pgascol's side of one communicator."""
    cdef public object team, xcomm, pcomm, ncomm
    cdef public Team core       # typed: the hot collectives are C-level calls (Team.c_*)
    cdef public double timeout
    cdef public Py_ssize_t cold_min  # a hierarchical Allreduce of this many bytes outgrows the cache
    cdef public int rank, size, lrank, lsize, nnodes, nidx
    cdef public int mpi_spin    # polls of an inter-node leg before it yields (_mpi_wait)
    cdef public bint hier, equal, debug
    # Every node holds consecutive ranks and the nodes follow one another in
    # rank order: hierarchical Scan/Exscan need it; Allgather, Gather and
    # Scatter then find each node's blocks together in the user's buffer.
    cdef public bint in_rank_order
    cdef public list node_of, local_of, members
    cdef list scratch_bufs      # pre-faulted work areas of the hierarchical legs
    cdef long long counters[NOPS_][NPATHS_]

    def __init__(self, comm, env=os.environ):
        self.debug = env.get("PGASCOL_DEBUG", "0") not in ("", "0")
        self.team = NodeTeam(comm, env)
        t = self.team
        self.core = t.core
        cfg = t.core.config
        self.timeout = cfg["timeout_s"]
        # The node's share of the cache per member (PGASCOL_RECV_STREAM_MIN;
        # 0: never), the block size from which the engine streams receives.
        self.cold_min = cfg["recv_stream_min"]
        # Ranks outnumber CPUs (the engine then never spins either): polling
        # MPI holds a CPU the peer it waits for may need, so yield at once.
        # 2 virtual nodes of 2, small Allreduce/Allgather/Scan, three
        # alternating jobs each: 8 B Allreduce 1.06-1.16 of MPICH, against
        # 1.18-5.03 after 256 polls (docs/PERFORMANCE.md, twenty-first session).
        self.mpi_spin = 256 if cfg["spin_ns"] else 0
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.lrank, self.lsize = t.local_rank, t.local_size
        self.nidx, self.nnodes = t.node_index, t.num_nodes
        self.ncomm = t.node_comm
        self.hier = self.nnodes > 1
        self.scratch_bufs = [None, None, None]
        self.xcomm = self.pcomm = None
        if self.hier:
            placement = comm.allgather((self.nidx, self.lrank))
            self.node_of = [p[0] for p in placement]
            self.local_of = [p[1] for p in placement]
            self.members = [[] for _ in range(self.nnodes)]
            for r, (n, l) in enumerate(placement):
                self.members[n].append(r)
            for n in range(self.nnodes):
                self.members[n].sort(key=lambda r: self.local_of[r])
            sizes = set(len(m) for m in self.members)
            self.equal = len(sizes) == 1
            self.in_rank_order = [q for m in self.members for q in m] == list(range(self.size))
            # Per-local-rank inter-node communicator; its rank is the node index.
            self.xcomm = comm.Split(self.lrank, self.nidx)
            self.pcomm = comm.Dup()
        self.log("ready: rank %d of %d, node %d of %d, local rank %d of %d%s" % (
            self.rank, self.size, self.nidx, self.nnodes, self.lrank, self.lsize,
            " (hierarchical)" if self.hier else ""))

    def log(self, msg):
        if self.debug:
            sys.stderr.write("[pgascol %d] %s\n" % (self.rank, msg))
            sys.stderr.flush()

    cdef inline void count(self, int op, int path):
        self.counters[op][path] += 1
        if self.debug:
            self.log("%s -> %s" % (_OPNAMES[op], _PATHNAMES[path]))

    cdef object scratch(self, int which, Py_ssize_t nbytes):
        """Work area `which` (0, 1 or 2) of at least nbytes, kept between calls:
        a fresh np.empty of megabytes costs a page fault per 4 KiB on every
        call."""
        buf = self.scratch_bufs[which]
        if buf is None or buf.size < nbytes:
            buf = np.empty(max(nbytes, 4096), np.uint8)
            buf.fill(0)
            self.scratch_bufs[which] = buf
        return buf[:nbytes]

    def counts(self):
        out = {}
        for o in range(NOPS_):
            for p in range(NPATHS_):
                if self.counters[o][p]:
                    out.setdefault(_OPNAMES[o], {})[_PATHNAMES[p]] = self.counters[o][p]
        return out

    def free(self):
        for c in (self.xcomm, self.pcomm):
            if c is not None and c != MPI.COMM_NULL:
                c.Free()
        self.xcomm = self.pcomm = None
        if self.team is not None:
            self.team.free()
        self.team = self.core = None


cdef object _Testall = MPI.Request.Testall


# How long _mpi_wait polls with sched_yield before it sleeps between polls.
# A pipelined leg on an oversubscribed node often waits a few ms for a peer
# that shares its CPU; a sleeping poller answers MPI's next step up to
# ~150 us late each time: 16 MiB Allreduce on 2 virtual nodes of 2 (4 ranks
# on 2 cores) took 1.08-1.38x native sleeping after 1 ms, 0.81-1.05x after
# 50 ms (alternating jobs, docs/PERFORMANCE.md, eighteenth session).
cdef double _MPI_YIELD_S = 0.05


cdef int _mpi_wait(_State st, object reqs, str what) except -1:
    """Complete the requests of an inter-node leg, bounded as the engine's
    waits are: PGASCOL_TIMEOUT, and the node team's health (a local member
    that gave up or died ends the wait too). Otherwise a rank whose peers on
    other nodes failed before their MPI call would block forever. Testall
    drives MPI's progress; after a short spin (none when ranks outnumber
    CPUs: st.mpi_spin) it yields (an oversubscribed node keeps its CPUs for
    the ranks that do the work), and sleeps 100 us
    between polls only once the wait has lasted _MPI_YIELD_S. On
    timeout the node team is aborted: the pending MPI operation can never be
    matched reliably, so the communicator is not used again."""
    if _Testall(reqs):
        return 0
    cdef double start = _monotonic(), now, check = start + 0.1
    cdef int polls = 0
    while not _Testall(reqs):
        polls += 1
        if polls < st.mpi_spin:
            continue
        now = _monotonic()
        if now >= check:
            st.core.check_alive()
            if now - start > st.timeout:
                msg = ("%s: the inter-node MPI phase did not complete within PGASCOL_TIMEOUT=%gs "
                       "(a rank on another node failed or is not calling %s)" % (what, st.timeout, what))
                st.core.abort(msg)
                raise PgascolTimeoutError(msg)
            check = now + 0.1
        if now - start < _MPI_YIELD_S:
            os.sched_yield()
        else:
            _sleep(100e-6)
    return 0


cdef int _in_hierarchy(object exc, int op) except -1:
    """Re-raise an error of a hierarchical collective under the name of the
    collective the user called (the engine names its own step, e.g. the
    Reduce_scatter inside a hierarchical Allreduce)."""
    name = _OPNAMES[op]
    msg = str(exc)
    if not msg.startswith(name):
        exc.args = ("%s (hierarchical): %s" % (name, msg),) + tuple(exc.args[1:])
    raise exc


# Where a Comm keeps its _pg slot (0: unknown, use getattr): the slot comes
# right after mpi4py's object, so every collective reads it with one load
# instead of a generic attribute lookup (~130 instructions). Set once Comm
# exists (_locate_slot), checked against Comm's size.
cdef Py_ssize_t _PG_OFFSET = 0
cdef PyTypeObject *_COMM_TYPE = NULL


cdef inline _State _st(object comm):
    cdef PyObject *raw
    if Py_TYPE(comm) == _COMM_TYPE:
        raw = (<PyObject **>(<char *><PyObject *>comm + _PG_OFFSET))[0]
        st = <object>raw if raw != NULL else None   # NULL: made by MPI without __init__
    else:
        st = getattr(comm, "_pg", None)
    if st is None:
        return None
    if (<_State>st).core is None:
        return None
    return <_State>st


cdef int _check_root(_State st, int root) except -1:
    if root < 0 or root >= st.size:
        raise ArgumentError("root %d out of range for a communicator of %d ranks" % (root, st.size))
    return 0


cdef int _done(_State st, int op, int path, _Msg a, _Msg b) except -1:
    """The end of a data-movement collective that succeeded: a packed
    receive message is unpacked into the user's buffer; the call counted."""
    if (a is not None and a.packed) or (b is not None and b.packed):
        _unpack(a)
        _unpack(b)
        if st.debug:
            st.log("%s: derived datatype or MPI.BOTTOM as packed bytes" % _OPNAMES[op])
    st.count(op, path)
    return 0


# ----------------------------------------------------------------- collectives (1 = done, 0 = use MPI)

cdef int _barrier(_State st) except -1:
    if not st.hier:
        st.core.c_barrier()
        st.count(O_BARRIER, P_ENGINE)
        return 1
    st.core.c_barrier()
    if st.lrank == 0:
        _mpi_wait(st, [st.xcomm.Ibarrier()], "Barrier")
    st.core.c_barrier()
    st.count(O_BARRIER, P_HIER)
    return 1


cdef int _bcast(_State st, object buf, int root) except -1:
    _check_root(st, root)
    cdef _Msg m = _simple(buf, st.rank != root, 0, True)
    if m is None:
        return 0
    cdef Py_ssize_t n = m.count * m.esize
    _need(m, n, "buffer")
    if not st.hier:
        st.core.c_bcast(m.ptr, n, root)
        _done(st, O_BCAST, P_ENGINE, m, None)
        return 1
    try:
        _hier_bcast(st, m, n, root)
    except PgascolError as exc:
        _in_hierarchy(exc, O_BCAST)
    _done(st, O_BCAST, P_HIER, m, None)
    return 1


cdef int _hier_bcast(_State st, _Msg m, Py_ssize_t n, int root) except -1:
    """Root's node first (if the root is not its leader), then the leaders
    (MPI), then every other node from its leader; large messages in segments
    so the leaders' transfer of segment i overlaps the node copy of i-1."""
    cdef int rn = st.node_of[root], rl = st.local_of[root]
    cdef Team core = st.core
    if st.nidx == rn and rl != 0:
        core.c_bcast(m.ptr, n, rl)
    cdef bint node_phase = st.nidx != rn or rl == 0
    if n <= _SEGMENT:      # the same choice on every leader: it depends on n only
        if st.lrank == 0:
            _mpi_wait(st, [st.xcomm.Ibcast([m.obj, n, _BYTE], root=rn)], "Bcast")
        if node_phase:
            core.c_bcast(m.ptr, n, 0)
        return 0
    mv = _u8(m.obj)
    cdef Py_ssize_t off = 0, prev = -1, plen = 0, seg
    req = None
    while off < n or prev >= 0:
        seg = min(_SEGMENT, n - off) if off < n else 0
        if st.lrank == 0 and seg:
            req = [st.xcomm.Ibcast([mv[off:off + seg], seg, _BYTE], root=rn)]
        if prev >= 0 and node_phase:
            core.c_bcast(m.ptr + prev, plen, 0)
        if req is not None:
            _mpi_wait(st, req, "Bcast")
            req = None
        if seg:
            prev, plen = off, seg
            off += seg
        else:
            prev = -1
    return 0


cdef int _allreduce(_State st, object sendbuf, object recvbuf, object op) except -1:
    cdef _Msg r = _simple(recvbuf, True, 0, False)
    if r is None:
        return 0
    cdef _Msg s = None
    cdef bint inplace = _is_in_place(sendbuf)
    if not inplace:
        s = _simple(sendbuf, False, 0, False)
        if s is None:
            return 0
        _same_types(s, r, "Allreduce")
        if s.count != r.count:
            raise ArgumentError("Allreduce: send count %d and receive count %d differ" % (s.count, r.count))
    cdef int opc = _op_code(op, r)
    if opc < 0:
        return 0
    cdef Py_ssize_t n = r.count * r.esize
    _need(r, n, "recvbuf")
    if s is not None:
        _need(s, n, "sendbuf")
    if not st.hier:
        st.core.c_elementwise(0, NULL if inplace else s.ptr, r.ptr, r.count, r.code, opc)
        st.count(O_ALLREDUCE, P_ENGINE)
        return 1
    try:
        _hier_allreduce(st, None if inplace else s.obj, r.obj, NULL if inplace else s.ptr, r.ptr,
                        r.count, r.esize, r.code, opc, r.mpitype, op)
    except PgascolError as exc:
        _in_hierarchy(exc, O_ALLREDUCE)
    st.count(O_ALLREDUCE, P_HIER)
    return 1


cdef int _hier_allreduce(_State st, object sobj, object robj, const char *sptr, char *rptr,
                         Py_ssize_t count, Py_ssize_t esize, int code, int opc, object mpitype,
                         object op) except -1:
    """Equal nodes (HierKNEM's and PGASCol's scheme), segment by segment:
    node reduce-scatter on the engine, then every local rank allreduces its
    own block across nodes on its own inter-node communicator (all local
    ranks share the network work), then node allgather. The inter-node
    allreduce of segment i is in flight while the node reduce-scatters
    segment i+1, and segments keep the working set in cache. Results land
    straight in recvbuf (in place: blocks go through two scratch areas);
    when recvbuf outgrows the cache (cold_min), the node allgather writes
    it with streaming stores: the segments gathered first are out of the
    cache by the end anyway, and an ordinary store would fetch each line
    only to overwrite it (2 virtual nodes of 2, 16 MiB: the allgather
    phase 3.1-5.0 ms instead of 4.3-5.3; docs/PERFORMANCE.md, nineteenth
    session).
    Vectors up to _HIER_ROOTED_MAX, and unequal nodes: node reduce to the
    leader, leaders' allreduce, node broadcast (one MPI call per node: the
    latency of a small vector is in its steps, not its bytes).
    sobj None / sptr NULL: in place (the data in robj)."""
    cdef Team core = st.core
    cdef Py_ssize_t L = st.lsize, l = st.lrank, seg, first = 0, n, mine, off, i, k = 0
    cdef bint inplace = sobj is None, cold = 0 < st.cold_min <= count * esize
    if st.equal and count * esize > _HIER_ROOTED_MAX:
        out = _u8(robj)
        src = out if inplace else _u8(sobj)
        seg = max(L, _SEGMENT // esize)
        pending = None          # the previous segment: (request, allgather arguments)
        laid = -1               # the segment length the block layout below is for
        while first < count or pending is not None:
            nxt = None
            if first < count:
                n = min(seg, count - first)
                if n != laid:   # once for the full segments, once for the last one
                    counts = [n // L + (1 if n % L > i else 0) for i in range(L)]
                    bcounts = [c * esize for c in counts]
                    displs = [0] * L
                    for i in range(1, L):
                        displs[i] = displs[i - 1] + bcounts[i - 1]
                    laid = n
                mine = counts[l]
                block = first * esize + displs[l]
                seg_out = out[first * esize:(first + n) * esize]
                blk = (st.scratch(k & 1, mine * esize) if inplace
                       else out[block:block + mine * esize])
                core.reduce_scatter(src[first * esize:(first + n) * esize], blk, counts, code, opc)
                req = [st.xcomm.Iallreduce(_IN_PLACE, [blk, mine, mpitype], op)] if mine else []
                nxt = (req, blk if inplace else None, mine * esize, seg_out, bcounts, displs)
                first += n
                k += 1
            if pending is not None:
                _mpi_wait(st, pending[0], "Allreduce")
                core.allgather(pending[1], pending[2], pending[3], pending[4], pending[5], True, cold)
            pending = nxt
        return 0
    if st.lrank == 0:
        core.c_reduce(sptr, rptr, count, code, opc, 0)
        _mpi_wait(st, [st.xcomm.Iallreduce(_IN_PLACE, [robj, count, mpitype], op)], "Allreduce")
    else:
        core.c_reduce(rptr if sptr == NULL else sptr, NULL, count, code, opc, 0)
    core.c_bcast(rptr, count * esize, 0)
    return 0


cdef int _reduce(_State st, object sendbuf, object recvbuf, object op, int root) except -1:
    _check_root(st, root)
    cdef bint at_root = st.rank == root
    cdef bint inplace = _is_in_place(sendbuf)
    cdef _Msg s = None, r = None, t
    if at_root:
        r = _simple(recvbuf, True, 0, False)
        if r is None:
            return 0
        if not inplace:
            s = _simple(sendbuf, False, 0, False)
            if s is None:
                return 0
            _same_types(s, r, "Reduce")
            if s.count != r.count:
                raise ArgumentError("Reduce: send count %d and receive count %d differ" % (s.count, r.count))
        t = r
    else:
        if inplace:
            return 0   # erroneous in MPI: let MPI report it
        s = _simple(sendbuf, False, 0, False)
        if s is None:
            return 0
        t = s
    cdef int opc = _op_code(op, t)
    if opc < 0:
        return 0
    cdef Py_ssize_t n = t.count * t.esize
    if r is not None:
        _need(r, n, "recvbuf")
    if s is not None:
        _need(s, n, "sendbuf")
    if not st.hier:
        st.core.c_reduce(NULL if s is None else s.ptr, NULL if r is None else r.ptr, t.count, t.code,
                         opc, root)
        st.count(O_REDUCE, P_ENGINE)
        return 1
    try:
        _hier_reduce(st, s, r, t, opc, op, root)
    except PgascolError as exc:
        _in_hierarchy(exc, O_REDUCE)
    st.count(O_REDUCE, P_HIER)
    return 1


cdef int _hier_reduce(_State st, _Msg s, _Msg r, _Msg t, int opc, object op, int root) except -1:
    """Node reduce to the leader, leaders' Reduce to the root's node (MPI),
    then to the root if it does not lead its node. s None: in place at the
    root; r: the root's; t: the message that tells count and type."""
    cdef Team core = st.core
    cdef int rn = st.node_of[root], rl = st.local_of[root]
    cdef Py_ssize_t count = t.count, n = count * t.esize
    cdef bint at_root = st.rank == root
    cdef char *accp
    if st.lrank == 0:
        acc = r.obj if at_root else st.scratch(0, n)
        accp = r.ptr if at_root else <char *>cnp.PyArray_DATA(acc)
        # in place at a root that leads its node: the data is already in r
        core.c_reduce(NULL if s is None else s.ptr, accp, count, t.code, opc, 0)
        if st.nidx == rn:
            req = st.xcomm.Ireduce(_IN_PLACE, [acc, count, t.mpitype], op, root=rn)
        else:
            req = st.xcomm.Ireduce([acc, count, t.mpitype], None, op, root=rn)
        _mpi_wait(st, [req], "Reduce")
        if st.nidx == rn and rl != 0:
            _mpi_wait(st, [st.ncomm.Isend([acc, n, _BYTE], dest=rl, tag=TAG_REDUCE)], "Reduce")
    else:
        core.c_reduce(r.ptr if s is None else s.ptr, NULL, count, t.code, opc, 0)
        if at_root:
            _mpi_wait(st, [st.ncomm.Irecv([r.obj, n, _BYTE], source=0, tag=TAG_REDUCE)], "Reduce")
    return 0


cdef int _gather(_State st, object sendbuf, object recvbuf, int root, bint v) except -1:
    _check_root(st, root)
    cdef bint at_root = st.rank == root
    cdef bint inplace = at_root and _is_in_place(sendbuf)
    cdef _Msg s = None, r = None
    cdef _Layout lay = None
    cdef Py_ssize_t sb = 0
    if not inplace:
        s = _simple(sendbuf, False, 0, True)
        if s is None:
            return 0
        sb = s.count * s.esize
        _need(s, sb, "sendbuf")
    if at_root:
        r = _vector(recvbuf, True, st.size, True) if v else _simple(recvbuf, True, st.size, True)
        if r is None:
            return 0
        lay = _Layout(st.size)
        lay.fill(r, v, "recvbuf")
        if inplace:
            sb = lay.counts[root]
        elif <Py_ssize_t>lay.counts[root] != sb:
            raise ArgumentError("Gather%s: the root sends %d bytes but expects %d from itself"
                                % ("v" if v else "", sb, lay.counts[root]))
        if inplace and r.packed:
            _pack(r, root)      # the root's own block, where the engine leaves it
    cdef int opi = O_GATHERV if v else O_GATHER
    if not st.hier:
        st.core.c_gather(v, NULL if s is None else s.ptr, sb, NULL if r is None else r.ptr,
                         NULL if lay is None else lay.counts, NULL if lay is None else lay.displs, root)
        _done(st, opi, P_ENGINE, s, r)
        return 1
    try:
        _hier_gather(st, s, sb, r, lay, root, v)
    except PgascolError as exc:
        _in_hierarchy(exc, opi)
    _done(st, opi, P_HIER, s, r)
    return 1


cdef _Layout _node_sizes(_State st, Py_ssize_t mine, bint v):
    """Byte counts of my node's members (local rank order) one after
    another, known to the leader (None elsewhere): equal for fixed-size
    forms, exchanged on the engine for v forms."""
    cdef _Layout ml = _Layout(st.lsize) if st.lrank == 0 else None
    cdef Py_ssize_t i
    if v:
        arr = np.array([mine], np.int64)
        out = np.zeros(st.lsize, np.int64) if ml is not None else None
        st.core.gather(arr, 8, out, [8] * st.lsize if ml is not None else None, None, 0, False)
    if ml is not None:
        for i in range(st.lsize):
            ml.counts[i] = out[i] if v else mine
            ml.displs[i] = 0 if i == 0 else ml.displs[i - 1] + ml.counts[i - 1]
    return ml


cdef _Layout _members_layout(_State st, _Layout lay, int node):
    """The blocks of `node`'s members (local rank order) out of the
    communicator-wide layout."""
    mem = st.members[node]
    cdef _Layout ml = _Layout(len(mem))
    cdef Py_ssize_t i = 0
    for q in mem:
        ml.counts[i] = lay.counts[<int>q]
        ml.displs[i] = lay.displs[<int>q]
        i += 1
    return ml


cdef Py_ssize_t _node_bytes(_State st, _Layout lay, int node):
    cdef Py_ssize_t tot = 0
    for q in st.members[node]:
        tot += lay.counts[<int>q]
    return tot


cdef object _node_message(_State st, _Layout lay, object u8, int node, bint in_order, bint fill):
    """The blocks of `node`'s members (u8: the root's whole buffer as bytes)
    as the one message its leader and the root exchange: with blocks in
    rank order their stretch of u8 itself; otherwise a temporary, filled
    from u8 (fill: Scatter) or to be placed into it (_place_node_message:
    Gather)."""
    cdef int first = st.members[node][0]
    if in_order:
        return u8[lay.displs[first]:lay.displs[first] + _node_bytes(st, lay, node)]
    if fill:
        parts = [u8[lay.displs[<int>q]:lay.displs[<int>q] + lay.counts[<int>q]] for q in st.members[node]]
        return np.concatenate(parts) if parts else np.empty(0, np.uint8)
    return np.empty(_node_bytes(st, lay, node), np.uint8)


cdef int _place_node_message(_State st, _Layout lay, object u8, int node, object msg) except -1:
    cdef Py_ssize_t off = 0, c
    for q in st.members[node]:
        c = lay.counts[<int>q]
        u8[lay.displs[<int>q]:lay.displs[<int>q] + c] = msg[off:off + c]
        off += c
    return 0


cdef int _hier_gather(_State st, _Msg s, Py_ssize_t sb, _Msg r, _Layout lay, int root,
                      bint v) except -1:
    """Every other node gathers its blocks at its leader, which sends them
    to the root in one message (pcomm); the root's node gathers on the
    engine meanwhile. With nodes of consecutive ranks and blocks one after
    another (the usual case) a node's message lands straight at its place
    in the root's buffer; otherwise the root places each block. s None: in
    place at the root."""
    cdef Team core = st.core
    cdef int rn = st.node_of[root], rl = st.local_of[root], n
    cdef Py_ssize_t tot
    cdef _Layout ml
    if st.nidx == rn:
        if st.rank != root:
            core.c_gather(True, s.ptr, sb, NULL, NULL, NULL, rl)
            return 0
        in_order = st.in_rank_order and lay.consecutive()
        dst = _u8(r.obj)
        reqs, bufs = [], []
        for n in range(st.nnodes):
            if n != rn:
                b = _node_message(st, lay, dst, n, in_order, False)
                if not in_order:
                    bufs.append((n, b))
                reqs.append(st.pcomm.Irecv([b, len(b), _BYTE], source=st.members[n][0], tag=TAG_GATHER))
        ml = _members_layout(st, lay, rn)
        try:
            core.c_gather(True, NULL if s is None else s.ptr, sb, r.ptr, ml.counts, ml.displs, rl)
        except BaseException:
            for req in reqs:        # no receive may stay posted into this call's buffers
                req.Cancel()
            _mpi_wait(st, reqs, "Gather")
            raise
        _mpi_wait(st, reqs, "Gather")
        for n, b in bufs:
            _place_node_message(st, lay, dst, n, b)
        return 0
    ml = _node_sizes(st, sb, v)
    if ml is None:
        core.c_gather(True, s.ptr, sb, NULL, NULL, NULL, 0)
        return 0
    tot = ml.displs[st.lsize - 1] + ml.counts[st.lsize - 1]
    b = st.scratch(0, tot)
    core.c_gather(True, s.ptr, sb, <char *>cnp.PyArray_DATA(b), ml.counts, ml.displs, 0)
    _mpi_wait(st, [st.pcomm.Isend([b, tot, _BYTE], dest=root, tag=TAG_GATHER)], "Gather")
    return 0


cdef int _scatter(_State st, object sendbuf, object recvbuf, int root, bint v) except -1:
    _check_root(st, root)
    cdef bint at_root = st.rank == root
    cdef bint inplace = at_root and _is_in_place(recvbuf)
    cdef _Msg s = None, r = None
    cdef _Layout lay = None
    cdef Py_ssize_t rb = 0
    if not inplace:
        r = _simple(recvbuf, True, 0, True)
        if r is None:
            return 0
        rb = r.count * r.esize
        _need(r, rb, "recvbuf")
    if at_root:
        s = _vector(sendbuf, False, st.size, True) if v else _simple(sendbuf, False, st.size, True)
        if s is None:
            return 0
        lay = _Layout(st.size)
        lay.fill(s, v, "sendbuf")
        if inplace:
            rb = lay.counts[root]
        elif <Py_ssize_t>lay.counts[root] != rb:
            raise ArgumentError("Scatter%s: the root sends %d bytes to itself but receives %d"
                                % ("v" if v else "", lay.counts[root], rb))
    cdef int opi = O_SCATTERV if v else O_SCATTER
    if not st.hier:
        st.core.c_scatter(v, NULL if s is None else s.ptr, NULL if lay is None else lay.counts,
                          NULL if lay is None else lay.displs, NULL if r is None else r.ptr, rb, root)
        _done(st, opi, P_ENGINE, s, r)
        return 1
    try:
        _hier_scatter(st, s, lay, r, rb, root, v)
    except PgascolError as exc:
        _in_hierarchy(exc, opi)
    _done(st, opi, P_HIER, s, r)
    return 1


cdef int _hier_scatter(_State st, _Msg s, _Layout lay, _Msg r, Py_ssize_t rb, int root,
                       bint v) except -1:
    """Gather's mirror: the root sends every other node its members' blocks
    in one message (pcomm; with nodes of consecutive ranks and blocks one
    after another, straight out of the send buffer), its leader scatters
    them on the engine; the root's node scatters from the root meanwhile.
    r None: in place at the root."""
    cdef Team core = st.core
    cdef int rn = st.node_of[root], rl = st.local_of[root], n
    cdef Py_ssize_t tot
    cdef _Layout ml
    cdef char *rptr = NULL if r is None else r.ptr
    if st.nidx == rn:
        if st.rank != root:
            core.c_scatter(True, NULL, NULL, NULL, rptr, rb, rl)
            return 0
        in_order = st.in_rank_order and lay.consecutive()
        src = _u8(s.obj)
        reqs = []
        for n in range(st.nnodes):
            if n != rn:
                b = _node_message(st, lay, src, n, in_order, True)
                reqs.append(st.pcomm.Isend([b, len(b), _BYTE], dest=st.members[n][0], tag=TAG_SCATTER))
        ml = _members_layout(st, lay, rn)
        core.c_scatter(True, s.ptr, ml.counts, ml.displs, rptr, rb, rl)
        _mpi_wait(st, reqs, "Scatter")
        return 0
    ml = _node_sizes(st, rb, v)
    if ml is None:
        core.c_scatter(True, NULL, NULL, NULL, rptr, rb, 0)
        return 0
    tot = ml.displs[st.lsize - 1] + ml.counts[st.lsize - 1]
    b = st.scratch(0, tot)
    _mpi_wait(st, [st.pcomm.Irecv([b, tot, _BYTE], source=root, tag=TAG_SCATTER)], "Scatter")
    core.c_scatter(True, <char *>cnp.PyArray_DATA(b), ml.counts, ml.displs, rptr, rb, 0)
    return 0


cdef int _allgather(_State st, object sendbuf, object recvbuf, bint v) except -1:
    cdef bint inplace = _is_in_place(sendbuf)
    cdef _Msg s = None
    cdef _Msg r = _vector(recvbuf, True, st.size, True) if v else _simple(recvbuf, True, st.size, True)
    if r is None:
        return 0
    cdef _Layout lay = _Layout(st.size)
    lay.fill(r, v, "recvbuf")
    cdef Py_ssize_t sb
    if inplace:
        sb = lay.counts[st.rank]
        if r.packed:
            _pack(r, st.rank)   # my own block, which the engine reads in place
    else:
        s = _simple(sendbuf, False, 0, True)
        if s is None:
            return 0
        sb = s.count * s.esize
        _need(s, sb, "sendbuf")
        if sb != <Py_ssize_t>lay.counts[st.rank]:
            raise ArgumentError("Allgather%s: this rank sends %d bytes but receives %d from itself"
                                % ("v" if v else "", sb, lay.counts[st.rank]))
    cdef int opi = O_ALLGATHERV if v else O_ALLGATHER
    if not st.hier:
        st.core.c_allgather(v, NULL if inplace else s.ptr, sb, r.ptr, lay.counts, lay.displs, False)
        _done(st, opi, P_ENGINE, s, r)
        return 1
    try:
        if st.in_rank_order and lay.consecutive():
            _hier_allgather_in_order(st, NULL if inplace else s.ptr, sb, r, lay)
        else:
            bcounts, bdispls = lay.count_list(), lay.displ_list()
            sobj = _u8(r.obj)[bdispls[st.rank]:bdispls[st.rank] + sb] if inplace else s.obj
            _hier_allgather(st, sobj, sb, r.obj, bcounts, bdispls)
    except PgascolError as exc:
        _in_hierarchy(exc, opi)
    _done(st, opi, P_HIER, s, r)
    return 1


cdef int _hier_allgather_in_order(_State st, const char *sptr, Py_ssize_t sb, _Msg r,
                                  _Layout lay) except -1:
    """Nodes of consecutive ranks in rank order, blocks one after another in
    rank order (the usual case): every node's blocks already lie together
    in the receive buffer, so the node gathers straight into the leader's
    receive buffer, the leaders allgather their nodes' stretches in place
    (MPI), and the node broadcasts the whole; no scratch, no reordering.
    sptr NULL: in place (my block at its place in r)."""
    cdef Team core = st.core
    cdef int first = st.members[st.nidx][0], nn
    cdef bint lead = st.lrank == 0
    cdef size_t start = lay.displs[0], total = lay.displs[st.size - 1] + lay.counts[st.size - 1] - start
    if sptr == NULL and not lead:
        sptr = r.ptr + lay.displs[st.rank]
    core.c_gather(True, sptr, sb, r.ptr if lead else NULL, lay.counts + first if lead else NULL,
                  lay.displs + first if lead else NULL, 0)
    if lead:
        node_tot, offs = [], []
        for m in st.members:
            nn = m[0]
            offs.append(lay.displs[nn] - start)
            node_tot.append(lay.displs[nn + len(m) - 1] + lay.counts[nn + len(m) - 1] - lay.displs[nn])
        whole = _u8(r.obj)[start:start + total]
        if node_tot.count(node_tot[0]) == st.nnodes:    # MPI's Allgather costs less than its v-form
            req = st.xcomm.Iallgather(_IN_PLACE, [whole, node_tot[0], _BYTE])
        else:
            req = st.xcomm.Iallgatherv(_IN_PLACE, [whole, (node_tot, offs), _BYTE])
        _mpi_wait(st, [req], "Allgather")
    core.c_bcast(r.ptr + start, total, 0)
    return 0


cdef int _hier_allgather(_State st, object sobj, Py_ssize_t sb, object robj, list bcounts,
                         list bdispls) except -1:
    """Node gather to the leader, leaders' Allgatherv of node blocks (MPI),
    node broadcast of the whole, every rank places the blocks."""
    core = st.core
    mem = st.members[st.nidx]
    sizes = [bcounts[r] for r in mem]
    node_tot = [sum(bcounts[r] for r in st.members[n]) for n in range(st.nnodes)]
    offs = []
    cdef Py_ssize_t off = 0, total
    for t in node_tot:
        offs.append(off)
        off += t
    total = off
    full = np.empty(total, np.uint8)
    mine = full[offs[st.nidx]:offs[st.nidx] + node_tot[st.nidx]]
    core.gather(sobj, sb, mine if st.lrank == 0 else None, sizes if st.lrank == 0 else None, None, 0, True)
    if st.lrank == 0:
        _mpi_wait(st, [st.xcomm.Iallgatherv(_IN_PLACE, [full, (node_tot, offs), _BYTE])], "Allgather")
    core.bcast(full, total, 0)
    dst = _u8(robj)
    for n in range(st.nnodes):
        off = offs[n]
        for r in st.members[n]:
            c = bcounts[r]
            if c:
                dst[bdispls[r]:bdispls[r] + c] = full[off:off + c]
            off += c
    return 0


cdef int _alltoall(_State st, object sendbuf, object recvbuf, bint v) except -1:
    cdef bint inplace = _is_in_place(sendbuf)
    cdef _Msg s = None
    cdef _Msg r = _vector(recvbuf, True, st.size, True) if v else _simple(recvbuf, True, st.size, True)
    if r is None:
        return 0
    cdef _Layout rlay = _Layout(st.size), slay = None
    rlay.fill(r, v, "recvbuf")
    if not inplace:
        s = _vector(sendbuf, False, st.size, True) if v else _simple(sendbuf, False, st.size, True)
        if s is None:
            return 0
        slay = _Layout(st.size)
        slay.fill(s, v, "sendbuf")
        if slay.counts[st.rank] != rlay.counts[st.rank]:
            raise ArgumentError("Alltoall%s: this rank sends %d bytes to itself but receives %d"
                                % ("v" if v else "", slay.counts[st.rank], rlay.counts[st.rank]))
    if inplace and r.packed:
        _pack(r, -1)        # in place, every block is read from the receive buffer
    cdef int opi = O_ALLTOALLV if v else O_ALLTOALL
    if not st.hier:
        st.core.c_alltoall(v, NULL if inplace else s.ptr, NULL if inplace else slay.counts,
                           NULL if inplace else slay.displs, r.ptr, rlay.counts, rlay.displs)
        _done(st, opi, P_ENGINE, s, r)
        return 1
    try:
        _hier_alltoall(st, s, slay, r, rlay, v)
    except PgascolError as exc:
        _in_hierarchy(exc, opi)
    _done(st, opi, P_HIER, s, r)
    return 1


# Tag of the hierarchical Alltoall(v)'s messages on the private pcomm.
cdef int _TAG_ALLTOALL = 21


cdef int _hier_alltoall(_State st, _Msg s, _Layout slay, _Msg r, _Layout rlay, bint v) except -1:
    """Blocks between members of my node through the engine (an Alltoallv
    over the node restricted to the members' counts and displacements), the
    blocks to and from every other rank by MPI point-to-point on pcomm, posted
    before the engine part and completed after it. Every block goes straight
    between the two ranks' buffers at their own offsets, so rank order holds
    whatever the placement of ranks on nodes. In place (s None) the blocks
    for remote ranks are copied out of recvbuf before anything is received."""
    cdef Team core = st.core
    pcomm = st.pcomm
    node_of = st.node_of
    cdef int P = st.size, me = st.rank, nid = st.nidx, i, q
    cdef Py_ssize_t c, d, off
    cdef bint inplace = s is None
    dst = _u8(r.obj)
    reqs = []
    # (peer, offset in src, bytes) of the remote blocks, peers in rotated
    # order me+1, me+2, ... so that the ranks do not all start on rank 0
    sends = []
    if inplace:
        # in place: the outgoing remote blocks (receive layout) are copied out
        # of recvbuf first, as the incoming ones land on them
        off = 0
        for i in range(1, P):
            q = (me + i) % P
            if node_of[q] != nid and rlay.counts[q]:
                sends.append((q, off, rlay.counts[q]))
                off += rlay.counts[q]
        src = np.empty(off, np.uint8)
        for q, off, c in sends:
            d = rlay.displs[q]
            src[off:off + c] = dst[d:d + c]
    else:
        src = _u8(s.obj)
        for i in range(1, P):
            q = (me + i) % P
            if node_of[q] != nid and slay.counts[q]:
                sends.append((q, slay.displs[q], slay.counts[q]))
    for q in range(P):
        if node_of[q] != nid:
            c = rlay.counts[q]
            if c:
                d = rlay.displs[q]
                reqs.append(pcomm.Irecv([dst[d:d + c], c, _BYTE], source=q, tag=_TAG_ALLTOALL))
    for q, off, c in sends:
        reqs.append(pcomm.Isend([src[off:off + c], c, _BYTE], dest=q, tag=_TAG_ALLTOALL))
    cdef _Layout mr = _members_layout(st, rlay, nid)
    cdef _Layout ms = None if inplace else _members_layout(st, slay, nid)
    core.c_alltoall(v, NULL if inplace else s.ptr, NULL if inplace else ms.counts,
                    NULL if inplace else ms.displs, r.ptr, mr.counts, mr.displs)
    if reqs:
        _mpi_wait(st, reqs, "Alltoallv" if v else "Alltoall")
    return 0


cdef int _reduce_scatter(_State st, object sendbuf, object recvbuf, object recvcounts, object op,
                         bint block) except -1:
    cdef bint inplace = _is_in_place(sendbuf)
    cdef _Msg s = None, r
    cdef _Layout lay
    cdef Py_ssize_t total, i
    r = _simple(recvbuf, True, st.size if (inplace and block) else 0, False)
    if r is None:
        return 0
    if block:
        counts = [r.count] * st.size
    else:
        if recvcounts is None:
            return 0   # mpi4py allgathers the counts itself
        try:
            counts = [PyNumber_Index(c) for c in recvcounts]
        except (TypeError, ValueError):
            return 0
        if len(counts) != st.size or min(counts) < 0:
            return 0
    total = sum(counts)
    if not inplace:
        s = _simple(sendbuf, False, st.size if block else 0, False)
        if s is None:
            return 0
        _same_types(s, r, "Reduce_scatter_block" if block else "Reduce_scatter")
        if block:
            if s.count != r.count:
                raise ArgumentError("Reduce_scatter_block: send count %d per rank and receive count %d differ"
                                    % (s.count, r.count))
        else:
            if s.count != total:
                raise ArgumentError("Reduce_scatter: send count %d and sum(recvcounts) %d differ"
                                    % (s.count, total))
            if r.count != counts[st.rank]:
                raise ArgumentError("Reduce_scatter: receive count %d and recvcounts[%d] %d differ"
                                    % (r.count, st.rank, counts[st.rank]))
        _need(s, total * s.esize, "sendbuf")
        _need(r, counts[st.rank] * r.esize, "recvbuf")
    else:
        if not block and r.count != total:
            raise ArgumentError("Reduce_scatter: receive count %d and sum(recvcounts) %d differ"
                                % (r.count, total))
        _need(r, total * r.esize, "recvbuf")
    cdef int opc = _op_code(op, r)
    if opc < 0:
        return 0
    cdef int opi = O_RSB if block else O_RS
    if not st.hier:
        lay = _Layout(st.size)
        lay.set_counts(counts)
        st.core.c_reduce_scatter(block, NULL if inplace else s.ptr, r.ptr, lay.counts, r.code, opc)
        st.count(opi, P_ENGINE)
        return 1
    # hierarchy: allreduce the whole vector, keep my part
    cdef Py_ssize_t esize = r.esize, start = sum(counts[:st.rank]) * esize, mine = counts[st.rank] * esize
    tmp = st.scratch(2, total * esize)      # (the Allreduce uses 0 and 1 only in place)
    cdef char *tp = <char *>cnp.PyArray_DATA(tmp)
    try:
        _hier_allreduce(st, r.obj if inplace else s.obj, tmp, r.ptr if inplace else s.ptr, tp,
                        total, esize, r.code, opc, r.mpitype, op)
    except PgascolError as exc:
        _in_hierarchy(exc, opi)
    memcpy(r.ptr, tp + start, mine)
    st.count(opi, P_HIER)
    return 1


cdef int _scan(_State st, object sendbuf, object recvbuf, object op, bint ex) except -1:
    if st.hier and not st.in_rank_order:
        return 0   # nodes interleave in rank order: MPI's own Scan/Exscan (counted as 'mpi')
    cdef _Msg r = _simple(recvbuf, True, 0, False)
    if r is None:
        return 0
    cdef _Msg s = None
    cdef bint inplace = _is_in_place(sendbuf)
    if not inplace:
        s = _simple(sendbuf, False, 0, False)
        if s is None:
            return 0
        _same_types(s, r, "Exscan" if ex else "Scan")
        if s.count != r.count:
            raise ArgumentError("%s: send count %d and receive count %d differ"
                                % ("Exscan" if ex else "Scan", s.count, r.count))
    cdef int opc = _op_code(op, r)
    if opc < 0:
        return 0
    cdef Py_ssize_t n = r.count * r.esize
    _need(r, n, "recvbuf")
    if s is not None:
        _need(s, n, "sendbuf")
    if st.hier:
        try:
            _hier_scan(st, s, r, opc, op, ex)
        except PgascolError as exc:
            _in_hierarchy(exc, O_EXSCAN if ex else O_SCAN)
        st.count(O_EXSCAN if ex else O_SCAN, P_HIER)
        return 1
    if ex:
        st.core.c_elementwise(2, NULL if inplace else s.ptr, r.ptr, r.count, r.code, opc)
    else:
        st.core.c_elementwise(1, NULL if inplace else s.ptr, r.ptr, r.count, r.code, opc)
    st.count(O_EXSCAN if ex else O_SCAN, P_ENGINE)
    return 1


cdef int _hier_scan(_State st, _Msg s, _Msg r, int opc, object op, bint ex) except -1:
    """Scan/Exscan over nodes of consecutive ranks in rank order (see
    _State.in_rank_order): the node's own (ex)scan on the engine; the Exscan of
    the node totals across nodes (MPI, on an xcomm, whose rank is the node
    index) by the holder of the total: with equal nodes the last local rank
    of every node, otherwise the leaders after a node broadcast of the total;
    the node broadcast of that prefix from the holder; locally prefix op own
    part (lower ranks on the left). Exscan leaves rank 0's buffer untouched.
    s None: in place."""
    cdef Team core = st.core
    cdef Py_ssize_t count = r.count, n = count * r.esize
    cdef int code = r.code, last = st.lsize - 1
    cdef int holder = last if st.equal else 0
    tot, pre = st.scratch(0, n), st.scratch(1, n)
    cdef char *totp = <char *>cnp.PyArray_DATA(tot)
    cdef char *prep = <char *>cnp.PyArray_DATA(pre)
    cdef char *part = r.ptr
    cdef const char *x
    if not ex:
        core.c_elementwise(1, NULL if s is None else s.ptr, r.ptr, count, code, opc)  # my node up to me
        if st.lrank == last:
            memcpy(totp, r.ptr, n)
    else:
        x = r.ptr if s is None else s.ptr
        part = <char *>cnp.PyArray_DATA(st.scratch(2, n))
        core.c_elementwise(2, x, part, count, code, opc)   # my node's members before me (not at lrank 0)
        if st.lrank == last:
            if last > 0:
                core.c_fold(totp, part, x, count, code, opc)
            else:
                memcpy(totp, x, n)
    if holder != last:
        core.c_bcast(totp, n, last)
    if st.lrank == holder:
        _mpi_wait(st, [st.xcomm.Iexscan([tot, count, r.mpitype], [pre, count, r.mpitype], op)],
                  "Exscan" if ex else "Scan")
    if st.nidx > 0:
        core.c_bcast(prep, n, holder)
    if not ex:
        if st.nidx > 0:
            core.c_fold(r.ptr, prep, r.ptr, count, code, opc)
        return 0
    if st.nidx > 0:
        if st.lrank > 0:
            core.c_fold(part, prep, part, count, code, opc)
        else:
            part = prep
    elif st.lrank == 0:
        return 0        # rank 0: undefined in MPI, the buffer stays as it was
    memcpy(r.ptr, part, n)
    return 0


# ----------------------------------------------------------------- pickle-based methods through shm

# The lowercase methods on one node (pickle protocol 5, out-of-band buffers
# moved by the engine's byte collectives): pure Python, see msgpickle.py.
from . import msgpickle as _pickle


cdef object _shm_call(_State st, int op, object fn, tuple args):
    """fn(st.core, *args) counted as `op` on path shm; the engine calls it
    makes are not counted."""
    core = st.core
    core.stats_paused = True
    try:
        return fn(core, *args)
    finally:
        core.stats_paused = False
        st.count(op, P_SHM)


# ----------------------------------------------------------------- the communicator

cdef object _base = MPI.Intracomm


def _wrap(newcomm):
    """A pgascol.Comm over a new MPI communicator (collective over it)."""
    if newcomm == MPI.COMM_NULL:
        c = Comm.__new__(Comm, newcomm)
        return c
    if not isinstance(newcomm, MPI.Intracomm):
        return newcomm      # intercommunicators stay plain mpi4py objects
    c = Comm.__new__(Comm, newcomm)
    c.__init__(newcomm)
    return c


# What parsing a buffer specification raises besides ArgumentError (MPI's
# own errors, MPI.Exception, are RuntimeErrors: never a parsing refusal).
_ARGUMENT_ERRORS = (TypeError, ValueError, KeyError, IndexError, BufferError, AttributeError,
                    OverflowError)


cdef int _engine(object comm, int op, object a, object b, object c, object d, int root) except -1:
    """Run buffer collective `op` through pgascol: 1 if it ran, 0 if MPI must
    (then counted as such). a, b: the send and receive specifications (Bcast:
    a is the buffer), c: the operator, d: Reduce_scatter's recvcounts. An
    ArgumentError of this rank, or any other refusal of its arguments,
    marks the op refused on the node team (`_refused`) before it
    propagates."""
    cdef _State st = _st(comm)
    if st is None:
        return 0
    cdef int done
    try:
        if op == O_BARRIER:
            done = _barrier(st)
        elif op == O_BCAST:
            done = _bcast(st, a, root)
        elif op == O_ALLREDUCE:
            done = _allreduce(st, a, b, c)
        elif op == O_REDUCE:
            done = _reduce(st, a, b, c, root)
        elif op == O_GATHER or op == O_GATHERV:
            done = _gather(st, a, b, root, op == O_GATHERV)
        elif op == O_SCATTER or op == O_SCATTERV:
            done = _scatter(st, a, b, root, op == O_SCATTERV)
        elif op == O_ALLGATHER or op == O_ALLGATHERV:
            done = _allgather(st, a, b, op == O_ALLGATHERV)
        elif op == O_ALLTOALL or op == O_ALLTOALLV:
            done = _alltoall(st, a, b, op == O_ALLTOALLV)
        elif op == O_RS or op == O_RSB:
            done = _reduce_scatter(st, a, b, d, c, op == O_RSB)
        else:
            done = _scan(st, a, b, c, op == O_EXSCAN)
    except ArgumentError:
        _refused(st, op)
        raise
    except PgascolError:
        raise       # the engine's own (the op began, or the team is aborted)
    except _ARGUMENT_ERRORS:
        # mpi4py's and Python's refusals of a buffer specification (not a
        # buffer, a dtype MPI cannot map, a count it cannot infer, ...): raised
        # before the engine, so refused like an ArgumentError, or the peers
        # would pair this rank's next call with this one
        _refused(st, op)
        raise
    if not done:
        _fallback(st, op)
        # every rank of the node must go to MPI too: fail at once if not
        if st.core is not None:
            st.core.c_to_mpi(op)
    return done


class Comm(MPI.Intracomm):
    """An mpi4py intracommunicator whose collectives run through pgascol.

    ``Comm(comm)`` is collective over ``comm``: it builds the node team
    (shared segment) and, with several nodes, the inter-node communicators.
    The new object shares ``comm``'s MPI handle: point-to-point messages,
    attributes and every method not overridden behave exactly as on comm.
    Free() releases pgascol's resources and frees the handle."""

    # A slot, not an instance dict: reading it is a descriptor call, several
    # times cheaper on every collective (and, like mpi4py's own
    # communicators, a Comm takes no other attributes).
    __slots__ = ("_pg",)

    def __init__(self, comm=None):
        if comm is None or comm == MPI.COMM_NULL:
            return
        if not isinstance(comm, MPI.Intracomm):
            raise ArgumentError("pgascol.Comm needs an intracommunicator, not %r" % (comm,))
        # The state talks MPI through a plain intracommunicator over the same
        # handle (our overridden constructors would recurse).
        self._pg = _State(MPI.Intracomm(self))

    # --------------------------------------------------- constructors

    def Dup(self, info=None):
        return _wrap(_base.Dup(self, info) if info is not None else _base.Dup(self))

    def Dup_with_info(self, info):
        return _wrap(_base.Dup_with_info(self, info))

    def Clone(self):
        return _wrap(_base.Clone(self))

    def Split(self, int color=0, int key=0):
        return _wrap(_base.Split(self, color, key))

    def Split_type(self, int split_type, int key=0, info=MPI.INFO_NULL):
        return _wrap(_base.Split_type(self, split_type, key, info))

    def Create(self, group):
        return _wrap(_base.Create(self, group))

    def Create_group(self, group, int tag=0):
        return _wrap(_base.Create_group(self, group, tag))

    def Free(self):
        st = getattr(self, "_pg", None)
        if st is not None:
            if st.core is not None:
                st.core.check_idle()
            self._pg = None
            st.free()
        if self == MPI.COMM_WORLD or self == MPI.COMM_SELF:
            return      # a wrapper of a predefined communicator: only pgascol's part goes
        _base.Free(self)

    # --------------------------------------------------- buffer collectives

    def Barrier(self):
        if not _engine(self, O_BARRIER, None, None, None, None, 0):
            _base.Barrier(self)

    def Bcast(self, buf, int root=0):
        if not _engine(self, O_BCAST, buf, None, None, None, root):
            _base.Bcast(self, buf, root)

    def Reduce(self, sendbuf, recvbuf, op=_SUM, int root=0):
        if not _engine(self, O_REDUCE, sendbuf, recvbuf, op, None, root):
            _base.Reduce(self, sendbuf, recvbuf, op, root)

    def Allreduce(self, sendbuf, recvbuf, op=_SUM):
        if not _engine(self, O_ALLREDUCE, sendbuf, recvbuf, op, None, 0):
            _base.Allreduce(self, sendbuf, recvbuf, op)

    def Gather(self, sendbuf, recvbuf, int root=0):
        if not _engine(self, O_GATHER, sendbuf, recvbuf, None, None, root):
            _base.Gather(self, sendbuf, recvbuf, root)

    def Gatherv(self, sendbuf, recvbuf, int root=0):
        if not _engine(self, O_GATHERV, sendbuf, recvbuf, None, None, root):
            _base.Gatherv(self, sendbuf, recvbuf, root)

    def Scatter(self, sendbuf, recvbuf, int root=0):
        if not _engine(self, O_SCATTER, sendbuf, recvbuf, None, None, root):
            _base.Scatter(self, sendbuf, recvbuf, root)

    def Scatterv(self, sendbuf, recvbuf, int root=0):
        if not _engine(self, O_SCATTERV, sendbuf, recvbuf, None, None, root):
            _base.Scatterv(self, sendbuf, recvbuf, root)

    def Allgather(self, sendbuf, recvbuf):
        if not _engine(self, O_ALLGATHER, sendbuf, recvbuf, None, None, 0):
            _base.Allgather(self, sendbuf, recvbuf)

    def Allgatherv(self, sendbuf, recvbuf):
        if not _engine(self, O_ALLGATHERV, sendbuf, recvbuf, None, None, 0):
            _base.Allgatherv(self, sendbuf, recvbuf)

    def Alltoall(self, sendbuf, recvbuf):
        if not _engine(self, O_ALLTOALL, sendbuf, recvbuf, None, None, 0):
            _base.Alltoall(self, sendbuf, recvbuf)

    def Alltoallv(self, sendbuf, recvbuf):
        if not _engine(self, O_ALLTOALLV, sendbuf, recvbuf, None, None, 0):
            _base.Alltoallv(self, sendbuf, recvbuf)

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=_SUM):
        if not _engine(self, O_RSB, sendbuf, recvbuf, op, None, 0):
            _base.Reduce_scatter_block(self, sendbuf, recvbuf, op)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=_SUM):
        if not _engine(self, O_RS, sendbuf, recvbuf, op, recvcounts, 0):
            _base.Reduce_scatter(self, sendbuf, recvbuf, recvcounts, op)

    def Scan(self, sendbuf, recvbuf, op=_SUM):
        if not _engine(self, O_SCAN, sendbuf, recvbuf, op, None, 0):
            _base.Scan(self, sendbuf, recvbuf, op)

    def Exscan(self, sendbuf, recvbuf, op=_SUM):
        if not _engine(self, O_EXSCAN, sendbuf, recvbuf, op, None, 0):
            _base.Exscan(self, sendbuf, recvbuf, op)

    # --------------------------------------------------- pickle-based methods

    def barrier(self):
        st = _st(self)
        if st is None:
            return _base.barrier(self)
        _barrier(st)
        st.count(O_LBARRIER, P_HIER if st.hier else P_SHM)

    # bcast, reduce, allreduce, gather, scatter, allgather, alltoall keep
    # mpi4py's semantics. On one node the pickles (protocol 5, large buffers
    # out of band) move through the node's shared memory: pgascol/comm/msgpickle.py,
    # path "shm" in pgascol.stats. With several nodes (real, or virtual with
    # PGASCOL_NODE_SIZE) they are mpi4py's own methods over MPI (path "mpi").

    def bcast(self, obj, int root=0):
        """Broadcast (mpi4py's bcast; shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier or not 0 <= root < st.size:    # (a bad root: MPI's error)
            _fallback(st, O_LBCAST)
            return _base.bcast(self, obj, root)
        return _shm_call(st, O_LBCAST, _pickle.bcast, (obj, root))

    def reduce(self, sendobj, op=_SUM, int root=0):
        """Reduce to root (mpi4py's reduce: op(a, b) in mpi4py's order, None on the
        other ranks; shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier or not 0 <= root < st.size:    # (a bad root: MPI's error)
            _fallback(st, O_LREDUCE)
            return _base.reduce(self, sendobj, op, root)
        return _shm_call(st, O_LREDUCE, _pickle.reduce, (sendobj, op, root))

    def allreduce(self, sendobj, op=_SUM):
        """Reduce to all (mpi4py's allreduce; shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier:
            _fallback(st, O_LALLREDUCE)
            return _base.allreduce(self, sendobj, op)
        return _shm_call(st, O_LALLREDUCE, _pickle.allreduce, (sendobj, op))

    def gather(self, sendobj, int root=0):
        """Gather (mpi4py's gather: a list at root, None elsewhere; shared memory on
        one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier or not 0 <= root < st.size:    # (a bad root: MPI's error)
            _fallback(st, O_LGATHER)
            return _base.gather(self, sendobj, root)
        return _shm_call(st, O_LGATHER, _pickle.gather, (sendobj, root))

    def scatter(self, sendobj, int root=0):
        """Scatter (mpi4py's scatter: root's sequence of size items, or None;
        shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier or not 0 <= root < st.size:    # (a bad root: MPI's error)
            _fallback(st, O_LSCATTER)
            return _base.scatter(self, sendobj, root)
        return _shm_call(st, O_LSCATTER, _pickle.scatter, (sendobj, root))

    def allgather(self, sendobj):
        """Gather to all (mpi4py's allgather; shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier:
            _fallback(st, O_LALLGATHER)
            return _base.allgather(self, sendobj)
        return _shm_call(st, O_LALLGATHER, _pickle.allgather, (sendobj,))

    def alltoall(self, sendobj):
        """All to all (mpi4py's alltoall: a sequence of size items, or None;
        shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier:
            _fallback(st, O_LALLTOALL)
            return _base.alltoall(self, sendobj)
        return _shm_call(st, O_LALLTOALL, _pickle.alltoall, (sendobj,))

    # --------------------------------------------------- pgascol extras

    def pgascol_stats(self):
        """{operation: {path: calls}} (see pgascol.stats)."""
        return _stats(self)


cdef int _locate_slot() except -1:
    """Find the _pg slot after mpi4py's object, and prove it on a probe
    object before _st relies on it."""
    global _PG_OFFSET, _COMM_TYPE
    cdef Py_ssize_t off = _base.__basicsize__
    if Comm.__basicsize__ != off + <Py_ssize_t>sizeof(PyObject *):
        return 0
    probe = Comm.__new__(Comm)          # COMM_NULL, no MPI call
    marker = object()
    probe._pg = marker
    if (<PyObject **>(<char *><PyObject *>probe + off))[0] == <PyObject *>marker:
        _PG_OFFSET = off
        _COMM_TYPE = <PyTypeObject *>Comm
    return 0


_locate_slot()


cdef int _fallback(object st, int op) except -1:
    """The call goes to MPI: count it."""
    if st is not None:
        (<_State>st).count(op, P_MPI)
    return 0


# _refused hands O_* codes to the engine as its collective ids: same order.
if _OPNAMES[:len(_core.COLLECTIVES)] != _core.COLLECTIVES:
    raise ImportError("pgascol.comm._comm: operation codes out of step with the engine's collectives")


cdef int _refused(_State st, int op) except -1:
    """This rank raised an ArgumentError before its call reached the engine,
    while the other ranks may be in it: the node team takes the op as
    refused, so a peer waiting for this rank fails at once with a message
    naming it, and the op numbers stay in step (csrc/coll.c:
    pgc_coll_refuse). op numbers the collectives as the engine does."""
    if st.core is not None:
        st.core.c_refuse(op)
    return 0


def _stats(comm):
    st = getattr(comm, "_pg", None) if isinstance(comm, Comm) else None
    if st is None or st.core is None:
        return {}
    out = {}
    engine = st.core.stats()
    for op, paths in engine.items():
        for p, n in paths.items():
            if n > 0:
                name = ("node:" + op) if st.hier else op
                out.setdefault(name, {})[p] = n
    for op, paths in st.counts().items():
        for p, n in paths.items():
            if p == "engine":
                continue    # the engine's own counters say which method (inline/cico/cma)
            out.setdefault(op, {})[p] = out.get(op, {}).get(p, 0) + n
    return out
