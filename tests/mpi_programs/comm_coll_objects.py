"""Object (pickle-based) collectives of pgascol.Comm (mpi4py's test_cco_obj):
bcast, reduce, allreduce, gather, scatter, allgather, alltoall against
mpi4py's on a plain duplicate of COMM_WORLD: the same calls on the same
objects must give equal results (values, dtypes, shapes, memory order,
types), numpy arrays must come back writable and independent of the
sender's, and stats must show path "shm" on one node, "mpi" on several (hosts,
or virtual nodes of PGASCOL_NODE_SIZE). Run by tests/test_mpi_programs.py with 1, 2, 3, 4 and 8
ranks, and on virtual nodes."""
import contextlib
import functools
import pickle
import threading

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import NodeTeam
from pgascol.comm import msgpickle
from pgascol.errors import ArgumentError
from tests.mpi_programs import detected_nodes
from tests.mpi_programs import raises as _raises

WORLD = MPI.COMM_WORLD
NATIVE = WORLD.Dup()
PG = pgascol.Comm(WORLD.Dup())
P, ME = PG.Get_size(), PG.Get_rank()
HIER = detected_nodes(PG)[1]
LAST = P - 1
ROOTS = sorted({0, LAST})
MiB = 1 << 20


# ------------------------------------------------------------------ helpers

def same(a, b, where="obj"):
    """Deep equality of two results, numpy arrays bitwise with dtype, shape and order."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype, a.shape, b.shape)
        assert a.flags.c_contiguous == b.flags.c_contiguous, where
        assert a.flags.f_contiguous == b.flags.f_contiguous, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), (where, a.ravel()[:5], b.ravel()[:5])
    elif isinstance(a, dict):
        assert list(a) == list(b), (where, list(a), list(b))
        for k in a:
            same(a[k], b[k], "%s[%r]" % (where, k))
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (where, i))
    elif isinstance(a, float):
        assert a == b or (a != a and b != b), (where, a, b)     # bitwise for the sums below
        assert np.float64(a).tobytes() == np.float64(b).tobytes(), (where, a, b)
    else:
        assert a == b, (where, a, b)


def both(fn):
    """fn(comm) on pgascol and on mpi4py; the results must be equal; returns pgascol's."""
    mine = fn(PG)
    ref = fn(NATIVE)
    same(mine, ref)
    return mine


def arrays_of(obj):
    """Every numpy array inside obj."""
    if isinstance(obj, np.ndarray):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from arrays_of(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from arrays_of(v)


def writable(obj):
    """Every array in obj is writable (write to it, and undo) and aligned."""
    n = 0
    for a in arrays_of(obj):
        assert a.flags.writeable and a.flags.aligned, (a.dtype, a.shape, a.flags)
        if a.size:
            flat = a.reshape(-1, order="A")
            old = flat[0].copy()
            flat[0] = 1
            flat[0] = old
        n += 1
    return n


def big(rank, salt=0, mib=3):
    """A dict of numpy arrays of about mib MiB in all (out of band), and small things."""
    n = mib * MiB // 8 // 3
    return {"f8": np.arange(n, dtype=np.float64) * (rank + 1) + salt,
            "i4": (np.arange(n, dtype=np.int32) + rank * 7 + salt) % 1000,
            "c16": np.full(n // 2, complex(rank, salt)),
            "fortran": np.asfortranarray(np.arange(600 * 100, dtype=np.int64).reshape(600, 100) + rank),
            "small": np.arange(5, dtype=np.uint8),
            "meta": {"rank": rank, "salt": salt, "name": "r%d" % rank}}


def noncontig(rank, salt=0):
    """Non-contiguous arrays (serialised in band), large and small."""
    base = np.arange(400 * 1000, dtype=np.float64).reshape(400, 1000) + rank + salt
    return [base[::2, ::3], base[:, 5], base.T[::7], np.arange(10)[::2] + rank]


def nested(rank, salt=0):
    return {"t": (rank, "x" * (rank + 1), [None, 1.5, {"deep": [rank, (salt,)]}]),
            "s": {1, 2, 3},
            "b": b"\x00\x01" * (rank + 1),
            "ba": bytearray(b"z" * 300000),          # out of band, comes back a bytearray
            "empty": np.empty((0, 3)), "scalar": np.float32(rank),
            "0d": np.array(rank + 0.5), "bool": np.array([True, False, rank % 2 == 0]),
            "frozen": frozenset({rank})}


def payloads(rank, salt=0):
    """(label, object) pairs every method is tried with."""
    return [("int", rank * 10 + salt), ("str", "hello from %d/%d" % (rank, salt)),
            ("None", None), ("nested", nested(rank, salt)), ("noncontig", noncontig(rank, salt)),
            ("big", big(rank, salt))]


@functools.lru_cache(maxsize=None)
def expected(label, rank, salt):
    """payloads(rank, salt)[label] as a pickle round trip gives it back
    (non-contiguous arrays come back contiguous)."""
    return pickle.loads(pickle.dumps(dict(payloads(rank, salt))[label], protocol=5))


# ------------------------------------------------------------------ one method at a time

def test_bcast():
    for root in ROOTS:
        for label, obj in payloads(root, 1):
            mine = obj if ME == root else "ignored"
            got = both(lambda c: c.bcast(mine, root=root))
            writable(got)
            same(got, expected(label, root, 1), label)      # what the root had
            if ME == root:
                for a, b in zip(arrays_of(got), arrays_of(obj)):
                    if a.size:
                        assert not np.shares_memory(a, b), label    # a copy, as with mpi4py


def test_gather():
    for root in ROOTS:
        for label, obj in payloads(ME, 2):
            got = both(lambda c: c.gather(obj, root=root))
            if ME == root:
                assert len(got) == P
                writable(got)
                for r in range(P):
                    same(got[r], expected(label, r, 2), (label, r))
            else:
                assert got is None


def test_allgather():
    for label, obj in payloads(ME, 3):
        got = both(lambda c: c.allgather(obj))
        assert len(got) == P
        assert writable(got) == sum(len(list(arrays_of(x))) for x in got)
        for r in range(P):
            same(got[r], expected(label, r, 3), (label, r))


def test_scatter():
    for root in ROOTS:
        for label, _ in payloads(0):
            seq = [dict(payloads(r, 4))[label] for r in range(P)] if ME == root else None
            got = both(lambda c: c.scatter(seq, root=root))
            writable(got)
            same(got, expected(label, ME, 4), label)
    # a generator and a tuple are sequences too; None scatters None
    gen = (i * i for i in range(P)) if ME == 0 else None
    assert PG.scatter(gen, root=0) == ME * ME
    assert both(lambda c: c.scatter(tuple(range(P)) if ME == LAST else None, root=LAST)) == ME
    assert both(lambda c: c.scatter(None, root=0)) is None


def test_alltoall():
    def item(src, dst, label):
        if label == "big":
            return big(src, dst, mib=1)     # size x size of them
        return expected(label, src, dst)
    for label, _ in payloads(0):
        seq = [item(ME, j, label) for j in range(P)]
        got = both(lambda c: c.alltoall(seq))
        assert len(got) == P
        writable(got)
        for i in range(P):
            same(got[i], item(i, ME, label), (label, i))
    assert both(lambda c: c.alltoall(None)) == [None] * P
    assert PG.alltoall(iter(range(ME * P, ME * P + P))) == [i * P + ME for i in range(P)]


# Ranks with different numbers and sizes of out-of-band buffers (and none).

def uneven_frames(rank, salt=0):
    return [np.full(300000 + 1000 * k + rank, rank * 10 + k + salt, np.int16) for k in range(rank % 4)]


def test_gather_uneven_out_of_band_frames():
    for root in ROOTS:
        got = both(lambda c: c.gather(uneven_frames(ME), root=root))
        if ME == root:
            for r in range(P):
                same(got[r], uneven_frames(r))


def test_bcast_uneven_out_of_band_frames():
    for root in ROOTS:
        got = both(lambda c: c.bcast(uneven_frames(root) if ME == root else None, root=root))
        same(got, uneven_frames(root))


def test_scatter_uneven_out_of_band_frames():
    for root in ROOTS:
        got = both(lambda c: c.scatter([uneven_frames(r, root) for r in range(P)] if ME == root else None,
                                       root=root))
        same(got, uneven_frames(ME, root))


def test_allgather_uneven_out_of_band_frames():
    got = both(lambda c: c.allgather(uneven_frames(ME)))
    for r in range(P):
        same(got[r], uneven_frames(r))


def test_alltoall_uneven_out_of_band_frames():
    got = both(lambda c: c.alltoall([uneven_frames(ME, j) for j in range(P)]))
    for i in range(P):
        same(got[i], uneven_frames(i, ME))


# Around the slot (pgascol.comm.msgpickle.SLOT): in one call, messages that
# travel whole in the first step and messages whose frame follows it.

def near_slot(rank, salt=0):
    """bytes whose pickle is 1 byte under, 1 byte over, or exactly what a slot holds."""
    fits = msgpickle.SLOT - msgpickle._HB
    target = fits + (-1, 1, 0)[(rank + salt) % 3]
    n = target - (len(MPI.pickle.dumps(b"y" * 300)) - 300)
    obj = bytes([65 + (rank + salt) % 26]) * n
    assert len(MPI.pickle.dumps(obj)) == target     # the pickle grows with its payload here
    return obj


def test_every_method_around_the_slot():
    for root in ROOTS:
        same(both(lambda c: c.bcast(near_slot(root) if ME == root else None, root=root)), near_slot(root))
        got = both(lambda c: c.gather(near_slot(ME), root=root))
        assert got == ([near_slot(r) for r in range(P)] if ME == root else None)
        got = both(lambda c: c.scatter([near_slot(r, root) for r in range(P)] if ME == root else None,
                                       root=root))
        assert got == near_slot(ME, root)
        got = both(lambda c: c.reduce(near_slot(ME), op=MPI.SUM, root=root))
        assert got == (b"".join(near_slot(r) for r in range(P)) if ME == root else None)
    assert both(lambda c: c.allgather(near_slot(ME))) == [near_slot(r) for r in range(P)]
    assert both(lambda c: c.alltoall([near_slot(ME, j) for j in range(P)])) == [near_slot(i, ME) for i in range(P)]
    both(lambda c: c.allreduce(near_slot(ME), op=MPI.SUM))


def four_kinds(rank, salt=0):
    """A list whose pickle, by (rank + salt) % 4: travels in the slot; is one
    in-band frame after it; has out-of-band frames; is one in-band frame that
    alone puts an allreduce over its 256 KiB of frames."""
    kind = (rank + salt) % 4
    fill = 65 + (rank + salt) % 26
    return [(rank, "s", 1.5), bytes([fill]) * 2000, np.full(300000, rank + salt, np.int16),
            bytes([fill]) * 270000][kind:kind + 1]


def test_every_method_with_messages_of_every_kind_in_one_call():
    # pgascol.Comm moves a message that is one in-band frame itself and hands
    # the others to msgpickle.py, in the same engine collectives
    for root in ROOTS:
        same(both(lambda c: c.bcast(four_kinds(root) if ME == root else None, root=root)), four_kinds(root))
        got = both(lambda c: c.gather(four_kinds(ME), root=root))
        if ME == root:
            same(got, [four_kinds(r) for r in range(P)])
        got = both(lambda c: c.scatter([four_kinds(r, root) for r in range(P)] if ME == root else None,
                                       root=root))
        same(got, four_kinds(ME, root))
        got = both(lambda c: c.reduce(four_kinds(ME), op=MPI.SUM, root=root))
        if ME == root:
            same(got, sum((four_kinds(r) for r in range(P)), []))
    same(both(lambda c: c.allgather(four_kinds(ME))), [four_kinds(r) for r in range(P)])
    same(both(lambda c: c.alltoall([four_kinds(ME, j) for j in range(P)])), [four_kinds(i, ME) for i in range(P)])
    same(both(lambda c: c.allreduce(four_kinds(ME), op=MPI.SUM)), sum((four_kinds(r) for r in range(P)), []))
    for small in range(2):      # every rank's of one kind: the fold of the gathered frames
        same(both(lambda c: c.allreduce(four_kinds(small, 1), op=MPI.SUM)), four_kinds(small, 1) * P)


class CountingCore:
    """A node team's engine, counting the collectives a method makes on it."""

    def __init__(self, core):
        self._core, self.calls = core, 0

    def __getattr__(self, name):
        attr = getattr(self._core, name)
        if name not in ("bcast", "gather", "scatter", "allgather", "alltoall"):
            return attr

        def counted(*args):
            self.calls += 1
            return attr(*args)
        return counted


def test_small_objects_take_one_engine_collective():
    if HIER:
        return      # across nodes these methods are mpi4py's
    team = NodeTeam(WORLD.Dup())
    try:
        core = CountingCore(team.core)
        small, large = (ME, "x", 1.5), near_slot(1)    # near_slot(1): one byte over the slot
        for obj, calls in ((small, 1), (large, 2)):
            for method in (lambda: msgpickle.bcast(core, obj, LAST), lambda: msgpickle.gather(core, obj, 0),
                           lambda: msgpickle.allgather(core, obj), lambda: msgpickle.allreduce(core, obj, max),
                           lambda: msgpickle.scatter(core, [obj] * P if ME == 0 else None, 0),
                           lambda: msgpickle.alltoall(core, [obj] * P)):
                core.calls = 0
                method()
                assert core.calls == calls, (obj, calls, core.calls)
    finally:
        team.free()


# ------------------------------------------------------------------ reductions

# Floats whose sum depends on the order of the additions.
FLOATS = [1e16, 1.0, -1e16, 3.0, 0.1, -7.5e15, 2.5, 1e-3]


def predefined_op_cases():
    """(label, this rank's object, operator) of the tests of MPI's operators."""
    vec = np.array([FLOATS[(ME + k) % len(FLOATS)] for k in range(6)]) * (ME + 1)
    return [
        ("SUM int", ME * 3 + 1, MPI.SUM),
        ("SUM float", FLOATS[ME % len(FLOATS)] * (1 + ME // len(FLOATS)), MPI.SUM),
        ("SUM array", vec, MPI.SUM),
        ("SUM big array", np.full(MiB // 8 + 3, FLOATS[ME % len(FLOATS)]), MPI.SUM),
        ("SUM list", [ME, "r%d" % ME], MPI.SUM),        # + concatenates
        ("SUM str", "<%d>" % ME, MPI.SUM),
        ("SUM tuple", (ME,), MPI.SUM),
        ("PROD", ME + 1, MPI.PROD),
        ("PROD array", np.arange(1, 5) + ME, MPI.PROD),
        ("MAX", (ME * 7) % 5, MPI.MAX),
        ("MAX str", "s%d" % ((ME * 3) % 4), MPI.MAX),
        ("MIN", (ME * 7) % 5 - 2, MPI.MIN),
        ("MIN list", [ME % 2, -ME], MPI.MIN),
        ("LAND", ME != 1, MPI.LAND),
        ("LOR", ME == LAST, MPI.LOR),
        ("LXOR", ME % 2 == 0, MPI.LXOR),
        ("BAND", 0xFF ^ (1 << ME), MPI.BAND),
        ("BOR", 1 << ME, MPI.BOR),
        ("BXOR", ME * 5, MPI.BXOR),
        ("BOR array", np.arange(4, dtype=np.int64) << ME, MPI.BOR),
        ("MAXLOC", ((ME * 7) % 3, ME), MPI.MAXLOC),
        ("MINLOC", ((ME * 7) % 3, ME), MPI.MINLOC),
        ("MAXLOC tie", (5, P - ME), MPI.MAXLOC),
        ("None", None, MPI.NO_OP),
    ]


def test_reduce_predefined_ops():
    for label, obj, op in predefined_op_cases():
        for root in ROOTS:
            got = both(lambda c: c.reduce(obj, op=op, root=root))
            if ME != root:
                assert got is None, label
    # default op: SUM
    assert both(lambda c: c.reduce(ME, root=LAST)) == (P * (P - 1) // 2 if ME == LAST else None)


def test_allreduce_predefined_ops():
    for label, obj, op in predefined_op_cases():
        got = both(lambda c: c.allreduce(obj, op=op))
        assert got is not None or label == "None", label
        writable(got)
    assert both(lambda c: c.allreduce(ME)) == P * (P - 1) // 2     # default op: SUM


def _add_dicts(a, b):
    return {k: a[k] + b[k] for k in a}


def _dict_of_arrays():
    obj = big(ME, mib=2)
    obj.pop("meta")
    return obj


def test_reduce_dicts_of_arrays():
    obj = _dict_of_arrays()
    for root in ROOTS:
        got = both(lambda c: c.reduce(obj, op=_add_dicts, root=root))     # any callable
        if ME == root:
            writable(got)
            assert np.array_equal(got["small"], np.arange(5, dtype=np.uint8) * P)


def test_allreduce_dicts_of_arrays():
    got = both(lambda c: c.allreduce(_dict_of_arrays(), op=_add_dicts))
    writable(got)
    assert np.array_equal(got["f8"], np.arange(got["f8"].size) * (P * (P + 1) // 2))


@contextlib.contextmanager
def user_ops():
    """(object, operator) pairs: MPI.Op.Create of Python functions, which
    mpi4py calls as fn(a, b, None) on the objects; none is associative."""
    sub = MPI.Op.Create(lambda a, b, dt: a - b, commute=False)
    concat = MPI.Op.Create(lambda a, b, dt: a + b, commute=False)
    try:
        yield ((float(ME * ME + 1), sub), (ME * 10 + 1, sub), (np.arange(3.0) * ME, sub),
               ([ME], concat), ("%d," % ME, concat))
    finally:
        sub.Free()
        concat.Free()


def test_reduce_user_ops():
    with user_ops() as cases:
        for obj, op in cases:
            for root in ROOTS:
                both(lambda c: c.reduce(obj, op=op, root=root))
    # a plain callable, not associative either
    both(lambda c: c.reduce(ME + 1, op=lambda a, b: (a, b), root=LAST))


def test_allreduce_user_ops():
    with user_ops() as cases:
        for obj, op in cases:
            both(lambda c: c.allreduce(obj, op=op))
    # a plain callable, not associative either
    both(lambda c: c.allreduce(ME + 1, op=lambda a, b: a * 2 + b))


def test_inputs_not_modified_and_results_fresh():
    # an op that modifies its first argument in place (list +=) must not touch
    # the caller's objects (mpi4py reduces copies)
    def iadd(a, b):
        a += b
        return a
    mine = [ME]
    got = both(lambda c: c.allreduce(mine, op=iadd))
    assert mine == [ME] and got == list(range(P))
    arr = np.full(MiB // 8, float(ME))
    got = PG.allreduce(arr, op=iadd)
    assert np.all(arr == ME) and np.all(got == P * (P - 1) / 2)
    got[0] = -1
    assert arr[0] == ME


def _all_methods(c, obj, reductions=True):
    """Every lowercase method once on obj (roots 0 and last)."""
    out = [c.bcast(obj, root=LAST), c.gather(obj, root=0), c.allgather(obj),
           c.scatter([obj] * P if ME == 0 else None, root=0), c.alltoall([obj] * P)]
    if reductions:
        out += [c.reduce([obj], root=LAST), c.allreduce([obj])]
    return out


def test_custom_pickler_and_threshold():
    """mpi4py's MPI.pickle is what serialises: a replaced dumps/loads (here one
    without buffer_callback, whose loads tags what it returns -- not for the
    reductions: how often mpi4py's own reduce unpickles is its business) and
    THRESHOLD."""
    def dumps(obj, protocol=None):
        return pickle.dumps(obj, protocol)

    def loads(data):
        return ("custom", pickle.loads(data))
    obj = {"arr": np.arange(100000.0) + ME, "t": (1, "x")}
    try:
        MPI.pickle.__init__(dumps, loads)
        got = both(lambda c: _all_methods(c, obj, reductions=False))
        assert got[0][0] == "custom"
    finally:
        MPI.pickle.__init__()
    saved = MPI.pickle.THRESHOLD
    try:
        MPI.pickle.THRESHOLD = 0       # every buffer out of band, empty ones too
        both(lambda c: _all_methods(c, nested(ME)))
        MPI.pickle.THRESHOLD = 1 << 40     # none
        both(lambda c: _all_methods(c, big(ME, mib=1)))
    finally:
        MPI.pickle.THRESHOLD = saved


class Counted:
    """Counts how often it is pickled."""
    pickled = 0

    def __reduce__(self):
        Counted.pickled += 1
        return (Counted, ())


def test_each_item_is_pickled_once_whichever_path_moves_it():
    # one item with out-of-band frames takes the call to msgpickle.py, which
    # must not pickle again what the C path pickled
    def items():
        return [Counted() for _ in range(P - 1)] + [np.full(300000, ME, np.int16)]
    Counted.pickled = 0
    got = PG.scatter(items() if ME == 0 else None, root=0)
    assert Counted.pickled == (P - 1 if ME == 0 else 0), Counted.pickled
    assert isinstance(got, Counted) if ME < P - 1 else np.array_equal(got, np.full(300000, 0, np.int16))
    Counted.pickled = 0
    got = PG.alltoall(items())
    assert Counted.pickled == P - 1, Counted.pickled
    for i, x in enumerate(got):     # item ME of rank i's sequence
        assert np.array_equal(x, np.full(300000, i, np.int16)) if ME == P - 1 else isinstance(x, Counted)


def test_an_unpickler_that_keeps_a_view_of_what_it_received():
    """pgascol.Comm receives frames into areas it keeps between calls (the
    objects unpickled from a frame copy its bytes); an unpickler that returns
    a view of its input instead must still see its data after the next call.
    (Across nodes these are mpi4py's own methods, which do not promise it.)"""
    if HIER:
        return

    def loads(data):
        return memoryview(data)         # a view of the received frame, kept
    try:
        MPI.pickle.__init__(lambda obj, protocol=None: bytes(obj), loads)
        for method in (lambda c, x: c.bcast(x, root=0), lambda c, x: c.allgather(x),
                       lambda c, x: c.scatter([x] * P if ME == 0 else None, root=0),
                       lambda c, x: c.alltoall([x] * P)):
            first = method(PG, bytes([1]) * 3000)
            second = method(PG, bytes([2]) * 3000)
            for got, fill in ((first, 1), (second, 2)):
                for view in (got if isinstance(got, list) else [got]):
                    assert bytes(view) == bytes([fill]) * 3000
    finally:
        MPI.pickle.__init__()


# ------------------------------------------------------------------ misuse

def test_misuse_alone_like_mpi4py():
    """On one rank (COMM_SELF, so mpi4py does not hang): the same exceptions."""
    own = pgascol.Comm(MPI.COMM_SELF)
    ref = MPI.COMM_SELF.Dup()
    try:
        calls = (lambda c: c.scatter([1, 2], root=0), lambda c: c.alltoall([]),
                 lambda c: c.scatter(5, root=0), lambda c: c.alltoall(7),
                 lambda c: c.scatter({"a": 1, "b": 2}, root=0),
                 lambda c: c.bcast(threading.Lock()), lambda c: c.gather(lambda: 1),
                 lambda c: c.allgather(threading.Lock()), lambda c: c.alltoall([threading.Lock()]),
                 lambda c: c.reduce(threading.Lock()), lambda c: c.allreduce([threading.Lock()]))
        for i, call in enumerate(calls):
            outcome = []
            for c in (own, ref):
                try:
                    call(c)
                except Exception as e:
                    outcome.append(e)
                else:
                    outcome.append(None)
            mine, theirs = outcome
            assert theirs is not None, i
            assert type(mine) is type(theirs) and str(mine) == str(theirs), (i, mine, theirs)
        assert own.allgather(ME) == [ME]
        assert own.bcast(None) is None
    finally:
        own.Free()
        ref.Free()


def test_bad_root_like_mpi4py():
    """A root out of range: MPI.Exception with error class ERR_ROOT, as mpi4py."""
    for root in (P, -1, -P):
        for c in (PG, NATIVE):
            for call in (lambda: c.bcast(1, root=root), lambda: c.gather(1, root=root),
                         lambda: c.scatter(None, root=root), lambda: c.reduce(1, root=root)):
                e = _raises(MPI.Exception, call)
                assert e.Get_error_class() == MPI.ERR_ROOT, e
    assert both(lambda c: c.bcast(ME, root=LAST)) == LAST


def test_misuse_raises_everywhere_and_comm_stays_usable():
    """Wrong sequence lengths and unpicklable objects: the rank at fault raises
    mpi4py's exception, the others ArgumentError (mpi4py would leave them
    blocked), and the communicator goes on."""
    for root in ROOTS:
        if ME == root:
            e = _raises(ValueError, lambda: PG.scatter(list(range(P + 1)), root=root))
            assert str(e) == "expecting %d items, got %d" % (P, P + 1), e
        else:
            e = _raises(ArgumentError, lambda: PG.scatter(None, root=root))
            assert "rank %d" % root in str(e)
        assert PG.scatter(list(range(P)) if ME == root else None, root=root) == ME
    if ME == LAST:
        _raises(ValueError, lambda: PG.alltoall([0] * (P + 2)))
    else:
        _raises(ArgumentError, lambda: PG.alltoall(list(range(P))))
    if ME == 0:
        _raises(TypeError, lambda: PG.scatter(3, root=0))       # not iterable
    else:
        _raises(ArgumentError, lambda: PG.scatter(None, root=0))
    lock = threading.Lock()
    for call, bad in ((lambda o: PG.bcast(o, root=LAST), ME == LAST),
                      (lambda o: PG.gather(o, root=0), ME == LAST),
                      (lambda o: PG.allgather(o), ME == 0),
                      (lambda o: PG.reduce(o, root=0), ME == LAST),
                      (lambda o: PG.allreduce(o), ME == 0)):
        if bad:
            e = _raises(Exception, lambda: call(lock))
            assert not isinstance(e, ArgumentError) and "pickle" in str(e), e
        else:
            _raises(ArgumentError, lambda: call(ME))
    # an op that raises: every rank gets the exception (small and large objects)
    # (on one rank there is nothing to combine: no call of op)
    for obj in ({"k": ME}, {"k": np.zeros(MiB)}):
        if P > 1:
            e = _raises(TypeError, lambda: PG.allreduce(obj, op=MPI.SUM))
            assert "dict" in str(e), e
        else:
            same(PG.allreduce(obj, op=MPI.SUM), obj)
    if ME == 0 and P > 1:
        _raises(TypeError, lambda: PG.reduce({ME}, op=MPI.SUM, root=0))
    else:
        assert PG.reduce({ME}, op=MPI.SUM, root=0) == ({ME} if P == 1 else None)
    # still usable, and in step
    assert both(lambda c: c.allgather(ME)) == list(range(P))
    assert both(lambda c: c.bcast(big(1), root=LAST))["meta"]["rank"] == 1
    assert both(lambda c: c.alltoall([(ME, j) for j in range(P)])) == [(j, ME) for j in range(P)]


# ------------------------------------------------------------------ statistics

def test_stats_paths():
    c = PG.Dup()
    try:
        names = ("bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall")
        c.bcast(big(0) if ME == 0 else None)
        c.reduce(ME)
        c.allreduce(np.ones(MiB // 8))  # the large form (gather, fold, bcast)
        c.allreduce(ME)                 # the small form (allgather, fold)
        c.gather(ME)
        c.scatter(list(range(P)) if ME == 0 else None)
        c.allgather(noncontig(ME))
        c.alltoall([big(ME, j, mib=1) for j in range(P)])
        path = "mpi" if HIER else "shm"
        want = {n: {path: 2 if n == "allreduce" else 1} for n in names}
        # the engine calls these made are not counted as the engine's own
        assert pgascol.stats(c) == want, pgascol.stats(c)
        if not HIER:
            x = np.zeros(4)
            c.Allreduce(MPI.IN_PLACE, x)
            s = pgascol.stats(c)
            assert sum(s["Allreduce"].values()) == 1 and set(s["Allreduce"]) <= {"inline", "cico", "cma"}, s
    finally:
        c.Free()
    s = pgascol.stats(PG)
    for n in ("bcast", "gather", "scatter", "allgather", "alltoall", "reduce", "allreduce"):
        if HIER:
            assert set(s[n]) == {"mpi"}, s
        else:   # the calls with a bad root went to MPI (for its error)
            assert s[n]["shm"] > 1 and set(s[n]) <= {"shm", "mpi"}, s
    assert pgascol.stats(NATIVE) == {}
