# Per-communicator state (_State) and the bookkeeping every collective
# shares: the call's path and count, the tuner's hint, the stats. The
# failure protocol between nodes is in failure.pxi and refusal.pxi, the
# bounded MPI wait in mpi_wait.pxi.

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

# Pipeline segment of the inter-node legs: 1 MiB measured faster than
# 256 KiB-16 MiB for a 16 MiB Allreduce on 2 virtual nodes
# (docs/PERFORMANCE.md, "Hierarchical Allreduce in 1 MiB segments").
cdef Py_ssize_t _HIER_SEGMENT_BYTES = 1 << 20

# Hierarchical Allreduce of vectors up to this many bytes: node reduce, one
# leaders' allreduce per node, node broadcast, instead of the partitioned
# pipeline (node reduce-scatter, every local rank's own allreduce, node
# allgather) that spreads large vectors over all local ranks and is ahead
# from 256 KiB (docs/PERFORMANCE.md, "Small hierarchical Allreduce is rooted
# up to 64 KiB").
cdef Py_ssize_t _HIER_ROOTED_MAX = 64 << 10


def _u8(obj):
    """A writable-if-possible flat uint8 numpy view of a contiguous buffer."""
    try:
        return _np().frombuffer(obj, dtype="uint8")
    except (ValueError, TypeError, BufferError):
        return _np().asarray(obj).reshape(-1, order="A").view("uint8")


cdef class _State:
    """pgascol's side of one communicator."""
    cdef public object team
    cdef public object internode_comm   # this local rank's ranks of every node (Split by local rank; rank: node index)
    cdef public object private_comm     # a Dup: the hierarchy's point-to-point legs and the failure messages (failure.pxi)
    cdef public object node_comm        # this node's ranks (the node team's)
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
    cdef dict frame_areas       # their send and receive areas (msgpickle.pxi, _Areas), by key
    cdef list alerts            # sends of _abort_across and _check_alerts, completed at free
    cdef bint in_path_agreement # in _to_mpi_across: its TAG_PATH messages are its own
    cdef bint told_other_nodes  # _abort_across told the other nodes
    cdef bint alerts_exchanged  # TAG_PATH or TAG_ABORT messages were exchanged in a failure
    # The number of this rank's hierarchical call (_engine), the same on
    # every rank, refused calls included: a refusal sent between nodes
    # names it (_send_refusal).
    cdef public long long call_number
    cdef public int coll, root  # the collective of call `call_number` and its root argument (_engine)
    cdef Py_ssize_t bcast_bytes # a hierarchical Bcast's bytes (_hier_bcast), told a joiner (_await_join)
    cdef object refusal_wait    # (requests, sources, typed, what) whose refusals a wait takes (_leaders_wait), or None
    cdef list refusals          # (rank, reason) of the refusals _leaders_wait found
    cdef list awaited_joins     # (rank, reason) of refusers whose join this rank's leg waits for (_await_join)
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
        # MPI holds a CPU the peer it waits for may need, so yield at once
        # (docs/PERFORMANCE.md, "Inter-node waits poll, yield for 50 ms, then
        # sleep").
        self.mpi_spin = 256 if cfg["spin_ns"] else 0
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.lrank, self.lsize = t.local_rank, t.local_size
        self.nidx, self.nnodes = t.node_index, t.num_nodes
        self.node_comm = t.node_comm
        self.hier = self.nnodes > 1
        # a member's refusal in a node leg gives the node team's call up: its
        # members wait for each other in the call's further legs
        self.core.refusals_abort = self.hier
        self.scratch_bufs = [None, None, None]
        self.locks = {}
        self.frame_areas = {}
        self.alerts = []
        self.internode_comm = self.private_comm = None
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
            self.internode_comm = comm.Split(self.lrank, self.nidx)
            self.private_comm = comm.Dup()
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
            buf = _np().empty(max(nbytes, 4096), "uint8")
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
        if self.private_comm is not None and _drain_alerts(self):     # leaders', roots' (_abort_across)
            self.alerts_exchanged = True
        if self.alerts_exchanged or (self.hier and _given_up(self)):
            # Alerts may still be on their way to this communicator, and
            # requests of a leg the node gave up may still be pending on
            # the inter-node one; MPI may give a freed communicator's
            # context to the next one (Open MPI does), where they would
            # meet its calls: both are kept until the end of the job,
            # never reused, instead of freed.
            _KEPT.extend((self.private_comm, self.internode_comm))
            self.private_comm = self.internode_comm = None
        if self.pgas is not None:   # global arrays and locks still allocated: freed with the communicator
            self.pgas.free_all()
            self.pgas = None
        for c in (self.internode_comm, self.private_comm):
            if c is not None and c != MPI.COMM_NULL:
                c.Free()
        self.internode_comm = self.private_comm = None
        if self.team is not None:
            self.team.free()
        self.team = self.core = None


cdef str _basic_name(int dtype):
    """A basic type code's name, as the engine's messages give it."""
    return "bytes of no stated type" if dtype < 0 else _DTYPE_NAMES[dtype]


_DTYPE_NAMES = {code: name for name, code in _core.DTYPES.items()}


# Where a Comm keeps its _pg slot (0: unknown, use getattr): the slot comes
# right after mpi4py's object, so every collective reads it with one load
# instead of a generic attribute lookup (docs/PERFORMANCE.md, "Small calls
# reach the engine at C level"). Set once Comm exists (_locate_slot),
# checked against Comm's size.
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
        raise ArgumentError("root %d out of range for a communicator of %d ranks" % (root, st.size),
                            error_class=MPI.ERR_ROOT)    # (mpi4py's error for it)
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


cdef enum:
    # What a collective's body returns besides 0 (MPI must run it: not
    # accelerated) and 1 (done): the tuner gave it to MPI and every rank of
    # the node agreed (pgc_coll_agree_mpi); _engine runs MPI's collective.
    _ON_MPI = 2


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
