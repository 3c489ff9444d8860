# numpy, imported at its first use rather than with the module.
#
# A job's start-up is every rank's imports, and numpy's is most of this
# extension's (about 80 ms a rank; 8 ranks on 2 cores wait for all of
# them): plain mpi4py imports no numpy. Nothing on the way to COMM_WORLD's
# node team needs it, so it is imported by _np() -- the Python-level uses
# (scratch buffers, the hierarchical paths, the failure protocol) -- or, for
# numpy's C API, as soon as a buffer shows numpy is in the process: an array
# can only exist once numpy is imported, so until sys.modules holds numpy the
# direct path for arrays (_numpy_direct, msgbuffer.pxi) has nothing to see.
# numpy's headers only: declared here on PyArrayObject * (not Cython's
# `cimport numpy`, whose ndarray type would be imported with the module).

cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyArrayObject
    void *PyArray_DATA(PyArrayObject *)
    int PyArray_FLAGS(PyArrayObject *)
    int PyArray_TYPE(PyArrayObject *)
    bint PyArray_ISNOTSWAPPED(PyArrayObject *)
    Py_ssize_t PyArray_NBYTES(PyArrayObject *)
    Py_ssize_t PyArray_SIZE(PyArrayObject *)
    int _import_array() except -1
    enum:
        NPY_ARRAY_C_CONTIGUOUS
        NPY_ARRAY_F_CONTIGUOUS
        NPY_ARRAY_WRITEABLE

cdef object _numpy = None
cdef PyTypeObject *_NDARRAY = NULL     # numpy.ndarray once _np() ran
cdef dict _SYS_MODULES = sys.modules


cdef object _np():
    """The numpy module, imported (and its C API with it) at the first call."""
    global _numpy, _NDARRAY
    if _numpy is None:
        import numpy
        _import_array()
        _NDARRAY = <PyTypeObject *>numpy.ndarray
        _numpy = numpy
    return _numpy


cdef inline bint _numpy_seen() except -1:
    """Whether numpy is imported in this process (then its C API is ready here)."""
    if _NDARRAY != NULL:
        return True
    if _SYS_MODULES.get("numpy") is None:
        return False
    _np()
    return True


cdef inline bint _is_ndarray(object obj) except -1:
    """isinstance(obj, numpy.ndarray), without importing numpy."""
    return _numpy_seen() and isinstance(obj, <object>_NDARRAY)


cdef inline char *_array_data(object a) noexcept:
    """The data of a numpy array (the caller made it, or checked its type)."""
    return <char *>PyArray_DATA(<PyArrayObject *>a)
