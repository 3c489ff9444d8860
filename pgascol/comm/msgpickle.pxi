# The pickle-based methods on one node: msgpickle.py over the engine's byte
# collectives, with every call whose messages each pickle to one in-band
# frame -- the slots, and the frames after them -- in C-level code here.
#
# Most calls programs make move small objects (a loss, a step count, a
# shape): their pickle travels whole in its slot, and the call is one
# engine collective. Written in Python that call costs 2-3 us of
# interpreter work (lists, struct, memoryview slices) around a 0.3 us
# collective -- more than mpi4py's own method over MPI. So such calls are
# done here: pickle, header and frame written with memcpy into slots on the
# stack, the engine's C-level entry point (Team.c_*), the headers read back
# and the frames unpickled straight from the slots (or, for a frame larger
# than its slot, from the area it came into: _Areas). The slots are those of
# msgpickle.py (same header, same layout), so a rank whose object does not
# fit takes msgpickle.py's whole path while the others take this one, in the
# same engine collective; and a rank here that receives a header saying a
# sender failed or has frames to follow hands over to msgpickle.py's
# continuation (*_finish) with the slots it received.

from cpython.bytearray cimport PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.ref cimport Py_REFCNT
from libc.stdint cimport int64_t

from . import msgpickle as _pickle

cdef enum:
    _SLOT = 512             # msgpickle.SLOT
    _HDR = 40               # msgpickle._HB: status, frames, len(frame 0), packed length, follow
    _FITS = _SLOT - _HDR
    _STACK_SLOTS = 16       # slots of a call on the stack (8 KiB); more come from the heap

if _pickle.SLOT != _SLOT or _pickle._HB != _HDR:
    raise ImportError("msgpickle.pxi and msgpickle.py disagree on the slot")


# mpi4py's per-communicator lock each method takes (MPI._comm_lock, keyed
# by name: its msgpickle.pxi), so that threads calling one method on one
# communicator take turns, as with mpi4py. reduce and allreduce gather the
# objects (msgpickle.py): mpi4py's keys of that form (rc.fast_reduce off).
# Indexed by coll - COLL_OBJ_BCAST.
cdef tuple _LOCK_KEYS = ("bcast", "gather", "allgather", "gather", "scatter", "allgather", "alltoall")
cdef object _comm_lock = MPI._comm_lock


cdef object _obj_call(_State st, int coll, object obj, object op, int root):
    """A pickle-based method on one node, under mpi4py's lock of the method,
    counted as `coll` on path shm; the engine calls it makes are not counted."""
    key = _LOCK_KEYS[coll - COLL_OBJ_BCAST]
    lock = st.locks.get(key)
    if lock is None:    # the same object as long as the communicator lives
        lock = st.locks[key] = _comm_lock(st.team.comm, key)
    cdef pgc_team *t
    with lock:
        t = st.core._use()      # (in the lock: it refuses a team another thread is in)
        t.stats_paused = 1
        try:
            areas = _areas(st, key)
            if coll == COLL_OBJ_BCAST:
                return _obj_bcast(st.core, t, areas, obj, root)
            if coll == COLL_OBJ_SCATTER:
                return _obj_scatter(st.core, t, areas, obj, root)
            if coll == COLL_OBJ_ALLTOALL:
                return _obj_alltoall(st.core, t, areas, obj)
            return _obj_gathered(st.core, t, areas, coll, obj, op, root)
        finally:
            t.stats_paused = 0
            st.count(coll, P_SHM)


# ----------------------------------------------------------------- slots

cdef enum:
    WHOLE = 0       # a received slot holds its sender's whole message
    FOLLOWS = 1     # the sender's message is one in-band frame, sent after the slots
    GENERAL = 2     # a failure, or out-of-band frames: msgpickle.py's continuation


cdef object _pickled(object obj):
    """MPI.pickle.dumps_oob(obj), or None where it raised (msgpickle.py then
    pickles again and keeps the exception, or falls back to dumps)."""
    try:
        return MPI.pickle.dumps_oob(obj)
    except Exception:
        return None


cdef inline bint _one_frame(object pickled):
    """Whether a dumps_oob result is one in-band frame (bytes): what the
    methods here move themselves, in the slot or after it."""
    if pickled is None:
        return False
    data, bufs = pickled
    return not bufs and type(data) is bytes


cdef inline bint _fits(bytes data) noexcept:
    return PyBytes_GET_SIZE(data) <= _FITS


cdef inline void _put(char *slot, bytes data, bint follow) noexcept:
    """A one-frame message's slot (msgpickle.py's _Message.put): header
    (status OK, one frame, its length twice, follow) and the frame if it fits."""
    cdef int64_t *h = <int64_t *>slot
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    h[0] = 0
    h[1] = 1
    h[2] = n
    h[3] = n
    h[4] = follow
    if n <= _FITS:
        memcpy(slot + _HDR, PyBytes_AS_STRING(data), n)


cdef inline int _kind(const char *slot) noexcept:
    """WHOLE, FOLLOWS or GENERAL for a received slot."""
    cdef const int64_t *h = <const int64_t *>slot
    if h[0] != 0:
        return GENERAL
    if h[4] == 0:
        return WHOLE
    return FOLLOWS if h[1] == 1 else GENERAL


cdef inline size_t _len0(const char *slot) noexcept:
    return <size_t>(<const int64_t *>slot)[2]


cdef object _loads(object frame, Py_ssize_t n):
    """The object of a one-frame message (an empty message is None, as in mpi4py)."""
    if n == 0:
        return None
    return MPI.pickle.loads(frame)


cdef object _load(const char *slot):
    """The object of a WHOLE slot."""
    cdef Py_ssize_t n = <Py_ssize_t>_len0(slot)
    return _loads(PyBytes_FromStringAndSize(slot + _HDR, n) if n else None, n)


cdef inline size_t _up(size_t n) noexcept:
    return (n + 63) & ~(<size_t>63)     # msgpickle.py's _up: 64-byte aligned frames in a block


cdef bytearray _buffer(size_t n):
    """n writable bytes, not zero-filled."""
    return PyByteArray_FromStringAndSize(NULL, <Py_ssize_t>n)


cdef class _Areas:
    """A method's send and receive areas for one-frame messages, kept
    between its calls (in _State.frame_areas by the method's lock key, used
    under that lock): a fresh buffer of hundreds of KiB costs a page fault
    per 4 KiB on every call, more than moving it. The objects unpickled from
    a frame copy its bytes, so an area is free again after loads -- unless an
    unpickler kept a view of it, which its reference count shows: then a new one."""
    cdef bytearray send, recv

    cdef bytearray get(self, int side, size_t n):
        """At least n bytes (side 0: to send, 1: to receive)."""
        area = self.recv if side else self.send
        # references: this object's and this local's; more: someone kept a view
        if area is None or Py_REFCNT(area) > 2 or PyByteArray_GET_SIZE(area) < <Py_ssize_t>n:
            area = _buffer(max(n, 4096))
            if side:
                self.recv = area
            else:
                self.send = area
        return area


cdef _Areas _areas(_State st, key):
    areas = st.frame_areas.get(key)
    if areas is None:
        areas = st.frame_areas[key] = _Areas()
    return <_Areas>areas


cdef class _Slots:
    """n slots and n counts and displacements for the engine, on the stack
    of the object when _STACK_SLOTS are enough, else on the heap."""
    cdef char stack[_STACK_SLOTS * _SLOT]
    cdef size_t stack_counts[_STACK_SLOTS]
    cdef size_t stack_displs[_STACK_SLOTS]
    cdef int n
    cdef char *p
    cdef size_t *counts
    cdef size_t *displs
    cdef void *heap

    def __cinit__(self, int n):
        self.n = n
        self.heap = NULL
        if n <= _STACK_SLOTS:
            self.p, self.counts, self.displs = self.stack, self.stack_counts, self.stack_displs
        else:
            self.heap = PyMem_Malloc(<size_t>n * (_SLOT + 2 * sizeof(size_t)))
            if self.heap == NULL:
                raise MemoryError()
            self.counts = <size_t *>self.heap
            self.displs = self.counts + n
            self.p = <char *>(self.displs + n)
        cdef int r
        for r in range(n):
            self.counts[r] = _SLOT
            self.displs[r] = <size_t>r * _SLOT

    def __dealloc__(self):
        PyMem_Free(self.heap)

    cdef inline char *slot(self, int r) noexcept:
        return self.p + <size_t>r * _SLOT

    cdef int worst(self) noexcept:
        """The largest _kind of the n slots."""
        cdef int r, k = WHOLE
        for r in range(self.n):
            k = max(k, _kind(self.slot(r)))
        return k

    cdef list loads(self):
        return [_load(self.slot(r)) for r in range(self.n)]

    cdef size_t lay_out(self, int which, bint aligned) noexcept:
        """counts[r] = slot r's header field `which` (2: frame 0, 3: packed),
        displs one after another (64-aligned if aligned); returns the extent.
        The slots' own counts and displacements are not needed any more."""
        cdef size_t off = 0
        cdef int r
        for r in range(self.n):
            if aligned:
                off = _up(off)
            self.counts[r] = <size_t>(<const int64_t *>self.slot(r))[which]
            self.displs[r] = off
            off += self.counts[r]
        return off

    cdef list frames(self, object buf):
        """Every sender's object from its frame 0 in buf, at displs (lay_out)."""
        view = memoryview(buf)
        cdef int r
        cdef size_t d, c
        out = []
        for r in range(self.n):
            d, c = self.displs[r], _len0(self.slot(r))
            out.append(_loads(view[d:d + c], c))
        return out

    cdef object copy(self):
        """The slots as msgpickle.py's continuation takes them (a bytearray)."""
        return bytearray(PyBytes_FromStringAndSize(self.p, <Py_ssize_t>self.n * _SLOT))


cdef bytearray _pack_frames(_Areas areas, list datas, size_t *counts, size_t *displs, int n):
    """One-frame messages packed into one block at 64-aligned offsets
    (msgpickle.py's _pack), their counts and displacements set."""
    cdef size_t off = 0
    cdef int r
    for r in range(n):
        off = _up(off)
        counts[r] = <size_t>PyBytes_GET_SIZE(datas[r])
        displs[r] = off
        off += counts[r]
    block = areas.get(0, off)
    cdef char *b = PyByteArray_AS_STRING(block)
    for r in range(n):
        memcpy(b + displs[r], PyBytes_AS_STRING(datas[r]), counts[r])
    return block


# ----------------------------------------------------------------- methods

cdef object _obj_bcast(Team core, pgc_team *t, _Areas areas, object obj, int root, bint copy_root=True):
    cdef char slot[_SLOT]
    cdef size_t n
    if t.rank == root:
        pickled = _pickled(obj)
        if not _one_frame(pickled):
            return _pickle.bcast(core, obj, root, copy_root, pickled=pickled)
        data = <bytes>pickled[0]
        _put(slot, data, not _fits(data))
        core.c_bcast(slot, _SLOT, root)
        if not _fits(data):
            core.c_bcast(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), root)
        if not copy_root:
            return obj
        return _loads(data, PyBytes_GET_SIZE(data))     # a new object at the root too, as in mpi4py
    core.c_bcast(slot, _SLOT, root)
    cdef int kind = _kind(slot)
    if kind == WHOLE:
        return _load(slot)
    if kind == GENERAL:
        return _pickle.bcast_finish(core, bytearray(PyBytes_FromStringAndSize(slot, _SLOT)),
                                    None, None, root)
    n = _len0(slot)
    frame = areas.get(1, n)
    core.c_bcast(PyByteArray_AS_STRING(frame), n, root)
    return _loads(memoryview(frame)[:n], n)


cdef object _obj_gathered(Team core, pgc_team *t, _Areas areas, int coll, object obj, object op, int root):
    """gather, allgather, reduce, allreduce: an allgather of slots, then the
    frames (gathered to root or to all) if some did not fit."""
    cdef bint rooted = coll == COLL_OBJ_GATHER or coll == COLL_OBJ_REDUCE
    pickled = _pickled(obj)
    if not _one_frame(pickled):
        if coll == COLL_OBJ_GATHER:
            return _pickle.gather(core, obj, root, pickled)
        if coll == COLL_OBJ_ALLGATHER:
            return _pickle.allgather(core, obj, pickled)
        if coll == COLL_OBJ_REDUCE:
            return _pickle.reduce(core, obj, op, root, pickled)
        return _pickle.allreduce(core, obj, op, pickled)
    data = <bytes>pickled[0]
    cdef int n = t.nranks
    cdef _Slots slots = _Slots(n)
    _put(slots.slot(t.rank), data, not _fits(data))
    core.c_allgather(False, NULL, _SLOT, slots.p, slots.counts, slots.displs, False)   # in place
    cdef int kind = slots.worst()
    if kind == GENERAL:
        msg = _pickle._Message([data], [PyBytes_GET_SIZE(data)])
        exchange = _pickle._rows(slots.copy(), n)
        if coll == COLL_OBJ_ALLREDUCE:
            return _pickle.allreduce_finish(core, msg, exchange, op)
        items = _pickle.gathered_finish(core, "gather" if rooted else "allgather", msg, exchange,
                                        root if rooted else None)
        if coll == COLL_OBJ_REDUCE and items is not None:
            return _pickle._fold(items, op)
        return items
    if kind == WHOLE:
        if rooted and t.rank != root:
            return None
        items = slots.loads()
    elif coll == COLL_OBJ_ALLREDUCE and slots.lay_out(2, False) > _pickle._SMALL_ALLREDUCE:
        return _allreduce_at_0(core, t, areas, slots, data, op)
    else:
        items = _frames_gathered(core, t, areas, slots, data, root if rooted else -1)
        if items is None:
            return None
    if coll == COLL_OBJ_REDUCE or coll == COLL_OBJ_ALLREDUCE:
        return _pickle._fold(items, op)
    return items


cdef object _allreduce_at_0(Team core, pgc_team *t, _Areas areas, _Slots slots, bytes data, object op):
    """msgpickle.py's allreduce of large one-frame messages: the frames to
    rank 0, its fold, and a bcast of the result (or of op's exception)."""
    items = _frames_gathered(core, t, areas, slots, data, 0)
    if t.rank != 0:
        return _obj_bcast(core, t, areas, None, 0)
    try:
        result = _pickle._fold(items, op)
    except BaseException as exc:
        return _pickle.bcast(core, None, 0, copy_root=False, error=exc)
    return _obj_bcast(core, t, areas, result, 0, False)


cdef object _frames_gathered(Team core, pgc_team *t, _Areas areas, _Slots slots, bytes data, int root):
    """Every rank's frame 0 to root (-1: to all), packed one after another
    (msgpickle.py's _gather_frames of one-frame messages); the objects at the
    receivers, None elsewhere."""
    cdef size_t total = slots.lay_out(2, False)
    cdef const char *mine = PyBytes_AS_STRING(data)
    cdef size_t mine_n = <size_t>PyBytes_GET_SIZE(data)
    if root >= 0 and t.rank != root:
        core.c_gather(True, mine, mine_n, NULL, NULL, NULL, root)
        return None
    buf = areas.get(1, total)
    if root < 0:
        core.c_allgather(True, mine, mine_n, PyByteArray_AS_STRING(buf), slots.counts, slots.displs,
                         False)
    else:
        core.c_gather(True, mine, mine_n, PyByteArray_AS_STRING(buf), slots.counts, slots.displs,
                      root)
    return slots.frames(buf)


cdef tuple _sequence_pickles(object sendobj, int n):
    """A scatter's or an alltoall's n items, as (items, their dumps_oob
    results, the frames when every one is one in-band frame else None).
    Where sendobj is no sequence of n items: (items or sendobj, None, None),
    and msgpickle.py raises mpi4py's error. Each item is pickled once,
    whichever path then moves it (msgpickle.py takes the results)."""
    try:
        items = [None] * n if sendobj is None else list(sendobj)
    except Exception:
        return sendobj, None, None
    if len(items) != n:
        return items, None, None
    pickles = [_pickled(x) for x in items]
    for p in pickles:
        if not _one_frame(p):
            return items, pickles, None
    return items, pickles, [p[0] for p in pickles]


cdef bint _all_fit(list datas) noexcept:
    for d in datas:
        if not _fits(<bytes>d):
            return False
    return True


cdef object _obj_scatter(Team core, pgc_team *t, _Areas areas, object sendobj, int root):
    cdef char slot[_SLOT]
    cdef int n = t.nranks, r
    cdef _Slots slots
    cdef size_t m
    if t.rank == root:
        items, pickles, datas = _sequence_pickles(sendobj, n)
        if datas is None:
            return _pickle.scatter(core, items, root, pickles)
        follow = not _all_fit(datas)
        slots = _Slots(n)
        for r in range(n):
            _put(slots.slot(r), datas[r], follow)
        core.c_scatter(False, slots.p, slots.counts, slots.displs, slot, _SLOT, root)
        if not follow:
            return _load(slot)
        block = _pack_frames(areas, datas, slots.counts, slots.displs, n)
        core.c_scatter(True, PyByteArray_AS_STRING(block), slots.counts, slots.displs, NULL,
                       slots.counts[root], root)        # my block stays in place
        return _loads(memoryview(block)[slots.displs[root]:slots.displs[root] + slots.counts[root]],
                      slots.counts[root])
    core.c_scatter(False, NULL, NULL, NULL, slot, _SLOT, root)
    cdef int kind = _kind(slot)
    if kind == WHOLE:
        return _load(slot)
    if kind == GENERAL:
        return _pickle.scatter_finish(core, bytearray(PyBytes_FromStringAndSize(slot, _SLOT)),
                                      None, None, root)
    m = _len0(slot)
    frame = areas.get(1, m)
    core.c_scatter(True, NULL, NULL, NULL, PyByteArray_AS_STRING(frame), m, root)
    return _loads(memoryview(frame)[:m], m)


cdef object _obj_alltoall(Team core, pgc_team *t, _Areas areas, object sendobj):
    cdef int n = t.nranks, r
    items, pickles, datas = _sequence_pickles(sendobj, n)
    if datas is None:
        return _pickle.alltoall(core, items, pickles)
    cdef bint follow = not _all_fit(datas)
    cdef _Slots send = _Slots(n), recv = _Slots(n)
    for r in range(n):
        _put(send.slot(r), datas[r], follow)
    core.c_alltoall(False, send.p, send.counts, send.displs, recv.p, recv.counts, recv.displs)
    cdef int kind = recv.worst()
    if kind == WHOLE:
        return recv.loads()
    if kind == GENERAL:
        msgs = [_pickle._Message([d], [PyBytes_GET_SIZE(d)]) for d in datas]
        return _pickle.alltoall_finish(core, recv.copy(), msgs, None)
    block = _pack_frames(areas, datas, send.counts, send.displs, n)
    buf = areas.get(1, recv.lay_out(3, True))
    core.c_alltoall(True, PyByteArray_AS_STRING(block), send.counts, send.displs,
                    PyByteArray_AS_STRING(buf), recv.counts, recv.displs)
    return recv.frames(buf)
