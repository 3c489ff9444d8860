# The tuner: per collective and size class, the path this job measures fastest.
#
# Which path wins depends on the machine (its caches, the kernel's copy) and
# on its load, so no built-in threshold is right everywhere. A
# communicator's tuner times the candidates in the calls the program makes
# and takes the fastest, per collective and size class (calls of 2**k to
# 2**(k+1) - 1 bytes): a window of sizes, not a threshold.
#
#   candidates   one node: the engine's copy-in/copy-out (cico), single copy
#                (cma) where the kernel allows it, and MPI's own collective
#                (mpi) for the collectives whose counts are one number per
#                rank (_MPI_CANDIDATES; PGASCOL_TUNE_MPI=0 leaves it out); a
#                class that travels inline whole has one path and is not
#                tuned. Several nodes: none (the hierarchy as built runs every
#                call), so the tuner is off. A call given to MPI first passes
#                the engine's own begin (pgc_coll_agree_mpi, csrc/coll/coll.c):
#                its signature with the size class, DONE, and a wait for every
#                peer's, whose checks meet a refusal, another type or another
#                count before anyone enters MPI; the communicator stays
#                usable as on the engine's paths.
#   agreement    every rank takes the same path in every call without a message
#                of its own: what a call runs is a function of state every rank
#                holds alike (the table, changed only at exchanges) and of the
#                call's number (_State.call_number, the same on every rank, refused
#                calls included). Exchanges are one small Allreduce (MAX) at
#                agreed call numbers, ahead of that call's own work.
#   learning     a class is measured once the team made ACTIVATE calls of it: in
#                a measuring round each call runs the candidate its number's
#                block (BLOCK numbers) hashes to, so that a loop of one class
#                times each candidate over a few calls in a row; a rank drops
#                each candidate's first call of the round (cold buffers, page
#                faults) and keeps the mean of the others but the slowest (a
#                loop's cost, waits and context switches included, without one
#                preemption); the round ends at the exchange where every rank
#                holds SAMPLES (SAMPLES_SMALL below SMALL) of each; the slowest
#                rank's mean decides.
#   following    a class is measured again after `interval` more of its calls
#                (INTERVAL_MIN, doubling while the choice holds, to INTERVAL_MAX);
#                a re-measure switches only to a candidate HYSTERESIS faster, and
#                the k-th switch of a class sets the interval to INTERVAL_MIN x
#                2**(k-1): N calls of a class make at most log2(N / INTERVAL_MIN)
#                + 1 switches, however its costs move.
#   keeping      a table from the calibration file (pgascol/node/calibration.py)
#                is agreed at the first exchange (MAX over ranks) and used from
#                there, measured again after INTERVAL_FILE calls of a class;
#                what the job learned is written back at exit (PGASCOL_TUNE_SAVE).
#
# Gatherv, Scatterv and Alltoallv, whose counts differ per rank, are tuned by
# each rank's own block (their paths may differ per rank: each sender, or the
# root, announces its own). Barrier is not tuned. What the tuner leaves (and
# a class not learned yet), the built-in thresholds and the engine's own
# measured choice (csrc/coll/coll.c, pgc_choose_member_path) decide.

from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

cdef enum:
    CAND_ENGINE = 0     # not tuned: the engine as the thresholds and its own costs choose
    CAND_CICO = 1       # = PGC_PATH_CICO: the engine, copy-in/copy-out
    CAND_CMA = 2        # = PGC_PATH_CMA: the engine, single copy
    CAND_MPI = 3        # = PGC_HINT_MPI: MPI's own collective, after the node's agreement
_CAND_NAMES = ("engine", "cico", "cma", "mpi")

cdef enum:
    CLASS_MIN = 0       # 1 byte (classes that travel inline whole: not tuned)
    NCLASSES = 35       # ... to 2**35 - 1 bytes
    MAXCAND = 3

# The tuned collectives: their bytes are the same on every rank of a correct call.
_TUNED = (PGC_COLL_BCAST, PGC_COLL_REDUCE, PGC_COLL_ALLREDUCE, PGC_COLL_GATHER, PGC_COLL_SCATTER,
          PGC_COLL_ALLGATHER, PGC_COLL_ALLGATHERV, PGC_COLL_ALLTOALL, PGC_COLL_REDUCE_SCATTER,
          PGC_COLL_REDUCE_SCATTER_BLOCK, PGC_COLL_SCAN, PGC_COLL_EXSCAN,
          PGC_COLL_GATHERV, PGC_COLL_SCATTERV, PGC_COLL_ALLTOALLV)
# ... the last three by each rank's own block, whose class another rank may not
# share: their paths may differ per rank (each sender, or the root, announces its own).
cdef int NTUNED = 15
TUNED = tuple(_core.COLLECTIVES[c] for c in _TUNED)    # their names
cdef int NSLOTS = 15 * NCLASSES
# The collectives MPI's own may run (CAND_MPI): those whose class is the same
# on every rank of a correct call and whose counts the agreement compares
# whole (one byte count per rank: pgc_coll_agree_mpi). Not the v forms: a
# rank's class there is its own block's, and their counts are vectors.
_MPI_CANDIDATES = (PGC_COLL_BCAST, PGC_COLL_REDUCE, PGC_COLL_ALLREDUCE, PGC_COLL_GATHER, PGC_COLL_SCATTER,
                   PGC_COLL_ALLGATHER, PGC_COLL_ALLTOALL, PGC_COLL_REDUCE_SCATTER_BLOCK, PGC_COLL_SCAN,
                   PGC_COLL_EXSCAN)

cdef long long ACTIVATE = 4          # calls of a class before it is measured
cdef int SAMPLES = 4                 # kept samples per candidate and rank in a round...
cdef int SAMPLES_SMALL = 8           # ... below SMALL bytes, where one call is a few us
cdef long long BLOCK = 4             # consecutive call numbers that run one candidate
cdef Py_ssize_t SMALL = 256 << 10
cdef double HYSTERESIS = 0.10        # a re-measure switches for a candidate this much faster
cdef long long INTERVAL_MIN = 256    # calls of a class between measuring rounds...
cdef long long INTERVAL_MAX = 16384  # ... doubling to this while the choice holds
cdef long long INTERVAL_FILE = 1024  # a class the calibration file decided: first re-measure
# Exchanges come every `gap` calls (any collective), the gap chosen at each
# exchange from agreed figures (the slowest rank's time since the last one and
# the cheapest exchange so far) so that exchanging costs about 1/EXCHANGE_SHARE of
# the job's time in collectives: a few calls apart where calls are large, up
# to GAP_MAX where they are small.
cdef long long GAP_FIRST = 16
cdef long long GAP_MEASURING = 12   # (BLOCK x 3 candidates)
cdef long long ROUND_MAX = 128       # calls of a class after which a round ends with what it has
cdef long long GAP_MIN = 4
cdef long long GAP_MAX = 1024
cdef double EXCHANGE_SHARE = 200.0

cdef double _INF = float("inf")
cdef int _F64 = _core.DTYPES["float64"], _MAX = _core.OPS["MAX"]

cdef enum:
    PHASE_BUILTIN = 0   # not learned: the built-in thresholds
    PHASE_STEADY = 1    # a candidate chosen
    PHASE_MEASURING = 2

cdef enum:
    SRC_NONE = 0
    SRC_FILE = 1
    SRC_LEARNED = 2
_SOURCES = ("built in", "calibration file", "learned in this job")

ctypedef struct _Slot:
    long long seen          # this rank's calls of the class
    long long agreed_seen   # the most any rank had made at the last exchange
    long long next_measure  # agreed_seen at which the next round starts
    long long round_start   # agreed_seen when the round began
    long long interval
    int phase, chosen, source, switches
    int ncand               # its candidates (0: not tuned)...
    int cand[MAXCAND]       # ... CAND_*
    int warm                # bit i: candidate i ran once in this round on this rank (dropped)
    int got[MAXCAND]        # this rank's samples in the round
    double sum[MAXCAND]     # ... their total, ns...
    double worst[MAXCAND]   # ... and the slowest (left out of the mean)


cdef inline long long _now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <long long>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef extern from *:
    int __builtin_clzll(unsigned long long) nogil


cdef inline int _class_of(Py_ssize_t nbytes) noexcept:
    """floor(log2(nbytes)), 0 for 0 and 1."""
    return 63 - __builtin_clzll(<unsigned long long>nbytes | 1)


def class_range(int k):
    """(smallest, largest) bytes of size class k."""
    return (1 << k, (1 << (k + 1)) - 1)


cdef void _busy_for(double seconds):
    """Tests: a candidate made slower (_Tuner.slow) spins this long in the timed call."""
    if seconds <= 0:
        return
    cdef long long end = _now_ns() + <long long>(seconds * 1e9)
    while _now_ns() < end:
        pass


# What this process's tuners learned, {shape: {collective: {class: path}}}:
# written to the calibration file at exit by one rank per node.
_LEARNED = {}
cdef bint _SAVE_REGISTERED = False


cdef int _save_at_exit() except -1:
    global _SAVE_REGISTERED
    if not _SAVE_REGISTERED:
        import atexit
        atexit.register(_save_learned)
        _SAVE_REGISTERED = True
    return 0


def _save_learned():
    if _LEARNED:
        from ..node import calibration
        calibration.save(_LEARNED, "learned", os.environ.get("PGASCOL_CALIBRATION") or None)


cdef class _Tuner:
    """One communicator's path table and its measurements (see above)."""
    cdef _State st
    cdef public bint enabled, requested, measure_now, saves, mpi_candidate
    cdef public str shape
    cdef int ncand                      # the stride of a measuring slot's figures in an exchange
    cdef int slot_of[PGC_NCOLL]         # collective -> its row of slots, -1: not tuned
    cdef _Slot slots[15 * NCLASSES]
    cdef public long long next_exchange, gap, exchanges
    cdef public long long last_exchange_ns, exchange_cost_ns
    cdef object xarr, yarr              # the exchange's vectors (xbuf, ybuf: their data)
    cdef double *xbuf
    cdef double *ybuf
    cdef object seeds                   # {slot: candidate} from the calibration file, until the first exchange
    cdef int cur                        # the slot being timed in this call, -1: none
    cdef int cur_cand                   # its candidate's index in cands
    cdef long long t0
    cdef Py_ssize_t min_bytes
    cdef public list log                # (call, collective, class, from, to, {candidate: us}) of every decision
    cdef public object slow             # tests: {candidate name: seconds} added to its calls

    def __init__(self, _State st, env):
        cdef int i
        self.st = st
        self.log = []
        self.slow = None
        self.cur = -1
        for i in range(PGC_NCOLL):
            self.slot_of[i] = -1
        fixed = {name for name in _core.COLLECTIVES if "PGASCOL_CMA_MIN_" + name.upper() in env}
        for i, c in enumerate(_TUNED):
            if _core.COLLECTIVES[c] not in fixed:
                self.slot_of[c] = i     # (a PGASCOL_CMA_MIN_<NAME> fixes that one's path)
        self.mpi_candidate = env.get("PGASCOL_TUNE_MPI", "1").strip() not in ("0", "off", "")
        inline_max = st.core.config["inline_max"]
        cdef bint tunable = False           # a class with a choice (none: one rank, several nodes)
        for i in range(NSLOTS):
            self.slots[i].phase = PHASE_BUILTIN
            self.slots[i].chosen = -1
            self.slots[i].interval = INTERVAL_MIN
            cands = self._candidates(_TUNED[i // NCLASSES], i % NCLASSES + CLASS_MIN, inline_max)
            self.slots[i].ncand = len(cands)
            tunable |= len(cands) > 0
            for j, c in enumerate(cands):
                self.slots[i].cand[j] = c
        self.min_bytes = 1
        self.ncand = MAXCAND
        self.requested = env.get("PGASCOL_TUNE", "1").strip() not in ("0", "off", "")
        self.enabled = self.requested and tunable     # (not: no exchanges)
        self.saves = env.get("PGASCOL_TUNE_SAVE", "1").strip() not in ("0", "off", "")
        self.measure_now = False    # calibrate: measure a class from its first call
        self.shape = "%dn%dr%s" % (st.nnodes, st.size, "o" if st.team.layout.oversubscribed else "")
        self.seeds = self._file_seeds(env) if self.enabled else {}
        self.gap = GAP_FIRST
        self.next_exchange = GAP_FIRST if self.enabled else -1
        self.exchanges = 0
        self.last_exchange_ns = _now_ns()
        self.exchange_cost_ns = 0
        self.xarr = bytearray(sizeof(double) * (4 + 2 * NSLOTS + 2 * MAXCAND * NSLOTS))
        self.yarr = bytearray(len(self.xarr))
        self.xbuf = <double *>PyByteArray_AS_STRING(self.xarr)
        self.ybuf = <double *>PyByteArray_AS_STRING(self.yarr)

    def _candidates(self, int coll, int k, Py_ssize_t inline_max):
        """The candidates of collective coll's class k on a node team of two
        or more, where the class does not travel inline whole: copy-in/copy-out,
        single copy where the kernel allows it, MPI's own where the agreement
        can check the call (_MPI_CANDIDATES, PGASCOL_TUNE_MPI); none where
        fewer than two remain, or across nodes (see above)."""
        if self.st.size < 2 or self.st.hier or (2 << k) - 1 <= inline_max:
            return []
        cands = [CAND_CICO]
        if self.st.core.cma_ok:
            cands.append(CAND_CMA)
        if self.mpi_candidate and coll in _MPI_CANDIDATES:
            cands.append(CAND_MPI)
        return cands if len(cands) > 1 else []

    def _file_seeds(self, env):
        from ..node import calibration
        table = calibration.load(env.get("PGASCOL_CALIBRATION") or None).get(self.shape, {})
        out = {}
        for name, classes in table.items():
            try:
                c = _core.COLLECTIVES.index(name)
            except ValueError:
                continue
            if self.slot_of[c] < 0:
                continue
            for k, path in classes.items():
                if CLASS_MIN <= k < CLASS_MIN + NCLASSES and path in _CAND_NAMES:
                    s = self.slot_of[c] * NCLASSES + k - CLASS_MIN
                    names = [_CAND_NAMES[self.slots[s].cand[i]] for i in range(self.slots[s].ncand)]
                    if path in names:
                        out[s] = names.index(path)
        return out

    # ---------------------------------------------------------- per call

    cdef int choose(self, int coll, Py_ssize_t nbytes) except -1:
        """The candidate this call runs (CAND_*), its engine path set in the
        team's hint; a call it times is finished by finish()."""
        self.cur = -1
        if not self.enabled:
            return CAND_ENGINE
        if nbytes < self.min_bytes:
            return CAND_ENGINE
        cdef int row = self.slot_of[coll], k = _class_of(nbytes) - CLASS_MIN, i
        cdef unsigned long long b
        if row < 0 or k >= NCLASSES:
            return CAND_ENGINE
        cdef int s = row * NCLASSES + k
        cdef _Slot *sl = &self.slots[s]
        if sl.ncand == 0:
            return CAND_ENGINE
        sl.seen += 1
        if sl.phase == PHASE_BUILTIN:
            return CAND_ENGINE
        if sl.phase == PHASE_STEADY:
            i = sl.chosen
        else:
            # the call's number picks the candidate, the same on every rank: a
            # block of BLOCK consecutive call numbers runs one candidate, so
            # that it is timed in the steady state of its own buffers
            # (blocks go round the candidates, each round of them from a
            # hashed start, so that no pattern of calls keeps a class on one)
            b = <unsigned long long>self.st.call_number // BLOCK
            i = <int>((b + (((b // sl.ncand + 1) * 0x9E3779B97F4A7C15ull) >> 33)) % <unsigned>sl.ncand)
            self.cur, self.cur_cand = s, i
            self.t0 = _now_ns()
        cdef int cand = sl.cand[i]
        self.st.core.t.path_hint = PGC_HINT_MPI if cand == CAND_MPI else cand
        self.st.core.t.hint_bytes = nbytes
        return cand

    cdef int finish(self) except -1:
        """The end of a call choose() timed (one that succeeded)."""
        self.st.core.t.path_hint = 0
        if self.cur < 0:
            return 0
        if self.slow:
            _busy_for(self.slow.get(_CAND_NAMES[self.slots[self.cur].cand[self.cur_cand]], 0.0))
        cdef double ns = <double>(_now_ns() - self.t0)
        cdef _Slot *sl = &self.slots[self.cur]
        cdef int i = self.cur_cand
        self.cur = -1
        if not sl.warm >> i & 1:
            sl.warm |= 1 << i
            return 0        # a candidate's first call of the round: cold buffers, faults
        sl.sum[i] += ns
        if ns > sl.worst[i]:
            sl.worst[i] = ns
        sl.got[i] += 1
        return 0

    cdef void abandon(self) noexcept:
        """The call failed: nothing of it is kept."""
        if self.st.core is not None:
            self.st.core.t.path_hint = 0
        self.cur = -1

    # ---------------------------------------------------------- exchanges

    cdef int exchange(self) except -1:
        """At an agreed call number (before that call's own work): one
        Allreduce (MAX) of every rank's counts and of the measuring rounds'
        samples; every rank then changes its table alike."""
        cdef int s, i, j = 4 + NSLOTS, n
        cdef _Slot *sl
        cdef bint first = self.exchanges == 0
        cdef long long start = _now_ns()
        cdef double *x = self.xbuf
        cdef double *y = self.ybuf
        self.exchanges += 1
        x[0], x[1] = self.exchanges, -self.exchanges
        x[2], x[3] = start - self.last_exchange_ns, self.exchange_cost_ns
        for s in range(NSLOTS):
            x[4 + s] = self.slots[s].seen
        if first:
            for s in range(NSLOTS):
                x[j + s] = 0
            for s, i in self.seeds.items():
                x[j + s] = i + 1
            j += NSLOTS
        for s in range(NSLOTS):
            sl = &self.slots[s]
            if sl.phase != PHASE_MEASURING:
                continue
            for i in range(self.ncand):
                # a rank without its samples yet: +inf time, 0 samples (MAX: the round goes on)
                # the mean of its calls but the slowest (one preemption): what a
                # program's loop of them sees, waits and switches included
                x[j + i] = (sl.sum[i] - sl.worst[i]) / (sl.got[i] - 1) if sl.got[i] > 1 else _INF
                x[j + self.ncand + i] = -sl.got[i]
            j += 2 * self.ncand
        n = j
        self._allreduce_max(n)
        if y[0] != -y[1]:
            # ranks out of step (cannot happen while call_number is): stop tuning alike everywhere
            self.enabled = False
            self.st.log("tuning: ranks out of step at call %d; the built-in thresholds from here" % self.st.call_number)
            return 0
        for s in range(NSLOTS):
            self.slots[s].agreed_seen = <long long>y[4 + s]
        j = 4 + NSLOTS
        if first:
            for s in range(NSLOTS):
                if y[j + s] > 0 and self.slots[s].phase == PHASE_BUILTIN:
                    self._settle(s, <int>y[j + s] - 1, SRC_FILE, INTERVAL_FILE)
            j += NSLOTS
            self.seeds = None
        for s in range(NSLOTS):
            sl = &self.slots[s]
            if sl.phase == PHASE_MEASURING:
                self._judge(s, y + j)
                j += 2 * self.ncand
        cdef bint measuring = False
        for s in range(NSLOTS):
            sl = &self.slots[s]
            if sl.phase == PHASE_BUILTIN and (sl.agreed_seen >= ACTIVATE or (self.measure_now and sl.agreed_seen)):
                self._start_round(s)
            elif sl.phase == PHASE_STEADY and sl.agreed_seen >= sl.next_measure:
                self._start_round(s)
            measuring |= sl.phase == PHASE_MEASURING
        # the next gap: calls in about EXCHANGE_SHARE exchanges' time (agreed
        # figures); while a round runs, soon, so that it ends soon
        cdef double per_call = y[2] / self.gap, cost = max(y[3], 1000.0)
        self.gap = max(GAP_MIN, min(GAP_MEASURING if measuring else GAP_MAX,
                                    <long long>(EXCHANGE_SHARE * cost / max(per_call, 1.0))))
        self.next_exchange = self.st.call_number + self.gap
        self.last_exchange_ns = _now_ns()
        # its own cost: the cheapest so far (one exchange also waits for the
        # slowest rank to arrive, which is the collectives' time, not its own)
        if self.exchange_cost_ns == 0 or self.last_exchange_ns - start < self.exchange_cost_ns:
            self.exchange_cost_ns = self.last_exchange_ns - start
        return 0

    cdef int _allreduce_max(self, int n) except -1:
        """The exchange's Allreduce on the node team (the tuner runs on one node only)."""
        cdef int paused = self.st.core.t.stats_paused
        self.st.core.t.stats_paused = 1     # the tuner's own call is no collective of the program's
        try:
            self.st.core.c_elementwise(PGC_COLL_ALLREDUCE, <const char *>self.xbuf, <char *>self.ybuf, n, _F64, _MAX)
        finally:
            self.st.core.t.stats_paused = paused
        return 0

    cdef int _start_round(self, int s) except -1:
        cdef _Slot *sl = &self.slots[s]
        sl.phase = PHASE_MEASURING
        sl.warm = 0
        sl.round_start = sl.agreed_seen
        for i in range(MAXCAND):
            sl.got[i] = 0
            sl.sum[i] = 0
            sl.worst[i] = 0
        return 0

    cdef bint _judge(self, int s, const double *y) except -1:
        """A measuring round's end where every rank has its samples: the
        fastest candidate by the slowest rank's best. True if it ended."""
        cdef _Slot *sl = &self.slots[s]
        cdef int i, best = -1, need = SAMPLES_SMALL if self._bytes_of(s) < SMALL else SAMPLES
        cdef bint late = sl.agreed_seen - sl.round_start > ROUND_MAX
        for i in range(sl.ncand):
            if -y[self.ncand + i] < need and not late:
                return False
            if -y[self.ncand + i] > 1 and (best < 0 or y[i] < y[best]):
                best = i
        if best < 0:    # (late, and no candidate measured on every rank: the built-in path)
            sl.phase = PHASE_BUILTIN if sl.chosen < 0 else PHASE_STEADY
            sl.next_measure = sl.agreed_seen + sl.interval
            return True
        times = {_CAND_NAMES[sl.cand[i]]: y[i] / 1e3 for i in range(sl.ncand)}
        cdef int was = sl.chosen
        if was >= 0 and sl.phase == PHASE_MEASURING and sl.source != SRC_NONE:
            if y[best] >= (1.0 - HYSTERESIS) * y[was]:
                best = was      # not clearly faster: keep the path
        if was >= 0 and best != was:
            # the k-th switch: INTERVAL_MIN x 2**(k-1) calls to the next round, so
            # that N calls see at most log2(N / INTERVAL_MIN) + 1 switches
            sl.switches += 1
            sl.interval = min(INTERVAL_MIN << min(sl.switches - 1, 16), INTERVAL_MAX)
        elif was >= 0:
            sl.interval = min(2 * sl.interval, INTERVAL_MAX)
        self._record(s, was, best, times)
        self._settle(s, best, SRC_LEARNED, sl.interval)
        return True

    cdef int _settle(self, int s, int cand, int source, long long interval) except -1:
        cdef _Slot *sl = &self.slots[s]
        sl.phase = PHASE_STEADY
        sl.chosen = cand
        sl.source = source
        sl.interval = interval
        sl.next_measure = sl.agreed_seen + interval
        return 0

    cdef Py_ssize_t _bytes_of(self, int s):
        return <Py_ssize_t>1 << (s % NCLASSES + CLASS_MIN)

    cdef int _record(self, int s, int was, int now, dict times) except -1:
        coll = _TUNED[s // NCLASSES]
        k = s % NCLASSES + CLASS_MIN
        cdef _Slot *sl = &self.slots[s]
        entry = (self.st.call_number, _COLL_NAMES[coll], k, None if was < 0 else _CAND_NAMES[sl.cand[was]],
                 _CAND_NAMES[sl.cand[now]], times)
        self.log.append(entry)
        if self.st.debug:
            self.st.log("tuning %s %s-%s B: %s%s (%s)" % (
                entry[1], _human_bytes(1 << k), _human_bytes((1 << (k + 1)) - 1),
                "stays " if was == now else ("%s -> " % entry[3] if was >= 0 else ""), entry[4],
                ", ".join("%s %.1f us" % kv for kv in sorted(times.items(), key=lambda kv: kv[1]))))
        if self.saves and self.st.lrank == 0:
            _LEARNED.setdefault(self.shape, {}).setdefault(entry[1], {})[k] = entry[4]
            _save_at_exit()
        return 0

    # ---------------------------------------------------------- views

    def table(self):
        """{collective: {class: {"path", "source", "switches", "bytes"}}} of
        every class not on the built-in thresholds."""
        cdef _Slot *sl
        cdef int s, k
        out = {}
        for s in range(NSLOTS):
            sl = &self.slots[s]
            if sl.phase == PHASE_BUILTIN and sl.chosen < 0:
                continue
            k = s % NCLASSES + CLASS_MIN
            out.setdefault(_COLL_NAMES[_TUNED[s // NCLASSES]], {})[k] = {
                "path": _CAND_NAMES[sl.cand[sl.chosen]] if sl.chosen >= 0 else "measuring",
                "measuring": sl.phase == PHASE_MEASURING,
                "source": _SOURCES[sl.source], "switches": sl.switches, "bytes": class_range(k),
                "calls": sl.seen}
        return out

    def state_of(self, str coll, Py_ssize_t nbytes):
        """(path or None, source, measuring) of the class of a call."""
        cdef _Slot *sl
        cdef int k
        c = _core.COLLECTIVES.index(coll)
        k = _class_of(nbytes) - CLASS_MIN
        if self.slot_of[c] < 0 or not 0 <= k < NCLASSES or nbytes < self.min_bytes:
            return (None, _SOURCES[SRC_NONE], False)
        sl = &self.slots[self.slot_of[c] * NCLASSES + k]
        return (_CAND_NAMES[sl.cand[sl.chosen]] if sl.chosen >= 0 else None, _SOURCES[sl.source],
                sl.phase == PHASE_MEASURING)

    def class_of(self, str coll, Py_ssize_t nbytes):
        """The size class of a call."""
        return _class_of(nbytes)

    @property
    def hier(self):
        return self.st.hier

    def candidates(self, str coll="Allreduce", Py_ssize_t nbytes=1 << 16):
        """The candidates of a call's class."""
        cdef _Slot *sl
        c = _core.COLLECTIVES.index(coll)
        k = _class_of(nbytes) - CLASS_MIN
        if self.slot_of[c] < 0:
            return []
        sl = &self.slots[self.slot_of[c] * NCLASSES + k]
        return [_CAND_NAMES[sl.cand[i]] for i in range(sl.ncand)]


def _human_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%g %s" % (round(n / size, 2), unit)
    return "%d" % n


def tuner_of(comm):
    """The _Tuner of a pgascol.Comm (None for other communicators): for
    pgascol calibrate and the tests, which drive it."""
    st = _st(comm)
    return None if st is None else st.tuner


def tuning(comm):
    """The path table of a pgascol.Comm: {collective: {size class: {"path",
    "source", "measuring", "switches", "bytes", "calls"}}} for every class
    that left the built-in thresholds ({} for other communicators)."""
    st = _st(comm)
    if st is None or st.tuner is None:
        return {}
    return st.tuner.table()
