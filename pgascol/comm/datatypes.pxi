# Datatype tables: which MPI datatypes the engine moves and reduces, and as what.

# opclass: which reductions MPI defines on a datatype.
cdef enum:
    OPC_NONE = 0     # movement only (CHAR, WCHAR, PACKED)
    OPC_BITWISE = 1  # MPI_BYTE: BAND, BOR, BXOR only
    OPC_FULL = 2     # the engine's (op, dtype) table, which follows MPI's
    OPC_MPI = 3      # a contiguous predefined type outside the table (e.g. float16):
                     # moved as bytes, its reductions left to MPI

cdef dict _DT = {}      # datatype handle -> (Datatype, code, opclass, size)
cdef dict _FMT = {}     # PEP 3118 format -> same tuple, or None (not accelerated)


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
                ("LONG_DOUBLE", {sizeof(long double): "longdouble"}, OPC_FULL),
                ("C_FLOAT_COMPLEX", {8: "complex64"}, OPC_FULL),
                ("CXX_FLOAT_COMPLEX", {8: "complex64"}, OPC_FULL),
                ("C_DOUBLE_COMPLEX", {16: "complex128"}, OPC_FULL),
                ("CXX_DOUBLE_COMPLEX", {16: "complex128"}, OPC_FULL),
                ("C_LONG_DOUBLE_COMPLEX", {2 * sizeof(long double): "clongdouble"}, OPC_FULL),
                ("CXX_LONG_DOUBLE_COMPLEX", {2 * sizeof(long double): "clongdouble"}, OPC_FULL),
                ("C_BOOL", {1: "bool"}, OPC_FULL), ("CXX_BOOL", {1: "bool"}, OPC_FULL),
                ("BYTE", {1: "uint8"}, OPC_BITWISE), ("CHAR", {1: "int8"}, OPC_NONE),
                ("PACKED", {1: "uint8"}, OPC_NONE), ("WCHAR", {2: "uint16", 4: "uint32"}, OPC_NONE)]
    for name, by_size, opclass in entries:
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
        _DT[dt.handle] = (dt, D[code], opclass, size)


_build_tables()

cdef object _IN_PLACE = MPI.IN_PLACE
cdef object _BOTTOM = MPI.BOTTOM
cdef object _PACKED = MPI.PACKED
cdef object _BYTE = MPI.BYTE
cdef object _Datatype = MPI.Datatype
cdef object _typedict = MPI._typedict
cdef object _Intracomm = MPI.Intracomm

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
    # its code: the unsigned integer of its size, as what its bytes are moved
    # as; the basic type a rooted collective states (_basic), so that it
    # agrees with ranks describing the same bytes with that table type
    code = _core.DTYPES.get({1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}.get(size), _DT[_BYTE.handle][1])
    info = _DT[dt.handle] = (dt, code, OPC_MPI, size)
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


def _type_name(dt):
    try:
        return dt.Get_name() or repr(dt)
    except Exception:
        return repr(dt)


cdef int _derived_basic(object dt) except -2:
    """The one predefined type a derived datatype is built of, as a dtype
    code; -1 for a mix of several (a struct), which then agrees only with
    datatypes that mix too. Decoded on each call: the handle of a freed
    derived type may be reused for another one."""
    found = set()
    todo, decoded = [dt], []
    try:
        while todo:
            cur = todo.pop()
            if cur.is_predefined:
                info = _predefined_info(cur)
                found.add(-1 if info is None else info[1])
                continue
            base, combiner, params = cur.decode()
            parts = params["datatypes"] if combiner == "STRUCT" else [base]
            for d in parts:
                if not d.is_predefined:
                    decoded.append(d)
                todo.append(d)
    except Exception:
        return -1
    finally:
        for d in decoded:
            try:
                d.Free()
            except Exception:
                pass
    return found.pop() if len(found) == 1 else -1
