"""Message specifications (mpi4py's test_msgspec): how pgascol.Comm reads a
buffer argument, against the native communicator: numpy arrays of every
layout, byte buffers typed as mpi4py types them, contiguous derived types
mixed with predefined ones, reductions on derived types, and the
specifications it refuses. Run in one launch with comm_coll_buffers.py
(see there)."""
import numpy as np
from mpi4py import MPI

import pgascol
from tests.mpi_programs import assert_same as same
from tests.mpi_programs import both, data, raises, world_comms

NATIVE, PG = world_comms()
P, ME = PG.Get_size(), PG.Get_rank()


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
        raises(Exception, lambda: c.Allreduce(np.ones(5), strided))
        raises(Exception, lambda: c.Allreduce(swapped, np.zeros(5, ">f8")))


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
    e = raises(TypeError, lambda: PG.Allreduce(np.zeros(2), np.zeros(2), op=lambda a, b: a))
    assert "op" in str(e)


# ------------------------------------------------------------------ contiguous derived types

# Odd ranks describe their doubles with contiguous derived types (a nested
# one, and a Dup of MPI.DOUBLE), even ranks with MPI.DOUBLE: the same data,
# the same type signature. MPI allows the mix and every rank must run on
# pgascol, or the two halves would wait for each other.
DERIVED = ME % 2 == 1


def _mixed_with_contiguous(op, call):
    """call(c, t4, c3) on pgascol and natively gives the same result, and
    the `op` it makes does not go to MPI on pgascol."""
    t4 = MPI.DOUBLE.Create_contiguous(2).Create_contiguous(2).Commit()
    c3 = MPI.DOUBLE.Dup().Commit()
    before = pgascol.stats(PG)
    try:
        a, b = both(lambda c: call(c, t4, c3))
        same(a, b, ("contiguous derived types", op))
    finally:
        t4.Free()
        c3.Free()
    after = pgascol.stats(PG)
    assert after.get(op, {}).get("mpi", 0) == before.get(op, {}).get("mpi", 0), (op, after)


def test_bcast_contiguous_derived_mixed_with_predefined():
    def call(c, t4, c3):
        b = data(0, 4 * 300, salt=1) if ME == 0 else np.zeros(4 * 300)
        c.Bcast([b, t4] if DERIVED else [b, MPI.DOUBLE], root=0)
        return b
    _mixed_with_contiguous("Bcast", call)


def test_allgatherv_contiguous_derived_mixed_with_predefined():
    def call(c, t4, c3):
        r = np.zeros(4 * 5 * P)
        c.Allgatherv([data(ME, 4 * 5), 5, t4] if DERIVED else data(ME, 4 * 5),
                     [r, [5] * P, [5 * i for i in range(P)], t4] if DERIVED
                     else [r, [20] * P, [20 * i for i in range(P)], MPI.DOUBLE])
        return r
    _mixed_with_contiguous("Allgatherv", call)


def test_alltoall_contiguous_derived_mixed_with_predefined():
    def call(c, t4, c3):
        s, q = data(ME, 4 * 3 * P, salt=2), np.zeros(4 * 3 * P)
        c.Alltoall([s, t4] if DERIVED else s, [q, t4] if DERIVED else q)
        return q
    _mixed_with_contiguous("Alltoall", call)


def test_gather_contiguous_derived_mixed_with_predefined():
    def call(c, t4, c3):
        g = np.zeros(9 * P) if ME == 0 else None
        c.Gather([data(ME, 9), c3] if DERIVED else data(ME, 9), [g, c3] if ME == 0 else None, root=0)
        return g if ME == 0 else np.zeros(0)
    _mixed_with_contiguous("Gather", call)


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


# ------------------------------------------------------------------ refused

def test_misuse_raises_and_comm_stays_usable():
    x, y = np.zeros(4), np.zeros(3)
    e = raises(ValueError, lambda: PG.Allreduce([x, 4, MPI.DOUBLE], [y, 4, MPI.DOUBLE]))   # recv too small
    assert "bytes" in str(e)
    raises(ValueError, lambda: PG.Allreduce([x, 4, MPI.DOUBLE], [np.zeros(8), 3, MPI.DOUBLE]))  # counts differ
    raises(ValueError, lambda: PG.Allreduce(np.zeros(2), np.zeros(2), MPI.BAND))          # op not for floats
    raises(ValueError, lambda: PG.Allreduce(np.zeros(2, "?"), np.zeros(2, "?"), MPI.SUM))  # nor for bool
    raises(ValueError, lambda: PG.Bcast(np.zeros(2), root=P))                             # root out of range
    raises(ValueError, lambda: PG.Reduce(np.zeros(2), np.zeros(2), MPI.SUM, root=-1))
    ro = np.zeros(4)
    ro.flags.writeable = False
    e = raises(ValueError, lambda: PG.Allreduce(np.zeros(4), ro))                          # read-only recv
    assert "read-only" in str(e)
    raises(ValueError, lambda: PG.Allgather(np.zeros(2), np.zeros(2 * P + 2)))             # not size x count
    raises(ValueError, lambda: PG.Allgather([np.zeros(3), MPI.DOUBLE], [np.zeros(2 * P), 2, MPI.DOUBLE]))
    e = raises(ValueError, lambda: PG.Allreduce([np.zeros(2), MPI.LONG], [np.zeros(2), MPI.INT64_T]))
    assert "mismatch in send and receive MPI datatypes" in str(e)                          # as mpi4py
    d2 = MPI.DOUBLE.Create_contiguous(2).Commit()
    try:
        raises(ValueError, lambda: PG.Allreduce([np.zeros(4), 2, d2], [np.zeros(4), 4, MPI.DOUBLE]))
    finally:
        d2.Free()
    raises(TypeError, lambda: PG.Reduce_scatter(np.zeros(3 * P), np.zeros(3), [3.0] * P))  # float counts
    raises(TypeError, lambda: PG.Allreduce(object(), np.zeros(2)))                        # not a buffer
    raises(TypeError, lambda: PG.Bcast(12345))
    # still usable
    z = np.full(5, ME + 1.0)
    PG.Allreduce(MPI.IN_PLACE, z)
    assert np.all(z == P * (P + 1) / 2)
