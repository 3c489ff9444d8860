# The failure protocol between nodes: the messages a hierarchical call's
# ranks exchange when one of them refuses its arguments, gives up or takes
# the call to MPI, so that no rank waits for another until PGASCOL_TIMEOUT.
# Within a node the node team carries the same news without messages
# (pgc_coll_refuse, pgc_coll_to_mpi, the team's abort: csrc/coll/coll.c).
#
# All go on the private communicator (_State.private_comm), eagerly (Isend kept in
# _State.alerts until free), and are read by whoever waits between nodes:
# _mpi_wait's checks every 100 ms (_mpi_check -> _check_alerts), or a wait
# that expects them (_drain, _leaders_wait, _root_message).
#
#   message                 sent by (where)                  to                    the receiver
#   ----------------------  -------------------------------  --------------------  ------------------------------------------
#   TAG_REFUSAL + call n:   a leader that refused call n     the other leaders     in the call's MPI leg: gives the call up,
#     n (8 bytes), reason     (_refused); a Bcast, Reduce,     (leg ranks)           replies b"", PeerRefusedError
#                             Scan or Exscan leg rank                                (_refusal_alert); or, when it can wait for
#                             (_refuse_rooted); a Gather(v)/                         the refuser's join, replies _AWAITS and
#                             Scatter(v) root or leader in                           raises once the leg completed
#                             place of its blocks (_refuse_leg)                      (_await_join); a Gather's root: collects
#                                                                                    it, PeerRefusedError (_leaders_wait); a
#                                                                                    Scatter's leader: RootRefusedError
#                                                                                    (_root_message); another call's: dropped
#   same tag, b"" / _AWAITS a rank in the call that met a    the refuser           b"": its node team gives the call up
#     (+ a Bcast's bytes,     refusal (above)                  (_drain)              (TeamAbortedError next); _AWAITS: it joins
#     8 bytes)                                                                       the leg with scratch data (_join_leg), of
#                                                                                    the bytes told where its arguments do not
#                                                                                    tell them
#   TAG_PATH 1              a leader whose node takes the    the other leaders     one in the hierarchical call replies
#                             call to MPI (_to_mpi_across)                           TAG_PATH 0, aborts its node team:
#                                                                                    CollectiveMismatchError (_path_alert)
#   TAG_PATH 0              (the reply above)                the MPI-bound leader  aborts its node team:
#                                                                                    CollectiveMismatchError (_to_mpi_across)
#   TAG_ABORT: reason       a leader whose node team gave    the other leaders     aborts its node team, TeamAbortedError;
#     ("revoked: ..." on      up (_abort_across); a refuser    (and a non-leader     a revocation revokes it, RevokedError
#     a revocation)           that cannot complete the leg     root of a Gather(v)/  (_abort_alert)
#                             (_give_up_across); _revoke       Scatter(v))
#
# A refusal's tag carries its call's number (_refusal_tag), so a later
# call's wait never matches one left over. What nobody read is drained at
# free (_drain_alerts), and a communicator that exchanged any is kept, not
# freed (_KEPT: a freed context may be reused by MPI).

# Tags of the private point-to-point communicator of the hierarchy.
cdef enum:
    TAG_GATHER = 64     # + 32 x the call's slot + the blocks' type (64-1023): a Gather(v)'s blocks
                        # from a node's leader to the root (_gather_tag)
    TAG_SCATTER = 32    # + 1 + the root's basic type (PGC_SIG_ROOTED's 5 bits: 32-63): a Scatter(v)'s
                        # blocks for a node, whose tag tells their type (_root_message)
    TAG_SCATTERV_COUNTS = 16    # a Scatterv's byte counts of a node's members (int64 each), from the
                                # root to the node's leader ahead of their blocks (_counts_message)
    TAG_REDUCE = 13
    TAG_PATH = 14       # between leaders: "my node takes this call to MPI" (1) or "mine does not" (0)
    TAG_ABORT = 15      # a leader to the others: its node team gave up, and why (_abort_across)
    # A refusal of call number n (_send_refusal): TAG_REFUSAL + n % _SEQ_TAGS, so that
    # a wait of a later call never matches one left over from an earlier call
    TAG_REFUSAL = 1024
cdef long long _SEQ_TAGS = 16384    # tags up to 17407: MPI guarantees 32767

# The reason of a TAG_ABORT alert that revokes (_revoke, _abort_alert).
cdef str _REVOKED = "revoked: "

# The longest reason a refusal carries (the C core's PGC_REFUSAL_MAX).
cdef Py_ssize_t _REFUSAL_MAX = 256

cdef object _ONE = bytearray(b"\x01"), _NO = bytearray(b"\x00")


cdef int _check_alerts(_State st, str what) except -1:
    """A leader waiting in an inter-node leg: has another node's leader
    taken this call to MPI (TAG_PATH, _to_mpi_across: answer that this
    node did not, so that it does not enter MPI), given up (TAG_ABORT) or
    refused its arguments to this call (_send_refusal; a refusal of an
    earlier call has another tag and stays unread)? Each makes this node
    give up too, at once instead of at the timeout; a wait that takes the
    refusals of its sources itself (_leaders_wait, _drain) leaves them."""
    status = MPI.Status()
    if st.refusal_wait is not None:
        _collect_refusals(st)
    else:
        m = st.private_comm.Improbe(MPI.ANY_SOURCE, _refusal_tag(st.call_number), status)
        if m is not None:
            number, why = _refusal_of(m, status)
            # a refuser whose data this rank does not need joins the leg
            # anyway (or tells it gave up: TAG_ABORT): wait for it
            if number == st.call_number and (st.in_path_agreement or _needs_node(
                    st, st.coll, st.root, st.node_of[status.Get_source()], st.nidx)):
                if not st.in_path_agreement and _awaits_join(st, st.coll):
                    _await_join(st, status.Get_source(), why)
                else:
                    _refusal_alert(st, status.Get_source(), why, what)
    m = None if st.in_path_agreement else st.private_comm.Improbe(MPI.ANY_SOURCE, TAG_PATH, status)
    if m is not None:
        m.Recv([_np().zeros(1, "int8"), 1, _BYTE])
        _path_alert(st, status.Get_source(), what)
    m = st.private_comm.Improbe(MPI.ANY_SOURCE, TAG_ABORT, status)
    if m is not None:
        why = bytearray(status.Get_count(_BYTE))
        m.Recv([why, len(why), _BYTE])
        _abort_alert(st, status.Get_source(), bytes(why), what)
    return 0


cdef int _path_alert(_State st, int src, str what) except -1:
    """Rank src's node takes this call to MPI (its TAG_PATH received):
    answer 0 (this node does not), give up the node team and raise."""
    st.alerts_exchanged = True
    st.alerts.append(st.private_comm.Isend([_NO, 1, _BYTE], dest=src, tag=TAG_PATH))
    msg = ("%s: rank %d takes it to MPI (arguments pgascol does not accelerate, such as a user-defined "
           "operator or a datatype it does not pack) while this rank is in the hierarchical %s; every "
           "rank must pass arguments of the same kind" % (what, src, what))
    st.core.abort(msg)
    raise CollectiveMismatchError(msg)


cdef int _abort_alert(_State st, int src, bytes why, str what) except -1:
    """Rank src's node gave up (its TAG_ABORT received): so does this one,
    revoking its node team if src's revoked the communicator (_revoke)."""
    st.alerts_exchanged = True
    reason = why.decode(errors="replace")
    if reason.startswith(_REVOKED):
        msg = "%s: the communicator was revoked (told by the node of rank %d: %s)" % (
            what, src, reason[len(_REVOKED):])
        st.core.revoke(msg)
        raise RevokedError(msg)
    msg = "%s: the node of rank %d gave up: %s" % (what, src, why.decode(errors="replace"))
    st.core.abort(msg)
    raise TeamAbortedError(msg)


cdef int _refusal_alert(_State st, int src, bytes why, str what) except -1:
    """Rank src, a leader, refused its arguments to this call (its
    _send_refusal received) while this rank waits in an inter-node MPI
    collective it never joined: the request can never complete, so the
    node team gives the call up and this rank raises PeerRefusedError."""
    st.alerts_exchanged = True
    _send_refusal(st, src, b"")     # the reply: in the call, given up (_refused waits for it)
    msg = ("%s: rank %d refused its arguments (%s) while this rank waits for it between nodes; the call "
           "is given up" % (what, src, why.decode(errors="replace")))
    st.core.abort(msg)
    raise PeerRefusedError(msg)


# A leg rank's answer to a refusal whose join it waits for (_await_join).
cdef bytes _AWAITS = b"\0"


cdef inline bint _awaits_join(_State st, int coll):
    """Whether this leg rank, waiting for a refuser's data in `coll`, can
    wait for its join (_await_join) instead of giving the call up: alone
    on its node (no member waits for it in a node leg), or in a Bcast,
    whose node leg it then refuses with the root's reason (_hier_bcast)."""
    return _joins_leg(coll) and (st.lsize == 1 or coll == PGC_COLL_BCAST)


cdef int _await_join(_State st, int src, bytes why) except -1:
    """Rank src refused this Bcast, Reduce, Scan or Exscan, whose result
    here needs its data, and this rank can wait for it (_awaits_join): it
    answers that it waits (_AWAITS), so the refuser joins the leg with
    scratch data (_refuse_rooted), and once the leg completed it raises
    PeerRefusedError, or in a Bcast RootRefusedError (_mpi_wait), every
    rank having ended its part of the leg: the communicator stays usable."""
    st.alerts_exchanged = True
    # a Bcast's byte count too: the refuser's own arguments may not tell it
    # (a count its buffer does not hold, or none), and it joins with this
    _send_refusal(st, src, _AWAITS + (int(st.bcast_bytes).to_bytes(8, "little")
                                      if st.coll == PGC_COLL_BCAST else b""))
    if st.awaited_joins is None:
        st.awaited_joins = []
    st.awaited_joins.append((src, why))
    return 0


cdef int _to_mpi_across(_State st, int coll) except -1:
    """Every rank of this node takes `coll` to MPI (Team.c_to_mpi found it so):
    so must every other node, or a rank would wait in MPI for ranks that
    never come. The leader tells the other leaders (TAG_PATH 1) and waits
    for theirs: 1 from a node that goes to MPI too, 0 from one that is in
    the hierarchical collective (_check_alerts); the node learns the
    verdict by a node broadcast. A disagreement aborts the node team."""
    verdict = _np().ones(1, "int8")
    what = _COLL_NAMES[coll]
    cdef int bad = -1
    if st.lrank == 0:
        leaders = [st.members[n][0] for n in range(st.nnodes) if n != st.nidx]
        got = _np().zeros(len(leaders), "int8")
        reqs = [st.private_comm.Isend([_ONE, 1, _BYTE], dest=q, tag=TAG_PATH) for q in leaders]
        reqs += [st.private_comm.Irecv([got[i:i + 1], 1, _BYTE], source=q, tag=TAG_PATH) for i, q in enumerate(leaders)]
        st.in_path_agreement = True
        try:
            _mpi_wait(st, reqs, what)
        finally:
            st.in_path_agreement = False
        if not got.all():
            bad = leaders[int(_np().argmin(got))]
            verdict[0] = 0
            st.alerts_exchanged = True
    st.core.stats_paused = True     # part of the call counted as "mpi"
    try:
        st.core.bcast(verdict, 1, 0)
    finally:
        st.core.stats_paused = False
    if not verdict[0]:
        msg = ("%s: this rank takes it to MPI (arguments pgascol does not accelerate, such as a user-defined "
               "operator or a datatype it does not pack) while %s is in the hierarchical %s; every rank must "
               "pass arguments of the same kind" % (what, "rank %d" % bad if bad >= 0 else "another node", what))
        st.core.abort(msg)
        raise CollectiveMismatchError(msg)
    return 0


# Inter-node communicators of states that gave up a hierarchical call (_State.free).
cdef list _KEPT = []


cdef bint _given_up(_State st):
    """Whether st's node team was aborted (its inter-node legs may have
    left requests pending)."""
    try:
        st.core.check_alive()
    except PgascolError:
        return True
    return False


cdef bint _drain_alerts(_State st) except -1:
    """Receive the alerts that arrived and nobody took (a leader that left
    the collective before its next check): whether there were any."""
    status = MPI.Status()
    cdef bint any_ = False
    while True:     # TAG_PATH, TAG_ABORT, refusals of calls this rank had left (every rank refused)
        m = st.private_comm.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
        if m is None:
            break
        m.Recv([bytearray(max(status.Get_count(_BYTE), 1)), status.Get_count(_BYTE), _BYTE])
        any_ = True
    return any_


cdef int _abort_across(_State st, object exc, int root=-1) except -1:
    """This rank's node team gave up in a hierarchical collective (exc): its
    leader tells the other nodes' leaders (TAG_ABORT), which give up at
    their next check (_check_alerts) instead of waiting for this node until
    PGASCOL_TIMEOUT. root: the root of the Gather(v) or Scatter(v) given up
    (else -1), which talks to the other nodes' leaders itself
    (_hier_gather, _hier_scatter, _refuse_leg): told too if it is no
    leader, and it tells them too if this rank is it."""
    if not st.hier or st.told_other_nodes or (st.lrank != 0 and st.rank != root):   # once: the communicator is not used again
        return 0
    st.told_other_nodes = st.alerts_exchanged = True
    why = str(exc).encode(errors="replace")[:255]
    dests = [st.members[n][0] for n in range(st.nnodes) if n != st.nidx]
    if root >= 0 and st.node_of[root] != st.nidx and st.local_of[root] != 0:
        dests.append(root)
    for q in dests:
        st.alerts.append(st.private_comm.Isend([why, len(why), _BYTE], dest=q, tag=TAG_ABORT))
    return 0


# Whether the MPI has ULFM's error classes (mpi4py gives ERR_REVOKED the
# value of ERR_UNKNOWN where it does not: MPICH's default build).
cdef bint _ULFM = MPI.ERR_REVOKED != MPI.ERR_UNKNOWN


cdef int _revoke(_State st, str why) except -1:
    """Revoke st's paths (Comm.Revoke, or a RevokedError met): the node
    team (why: its reason; None: it is revoked already), whose waits all
    fail at once, and the other nodes: the leader tells theirs
    (_abort_across, the reason marked _REVOKED), which revoke their node
    teams at their next inter-node check (_abort_alert). pgascol's own
    message, not MPI's revocation of the inter-node communicators: Open MPI
    carries a revocation to other ranks only when its fault tolerance is
    enabled at launch (mpiexec --with-ft ulfm)."""
    if why is not None:
        st.core.revoke(why)
    _abort_across(st, _REVOKED + (why or "the communicator was revoked"))
    return 0


cdef int _raise_held(object held, int coll) except -1:
    """Raise what the node legs of a hierarchical Bcast, Gather(v) or
    Scatter(v) held (Team.holding: their bytes moved, the team in step), once
    every leg ran: the members of a leg compare basic types (PGC_SIG_ROOTED),
    the leaders' messages carry bytes."""
    if held is None:
        return 0
    name = _COLL_NAMES[coll]
    if not str(held).startswith(name + " (hierarchical)"):      # a leg's, not the leaders' (_root_message)
        held.args = ("%s (hierarchical): in this node's leg (rooted at the root, or at the node's leader): %s"
                     % (name, held),) + tuple(held.args[1:])
    raise held


cdef int _in_hierarchy(object exc, int coll) except -1:
    """Re-raise an error of a hierarchical collective under the name of the
    collective the user called (the engine names its own step, e.g. the
    Reduce_scatter inside a hierarchical Allreduce)."""
    name = _COLL_NAMES[coll]
    msg = str(exc)
    if not (msg.startswith(name + ":") or msg.startswith(name + " ")):
        exc.args = ("%s (hierarchical): %s" % (name, msg),) + tuple(exc.args[1:])
    raise exc


cdef list _other_leaders(_State st):
    return [st.members[n][0] for n in range(st.nnodes) if n != st.nidx]


cdef inline int _refusal_tag(long long call_number):
    return TAG_REFUSAL + <int>(call_number % _SEQ_TAGS)


cdef int _send_refusal(_State st, int dest, bytes reason) except -1:
    """Tell rank dest that this rank refused its arguments to call st.call_number,
    and why: the call's number (8 bytes) and the reason, tagged by the
    number (_refusal_tag)."""
    msg = int(st.call_number).to_bytes(8, "little", signed=True) + reason
    st.alerts.append(st.private_comm.Isend([msg, len(msg), _BYTE], dest=dest, tag=_refusal_tag(st.call_number)))
    return 0


cdef tuple _refusal_of(object m, object status):
    """Receive the refusal `m` matched (status): (its call's number, reason)."""
    cdef Py_ssize_t n = status.Get_count(_BYTE)
    buf = bytearray(max(n, 8))
    m.Recv([buf, n, _BYTE])
    return _refusal_seq(buf), bytes(buf[8:n])


cdef long long _refusal_seq(object buf):
    """The call a refusal received into buf names (_send_refusal)."""
    return int.from_bytes(bytes(buf[:8]), "little", signed=True)


# A wait that takes refusals itself but from no source in particular (_drain).
cdef tuple _NO_SOURCES = ((), (), None, None)


cdef list _drain(_State st, list srcs, int tag, str what):
    """A rank that refused its part of a hierarchical Gather(v) (the root)
    or Scatter(v) (another node's leader) takes in what it would have
    received: each of srcs sends either its message (tag, or for
    TAG_SCATTER and TAG_GATHER the tag of its blocks' type; dropped) or its own refusal of
    this call. A leader that refused an Allreduce-like call, or a
    rooted one whose leg it joins (tag -1: _refused, _refuse_rooted),
    takes in each of srcs' refusal or reply (_refusal_alert: an empty
    reason). Bounded as every inter-node wait
    (_mpi_check: alerts, the node team, PGASCOL_TIMEOUT). Returns the
    sources that replied, with their reply (b"": in the call, given up;
    _AWAITS: in the call, waiting for the refuser's join, in a Bcast
    followed by its byte count)."""
    status = MPI.Status()
    cdef int rtag = _refusal_tag(st.call_number)
    cdef double start = _monotonic(), now, check = start + 0.1
    replied = []
    st.refusal_wait = _NO_SOURCES
    try:
        while srcs:
            for q in list(srcs):
                # a Scatter's or a Gather's blocks: any tag (their type's: _root_message, _gather_tag)
                m = st.private_comm.Improbe(q, MPI.ANY_TAG if tag == TAG_SCATTER or tag == TAG_GATHER else tag,
                                     status) if tag >= 0 else None
                if m is not None:
                    got = status.Get_tag()
                    n = status.Get_count(_BYTE)
                    buf = st.scratch(2, max(n, 8))
                    m.Recv([buf, n, _BYTE])
                    if got >= TAG_REFUSAL and _refusal_seq(buf) != st.call_number:
                        continue    # a refusal of an earlier call: dropped
                    if got == TAG_SCATTERV_COUNTS:
                        continue    # a Scatterv's counts: its blocks follow
                    if got == TAG_PATH:
                        _path_alert(st, q, what)
                    if got == TAG_ABORT:
                        _abort_alert(st, q, bytes(buf[:n]), what)
                    srcs.remove(q)
                    continue
                m = st.private_comm.Improbe(q, rtag, status)
                if m is None:
                    continue
                number, why = _refusal_of(m, status)
                if number == st.call_number:
                    srcs.remove(q)
                    if not why or why[:1] == _AWAITS:
                        replied.append((q, why))
            now = _monotonic()
            if srcs and now >= check:
                _mpi_check(st, start, now, what)
                check = now + 0.1
            os.sched_yield()
    finally:
        st.refusal_wait = None
    return replied


cdef int _leaders_wait(_State st, list reqs, list srcs, str what, tuple typed) except -1:
    """The root of a hierarchical Gather(v) waits for the other leaders'
    messages (reqs, from srcs): a leader that refused its arguments sends
    its refusal of this call instead (_refuse_leg), which the wait's checks
    take (_collect_refusals) and whose receive they cancel; the others
    complete. Nothing is left in flight, so the root raises
    PeerRefusedError naming the leader and its reason, and the
    communicator stays usable. typed: (the receives' buffers, the root's
    basic type, whether each receive is posted), for the blocks of another
    type (_collect_types) and of another length (_check_lengths)."""
    st.refusal_wait = (reqs, srcs, typed, what)
    st.refusals = []
    statuses = []
    try:
        while True:
            try:
                _bounded_wait(st, reqs, statuses, _PROBED if _TRUNCATION_UNSAFE else -1, what)
                break
            except MPI.Exception as exc:
                if not _took_truncated(st, reqs, statuses, srcs, typed, what, exc):
                    raise
    finally:
        st.refusal_wait = None
    if st.refusals:
        q, why = st.refusals[0]
        raise PeerRefusedError("%s: rank %d refused its arguments: %s" % (what, q, why.decode(errors="replace")))
    _check_lengths(st, statuses, srcs, typed, what)
    return 0


cdef int _collect_refusals(_State st) except -1:
    reqs, srcs, typed, what = st.refusal_wait
    status = MPI.Status()
    cdef int rtag = _refusal_tag(st.call_number)
    for i, q in enumerate(srcs):
        m = st.private_comm.Improbe(q, rtag, status)
        if m is None:
            continue
        number, why = _refusal_of(m, status)
        if number == st.call_number:
            if reqs[i] != MPI.REQUEST_NULL:
                reqs[i].Cancel()    # q sends nothing else in this call
            if typed is not None:
                typed[2][i] = True  # nor will be (_post_probed)
            st.refusals.append((q, why))
    if typed is not None:       # a Gather(v)'s root (_leaders_wait)
        _collect_types(st, reqs, srcs, typed, what)
    return 0


cdef int _root_message(_State st, object status, object buf, Py_ssize_t nbytes, int root, str what,
                       int dtype, bint counts) except 0:
    """A leader received a message of a hierarchical Scatter(v) from the
    root (any tag, status): the node's counts (`counts`: a Scatterv's first
    message, TAG_SCATTERV_COUNTS, nbytes of them: 1) or blocks
    (TAG_SCATTER + 1 + the root's basic type, their size the caller's to
    check: 1, or 2 for a type other than this leader's `dtype`, held as a DatatypeMismatchError,
    raised once the call completed), or the root's refusal of this call (the
    leader refuses the node's leg with the root's reason, so its members end
    the call as the root's own node does), or one of an earlier call (-1:
    dropped, receive again), or an alert of the root's node (TAG_PATH,
    TAG_ABORT). The root calling the other form (Scatter against Scatterv)
    is a CollectiveMismatchError."""
    cdef int tag = status.Get_tag()
    cdef Py_ssize_t got = status.Get_count(_BYTE)
    if tag >= TAG_REFUSAL:
        if _refusal_seq(buf) != st.call_number:
            return -1
        why = bytes(buf[8:got])
        st.core.c_refuse(PGC_COLL_SCATTERV, why)
        raise RootRefusedError("%s: the root (rank %d) refused its arguments: %s"
                               % (what, root, why.decode(errors="replace")))
    if tag == TAG_SCATTERV_COUNTS or tag >= TAG_SCATTER:
        if (tag == TAG_SCATTERV_COUNTS) != counts:
            if tag == TAG_SCATTERV_COUNTS:
                _drain(st, [root], TAG_SCATTER, what)      # its blocks follow: taken in
            raise CollectiveMismatchError("%s: the root (rank %d) calls %s where this node calls %s"
                                          % (what, root, "Scatterv" if tag == TAG_SCATTERV_COUNTS else "Scatter",
                                             "Scatter" if tag == TAG_SCATTERV_COUNTS else "Scatterv"))
        if counts and got != nbytes:
            raise ArgumentError("%s: the root (rank %d) sends the counts of %d ranks to this node of %d"
                                % (what, root, got // 8, nbytes // 8))
        return 1 if counts else 1 + _hold_root_type(st, what, root, tag - TAG_SCATTER - 1, dtype)
    why = bytes(buf[:got])
    if tag == TAG_PATH:
        _path_alert(st, root, what)
    _abort_alert(st, root, why, what)
    return 0


cdef int _hold_root_type(_State st, str what, int root, int theirs, int mine) except -1:
    """This leader learnt the root's basic type `theirs` between nodes (a
    Scatter(v)'s tag, _root_message; a small Bcast's last byte,
    _leaders_bcast) where it passes `mine`: if they differ (1), a
    DatatypeMismatchError held until the call completed (_raise_held)."""
    if theirs == mine:
        return 0
    _hold_type_mismatch(st, what, "the root (rank %d) sends its elements as %s where this rank (rank %d, its "
                        "node's leader) receives %s" % (root, _basic_name(theirs), st.rank, _basic_name(mine)))
    return 1


cdef int _hold_type_mismatch(_State st, str what, str why) except -1:
    """Hold a DatatypeMismatchError of a hierarchical call (why: who
    passes which type), raised once the call completed (_raise_held)."""
    st.core.hold(DatatypeMismatchError(
        "%s (hierarchical): %s: the type signatures differ (MPI calls the program erroneous, even at the "
        "same byte count); every rank must pass the basic type of the root" % (what, why)))
    return 0
