# Per-communicator state (_State), the bounded waits of the inter-node legs
# (_mpi_wait), and the bookkeeping every collective shares: which path ran, refusals, stats.

# ----------------------------------------------------------------- state

# Operations counted by the communicator layer (index -> name).
# The collectives the communicator counts: the engine's (pgc_coll, whose
# names are _core.COLLECTIVES), then the pickle-based methods.
cdef enum:
    COLL_OBJ_BCAST = PGC_NCOLL
    COLL_OBJ_REDUCE
    COLL_OBJ_ALLREDUCE
    COLL_OBJ_GATHER
    COLL_OBJ_SCATTER
    COLL_OBJ_ALLGATHER
    COLL_OBJ_ALLTOALL
    COLL_OBJ_BARRIER
    NCOLL_COUNTED
_COLL_NAMES = _core.COLLECTIVES + ("bcast", "reduce", "allreduce", "gather", "scatter", "allgather",
                                   "alltoall", "barrier")
_PATHNAMES = ("engine", "hier", "mpi", "shm")
cdef enum:
    P_ENGINE, P_HIER, P_MPI, P_SHM
    NPATHS_

# Tags of the private point-to-point communicator of the hierarchy.
cdef enum:
    TAG_GATHER = 64     # + 32 x the call's slot + the blocks' type (64-1023): a Gather(v)'s blocks
                        # from a node's leader to the root (_gather_tag)
    TAG_SCATTER = 32    # + 1 + the root's basic type (PGC_SIG_ROOTED's 5 bits: 32-63): a Scatter(v)'s
                        # blocks for a node, whose tag tells their type (_root_message)
    TAG_REDUCE = 13
    TAG_PATH = 14       # between leaders: "my node takes this call to MPI" (1) or "mine does not" (0)
    TAG_ABORT = 15      # a leader to the others: its node team gave up, and why (_abort_across)
    # A refusal of call `seq` (_send_refusal): TAG_REFUSAL + seq % _SEQ_TAGS, so that
    # a wait of a later call never matches one left over from an earlier call
    TAG_REFUSAL = 1024
cdef long long _SEQ_TAGS = 16384    # tags up to 17407: MPI guarantees 32767

# The reason of a TAG_ABORT alert that revokes (_revoke, _abort_alert).
cdef str _REVOKED = "revoked: "

# The longest reason a refusal carries (the C core's PGC_REFUSAL_MAX).
cdef Py_ssize_t _REFUSAL_MAX = 256

# Pipeline segment of the inter-node legs: 1 MiB measured faster than
# 256 KiB-16 MiB for a 16 MiB Allreduce on 2 virtual nodes
# (docs/PERFORMANCE.md, "Hierarchical Allreduce in 1 MiB segments").
cdef Py_ssize_t _SEGMENT = 1 << 20

# Hierarchical Allreduce of vectors up to this many bytes: node reduce, one
# leaders' allreduce per node, node broadcast, instead of the partitioned
# pipeline (node reduce-scatter, every local rank's own allreduce, node
# allgather) that spreads large vectors over all local ranks. 2 virtual
# nodes of 2 (pgascol-bench, one job each way): 16 KiB 116 against 361 us,
# 64 KiB 135 against 455 us; 256 KiB-1 MiB the partitioned one ahead
# (`pgascol-bench run --np 4 --virtual-node-size 2 --ops allreduce`;
# docs/PERFORMANCE.md, "Small hierarchical Allreduce is rooted up to 64 KiB").
cdef Py_ssize_t _HIER_ROOTED_MAX = 64 << 10


def _u8(obj):
    """A writable-if-possible flat uint8 numpy view of a contiguous buffer."""
    try:
        return np.frombuffer(obj, dtype=np.uint8)
    except (ValueError, TypeError, BufferError):
        return np.asarray(obj).reshape(-1, order="A").view(np.uint8)


cdef class _State:
    """pgascol's side of one communicator."""
    cdef public object team, xcomm, pcomm, ncomm
    cdef public Team core       # typed: the hot collectives are C-level calls (Team.c_*)
    cdef public double timeout
    cdef public Py_ssize_t cold_min  # a hierarchical Allreduce of this many bytes outgrows the cache
    cdef public int rank, size, lrank, lsize, nnodes, nidx
    cdef public int mpi_spin    # polls of an inter-node leg before it yields (_mpi_wait)
    cdef public bint hier, equal, debug
    # Every node holds consecutive ranks and the nodes follow one another in
    # rank order: hierarchical Scan/Exscan need it; Allgather, Gather and
    # Scatter then find each node's blocks together in the user's buffer.
    cdef public bint in_rank_order
    cdef public list node_of, local_of, members
    cdef public object pgas     # the PGAS layer's context (pgascol/pgas/context.py), made on first use
    cdef public object tuner    # the path table (_Tuner, tune.pxi)
    cdef list scratch_bufs      # pre-faulted work areas of the hierarchical legs
    cdef dict locks             # mpi4py's locks of the pickle-based methods (msgpickle.pxi), by key
    cdef list alerts            # sends of _abort_across and _check_alerts, completed at free
    cdef bint agreeing          # in _to_mpi_across: its TAG_PATH messages are its own
    cdef bint told              # _abort_across told the other nodes
    cdef bint alerted           # TAG_PATH or TAG_ABORT messages were exchanged in a failure
    # The number of this rank's hierarchical call (_engine), the same on
    # every rank, refused calls included: a refusal sent between nodes
    # names it (_send_refusal).
    cdef public long long seq
    cdef public int coll, root  # the collective of call `seq` and its root argument (_engine)
    cdef object collecting      # (requests, sources, typed, what) whose refusals a wait takes (_leaders_wait), or None
    cdef list refusals          # (rank, reason) of the refusals _leaders_wait found
    cdef list awaited           # (rank, reason) of refusers whose join this rank's leg waits for (_await_join)
    cdef long long counters[<int>NCOLL_COUNTED][<int>NPATHS_]

    def __init__(self, comm, env=os.environ):
        self.debug = env.get("PGASCOL_DEBUG", "0") not in ("", "0")
        self.team = NodeTeam(comm, env)
        t = self.team
        self.core = t.core
        cfg = t.core.config
        self.timeout = cfg["timeout_s"]
        # The node's share of the cache per member (PGASCOL_RECV_STREAM_MIN;
        # 0: never), the block size from which the engine streams receives.
        self.cold_min = cfg["recv_stream_min"]
        # Ranks outnumber CPUs (the engine then never spins either): polling
        # MPI holds a CPU the peer it waits for may need, so yield at once.
        # 2 virtual nodes of 2, small Allreduce/Allgather/Scan, three
        # alternating jobs each: 8 B Allreduce 1.06-1.16 of MPICH, against
        # 1.18-5.03 after 256 polls (`pgascol-bench run --np 4 --virtual-node-size 2`).
        self.mpi_spin = 256 if cfg["spin_ns"] else 0
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.lrank, self.lsize = t.local_rank, t.local_size
        self.nidx, self.nnodes = t.node_index, t.num_nodes
        self.ncomm = t.node_comm
        self.hier = self.nnodes > 1
        # a member's refusal in a node leg gives the node team's call up: its
        # members wait for each other in the call's further legs
        self.core.refusals_abort = self.hier
        self.scratch_bufs = [None, None, None]
        self.locks = {}
        self.alerts = []
        self.xcomm = self.pcomm = None
        if self.hier:
            placement = comm.allgather((self.nidx, self.lrank))
            self.node_of = [p[0] for p in placement]
            self.local_of = [p[1] for p in placement]
            self.members = [[] for _ in range(self.nnodes)]
            for r, (n, l) in enumerate(placement):
                self.members[n].append(r)
            for n in range(self.nnodes):
                self.members[n].sort(key=lambda r: self.local_of[r])
            sizes = set(len(m) for m in self.members)
            self.equal = len(sizes) == 1
            self.in_rank_order = [q for m in self.members for q in m] == list(range(self.size))
            # Per-local-rank inter-node communicator; its rank is the node index.
            self.xcomm = comm.Split(self.lrank, self.nidx)
            self.pcomm = comm.Dup()
        self.tuner = _Tuner(self, env)
        self.log("ready: rank %d of %d, node %d of %d, local rank %d of %d%s" % (
            self.rank, self.size, self.nidx, self.nnodes, self.lrank, self.lsize,
            " (hierarchical)" if self.hier else ""))

    def log(self, msg):
        if self.debug:
            sys.stderr.write("[pgascol %d] %s\n" % (self.rank, msg))
            sys.stderr.flush()

    cdef inline void count(self, int coll, int path):
        self.counters[coll][path] += 1
        if self.debug:
            self.log("%s -> %s" % (_COLL_NAMES[coll], _PATHNAMES[path]))

    cdef object scratch(self, int which, Py_ssize_t nbytes):
        """Work area `which` (0, 1 or 2) of at least nbytes, kept between calls:
        a fresh np.empty of megabytes costs a page fault per 4 KiB on every
        call."""
        buf = self.scratch_bufs[which]
        if buf is None or buf.size < nbytes:
            buf = np.empty(max(nbytes, 4096), np.uint8)
            buf.fill(0)
            self.scratch_bufs[which] = buf
        return buf[:nbytes]

    def counts(self):
        out = {}
        for o in range(NCOLL_COUNTED):
            for p in range(NPATHS_):
                if self.counters[o][p]:
                    out.setdefault(_COLL_NAMES[o], {})[_PATHNAMES[p]] = self.counters[o][p]
        return out

    def free(self):
        if self.alerts:     # eager sends: complete, or left to MPI (their peers gave up)
            _Testall(self.alerts)
            self.alerts = []
        if self.pcomm is not None and _drain_alerts(self):     # leaders', roots' (_abort_across)
            self.alerted = True
        if self.alerted or (self.hier and _given_up(self)):
            # Alerts may still be on their way to this communicator, and
            # requests of a leg the node gave up may still be pending on
            # the inter-node one; MPI may give a freed communicator's
            # context to the next one (Open MPI does), where they would
            # meet its calls: both are kept until the end of the job,
            # never reused, instead of freed.
            _KEPT.extend((self.pcomm, self.xcomm))
            self.pcomm = self.xcomm = None
        if self.pgas is not None:   # global arrays and locks still allocated: freed with the communicator
            self.pgas.free_all()
            self.pgas = None
        for c in (self.xcomm, self.pcomm):
            if c is not None and c != MPI.COMM_NULL:
                c.Free()
        self.xcomm = self.pcomm = None
        if self.team is not None:
            self.team.free()
        self.team = self.core = None


cdef object _Testall = MPI.Request.Testall


# How long _mpi_wait polls with sched_yield before it sleeps between polls.
# A pipelined leg on an oversubscribed node often waits a few ms for a peer
# that shares its CPU; a sleeping poller answers MPI's next step up to
# ~150 us late each time: 16 MiB Allreduce on 2 virtual nodes of 2 (4 ranks
# on 2 cores) took 1.08-1.38x native sleeping after 1 ms, 0.81-1.05x after
# 50 ms (alternating jobs of bench/hier_allreduce_phases.py; docs/PERFORMANCE.md,
# "Inter-node waits poll, yield for 50 ms, then sleep").
cdef double _MPI_YIELD_S = 0.05


cdef int _mpi_wait(_State st, object reqs, str what, object statuses=None) except -1:
    """Complete the requests of an inter-node leg, bounded as the engine's
    waits are: PGASCOL_TIMEOUT, and the node team's health (a local member
    that gave up or died ends the wait too). Otherwise a rank whose peers on
    other nodes failed before their MPI call would block forever. Testall
    drives MPI's progress; after a short spin (none when ranks outnumber
    CPUs: st.mpi_spin) it yields (an oversubscribed node keeps its CPUs for
    the ranks that do the work), and sleeps 100 us
    between polls only once the wait has lasted _MPI_YIELD_S. On
    timeout the node team is aborted: the pending MPI operation can never be
    matched reliably, so the communicator is not used again. statuses: a
    list of MPI.Status, one per request, filled on completion."""
    if _Testall(reqs, statuses):
        return 0
    cdef double start = _monotonic(), now, check = start + 0.1
    cdef int polls = 0
    st.awaited = None
    while not _Testall(reqs, statuses):
        polls += 1
        if polls < st.mpi_spin:
            continue
        now = _monotonic()
        if now >= check:
            _mpi_check(st, start, now, what)
            check = now + 0.1
        if now - start < _MPI_YIELD_S:
            os.sched_yield()
        else:
            _sleep(100e-6)
    if st.awaited:      # the leg completed with a refuser's scratch data
        q, why = st.awaited[0]
        st.awaited = None
        if st.coll == PGC_COLL_BCAST:   # the root's node's (_needs_node): the root refused
            raise RootRefusedError("%s: the root (rank %d) refused its arguments: %s"
                                   % (what, st.root, why.decode(errors="replace")))
        raise PeerRefusedError("%s: rank %d refused its arguments: %s" % (what, q, why.decode(errors="replace")))
    return 0


cdef int _mpi_check(_State st, double start, double now, str what) except -1:
    """A bounded inter-node wait's check, every 100 ms: another node's
    alert, the node team's health, and PGASCOL_TIMEOUT (which aborts the
    node team)."""
    _check_alerts(st, what)     # a leader's, or a Gather(v)/Scatter(v) root's (_abort_across)
    st.core.check_alive()
    if now - start > st.timeout:
        msg = ("%s: the inter-node MPI phase did not complete within PGASCOL_TIMEOUT=%gs "
               "(a rank on another node failed or is not calling %s)" % (what, st.timeout, what))
        st.core.abort(msg)
        raise PgascolTimeoutError(msg)
    return 0


cdef object _ONE = np.ones(1, np.int8), _NO = np.zeros(1, np.int8)


cdef int _check_alerts(_State st, str what) except -1:
    """A leader waiting in an inter-node leg: has another node's leader
    taken this call to MPI (TAG_PATH, _to_mpi_across: answer that this
    node did not, so that it does not enter MPI), given up (TAG_ABORT) or
    refused its arguments to this call (_send_refusal; a refusal of an
    earlier call has another tag and stays unread)? Each makes this node
    give up too, at once instead of at the timeout; a wait that takes the
    refusals of its sources itself (_leaders_wait, _drain) leaves them."""
    status = MPI.Status()
    if st.collecting is not None:
        _collect_refusals(st)
    else:
        m = st.pcomm.Improbe(MPI.ANY_SOURCE, _refusal_tag(st.seq), status)
        if m is not None:
            seq, why = _refusal_of(m, status)
            # a refuser whose data this rank does not need joins the leg
            # anyway (or tells it gave up: TAG_ABORT): wait for it
            if seq == st.seq and (st.agreeing or _needs_node(st, st.coll, st.root, st.node_of[status.Get_source()],
                                                             st.nidx)):
                if not st.agreeing and _awaits_join(st, st.coll):
                    _await_join(st, status.Get_source(), why)
                else:
                    _refusal_alert(st, status.Get_source(), why, what)
    m = None if st.agreeing else st.pcomm.Improbe(MPI.ANY_SOURCE, TAG_PATH, status)
    if m is not None:
        m.Recv([np.zeros(1, np.int8), 1, _BYTE])
        _path_alert(st, status.Get_source(), what)
    m = st.pcomm.Improbe(MPI.ANY_SOURCE, TAG_ABORT, status)
    if m is not None:
        why = bytearray(status.Get_count(_BYTE))
        m.Recv([why, len(why), _BYTE])
        _abort_alert(st, status.Get_source(), bytes(why), what)
    return 0


cdef int _path_alert(_State st, int src, str what) except -1:
    """Rank src's node takes this call to MPI (its TAG_PATH received):
    answer 0 (this node does not), give up the node team and raise."""
    st.alerted = True
    st.alerts.append(st.pcomm.Isend([_NO, 1, _BYTE], dest=src, tag=TAG_PATH))
    msg = ("%s: rank %d takes it to MPI (arguments pgascol does not accelerate, such as a user-defined "
           "operator or a datatype it does not pack) while this rank is in the hierarchical %s; every "
           "rank must pass arguments of the same kind" % (what, src, what))
    st.core.abort(msg)
    raise CollectiveMismatchError(msg)


cdef int _abort_alert(_State st, int src, bytes why, str what) except -1:
    """Rank src's node gave up (its TAG_ABORT received): so does this one,
    revoking its node team if src's revoked the communicator (_revoke)."""
    st.alerted = True
    reason = why.decode(errors="replace")
    if reason.startswith(_REVOKED):
        msg = "%s: the communicator was revoked (told by the node of rank %d: %s)" % (
            what, src, reason[len(_REVOKED):])
        st.core.revoke(msg)
        raise in_mpi(RevokedError)(msg)
    msg = "%s: the node of rank %d gave up: %s" % (what, src, why.decode(errors="replace"))
    st.core.abort(msg)
    raise TeamAbortedError(msg)


cdef int _refusal_alert(_State st, int src, bytes why, str what) except -1:
    """Rank src, a leader, refused its arguments to this call (its
    _send_refusal received) while this rank waits in an inter-node MPI
    collective it never joined: the request can never complete, so the
    node team gives the call up and this rank raises PeerRefusedError."""
    st.alerted = True
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
    st.alerted = True
    _send_refusal(st, src, _AWAITS)
    if st.awaited is None:
        st.awaited = []
    st.awaited.append((src, why))
    return 0


cdef int _to_mpi_across(_State st, int coll) except -1:
    """Every rank of this node takes `coll` to MPI (Team.c_to_mpi found it so):
    so must every other node, or a rank would wait in MPI for ranks that
    never come. The leader tells the other leaders (TAG_PATH 1) and waits
    for theirs: 1 from a node that goes to MPI too, 0 from one that is in
    the hierarchical collective (_check_alerts); the node learns the
    verdict by a node broadcast. A disagreement aborts the node team."""
    verdict = np.ones(1, np.int8)
    what = _COLL_NAMES[coll]
    cdef int bad = -1
    if st.lrank == 0:
        leaders = [st.members[n][0] for n in range(st.nnodes) if n != st.nidx]
        got = np.zeros(len(leaders), np.int8)
        reqs = [st.pcomm.Isend([_ONE, 1, _BYTE], dest=q, tag=TAG_PATH) for q in leaders]
        reqs += [st.pcomm.Irecv([got[i:i + 1], 1, _BYTE], source=q, tag=TAG_PATH) for i, q in enumerate(leaders)]
        st.agreeing = True
        try:
            _mpi_wait(st, reqs, what)
        finally:
            st.agreeing = False
        if not got.all():
            bad = leaders[int(np.argmin(got))]
            verdict[0] = 0
            st.alerted = True
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
        m = st.pcomm.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
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
    if not st.hier or st.told or (st.lrank != 0 and st.rank != root):   # once: the communicator is not used again
        return 0
    st.told = st.alerted = True
    why = str(exc).encode(errors="replace")[:255]
    dests = [st.members[n][0] for n in range(st.nnodes) if n != st.nidx]
    if root >= 0 and st.node_of[root] != st.nidx and st.local_of[root] != 0:
        dests.append(root)
    for q in dests:
        st.alerts.append(st.pcomm.Isend([why, len(why), _BYTE], dest=q, tag=TAG_ABORT))
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


cdef str _basic_name(int dtype):
    """A basic type code's name, as the engine's messages give it."""
    return "bytes of no stated type" if dtype < 0 else _DTYPE_NAMES[dtype]


_DTYPE_NAMES = {code: name for name, code in _core.DTYPES.items()}


cdef int _in_hierarchy(object exc, int coll) except -1:
    """Re-raise an error of a hierarchical collective under the name of the
    collective the user called (the engine names its own step, e.g. the
    Reduce_scatter inside a hierarchical Allreduce)."""
    name = _COLL_NAMES[coll]
    msg = str(exc)
    if not msg.startswith(name):
        exc.args = ("%s (hierarchical): %s" % (name, msg),) + tuple(exc.args[1:])
    raise exc


# Where a Comm keeps its _pg slot (0: unknown, use getattr): the slot comes
# right after mpi4py's object, so every collective reads it with one load
# instead of a generic attribute lookup (~130 instructions). Set once Comm
# exists (_locate_slot), checked against Comm's size.
cdef Py_ssize_t _PG_OFFSET = 0
cdef PyTypeObject *_COMM_TYPE = NULL


cdef inline _State _st(object comm):
    cdef PyObject *raw
    if Py_TYPE(comm) == _COMM_TYPE:
        raw = (<PyObject **>(<char *><PyObject *>comm + _PG_OFFSET))[0]
        st = <object>raw if raw != NULL else None   # NULL: made by MPI without __init__
    else:
        st = getattr(comm, "_pg", None)
    if st is None:
        return None
    if (<_State>st).core is None:
        return None
    return <_State>st


def state_of(comm):
    """pgascol's state of communicator `comm` (a _State: its node team `core`,
    `hier`, `nnodes`, the PGAS layer's context `pgas`, ...), for the layers
    above this one (pgascol.pgas, the tools); None for a communicator that
    is not a pgascol.Comm, or is freed."""
    return _st(comm)


cdef int _check_root(_State st, int root) except -1:
    if root < 0 or root >= st.size:
        raise ArgumentError("root %d out of range for a communicator of %d ranks" % (root, st.size))
    return 0


cdef int _done(_State st, int coll, int path, _Msg a, _Msg b) except -1:
    """The end of a data-movement collective that succeeded: a packed
    receive message is unpacked into the user's buffer; the call counted."""
    if (a is not None and a.packed) or (b is not None and b.packed):
        _unpack(a)
        _unpack(b)
        if st.debug:
            st.log("%s: derived datatype or MPI.BOTTOM as packed bytes" % _COLL_NAMES[coll])
    st.count(coll, path)
    return 0


cdef inline int _tune(_State st, int coll, Py_ssize_t nbytes) except -1:
    """The tuner's path for this call (tune.pxi), set in the team's hint for
    the engine. It depends on nothing but the call's bytes, which every
    rank of a correct call knows alike (a packed message's too: its type
    signature's size), never on how a rank gave its buffers."""
    (<_Tuner>st.tuner).choose(coll, nbytes)
    return 0


cdef int _fallback(object st, int coll) except -1:
    """The call goes to MPI: count it."""
    if st is not None:
        (<_State>st).count(coll, P_MPI)
    return 0


cdef int _refused(_State st, object comm, int coll, object exc, int root, object sendbuf,
                  object recvbuf, object op) except -1:
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
    comm: the communicator called; sendbuf, recvbuf, op: the call's
    arguments (Bcast's buffer: sendbuf)."""
    if st.core is None:
        return 0
    if coll == PGC_COLL_REDUCE and st.rank == root and _reduce_on_scratch(st, comm, sendbuf, recvbuf, op, root):
        return 0
    reason = ("%s: %s" % (type(exc).__name__, exc)).encode(errors="replace")[:_REFUSAL_MAX - 1]
    if st.hier and _root_refusal_ends_call(coll) and 0 <= root < st.size:
        _refuse_leg(st, coll, reason, root)
        return 0
    st.core.c_refuse(coll, reason)
    if st.hier:
        # every rank may have refused alike and left: the refusal names
        # this call, so a leader's later calls never read it (another tag,
        # _check_alerts); the other nodes may still wait for this rank in
        # MPI after it freed the communicator: kept (free)
        st.alerted = True
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
            if st.core.c_refused_alike() and _leaders_meet(coll):
                _refused_alike_across(st, coll)
    return 0


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
    call given up, or members of its node in the call (c_refused_alike,
    unless node_out): it gives the call up (_give_up_across). Arguments
    that do not tell the leg (leg None: a root out of range, no buffer,
    counts that differ) tell nobody's needs either: it waits for every leg
    rank's answer and does not join, which ends at once where every rank
    refused alike (nobody is in the leg) or where they need it, else at
    the wait's timeout."""
    if st.rank != _leg_rank(st, coll, st.nidx):
        # this node's leg rank settles the leg; a member of its node in the
        # call may wait for this rank in a later node leg (a Scan's node
        # broadcast of the total): the node team gives the call up then
        st.core.c_refused_alike()
        return 0
    what = _COLL_NAMES[coll]
    ranks = [_leg_rank(st, coll, n) for n in range(st.nnodes) if n != st.nidx]
    for q in ranks:
        _send_refusal(st, q, reason)
    if not node_out and not st.core.c_refused_alike():
        return _give_up_across(st, ranks, "%s: this rank refused its arguments while a rank of its node is in "
                               "the call: the call is given up" % what)
    if leg is None:     # who needs it is unknown too: every leg rank answers, or the wait times out
        needed = list(ranks)     # (_drain empties it)
    else:
        needed = [q for q in ranks if leg[0] and _needs_node(st, coll, root, st.nidx, st.node_of[q])]
    try:
        replied = _drain(st, needed, -1, what)
        gave_up = [q for q, why in replied if why != _AWAITS or leg is None]
        if gave_up:
            return _give_up_across(st, ranks, "%s: this rank refused its arguments while rank %d, which needs its "
                                   "data, is in the call: the call is given up" % (what, gave_up[0]))
        if leg is not None:
            _join_leg(st, coll, root, leg)
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
    st.collecting = _NO_SOURCES
    try:
        if coll == PGC_COLL_BCAST:
            _bcast_leg_scratch(st, rn, count, 0)
        elif coll == PGC_COLL_REDUCE:
            acc = st.scratch(0, count * esize)
            if st.nidx == rn:
                req = st.xcomm.Ireduce(_IN_PLACE, [acc, count, mpitype], op, root=rn)
            else:
                req = st.xcomm.Ireduce([acc, count, mpitype], None, op, root=rn)
            _mpi_wait(st, [req], what)
        else:
            _mpi_wait(st, [st.xcomm.Iexscan([st.scratch(0, count * esize), count, mpitype],
                                            [st.scratch(1, count * esize), count, mpitype], op)], what)
    finally:
        st.collecting = None
    return 0


cdef int _give_up_across(_State st, list ranks, str msg) except -1:
    """A refuser that cannot leave the call's leg complete: its node team
    gives the call up (its next call raises TeamAbortedError instead of
    meeting the others' leg in MPI), and it tells the other nodes' leg
    ranks (TAG_ABORT), which give up at their next check: those that wait
    for it in this call, and any whose later call would."""
    st.core.abort(msg)
    if not st.told:
        st.told = True
        why = msg.encode(errors="replace")[:255]
        for q in ranks:
            st.alerts.append(st.pcomm.Isend([why, len(why), _BYTE], dest=q, tag=TAG_ABORT))
    return 0


cdef inline bint _root_refusal_ends_call(int coll):
    """The collectives in which only the root's refusal is not an abort
    (pgc_root_refusal_ends_call, csrc/team/team.h)."""
    return (coll == PGC_COLL_GATHER or coll == PGC_COLL_GATHERV or coll == PGC_COLL_SCATTER
            or coll == PGC_COLL_SCATTERV)


cdef list _other_leaders(_State st):
    return [st.members[n][0] for n in range(st.nnodes) if n != st.nidx]


cdef inline int _refusal_tag(long long seq):
    return TAG_REFUSAL + <int>(seq % _SEQ_TAGS)


cdef int _send_refusal(_State st, int dest, bytes reason) except -1:
    """Tell rank dest that this rank refused its arguments to call st.seq,
    and why: the call's number (8 bytes) and the reason, tagged by the
    number (_refusal_tag)."""
    msg = int(st.seq).to_bytes(8, "little", signed=True) + reason
    st.alerts.append(st.pcomm.Isend([msg, len(msg), _BYTE], dest=dest, tag=_refusal_tag(st.seq)))
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


# A node's leader names itself in the reason its node's members read.
cdef str _LEADER = "this node's leader, rank "


cdef int _refuse_leg(_State st, int coll, bytes reason, int root) except -1:
    """This rank refused its arguments to a hierarchical Gather(v) or
    Scatter(v). Its node learns it as from pgc_coll_refuse, once per node
    leg the call has on this node (another node's byte counts come first in
    a v form: _node_sizes), so every rank of the node stays in step whether
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
        if coll == PGC_COLL_GATHERV or coll == PGC_COLL_SCATTERV:
            st.core.c_refuse(PGC_COLL_GATHERV, reason)
        if st.lrank == 0:
            leg = ((_LEADER + "%d: " % st.rank).encode() + reason)[:_REFUSAL_MAX - 1]
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
    _AWAITS: in the call, waiting for the refuser's join)."""
    status = MPI.Status()
    cdef int rtag = _refusal_tag(st.seq)
    cdef double start = _monotonic(), now, check = start + 0.1
    replied = []
    st.collecting = _NO_SOURCES
    try:
        while srcs:
            for q in list(srcs):
                # a Scatter's or a Gather's blocks: any tag (their type's: _root_message, _gather_tag)
                m = st.pcomm.Improbe(q, MPI.ANY_TAG if tag == TAG_SCATTER or tag == TAG_GATHER else tag,
                                     status) if tag >= 0 else None
                if m is not None:
                    got = status.Get_tag()
                    n = status.Get_count(_BYTE)
                    buf = st.scratch(2, max(n, 8))
                    m.Recv([buf, n, _BYTE])
                    if got >= TAG_REFUSAL and _refusal_seq(buf) != st.seq:
                        continue    # a refusal of an earlier call: dropped
                    if got == TAG_PATH:
                        _path_alert(st, q, what)
                    if got == TAG_ABORT:
                        _abort_alert(st, q, bytes(buf[:n]), what)
                    srcs.remove(q)
                    continue
                m = st.pcomm.Improbe(q, rtag, status)
                if m is None:
                    continue
                seq, why = _refusal_of(m, status)
                if seq == st.seq:
                    srcs.remove(q)
                    if not why or why == _AWAITS:
                        replied.append((q, why))
            now = _monotonic()
            if srcs and now >= check:
                _mpi_check(st, start, now, what)
                check = now + 0.1
            os.sched_yield()
    finally:
        st.collecting = None
    return replied


cdef int _leaders_wait(_State st, list reqs, list srcs, str what, tuple typed) except -1:
    """The root of a hierarchical Gather(v) waits for the other leaders'
    messages (reqs, from srcs): a leader that refused its arguments sends
    its refusal of this call instead (_refuse_leg), which the wait's checks
    take (_collect_refusals) and whose receive they cancel; the others
    complete. Nothing is left in flight, so the root raises
    PeerRefusedError naming the leader and its reason, and the
    communicator stays usable. typed: (the receives' buffers, the root's
    basic type), for the blocks of another type (_collect_types)."""
    st.collecting = (reqs, srcs, typed, what)
    st.refusals = []
    try:
        _mpi_wait(st, reqs, what)
    finally:
        st.collecting = None
    if st.refusals:
        q, why = st.refusals[0]
        raise PeerRefusedError("%s: rank %d refused its arguments: %s" % (what, q, why.decode(errors="replace")))
    return 0


cdef int _collect_refusals(_State st) except -1:
    reqs, srcs, typed, what = st.collecting
    status = MPI.Status()
    cdef int rtag = _refusal_tag(st.seq)
    for i, q in enumerate(srcs):
        m = st.pcomm.Improbe(q, rtag, status)
        if m is None:
            continue
        seq, why = _refusal_of(m, status)
        if seq == st.seq:
            if reqs[i] != MPI.REQUEST_NULL:
                reqs[i].Cancel()    # q sends nothing else in this call
            st.refusals.append((q, why))
    if typed is not None:       # a Gather(v)'s root (_leaders_wait)
        _collect_types(st, reqs, srcs, typed, what)
    return 0


cdef int _root_message(_State st, object status, object buf, Py_ssize_t nbytes, int root, str what,
                       int dtype) except 0:
    """A leader received the message of a hierarchical Scatter(v) from the
    root (any tag, status): the node's blocks (TAG_SCATTER + 1 + the root's
    basic type, nbytes of them: 1, or 2 for a type other than this
    leader's `dtype`, held as a DatatypeMismatchError, raised once the call
    completed), or the root's refusal of this call (the leader refuses the
    node's leg with the root's reason, so its members end the call as the
    root's own node does), or one of an earlier call (-1: dropped, receive again), or an
    alert of the root's node (TAG_PATH, TAG_ABORT)."""
    cdef int tag = status.Get_tag()
    cdef Py_ssize_t got = status.Get_count(_BYTE)
    if tag >= TAG_REFUSAL:
        if _refusal_seq(buf) != st.seq:
            return -1
        why = bytes(buf[8:got])
        st.core.c_refuse(PGC_COLL_SCATTERV, why)
        raise RootRefusedError("%s: the root (rank %d) refused its arguments: %s"
                               % (what, root, why.decode(errors="replace")))
    if tag >= TAG_SCATTER:
        if got != nbytes:
            raise ArgumentError("%s: the root (rank %d) sends %d bytes to this node, whose ranks receive %d"
                                % (what, root, got, nbytes))
        return 1 + _hold_root_type(st, what, root, tag - TAG_SCATTER - 1, dtype)
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
    st.core.hold(in_mpi(DatatypeMismatchError)(
        "%s (hierarchical): %s: the type signatures differ (MPI calls the program erroneous, even at the "
        "same byte count); every rank must pass the basic type of the root" % (what, why)))
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
    if reason.startswith(_LEADER):
        leader, _, reason = reason[len(_LEADER):].partition(": ")
        exc.args = ("%s: this node's leader (rank %s) refused its arguments: %s"
                    % (_COLL_NAMES[coll], leader, reason),)
    else:
        exc.args = ("%s: the root (rank %d) refused its arguments: %s" % (_COLL_NAMES[coll], root, reason),)
    raise exc


def _stats(comm):
    st = getattr(comm, "_pg", None) if isinstance(comm, Comm) else None
    if st is None or st.core is None:
        return {}
    out = {}
    engine = st.core.stats()
    for coll, paths in engine.items():
        for p, n in paths.items():
            if n > 0:
                name = ("node:" + coll) if st.hier else coll
                out.setdefault(name, {})[p] = n
    for coll, paths in st.counts().items():
        for p, n in paths.items():
            if p == "engine":
                continue    # the engine's own counters say which method (inline/cico/cma)
            out.setdefault(coll, {})[p] = out.get(coll, {}).get(p, 0) + n
    return out
