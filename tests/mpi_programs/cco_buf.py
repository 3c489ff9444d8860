"""pgascol.Comm under MPI: every buffer collective against the native
communicator on the same data, constructors, fallbacks, misuse, pickle-based
methods and statistics. Run by tests/test_comm.py with 1, 2, 3, 4, 8 ranks,
on one node and on virtual nodes of 1, 2 and 3 ranks (PGASCOL_NODE_SIZE).

Data are small integers, so sums are exact in every type and the results
must be bitwise identical to MPI's."""
import os

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import ArgumentError
from tests.mpi_programs import raises as _raises

WORLD = MPI.COMM_WORLD
NATIVE = WORLD.Dup()
PG = pgascol.Comm(WORLD)
P, ME = PG.Get_size(), PG.Get_rank()
HIER = int(os.environ.get("PGASCOL_NODE_SIZE", "0") or 0) not in (0,) and \
    int(os.environ["PGASCOL_NODE_SIZE"]) < P
# sizes (elements) around the engine's default thresholds: inline (512 B), chunk (128 KiB),
# staging (2 MiB) and the hierarchy's segment (1 MiB)
SIZES = (0, 1, 7, 65, 1000, 9000, 40000, 300001)


def data(rank, n, dtype=np.float64, salt=0):
    return ((np.arange(n, dtype=np.int64) * 7 + rank * 3 + salt) % 5 + 1).astype(dtype)


def both(fn):
    """Run fn(comm) on pgascol and on native MPI; return both results."""
    return fn(PG), fn(NATIVE)


def same(a, b, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.array_equal(a, b), (what, a[:8], b[:8])


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


# ------------------------------------------------------------------ collectives vs native

def test_barrier_and_bcast():
    for _ in range(20):
        PG.Barrier()
    for n in SIZES:
        for root in range(P):
            def f(c):
                b = data(root, n) if ME == root else np.full(n, -1.0)
                c.Bcast(b, root=root)
                return b
            a, b = both(f)
            same(a, b, ("Bcast", n, root))
    # [buf, count, type] and a displacement ([buf, (count, displ), type])
    buf = np.arange(10, dtype="i") if ME == 0 else np.zeros(10, "i")
    PG.Bcast([buf, (4, 3), MPI.INT], root=0)
    expect = np.arange(10, dtype="i") if ME == 0 else np.array([0, 0, 0, 3, 4, 5, 6, 0, 0, 0], "i")
    same(buf, expect)


def test_reduce_allreduce_every_type_and_op():
    types = [(np.int8, MPI.SIGNED_CHAR), (np.int32, MPI.INT), (np.int64, MPI.LONG),
             (np.uint16, MPI.UNSIGNED_SHORT), (np.float32, MPI.FLOAT), (np.float64, MPI.DOUBLE),
             (np.complex128, MPI.C_DOUBLE_COMPLEX), (np.bool_, MPI.C_BOOL)]
    for dtype, mt in types:
        for op in (MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX, MPI.LAND, MPI.BOR):
            if dtype == np.bool_ and op not in (MPI.LAND,):
                continue
            if np.dtype(dtype).kind in "fc" and op in (MPI.LAND, MPI.BOR):
                continue
            if np.dtype(dtype).kind == "c" and op in (MPI.MIN, MPI.MAX):
                continue
            for n in (1, 100, 5000):
                def f(c, root=P - 1):
                    x = data(ME, n, dtype)
                    y = np.zeros(n, dtype)
                    c.Allreduce([x, mt], [y, mt], op)
                    z = np.zeros(n, dtype)
                    c.Reduce([x, n, mt], [z, n, mt], op, root)
                    return np.concatenate([y, z])
                a, b = both(f)
                same(a, b, ("reduce", dtype, op, n))


def test_allreduce_sizes_in_place_and_implicit_types():
    for n in SIZES:
        def f(c):
            x = data(ME, n, salt=n)
            y = np.empty(n)
            c.Allreduce(x, y, MPI.SUM)
            c.Allreduce(MPI.IN_PLACE, x, MPI.MAX)
            i = data(ME, n, np.int64)
            c.Allreduce(MPI.IN_PLACE, [i, MPI.INT64_T], MPI.BXOR)
            return np.concatenate([y, x, i.astype(np.float64)])
        a, b = both(f)
        same(a, b, ("Allreduce", n))


def test_numpy_arrays_of_every_layout():
    """numpy arrays are read in place (not through the buffer protocol) on
    the hot path: views at an offset, Fortran order, 0-d, byte-swapped,
    read-only sends and non-contiguous views must behave as natively."""
    for n in (1, 64, 5000):
        def f(c):
            base = data(ME, n + 8)
            view = base[3:3 + n]                       # contiguous view at an offset
            c.Allreduce(MPI.IN_PLACE, view, MPI.SUM)
            fort = np.asfortranarray(data(ME, 2 * n).reshape(2, n))
            out = np.zeros((2, n), order="F")
            c.Allreduce(fort, out, MPI.MAX)
            ro = data(ME, n)
            ro.flags.writeable = False                 # a read-only send buffer is fine
            got = np.zeros(n)
            c.Allreduce(ro, got, MPI.MIN)
            return np.concatenate([base, out.ravel(order="F"), got])
        a, b = both(f)
        same(a, b, ("numpy layouts", n))
    zero_d = np.array(float(ME + 1))
    PG.Allreduce(MPI.IN_PLACE, zero_d, MPI.SUM)
    assert zero_d == P * (P + 1) / 2
    root = P - 1
    b = np.array(7.0) if ME == root else np.array(0.0)
    PG.Bcast(b, root=root)
    assert b == 7.0
    # a non-contiguous view and a non-native byte order are MPI's to refuse,
    # as natively (mpi4py: BufferError)
    strided = np.zeros(10)[::2]
    swapped = np.ones(5, ">f8")
    for c in (NATIVE, PG):
        _raises(Exception, lambda: c.Allreduce(np.ones(5), strided))
        _raises(Exception, lambda: c.Allreduce(swapped, np.zeros(5, ">f8")))


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


def test_reduce_every_root_in_place():
    for n in (0, 3, 5000, 300001):
        for root in range(P):
            def f(c):
                x = data(ME, n, np.int32, salt=root)
                y = np.full(n, -7, np.int32)
                if ME == root:
                    y[:] = x
                    c.Reduce(MPI.IN_PLACE, y, MPI.SUM, root)
                else:
                    c.Reduce(x, None, MPI.SUM, root)
                return y
            a, b = both(f)
            same(a, b, ("Reduce", n, root))


def test_gather_scatter_every_root():
    for n in (0, 1, 100, 20000):
        for root in range(P):
            def f(c):
                s = data(ME, n, salt=root)
                r = np.full((P, n), -1.0) if ME == root else None
                c.Gather(s, r, root)
                inplace = np.full((P, n), -1.0)
                if ME == root:
                    inplace[root] = s
                    c.Gather(MPI.IN_PLACE, inplace, root)
                else:
                    c.Gather(s, None, root)
                src = np.arange(P * n, dtype=np.float64).reshape(P, n) + root if ME == root else None
                out = np.full(n, -1.0)
                c.Scatter(src, out, root)
                out2 = np.full(n, -1.0)
                c.Scatter([src, n, MPI.DOUBLE] if ME == root else None, [out2, MPI.DOUBLE], root)
                parts = [out, out2]
                if ME == root:
                    parts += [r.ravel(), inplace.ravel()]
                return np.concatenate(parts)
            a, b = both(f)
            same(a, b, ("Gather/Scatter", n, root))


def test_gatherv_scatterv_uneven_with_and_without_gaps():
    for scale, gap in ((1, 2), (3000, 2), (3000, 0)):
        counts = [((r * 5 + 1) % 4) * scale for r in range(P)]
        displs = [sum(counts[:r]) + gap * r for r in range(P)]
        total = displs[-1] + counts[-1] + 3
        for root in range(P):
            def f(c):
                s = data(ME, counts[ME], np.int16, salt=root)
                r = np.full(total, -1, np.int16)
                c.Gatherv(s, [r, (counts, displs), MPI.SHORT] if ME == root else None, root)
                src = np.arange(total, dtype=np.int16) if ME == root else None
                out = np.full(counts[ME] + 2, -1, np.int16)
                c.Scatterv([src, counts, displs, MPI.SHORT] if ME == root else None,
                           [out, counts[ME], MPI.SHORT], root)
                return np.concatenate([r if ME == root else np.zeros(0, np.int16), out])
            a, b = both(f)
            same(a, b, ("Gatherv/Scatterv", scale, gap, root))


def test_allgather_alltoall_and_v():
    for n in (0, 1, 100, 70000):
        def f(c):
            s = data(ME, n, np.uint8)
            r = np.full((P, n), 255, np.uint8)
            c.Allgather(s, r)
            ip = np.full((P, n), 255, np.uint8)
            ip[ME] = s
            c.Allgather(MPI.IN_PLACE, ip)
            a2a_s = np.stack([data(ME * P + j, n, np.uint8) for j in range(P)]) if n else np.zeros((P, 0), np.uint8)
            a2a_r = np.full((P, n), 255, np.uint8)
            c.Alltoall(a2a_s, a2a_r)
            return np.concatenate([r.ravel(), ip.ravel(), a2a_r.ravel()])
        a, b = both(f)
        same(a, b, ("Allgather/Alltoall", n))
    counts = [(r % 3) * 11 + 1 for r in range(P)]
    displs = [sum(counts[:r]) + r for r in range(P)]
    total = displs[-1] + counts[-1] + 1
    tight = [sum(counts[:r]) for r in range(P)]       # blocks one after another (hierarchy: in order)

    def g(c):
        r = np.full(total, -1.0)
        c.Allgatherv(data(ME, counts[ME]), [r, (counts, displs), MPI.DOUBLE])
        t = np.full(sum(counts) + 1, -1.0)
        c.Allgatherv(data(ME, counts[ME]), [t, (counts, tight), MPI.DOUBLE])
        ti = np.full(sum(counts), -1.0)
        ti[tight[ME]:tight[ME] + counts[ME]] = data(ME, counts[ME])
        c.Allgatherv(MPI.IN_PLACE, [ti, (counts, tight), MPI.DOUBLE])
        sc = [(ME + j) % 3 + 1 for j in range(P)]
        rc = [(j + ME) % 3 + 1 for j in range(P)]
        sd = [sum(sc[:j]) for j in range(P)]
        rd = [sum(rc[:j]) + j for j in range(P)]
        sbuf = np.arange(sum(sc), dtype=np.float64) + 100 * ME
        rbuf = np.full(rd[-1] + rc[-1] + 1, -1.0)
        c.Alltoallv([sbuf, (sc, sd), MPI.DOUBLE], [rbuf, (rc, rd), MPI.DOUBLE])
        return np.concatenate([r, t, ti, rbuf])
    a, b = both(g)
    same(a, b, "Allgatherv/Alltoallv")


def test_reduce_scatter_scan_exscan():
    for per in (0, 1, 33, 20000):
        counts = [per + r % 2 for r in range(P)]
        total = sum(counts)

        def f(c):
            x = data(ME, total, np.int64)
            y = np.zeros(counts[ME], np.int64)
            c.Reduce_scatter(x, y, counts, MPI.SUM)
            ip = x.copy()
            if c is PG:     # MPICH 5.0.2's own in-place Reduce_scatter asserts at np=4 (overlapping memcpy)
                c.Reduce_scatter(MPI.IN_PLACE, ip, counts, MPI.SUM)
            else:
                ip[:counts[ME]] = y
            b = np.zeros(per, np.int64)
            c.Reduce_scatter_block(data(ME, per * P, np.int64), b, MPI.MAX)
            sc = np.zeros(total, np.int64)
            c.Scan(x, sc, MPI.SUM)
            ex = np.full(total, -1, np.int64)
            c.Exscan(x, ex, MPI.SUM)
            if ME == 0:
                ex[:] = -1          # undefined at rank 0
            return np.concatenate([y, ip[:counts[ME]], b, sc, ex])
        a, b = both(f)
        same(a, b, ("Reduce_scatter/Scan", per))


# ------------------------------------------------------------------ fallbacks to MPI

def test_fallbacks_give_mpi_results():
    """A user-defined operator goes to MPI (reductions on derived types: see
    test_reductions_on_derived_types_are_mpis; derived types in data
    movement run on pgascol, tests/mpi_programs/datatype.py)."""
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


def test_contiguous_derived_types_mixed_with_predefined():
    """A contiguous derived type (nested, and a Dup) describes the same data
    as its base type: odd ranks use it, even ranks the base type. MPI allows
    the mix (same type signature) and every rank must run on pgascol, or
    the two halves would wait for each other."""
    t4 = MPI.DOUBLE.Create_contiguous(2).Create_contiguous(2).Commit()
    c3 = MPI.DOUBLE.Dup().Commit()
    derived = ME % 2 == 1
    before = pgascol.stats(PG)
    try:
        def f(c):
            out = []
            b = data(0, 4 * 300, salt=1) if ME == 0 else np.zeros(4 * 300)
            c.Bcast([b, t4] if derived else [b, MPI.DOUBLE], root=0)
            out.append(b)
            r = np.zeros(4 * 5 * P)
            c.Allgatherv([data(ME, 4 * 5), 5, t4] if derived else data(ME, 4 * 5),
                         [r, [5] * P, [5 * i for i in range(P)], t4] if derived
                         else [r, [20] * P, [20 * i for i in range(P)], MPI.DOUBLE])
            out.append(r)
            s, q = data(ME, 4 * 3 * P, salt=2), np.zeros(4 * 3 * P)
            c.Alltoall([s, t4] if derived else s, [q, t4] if derived else q)
            out.append(q)
            g = np.zeros(9 * P) if ME == 0 else None
            c.Gather([data(ME, 9), c3] if derived else data(ME, 9), [g, c3] if ME == 0 else None, root=0)
            out.append(g if ME == 0 else np.zeros(0))
            return np.concatenate(out)
        a, b = both(f)
        same(a, b, "contiguous derived types")
    finally:
        t4.Free()
        c3.Free()
    after = pgascol.stats(PG)
    for op in ("Bcast", "Allgatherv", "Alltoall", "Gather"):
        assert after.get(op, {}).get("mpi", 0) == before.get(op, {}).get("mpi", 0), (op, after)


def test_reductions_on_derived_types_are_mpis():
    """MPI defines its reduction operations on predefined types only: a
    derived type on every rank goes to MPI, which then answers as natively
    (MPICH refuses it, others may run it)."""
    t2 = MPI.DOUBLE.Create_contiguous(2).Commit()
    before = pgascol.stats(PG).get("Allreduce", {}).get("mpi", 0)
    try:
        def f(c):
            x, y = data(ME, 8), np.zeros(8)
            try:
                c.Allreduce([x, 4, t2], [y, 4, t2], MPI.SUM)
            except MPI.Exception as exc:
                return ("error", exc.Get_error_class())
            return ("ok", y.tolist())
        a, b = both(f)
        assert a == b, (a, b)
    finally:
        t2.Free()
    assert pgascol.stats(PG)["Allreduce"]["mpi"] == before + 1


def test_byte_buffers_reduce_as_mpi4py_types_them():
    """mpi4py types a buffer of format "B" (uint8 arrays, bytearray) as
    MPI.UNSIGNED_CHAR, on which every arithmetic operation is defined (only
    a buffer without a format is MPI.BYTE); MPI.CHAR reductions, which the
    standard leaves out but the libraries may run, are left to MPI. Results
    and errors as natively, on the engine where it can."""
    def run(make, op):
        def f(c):
            x, y = make(ME + 1), make(0)
            try:
                c.Allreduce(x, y, op=op)
            except MPI.Exception as exc:
                return ("error", exc.Get_error_class())
            return ("ok", bytes(y[0] if isinstance(y, list) else y))
        return both(f)
    cases = [(lambda v: np.full(5, v, np.uint8), MPI.SUM), (lambda v: np.full(5, v, np.uint8), MPI.PROD),
             (lambda v: bytearray([v] * 5), MPI.MAX), (lambda v: bytearray([v] * 5), MPI.LOR),
             (lambda v: memoryview(bytearray([v] * 5)), MPI.MIN),
             (lambda v: [bytearray([v] * 5), MPI.CHAR], MPI.SUM)]
    before = pgascol.stats(PG).get("Allreduce", {}).get("mpi", 0)
    for make, op in cases:
        a, b = run(make, op)
        assert a == b, (a, b)
    # only the MPI.CHAR case went to MPI
    assert pgascol.stats(PG)["Allreduce"].get("mpi", 0) == before + 1
    e = _raises(TypeError, lambda: PG.Allreduce(np.zeros(2), np.zeros(2), op=lambda a, b: a))
    assert "op" in str(e)


# ------------------------------------------------------------------ misuse

def test_misuse_raises_and_comm_stays_usable():
    x, y = np.zeros(4), np.zeros(3)
    e = _raises(ValueError, lambda: PG.Allreduce([x, 4, MPI.DOUBLE], [y, 4, MPI.DOUBLE]))   # recv too small
    assert "bytes" in str(e)
    _raises(ValueError, lambda: PG.Allreduce([x, 4, MPI.DOUBLE], [np.zeros(8), 3, MPI.DOUBLE]))  # counts differ
    _raises(ValueError, lambda: PG.Allreduce(np.zeros(2), np.zeros(2), MPI.BAND))          # op not for floats
    _raises(ValueError, lambda: PG.Allreduce(np.zeros(2, "?"), np.zeros(2, "?"), MPI.SUM))  # nor for bool
    _raises(ValueError, lambda: PG.Bcast(np.zeros(2), root=P))                             # root out of range
    _raises(ValueError, lambda: PG.Reduce(np.zeros(2), np.zeros(2), MPI.SUM, root=-1))
    ro = np.zeros(4)
    ro.flags.writeable = False
    e = _raises(ValueError, lambda: PG.Allreduce(np.zeros(4), ro))                          # read-only recv
    assert "read-only" in str(e)
    _raises(ValueError, lambda: PG.Allgather(np.zeros(2), np.zeros(2 * P + 2)))             # not size x count
    _raises(ValueError, lambda: PG.Allgather([np.zeros(3), MPI.DOUBLE], [np.zeros(2 * P), 2, MPI.DOUBLE]))
    e = _raises(ValueError, lambda: PG.Allreduce([np.zeros(2), MPI.LONG], [np.zeros(2), MPI.INT64_T]))
    assert "mismatch in send and receive MPI datatypes" in str(e)                           # as mpi4py
    d2 = MPI.DOUBLE.Create_contiguous(2).Commit()
    try:
        _raises(ValueError, lambda: PG.Allreduce([np.zeros(4), 2, d2], [np.zeros(4), 4, MPI.DOUBLE]))
    finally:
        d2.Free()
    _raises(TypeError, lambda: PG.Reduce_scatter(np.zeros(3 * P), np.zeros(3), [3.0] * P))  # float counts
    _raises(TypeError, lambda: PG.Allreduce(object(), np.zeros(2)))                        # not a buffer
    _raises(TypeError, lambda: PG.Bcast(12345))
    # still usable
    z = np.full(5, ME + 1.0)
    PG.Allreduce(MPI.IN_PLACE, z)
    assert np.all(z == P * (P + 1) / 2)


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
