"""pgascol.sparse: every format x dtype x distribution x trans against
scipy.sparse on the gathered operands (the same matrices on every rank,
from one seed), square and rectangular, with empty rows and columns; a
rank with no rows; SpMM with 1, 3 and 64 columns; a matrix reused while x
changes; operands in other layouts (redistributed); misuse. Run at np 1,
2, 3, 4 and 8 and on virtual nodes (PGASCOL_NODE_SIZE: the halo messages
and Rget windows); PGASCOL_SPARSE_TEST_SAMPLE=0.2 runs a fixed random
fifth of the product (every case by default)."""
import contextlib
import itertools
import os

import numpy as np
import scipy.sparse as sp
from mpi4py import MPI

import pgascol
from pgascol import pgas, sparse
from pgascol.errors import ArgumentError, FreedError
from tests.mpi_programs.blas_common import expect, rand

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
FORMATS = ("csr", "coo", "bsr", "csc", "dia", "dia-rows", "sky")    # dia: by diagonals; dia-rows: split="rows"
TYPES = (np.float32, np.float64, np.complex64, np.complex128)
TOL = {np.float32: 1e-4, np.float64: 1e-12, np.complex64: 1e-4, np.complex128: 1e-12}
SAMPLE = os.environ.get("PGASCOL_SPARSE_TEST_SAMPLE", "all")


def sampled(cases):
    """All cases, or a fixed random fraction of them (the same on every rank)."""
    cases = list(cases)
    if SAMPLE == "all":
        return cases
    keep = np.random.default_rng(5).random(len(cases)) < float(SAMPLE)
    return [c for c, k in zip(cases, keep) if k]


def matrix(shape, dt, seed, fmt="csr", density=0.3):
    """A random matrix with an empty row and an empty column (skyline:
    its lower or upper triangle by the seed's parity)."""
    rng = np.random.default_rng(seed)
    m, n = shape
    G = sp.random_array(shape, density=density, rng=rng, format="lil")
    if np.dtype(dt).kind == "c":
        G = G + 1j * sp.random_array(shape, density=density, rng=rng, format="lil")
    G = sp.lil_array(G.astype(dt))
    if m > 2 and n > 2:
        G[m // 2, :] = 0
        G[:, n // 3] = 0
    if fmt == "sky":
        G = sp.tril(G) if seed % 2 else sp.triu(G)
    return sp.csr_array(G)


def make(G, fmt, dist, blocksize=None):
    """The matrix of G distributed from rank 0, from the last rank, replicated,
    or from local rows; fmt "dia-rows": DIA with split="rows"."""
    fmt, _, split = fmt.partition("-")
    kw = {"blocksize": blocksize} if fmt == "bsr" else {"split": split} if split else {}
    if dist == "local":
        counts = [len(r) for r in np.array_split(np.arange(G.shape[0]), P)]
        lo = sum(counts[:ME])
        return sparse.from_local_rows(COMM, G[lo:lo + counts[ME]], format=fmt, **kw)
    root = {"root0": 0, "rootlast": P - 1, "replicated": None}[dist]
    return sparse.from_scipy(COMM, G if root is None or ME == root else None, root=root, format=fmt, **kw)


def fill(a, g):
    """Each rank writes its own elements of global array a from numpy g."""
    for lo, hi in a.owned():
        a.local()[:] = g[lo:hi]


def close(got, want, dt, what):
    scale = max(np.abs(want).max() if np.size(want) else 1.0, 1.0)
    err = np.abs(np.asarray(got) - want).max() / scale if np.size(want) else 0.0
    assert err <= TOL[dt] * 20, "%s: relative error %.3g" % (what, err)


def op(G, trans):
    return {"N": G, "T": G.T, "C": G.conj().T}[trans]


def check_mv(A, G, trans, dt, seed, what):
    """Global and replicated operands, beta 0 and not, against scipy."""
    O = op(G, trans)
    kx, ky = ("col", "row") if trans == "N" else ("row", "col")
    xg, y0 = rand(O.shape[1], dt, seed), rand(O.shape[0], dt, seed + 1)
    alpha, beta = (2 - 1j, 0.5 + 1j) if np.dtype(dt).kind == "c" else (2.0, 0.5)
    with A.vector(kx) as x, A.vector(ky) as y:
        fill(x, xg)
        fill(y, y0)
        pgas.barrier(COMM)
        sparse.mv(A, x, y, alpha, beta, trans)
        close(y[:], alpha * (O @ xg) + beta * y0, dt, what + " global")
        sparse.mv(A, x, y, alpha, 0, trans)
        close(y[:], alpha * (O @ xg), dt, what + " global beta 0")
        assert np.array_equal(x[:], xg), what + ": x was written"
    yr = y0.copy()
    sparse.mv(A, xg.copy(), yr, alpha, beta, trans)
    close(yr, alpha * (O @ xg) + beta * y0, dt, what + " replicated")


def test_to_scipy_and_local_every_format_and_distribution():
    for fmt, dist in itertools.product(FORMATS, ("root0", "rootlast", "replicated")):
        G = matrix((9, 7) if fmt != "bsr" else (8, 6), np.float64, 3, fmt)
        with make(G, fmt, dist, (2, 3)) as A:
            back = A.to_scipy(root=0)
            if ME == 0:
                assert abs(back - G).max() == 0, (fmt, dist)
            assert A.nnz == G.nnz or fmt in ("bsr", "dia", "dia-rows", "sky")
            assert sum(A.row_counts) == G.shape[0] and sum(A.col_counts) == G.shape[1]
            assert A.format == fmt.partition("-")[0] and A.dtype == np.float64 and A.shape == G.shape
            assert A.local().format == {"sky": "csr" if A.uplo == "L" else "csc", "dia-rows": "dia"}.get(fmt, fmt)


def test_mv_every_format_type_distribution_shape_and_trans():
    """Every type distributed from rank 0; the other distributions (from the
    last rank, replicated, from local rows) with one type each, in turn."""
    cases = [(f, t, d, s, tr) for f, t, d, s, tr in itertools.product(
             FORMATS, TYPES, ("root0", "rootlast", "replicated", "local"), ((12, 12), (13, 8), (6, 10)), "NTC")
             if d == "root0" or (TYPES.index(t) + FORMATS.index(f) + "NTC".index(tr)) % 4 == 1]
    for i, (fmt, dt, dist, shape, trans) in enumerate(sampled(cases)):
        if dist == "local" and fmt not in ("csr", "coo", "dia-rows"):
            continue
        if fmt == "bsr" and shape == (13, 8):
            shape = (14, 8)                         # a shape the 2 x 2 blocks divide
        G = matrix(shape, dt, i, fmt)
        with make(G, fmt, dist, (2, 2)) as A:
            check_mv(A, G, trans, dt, i, "%s %s %s %s %s" % (fmt, np.dtype(dt).name, dist, shape, trans))


def test_a_rank_with_no_rows():
    """Every nonzero in the last row (by rows) or column (by columns): by
    nonzeros, one rank takes it and the others have nothing."""
    last_row = sp.csr_array(np.pad(np.ones((1, 6)), ((5, 0), (0, 0))))
    for fmt in ("csr", "coo", "bsr", "sky", "csc", "dia", "dia-rows"):
        H = last_row.T.tocsr() if fmt == "csc" else last_row
        with make(H, fmt, "root0", (1, 2)) as A:
            if P > 1 and not fmt.startswith("dia"):
                assert 0 in A.line_counts, (fmt, A.line_counts)
            for trans in "NT":
                check_mv(A, H, trans, np.float64, 7, "no rows %s %s" % (fmt, trans))


def test_mm_with_1_3_and_64_columns():
    cases = itertools.product(FORMATS, (np.float64, np.complex64), (1, 3, 64), "NC")
    for i, (fmt, dt, k, trans) in enumerate(sampled(cases)):
        G = matrix((12, 10), dt, 40 + i, fmt)
        O = op(G, trans)
        Bg = np.stack([rand(O.shape[1], dt, j) for j in range(k)], 1)
        C0 = np.stack([rand(O.shape[0], dt, 100 + j) for j in range(k)], 1)
        what = "mm %s %s k=%d %s" % (fmt, np.dtype(dt).name, k, trans)
        with make(G, fmt, "root0", (2, 2)) as A:
            kb, kc = ("col", "row") if trans == "N" else ("row", "col")
            with A.matrix(kb, k) as B, A.matrix(kc, k) as C:
                for lo, hi in B.owned_rows():
                    B.local()[:] = Bg[lo:hi]
                for lo, hi in C.owned_rows():
                    C.local()[:] = C0[lo:hi]
                pgas.barrier(COMM)
                sparse.mm(A, B, C, 2.0, 1.0, trans)
                close(C[:, :], 2 * (O @ Bg) + C0, dt, what)
            Cr = C0.copy()
            sparse.mm(A, Bg, Cr, 2.0, 1.0, trans)
            close(Cr, 2 * (O @ Bg) + C0, dt, what + " replicated")


def test_a_matrix_reused_while_x_changes():
    G = matrix((40, 40), np.float64, 9)
    for fmt in ("csr", "csc", "sky", "dia", "dia-rows"):
        H = sp.csr_array(sp.tril(G)) if fmt == "sky" else G
        with make(H, fmt, "root0") as A, A.vector("col") as x, A.vector("row") as y:
            for it in range(12):
                xg = rand(40, np.float64, it)
                fill(x, xg)             # the caller's own part, then mv's barrier makes it visible
                sparse.mv(A, x, y, 1.0, 0.0)
                close(y[:], H @ xg, np.float64, "%s iteration %d" % (fmt, it))


def test_operands_in_other_layouts_are_redistributed():
    G = matrix((11, 9), np.float64, 12)
    xg, y0 = rand(9, np.float64, 1), rand(11, np.float64, 2)
    with make(G, "csr", "root0") as A:
        for block in (1, 3, "*"):
            with pgas.array(COMM, 9, np.float64, block=block) as x, \
                    pgas.array(COMM, 11, np.float64, block=block) as y:
                fill_any(x, xg)
                fill_any(y, y0)
                pgas.barrier(COMM)
                sparse.mv(A, x, y, 1.0, 2.0)
                close(y[:], G @ xg + 2 * y0, np.float64, "block %s" % block)


def fill_any(a, g):
    idx = np.concatenate([np.arange(lo, hi) for lo, hi in a.owned()] or [np.zeros(0, int)])
    a.local()[:] = g[idx]


def test_dia_split_by_diagonals_or_by_rows():
    """DIA by diagonals (the default): diagonal d whole on rank d % P, every
    product through a partial y and Reduce_scatter (no exchange plan); by
    rows: rank r's row block of every diagonal crossing it, y in place.
    A split refused for the other formats and an unknown one, on every rank."""
    G = matrix((11, 9), np.float64, 4)
    offsets = sp.dia_array(G).offsets
    with make(G, "dia", "root0") as A, make(G, "dia-rows", "rootlast") as B:
        assert (A.split, A.axis, B.split, B.axis) == ("diagonals", "diag", "rows", "row")
        assert A.line_counts == np.bincount(np.arange(len(offsets)) % P, minlength=P).tolist()
        assert A.local().shape == G.shape and sorted(A.local().offsets) == sorted(offsets[ME::P])
        assert B.line_counts == B.row_counts and B.local().shape == (B.row_counts[ME], 9)
        for H in (A, B):
            check_mv(H, G, "N", np.float64, 3, "dia by " + H.split)
        assert not A._plans and "exchange" in B._plans
        _upcblas_dia_is_split_by_diagonals(A, G)
    for fmt, split, words in (("csr", "rows", "format dia only"), ("dia", "cols", "must be one of")):
        exc = expect(ArgumentError, sparse.from_scipy, COMM, G if ME == 0 else None, 0, fmt, None, split)
        assert words in str(exc), str(exc)
    mine = G[np.array_split(np.arange(11), P)[ME]]
    for fmt, split, words in (("csr", "rows", "format dia only"), ("dia", None, 'split="rows"')):
        exc = expect(ArgumentError, sparse.from_local_rows, COMM, mine, None, fmt, split)
        assert words in str(exc), str(exc)
    with make(G, "dia-rows", "local") as C:     # each rank's own rows, nothing moved
        assert C.split == "rows" and C.line_counts == [len(r) for r in np.array_split(np.arange(11), P)]
        check_mv(C, G, "T", np.float64, 5, "dia by rows from local rows")


def _upcblas_dia_is_split_by_diagonals(A, G):
    """UPCBLAS's per-call susmv_dia builds its matrix by diagonals (the thesis's split)."""
    from pgascol.sparse import upcblas
    made, real = [], upcblas.from_scipy

    def spy(*args, **kw):
        made.append(real(*args, **kw))
        return made[-1]
    xg = rand(G.shape[1], np.float64, 8)
    upcblas.from_scipy = spy
    try:
        with A.vector("col") as x, A.vector("row", fill=1.0) as y:
            fill(x, xg)
            pgas.barrier(COMM)
            arrays = upcblas.arrays_of(G, "dia") if ME == 0 else (None,) * upcblas.NARGS["dia"]
            upcblas.upc_blas_dsusmv_dia(0, 2.0, *arrays, x, y, 0)
            close(y[:], 2 * (G @ xg) + 1, np.float64, "upc_blas_dsusmv_dia")
    finally:
        upcblas.from_scipy = real
    assert [H.split for H in made] == ["diagonals"], made


def test_index_dtype_is_int32_where_it_fits():
    with make(matrix((10, 10), np.float32, 1), "csr", "root0") as A:
        assert A._piece["idx"].dtype == np.int32 and A._piece["ptr"].dtype == np.int32


def test_misuse_raises_on_every_rank_and_writes_nothing():
    G = matrix((8, 6), np.float64, 2)
    with make(G, "csr", "root0") as A, A.vector("col") as x, A.vector("row") as y, \
            pgas.array(COMM, None, np.float32, counts=A.row_counts) as y32, \
            pgas.array(COMM, 7, np.float64) as wrong:
        fill(y, np.arange(8.0))
        pgas.barrier(COMM)
        cases = [
            (lambda: sparse.mv(A, x, wrong), "rows"),                   # shape mismatch
            (lambda: sparse.mv(A, y, x, trans="N"), "rows"),
            (lambda: sparse.mv(A, x, y32), "dtype"),                    # dtype mismatch
            (lambda: sparse.mv(A, x, y, trans="X"), "trans"),
            (lambda: sparse.mv(A, x, np.zeros(8)), "both be global"),
            (lambda: sparse.mv(A, x, x), "overlap"),
            (lambda: sparse.mm(A, x, y), "Matrix"),
            (lambda: sparse.mv(A, x, y, alpha=1j), "alpha"),
            (lambda: A.vector("diag"), "kind"),
        ]
        for fn, words in cases:
            exc = expect(ArgumentError, fn)
            assert words in str(exc), (words, str(exc))
        assert np.array_equal(y[:], np.arange(8.0)), "y was written"
    bad = sp.csr_array(G, copy=True)
    bad.indices[0] = 99                                                 # index out of range
    unsorted = sp.csr_array(G, copy=True)
    row = next(i for i in range(8) if unsorted.indptr[i + 1] - unsorted.indptr[i] >= 2)
    a, b = unsorted.indptr[row], unsorted.indptr[row + 1]
    unsorted.indices[a:b] = unsorted.indices[a:b][::-1].copy()
    ptr = sp.csr_array(G, copy=True)
    ptr.indptr[3] = 10 ** 6                                             # malformed offsets
    for M, words in ((bad, "out of range"), (unsorted, "unsorted"), (ptr, "malformed"),
                     (G.astype(np.int64), "dtype"), (np.ones((3, 3)), "scipy.sparse")):
        exc = expect(ArgumentError, sparse.from_scipy, COMM, M if ME == 0 else None, 0, "csr")
        assert words in str(exc) and "rank 0" in str(exc), (words, str(exc))
    expect(ArgumentError, sparse.from_scipy, COMM, G if ME == 0 else None, 0, "ell")
    expect(ArgumentError, sparse.from_scipy, COMM, G if ME == 0 else None, 0, "sky")     # not triangular
    if P > 1:                                       # replicated operands that differ on one rank only
        with make(G, "csr", "root0") as A:
            xs = np.ones(6 if ME else 7)
            expect(ArgumentError, sparse.mv, A, xs, np.zeros(8))
    A = make(G, "csr", "root0")
    A.free()
    with pgas.array(COMM, 6, np.float64) as x6:
        expect(FreedError, sparse.mv, A, x6, np.zeros(8))
    expect(FreedError, A.vector, "row")
    assert COMM.allreduce(1) == P                   # the communicator is still usable


def test_pgas_matrix_with_row_counts():
    counts = [(r * 2) % 5 for r in range(P)]                   # rank 0 holds no rows
    m = sum(counts)
    with pgas.matrix(COMM, (m, 3), np.complex64, dist="row", counts=counts, ld=4, fill=1) as M:
        assert M.local().shape == (counts[ME], 3) and M.ld == 4
        lo = sum(counts[:ME])
        assert M.owned_rows() == ([(lo, lo + counts[ME])] if counts[ME] else [])
        M.local()[:] = np.arange(lo, lo + counts[ME])[:, None] + 1j
        pgas.barrier(COMM)
        assert np.array_equal(M[:, :], np.arange(m)[:, None] + np.zeros((1, 3)) + 1j)
        pgas.barrier(COMM)
    expect(ArgumentError, pgas.matrix, COMM, (m + 1, 3), np.float64, dist="row", counts=counts)
    expect(ArgumentError, pgas.matrix, COMM, (m, 3), np.float64, dist="col", counts=counts)


def test_mm_operands_in_other_layouts_are_redistributed():
    G = matrix((12, 10), np.float64, 21)
    Bg, C0 = rand(30, np.float64, 1).reshape(10, 3), rand(36, np.float64, 2).reshape(12, 3)
    with make(G, "csr", "root0") as A, pgas.matrix(COMM, (10, 3), np.float64, block=2) as B, \
            pgas.matrix(COMM, (12, 3), np.float64, block=1) as C:
        for M, g in ((B, Bg), (C, C0)):
            rows = [i for lo, hi in M.owned_rows() for i in range(lo, min(hi, M.rows))]
            M.local()[:] = g[rows]
        pgas.barrier(COMM)
        sparse.mm(A, B, C, 1.0, -1.0)
        close(C[:, :], G @ Bg - C0, np.float64, "mm block-cyclic operands")


def test_the_halo_holds_only_entries_of_other_nodes_that_the_rows_touch():
    """A tridiagonal matrix, CSR and DIA split by rows: a rank's rows
    touch one column past each end of its range; those of ranks on its node
    are read in place (no halo), the others arrive by message, and nothing
    else does."""
    n = 30
    G = sp.csr_array(sp.diags_array([np.ones(n - 1), 2 * np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1]))
    for fmt in ("csr", "dia-rows"):
        with make(G, fmt, "root0") as A, A.vector("col", fill=1.0) as x, A.vector("row") as y:
            sparse.mv(A, x, y, 1.0, 0.0)
            close(y[:], G @ np.ones(n), np.float64, "tridiagonal " + fmt)
            ex = A._plans["exchange"]
            ctx = A._ctx
            lo, hi = A.lo, A.lo + A.row_counts[ME]
            touched = {c for c in (lo - 1, hi) if 0 <= c < n and hi > lo}
            owner = np.searchsorted(np.cumsum(A.col_counts), sorted(touched), side="right")
            expected = sorted(c for c, r in zip(sorted(touched), owner) if not ctx.on_node[r])
            assert ex.halo.tolist() == expected, (fmt, ex.halo, expected)
            assert sum(len(rows) for _, rows in ex.send) == len(expected) or ctx.nnodes == 1


FAILING = P - 1


def banded(n, dt=np.float64):
    """A random tridiagonal n x n matrix: every rank's halo narrow enough for
    the reversed exchange (plan.scatter) at any np."""
    i = np.arange(n)
    rows, cols = np.concatenate([i, i[1:], i[:-1]]), np.concatenate([i, i[:-1], i[1:]])
    vals = rand(len(rows), dt, 13)
    return sp.csr_array((vals, (rows, cols)), shape=(n, n))


def test_the_reversed_exchange_of_narrow_transposed_products():
    """csc N, csr T, coo C, bsr T, dia (by rows) C, lower sky T and upper sky N on a
    banded matrix take plan.scatter (a Reduce_scatter otherwise); against
    scipy, beta 0 and not, global and replicated."""
    for dt in (np.float64, np.complex128):
        B = banded(8 * P + 4, dt)
        for fmt, trans, G in (("csc", "N", B), ("csr", "T", B), ("coo", "C", B), ("bsr", "T", B), ("dia-rows", "C", B),
                              ("sky", "T", sp.tril(B, format="csr")), ("sky", "N", sp.triu(B, format="csr"))):
            with make(G, fmt, "root0", (2, 2)) as A:
                check_mv(A, G, trans, dt, 21, "%s %s %s" % (fmt, trans, np.dtype(dt)))
                assert A._plans["reverse"] is not None, "%s %s did not take the reversed exchange" % (fmt, trans)


class Fail:
    """On rank FAILING only, module attribute `name` of `owner` raises while
    the with lasts (a real exception in that rank's local work)."""

    def __init__(self, owner, name):
        self.owner, self.name = owner, name

    def __enter__(self):
        self.saved = getattr(self.owner, self.name)
        if ME == FAILING:
            def boom(*args, **kw):
                raise RuntimeError("deliberate failure in %s" % self.name)
            setattr(self.owner, self.name, boom)

    def __exit__(self, *exc):
        setattr(self.owner, self.name, self.saved)


def fails_everywhere(fn, where):
    """fn() with `where` failing on rank FAILING: every rank raises
    OperationFailedError naming it and the cause, long before PGASCOL_TIMEOUT."""
    from pgascol.errors import OperationFailedError
    limit = min(5.0, float(os.environ.get("PGASCOL_TIMEOUT", "20")) / 2)
    t = MPI.Wtime()
    with Fail(*where):
        exc = expect(OperationFailedError, fn)
    took = MPI.Wtime() - t
    assert "rank %d (RuntimeError: deliberate failure in %s)" % (FAILING, where[1]) in str(exc), str(exc)
    assert took < limit, "the failure took %.1f s to reach rank %d" % (took, ME)
    assert (exc.__cause__ is not None) == (ME == FAILING)


@contextlib.contextmanager
def operands(A, trans, xg):
    """x and y of op(A) x, laid out as A's, x filled with xg (visible to all)."""
    with A.vector("col") as x, A.vector("row") as y:
        if trans != "N":
            x, y = y, x
        fill(x, xg)
        pgas.barrier(COMM)
        yield x, y


def failing_product(A, x, y, where, trans="N"):
    fails_everywhere(lambda: sparse.mv(A, x, y, 1.0, 0.0, trans), where)


def test_a_failure_while_building_ends_every_rank_and_leaves_everything_usable():
    """One rank raises after the argument check while the others are in a
    collective of the build (the root's metadata before its bcast, a piece,
    the split of local rows; a product's first exchange plan, gather and
    scatter; its remap): OperationFailedError on every rank at once, no
    matrix or plan kept, and the same build or product succeeds after."""
    from pgascol.sparse import matrix, plan
    n = 6 * P + 5
    G = banded(n)
    xg = rand(n, np.float64, 14)
    for fmt, dist, where in (("csr", "rootlast", (matrix, "_meta")), ("dia", "root0", (matrix, "_piece_matrix")),
                             ("bsr", "replicated", (matrix, "_meta")), ("coo", "local", (matrix.formats, "split"))):
        fails_everywhere(lambda: make(G, fmt, dist, (1, 1)), where)
        with make(G, fmt, dist, (1, 1)) as A:
            back = A.to_scipy(root=0)
            assert ME != 0 or abs(back - G).max() == 0, (fmt, dist)
    for fmt, trans, where in (("csr", "N", (plan.Exchange, "_split")), ("csr", "T", (plan.Exchange, "_asked")),
                              ("dia-rows", "N", (matrix.SparseMatrix, "_remap")), ("csc", "N", (plan.Exchange, "_split"))):
        if where[1] == "_asked" and P == 1:
            continue                    # one rank: nobody to ask, the step does not run
        with make(G, fmt, "root0") as A, operands(A, trans, xg) as (x, y):
            failing_product(A, x, y, where, trans)
            if where[1] == "_remap":        # the product's own failure: no remap kept where it failed
                assert ME != FAILING or not any(k[0] == "remap" for k in A._plans if isinstance(k, tuple))
            else:                           # the plan's: no exchange kept anywhere
                assert "exchange" not in A._plans and "reverse" not in A._plans, list(A._plans)
            sparse.mv(A, x, y, 1.0, 0.0, trans)
            close(y[:], op(G, trans) @ xg, np.float64, "%s %s after a failed plan" % (fmt, trans))
    COMM.Barrier()


def test_a_failure_mid_product_ends_every_rank_and_leaves_everything_usable():
    from pgascol.sparse import products, plan
    n = 6 * P + 5
    G = banded(n)
    xg = rand(n, np.float64, 12)
    gather, scatter, partial = (plan, "kernel"), (plan, "scatter_kernel"), (products, "_scatter_local")
    cases = [("csr", "N", gather, gather), ("csr", "N", (plan.Exchange, "_pack"), gather),
             ("coo", "N", gather, gather), ("csr", "T", scatter, partial), ("coo", "C", scatter, partial),
             ("csc", "N", scatter, partial), ("dia", "N", partial, partial), ("dia-rows", "N", gather, gather),
             ("dia-rows", "T", scatter, partial),
             ("sky", "T", scatter, partial)]
    for fmt, trans, where, where_replicated in cases:
        H = sp.tril(G, format="csr") if fmt == "sky" else G
        with make(H, fmt, "root0") as A, operands(A, trans, xg) as (x, y):
            failing_product(A, x, y, where, trans)
            # the same matrix, operands and communicator afterwards: a correct product
            sparse.mv(A, x, y, 1.0, 0.0, trans)
            close(y[:], op(H, trans) @ xg, np.float64, "%s %s after the failure" % (fmt, trans))
            yr = np.zeros(n)                                # the replicated path
            failing_product(A, xg.copy(), yr, where_replicated, trans)
            sparse.mv(A, xg.copy(), yr, 1.0, 0.0, trans)
            close(yr, op(H, trans) @ xg, np.float64, "%s %s replicated after the failure" % (fmt, trans))
    COMM.Barrier()
