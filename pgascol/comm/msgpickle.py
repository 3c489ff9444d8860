"""The pickle-based collectives of pgascol.Comm on one node.

mpi4py's lowercase methods -- bcast, gather, scatter, allgather, alltoall,
reduce, allreduce -- with mpi4py's semantics, the bytes moving through the
node engine's byte collectives (a pgascol.engine._core.Team) instead of MPI
messages. pgascol.Comm calls these only when the whole communicator is one
node team; across nodes it uses mpi4py's own methods. pgascol.Comm moves a
message that is one in-band frame at C level (msgpickle.pxi) with the same
slots; a rank there that receives a header it does not handle continues here
(the *_finish functions), and what it pickled is passed on (``pickled``).

Messages. An object is serialised with mpi4py's pickler (``MPI.pickle``: its
dumps/loads, protocol and out-of-band THRESHOLD, 256 KiB by default) as
pickle protocol 5 with out-of-band buffers, into frames: frame 0 is the
pickle stream, frames 1..k the contiguous out-of-band buffers (a pickler that
cannot produce them, e.g. a replacement dumps without buffer_callback, gives
everything in band). When k > 0, frame 0 starts with the k buffer lengths
(int64) -- so small objects are a single frame, everything in band.

A call:

1. A slot of SLOT bytes per message goes through one engine collective
   chosen so that every rank sees every slot it must act on (bcast, scatter:
   the root's; gather, allgather: allgather; alltoall: alltoall). A slot is a
   header of 5 int64 -- status, number of frames, length of frame 0, packed
   length, and whether this sender has frames for step 3 -- and, when the
   message is one frame of at most SLOT - 40 bytes, the frame itself. Small
   objects (an int, a tuple, a dict of a few entries, a numpy scalar) are
   then done in this one collective, one synchronisation of the team as in
   mpi4py's own small messages; under load or oversubscription a second one
   would cost a second wait for the slowest rank.
2. If a sender could not serialise its object (unpicklable, or a scatter or
   alltoall sequence of the wrong length), nothing more moves: that rank
   raises its own exception (mpi4py's: ``ValueError("expecting N items, got
   M")``, a PicklingError, ...), every other rank ArgumentError, and the team
   stays in step and usable. (mpi4py raises on the failing rank only and
   leaves the others blocked in MPI.)
3. The frames, if any sender's did not fit its slot (every rank knows from
   the slots it received: a scatter's root and an alltoall's senders say so
   in every slot they send). bcast, gather, allgather: frame i of every sender by one
   engine call (Bcast, Gatherv, Allgatherv), so the out-of-band buffers are
   read where they lie, without a copy at the sender. scatter, alltoall (one
   send buffer for all destinations): each message packed, frame by frame, at
   64-byte-aligned offsets into one block, and one Scatterv or Alltoallv.
4. Receivers allocate writable memory (bytearray, or numpy uint8 when large;
   out-of-band frames at 64-byte-aligned offsets) and unpickle with ``buffers=`` views of it:
   numpy arrays come back writable and zero-copy on the received frame (the
   arrays of one call share that frame's allocation). Every result is a new
   object, as with mpi4py, also on the sender (bcast's root copies its
   out-of-band buffers).

reduce and allreduce gather the objects and apply ``op(a, b)`` -- an MPI.Op
(MPI.SUM is ``a + b``, MPI.MAX ``max``, ... user operators made with
MPI.Op.Create are called ``fn(a, b, None)``) or any callable -- in exactly
the order mpi4py uses: its binomial tree (``mpi4py.rc.fast_reduce``, the
default) or a left fold in rank order, so results are identical even when op
is not associative (floating-point sums). reduce folds at the root and
returns None elsewhere; allreduce folds at rank 0 and broadcasts the result,
or, for small objects, allgathers them and folds on every rank. If op raises,
reduce raises at the root (the others return None, as with mpi4py) and
allreduce on every rank (mpi4py leaves the others blocked).

A root out of range never reaches this module: pgascol.Comm hands such calls
to mpi4py, for MPI's error (MPI.Exception, ERR_ROOT).
"""
import struct

import mpi4py
from mpi4py import MPI

from ..errors import ArgumentError, PgascolError

_HDR = struct.Struct("5q")  # per message: status, frames, len(frame 0), packed length, frames follow
_HB = _HDR.size
# A slot: the header and a small message's only frame. 512 bytes hold the
# pickles of the small objects programs exchange most (a numpy float64 is
# 119 bytes, a 3-tuple 30); at 8 ranks an allgather of slots moves 4 KiB, on
# the engine's inline path like the header alone.
SLOT = 512
_FITS = SLOT - _HB
_OK, _FAILED, _RAISED = 0, 1, 2     # statuses (_RAISED: frame 0 is an exception to raise)
_ALIGN = 64                 # offset of every out-of-band frame in a receive buffer or a block
_NUMPY_ALLOC = 1 << 16      # receive buffers from this size are numpy (not zero-filled)
# allreduce of one-frame messages: allgather + fold everywhere up to this
# many bytes in all, else a fold at rank 0 and a bcast. Every rank loads every
# object then: at np=2 64 KiB objects 37 against 74 us, at np=8 on 2 cores
# 16 KiB 0.54 against 0.77 ms; 200 KiB at np=2, or 64 KiB at np=8, lose.
_SMALL_ALLREDUCE = 1 << 18
_EMPTY = b""

# mpi4py's order of the reduction (read by mpi4py when MPI was imported;
# MPI4PY_RC_FAST_REDUCE in the environment is reflected in mpi4py.rc then).
_TREE = getattr(mpi4py.rc, "fast_reduce", True) not in (False, "no")


# ----------------------------------------------------------------- messages

class _Message:
    """One object to send: its frames and their lengths, or why it failed."""
    __slots__ = ("frames", "lens", "error")

    def __init__(self, frames, lens, error=None):
        self.frames, self.lens, self.error = frames, lens, error

    def packed(self):
        """Length of the message packed into one block (frames 64-aligned)."""
        lens = self.lens
        end = lens[0]
        for n in lens[1:]:
            end = _up(end) + n
        return end

    def header(self):
        """This message's header: [status, frames, len(frame 0), packed length]."""
        if self.error is not None:
            return [_FAILED, 0, 0, 0]
        lens = self.lens
        return [_OK, len(lens), lens[0], lens[0] if len(lens) == 1 else self.packed()]

    def fits(self):
        """Whether the whole message travels in its slot (failures do: a header)."""
        return self.error is not None or (len(self.lens) == 1 and self.lens[0] <= _FITS)

    def put(self, slots, off, follow, status=None):
        """This message's slot at slots[off:]: the header (status overriding
        its own; follow: the sender has frames for step 3) and the frame if it fits."""
        h = self.header()
        if status is not None:
            h[0] = status
        _HDR.pack_into(slots, off, *h, int(follow))
        if self.error is None and self.fits():
            slots[off + _HB:off + _HB + self.lens[0]] = self.frames[0]


def _up(n):
    return (n + _ALIGN - 1) & -_ALIGN


def _dumps(obj):
    """(pickle, [out-of-band buffers]) by mpi4py's pickler."""
    pkl = MPI.pickle
    try:
        return pkl.dumps_oob(obj)
    except Exception:       # a dumps without buffer_callback, a buffer it refused, ...
        return pkl.dumps(obj), []   # in band; raises if the object cannot be pickled at all


def _message(obj, pickled=None):
    """Serialise obj into a _Message (frame 0 = [buffer lengths] + pickle).
    pickled: what MPI.pickle.dumps_oob already gave for obj (the C-level
    first step of msgpickle.pxi pickles before it knows whether a message fits)."""
    try:
        data, bufs = _dumps(obj) if pickled is None else pickled
    except BaseException as exc:
        return _Message(None, None, exc)
    if not bufs:
        return _Message([data], [len(data)])
    lens = [memoryview(b).nbytes for b in bufs]
    f0 = struct.pack("%dq" % len(lens), *lens) + data
    return _Message([f0] + list(bufs), [len(f0)] + lens)


def _messages(sendobj, size, pickled=None):
    """Messages of a scatter/alltoall sequence (mpi4py: None means None for
    everyone; anything else must give exactly size items), or the exception.
    pickled: the items' dumps_oob results, already made (see _message)."""
    try:
        items = [None] * size if sendobj is None else list(sendobj)
        if len(items) != size:
            raise ValueError(f"expecting {size} items, got {len(items)}")
        if pickled is None:
            msgs = [_message(x) for x in items]
        else:
            msgs = [_message(x, p) for x, p in zip(items, pickled)]
    except BaseException as exc:
        return None, exc
    for m in msgs:
        if m.error is not None:
            return None, m.error
    return msgs, None


def _ints(buf):
    """A received buffer of int64 as a list."""
    return memoryview(buf).cast("B").cast("q").tolist()


def _oob_lens(f0, nframes):
    """Lengths of the out-of-band frames listed at the start of frame 0."""
    if nframes <= 1:
        return []
    return _ints(f0[:8 * (nframes - 1)])


def _load(f0, nframes, oob):
    """The object of a received message: frame 0 and its out-of-band frames."""
    data = f0[8 * (nframes - 1):] if nframes > 1 else f0
    if len(data) == 0:
        return None         # mpi4py: an empty message is None
    if nframes > 1:
        return MPI.pickle.loads_oob(data, oob)
    return MPI.pickle.loads(data)


def _alloc(n):
    """n writable bytes, as a memoryview."""
    if n >= _NUMPY_ALLOC:
        import numpy as np      # (not with the module: start-up, numpy_lazy.pxi)
        return memoryview(np.empty(n, np.uint8))
    return memoryview(bytearray(n))


def _layout(counts, aligned):
    """Displacements of blocks of these sizes laid out one after another
    (each 64-byte aligned if aligned), and the total."""
    displs, off = [], 0
    for c in counts:
        if aligned:
            off = _up(off)
        displs.append(off)
        off += c
    return displs, off


def _copy(buf):
    """A writable copy of a buffer."""
    src = memoryview(buf).cast("B")
    out = _alloc(src.nbytes)
    out[:] = src
    return out


def _pack(msgs):
    """All messages packed into one block: (block, counts, displs). Message r
    at displs[r] (64-aligned), its frames at 64-aligned offsets in it."""
    counts = [m.packed() for m in msgs]
    displs, total = _layout(counts, True)
    block = _alloc(total)
    for m, d in zip(msgs, displs):
        off = d
        for i, (f, n) in enumerate(zip(m.frames, m.lens)):
            if i:
                off = d + _up(off - d)
            block[off:off + n] = memoryview(f).cast("B")
            off += n
    return block, counts, displs


def _unpack(block, nframes, len0):
    """The object of a packed message (a view of its block)."""
    f0 = block[:len0]
    oob, off = [], len0
    for n in _oob_lens(f0, nframes):
        off = _up(off)
        oob.append(block[off:off + n])
        off += n
    return _load(f0, nframes, oob)


# ----------------------------------------------------------------- failures

def _raise_failures(what, statuses, error):
    """After the headers: raise on every rank if a sender failed -- error (its
    own exception) on that rank, ArgumentError on the others. statuses: those
    of the senders this rank heard from."""
    if error is not None:
        raise error
    if any(statuses):
        bad = ", ".join(str(r) for r, s in enumerate(statuses) if s)
        raise ArgumentError("%s: rank %s could not serialise what it sends (its exception says "
                            "why); nothing was transferred" % (what, bad))


# ----------------------------------------------------------------- collectives

_SLOT_COUNTS = {}


def _slot_counts(size):
    """[SLOT] * size, made once per team size (the engine's counts argument)."""
    counts = _SLOT_COUNTS.get(size)
    if counts is None:
        counts = _SLOT_COUNTS[size] = [SLOT] * size
    return counts


def _slot_frame(slots, r, len0):
    """The frame that travelled in slot r (a view)."""
    off = r * SLOT + _HB
    return memoryview(slots)[off:off + len0]


def bcast(core, obj, root, copy_root=True, error=None, pickled=None):
    """mpi4py's bcast. error (at the root): raise this exception everywhere
    instead (frame 0 carries it). copy_root False: the root returns obj itself."""
    slot = bytearray(SLOT)
    msg = None
    if core.rank == root:
        if error is not None:
            msg = _message(error)
            if msg.error is not None:
                msg = _message(PgascolError("%s: %s" % (type(error).__name__, error)))
        else:
            msg = _message(obj, pickled)
        msg.put(slot, 0, not msg.fits(), _RAISED if error is not None else None)
    core.bcast(slot, SLOT, root)
    return bcast_finish(core, slot, msg, obj, root, copy_root, error)


def bcast_finish(core, slot, msg, obj, root, copy_root=True, error=None):
    """bcast after its slot (a bytearray) came: the root's message msg (None
    elsewhere) or the frames that follow, and the result."""
    size, rank = core.size, core.rank
    status, nframes, len0, _, follow = _HDR.unpack_from(slot)
    if status == _FAILED:
        _raise_failures("bcast", [r == root for r in range(size)],
                        msg.error if rank == root else None)
    if rank == root:
        if follow:
            for f, n in zip(msg.frames, msg.lens):
                core.bcast(f, n, root)
        if error is not None:
            raise error
        if not copy_root:
            return obj
        return _load(memoryview(msg.frames[0]), nframes, [_copy(b) for b in msg.frames[1:]])
    if follow:
        f0 = _alloc(len0)
        core.bcast(f0, len0, root)
        oob = []
        for n in _oob_lens(f0, nframes):
            b = _alloc(n)
            core.bcast(b, n, root)
            oob.append(b)
        result = _load(f0, nframes, oob)
    else:
        result = _load(_slot_frame(slot, 0, len0), 1, None)
    if status == _RAISED:
        raise result
    return result


def _exchange(core, msg):
    """Every rank's slot, by an engine allgather: (slots, statuses, frames,
    len0s, follow: whether the frames come in a second step)."""
    size = core.size
    mine = bytearray(SLOT)
    msg.put(mine, 0, not msg.fits())
    slots = bytearray(SLOT * size)
    core.allgather(mine, SLOT, slots, _slot_counts(size), None, False)
    return _rows(slots, size)


def _move(core, root, i, sendbuf, nbytes, counts, displs, total):
    """Frame i of every rank to root (None: to everyone); the receive buffer."""
    if root is None:
        rbuf = _alloc(total)
        core.allgather(sendbuf, nbytes, rbuf, counts, displs, True)
    elif counts is not None:
        rbuf = _alloc(total)
        core.gather(sendbuf, nbytes, rbuf, counts, displs, root, True)
    else:
        rbuf = None
        core.gather(sendbuf, nbytes, None, None, None, root, True)
    return rbuf


def _gather_frames(core, msg, nframes, len0s, root):
    """Frames of every rank to root (root None: to everyone, allgather).
    Returns everyone's object at the receivers, None elsewhere."""
    size = core.size
    receive = root is None or core.rank == root
    displs0, total = _layout(len0s, False)
    buf0 = _move(core, root, 0, msg.frames[0], msg.lens[0],
                 len0s if receive else None, displs0, total)
    if not receive:
        for i in range(1, max(nframes)):
            f, n = (msg.frames[i], msg.lens[i]) if i < len(msg.frames) else (_EMPTY, 0)
            _move(core, root, i, f, n, None, None, 0)
        return None
    f0s = [buf0[d:d + c] for d, c in zip(displs0, len0s)]
    mframes = max(nframes)
    if mframes == 1:
        return [_load(f0, 1, None) for f0 in f0s]
    lens = [_oob_lens(f0s[r], nframes[r]) for r in range(size)]
    oob = [[] for _ in range(size)]
    for i in range(1, mframes):
        f, n = (msg.frames[i], msg.lens[i]) if i < len(msg.frames) else (_EMPTY, 0)
        counts = [lens[r][i - 1] if i < nframes[r] else 0 for r in range(size)]
        displs, total = _layout(counts, True)
        buf = _move(core, root, i, f, n, counts, displs, total)
        for r in range(size):
            if i < nframes[r]:
                oob[r].append(buf[displs[r]:displs[r] + counts[r]])
    return [_load(f0s[r], nframes[r], oob[r]) for r in range(size)]


def _gathered(core, what, obj, root, pickled=None):
    """Everyone's object at root (None: at every rank), None elsewhere: one
    allgather of slots, and the frames after it if any did not fit."""
    msg = _message(obj, pickled)
    return gathered_finish(core, what, msg, _exchange(core, msg), root)


def _rows(slots, size):
    """The exchange of _exchange read from every rank's slot in slots."""
    rows = [_HDR.unpack_from(slots, r * SLOT) for r in range(size)]
    return (slots, [h[0] for h in rows], [h[1] for h in rows], [h[2] for h in rows],
            any(h[4] for h in rows))


def gathered_finish(core, what, msg, exchange, root):
    """_gathered after the slots' exchange: the frames if any did not fit."""
    slots, statuses, nframes, len0s, follow = exchange
    _raise_failures(what, statuses, msg.error)
    if follow:
        return _gather_frames(core, msg, nframes, len0s, root)
    if root is not None and core.rank != root:
        return None
    return [_load(_slot_frame(slots, r, n), 1, None) for r, n in enumerate(len0s)]


def gather(core, obj, root, pickled=None):
    """mpi4py's gather: the list of everyone's object at root, None elsewhere."""
    return _gathered(core, "gather", obj, root, pickled)


def allgather(core, obj, pickled=None):
    """mpi4py's allgather: the list of everyone's object."""
    return _gathered(core, "allgather", obj, None, pickled)


def _sender_slots(msgs, error, size):
    """A scatter root's or an alltoall sender's slots, one per destination,
    each saying whether frames follow (any of its messages did not fit)."""
    slots = bytearray(SLOT * size)
    if error is not None:
        for r in range(size):
            _HDR.pack_into(slots, r * SLOT, _FAILED, 0, 0, 0, 0)
        return slots, False
    follow = not all(m.fits() for m in msgs)
    for r, m in enumerate(msgs):
        m.put(slots, r * SLOT, follow)
    return slots, follow


def scatter(core, sendobj, root, pickled=None):
    """mpi4py's scatter: item i of root's sequence (of exactly size items, or
    None: None for everyone) to rank i."""
    size = core.size
    slot = bytearray(SLOT)
    msgs = error = None
    if core.rank == root:
        msgs, error = _messages(sendobj, size, pickled)
        slots, _ = _sender_slots(msgs, error, size)
        core.scatter(slots, _slot_counts(size), None, slot, SLOT, root, False)
    else:
        core.scatter(None, None, None, slot, SLOT, root, False)
    return scatter_finish(core, slot, msgs, error, root)


def scatter_finish(core, slot, msgs, error, root):
    """scatter after this rank's slot came: the block that follows, if any."""
    size, rank = core.size, core.rank
    status, nframes, len0, packed, follow = _HDR.unpack_from(slot)
    if status != _OK:
        _raise_failures("scatter", [r == root for r in range(size)], error)
    if not follow:
        return _load(_slot_frame(slot, 0, len0), 1, None)
    if rank == root:
        block, counts, displs = _pack(msgs)
        core.scatter(block, counts, displs, None, 0, root, True)    # my block stays in place
        mine = block[displs[root]:displs[root] + counts[root]]
    else:
        mine = _alloc(packed)
        core.scatter(None, None, None, mine, packed, root, True)
    return _unpack(mine, nframes, len0)


def alltoall(core, sendobj, pickled=None):
    """mpi4py's alltoall: item j of rank i's sequence (size items, or None)
    becomes item i of rank j's result."""
    size = core.size
    msgs, error = _messages(sendobj, size, pickled)
    sslots, _ = _sender_slots(msgs, error, size)
    rslots = bytearray(SLOT * size)
    counts = _slot_counts(size)
    core.alltoall(sslots, counts, None, rslots, counts, None, False)
    return alltoall_finish(core, rslots, msgs, error)


def alltoall_finish(core, rslots, msgs, error):
    """alltoall after the slots came: the blocks that follow, if any."""
    size = core.size
    rows = [_HDR.unpack_from(rslots, r * SLOT) for r in range(size)]
    _raise_failures("alltoall", [h[0] for h in rows], error)
    if not any(h[4] for h in rows):
        return [_load(_slot_frame(rslots, r, h[2]), 1, None) for r, h in enumerate(rows)]
    block, scounts, sdispls = _pack(msgs)
    rcounts = [h[3] for h in rows]
    rdispls, total = _layout(rcounts, True)
    rbuf = _alloc(total)
    core.alltoall(block, scounts, sdispls, rbuf, rcounts, rdispls, True)
    return [_unpack(rbuf[d:d + c], h[1], h[2]) for d, c, h in zip(rdispls, rcounts, rows)]


# ----------------------------------------------------------------- reductions

def _fold(items, op):
    """op over items in mpi4py's order (binomial tree or left fold)."""
    if not _TREE:
        result = items[0]
        for x in items[1:]:
            result = op(result, x)
        return result
    n, mask = len(items), 1
    while mask < n:
        for r in range(0, n - mask, 2 * mask):
            items[r] = op(items[r], items[r + mask])
        mask <<= 1
    return items[0]


def reduce(core, obj, op, root, pickled=None):
    """mpi4py's reduce: the reduction at root, None elsewhere."""
    items = gather(core, obj, root, pickled)
    if items is None:
        return None
    return _fold(items, op)


def allreduce(core, obj, op, pickled=None):
    """mpi4py's allreduce: the reduction on every rank."""
    msg = _message(obj, pickled)
    return allreduce_finish(core, msg, _exchange(core, msg), op)


def allreduce_finish(core, msg, exchange, op):
    """allreduce after the slots' exchange."""
    slots, statuses, nframes, len0s, follow = exchange
    _raise_failures("allreduce", statuses, msg.error)
    # small: everyone gets everything and folds (the same calls in the same
    # order on every rank, so the same result -- or exception)
    if not follow:
        return _fold([_load(_slot_frame(slots, r, n), 1, None) for r, n in enumerate(len0s)], op)
    if max(nframes) == 1 and sum(len0s) <= _SMALL_ALLREDUCE:
        return _fold(_gather_frames(core, msg, nframes, len0s, None), op)
    items = _gather_frames(core, msg, nframes, len0s, 0)
    result = error = None
    if core.rank == 0:
        try:
            result = _fold(items, op)
        except BaseException as exc:
            error = exc
        items = None
    return bcast(core, result, 0, copy_root=False, error=error)
