# Bcast: the node engine, and segmented across nodes.

cdef int _bcast(_State st, object buf, int root) except -1:
    _check_root(st, root)
    cdef _Msg m = _simple(buf, st.rank != root, 0, True)
    if m is None:
        return 0
    cdef Py_ssize_t n = m.count * m.esize
    _need(m, n, "buffer")
    if not st.hier:
        st.core.c_bcast(m.ptr, n, root, _basic(m))
        _done(st, PGC_COLL_BCAST, P_ENGINE, m, None)
        return 1
    st.core.holding = True
    try:
        _hier_bcast(st, m, n, root)
    except PgascolError as exc:
        _in_hierarchy(exc, PGC_COLL_BCAST)
    finally:
        held = st.core.take_held()
    _done(st, PGC_COLL_BCAST, P_HIER, m, None)
    _raise_held(held, PGC_COLL_BCAST)
    return 1


cdef int _hier_bcast(_State st, _Msg m, Py_ssize_t n, int root) except -1:
    """Root's node first (if the root is not its leader), then the leaders
    (MPI), then every other node from its leader; large messages in segments
    so the leaders' transfer of segment i overlaps the node copy of i-1."""
    cdef int rn = st.node_of[root], rl = st.local_of[root]
    cdef Team core = st.core
    cdef int dtype = _basic(m)      # on each node leg (PGC_SIG_ROOTED)
    if st.nidx == rn and rl != 0:
        core.c_bcast(m.ptr, n, rl, dtype)
    cdef bint node_phase = st.nidx != rn or rl == 0
    if n <= _SEGMENT:      # the same choice on every leader: it depends on n only
        if st.lrank == 0:
            _mpi_wait(st, [st.xcomm.Ibcast([m.obj, n, _BYTE], root=rn)], "Bcast")
        if node_phase:
            core.c_bcast(m.ptr, n, 0, dtype)
        return 0
    mv = _u8(m.obj)
    cdef Py_ssize_t off = 0, prev = -1, plen = 0, seg
    req = None
    while off < n or prev >= 0:
        seg = min(_SEGMENT, n - off) if off < n else 0
        if st.lrank == 0 and seg:
            req = [st.xcomm.Ibcast([mv[off:off + seg], seg, _BYTE], root=rn)]
        if prev >= 0 and node_phase:
            core.c_bcast(m.ptr + prev, plen, 0, dtype)
        if req is not None:
            _mpi_wait(st, req, "Bcast")
            req = None
        if seg:
            prev, plen = off, seg
            off += seg
        else:
            prev = -1
    return 0
