# Gather(v), Scatter(v), Allgather(v) (csrc/coll/coll_gather.c), node and hierarchical bodies,
# and the helpers that lay out a node's blocks.

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
    cdef int coll = PGC_COLL_GATHERV if v else PGC_COLL_GATHER
    cdef int dtype = _basic(r if at_root else s)     # what every rank states (PGC_SIG_ROOTED)
    _tune(st, coll, sb)     # Gatherv: by this rank's own block (tune.pxi)
    if not st.hier:
        if st.core.c_gather(v, NULL if s is None else s.ptr, sb, NULL if r is None else r.ptr,
                            NULL if lay is None else lay.counts, NULL if lay is None else lay.displs, root,
                            dtype):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
        _done(st, coll, P_ENGINE, s, r)
        return 1
    st.core.holding = True
    try:
        _hier_gather(st, s, sb, r, lay, root, v, dtype)
    except RootRefusedError as exc:
        _root_refused_across(st, exc, coll, root)
    except PgascolError as exc:
        _in_hierarchy(exc, coll)
    finally:
        held = st.core.take_held()
    _done(st, coll, P_HIER, s, r)
    _raise_held(held, coll)
    return 1


cdef _Layout _node_sizes(_State st, Py_ssize_t mine, bint v):
    """Byte counts of my node's members (local rank order) one after
    another, known to the leader (None elsewhere): equal for fixed-size
    forms, exchanged on the engine for v forms (a Gatherv's leader has no
    other way to learn them; a Scatterv's has them from the root)."""
    cdef _Layout ml = _Layout(st.lsize) if st.lrank == 0 else None
    out = None
    if v:
        arr = _np().array([mine], "int64")
        out = _np().zeros(st.lsize, "int64") if ml is not None else None
        st.core.gather(arr, 8, out, [8] * st.lsize if ml is not None else None, None, 0, False)
    if ml is not None:
        _fill_node_layout(st, ml, _array_data(out) if v else NULL, mine)
    return ml


cdef int _fill_node_layout(_State st, _Layout ml, const char *counts, Py_ssize_t each) except -1:
    """ml: my node's blocks one after another, of the int64 byte counts
    `counts` (one per member, local rank order), or of `each` bytes each
    (counts NULL)."""
    cdef const long long *c = <const long long *>counts
    cdef Py_ssize_t i
    for i in range(st.lsize):
        ml.counts[i] = c[i] if c != NULL else each
        ml.displs[i] = 0 if i == 0 else ml.displs[i - 1] + ml.counts[i - 1]
    return 0


cdef bytearray _counts_message(_Layout ml):
    """A Scatterv's message of a node's counts to its leader: ml's byte
    counts as int64 (_fill_node_layout reads them)."""
    cdef bytearray out = bytearray(8 * ml.n)
    cdef long long *c = <long long *><char *>out
    cdef Py_ssize_t i
    for i in range(ml.n):
        c[i] = <long long>ml.counts[i]
    return out


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
        return _np().concatenate(parts) if parts else _np().empty(0, "uint8")
    return _np().empty(_node_bytes(st, lay, node), "uint8")


cdef int _place_node_message(_State st, _Layout lay, object u8, int node, object msg) except -1:
    cdef Py_ssize_t off = 0, c
    for q in st.members[node]:
        c = lay.counts[<int>q]
        u8[lay.displs[<int>q]:lay.displs[<int>q] + c] = msg[off:off + c]
        off += c
    return 0


cdef int _hier_gather(_State st, _Msg s, Py_ssize_t sb, _Msg r, _Layout lay, int root,
                      bint v, int dtype) except -1:
    """Every other node gathers its blocks at its leader, which sends them
    to the root in one message (private_comm); the root's node gathers on the
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
            core.c_gather(True, s.ptr, sb, NULL, NULL, NULL, rl, dtype)
            return 0
        in_order = st.in_rank_order and lay.consecutive()
        dst = _u8(r.obj)
        reqs, nodes, into = [], [], []
        tag = _gather_tag(st.call_number, dtype, False)     # blocks of this root's type (others: _collect_types)
        for n in range(st.nnodes):
            if n != rn:
                b = _node_message(st, lay, dst, n, in_order, False)
                nodes.append(n)
                into.append(b)
                # where a truncated receive is unsafe, posted once probed (_post_probed)
                reqs.append(MPI.REQUEST_NULL if _TRUNCATION_UNSAFE else
                            st.private_comm.Irecv([b, len(b), _BYTE], source=st.members[n][0], tag=tag))
        ml = _members_layout(st, lay, rn)
        try:
            core.c_gather(True, NULL if s is None else s.ptr, sb, r.ptr, ml.counts, ml.displs, rl, dtype)
        except BaseException:
            for req in reqs:        # no receive may stay posted into this call's buffers
                if req != MPI.REQUEST_NULL:
                    req.Cancel()
            _mpi_wait(st, reqs, "Gather")
            raise
        _leaders_wait(st, reqs, _other_leaders(st), "Gatherv" if v else "Gather",       # in reqs' order
                      (into, dtype, [not _TRUNCATION_UNSAFE] * len(reqs)))
        if not in_order:
            for n, b in zip(nodes, into):
                if b is not None:       # None: blocks of another type, kept out (_collect_types)
                    _place_node_message(st, lay, dst, n, b)
        return 0
    ml = _node_sizes(st, sb, v)
    if ml is None:
        core.c_gather(True, s.ptr, sb, NULL, NULL, NULL, 0, dtype)
        return 0
    tot = ml.displs[st.lsize - 1] + ml.counts[st.lsize - 1]
    b = st.scratch(0, tot)
    core.c_gather(True, s.ptr, sb, _array_data(b), ml.counts, ml.displs, 0, dtype)
    # the tag states this leader's type, and whether its node leg met another one (held)
    tag = _gather_tag(st.call_number, dtype, core.held is not None)
    _mpi_wait(st, [st.private_comm.Isend([b, tot, _BYTE], dest=root, tag=tag)], "Gather")
    return 0


# The tags of a hierarchical Gather(v)'s blocks from a leader to the root:
# per call (st.call_number) one of _GATHER_SLOTS sets of 32 tags, 64-1023 (below
# TAG_REFUSAL): the leader's basic type + 1 (0-15), + 16 if a member of its
# node stated another one (its node leg held a DatatypeMismatchError). The
# root receives the blocks of its own type from a node that stated no other
# (the correct call: the tag it posts, nothing more exchanged) and finds the
# others at its wait's checks (_collect_types); the call's set keeps a
# receive left posted by one call from matching a leader's blocks of the
# next ones (up to _GATHER_SLOTS - 1 calls ahead).
cdef int _GATHER_SLOTS = 30


cdef inline int _gather_tag(long long call_number, int dtype, bint mixed):
    return TAG_GATHER + 32 * <int>(call_number % _GATHER_SLOTS) + 16 * mixed + 1 + dtype


cdef int _collect_types(_State st, list reqs, list srcs, tuple typed, str what) except -1:
    """At a check (every 100 ms) of the wait of a hierarchical Gather(v)'s
    root for the other leaders' blocks (_leaders_wait): a leader whose
    blocks have not come sent them on another tag of the call than the
    root's type's (_gather_tag): its type or its node's differs. Receive
    them into scratch (into[i] becomes None: no byte of another type lands
    in the receive buffer), cancel the receive they did not match, and hold
    a DatatypeMismatchError, raised once the call completed."""
    into, mine, posted = typed
    status = MPI.Status()
    cdef int base = _gather_tag(st.call_number, -1, False), own = _gather_tag(st.call_number, mine, False), tag, theirs
    cdef Py_ssize_t n
    for i, q in enumerate(srcs):
        if into[i] is None or (posted[i] and reqs[i].Get_status()):     # (Test would free it: _check_lengths)
            continue
        for tag in range(base, base + 32):
            m = None if tag == own else st.private_comm.Improbe(q, tag, status)
            if m is None:
                continue
            if posted[i]:
                reqs[i].Cancel()
                reqs[i].Wait()      # a cancelled receive completes at once
            n = status.Get_count(_BYTE)
            reqs.append(m.Irecv([_np().empty(n, "uint8"), n, _BYTE]))
            into[i] = None
            posted[i] = True
            theirs = (tag - base) % 16 - 1
            if theirs != mine:
                why = ("rank %d, its node's leader, sends that node's elements as %s where this rank (rank %d, "
                       "the root) receives %s" % (q, _basic_name(theirs), st.rank, _basic_name(mine)))
            else:
                why = ("ranks of the node of rank %d pass another type than its leader, which passes %s as this "
                       "rank (rank %d, the root) does" % (q, _basic_name(mine), st.rank))
            _hold_type_mismatch(st, what, why)
            break
    return 0


cdef bint _post_probed(_State st, list reqs) except -1:
    """A poll of a hierarchical Gather(v) root's wait where a truncated
    receive is unsafe (_TRUNCATION_UNSAFE): each leader's blocks of the
    root's type, once probed, are received at their length, into their
    place if it is the root's (their receive posted, reqs[i]), else into
    scratch with the mismatch held (_hold_length_mismatch). Whether every
    receive is posted (a refusal or blocks of another type, found at the
    checks, count as posted: _collect_refusals, _collect_types)."""
    _, srcs, typed, what = st.refusal_wait
    into, mine, posted = typed
    cdef int tag = _gather_tag(st.call_number, mine, False)
    cdef Py_ssize_t n
    cdef bint every = True
    status = MPI.Status()
    for i, q in enumerate(srcs):
        if posted[i]:
            continue
        m = st.private_comm.Improbe(q, tag, status)
        if m is None:
            every = False
            continue
        n = status.Get_count(_BYTE)
        if n == len(into[i]):
            reqs[i] = m.Irecv([into[i], n, _BYTE])
        else:
            reqs[i] = m.Irecv([_np().empty(n, "uint8"), n, _BYTE])
            _hold_length_mismatch(st, q, n, len(into[i]), what)
            into[i] = None
        posted[i] = True
    return every


cdef bint _took_truncated(_State st, list reqs, list statuses, list srcs, tuple typed, str what,
                          object exc) except -1:
    """MPI ended a Gather(v) root's wait for the other leaders' blocks with
    exc: if a leader's message was longer than its node's blocks at the root
    (MPICH reports MPI_ERR_TRUNCATE and writes nothing past the buffer),
    complete its request, hold the mismatch and return True (the wait goes
    on for the others); False for any other error."""
    if exc.Get_error_class() not in (MPI.ERR_IN_STATUS, MPI.ERR_TRUNCATE):
        return False
    into = typed[0]
    cdef bint took = False
    for i in range(min(len(srcs), len(statuses))):
        if into[i] is None or MPI.Get_error_class(statuses[i].Get_error()) != MPI.ERR_TRUNCATE:
            continue
        try:
            reqs[i].Wait()      # frees it (MPICH keeps a request that completed in error)
        except MPI.Exception:
            pass
        _hold_length_mismatch(st, srcs[i], -1, len(into[i]), what)
        into[i] = None
        took = True
    return took


cdef int _check_lengths(_State st, list statuses, list srcs, tuple typed, str what) except -1:
    """After a Gather(v) root's wait: a leader whose message was shorter
    than its node's blocks at the root (MPI completes such a receive) holds
    the mismatch too."""
    into = typed[0]
    cdef Py_ssize_t n
    for i, q in enumerate(srcs):
        if into[i] is None:
            continue
        n = statuses[i].Get_count(_BYTE)
        if n != len(into[i]):
            _hold_length_mismatch(st, q, n, len(into[i]), what)
            into[i] = None
    return 0


cdef int _hold_length_mismatch(_State st, int leader, Py_ssize_t got, Py_ssize_t want, str what) except -1:
    """A hierarchical Gather(v)'s root received `got` bytes (-1: more than
    `want`) of the blocks of the node of rank `leader` where its counts say
    `want`: a DatatypeMismatchError, held until the call completed."""
    st.core.hold(DatatypeMismatchError(
        "%s (hierarchical): rank %d, its node's leader, sends %s bytes of that node's blocks where this rank "
        "(rank %d, the root) receives %d: the type signatures differ (MPI calls the program erroneous); the "
        "receive buffer's part for that node is undefined"
        % (what, leader, ("more than %d" % want) if got < 0 else str(got), st.rank, want)))
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
    cdef int coll = PGC_COLL_SCATTERV if v else PGC_COLL_SCATTER
    cdef int dtype = _basic(s if at_root else r)     # what every rank states (PGC_SIG_ROOTED)
    _tune(st, coll, rb)     # Scatterv: by this rank's own block (tune.pxi)
    if not st.hier:
        if st.core.c_scatter(v, NULL if s is None else s.ptr, NULL if lay is None else lay.counts,
                             NULL if lay is None else lay.displs, NULL if r is None else r.ptr, rb, root,
                             dtype):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
        _done(st, coll, P_ENGINE, s, r)
        return 1
    st.core.holding = True
    try:
        _hier_scatter(st, s, lay, r, rb, root, v, dtype)
    except RootRefusedError as exc:
        _root_refused_across(st, exc, coll, root)
    except PgascolError as exc:
        _in_hierarchy(exc, coll)
    finally:
        held = st.core.take_held()
    _done(st, coll, P_HIER, s, r)
    _raise_held(held, coll)
    return 1


cdef int _hier_scatter(_State st, _Msg s, _Layout lay, _Msg r, Py_ssize_t rb, int root,
                       bint v, int dtype) except -1:
    """Gather's mirror: the root sends every other node its members' blocks
    in one message (private_comm; with nodes of consecutive ranks and blocks one
    after another, straight out of the send buffer), a Scatterv's preceded by
    their counts, and its leader scatters them on the engine; the root's node
    scatters from the root meanwhile. A leader checks its own count against
    the root's; each member its own, in the engine. r None: in place at the
    root."""
    cdef Team core = st.core
    cdef int rn = st.node_of[root], rl = st.local_of[root], n
    cdef Py_ssize_t tot
    cdef _Layout ml
    cdef char *rptr = NULL if r is None else r.ptr
    if st.nidx == rn:
        if st.rank != root:
            core.c_scatter(True, NULL, NULL, NULL, rptr, rb, rl, dtype)
            return 0
        in_order = st.in_rank_order and lay.consecutive()
        src = _u8(s.obj)
        reqs = []
        for n in range(st.nnodes):
            if n != rn:
                leader = st.members[n][0]
                if v:   # its members' counts first: their leader knows them no other way
                    c = _counts_message(_members_layout(st, lay, n))
                    reqs.append(st.private_comm.Isend([c, len(c), _BYTE], dest=leader, tag=TAG_SCATTERV_COUNTS))
                b = _node_message(st, lay, src, n, in_order, True)
                reqs.append(st.private_comm.Isend([b, len(b), _BYTE], dest=leader, tag=TAG_SCATTER + 1 + dtype))
        ml = _members_layout(st, lay, rn)
        core.c_scatter(True, s.ptr, ml.counts, ml.displs, rptr, rb, rl, dtype)
        _mpi_wait(st, reqs, "Scatter")
        return 0
    if st.lrank != 0:
        core.c_scatter(True, NULL, NULL, NULL, rptr, rb, 0, dtype)
        return 0
    # The root's message (a Scatterv's counts come first, then its blocks),
    # any tag: the root may send its refusal instead (_refuse_leg), in a
    # message that must fit too. A Scatter's root may send more than this
    # node's ranks receive: probed where a truncated receive is unsafe.
    what = "Scatterv" if v else "Scatter"
    ml = _Layout(st.lsize)
    cdef Py_ssize_t want = 8 * st.lsize if v else st.lsize * rb
    cdef Py_ssize_t cap = max(want, _REFUSAL_MAX + 8)
    status = MPI.Status()
    cdef int got = 0
    while got <= 0:     # a refusal of an earlier call (_refusal_of) is dropped
        if _TRUNCATION_UNSAFE:  # (a Scatter's root may even meet this Scatterv's leader)
            m = _mpi_probe(st, root, what, status)
            b = st.scratch(0, status.Get_count(_BYTE))
            m.Recv([b, len(b), _BYTE])
        else:
            b = st.scratch(0, cap)
            try:
                _mpi_wait(st, [st.private_comm.Irecv([b, cap, _BYTE], source=root, tag=MPI.ANY_TAG)], what, [status])
            except MPI.Exception as exc:
                if MPI.ERR_TRUNCATE not in (exc.Get_error_class(), MPI.Get_error_class(status.Get_error())):
                    raise
                _leg_signature_differs(st, "%s (hierarchical): the root (rank %d) sends this node more than the %d "
                                       "bytes its ranks receive" % (what, root, want))
            b = b[:status.Get_count(_BYTE)]
        got = _root_message(st, status, b, want, root, what, dtype, v)
    if v:
        _fill_node_layout(st, ml, _array_data(b), 0)
        tot = ml.displs[st.lsize - 1] + ml.counts[st.lsize - 1]
        b = st.scratch(0, tot)
        _mpi_wait(st, [st.private_comm.Irecv([b, tot, _BYTE], source=root, tag=MPI.ANY_TAG)], what, [status])
        got = _root_message(st, status, b, tot, root, what, dtype, False)
    elif len(b) % st.lsize:
        _leg_signature_differs(st, "%s (hierarchical): the root (rank %d) sends this node %d bytes, no multiple of "
                               "its %d ranks" % (what, root, len(b), st.lsize))
    else:
        _fill_node_layout(st, ml, NULL, len(b) // st.lsize)
    if <Py_ssize_t>ml.counts[0] != rb:
        # the root sends me another count than I receive (held): my node's
        # leg runs with the root's counts, my block into scratch, so that
        # each member compares its own count with the root's
        st.core.hold(DatatypeMismatchError(
            "%s (hierarchical): the root (rank %d) sends %d bytes to this rank, which receives %d: the type "
            "signatures differ (MPI calls the program erroneous); this rank's buffer is untouched"
            % (what, root, ml.counts[0], rb)))
        got = 2
    if got == 2:
        # the root's type or count differs (held): my own block stays out of
        # my buffer, and my node's leg states the root's type, so that each
        # member compares its own with the root's and takes its block if they agree
        rb = ml.counts[0]
        rptr = _array_data(st.scratch(1, rb))
        dtype = status.Get_tag() - TAG_SCATTER - 1
    core.c_scatter(True, _array_data(b), ml.counts, ml.displs, rptr, rb, 0, dtype)
    return 0


cdef int _leg_signature_differs(_State st, str why) except -1:
    """A leader took in the root's message of a Scatter(v) and finds no
    counts its node's leg could run with: it refuses the leg (its members
    end the call with its reason, the team in step) and raises."""
    exc = DatatypeMismatchError(why + ": the type signatures differ (MPI calls the program erroneous)")
    st.core.c_refuse(st.coll, ("%s: %s" % (type(exc).__name__, exc)).encode(errors="replace")[:_REFUSAL_MAX - 1])
    raise exc


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
    cdef int coll = PGC_COLL_ALLGATHERV if v else PGC_COLL_ALLGATHER
    # the class: a rank's block (Allgatherv: the mean block, known to every rank)
    _tune(st, coll, lay.total() // st.size if v else sb)
    if not st.hier:
        if st.core.c_allgather(v, NULL if inplace else s.ptr, sb, r.ptr, lay.counts, lay.displs, False):
            return _ON_MPI     # the tuner's MPI path, agreed (_engine runs it)
        _done(st, coll, P_ENGINE, s, r)
        return 1
    try:
        if st.in_rank_order and lay.consecutive():
            _hier_allgather_in_order(st, NULL if inplace else s.ptr, sb, r, lay)
        else:
            bcounts, bdispls = lay.count_list(), lay.displ_list()
            sobj = _u8(r.obj)[bdispls[st.rank]:bdispls[st.rank] + sb] if inplace else s.obj
            _hier_allgather(st, sobj, sb, r.obj, bcounts, bdispls)
    except PgascolError as exc:
        _in_hierarchy(exc, coll)
    _done(st, coll, P_HIER, s, r)
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
            req = st.internode_comm.Iallgather(_IN_PLACE, [whole, node_tot[0], _BYTE])
        else:
            req = st.internode_comm.Iallgatherv(_IN_PLACE, [whole, (node_tot, offs), _BYTE])
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
    full = _np().empty(total, "uint8")
    mine = full[offs[st.nidx]:offs[st.nidx] + node_tot[st.nidx]]
    core.gather(sobj, sb, mine if st.lrank == 0 else None, sizes if st.lrank == 0 else None, None, 0, True)
    if st.lrank == 0:
        _mpi_wait(st, [st.internode_comm.Iallgatherv(_IN_PLACE, [full, (node_tot, offs), _BYTE])], "Allgather")
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
