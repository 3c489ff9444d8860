# Alltoall(v) (csrc/coll/coll_alltoall.c), node and hierarchical bodies.

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
    cdef int coll = PGC_COLL_ALLTOALLV if v else PGC_COLL_ALLTOALL
    # the class: a block (Alltoallv: this rank's mean block, tune.pxi)
    _tune(st, coll, rlay.total() // st.size if v else rlay.counts[st.rank])
    if not st.hier:
        if st.core.c_alltoall(v, NULL if inplace else s.ptr, NULL if inplace else slay.counts,
                              NULL if inplace else slay.displs, r.ptr, rlay.counts, rlay.displs):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
        _done(st, coll, P_ENGINE, s, r)
        return 1
    try:
        _hier_alltoall(st, s, slay, r, rlay, v)
    except PgascolError as exc:
        _in_hierarchy(exc, coll)
    _done(st, coll, P_HIER, s, r)
    return 1


# Tag of the hierarchical Alltoall(v)'s messages on private_comm.
cdef int _TAG_ALLTOALL = 21


cdef int _hier_alltoall(_State st, _Msg s, _Layout slay, _Msg r, _Layout rlay, bint v) except -1:
    """Blocks between members of my node through the engine (an Alltoallv
    over the node restricted to the members' counts and displacements), the
    blocks to and from every other rank by MPI point-to-point on private_comm, posted
    before the engine part and completed after it. Every block goes straight
    between the two ranks' buffers at their own offsets, so rank order holds
    whatever the placement of ranks on nodes. In place (s None) the blocks
    for remote ranks are copied out of recvbuf before anything is received."""
    cdef Team core = st.core
    private_comm = st.private_comm
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
        src = _np().empty(off, "uint8")
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
                reqs.append(private_comm.Irecv([dst[d:d + c], c, _BYTE], source=q, tag=_TAG_ALLTOALL))
    for q, off, c in sends:
        reqs.append(private_comm.Isend([src[off:off + c], c, _BYTE], dest=q, tag=_TAG_ALLTOALL))
    cdef _Layout mr = _members_layout(st, rlay, nid)
    cdef _Layout ms = None if inplace else _members_layout(st, slay, nid)
    core.c_alltoall(v, NULL if inplace else s.ptr, NULL if inplace else ms.counts,
                    NULL if inplace else ms.displs, r.ptr, mr.counts, mr.displs)
    if reqs:
        _mpi_wait(st, reqs, "Alltoallv" if v else "Alltoall")
    return 0
