"""Derived datatypes (mpi4py's test_datatype, as the collectives use them):
pgascol.Comm with derived datatypes in the data-movement collectives
(Bcast, Gather(v), Scatter(v), Allgather(v), Alltoall(v)), one test per
collective and use; run by tests/test_mpi_programs.py with 1, 2, 3, 4, 8
ranks, on one node and on virtual nodes of 1 and 2 ranks
(PGASCOL_NODE_SIZE).

MPI requires only type signatures to match in these collectives, so ranks
may describe the same doubles with a vector, indexed, struct or resized
datatype while others use MPI.DOUBLE: every rank must run on pgascol (as
packed bytes where needed), or the two halves would wait for each other.
Here: mixed kinds on neighbouring ranks in every collective, column and
subarray types on every rank, and in place with derived receive types.
Results are checked against numpy references computed locally, on whole
user buffers (the gaps of a layout stay untouched), and pgascol.stats must
show the engine or the hierarchy, never 'mpi', for these calls. MPI.BOTTOM,
zero counts, misuse and reductions: comm_datatypes_special_cases.py, in
the same launch; the kinds of layout are in comm_datatypes_common.py."""
import numpy as np
from mpi4py import MPI

from tests.mpi_programs import same
from tests.mpi_programs.comm_datatypes_common import (KINDS, LARGE, ME, MEDIUM, P, PG, ROOTS, SIZES, SMALL,
                                                      _a2a_count, _a2a_per, _v_counts, data, gapped, kind, layout,
                                                      on_pgascol_test, vspec)


def shifts(n):
    """Every assignment of kinds to ranks for small and medium sizes, two for the large one."""
    return range(len(KINDS)) if n < LARGE else range(2)


def spec(kd, buf, n, form):
    """A simple buffer spec of n doubles of kind kd, in one of mpi4py's forms."""
    if form == 0:
        return [buf, kd.elems(n), kd.dt]
    if form == 1:
        return [buf, kd.dt]                   # count from the buffer's size
    return [buf, (kd.elems(n), 0), kd.dt]


# ------------------------------------------------------------------ mixed kinds, every collective

def rooted_variants():
    """(n, root, send kind, receive kind, shift) of the rooted tests with
    mixed kinds: every size, both ends as the root, the shifts of the size."""
    for n in SIZES:
        for root in ROOTS:
            for sh in shifts(n):
                yield n, root, kind(ME, sh), kind(ME, sh, recv=True), sh


def unrooted_variants():
    """(n, send kind, receive kind, shift) of the tests without a root."""
    for n in SIZES:
        for sh in shifts(n):
            yield n, kind(ME, sh), kind(ME, sh, recv=True), sh


@on_pgascol_test("Bcast")
def test_mixed_bcast():
    for n, root, kd, _, sh in rooted_variants():
        x = data(root, n, sh)
        buf = layout(kd, [x] if ME == root else [], [0], kd.elems(n))
        PG.Bcast(spec(kd, buf, n, sh % 3), root=root)
        same(buf, layout(kd, [x], [0], kd.elems(n)), ("Bcast", n, root, kd.name))
        # with a displacement of one element: that element stays as it was
        buf = layout(kd, [x] if ME == root else [], [1], kd.elems(n) + 1)
        PG.Bcast([buf, (kd.elems(n), 1), kd.dt], root=root)
        same(buf, layout(kd, [x], [1], kd.elems(n) + 1), ("Bcast displ", n, root, kd.name))


@on_pgascol_test("Gather")
def test_mixed_gather():
    """n doubles from every rank, blocks in rank order at the root."""
    for n, root, ks, kr, sh in rooted_variants():
        sbuf = layout(ks, [data(ME, n, sh)], [0], ks.elems(n))
        rbuf = kr.buffer(P * kr.elems(n)) if ME == root else None
        PG.Gather(spec(ks, sbuf, n, sh % 3), spec(kr, rbuf, n, sh % 2) if ME == root else None, root)
        if ME == root:
            same(rbuf, layout(kr, [data(r, n, sh) for r in range(P)],
                              [r * kr.elems(n) for r in range(P)], P * kr.elems(n)),
                 ("Gather", n, root, ks.name, kr.name))


@on_pgascol_test("Scatter")
def test_mixed_scatter():
    """Block r of the root's buffer to rank r."""
    for n, root, ks, kr, sh in rooted_variants():
        src = [data(root, n, 100 * sh + r) for r in range(P)]
        sbuf = layout(ks, src, [r * ks.elems(n) for r in range(P)], P * ks.elems(n)) \
            if ME == root else None
        rbuf = kr.buffer(kr.elems(n))
        PG.Scatter(spec(ks, sbuf, n, sh % 2) if ME == root else None, spec(kr, rbuf, n, sh % 3), root)
        same(rbuf, layout(kr, [src[ME]], [0], kr.elems(n)), ("Scatter", n, root, ks.name, kr.name))


@on_pgascol_test("Gatherv")
def test_mixed_gatherv():
    """The root's layout has a one-element gap after every block."""
    for n, root, ks, kr, sh in rooted_variants():
        counts = _v_counts(n, sh)
        sbuf = layout(ks, [data(ME, counts[ME], sh)], [0], ks.elems(counts[ME]))
        if ME == root:
            displs, size = gapped(kr, counts)
            rbuf = kr.buffer(size)
            rspec = vspec(kr, rbuf, counts, displs, sh)
        PG.Gatherv(spec(ks, sbuf, counts[ME], 0), rspec if ME == root else None, root)
        if ME == root:
            same(rbuf, layout(kr, [data(r, counts[r], sh) for r in range(P)], displs, size),
                 ("Gatherv", n, root, ks.name, kr.name))


@on_pgascol_test("Scatterv")
def test_mixed_scatterv():
    """The root's blocks in reverse order, with gaps."""
    for n, root, ks, kr, sh in rooted_variants():
        counts = _v_counts(n, sh)
        src = [data(root, counts[r], 100 * sh + r) for r in range(P)]
        if ME == root:
            rev = list(range(P))[::-1]
            d_rev, size = gapped(ks, [counts[r] for r in rev])
            displs = [0] * P
            for i, r in enumerate(rev):
                displs[r] = d_rev[i]
            sbuf = layout(ks, src, displs, size)
            sspec = vspec(ks, sbuf, counts, displs, sh + 1)
        rbuf = kr.buffer(kr.elems(counts[ME]))
        PG.Scatterv(sspec if ME == root else None, spec(kr, rbuf, counts[ME], 0), root)
        same(rbuf, layout(kr, [src[ME]], [0], kr.elems(counts[ME])),
             ("Scatterv", n, root, ks.name, kr.name))


@on_pgascol_test("Allgather")
def test_mixed_allgather():
    for n, ks, kr, sh in unrooted_variants():
        sbuf = layout(ks, [data(ME, n, sh)], [0], ks.elems(n))
        rbuf = kr.buffer(P * kr.elems(n))
        PG.Allgather(spec(ks, sbuf, n, sh % 3), spec(kr, rbuf, n, sh % 2))
        same(rbuf, layout(kr, [data(r, n, sh) for r in range(P)], [r * kr.elems(n) for r in range(P)],
                          P * kr.elems(n)), ("Allgather", n, ks.name, kr.name))


@on_pgascol_test("Allgatherv")
def test_mixed_allgatherv():
    for n, ks, kr, sh in unrooted_variants():
        counts = _v_counts(n, sh)
        sbuf = layout(ks, [data(ME, counts[ME], sh)], [0], ks.elems(counts[ME]))
        displs, size = gapped(kr, counts)
        rbuf = kr.buffer(size)
        PG.Allgatherv(spec(ks, sbuf, counts[ME], 0), vspec(kr, rbuf, counts, displs, sh))
        same(rbuf, layout(kr, [data(r, counts[r], sh) for r in range(P)], displs, size),
             ("Allgatherv", n, ks.name, kr.name))


@on_pgascol_test("Alltoall")
def test_mixed_alltoall():
    for n, ks, kr, sh in unrooted_variants():
        per = _a2a_per(n)
        sbuf = layout(ks, [data(ME * P + j, per, sh) for j in range(P)],
                      [j * ks.elems(per) for j in range(P)], P * ks.elems(per))
        rbuf = kr.buffer(P * kr.elems(per))
        PG.Alltoall(spec(ks, sbuf, per, sh % 2), spec(kr, rbuf, per, sh % 3))
        same(rbuf, layout(kr, [data(i * P + ME, per, sh) for i in range(P)],
                          [i * kr.elems(per) for i in range(P)], P * kr.elems(per)),
             ("Alltoall", n, ks.name, kr.name))


@on_pgascol_test("Alltoallv")
def test_mixed_alltoallv():
    for n, ks, kr, sh in unrooted_variants():
        sc = [_a2a_count(n, ME, j) for j in range(P)]
        rc = [_a2a_count(n, i, ME) for i in range(P)]
        sd, ssize = gapped(ks, sc)
        rd, rsize = gapped(kr, rc)
        sbuf = layout(ks, [data(ME * P + j, sc[j], sh) for j in range(P)], sd, ssize)
        rbuf = kr.buffer(rsize)
        PG.Alltoallv(vspec(ks, sbuf, sc, sd, sh), vspec(kr, rbuf, rc, rd, sh + 1))
        same(rbuf, layout(kr, [data(i * P + ME, rc[i], sh) for i in range(P)], rd, rsize),
             ("Alltoallv", n, ks.name, kr.name))


# ------------------------------------------------------------------ every rank derived: columns of 2-D arrays

# The textbook use: column types (vector, resized to one double so that
# consecutive columns follow one another) on every rank.
COLUMN_ROWS = (3, 1000, LARGE)


def column_cases():
    """(rows, col3, colp, a) for every number of rows: the type of a column
    of a rows x 3 array, that of the columns of a rows x P one (freed when
    the next case is drawn), and this rank's rows x 3 array, its data in
    column 1."""
    for rows in COLUMN_ROWS:
        col3 = MPI.DOUBLE.Create_vector(rows, 1, 3).Commit()
        colp = MPI.DOUBLE.Create_vector(rows, 1, P).Create_resized(0, 8).Commit()
        a = np.full((rows, 3), -1.0)
        a[:, 1] = data(ME, rows)
        try:
            yield rows, col3, colp, a
        finally:
            col3.Free()
            colp.Free()


@on_pgascol_test("Gather")
def test_columns_gather():
    """Column 1 of every rank's rows x 3 into column r of the root's rows x P."""
    for rows, col3, colp, a in column_cases():
        for root in ROOTS:
            m = np.full((rows, P), -1.0)
            PG.Gather([a.reshape(-1)[1:], 1, col3], [m, 1, colp] if ME == root else None, root)
            if ME == root:
                same(m, np.stack([data(r, rows) for r in range(P)], axis=1), ("Gather columns", rows))


@on_pgascol_test("Scatter")
def test_columns_scatter():
    """Column r of the root's matrix into column 2 of rank r's."""
    for rows, col3, colp, a in column_cases():
        for root in ROOTS:
            src = np.stack([data(root, rows, r) for r in range(P)], axis=1)
            b = a.copy()
            PG.Scatter([src, 1, colp] if ME == root else None, [b.reshape(-1)[2:], 1, col3], root)
            want = a.copy()
            want[:, 2] = data(root, rows, ME)
            same(b, want, ("Scatter columns", rows, root))


@on_pgascol_test("Allgather")
def test_columns_allgather():
    for rows, col3, colp, a in column_cases():
        m = np.full((rows, P), -1.0)
        PG.Allgather([a.reshape(-1)[1:], 1, col3], [m, 1, colp])
        same(m, np.stack([data(r, rows) for r in range(P)], axis=1), ("Allgather columns", rows))


@on_pgascol_test("Alltoall")
def test_columns_alltoall():
    """Column j of my rows x P to rank j, into column ME of its matrix: a block transpose."""
    for rows, _, colp, _ in column_cases():
        s = np.stack([data(ME * P + j, rows) for j in range(P)], axis=1)
        t = np.full((rows, P), -1.0)
        PG.Alltoall([s, 1, colp], [t, 1, colp])
        same(t, np.stack([data(i * P + ME, rows) for i in range(P)], axis=1), ("Alltoall columns", rows))


@on_pgascol_test("Allgather")
def test_subarray_allgather():
    """A subarray (2 x 2 block in the middle of a 4 x 4 array) on every rank, gathered as plain doubles."""
    sub = MPI.DOUBLE.Create_subarray([4, 4], [2, 2], [1, 1]).Commit()
    try:
        grid = np.arange(16, dtype=np.float64).reshape(4, 4) + 100 * ME
        out = np.full((P, 4), -1.0)
        PG.Allgather([grid, 1, sub], [out, 4, MPI.DOUBLE])
        same(out, np.stack([(np.arange(16.0).reshape(4, 4) + 100 * r)[1:3, 1:3].ravel() for r in range(P)]),
             "Allgather subarray")
    finally:
        sub.Free()


# ------------------------------------------------------------------ in place, derived receive types

def in_place_variants():
    """(n, send kind, receive kind, shift) of the in-place tests."""
    for n in (SMALL, MEDIUM, LARGE):
        for sh in shifts(n)[:3]:
            yield n, kind(ME, sh), kind(ME, sh, recv=True), sh


@on_pgascol_test("Allgather")
def test_in_place_allgather():
    """My own block is read from the receive buffer."""
    for n, _, kr, sh in in_place_variants():
        ne = kr.elems(n)
        rbuf = layout(kr, [data(ME, n, sh)], [ME * ne], P * ne)
        PG.Allgather(MPI.IN_PLACE, [rbuf, kr.dt])
        same(rbuf, layout(kr, [data(r, n, sh) for r in range(P)], [r * ne for r in range(P)], P * ne),
             ("Allgather in place", n, kr.name))


@on_pgascol_test("Allgatherv")
def test_in_place_allgatherv():
    for n, _, kr, sh in in_place_variants():
        counts = _v_counts(n, sh)
        displs, size = gapped(kr, counts)
        rbuf = layout(kr, [data(ME, counts[ME], sh)], [displs[ME]], size)
        PG.Allgatherv(MPI.IN_PLACE, vspec(kr, rbuf, counts, displs, sh))
        same(rbuf, layout(kr, [data(r, counts[r], sh) for r in range(P)], displs, size),
             ("Allgatherv in place", n, kr.name))


@on_pgascol_test("Alltoall")
def test_in_place_alltoall():
    """Every block is read from the receive buffer."""
    for n, _, kr, sh in in_place_variants():
        per = _a2a_per(n)
        rbuf = layout(kr, [data(ME * P + j, per, sh) for j in range(P)],
                      [j * kr.elems(per) for j in range(P)], P * kr.elems(per))
        PG.Alltoall(MPI.IN_PLACE, [rbuf, kr.elems(per), kr.dt])
        same(rbuf, layout(kr, [data(i * P + ME, per, sh) for i in range(P)],
                          [i * kr.elems(per) for i in range(P)], P * kr.elems(per)),
             ("Alltoall in place", n, kr.name))


@on_pgascol_test("Alltoallv")
def test_in_place_alltoallv():
    for n, _, kr, sh in in_place_variants():
        rc = [_a2a_count(n, i, ME) for i in range(P)]       # symmetric: what I send to i too
        rd, rsize = gapped(kr, rc)
        rbuf = layout(kr, [data(ME * P + j, rc[j], sh) for j in range(P)], rd, rsize)
        PG.Alltoallv(MPI.IN_PLACE, vspec(kr, rbuf, rc, rd, sh))
        same(rbuf, layout(kr, [data(i * P + ME, rc[i], sh) for i in range(P)], rd, rsize),
             ("Alltoallv in place", n, kr.name))


@on_pgascol_test("Gather")
def test_in_place_gather():
    """At the root: its own block stays where it is."""
    for n, ks, kr, sh in in_place_variants():
        ne = kr.elems(n)
        for root in ROOTS:
            sbuf = layout(ks, [data(ME, n, sh)], [0], ks.elems(n))
            if ME == root:
                rbuf = layout(kr, [data(ME, n, sh)], [ME * ne], P * ne)
                PG.Gather(MPI.IN_PLACE, [rbuf, ne, kr.dt], root)
                same(rbuf, layout(kr, [data(r, n, sh) for r in range(P)], [r * ne for r in range(P)],
                                  P * ne), ("Gather in place", n, root, kr.name))
            else:
                PG.Gather([sbuf, ks.dt], None, root)


@on_pgascol_test("Gatherv")
def test_in_place_gatherv():
    for n, ks, kr, sh in in_place_variants():
        counts = _v_counts(n, sh)
        displs, size = gapped(kr, counts)
        for root in ROOTS:
            sbuf = layout(ks, [data(ME, counts[ME], sh)], [0], ks.elems(counts[ME]))
            if ME == root:
                rbuf = layout(kr, [data(ME, counts[ME], sh)], [displs[ME]], size)
                PG.Gatherv(MPI.IN_PLACE, vspec(kr, rbuf, counts, displs, sh), root)
                same(rbuf, layout(kr, [data(r, counts[r], sh) for r in range(P)], displs, size),
                     ("Gatherv in place", n, root, kr.name))
            else:
                PG.Gatherv(spec(ks, sbuf, counts[ME], 0), None, root)


@on_pgascol_test("Scatter")
def test_in_place_scatter():
    """A derived send buffer; the root keeps its block."""
    for n, ks, kr, sh in in_place_variants():
        ne = kr.elems(n)
        for root in ROOTS:
            src = [data(root, n, 100 * sh + r) for r in range(P)]
            if ME == root:
                sbuf = layout(ks, src, [r * ks.elems(n) for r in range(P)], P * ks.elems(n))
                PG.Scatter([sbuf, ks.elems(n), ks.dt], MPI.IN_PLACE, root)
            else:
                rbuf = kr.buffer(ne)
                PG.Scatter(None, [rbuf, kr.dt], root)
                same(rbuf, layout(kr, [src[ME]], [0], ne), ("Scatter in place", n, root, kr.name))


@on_pgascol_test("Scatterv")
def test_in_place_scatterv():
    for n, ks, kr, sh in in_place_variants():
        counts = _v_counts(n, sh)
        for root in ROOTS:
            if ME == root:
                sd, ssize = gapped(ks, counts)
                sbuf = layout(ks, [data(root, counts[r], r) for r in range(P)], sd, ssize)
                PG.Scatterv(vspec(ks, sbuf, counts, sd, sh), MPI.IN_PLACE, root)
            else:
                rbuf = kr.buffer(kr.elems(counts[ME]))
                PG.Scatterv(None, spec(kr, rbuf, counts[ME], 0), root)
                same(rbuf, layout(kr, [data(root, counts[ME], ME)], [0], kr.elems(counts[ME])),
                     ("Scatterv in place", n, root, kr.name))
