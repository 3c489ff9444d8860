"""Buffer collectives of pgascol.Comm (mpi4py's test_cco_buf), one test per
collective, each against the native communicator on the same data: one
launch runs this program with comm_coll_vectors.py, comm_message_specs.py
and comm_communicator.py on one pgascol.Comm over COMM_WORLD
(tests/test_mpi_programs.py: 1, 2, 3, 4 and 8 ranks on one node, and
virtual nodes of 1, 2 and 3 ranks).

Data are small integers, so sums are exact in every type and the results
must be bitwise identical to MPI's."""
import numpy as np
from mpi4py import MPI

from tests.mpi_programs import assert_same as same
from tests.mpi_programs import both, data, world_comms

NATIVE, PG = world_comms()
P, ME = PG.Get_size(), PG.Get_rank()
# sizes (elements) around the engine's default thresholds: inline (512 B), chunk (128 KiB),
# staging (2 MiB) and the hierarchy's segment (1 MiB)
SIZES = (0, 1, 7, 65, 1000, 9000, 40000, 300001)


def test_barrier():
    for _ in range(20):
        PG.Barrier()


def test_bcast():
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


def _types_and_ops():
    """(numpy type, MPI type, operator) of the reductions below: the
    operators MPI defines on each type."""
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
            yield dtype, mt, op


def test_reduce_every_type_and_op():
    for dtype, mt, op in _types_and_ops():
        for n in (1, 100, 5000):
            def f(c, root=P - 1):
                x = data(ME, n, dtype)
                z = np.zeros(n, dtype)
                c.Reduce([x, n, mt], [z, n, mt], op, root)
                return z
            a, b = both(f)
            same(a, b, ("Reduce", dtype, op, n))


def test_allreduce_every_type_and_op():
    for dtype, mt, op in _types_and_ops():
        for n in (1, 100, 5000):
            def f(c):
                x = data(ME, n, dtype)
                y = np.zeros(n, dtype)
                c.Allreduce([x, mt], [y, mt], op)
                return y
            a, b = both(f)
            same(a, b, ("Allreduce", dtype, op, n))


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


def test_gather_every_root():
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
                    return np.concatenate([r.ravel(), inplace.ravel()])
                c.Gather(s, None, root)
                return np.zeros(0)
            a, b = both(f)
            same(a, b, ("Gather", n, root))


def test_scatter_every_root():
    for n in (0, 1, 100, 20000):
        for root in range(P):
            def f(c):
                src = np.arange(P * n, dtype=np.float64).reshape(P, n) + root if ME == root else None
                out = np.full(n, -1.0)
                c.Scatter(src, out, root)
                out2 = np.full(n, -1.0)
                c.Scatter([src, n, MPI.DOUBLE] if ME == root else None, [out2, MPI.DOUBLE], root)
                return np.concatenate([out, out2])
            a, b = both(f)
            same(a, b, ("Scatter", n, root))


def test_allgather():
    for n in (0, 1, 100, 70000):
        def f(c):
            s = data(ME, n, np.uint8)
            r = np.full((P, n), 255, np.uint8)
            c.Allgather(s, r)
            ip = np.full((P, n), 255, np.uint8)
            ip[ME] = s
            c.Allgather(MPI.IN_PLACE, ip)
            return np.concatenate([r.ravel(), ip.ravel()])
        a, b = both(f)
        same(a, b, ("Allgather", n))


def test_alltoall():
    for n in (0, 1, 100, 70000):
        def f(c):
            a2a_s = np.stack([data(ME * P + j, n, np.uint8) for j in range(P)]) if n else np.zeros((P, 0), np.uint8)
            a2a_r = np.full((P, n), 255, np.uint8)
            c.Alltoall(a2a_s, a2a_r)
            return a2a_r.ravel()
        a, b = both(f)
        same(a, b, ("Alltoall", n))


def _reduce_scatter_counts(per):
    """Counts of the Reduce_scatter tests (rank by rank one more or not)."""
    counts = [per + r % 2 for r in range(P)]
    return counts, sum(counts)


def test_reduce_scatter():
    for per in (0, 1, 33, 20000):
        counts, total = _reduce_scatter_counts(per)

        def f(c):
            x = data(ME, total, np.int64)
            y = np.zeros(counts[ME], np.int64)
            c.Reduce_scatter(x, y, counts, MPI.SUM)
            ip = x.copy()
            if c is PG:     # MPICH 5.0.2's own in-place Reduce_scatter asserts at np=4 (overlapping memcpy)
                c.Reduce_scatter(MPI.IN_PLACE, ip, counts, MPI.SUM)
            else:
                ip[:counts[ME]] = y
            return np.concatenate([y, ip[:counts[ME]]])
        a, b = both(f)
        same(a, b, ("Reduce_scatter", per))


def test_reduce_scatter_block():
    for per in (0, 1, 33, 20000):
        def f(c):
            b = np.zeros(per, np.int64)
            c.Reduce_scatter_block(data(ME, per * P, np.int64), b, MPI.MAX)
            return b
        a, b = both(f)
        same(a, b, ("Reduce_scatter_block", per))


def test_scan():
    for per in (0, 1, 33, 20000):
        _, total = _reduce_scatter_counts(per)

        def f(c):
            sc = np.zeros(total, np.int64)
            c.Scan(data(ME, total, np.int64), sc, MPI.SUM)
            return sc
        a, b = both(f)
        same(a, b, ("Scan", per))


def test_exscan():
    for per in (0, 1, 33, 20000):
        _, total = _reduce_scatter_counts(per)

        def f(c):
            ex = np.full(total, -1, np.int64)
            c.Exscan(data(ME, total, np.int64), ex, MPI.SUM)
            if ME == 0:
                ex[:] = -1          # undefined at rank 0
            return ex
        a, b = both(f)
        same(a, b, ("Exscan", per))


def test_bad_root_like_mpi4py():
    """A root out of range in a rooted buffer collective: an MPI.Exception with
    error class ERR_ROOT, as mpi4py's communicator gives, raised by every rank
    before anything moves; the communicator goes on."""
    x = np.zeros(4)
    calls = (lambda c, r: c.Bcast(x, root=r), lambda c, r: c.Reduce(x, np.zeros(4), root=r),
             lambda c, r: c.Gather(x, np.zeros(4 * P), root=r),
             lambda c, r: c.Scatter(np.zeros(4 * P), x, root=r))
    for root in (P, -1, -P):
        for c in (PG, NATIVE):
            for call in calls:
                try:
                    call(c, root)
                except MPI.Exception as e:
                    assert e.Get_error_class() == MPI.ERR_ROOT, (c, root, e)
                else:
                    raise AssertionError("root %d: no error" % root)
    assert both(lambda c: c.bcast(ME, root=P - 1)) == (P - 1, P - 1)


def test_argument_errors_are_mpi_exceptions():
    """Every pgascol error is also an MPI.Exception once MPI is loaded, as
    mpi4py's own: `except MPI.Exception` around a drop-in call catches a
    buffer the communicator refuses, with error class ERR_ARG."""
    from pgascol import ArgumentError
    try:
        PG.Allreduce(np.zeros(3), np.zeros(2))   # a receive buffer too small
    except MPI.Exception as e:
        assert isinstance(e, ArgumentError) and e.Get_error_class() == MPI.ERR_ARG, e
    else:
        raise AssertionError("no error")
    assert isinstance(ArgumentError("x"), MPI.Exception)
    a = np.arange(3.0)
    PG.Allreduce(MPI.IN_PLACE, a)
    assert (a == np.arange(3.0) * P).all()
