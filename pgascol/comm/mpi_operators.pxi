# Reduction operators: MPI.Op -> the engine's op code, checked against the datatype once,
# here, before any data moves (the C core keeps its own check as a guard).

cdef dict _OP = {}      # op handle -> op code
for _name in ("SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"):
    _OP[getattr(MPI, _name).handle] = _core.OPS[_name]

cdef unsigned char _VALID[32][32]      # [op code][dtype code]: MPI defines it
for _o in range(len(_core.OPS)):
    for _d in range(len(_core.DTYPES)):
        _VALID[_o][_d] = 1 if _core.op_valid(_o, _d) else 0

cdef object _SUM = MPI.SUM
cdef object _Op = MPI.Op
cdef int _BITWISE_OPS = (1 << _core.OPS["BAND"]) | (1 << _core.OPS["BOR"]) | (1 << _core.OPS["BXOR"])

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
