"""pgascol.Comm as an mpi4py communicator (mpi4py's test_comm): an
intracommunicator sharing its handle, constructors that return pgascol
communicators, subclasses, the GIL released while a call waits, what goes
to MPI, the pickle-based methods it inherits, statistics and Free. Run in
one launch after comm_coll_buffers.py, comm_coll_vectors.py and
comm_message_specs.py (see comm_coll_buffers.py), on their pgascol.Comm:
the statistics show their calls too."""

import numpy as np
from mpi4py import MPI

import pgascol
from tests.mpi_programs import assert_same as same
from tests.mpi_programs import both, data, detected_nodes, world_comms

WORLD = MPI.COMM_WORLD
NATIVE, PG = world_comms()
P, ME = PG.Get_size(), PG.Get_rank()
HIER = detected_nodes(PG)[1]


# ------------------------------------------------------------------ object model

def test_is_an_intracomm_sharing_the_handle():
    assert isinstance(PG, MPI.Intracomm) and isinstance(PG, pgascol.Comm)
    assert PG == WORLD            # same MPI handle
    assert PG.Get_group().Compare(WORLD.Get_group()) == MPI.IDENT
    # point-to-point on the same handle matches WORLD's
    if P > 1:
        if ME == 0:
            WORLD.send("hello", dest=1, tag=7)
        elif ME == 1:
            assert PG.recv(source=0, tag=7) == "hello"
    assert PG.allreduce(ME) == P * (P - 1) // 2   # inherited lowercase method


def test_constructors_return_pgascol_comms():
    d = PG.Dup()
    c = PG.Clone()
    s = PG.Split(ME % 2, -ME)
    t = PG.Split_type(MPI.COMM_TYPE_SHARED)
    g = PG.Create(PG.Get_group())
    h = PG.Create_group(PG.Get_group().Incl(list(range(0, P, 2)))) if ME % 2 == 0 else None
    for c_ in (d, c, s, t, g) + ((h,) if h is not None else ()):
        assert isinstance(c_, pgascol.Comm), type(c_)
        x = np.full(3, c_.Get_rank() + 1.0)
        y = np.empty(3)
        c_.Allreduce(x, y)
        n = c_.Get_size()
        assert np.all(y == n * (n + 1) / 2)
        assert pgascol.stats(c_)["Allreduce"]
    assert s.Get_size() == len(range(ME % 2, P, 2))
    assert s.Get_rank() == len(range(ME % 2, P, 2)) - 1 - ME // 2   # reversed key
    u = PG.Split(MPI.UNDEFINED if ME == 0 else 0)
    assert (u == MPI.COMM_NULL) == (ME == 0)
    for c_ in (d, c, s, t, g) + ((h,) if h is not None else ()) + (() if ME == 0 else (u,)):
        c_.Free()
    assert d == MPI.COMM_NULL and pgascol.stats(d) == {}


def test_subclasses_and_bare_instances():
    """A user's subclass of pgascol.Comm is accelerated too; an instance MPI
    makes without __init__ (no state) behaves as a plain communicator; a
    Comm takes no attributes of its own, like mpi4py's communicators."""
    class Mine(pgascol.Comm):
        pass
    m = Mine(WORLD.Dup())
    x = np.full(3, ME + 1.0)
    y = np.empty(3)
    m.Allreduce(x, y)
    assert np.all(y == P * (P + 1) / 2)
    assert pgascol.stats(m)["Allreduce"] != {}
    m.Free()
    bare = pgascol.Comm.__new__(pgascol.Comm)
    assert bare == MPI.COMM_NULL and pgascol.stats(bare) == {}
    try:
        PG.anything = 1
    except AttributeError:
        pass
    else:
        raise AssertionError("a Comm took an attribute")
# ------------------------------------------------------------------ waiting

def test_short_calls_release_the_gil_while_they_wait():
    """8-byte calls keep the GIL unless they must wait: a rank that waits
    for a late peer lets its other Python threads run."""
    import threading
    import time
    if P == 1:
        return
    for call in (lambda: PG.Barrier(), lambda: PG.Bcast(np.zeros(1), root=P - 1),
                 lambda: PG.Allreduce(MPI.IN_PLACE, np.zeros(1))):
        stamps = []
        stop = threading.Event()

        def tick():
            i = 0
            while not stop.is_set():
                i += 1
                if i % 1000 == 0:
                    stamps.append(time.monotonic())
        PG.Barrier()
        if ME == P - 1:
            time.sleep(0.5)                     # everyone else waits for this rank
            call()
        else:
            th = threading.Thread(target=tick)
            th.start()
            time.sleep(0.01)
            start = time.monotonic()
            call()
            end = time.monotonic()
            stop.set()
            th.join()
            # With the GIL held the thread could run only before the call or
            # after it returned (one switch interval, 5 ms).
            inside = [x for x in stamps if start + 0.05 < x < end - 0.05]
            assert end - start > 0.2 and inside, ("the waiting call held the GIL", end - start)


# ------------------------------------------------------------------ fallbacks to MPI

def test_fallbacks_give_mpi_results():
    """A user-defined operator goes to MPI (reductions on derived types:
    comm_message_specs.py; derived types in data movement run on pgascol:
    comm_datatypes_layouts.py)."""
    before = pgascol.stats(PG)
    def add(inbuf, inoutbuf, datatype):
        i = np.frombuffer(inbuf, dtype=np.float64)
        o = np.frombuffer(inoutbuf, dtype=np.float64)
        o += i
    myop = MPI.Op.Create(add, commute=True)
    try:
        def f(c):
            x = data(ME, 10)
            y = np.zeros(10)
            c.Allreduce(x, y, myop)                            # user-defined operator
            return y
        a, b = both(f)
        same(a, b, "fallbacks")
    finally:
        myop.Free()
    after = pgascol.stats(PG)
    assert after["Allreduce"].get("mpi", 0) > before.get("Allreduce", {}).get("mpi", 0)


# ------------------------------------------------------------------ pickle-based methods

def test_pickle_methods():
    for root in range(P):
        obj = {"a": np.arange(300000, dtype=np.float64) + root, "b": [1, "two", (3,)], "r": root} \
            if ME == root else None
        got = PG.bcast(obj, root=root)
        assert got["r"] == root and got["b"] == [1, "two", (3,)]
        assert np.array_equal(got["a"], np.arange(300000, dtype=np.float64) + root)
        got["a"][0] = -1       # writable, independent of the root's array
    assert PG.bcast(None) is None
    everyone = PG.allgather({"rank": ME, "arr": np.full(ME * 1000, ME, np.int32)})
    assert [d["rank"] for d in everyone] == list(range(P))
    assert all(np.all(d["arr"] == d["rank"]) and d["arr"].size == d["rank"] * 1000 for d in everyone)
    assert PG.gather(ME, root=0) == (list(range(P)) if ME == 0 else None)
    assert PG.scatter([i * i for i in range(P)] if ME == 0 else None, root=0) == ME * ME
    assert PG.alltoall([(ME, j) for j in range(P)]) == [(j, ME) for j in range(P)]
    assert PG.reduce(ME, op=MPI.SUM, root=0) == (P * (P - 1) // 2 if ME == 0 else None)


def test_stats_paths():
    PG.Allreduce(MPI.IN_PLACE, np.ones(4))    # one of its own, whatever ran before
    s = pgascol.stats(PG)
    if HIER:
        assert s["Allreduce"].get("hier"), s
        assert any(k.startswith("node:") for k in s), s
    else:
        engine = set(s["Allreduce"]) & {"inline", "cico", "cma"}
        assert engine, s
        assert s["bcast"] == {"shm": s["bcast"]["shm"]}
    assert pgascol.stats(NATIVE) == {}


def test_free_releases():
    c = PG.Dup()
    c.Barrier()
    c.Free()
    assert c == MPI.COMM_NULL
    assert pgascol.stats(c) == {}
