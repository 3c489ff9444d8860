# A rank that refuses its arguments to a hierarchical call (_refused): how
# the other nodes learn it and how the call ends on every rank with the
# communicator usable, or is given up. The messages are failure.pxi's.

cdef int _refused(_State st, int coll, object exc, int root, object sendbuf, object recvbuf,
                  object op) except -1:
    """This rank raised `exc` before its call reached the engine, while the
    other ranks may be in it: the node team takes the call as refused, so a
    peer waiting for this rank fails at once with a message naming it (and,
    in a Gather(v) or Scatter(v) whose root this is, with exc's message as
    a RootRefusedError, the team usable), and the sequence numbers stay in
    step (pgc_coll_refuse in the C core). On a hierarchy the other nodes
    learn it too: in a Gather(v) or Scatter(v) the refusal takes the place
    of this rank's inter-node messages (_refuse_leg); in any other
    collective a leader tells the other leaders, which may wait for it in
    MPI (_send_refusal, met in _check_alerts); in a Bcast, Reduce, Scan or
    Exscan it joins their MPI leg with no data where it can (_refuse_rooted).
    The root of a Reduce, whose data nobody needs, does not refuse: it runs
    its part on scratch buffers where its arguments tell the call and its
    node's members are in it (_reduce_on_scratch).
    sendbuf, recvbuf, op: the call's arguments (Bcast's buffer: sendbuf)."""
    if st.core is None:
        return 0
    if coll == PGC_COLL_REDUCE and st.rank == root and _reduce_on_scratch(st, sendbuf, recvbuf, op, root):
        return 0
    reason = ("%s: %s" % (type(exc).__name__, exc)).encode(errors="replace")[:_REFUSAL_MAX - 1]
    if st.hier and _root_refusal_ends_call(coll) and 0 <= root < st.size:
        _refuse_leg(st, coll, reason, root)
        return 0
    # a Bcast's refusing leader names itself: to its node's members, whose
    # node leg it roots (another node than the root's), or to the other
    # nodes (the root's node, not the root: _bcast_refusal)
    node_reason = reason
    if coll == PGC_COLL_BCAST and st.hier and st.lrank == 0 and st.rank != root and 0 <= root < st.size:
        if st.nidx == st.node_of[root]:
            reason = _prefixed(_ROOTS_LEADER, st.rank, reason)
        else:
            node_reason = _prefixed(_LEADER, st.rank, reason)
    st.core.c_refuse(coll, node_reason)
    if st.hier:
        # every rank may have refused alike and left: the refusal names
        # this call, so a leader's later calls never read it (another tag,
        # _check_alerts); the other nodes may still wait for this rank in
        # MPI after it freed the communicator: kept (free)
        st.alerts_exchanged = True
        if _joins_leg(coll):
            # a Bcast's root: its node's members end the call with its reason
            # (RootRefusedError), and a root that does not lead its node leaves
            # the leaders' leg to the leader, which meets the refusal in the
            # root's node leg (_root_node_leg)
            root_out = coll == PGC_COLL_BCAST and st.rank == root
            if st.lrank == 0 or not root_out:
                _refuse_rooted(st, coll, reason, root, _leg_of(st, coll, sendbuf, recvbuf, op, root), root_out)
        elif st.lrank == 0:
            for q in _other_leaders(st):
                _send_refusal(st, q, reason)
            # its node's members may wait for it in a later node leg of the
            # call (an Allreduce's broadcast) and its next inter-node
            # collective would meet the other leaders' of this call: unless
            # every member refused too, its node team gives the call up
            if st.core.c_wait_all_refused() and _leaders_meet(coll):
                _refused_alike_across(st, coll)
    return 0


# A node's leader names itself in the reason its node's members read; the
# root's node's leader in the one the other nodes read (and their leaders
# pass on to their members).
cdef str _LEADER = "this node's leader, rank "
cdef str _ROOTS_LEADER = "the root's node's leader, rank "


cdef inline bytes _prefixed(str prefix, int rank, bytes reason):
    return ((prefix + "%d: " % rank).encode() + reason)[:_REFUSAL_MAX - 1]


cdef object _bcast_refusal(_State st, str what, str why):
    """The RootRefusedError of a leader whose wait in a Bcast's leaders' leg
    ended with the refusal of the root's node (its leader's reason: why),
    naming the root or, where that leader refused itself, the leader
    (refused_by, passed on to this node's members: _named_refuser)."""
    if not why.startswith(_ROOTS_LEADER):
        return RootRefusedError("%s: the root (rank %d) refused its arguments: %s" % (what, st.root, why))
    leader, _, why = why[len(_ROOTS_LEADER):].partition(": ")
    exc = RootRefusedError("%s: the root's node's leader (rank %s) refused its arguments: %s" % (what, leader, why))
    exc.refused_by = int(leader)
    return exc


cdef bytes _named_refuser(_State st, object exc):
    """The reason a leader passes on to its node's members from the
    RootRefusedError its wait in the leaders' leg ended with."""
    cdef int q = getattr(exc, "refused_by", st.root)
    return _refusal_reason(exc) if q == st.root else _prefixed(_ROOTS_LEADER, q, _refusal_reason(exc))


cdef inline bint _leaders_meet(int coll):
    """The collectives whose inter-node leg no leader completes without
    every other one: a leader in the call surely waits for a refusing one
    (and replies to its refusal, _refusal_alert)."""
    return (coll == PGC_COLL_BARRIER or coll == PGC_COLL_ALLREDUCE or coll == PGC_COLL_ALLGATHER
            or coll == PGC_COLL_ALLGATHERV or coll == PGC_COLL_ALLTOALL or coll == PGC_COLL_ALLTOALLV
            or coll == PGC_COLL_REDUCE_SCATTER or coll == PGC_COLL_REDUCE_SCATTER_BLOCK)


cdef int _refused_alike_across(_State st, int coll) except -1:
    """A leader refused `coll`, whose inter-node leg needs every leader,
    and its node's members refused it too: every other leader either
    refused it too (its own refusal comes) or waits for this one in MPI
    and replies when it meets the refusal (_refusal_alert). Wait for each;
    a reply means this rank's next inter-node collective would meet the
    others' one of this call in MPI: its node team gives the call up, so
    that call raises TeamAbortedError instead. Every leader refusing alike
    leaves the communicator usable, and no refusal of the call unread."""
    what = _COLL_NAMES[coll]
    try:
        replied = _drain(st, _other_leaders(st), -1, what)
    except PgascolError:
        return 0    # its node gave the call up meanwhile (an alert)
    if replied:
        st.core.abort("%s: this rank refused its arguments while rank %d is in the call: the call is given up"
                      % (what, replied[0][0]))
    return 0


cdef inline bint _joins_leg(int coll):
    """The collectives whose inter-node leg some leaders complete without
    a refusing one (a Bcast's root and leaves, the ranks before it in a
    Scan): the refuser joins the leg with no data (_refuse_rooted)."""
    return coll == PGC_COLL_BCAST or coll == PGC_COLL_REDUCE or coll == PGC_COLL_SCAN or coll == PGC_COLL_EXSCAN


cdef int _leg_rank(_State st, int coll, int n):
    """The rank of node n in the inter-node MPI leg of `coll`: its leader,
    or in a Scan/Exscan of equal nodes its last rank, which holds the
    node's total (_hier_scan)."""
    if (coll == PGC_COLL_SCAN or coll == PGC_COLL_EXSCAN) and st.equal:
        return st.members[n][st.lsize - 1]
    return st.members[n][0]


cdef bint _needs_node(_State st, int coll, int root, int src, int dst):
    """Whether the result of node dst in `coll` (rooted at root) holds
    node src's data: the leaders of such nodes wait for src's in the
    inter-node leg, whatever MPI's algorithm; the others may complete
    without it. Every other collective: needed."""
    if coll == PGC_COLL_BCAST:
        return src == st.node_of[root]
    if coll == PGC_COLL_REDUCE:
        return dst == st.node_of[root]
    if coll == PGC_COLL_SCAN or coll == PGC_COLL_EXSCAN:
        return src < dst
    return True


cdef int _refuse_rooted(_State st, int coll, bytes reason, int root, object leg, bint node_out) except -1:
    """This rank refused a hierarchical Bcast, Reduce, Scan or Exscan, or
    leads the node of a Bcast's root that refused (node_out: every member
    of its node ended the call with the root's reason). Some leaders
    complete such a call without it (a Bcast's root and leaves), so it
    cannot learn whether they are in it, and its next inter-node
    collective must not meet theirs: it joins their MPI leg with scratch
    data of its call's size (leg: _leg_of), the same MPI calls as its node
    would make (_join_leg), which completes the leg everywhere. Its data
    must reach no leg rank that takes it for real: it tells every node's
    leg rank (_send_refusal) and waits for an answer from each whose
    result needs its data (_needs_node): its refusal, or from one in the
    call a reply, that it waits for the join (_await_join: it raises once
    the leg completed, after a Bcast's node leg refused with the root's
    reason) or gave the call up (_refusal_alert: its node's members wait
    for it). The others leave a refusal unread and wait for the join.
    Refusals and waits only: it joins, and the communicator stays usable,
    every rank in the call that raises nothing having the right data. A
    call given up, or members of its node in the call (c_wait_all_refused,
    unless node_out): it gives the call up (_give_up_across). Arguments
    that do not tell the leg (leg None: a root out of range, no buffer,
    counts that differ) tell nobody's needs either: it waits for every leg
    rank's answer and does not join, which ends at once where every rank
    refused alike (nobody is in the leg) or where they need it, else at
    the wait's timeout."""
    # In a Bcast no member of the node waits for a refuser after the node leg
    # it reads from or roots: that leg's readers skip it or end the call with
    # its reason (RootRefusedError), so its members in the call are no reason
    # to give the call up
    cdef bint members_free = node_out or coll == PGC_COLL_BCAST
    if st.rank != _leg_rank(st, coll, st.nidx):
        # this node's leg rank settles the leg; a member of its node in the
        # call may wait for this rank in a later node leg (a Scan's node
        # broadcast of the total): the node team gives the call up then
        if not members_free:
            st.core.c_wait_all_refused()
        return 0
    what = _COLL_NAMES[coll]
    ranks = [_leg_rank(st, coll, n) for n in range(st.nnodes) if n != st.nidx]
    for q in ranks:
        _send_refusal(st, q, reason)
    if not members_free and not st.core.c_wait_all_refused():
        return _give_up_across(st, ranks, "%s: this rank refused its arguments while a rank of its node is in "
                               "the call: the call is given up" % what)
    # The leader of a Bcast's root's node: every other leader waits for its
    # data and tells it the leg's size (_await_join), which its own
    # arguments may not tell (a count its buffer does not hold, or none)
    cdef bint size_told = coll == PGC_COLL_BCAST and 0 <= root < st.size and st.nidx == st.node_of[root]
    if leg is None:     # who needs it is unknown too: every leg rank answers, or the wait times out
        needed = list(ranks)     # (_drain empties it)
    else:
        needed = [q for q in ranks if leg[0] and _needs_node(st, coll, root, st.nidx, st.node_of[q])]
    cdef Py_ssize_t needed_at_first = len(needed)
    try:
        replied = _drain(st, needed, -1, what)
        if size_told:
            sizes = {why[1:] for q, why in replied if why[:1] == _AWAITS and len(why) == 9}
            if len(sizes) == 1 and len(replied) == needed_at_first:
                leg = (int.from_bytes(sizes.pop(), "little"), _BYTE, 1, None)
        gave_up = [q for q, why in replied if why[:1] != _AWAITS or leg is None]
        if gave_up:
            return _give_up_across(st, ranks, "%s: this rank refused its arguments while rank %d, which needs its "
                                   "data, is in the call: the call is given up" % (what, gave_up[0]))
        if leg is not None:
            try:
                _join_leg(st, coll, root, leg)
            except MPI.Exception:
                # the leg moved another count than this rank's arguments told,
                # which it receives into scratch: MPI's truncation error, here
                # only (this rank raises its own error; the others have their data)
                pass
    except PgascolError as exc:
        _give_up_across(st, ranks, str(exc))    # its node gave the call up meanwhile (an alert, a timeout)
    return 0


cdef object _leg_of(_State st, int coll, object sendbuf, object recvbuf, object op, int root,
                    bint exact=False):
    """(count, MPI datatype, element size, operator) of this rank's
    inter-node leg of a refused `coll`, as its node would have passed
    them, or None where its arguments do not tell them unambiguously.
    Only ranks that refused too or raise PeerRefusedError keep a result
    that holds the scratch data a join sends, so any operator defined on
    the type serves; exact: op itself (a Reduce root that runs the whole
    call on scratch, _reduce_on_scratch, meets its node team's members,
    which compare operators), None where the engine does not take it."""
    cdef _Msg m, s = None
    if not 0 <= root < st.size and coll != PGC_COLL_SCAN and coll != PGC_COLL_EXSCAN:
        return None
    try:
        if coll == PGC_COLL_BCAST:
            m = _simple(sendbuf, False, 0, True)    # read-only or not: only its size counts
            return None if m is None else (m.count * m.esize, _BYTE, 1, None)
        inplace = _is_in_place(sendbuf)
        if coll == PGC_COLL_REDUCE:
            # every rank's send buffer, or in place the root's receive buffer
            # (the others' send counts must equal the root's)
            if inplace:
                m = _simple(recvbuf, False, 0, False) if st.rank == root else None
            else:
                m = _simple(sendbuf, False, 0, False)
        else:
            m = _simple(recvbuf, False, 0, False)
            s = None if inplace else _simple(sendbuf, False, 0, False)
            if s is not None and (s.count != m.count or s.mpitype != m.mpitype):
                return None
        if m is None:
            return None
        for o in ((op,) if exact else (op, MPI.SUM, MPI.BOR, MPI.LOR)):
            try:
                if _op_code(o, m) >= 0:
                    return (m.count, m.mpitype, m.esize, o)
            except _ARGUMENT_ERRORS + (ArgumentError,):
                pass
    except _ARGUMENT_ERRORS + (ArgumentError,):
        pass
    return None


cdef int _join_leg(_State st, int coll, int root, tuple leg) except -1:
    """The inter-node MPI calls of a refused Bcast (_bcast_leg_scratch),
    Reduce or Scan/Exscan (_hier_reduce, _hier_scan), with scratch data.
    Refusals of the call met meanwhile are not alerts (they stay unread)."""
    cdef Py_ssize_t count = leg[0], esize = leg[2]
    cdef int rn = st.node_of[root] if 0 <= root < st.size else 0
    mpitype, op = leg[1], leg[3]
    what = _COLL_NAMES[coll]
    st.refusal_wait = _NO_SOURCES
    try:
        if coll == PGC_COLL_BCAST:
            _bcast_leg_scratch(st, rn, count, 0)
        elif coll == PGC_COLL_REDUCE:
            acc = st.scratch(0, count * esize)
            if st.nidx == rn:
                req = st.internode_comm.Ireduce(_IN_PLACE, [acc, count, mpitype], op, root=rn)
            else:
                req = st.internode_comm.Ireduce([acc, count, mpitype], None, op, root=rn)
            _mpi_wait(st, [req], what)
        else:
            _mpi_wait(st, [st.internode_comm.Iexscan([st.scratch(0, count * esize), count, mpitype],
                                            [st.scratch(1, count * esize), count, mpitype], op)], what)
    finally:
        st.refusal_wait = None
    return 0


cdef int _give_up_across(_State st, list ranks, str msg) except -1:
    """A refuser that cannot leave the call's leg complete: its node team
    gives the call up (its next call raises TeamAbortedError instead of
    meeting the others' leg in MPI), and it tells the other nodes' leg
    ranks (TAG_ABORT), which give up at their next check: those that wait
    for it in this call, and any whose later call would."""
    st.core.abort(msg)
    if not st.told_other_nodes:
        st.told_other_nodes = True
        why = msg.encode(errors="replace")[:255]
        for q in ranks:
            st.alerts.append(st.private_comm.Isend([why, len(why), _BYTE], dest=q, tag=TAG_ABORT))
    return 0


cdef inline bint _root_refusal_ends_call(int coll):
    """The collectives in which only the root's refusal is not an abort
    (pgc_root_refusal_ends_call, csrc/team/team.h)."""
    return (coll == PGC_COLL_GATHER or coll == PGC_COLL_GATHERV or coll == PGC_COLL_SCATTER
            or coll == PGC_COLL_SCATTERV)


cdef int _refuse_leg(_State st, int coll, bytes reason, int root) except -1:
    """This rank refused its arguments to a hierarchical Gather(v) or
    Scatter(v). Its node learns it as from pgc_coll_refuse, once per node
    leg the call has on this node (another node's byte counts come first in
    a Gatherv: _node_sizes), so every rank of the node stays in step whether
    or not its peers refused too. A rank that exchanges inter-node messages
    in the call (the root; another node's leader) puts its refusal in
    their place, naming the call (_send_refusal), and takes in what it
    would have received: each peer sends either its message or its own
    refusal (_drain), so nothing is left to meet a later call and the
    communicator stays usable. The root of a Scatter(v) sends every other
    leader its refusal instead of the node's blocks (the leader refuses
    its node's leg with the root's reason: _root_message); the root of a
    Gather(v) takes in every other leader's message; another node's leader
    sends the root of a Gather(v) its refusal instead of its node's blocks
    (the root ends the call with PeerRefusedError: _leaders_wait), and
    takes in the root's message of a Scatter(v)."""
    cdef int rn = st.node_of[root]
    cdef bint scatter = coll == PGC_COLL_SCATTER or coll == PGC_COLL_SCATTERV
    what = _COLL_NAMES[coll]
    leg = reason
    if st.nidx != rn:
        if coll == PGC_COLL_GATHERV:
            st.core.c_refuse(PGC_COLL_GATHERV, reason)
        if st.lrank == 0:
            leg = _prefixed(_LEADER, st.rank, reason)
    st.core.c_refuse(coll, leg)
    try:
        if st.rank == root and scatter:
            for q in _other_leaders(st):
                _send_refusal(st, q, reason)
        elif st.rank == root:
            _drain(st, _other_leaders(st), TAG_GATHER, what)
        elif st.nidx != rn and st.lrank == 0 and scatter:
            _drain(st, [root], TAG_SCATTER, what)
        elif st.nidx != rn and st.lrank == 0:
            _send_refusal(st, root, reason)
    except PgascolError:
        pass    # its node gave the call up meanwhile (an alert, which aborted it): it raises its own error
    return 0


# What a refusal's message says before the refuser's own error (PeerRefusedError,
# RootRefusedError, root_refused in csrc/coll/coll.c).
cdef str _REFUSED_ARGS = "refused its arguments: "


cdef bytes _refusal_reason(object exc):
    """The refuser's own error that a RootRefusedError repeats, as a
    refusal passes it on (_send_refusal, pgc_coll_refuse)."""
    return str(exc).partition(_REFUSED_ARGS)[2].encode(errors="replace")[:_REFUSAL_MAX - 1]


cdef int _root_refused_across(_State st, object exc, int coll, int root) except -1:
    """A RootRefusedError of a hierarchical Bcast, Gather(v) or Scatter(v) (its node
    leg named the node's root by local rank): re-raised naming the user's
    collective and the rank that refused, the root or this node's leader
    (_refuse_leg)."""
    head, _, reason = str(exc).partition(_REFUSED_ARGS)
    reason = reason or head
    if getattr(exc, "refused_by", root) != root:
        raise exc       # this leader's own wait named the root's node's leader (_mpi_wait)
    if reason.startswith(_LEADER):
        leader, _, reason = reason[len(_LEADER):].partition(": ")
        exc.args = ("%s: this node's leader (rank %s) refused its arguments: %s"
                    % (_COLL_NAMES[coll], leader, reason),)
    elif reason.startswith(_ROOTS_LEADER):
        leader, _, reason = reason[len(_ROOTS_LEADER):].partition(": ")
        exc.args = ("%s: the root's node's leader (rank %s) refused its arguments: %s"
                    % (_COLL_NAMES[coll], leader, reason),)
    else:
        exc.args = ("%s: the root (rank %d) refused its arguments: %s" % (_COLL_NAMES[coll], root, reason),)
    raise exc
