# The C core's enums by name (csrc/team/team.h, csrc/base/reduce_ops.h):
# collectives, paths, dtypes and operators, and what the core says of
# them (element sizes, valid pairs, the CPU's vector loops).

# Names of the C enums, in order.
#: The transfers whose cost a team measures (pgc_xfer in csrc/team/team.h).
_XFERS = ("stage", "copyout", "cma", "stream")

#: The collectives' names, indexed by their id (pgc_coll in csrc/team/team.h,
#: the one list of them).
COLLECTIVES = tuple(pgc_coll_name(<pgc_coll>i).decode() for i in range(PGC_NCOLL))
PATHS = ("inline", "cico", "cma")
INLINE_SLOT_MAX = PGC_INLINE_SLOT_MAX   # the cap of PGASCOL_INLINE_MAX (csrc/team/team.h)
DTYPES = {pgc_dtype_name(<pgc_dtype>i).decode(): i for i in range(PGC_NDTYPES)}
OPS = {pgc_op_name(<pgc_op>i).decode(): i for i in range(PGC_NOPS)}

# struct-module format characters (PEP 3118) -> dtype code, for buffers that
# describe themselves; native sizes, checked against the C sizes at import.
cdef dict _FORMAT_DTYPE = {}
for _fmt, _name in (("b", "int8"), ("B", "uint8"), ("h", "int16"), ("H", "uint16"),
                    ("i", "int32"), ("I", "uint32"), ("l", "int64"), ("L", "uint64"),
                    ("q", "int64"), ("Q", "uint64"), ("f", "float32"), ("d", "float64"),
                    ("g", "longdouble"), ("Zf", "complex64"), ("Zd", "complex128"),
                    ("Zg", "clongdouble"), ("?", "bool")):
    _FORMAT_DTYPE[_fmt] = DTYPES[_name]


def dtype_size(int dtype):
    """Size in bytes of one element of a dtype code."""
    return pgc_dtype_size(<pgc_dtype>dtype)


def op_valid(int op, int dtype):
    """Whether MPI defines the (op, dtype) pair."""
    return bool(pgc_op_valid(<pgc_op>op, <pgc_dtype>dtype))


def dtype_of_format(str fmt):
    """Dtype code of a PEP 3118 format string ('d', '<i', 'Zd', ...), or -1."""
    if fmt and fmt[0] in "@=<>!":
        fmt = fmt[1:]
    return _FORMAT_DTYPE.get(fmt, -1)


_SIMD_NAMES = ("baseline", "avx2")


def cpu_simd():
    """The widest loops this CPU runs: 'avx2' or 'baseline'."""
    return _SIMD_NAMES[pgc_simd_of_cpu()]
