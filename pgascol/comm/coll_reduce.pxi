# Reductions: Allreduce, Reduce, Reduce_scatter(_block), Scan, Exscan (csrc/coll/coll_reduce.c),
# each with its node body and its hierarchical body.

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
    _tune(st, PGC_COLL_ALLREDUCE, n)
    if not st.hier:
        if st.core.c_elementwise(PGC_COLL_ALLREDUCE, NULL if inplace else s.ptr, r.ptr, r.count, r.code, opc):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
        st.count(PGC_COLL_ALLREDUCE, P_ENGINE)
        return 1
    try:
        _hier_allreduce(st, None if inplace else s.obj, r.obj, NULL if inplace else s.ptr, r.ptr,
                        r.count, r.esize, r.code, opc, r.mpitype, op)
    except PgascolError as exc:
        _in_hierarchy(exc, PGC_COLL_ALLREDUCE)
    st.count(PGC_COLL_ALLREDUCE, P_HIER)
    return 1


cdef int _hier_allreduce(_State st, object sobj, object robj, const char *sptr, char *rptr,
                         Py_ssize_t count, Py_ssize_t esize, int code, int opc, object mpitype,
                         object op) except -1:
    """Equal nodes, segment by segment (docs/PERFORMANCE.md, "Hierarchical
    Allreduce in 1 MiB segments"):
    node reduce-scatter on the engine, then every local rank allreduces its
    own block across nodes on its own inter-node communicator (all local
    ranks share the network work), then node allgather. The inter-node
    allreduce of segment i is in flight while the node reduce-scatters
    segment i+1, and segments keep the working set in cache. Results land
    straight in recvbuf (in place: blocks go through two scratch areas);
    when recvbuf outgrows the cache (cold_min), the node allgather writes
    it with streaming stores: the segments gathered first are out of the
    cache by the end anyway, and an ordinary store would fetch each line
    only to overwrite it (docs/PERFORMANCE.md, "Streaming stores into
    receive buffers that outgrow the cache").
    Every leg is a C-level engine call (Team.c_*), as in the other collectives.
    Vectors up to _HIER_ROOTED_MAX, and unequal nodes: node reduce to the
    leader, leaders' allreduce, node broadcast (one MPI call per node: the
    latency of a small vector is in its steps, not its bytes).
    sobj None / sptr NULL: in place (the data in robj)."""
    cdef Team core = st.core
    cdef Py_ssize_t L = st.lsize, l = st.lrank, seg, first = 0, n, mine, off, c, i, k = 0
    cdef Py_ssize_t laid = -1   # the segment length the block layouts below are for
    cdef bint inplace = sobj is None, cold = 0 < st.cold_min <= count * esize
    cdef _Layout elay = None, blay = None, gathered   # a segment's blocks per local rank: elements, bytes
    cdef char *bptr
    cdef const char *src = sptr
    cdef const char *gsend
    if inplace:
        src = rptr
    if st.equal and count * esize > _HIER_ROOTED_MAX:
        out = _u8(robj)
        seg = max(L, _HIER_SEGMENT_BYTES // esize)
        pending = None          # the previous segment: (requests, its scratch block or None, bytes, offset, blay)
        while first < count or pending is not None:
            nxt = None
            if first < count:
                n = min(seg, count - first)
                if n != laid:   # once for the full segments, once for the last one
                    elay, blay = _Layout(L), _Layout(L)
                    off = 0
                    for i in range(L):
                        c = n // L + (1 if n % L > i else 0)
                        elay.counts[i] = c
                        blay.counts[i] = c * esize
                        blay.displs[i] = off
                        off += c * esize
                    laid = n
                mine = elay.counts[l]
                off = first * esize
                if inplace:
                    blk = st.scratch(k & 1, mine * esize)
                    bptr = _array_data(blk)
                else:
                    blk = out[off + blay.displs[l]:off + blay.displs[l] + mine * esize]
                    bptr = rptr + off + blay.displs[l]
                core.c_reduce_scatter(False, src + off, bptr, elay.counts, code, opc)
                req = [st.internode_comm.Iallreduce(_IN_PLACE, [blk, mine, mpitype], op)] if mine else []
                nxt = (req, blk if inplace else None, mine * esize, off, blay)
                first += n
                k += 1
            if pending is not None:
                _mpi_wait(st, pending[0], "Allreduce")
                gsend = NULL if pending[1] is None else <const char *>_array_data(pending[1])
                gathered = <_Layout>pending[4]
                core.c_allgather(True, gsend, pending[2], rptr + <Py_ssize_t>pending[3],
                                 gathered.counts, gathered.displs, cold)
            pending = nxt
        return 0
    if st.lrank == 0:
        core.c_reduce(sptr, rptr, count, code, opc, 0)
        _mpi_wait(st, [st.internode_comm.Iallreduce(_IN_PLACE, [robj, count, mpitype], op)], "Allreduce")
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
    _tune(st, PGC_COLL_REDUCE, n)
    if not st.hier:
        if st.core.c_reduce(NULL if s is None else s.ptr, NULL if r is None else r.ptr, t.count, t.code,
                            opc, root):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
        st.count(PGC_COLL_REDUCE, P_ENGINE)
        return 1
    try:
        _hier_reduce(st, s, r, t, opc, op, root)
    except PgascolError as exc:
        _in_hierarchy(exc, PGC_COLL_REDUCE)
    st.count(PGC_COLL_REDUCE, P_HIER)
    return 1


cdef bint _reduce_on_scratch(_State st, object sendbuf, object recvbuf, object op, int root) except -1:
    """The root of a Reduce refused its own arguments (_refused), which
    no other rank's result depends on: where they tell the call's count,
    type and operator as the others use them (_leg_of: its send buffer,
    in place its receive buffer), it runs its whole part of the call in
    place on a scratch buffer instead (flat, or the node leg, the leaders'
    Ireduce and the message to a root that does not lead its node), so
    every rank's waits complete and the node team and the inter-node legs
    stay in step, with nothing of its own buffers read or written; then it
    raises its error (True). A failure of that run is handled as _engine
    handles the call's own. False: a refusal as any rank's instead, where
    the arguments do not tell the call, or where every other member of its
    node refused it too (c_peers_refused: nobody waits for its part, and
    entering the engine would meet their refusals, which aborts the team)."""
    leg = _leg_of(st, PGC_COLL_REDUCE, sendbuf, recvbuf, op, root, True)
    if leg is None:
        return False
    cdef Py_ssize_t count = leg[0], esize = leg[2]
    cdef long long counted[<int>NPATHS_]     # a refused call is not counted (pgascol.stats)
    memcpy(counted, st.counters[<int>PGC_COLL_REDUCE], sizeof(counted))
    try:
        if st.core.c_peers_refused(PGC_COLL_REDUCE):
            return False    # its node's members refused alike: so does it (nobody waits for its part)
        st.core.stats_paused = True
        scratch = [st.scratch(1, count * esize), count, leg[1]]
        if _reduce(st, _IN_PLACE, scratch, op, root) == _ON_MPI:
            _base.Reduce(st.team.comm, _IN_PLACE, scratch, op, root)    # where the others went
    except (PeerRefusedError, DatatypeMismatchError):
        pass        # the call is over, the team in step
    except RevokedError:
        _revoke(st, None)
    except PgascolError as failed:
        _abort_across(st, failed)
    finally:
        if st.core is not None and not st.core.closed:
            st.core.stats_paused = False
        memcpy(st.counters[<int>PGC_COLL_REDUCE], counted, sizeof(counted))
    return True


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
        accp = r.ptr if at_root else _array_data(acc)
        # in place at a root that leads its node: the data is already in r
        core.c_reduce(NULL if s is None else s.ptr, accp, count, t.code, opc, 0)
        if st.nidx == rn:
            req = st.internode_comm.Ireduce(_IN_PLACE, [acc, count, t.mpitype], op, root=rn)
        else:
            req = st.internode_comm.Ireduce([acc, count, t.mpitype], None, op, root=rn)
        _mpi_wait(st, [req], "Reduce")
        if st.nidx == rn and rl != 0:
            _mpi_wait(st, [st.node_comm.Isend([acc, n, _BYTE], dest=rl, tag=TAG_REDUCE)], "Reduce")
    else:
        core.c_reduce(r.ptr if s is None else s.ptr, NULL, count, t.code, opc, 0)
        if at_root:
            _mpi_wait(st, [st.node_comm.Irecv([r.obj, n, _BYTE], source=0, tag=TAG_REDUCE)], "Reduce")
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
    cdef int coll = PGC_COLL_REDUCE_SCATTER_BLOCK if block else PGC_COLL_REDUCE_SCATTER
    _tune(st, coll, counts[st.rank] * r.esize if block else total * r.esize // st.size)
    if not st.hier:
        lay = _Layout(st.size)
        lay.set_counts(counts)
        if st.core.c_reduce_scatter(block, NULL if inplace else s.ptr, r.ptr, lay.counts, r.code, opc):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
        st.count(coll, P_ENGINE)
        return 1
    cdef Py_ssize_t esize = r.esize, start = sum(counts[:st.rank]) * esize, mine = counts[st.rank] * esize
    try:
        if st.equal and total * esize > _HIER_ROOTED_MAX:
            _hier_reduce_scatter(st, r.ptr if inplace else s.ptr, r, counts, opc, op)
        else:
            # small vectors (the latency is in the steps: the rooted Allreduce's
            # three) and unequal nodes: allreduce the whole vector, keep my part
            tmp = st.scratch(2, total * esize)      # (the Allreduce uses 0 and 1 only in place)
            _hier_allreduce(st, r.obj if inplace else s.obj, tmp, r.ptr if inplace else s.ptr,
                            _array_data(tmp), total, esize, r.code, opc, r.mpitype, op)
            memcpy(r.ptr, _array_data(tmp) + start, mine)
    except PgascolError as exc:
        _in_hierarchy(exc, coll)
    st.count(coll, P_HIER)
    return 1


cdef int _hier_reduce_scatter(_State st, const char *src, _Msg r, list counts, int opc, object op) except -1:
    """Reduce_scatter(_block) on equal nodes (counts: every rank's block, in
    elements; src: the whole vector, r: this rank's block at its start).
    Local rank l's share is the blocks of the ranks of local rank l, one per
    node, in node order. The node team reduce-scatters the vector into the
    shares: node by node where nodes hold consecutive ranks in node order
    (each node's stretch of blocks is one reduce-scatter, read where it
    lies), else once, from a copy that puts each share's blocks together.
    Then every local rank reduce-scatters its share across nodes on its
    inter-node communicator (rank: the node index), which leaves each rank
    its own block. No rank receives more than its own block between nodes,
    where an Allreduce of the vector would send and receive all of it."""
    cdef Py_ssize_t L = st.lsize, N = st.nnodes, esize = r.esize, l, n, q, off = 0, at = 0, total = sum(counts)
    cdef list displs = [0] * st.size, shares = [0] * L
    for q in range(1, st.size):
        displs[q] = displs[q - 1] + counts[q - 1]
    for l in range(L):
        for n in range(N):
            shares[l] += counts[st.members[n][l]]
    share = st.scratch(1, <Py_ssize_t>shares[st.lrank] * esize)
    cdef char *sp = _array_data(share)
    cdef _Layout lay = _Layout(L)
    cdef char *ordered
    if st.in_rank_order:
        for n in range(N):
            lay.set_counts([counts[q] for q in st.members[n]])
            st.core.c_reduce_scatter(False, src + <Py_ssize_t>displs[st.members[n][0]] * esize, sp + at * esize,
                                     lay.counts, r.code, opc)
            at += counts[st.members[n][st.lrank]]
    else:
        order = st.scratch(2, total * esize)
        ordered = _array_data(order)
        for l in range(L):
            for n in range(N):
                q = st.members[n][l]
                memcpy(ordered + off * esize, src + <Py_ssize_t>displs[q] * esize, <Py_ssize_t>counts[q] * esize)
                off += counts[q]
        lay.set_counts(shares)
        st.core.c_reduce_scatter(False, ordered, sp, lay.counts, r.code, opc)
    mine = st.scratch(0, <Py_ssize_t>counts[st.rank] * esize)
    blocks = [counts[st.members[n][st.lrank]] for n in range(N)]
    _mpi_wait(st, [st.internode_comm.Ireduce_scatter([share, shares[st.lrank], r.mpitype],
                                                      [mine, counts[st.rank], r.mpitype], blocks, op)],
              _COLL_NAMES[st.coll])
    memcpy(r.ptr, _array_data(mine), <Py_ssize_t>counts[st.rank] * esize)
    return 0


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
    _tune(st, PGC_COLL_EXSCAN if ex else PGC_COLL_SCAN, n)
    if st.hier:
        try:
            _hier_scan(st, s, r, opc, op, ex)
        except PgascolError as exc:
            _in_hierarchy(exc, PGC_COLL_EXSCAN if ex else PGC_COLL_SCAN)
        st.count(PGC_COLL_EXSCAN if ex else PGC_COLL_SCAN, P_HIER)
        return 1
    if ex:
        if st.core.c_elementwise(PGC_COLL_EXSCAN, NULL if inplace else s.ptr, r.ptr, r.count, r.code, opc):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
    else:
        if st.core.c_elementwise(PGC_COLL_SCAN, NULL if inplace else s.ptr, r.ptr, r.count, r.code, opc):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
    st.count(PGC_COLL_EXSCAN if ex else PGC_COLL_SCAN, P_ENGINE)
    return 1


cdef int _hier_scan(_State st, _Msg s, _Msg r, int opc, object op, bint ex) except -1:
    """Scan/Exscan over nodes of consecutive ranks in rank order (see
    _State.in_rank_order): the node's own (ex)scan on the engine; the Exscan of
    the node totals across nodes (MPI, on internode_comm, whose rank is the node
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
    cdef char *totp = _array_data(tot)
    cdef char *prep = _array_data(pre)
    cdef char *part = r.ptr
    cdef const char *x
    if not ex:
        core.c_elementwise(PGC_COLL_SCAN, NULL if s is None else s.ptr, r.ptr, count, code, opc)  # my node up to me
        if st.lrank == last:
            memcpy(totp, r.ptr, n)
    else:
        x = r.ptr if s is None else s.ptr
        part = _array_data(st.scratch(2, n))
        core.c_elementwise(PGC_COLL_EXSCAN, x, part, count, code, opc)   # my node's members before me (not at lrank 0)
        if st.lrank == last:
            if last > 0:
                core.c_fold(totp, part, x, count, code, opc)
            else:
                memcpy(totp, x, n)
    if holder != last:
        core.c_bcast(totp, n, last)
    if st.lrank == holder:
        _mpi_wait(st, [st.internode_comm.Iexscan([tot, count, r.mpitype], [pre, count, r.mpitype], op)],
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
