# Team: one process's handle on a node team, and its collectives' entry
# points (C-level c_* methods for pgascol.Comm, Python methods for the
# rest).

cdef int _elementwise(pgc_team *t, int coll, const char *s, char *r, size_t count,
                      int dtype, int op) noexcept nogil:
    """coll: PGC_COLL_ALLREDUCE, PGC_COLL_SCAN or PGC_COLL_EXSCAN."""
    if coll == PGC_COLL_ALLREDUCE:
        return pgc_allreduce(t, s, r, count, <pgc_dtype>dtype, <pgc_op>op)
    if coll == PGC_COLL_SCAN:
        return pgc_scan(t, s, r, count, <pgc_dtype>dtype, <pgc_op>op)
    return pgc_exscan(t, s, r, count, <pgc_dtype>dtype, <pgc_op>op)


cdef class Team:
    """One process's handle on a node team (see csrc/team/team.h).

    Create with Team.create (the first member) / Team.attach (the others,
    with the creator's address, Team.name), then release() once everyone
    attached.
    Attributes and the C-level methods are declared in _core.pxd."""

    @staticmethod
    def create(int rank, int size, dict config):
        cdef pgc_config cfg
        cdef pgc_error err
        check_config(config)    # first: what is read below must be valid
        memset(&cfg, 0, sizeof(cfg))
        memset(&err, 0, sizeof(err))
        cfg.timeout_s = config["timeout_s"]
        cfg.spin_ns = config["spin_ns"]
        cfg.yield_ns = config["yield_ns"]
        cfg.inline_max = config["inline_max"]
        cfg.staging_bytes = config["staging_bytes"]
        cfg.chunk_bytes = config["chunk_bytes"]
        cfg.xchg_chunk_bytes = config["xchg_chunk_bytes"]
        cfg.hugepages = config["hugepages"]
        cfg.named_segment = 1 if config.get("segment", "memfd") == "named" else 0
        cfg.cma_enable = config["cma_enable"]
        cfg.bcast_tree_min = config.get("bcast_tree_min", 0)
        cfg.bcast_radix = config.get("bcast_radix", 4)
        cma_min = config["cma_min"]
        for i, name in enumerate(COLLECTIVES):
            v = cma_min.get(name)
            cfg.cma_min[i] = UINT64_MAX if v is None else v
        for name in config.get("adapt", ()):
            cfg.adapt_mask |= 1u << COLLECTIVES.index(name)
        cfg.adapt_min = config.get("adapt_min", 0)
        cfg.reduce_one_window = 1 if config.get("reduce_one_window") else 0
        cfg.stream = config.get("stream", 1)
        cfg.simd = config.get("simd", 1)
        cfg.recv_stream_min = config.get("recv_stream_min", 0)
        cdef pgc_team *t
        with nogil:
            t = pgc_team_create(rank, size, &cfg, &err)
        if t == NULL:
            _raise(err.code, &err)
        cdef Team self = Team.__new__(Team)
        self.t = t
        return self

    @staticmethod
    def attach(int rank, int size, str name):
        cdef pgc_error err
        memset(&err, 0, sizeof(err))
        cdef bytes bname = name.encode()
        cdef const char *cname = bname
        cdef pgc_team *t
        with nogil:
            t = pgc_team_attach(rank, size, cname, &err)
        if t == NULL:
            _raise(err.code, &err)
        cdef Team self = Team.__new__(Team)
        self.t = t
        return self

    def __dealloc__(self):
        pgc_team_destroy(self.t)

    cdef pgc_team *_use(self) except NULL:
        if self.t == NULL:
            raise TeamClosedError("the node team was freed")
        if self.busy:
            raise PgascolError("the node team is already in a collective (concurrent use from "
                               "several threads is not supported)")
        return self.t

    cdef int _check(self, int rc) except -1:
        """Raise the error rc stands for; 1 for PGC_ON_MPI (the call agreed
        on MPI, which the caller runs), 0 for PGC_OK."""
        if rc == PGC_ON_MPI:
            return 1
        if rc != PGC_OK:
            if rc == PGC_ETYPE and self.holding:
                self.hold(_error(PGC_ETYPE, &self.t.err))
                return 0
            _raise(rc, &self.t.err, self.t.hdr.abort_code)
        return 0

    cdef int hold(self, object exc) except -1:
        """Keep exc, a DatatypeMismatchError (the first), for take_held."""
        if self.held is None:
            self.held = exc
        return 0

    cdef object take_held(self):
        """Stop holding (see `holding`); the error held, if any, cleared."""
        exc, self.held, self.holding = self.held, None, False
        if self.t != NULL:
            self.t.forwards = 0
        return exc

    cdef pgc_team *_begin(self, size_t nbytes) except NULL:
        """Enter an engine call moving about nbytes (the GIL: see _enter)."""
        cdef pgc_team *t = self._use()
        self.busy = 1
        _enter(t, nbytes)
        return t

    cdef int _end(self, int rc) except -1:
        """Leave the engine call _begin entered; raise its error."""
        _leave(self.t)
        self.busy = 0
        return self._check(rc)

    def check_idle(self):
        """Raise unless freeing is safe: a collective on this team running
        in another thread (the GIL released) would find its memory gone."""
        if self.busy:
            raise PgascolError("the node team cannot be freed while one of its collectives runs "
                               "(in another thread)")

    def destroy(self):
        """Unmap the segment; the team is unusable afterwards."""
        self.check_idle()
        pgc_team_destroy(self.t)
        self.t = NULL

    @property
    def closed(self):
        return self.t == NULL

    @property
    def name(self):
        """The address other members attach with (csrc/base/segment.h)."""
        return self._use().seg.name.decode()

    @property
    def segment_kind(self):
        """'memfd' or 'named': how this member's segment was made (a memfd
        request falls back to a name where the kernel has no memfd)."""
        return "named" if self._use().seg.kind else "memfd"

    @property
    def rank(self):
        return self._use().rank

    @property
    def size(self):
        return self._use().nranks

    @property
    def segment_bytes(self):
        return self._use().seg.size

    @property
    def cma_ok(self):
        return bool(self._use().cma_ok)

    @property
    def cma_reason(self):
        return self._use().cma_reason.decode(errors="replace")

    @property
    def config(self):
        """The team-wide parameters in effect (those of the creator)."""
        cdef pgc_team *t = self._use()
        return {"timeout_s": t.cfg.timeout_s, "spin_ns": t.cfg.spin_ns, "yield_ns": t.cfg.yield_ns,
                "spin_iters": t.spin_iters, "inline_max": t.cfg.inline_max,
                "staging_bytes": t.cfg.staging_bytes, "chunk_bytes": t.cfg.chunk_bytes,
                "xchg_chunk_bytes": t.cfg.xchg_chunk_bytes,
                "hugepages": t.cfg.hugepages, "cma_enable": t.cfg.cma_enable,
                "segment": "named" if t.cfg.named_segment else "memfd",
                "bcast_tree_min": t.cfg.bcast_tree_min, "bcast_radix": t.cfg.bcast_radix,
                "cma_min": {name: (None if t.cfg.cma_min[i] == UINT64_MAX else t.cfg.cma_min[i])
                            for i, name in enumerate(COLLECTIVES)},
                "adapt": [name for i, name in enumerate(COLLECTIVES) if t.cfg.adapt_mask >> i & 1],
                "adapt_min": t.cfg.adapt_min, "reduce_one_window": t.cfg.reduce_one_window,
                "stream": t.cfg.stream, "simd": t.cfg.simd, "recv_stream_min": t.cfg.recv_stream_min}

    @property
    def simd(self):
        """The loops this member copies and reduces with: 'avx2', or
        'baseline' (the architecture's; config['simd'] 0, or a CPU without
        AVX2)."""
        return _SIMD_NAMES[self._use().simd]

    @property
    def costs(self):
        """The team's measured transfer costs, in picoseconds per byte (None:
        not measured yet): 'stage' (into one's own staging), 'copyout' (out
        of a peer's staging, across cores), 'cma' (single copy), 'stream'
        (into one's own staging with streaming stores). The first three
        choose the path of the collectives in config['adapt'] (staging at the
        cheaper of 'stage' and 'stream'); 'stage' and 'stream' how members
        write their staging (config['stream'])."""
        cdef pgc_team *t = self._use()
        return {name: (t.hdr.costs.ps_per_byte[k] or None) for k, name in enumerate(_XFERS)}

    @property
    def probe_interval(self):
        """Seconds between re-measurements of the path not taken by the
        collectives in config['adapt']: 0.0125 for a new team, doubled by
        each probe that confirms the path taken (up to 0.8), back to 0.1
        (if longer) when one changes it, 0.1 when the costs are seeded."""
        cdef pgc_team *t = self._use()
        return pgc_probe_interval_ns(t.hdr.costs.probe_backoff) / 1e9

    def seed_costs(self, **ps_per_byte):
        """Set some of the team's costs (picoseconds per byte, by the names
        of `costs`) as if just measured, end any probe in progress and reset
        `probe_interval`: a warm start from known figures. The next calls
        measure and correct them."""
        cdef uint32_t ps[PGC_NXFER]
        for k, name in enumerate(_XFERS):
            v = ps_per_byte.pop(name, 0)
            if not 0 <= v < 2 ** 32:
                raise ArgumentError("%s=%r: expected picoseconds per byte below 2**32" % (name, v))
            ps[k] = v
        if ps_per_byte:
            raise ArgumentError("unknown costs %s (known: %s)" % (sorted(ps_per_byte), ", ".join(_XFERS)))
        pgc_costs_seed(self._use(), ps)

    def release(self):
        """Once every member attached: nobody else may attach (the name is
        removed, or the creator's memfd closed). Idempotent."""
        self._check(pgc_team_release(self._use()))

    def check_attached(self):
        self._check(pgc_team_check_attached(self._use()))

    def probe_cma(self):
        """Try one single-copy read from the next member: (ok, reason)."""
        cdef pgc_team *t = self._use()
        cdef int ok
        with nogil:
            ok = pgc_team_probe_cma(t)
        return bool(ok), t.cma_reason.decode(errors="replace")

    def set_cma(self, bint ok, str reason):
        pgc_team_set_cma(self._use(), ok, reason.encode())

    def check_peers(self):
        """Raise PeerDeadError if a member died."""
        self._check(pgc_check_peers(self._use()))

    def check_alive(self):
        """Raise TeamAbortedError if a member gave up on the team,
        PeerDeadError if one died."""
        cdef pgc_team *t = self._use()
        self._check(pgc_check_aborted(t))
        self._check(pgc_check_peers(t))

    def member_alive(self, int r):
        """Whether member r (a local rank) is alive: its process exists, is
        not a zombie, and started when the member joined."""
        cdef pgc_team *t = self._use()
        if not 0 <= r < t.nranks:
            raise ArgumentError("local rank %d out of range for a team of %d" % (r, t.nranks))
        return bool(pgc_member_alive(t, r))

    def abort(self, str message):
        """Give up on the team: every member's current or next wait fails."""
        pgc_team_abort(self._use(), PGC_EABORTED, message.encode()[:250])

    def revoke(self, str message):
        """Abort the team for a revoked communicator (Comm.Revoke): every
        member's current or next wait raises RevokedError, this member's
        too (its own last error forgotten: it is no cause of this one)."""
        cdef pgc_team *t = self._use()
        memset(&t.err, 0, sizeof(t.err))
        pgc_team_abort(t, PGC_EREVOKED, message.encode()[:250])

    @property
    def stats_paused(self):
        """True while calls are not counted in stats() (a caller's own
        operation built from engine calls counts itself)."""
        return bool(self._use().stats_paused)

    @stats_paused.setter
    def stats_paused(self, bint paused):
        self._use().stats_paused = paused

    @property
    def refusals_abort(self):
        """True where a member's refusal of a call another member needs
        aborts the team (a hierarchy's node team: its members wait for each
        other in the call's further legs); False: those members give the
        call up and raise PeerRefusedError, the team usable."""
        return bool(self._use().refusals_abort)

    @refusals_abort.setter
    def refusals_abort(self, bint abort):
        self._use().refusals_abort = abort

    # ------------------------------------------------------------ shared regions

    def region_add(self, uint64_t region, uint64_t size, bases):
        """Register shared region `region` (csrc/team/region.h): `size`
        bytes that every member maps, at bases[r] on member r (bases[rank]:
        this member's mapping, which the caller keeps alive until
        region_remove). Collective in effect: every member must register the
        same region with the same table, between the same two collectives."""
        cdef pgc_team *t = self._use()
        cdef _Sizes b = _Sizes(bases, t.nranks, "bases")
        self._check(pgc_region_add(t, region, size, <const uint64_t *>b.v))

    def region_remove(self, uint64_t region):
        """Forget shared region `region` (collective in effect, as region_add)."""
        self._check(pgc_region_remove(self._use(), region))

    def region_find(self, int r, uint64_t addr, size_t length):
        """Where member r's bytes [addr, addr + length) are in this process
        (an address), or None when they are not inside one registered region."""
        cdef pgc_team *t = self._use()
        if r < 0 or r >= t.nranks:
            raise ArgumentError("local rank %d out of range for a team of %d" % (r, t.nranks))
        cdef void *p = pgc_region_find(t, r, addr, length)
        return None if p == NULL else <uint64_t><size_t>p

    @property
    def regions(self):
        """How many shared regions are registered."""
        return self._use().nregions

    def single_copies(self):
        """{'kernel': n, 'shared': n}: the single copies this process made
        with process_vm_readv/writev and through shared regions."""
        cdef pgc_team *t = self._use()
        return {"kernel": t.single_copies[0], "shared": t.single_copies[1]}

    def waits(self):
        """This member's spin gate (sync.c, spin_gate_count): "spinning"
        (whether its waits spin now), "spin_offs" (how many windows of waits
        that seldom ended in the spin turned it off), "off_ms" (how long it
        stays off from now; 0 while spinning)."""
        cdef pgc_team *t = self._use()
        cdef pgc_spin_gate *g = &t.spin_gate
        cdef uint64_t now = pgc_now_ns()
        left = g.off_until - now if g.off_until > now else 0
        return {"spinning": t.spin_iters > 0 and left == 0, "spin_offs": g.offs, "off_ms": left / 1e6}

    def stats(self):
        """{collective: {path: calls}} for the calls this process made."""
        cdef pgc_team *t = self._use()
        out = {}
        for c, name in enumerate(COLLECTIVES):
            paths = {p: t.stats[c][i] for i, p in enumerate(PATHS) if t.stats[c][i]}
            if paths:
                out[name] = paths
        return out

    # ------------------------------------------------------------ collectives

    # The c_ methods are what pgascol.Comm calls (no Python call in between);
    # the def methods are the same for Python callers.

    cdef int c_fold(self, char *out, const char *a, const char *b, size_t count, int dtype, int op) except -1:
        """out = a (op) b elementwise, on this member alone, with the team's
        kernels (a: the lower ranks' part); out may be a or b, never a part of either."""
        cdef pgc_team *t = self._use()
        pgc_reduce_3(t.simd, <pgc_op>op, <pgc_dtype>dtype, out, a, b, count)
        return 0

    cdef int c_barrier(self) except -1:
        cdef pgc_team *t = self._begin(0)
        return self._end(pgc_barrier(t))

    def barrier(self):
        self.c_barrier()

    cdef void c_refuse(self, int coll, const char *reason) noexcept:
        """The caller raised an ArgumentError for collective `coll` before
        entering it, while its peers may have: see pgc_coll_refuse (reason:
        the error's message, or NULL). It may wait (the run-ahead bound), so
        the GIL goes as for any call."""
        cdef pgc_team *t = self.t
        if t == NULL or self.busy:
            return
        self.busy = 1
        _enter(t, 0)
        pgc_coll_refuse(t, <pgc_coll>coll, reason)
        _leave(t)
        self.busy = 0

    cdef bint c_wait_all_refused(self) noexcept:
        """After c_refuse: wait until every peer is done with the refused
        call, its signature compared with ours at the first wait on it
        (pgc_wait_step_all): whether every peer refused it too. A peer in
        the call is a mismatch, which aborts the team: a peer that would
        wait for this member in a later step of the call fails at once."""
        cdef pgc_team *t = self.t
        if t == NULL or self.busy or pgc_check_aborted(t) != PGC_OK:
            return False
        self.busy = 1
        _enter(t, 0)
        cdef int rc = pgc_wait_step_all(t, PGC_STEP_DONE)
        _leave(t)
        self.busy = 0
        return rc == PGC_OK

    cdef bint c_peers_refused(self, int coll) except -1:
        """Before entering collective `coll`: wait until every peer
        signed it, and whether every one refused it (pgc_coll_peers_refused;
        False on a team of one). Raises as a wait does (timeout, abort, a
        dead peer)."""
        cdef pgc_team *t = self._use()
        cdef int alike = 0, rc
        self.busy = 1
        with nogil:
            rc = pgc_coll_peers_refused(t, <pgc_coll>coll, &alike)
        self.busy = 0
        self._check(rc)
        return alike != 0

    cdef int c_check_aborted(self) except -1:
        """Raise TeamAbortedError if a member gave up on the team (one load:
        before a call's first step outside the engine, such as a leader's
        inter-node leg, which must not meet the other nodes' legs)."""
        return self._check(pgc_check_aborted(self._use()))

    cdef int c_to_mpi(self, int coll) except -1:
        """The caller runs collective `coll` on MPI: see pgc_coll_to_mpi.
        Raises (CollectiveMismatchError, TeamAbortedError, ...) when a peer
        did not go to MPI too, instead of leaving it waiting."""
        return self._end(pgc_coll_to_mpi(self._begin(0), <pgc_coll>coll))

    cdef int c_bcast(self, char *buf, size_t nbytes, int root, int dtype=-1) except -1:
        self._root(root)
        cdef pgc_team *t = self._begin(nbytes)
        if self.holding:    # a hierarchical call's leader forwards (pgc_team.forwards)
            t.forwards = t.rank == 0
        return self._end(pgc_bcast(t, buf, nbytes, root, dtype))

    def bcast(self, buf, size_t nbytes, int root):
        """Broadcast nbytes of buf from member root."""
        cdef pgc_team *t = self._use()
        cdef _Buffers b = _Buffers()
        self.c_bcast(b.get(0, buf, t.rank != root, nbytes, "buffer"), nbytes, root)

    cdef int _root(self, int root) except -1:
        cdef pgc_team *t = self._use()
        if root < 0 or root >= t.nranks:
            raise ArgumentError("root %d out of range for a team of %d" % (root, t.nranks))
        return 0

    cdef size_t _checked_vector_bytes(self, size_t count, int dtype, int op) except? 0:
        """count elements in bytes, once (op, dtype) is one MPI defines: the
        check of the Python methods. The c_ methods leave it to their caller
        (pgascol.Comm checks the pair once, pgascol/comm/mpi_operators.pxi); the C core
        checks again, as a guard."""
        if dtype < 0 or dtype >= PGC_NDTYPES:
            raise ArgumentError("unsupported datatype code %d" % dtype)
        if op < 0 or op >= PGC_NOPS:
            raise ArgumentError("unsupported reduction operator code %d" % op)
        if not pgc_op_valid(<pgc_op>op, <pgc_dtype>dtype):
            raise ArgumentError("MPI does not define %s on %s" % (
                pgc_op_name(<pgc_op>op).decode(), pgc_dtype_name(<pgc_dtype>dtype).decode()))
        return count * pgc_dtype_size(<pgc_dtype>dtype)

    cdef int c_reduce(self, const char *sendbuf, char *recvbuf, size_t count, int dtype, int op,
                      int root) except -1:
        """Reduce to member root; sendbuf NULL: in place at the root."""
        self._root(root)
        cdef pgc_team *t = self._begin(count * pgc_dtype_size(<pgc_dtype>dtype))
        return self._end(pgc_reduce(t, sendbuf, recvbuf, count, <pgc_dtype>dtype, <pgc_op>op, root))

    def reduce(self, sendbuf, recvbuf, size_t count, int dtype, int op, int root):
        """Reduce count elements to member root (sendbuf None: in place at the root)."""
        cdef pgc_team *t = self._use()
        self._root(root)
        cdef size_t n = self._checked_vector_bytes(count, dtype, op)
        cdef _Buffers b = _Buffers()
        cdef const char *s = NULL
        cdef char *r = NULL
        if sendbuf is None:
            if t.rank != root:
                raise ArgumentError("only the root may reduce in place")
        else:
            s = b.get(0, sendbuf, False, n, "sendbuf")
        if t.rank == root:
            r = b.get(1, recvbuf, True, n, "recvbuf")
        self.c_reduce(s, r, count, dtype, op, root)

    cdef int c_elementwise(self, int coll, const char *sendbuf, char *recvbuf, size_t count,
                           int dtype, int op) except -1:
        """The elementwise reductions: coll PGC_COLL_ALLREDUCE, PGC_COLL_SCAN
        or PGC_COLL_EXSCAN; sendbuf NULL: in place."""
        cdef pgc_team *t = self._begin(count * pgc_dtype_size(<pgc_dtype>dtype))
        return self._end(_elementwise(t, coll, sendbuf, recvbuf, count, dtype, op))

    cdef int _elementwise_obj(self, int coll, sendbuf, recvbuf, size_t count, int dtype, int op) except -1:
        cdef size_t n = self._checked_vector_bytes(count, dtype, op)
        cdef _Buffers b = _Buffers()
        cdef const char *s = NULL if sendbuf is None else b.get(0, sendbuf, False, n, "sendbuf")
        return self.c_elementwise(coll, s, b.get(1, recvbuf, True, n, "recvbuf"), count, dtype, op)

    def allreduce(self, sendbuf, recvbuf, size_t count, int dtype, int op):
        self._elementwise_obj(PGC_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op)

    def scan(self, sendbuf, recvbuf, size_t count, int dtype, int op):
        self._elementwise_obj(PGC_COLL_SCAN, sendbuf, recvbuf, count, dtype, op)

    def exscan(self, sendbuf, recvbuf, size_t count, int dtype, int op):
        self._elementwise_obj(PGC_COLL_EXSCAN, sendbuf, recvbuf, count, dtype, op)

    cdef int c_reduce_scatter(self, bint block, const char *sendbuf, char *recvbuf,
                              const size_t *recvcounts, int dtype, int op) except -1:
        """recvcounts: elements per member; sendbuf NULL: in place (the input in recvbuf)."""
        cdef size_t esize = pgc_dtype_size(<pgc_dtype>dtype)
        cdef pgc_team *t = self._begin(_sum(recvcounts, self._use().nranks) * esize)
        return self._end(pgc_reduce_scatter(t, PGC_COLL_REDUCE_SCATTER_BLOCK if block else PGC_COLL_REDUCE_SCATTER,
                                            sendbuf, recvbuf, recvcounts, <pgc_dtype>dtype, <pgc_op>op))

    def reduce_scatter(self, sendbuf, recvbuf, recvcounts, int dtype, int op, bint block=False):
        """recvcounts: elements per member; in place (sendbuf None): the input is in recvbuf."""
        cdef pgc_team *t = self._use()
        cdef _Sizes counts = _Sizes(recvcounts, t.nranks, "recvcounts")
        cdef size_t esize = self._checked_vector_bytes(1, dtype, op)
        cdef size_t total = counts.total() * esize, mine = counts.v[t.rank] * esize
        cdef _Buffers b = _Buffers()
        cdef const char *s = NULL if sendbuf is None else b.get(0, sendbuf, False, total, "sendbuf")
        cdef char *r = b.get(1, recvbuf, True, total if sendbuf is None else mine, "recvbuf")
        self.c_reduce_scatter(block, s, r, counts.v, dtype, op)

    # Gather(v), Scatter(v), Allgather(v), Alltoall(v): C-level entry points
    # for callers that hold the buffers and have laid out the blocks in bytes
    # (pgascol/comm/_comm.pyx), then the Python methods, which check and convert
    # their arguments first. NULL counts/displacements where the operation
    # does not need them (off the root); the engine refuses what does not
    # match (csrc/coll/coll_gather.c).

    cdef int c_gather(self, bint v, const char *sendbuf, size_t sendbytes, char *recvbuf,
                      const size_t *recvbytes, const size_t *displs, int root, int dtype=-1) except -1:
        self._root(root)
        cdef pgc_team *t = self._begin(_sum(recvbytes, self.t.nranks) if recvbytes != NULL else sendbytes)
        if self.holding:    # a hierarchical call's leader forwards (pgc_team.forwards)
            t.forwards = t.rank == 0
        return self._end(pgc_gather(t, PGC_COLL_GATHERV if v else PGC_COLL_GATHER, sendbuf, sendbytes,
                                    recvbuf, recvbytes, displs, root, dtype))

    cdef int c_scatter(self, bint v, const char *sendbuf, const size_t *sendbytes,
                       const size_t *displs, char *recvbuf, size_t recvbytes, int root, int dtype=-1) except -1:
        self._root(root)
        cdef pgc_team *t = self._begin(_sum(sendbytes, self.t.nranks) if sendbytes != NULL else recvbytes)
        return self._end(pgc_scatter(t, PGC_COLL_SCATTERV if v else PGC_COLL_SCATTER, sendbuf, sendbytes,
                                     displs, recvbuf, recvbytes, root, dtype))

    cdef int c_allgather(self, bint v, const char *sendbuf, size_t sendbytes, char *recvbuf,
                         const size_t *recvbytes, const size_t *displs, bint recv_cold) except -1:
        cdef pgc_team *t = self._begin(_sum(recvbytes, self._use().nranks))
        return self._end(pgc_allgather(t, PGC_COLL_ALLGATHERV if v else PGC_COLL_ALLGATHER, sendbuf,
                                       sendbytes, recvbuf, recvbytes, displs,
                                       PGC_RECV_COLD if recv_cold else 0))

    cdef int c_alltoall(self, bint v, const char *sendbuf, const size_t *sendbytes,
                        const size_t *sdispls, char *recvbuf, const size_t *recvbytes,
                        const size_t *rdispls) except -1:
        cdef pgc_team *t = self._begin(_sum(recvbytes, self._use().nranks))
        return self._end(pgc_alltoall(t, PGC_COLL_ALLTOALLV if v else PGC_COLL_ALLTOALL, sendbuf,
                                      sendbytes, sdispls, recvbuf, recvbytes, rdispls))

    def gather(self, sendbuf, size_t sendbytes, recvbuf, recvbytes, displs, int root, bint v=False):
        """Gather(v) in bytes. recvbytes/displs matter at the root only (displs None: packed)."""
        cdef pgc_team *t = self._use()
        self._root(root)
        cdef _Buffers b = _Buffers()
        cdef _Sizes counts = None, offs = None
        cdef const char *s = NULL
        cdef char *r = NULL
        if t.rank == root:
            counts = _Sizes(recvbytes, t.nranks, "recvcounts")
            offs = _packed_displs(counts) if displs is None else _Sizes(displs, t.nranks, "displs")
            r = b.get(1, recvbuf, True, offs.extent(counts), "recvbuf")
            if sendbuf is None:
                sendbytes = counts.v[root]
            elif counts.v[root] != sendbytes:
                raise ArgumentError("the root sends %d bytes to itself but expects %d"
                                    % (sendbytes, counts.v[root]))
        elif sendbuf is None:
            raise ArgumentError("only the root may gather in place")
        if sendbuf is not None:
            s = b.get(0, sendbuf, False, sendbytes, "sendbuf")
        self.c_gather(v, s, sendbytes, r, NULL if counts is None else counts.v,
                      NULL if offs is None else offs.v, root)

    def scatter(self, sendbuf, sendbytes, displs, recvbuf, size_t recvbytes, int root, bint v=False):
        """Scatter(v) in bytes. sendbytes/displs matter at the root only. recvbuf None
        at the root: in place (the root's block stays in sendbuf)."""
        cdef pgc_team *t = self._use()
        self._root(root)
        cdef _Buffers b = _Buffers()
        cdef _Sizes counts = None, offs = None
        cdef const char *s = NULL
        cdef char *r = NULL
        if t.rank == root:
            counts = _Sizes(sendbytes, t.nranks, "sendcounts")
            offs = _packed_displs(counts) if displs is None else _Sizes(displs, t.nranks, "displs")
            s = b.get(0, sendbuf, False, offs.extent(counts), "sendbuf")
            if recvbuf is None:
                recvbytes = counts.v[root]
            elif counts.v[root] != recvbytes:
                raise ArgumentError("the root sends %d bytes to itself but receives %d"
                                    % (counts.v[root], recvbytes))
        elif recvbuf is None:
            raise ArgumentError("only the root may scatter in place")
        if recvbuf is not None:
            r = b.get(1, recvbuf, True, recvbytes, "recvbuf")
        self.c_scatter(v, s, NULL if counts is None else counts.v, NULL if offs is None else offs.v,
                       r, recvbytes, root)

    def allgather(self, sendbuf, size_t sendbytes, recvbuf, recvbytes, displs, bint v=False,
                  bint recv_cold=False):
        """Allgather(v) in bytes (sendbuf None: in place, my block at displs[rank]).
        recv_cold: recvbuf will leave the cache before it is read (the
        caller's whole operation outgrows it): write it with streaming stores."""
        cdef pgc_team *t = self._use()
        cdef _Sizes counts = _Sizes(recvbytes, t.nranks, "recvcounts")
        cdef _Sizes offs = _packed_displs(counts) if displs is None else _Sizes(displs, t.nranks, "displs")
        cdef _Buffers b = _Buffers()
        if sendbuf is None:
            sendbytes = counts.v[t.rank]
        elif counts.v[t.rank] != sendbytes:
            raise ArgumentError("this rank sends %d bytes but recvcounts[%d] is %d"
                                % (sendbytes, t.rank, counts.v[t.rank]))
        cdef const char *s = NULL if sendbuf is None else b.get(0, sendbuf, False, sendbytes, "sendbuf")
        cdef char *r = b.get(1, recvbuf, True, offs.extent(counts), "recvbuf")
        self.c_allgather(v, s, sendbytes, r, counts.v, offs.v, recv_cold)

    def alltoall(self, sendbuf, sendbytes, sdispls, recvbuf, recvbytes, rdispls, bint v=False):
        """Alltoall(v) in bytes (sendbuf None: in place, using the receive layout)."""
        cdef pgc_team *t = self._use()
        cdef _Sizes rc_ = _Sizes(recvbytes, t.nranks, "recvcounts")
        cdef _Sizes rd = _packed_displs(rc_) if rdispls is None else _Sizes(rdispls, t.nranks, "rdispls")
        cdef _Sizes sc = rc_ if sendbuf is None else _Sizes(sendbytes, t.nranks, "sendcounts")
        cdef _Sizes sd = rd if sendbuf is None else (
            _packed_displs(sc) if sdispls is None else _Sizes(sdispls, t.nranks, "sdispls"))
        cdef _Buffers b = _Buffers()
        cdef const char *s = NULL if sendbuf is None else b.get(0, sendbuf, False, sd.extent(sc), "sendbuf")
        cdef char *r = b.get(1, recvbuf, True, rd.extent(rc_), "recvbuf")
        self.c_alltoall(v, s, sc.v, sd.v, r, rc_.v, rd.v)
