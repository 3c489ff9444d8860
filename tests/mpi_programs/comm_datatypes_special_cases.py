"""Derived datatypes and MPI.BOTTOM in pgascol.Comm's collectives, the
special cases (mpi4py's test_datatype, as the collectives use them): even
ranks address their data from MPI.BOTTOM with struct types of absolute
addresses; zero counts in every kind of layout; layouts that do not fit
their buffer and negative counts or displacements, refused before data
moves; numpy integers as counts and displacements; float16, a predefined
type the engine's kernels do not know; packed messages from two threads.
Data movement must run on the engine or the hierarchy (pgascol.stats),
never 'mpi'; reductions on derived types and on float16 stay MPI's (the
same answer as the native communicator). Run by tests/test_mpi_programs.py
with 1, 2, 3, 4, 8 ranks, on one node and on virtual nodes of 1 and 2
ranks, in one launch after comm_datatypes_layouts.py; the kinds of layout
are in comm_datatypes_common.py."""
import threading

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import ArgumentError
from tests.mpi_programs import collective_test, same
from tests.mpi_programs import raises as _raises
from tests.mpi_programs.comm_datatypes_common import (KINDS, LARGE, ME, MEDIUM, NATIVE, P, PG, ROOTS, SMALL, WORLD,
                                                      _a2a_count, _a2a_per, _v_counts, data, gapped, kind, layout,
                                                      on_pgascol_test, vspec)


# ------------------------------------------------------------------ MPI.BOTTOM

# Even ranks address their data from MPI.BOTTOM with struct types of
# absolute addresses, odd ranks use plain arrays.
BOTTOM = ME % 2 == 0


def _pieces_struct(pieces):
    """A struct of doubles at the absolute addresses of the arrays `pieces`."""
    return MPI.Datatype.Create_struct([len(p) for p in pieces], [MPI.Get_address(p) for p in pieces],
                                      [MPI.DOUBLE] * len(pieces)).Commit()


def _at(arr):
    """One double at arr's absolute address: element i is arr[i] from MPI.BOTTOM."""
    return MPI.Datatype.Create_struct([1], [MPI.Get_address(arr)], [MPI.DOUBLE]).Commit()


@on_pgascol_test("Bcast")
def test_bottom_bcast():
    for n in (SMALL, MEDIUM, LARGE):
        n1 = n // 3
        for root in ROOTS:
            x = data(root, n)
            head, tail = np.full(n1, -1.0), np.full(n - n1, -1.0)
            plain = np.full(n, -1.0)
            if ME == root:
                head[:], tail[:], plain[:] = x[:n1], x[n1:], x
            t = _pieces_struct([head, tail])
            try:
                PG.Bcast([MPI.BOTTOM, 1, t] if BOTTOM else [plain, MPI.DOUBLE], root=root)
            finally:
                t.Free()
            same(np.concatenate([head, tail]) if BOTTOM else plain, x, ("Bcast BOTTOM", n, root))


@on_pgascol_test("Gatherv")
def test_bottom_gatherv():
    """Into the root's array addressed from BOTTOM (displacements in doubles)."""
    for n in (SMALL, MEDIUM, LARGE):
        for root in ROOTS:
            counts = _v_counts(n, root)
            displs = [sum(counts[:r]) + r for r in range(P)]
            size = displs[-1] + counts[-1] + 1
            out = np.full(size, -1.0)
            t = _at(out)
            try:
                PG.Gatherv(data(ME, counts[ME]),
                           ([MPI.BOTTOM, counts, displs, t] if BOTTOM else [out, counts, displs, MPI.DOUBLE])
                           if ME == root else None, root)
            finally:
                t.Free()
            if ME == root:
                want = np.full(size, -1.0)
                for r in range(P):
                    want[displs[r]:displs[r] + counts[r]] = data(r, counts[r])
                same(out, want, ("Gatherv BOTTOM", n, root))


@on_pgascol_test("Scatter")
def test_bottom_scatter():
    """Into two pieces from BOTTOM."""
    for n in (SMALL, MEDIUM, LARGE):
        n1 = n // 3
        for root in ROOTS:
            src = np.concatenate([data(root, n, r) for r in range(P)]) if ME == root else None
            head, tail, plain = np.full(n1, -1.0), np.full(n - n1, -1.0), np.full(n, -1.0)
            t = _pieces_struct([head, tail])
            try:
                PG.Scatter(src, [MPI.BOTTOM, 1, t] if BOTTOM else plain, root)
            finally:
                t.Free()
            same(np.concatenate([head, tail]) if BOTTOM else plain, data(root, n, ME), ("Scatter BOTTOM", n, root))


@on_pgascol_test("Allgather")
def test_bottom_allgather():
    """From two pieces."""
    for n in (SMALL, MEDIUM, LARGE):
        n1 = n // 3
        head, tail = data(ME, n)[:n1].copy(), data(ME, n)[n1:].copy()
        t = _pieces_struct([head, tail])
        out = np.full(P * n, -1.0)
        try:
            PG.Allgather([MPI.BOTTOM, 1, t] if BOTTOM else data(ME, n), [out, MPI.DOUBLE])
        finally:
            t.Free()
        same(out, np.concatenate([data(r, n) for r in range(P)]), ("Allgather BOTTOM", n))


@on_pgascol_test("Alltoallv")
def test_bottom_alltoallv():
    """Into an array addressed from BOTTOM."""
    for n in (SMALL, MEDIUM, LARGE):
        per = _a2a_per(n)
        sc = [_a2a_count(per, ME, j) for j in range(P)]
        rc = [_a2a_count(per, i, ME) for i in range(P)]
        sd = [sum(sc[:j]) for j in range(P)]
        rd = [sum(rc[:i]) + i for i in range(P)]
        sbuf = np.concatenate([data(ME * P + j, sc[j]) for j in range(P)])
        out = np.full(rd[-1] + rc[-1] + 1, -1.0)
        t = _at(out)
        try:
            PG.Alltoallv([sbuf, (sc, sd), MPI.DOUBLE],
                         [MPI.BOTTOM, rc, rd, t] if BOTTOM else [out, (rc, rd), MPI.DOUBLE])
        finally:
            t.Free()
        want = np.full(out.size, -1.0)
        for i in range(P):
            want[rd[i]:rd[i] + rc[i]] = data(i * P + ME, rc[i])
        same(out, want, ("Alltoallv BOTTOM", n))


# ------------------------------------------------------------------ zero counts

def zero_count_kinds():
    """(send kind, receive kind, shift): every kind on every rank."""
    for sh in range(len(KINDS)):
        yield kind(ME, sh), kind(ME, sh, recv=True), sh


def last_rank_only():
    """Counts of v collectives in which only the last rank sends anything."""
    return [0] * (P - 1) + [6]


@on_pgascol_test("Bcast")
def test_zero_counts_bcast():
    empty = MPI.DOUBLE.Create_contiguous(0).Commit()     # an element of no data (size 0, extent 0)
    try:
        for kd, _, _ in zero_count_kinds():
            buf = kd.buffer(2)
            PG.Bcast([buf, 0, kd.dt], root=P - 1)
            same(buf, kd.buffer(2), ("Bcast 0", kd.name))
            PG.Bcast([buf, 5, empty] if ME % 2 else [buf, 0, MPI.DOUBLE], root=0)
            same(buf, kd.buffer(2), ("Bcast empty type", kd.name))
    finally:
        empty.Free()


@on_pgascol_test("Allgather")
def test_zero_counts_allgather():
    for kd, kr, _ in zero_count_kinds():
        PG.Allgather([kd.buffer(0), kd.dt], [kr.buffer(0), kr.dt])


@on_pgascol_test("Alltoall")
def test_zero_counts_alltoall():
    for kd, kr, _ in zero_count_kinds():
        PG.Alltoall([kd.buffer(0), kd.dt], [kr.buffer(0), kr.dt])


@on_pgascol_test("Scatter")
def test_zero_counts_scatter():
    for kd, kr, _ in zero_count_kinds():
        rbuf = kr.buffer(3)
        PG.Scatter([kd.buffer(3), 0, kd.dt] if ME == 0 else None, [rbuf, 0, kr.dt], 0)
        same(rbuf, kr.buffer(3), ("Scatter 0", kr.name))


@on_pgascol_test("Allgatherv")
def test_zero_counts_allgatherv():
    counts = last_rank_only()
    for kd, kr, sh in zero_count_kinds():
        displs, size = gapped(kr, counts)
        rbuf = kr.buffer(size)
        sbuf = layout(kd, [data(ME, counts[ME])], [0], kd.elems(counts[ME]))
        PG.Allgatherv([sbuf, kd.elems(counts[ME]), kd.dt], vspec(kr, rbuf, counts, displs, sh))
        same(rbuf, layout(kr, [data(r, counts[r]) for r in range(P)], displs, size), ("Allgatherv 0", kr.name))


@on_pgascol_test("Gatherv")
def test_zero_counts_gatherv():
    counts = last_rank_only()
    for kd, kr, sh in zero_count_kinds():
        displs, size = gapped(kr, counts)
        rbuf = kr.buffer(size)
        sbuf = layout(kd, [data(ME, counts[ME])], [0], kd.elems(counts[ME]))
        PG.Gatherv([sbuf, kd.elems(counts[ME]), kd.dt], vspec(kr, rbuf, counts, displs, sh) if ME == 0 else None, 0)
        if ME == 0:
            same(rbuf, layout(kr, [data(r, counts[r]) for r in range(P)], displs, size), ("Gatherv 0", kr.name))


@on_pgascol_test("Alltoallv")
def test_zero_counts_alltoallv():
    z = [0] * P
    for kd, kr, _ in zero_count_kinds():
        rbuf = kr.buffer(2)
        PG.Alltoallv([kd.buffer(1), z, z, kd.dt], [rbuf, z, z, kr.dt])
        same(rbuf, kr.buffer(2), ("Alltoallv 0", kr.name))


# ------------------------------------------------------------------ misuse

def test_layout_that_does_not_fit_raises_before_data_moves():
    """Every rank makes the same bad call, so that nobody is left waiting:
    ArgumentError (a ValueError) on every rank, and the communicator stays
    usable."""
    col = MPI.DOUBLE.Create_vector(4, 1, 3).Commit()           # spans 10 doubles
    wide = MPI.DOUBLE.Create_resized(0, 16).Commit()            # one double every 16 bytes
    shifted = MPI.DOUBLE.Create_indexed([1], [1]).Commit()     # lb = true lb = 8, extent 8
    try:
        e = _raises(ArgumentError, lambda: PG.Bcast([np.zeros(9), 1, col], root=0))
        assert "layout" in str(e), str(e)
        _raises(ArgumentError, lambda: PG.Bcast([np.zeros(10), (1, 1), col], root=P - 1))   # displaced past the end
        _raises(ArgumentError, lambda: PG.Bcast([np.zeros(4), shifted], root=0))             # 4 elements need 5 doubles
        _raises(ArgumentError, lambda: PG.Allgather(np.zeros(2), [np.zeros(4 * P - 2), 2, wide]))
        _raises(ArgumentError, lambda: PG.Alltoallv([np.zeros(2 * P), 2, MPI.DOUBLE],
                                                    [np.zeros(4 * P), [2] * P, [2 * j + 1 for j in range(P)], wide]))
        _raises(ArgumentError, lambda: PG.Gather([np.zeros(9), 1, col], None if ME else np.zeros(10 * P), 0))
        ro = np.zeros(10 * P)
        ro.flags.writeable = False
        e = _raises(ArgumentError, lambda: PG.Allgather([np.zeros(10), 1, col], [ro, 1, col]))
        assert "read-only" in str(e), str(e)
        # still usable, mixing kinds
        b = np.zeros(10)
        if ME == 0:
            b[:] = np.arange(10.0)
        PG.Bcast([b, 1, col] if ME % 2 else [b, 4, MPI.DOUBLE] if ME else [b, 1, col], root=0)
        want = np.arange(10.0) if ME == 0 else (np.where(np.arange(10) % 3 == 0, np.arange(10.0), 0)
                                                if ME % 2 else np.array([0, 3, 6, 9, 0, 0, 0, 0, 0, 0.0]))
        assert np.array_equal(b, want), b
    finally:
        col.Free()
        wide.Free()
        shifted.Free()


# ------------------------------------------------------------------ reductions stay MPI's

# MPI requires the same datatype on every rank in reductions, so a derived
# type goes to MPI on every rank (MPICH may refuse it, others run it):
# pgascol gives MPI's answer, counted as 'mpi'.

def _reduction_on_a_vector_type(op, call, defined=True):
    """call(c, sendspec, recvspec) of reduction `op` with a vector type on
    pgascol and natively: the same answer (or error class), and one more
    call of op on MPI's path, none on another. `defined`: whether MPI
    defines the result on this rank."""
    vec = MPI.INT.Create_vector(3, 1, 2).Commit()
    before = pgascol.stats(PG)
    try:
        def run(c):
            x = (np.arange(6 * P, dtype=np.int32) + ME) % 7
            y = np.full(6 * P, -1, np.int32)
            try:
                call(c, [x, 1, vec], [y, 1, vec])
            except MPI.Exception as exc:
                return ("error", exc.Get_error_class())
            if not defined:
                y[:] = -1       # undefined here
            return ("ok", y.tolist())
        got, want = run(PG), run(NATIVE)
        assert got == want, (got, want)
    finally:
        vec.Free()
    now = pgascol.stats(PG)
    assert now[op].get("mpi", 0) == before.get(op, {}).get("mpi", 0) + 1, (op, now[op])
    assert {p for p, n in now[op].items() if n > before.get(op, {}).get(p, 0)} == {"mpi"}, (op, now[op])


def test_allreduce_on_a_vector_type_is_mpis():
    _reduction_on_a_vector_type("Allreduce", lambda c, x, y: c.Allreduce(x, y, MPI.SUM))


def test_reduce_on_a_vector_type_is_mpis():
    _reduction_on_a_vector_type("Reduce", lambda c, x, y: c.Reduce(x, y, MPI.MAX, root=P - 1),
                                defined=ME == P - 1)


def test_reduce_scatter_block_on_a_vector_type_is_mpis():
    _reduction_on_a_vector_type("Reduce_scatter_block", lambda c, x, y: c.Reduce_scatter_block(x, y, MPI.SUM))


def test_scan_on_a_vector_type_is_mpis():
    _reduction_on_a_vector_type("Scan", lambda c, x, y: c.Scan(x, y, MPI.SUM))


def test_exscan_on_a_vector_type_is_mpis():
    _reduction_on_a_vector_type("Exscan", lambda c, x, y: c.Exscan(x, y, MPI.SUM), defined=ME != 0)


# ------------------------------------------------------------------ specs every rank must read alike

# A numpy integer where mpi4py takes an int (one count or displacement for
# every block of a vector spec) runs on pgascol like a plain int, so a rank
# writing it meets the others in the engine instead of going to MPI alone.

@on_pgascol_test("Alltoallv")
def test_alltoallv_numpy_integer_counts_and_displacements():
    x = data(ME, 3 * P)
    y = np.full(4 * P, -1.0)
    if ME % 2 == 0:
        PG.Alltoallv([x, np.int64(3), MPI.DOUBLE], [y, np.int32(3), np.int64(4), MPI.DOUBLE])
    else:
        PG.Alltoallv([x, [3] * P, [3 * j for j in range(P)], MPI.DOUBLE],
                     [y, [3] * P, [4 * j for j in range(P)], MPI.DOUBLE])
    want = np.full(4 * P, -1.0)
    for j in range(P):
        want[4 * j:4 * j + 3] = data(j, 3 * P)[3 * ME:3 * ME + 3]
    same(y, want, "Alltoallv with numpy integers")


@on_pgascol_test("Allgatherv")
def test_allgatherv_numpy_integer_counts_and_displacements():
    x = data(ME, 3 * P)
    z = np.full(2 * P, -1.0)
    PG.Allgatherv(x[:2], [z, np.int64(2), np.int64(2), MPI.DOUBLE] if ME % 2 else [z, MPI.DOUBLE])
    same(z, np.concatenate([data(j, 3 * P)[:2] for j in range(P)]), "Allgatherv with numpy integers")


def test_negative_counts_and_displacements_are_refused():
    """MPI would address memory before the buffer's start: ArgumentError (a
    ValueError) before any data moves, on every rank making such a call,
    and the communicator stays usable."""
    big = np.zeros(4 * P + 2)
    e = _raises(ArgumentError, lambda: PG.Allgatherv(np.ones(2), [big[2:], [2] * P, [-2] + [2 * j for j in range(1, P)],
                                                                    MPI.DOUBLE]))
    assert "negative displacement -2" in str(e), str(e)
    _raises(ArgumentError, lambda: PG.Alltoallv([np.ones(P), [1] * P, [0] * P, MPI.DOUBLE],
                                                [np.zeros(P), [-1] + [1] * (P - 1), [0] * P, MPI.DOUBLE]))
    _raises(ArgumentError, lambda: PG.Bcast([np.zeros(4), (2, -1), MPI.DOUBLE], root=0))
    _raises(ArgumentError, lambda: PG.Bcast([np.zeros(4), -1, MPI.DOUBLE], root=0))
    assert not big.any()
    x = np.full(3, float(ME))
    PG.Allreduce(MPI.IN_PLACE, x)
    assert np.all(x == P * (P - 1) / 2), x


# ------------------------------------------------------------------ a predefined type outside the table

# float16 (MPIX_C_FLOAT16 / MPI_SHORT_FLOAT here), a predefined type the
# engine's kernels do not know: moved as bytes on pgascol, also when other
# ranks describe the same bytes as uint16; its reductions stay MPI's (the
# native communicator's answer, counted as 'mpi'). Skipped where mpi4py
# has no such type.
HALF = MPI._typedict.get("e")


HAS_HALF = HALF is not None and HALF != MPI.DATATYPE_NULL


HALVES = (np.arange(5 * P) % 61).astype(np.float16)


@on_pgascol_test("Bcast", skip=not HAS_HALF)
def test_float16_bcast():
    b = HALVES.copy() if ME == 0 else np.zeros(5 * P, np.float16)
    PG.Bcast(b if ME % 2 == 0 else [b.view(np.uint16), MPI.UINT16_T], root=0)
    same(b.view(np.uint16), HALVES.view(np.uint16), "float16 Bcast")


@on_pgascol_test("Allgather", skip=not HAS_HALF)
def test_float16_allgather():
    g = np.zeros(5 * P, np.float16)
    PG.Allgather([HALVES[5 * ME:5 * ME + 5], 5, HALF] if ME % 2 else HALVES[5 * ME:5 * ME + 5], g)
    same(g.view(np.uint16), HALVES.view(np.uint16), "float16 Allgather")


def test_float16_allreduce_is_mpis():
    if not HAS_HALF:
        return

    def reduce_with(c):
        y = np.zeros(4, np.float16)
        try:
            c.Allreduce(np.full(4, ME + 0.5, np.float16), y, MPI.SUM)
        except MPI.Exception as exc:
            return ("error", exc.Get_error_class())
        return ("ok", y.tolist())
    before = pgascol.stats(PG)
    assert reduce_with(PG) == reduce_with(NATIVE)
    now = pgascol.stats(PG)
    assert now["Allreduce"].get("mpi", 0) == before.get("Allreduce", {}).get("mpi", 0) + 1, now["Allreduce"]


@collective_test
def test_packing_from_two_threads():
    """Packed messages go through MPI messages to self on one shared private
    communicator; two threads running collectives on two communicators at
    once must not receive each other's packed bytes."""
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        return
    comms = [pgascol.Comm(WORLD.Dup()) for _ in range(2)]
    vec = MPI.DOUBLE.Create_vector(50, 1, 2).Commit()
    results = [[], []]

    def worker(i):
        c = comms[i]
        for it in range(60):
            n = 100
            b = np.zeros(n)
            if ME == 0:
                b[::2] = data(i, 50, it)
            # the root packs (vector), the others unpack into doubles at even slots
            c.Bcast([b, 1, vec], root=0)
            results[i].append(b[::2].copy())
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for i in range(2):
            assert len(results[i]) == 60
            for it, got in enumerate(results[i]):
                same(got, data(i, 50, it), "thread %d call %d" % (i, it))
    finally:
        vec.Free()
        for c in comms:
            c.Free()
