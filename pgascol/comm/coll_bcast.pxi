# Bcast: the node engine, and segmented across nodes.

cdef int _bcast(_State st, object buf, int root) except -1:
    _check_root(st, root)
    cdef _Msg m = _simple(buf, st.rank != root, 0, True)
    if m is None:
        return 0
    cdef Py_ssize_t n = m.count * m.esize
    _need(m, n, "buffer")
    _tune(st, PGC_COLL_BCAST, n)
    if not st.hier:
        if st.core.c_bcast(m.ptr, n, root, _basic(m)):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
        _done(st, PGC_COLL_BCAST, P_ENGINE, m, None)
        return 1
    st.core.holding = True
    try:
        _hier_bcast(st, m, n, root)
    except RootRefusedError as exc:
        _root_refused_across(st, exc, PGC_COLL_BCAST, root)
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
    (_hier_bcast_segments). A root that refused (_refused) ends the call on
    its node's members, and its node's leader joins the leaders' leg with
    scratch data (_refuse_rooted, _root_node_leg); every other leader's
    wait then ends with the root's RootRefusedError, and it refuses its
    node's leg with the root's reason (_bcast_root_refused)."""
    cdef int rn = st.node_of[root], rl = st.local_of[root]
    cdef int dtype = _basic(m)      # on each node leg (PGC_SIG_ROOTED)
    st.bcast_bytes = n
    st.core.c_check_aborted()       # a node that gave up must not enter the leaders' MPI leg
    if st.nidx == rn and rl != 0:
        _root_node_leg(st, m, n, root, dtype)
    cdef bint node_phase = st.nidx != rn or rl == 0
    if n > _HIER_SEGMENT_BYTES:       # the same choice on every leader: it depends on n only
        return _hier_bcast_segments(st, m, n, rn, dtype, node_phase)
    cdef char *src = m.ptr          # what this node's leg broadcasts
    if st.lrank == 0:
        src = _leaders_leg(st, m, n, root, &dtype)
    if node_phase:
        st.core.c_bcast(src, n, 0, dtype)
    return 0


cdef int _root_node_leg(_State st, _Msg m, Py_ssize_t n, int root, int dtype) except -1:
    """The node leg of the root's node, from the root, when it does not
    lead its node. The root's refusal ends it on every member (a
    RootRefusedError), and the leader then takes the node out of the
    leaders' leg (_refuse_rooted, with the node out of the call)."""
    try:
        st.core.c_bcast(m.ptr, n, st.local_of[root], dtype)
    except RootRefusedError as exc:
        if st.lrank == 0:
            _refuse_rooted(st, PGC_COLL_BCAST, _refusal_reason(exc), root, (n, _BYTE, 1, None), True)
        raise
    return 0


cdef int _hier_bcast_segments(_State st, _Msg m, Py_ssize_t n, int rn, int dtype, bint node_phase) except -1:
    """A hierarchical Bcast of more than _HIER_SEGMENT_BYTES bytes: the leaders'
    transfer of segment i overlaps the node copy of i-1."""
    mv = _u8(m.obj)
    cdef Py_ssize_t off = 0, prev = -1, plen = 0, seg
    req = None
    while off < n or prev >= 0:
        seg = min(_HIER_SEGMENT_BYTES, n - off) if off < n else 0
        if st.lrank == 0 and seg:
            req = [st.internode_comm.Ibcast([mv[off:off + seg], seg, _BYTE], root=rn)]
        if prev >= 0 and node_phase:
            st.core.c_bcast(m.ptr + prev, plen, 0, dtype)
        if req is not None:
            try:
                _mpi_wait(st, req, "Bcast")
            except RootRefusedError as exc:
                _bcast_root_refused(st, exc, n, off + seg)
            req = None
        if seg:
            prev, plen = off, seg
            off += seg
        else:
            prev = -1
    return 0


cdef char *_leaders_leg(_State st, _Msg m, Py_ssize_t n, int root, int *dtype) except? NULL:
    """A leader's part of the leaders' leg of an unsegmented hierarchical
    Bcast (n bytes): where its node leg then broadcasts from, and dtype
    set to the type that leg states (_leaders_bcast)."""
    try:
        if n <= _TYPED_BCAST_MAX:
            return _leaders_bcast(st, m, n, root, dtype)
        _mpi_wait(st, [st.internode_comm.Ibcast([m.obj, n, _BYTE], root=st.node_of[root])], "Bcast")
        return m.ptr
    except RootRefusedError as exc:
        _bcast_root_refused(st, exc, n, n)


cdef int _bcast_root_refused(_State st, object exc, Py_ssize_t n, Py_ssize_t off) except -1:
    """A leader's wait in the leaders' leg of a Bcast of n bytes ended with
    the root's refusal (exc, a RootRefusedError: the root's node's leader
    joined with scratch data, _refuse_rooted): its node's members, which
    wait in the node leg it would run next, end the call with the root's
    reason; it moves the leg's remaining segments (from byte off) as the
    joiner does, into scratch, and raises exc."""
    st.core.c_refuse(PGC_COLL_BCAST, _named_refuser(st, exc))
    if off < n:
        _bcast_leg_scratch(st, st.node_of[st.root], n, off)
    raise exc


cdef int _bcast_leg_scratch(_State st, int rn, Py_ssize_t n, Py_ssize_t off) except -1:
    """The leaders' Ibcasts of a Bcast of n bytes rooted at node rn, from
    byte off on, through a work area: one with the root's type's byte
    (_leaders_bytes), or _hier_bcast's segments. A leader whose node's
    data is not taken moves them so (_join_leg, _bcast_root_refused)."""
    cdef Py_ssize_t seg
    while True:
        seg = min(_HIER_SEGMENT_BYTES, n - off) if n > _HIER_SEGMENT_BYTES else _leaders_bytes(n)
        _mpi_wait(st, [st.internode_comm.Ibcast([st.scratch(0, seg), seg, _BYTE], root=rn)], "Bcast")
        off += seg
        if off >= n:
            return 0


# The Bcasts whose leaders carry the root's basic type between nodes: up to
# this many bytes they broadcast the bytes and one more, the type, through a
# work area (two copies of at most 2 KiB, one at the root's node's leader
# before its Ibcast, one at each other leader after it; no further message).
# Not more: the copies grow, and a power of two and one byte crosses the
# MPIs' size thresholds (Open MPI's shared-memory eager limit is 4 KiB).
# Larger ones go straight between the users' buffers and carry no type: a
# struct datatype over both would cost a type creation per call, a second
# message a message (docs/PERFORMANCE.md, "A rooted collective's basic type
# costs no exchange", has the runs of both; docs/ARCHITECTURE.md, "Datatypes
# that differ at the same byte count").
cdef Py_ssize_t _TYPED_BCAST_MAX = 2 << 10


cdef char *_leaders_bcast(_State st, _Msg m, Py_ssize_t n, int root, int *dtype) except? NULL:
    """The leaders' Ibcast of a small hierarchical Bcast (n bytes, at most
    _TYPED_BCAST_MAX) followed by the root's basic type. Sets dtype (this
    leader's own on entry) to the root's type, which the leader's node leg
    then states, so that its members compare theirs with the root's, and
    returns where that leg broadcasts from: the user's buffer, or the work
    area at a leader whose own type differs (it holds a
    DatatypeMismatchError, and its buffer takes none of those bytes). The
    root's node's leader states the root's type as its node leg showed it
    (the type of the peer it met there if it met another one: the root
    when its node broadcasts flat)."""
    cdef int rn = st.node_of[root], mine = dtype[0], theirs = mine
    b = st.scratch_bufs[1]      # whole (the count says how much): no slice to make
    if b is None or PyArray_SIZE(<PyArrayObject *>b) <= n:
        b = st.scratch(1, n + 1).base
    cdef char *p = _array_data(b)
    cdef char *src = m.ptr
    if st.nidx == rn:
        if st.local_of[root] != 0 and st.core.held is not None:
            theirs = st.core.t.basic_seen
        memcpy(p, m.ptr, n)
        p[n] = <char>(theirs + 1)
    _mpi_wait(st, [st.internode_comm.Ibcast([b, _leaders_bytes(n), _BYTE], root=rn)], "Bcast")
    if st.nidx != rn:
        theirs = (<unsigned char>p[n]) - 1
        if _hold_root_type(st, "Bcast", root, theirs, mine):
            src = p         # my buffer takes none of them: my node's leg broadcasts the work area
        else:
            memcpy(m.ptr, p, n)
    dtype[0] = theirs
    return src


cdef inline Py_ssize_t _leaders_bytes(Py_ssize_t n):
    """What the leaders' Ibcast of an unsegmented Bcast of n bytes moves:
    the bytes, and the root's type up to _TYPED_BCAST_MAX (_leaders_bcast).
    A leader that joins it with no data of its own must move as much."""
    return n + 1 if n <= _TYPED_BCAST_MAX else n
