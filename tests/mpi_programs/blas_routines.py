"""pgascol.blas: every routine, type, distribution and flag against
scipy.linalg.blas on the gathered operands (the same numbers on every
rank, from one seed), with block sizes 1, odd and blocked and sizes that P
does not divide. Run with 1, 2, 3, 4 and 8 ranks, and with
PGASCOL_NODE_SIZE for the inter-node paths (Allgatherv, Reduce_scatter,
Rget panels)."""
import itertools

import numpy as np
import scipy.linalg.blas as sb
from mpi4py import MPI

import pgascol
from pgascol import blas, pgas
from pgascol.errors import ArgumentError
from tests.mpi_programs.blas_common import expect, rand

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
TYPES = (np.float32, np.float64, np.complex64, np.complex128)
PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
TOL = {np.float32: 2e-4, np.float64: 1e-11, np.complex64: 2e-4, np.complex128: 1e-11}
M, N, K = 13, 11, 7            # no rank count of the suite divides them all


def blocks(n):
    """Block 1 (cyclic), odd (3) and blocked (ceil(n/P))."""
    return sorted({1, 3, -(-n // P)})


def ref(name, dt):
    return getattr(sb, PREFIX[dt] + name)


def close(got, want, dt, what):
    scale = max(np.abs(want).max() if np.size(want) else 1.0, 1.0)
    err = np.abs(np.asarray(got) - want).max() / scale if np.size(want) else 0.0
    assert err <= TOL[dt] * 10, "%s (%s): relative error %.3g" % (what, np.dtype(dt).name, err)


def put_matrix(a, g):
    """Every rank writes its own part of global matrix a from numpy g."""
    if a.dist == "row":
        rows = [i for lo, hi in a.owned_rows() for i in range(lo, min(hi, a.rows))]
        a.local()[:] = g[rows]
    else:
        cols = [j for lo, hi in a.owned_cols() for j in range(lo, hi)]
        a.local()[:, :len(cols)] = g[:, cols]


def put_vector(x, g):
    idx = [i for lo, hi in x.owned() for i in range(lo, hi)]
    x.local()[:] = g[idx]


def mat(g, dist, block):
    a = pgas.matrix(COMM, g.shape, g.dtype, block=block, dist=dist)
    put_matrix(a, g)
    return a


def vec(g, block):
    x = pgas.array(COMM, len(g), g.dtype, block=block)
    put_vector(x, g)
    return x


def gathered(a):
    """The whole of a on every rank; barriers before (everyone's writes
    done) and after (nobody writes while others still read)."""
    pgas.barrier(COMM)
    out = a[:, :] if isinstance(a, pgas.Matrix) else a[:]
    pgas.barrier(COMM)
    return out


def free(*arrays):
    for a in arrays:
        a.free()


# ---------------------------------------------------------------- BLAS1

def test_blas1_every_type_and_layout():
    n = 37
    for dt, block in itertools.product(TYPES, (1, 3, "*")):
        X, Y = rand(n, dt, 1), rand(n, dt, 2)
        x, y = vec(X, block), vec(Y, block)
        pgas.barrier(COMM)
        close(blas.dot(x, y), X @ Y, dt, "dot")
        if np.dtype(dt).kind == "c":
            close(blas.dotu(x, y), ref("dotu", dt)(X, Y), dt, "dotu")
            close(blas.dotc(x, y), ref("dotc", dt)(X, Y), dt, "dotc")
            close(blas.asum(x), getattr(sb, {np.complex64: "scasum", np.complex128: "dzasum"}[dt])(X), dt, "asum")
            close(blas.nrm2(x), getattr(sb, {np.complex64: "scnrm2", np.complex128: "dznrm2"}[dt])(X), dt, "nrm2")
        else:
            close(blas.asum(x), ref("asum", dt)(X), dt, "asum")
            close(blas.nrm2(x), ref("nrm2", dt)(X), dt, "nrm2")
        alpha = 0.5 - 0.25j if np.dtype(dt).kind == "c" else 0.5
        blas.axpy(x, y, a=alpha)
        close(gathered(y), ref("axpy", dt)(X, Y.copy(), a=alpha), dt, "axpy")
        blas.axpy(x, y, 5, 1.0)                         # the first 5 elements (scipy's n)
        close(gathered(y), ref("axpy", dt)(X, ref("axpy", dt)(X, Y.copy(), a=alpha), 5, 1.0), dt, "axpy n=5")
        blas.scal(2.0, x)
        close(gathered(x), 2 * X, dt, "scal")
        blas.swap(x, y)
        close(gathered(y), 2 * X, dt, "swap")
        blas.copy(y, x)
        close(gathered(x), 2 * X, dt, "copy")
        free(x, y)


def test_blas1_on_irregular_arrays():
    """counts=[...] (one contiguous range per rank, some empty), as the
    sparse layer's vectors: dot, axpy, scal, nrm2, asum, copy, swap against
    SciPy; arrays with other counts are refused on every rank."""
    counts = [(3 * r + 5) % 7 for r in range(P)]            # 5, 1, 4, 0, 3, 6, 2, 5: rank 3 has none
    n = sum(counts)
    other = counts[::-1] if P > 1 and counts[::-1] != counts else None
    for dt in (np.float64, np.complex128):
        X, Y = rand(n, dt, 26), rand(n, dt, 27)
        x, y = (pgas.array(COMM, n, dt, counts=counts) for _ in range(2))
        put_vector(x, X)
        put_vector(y, Y)
        pgas.barrier(COMM)
        close(blas.dot(x, y), X @ Y, dt, "dot irregular")
        close(blas.nrm2(x), np.linalg.norm(X), dt, "nrm2 irregular")
        close(blas.asum(x), np.abs(X.real).sum() + np.abs(X.imag).sum(), dt, "asum irregular")
        blas.axpy(x, y, a=0.5)
        close(gathered(y), Y + 0.5 * X, dt, "axpy irregular")
        blas.scal(3.0, x)
        close(gathered(x), 3 * X, dt, "scal irregular")
        blas.swap(x, y)
        blas.copy(y, x)
        close(gathered(x), 3 * X, dt, "swap, copy irregular")
        if other is not None:
            with pgas.array(COMM, n, dt, counts=other) as z:
                expect(ArgumentError, blas.dot, x, z)
        free(x, y)


def test_scalars_are_returned_on_every_rank():
    X = rand(29, np.float64, 3)
    with vec(X, 2) as x:
        pgas.barrier(COMM)
        got = WORLD.allgather((float(blas.nrm2(x)), float(blas.asum(x)), float(blas.dot(x, x))))
    assert all(g == got[0] for g in got)
    close(got[0][0], np.linalg.norm(X), np.float64, "nrm2")


def test_nrm2_does_not_overflow():
    for dt, big in ((np.float64, 1e300), (np.float32, 1e30), (np.complex128, 1e300)):
        X = np.full(20, big, dt)
        with vec(X, 1) as x:
            pgas.barrier(COMM)
            got = blas.nrm2(x)
        assert np.isfinite(got) and abs(got / (big * np.sqrt(20)) - 1) < 1e-5, (dt, got)


# ---------------------------------------------------------------- BLAS2

def test_gemv_by_rows_and_columns_every_trans():
    for dt in TYPES:
        A = rand((M, N), dt, 4)
        for dist in ("row", "col"):
            for block in blocks(M if dist == "row" else N):
                a = mat(A, dist, block)
                for trans in (0, 1, 2) if np.dtype(dt).kind == "c" else (0, 1):
                    m, n = (M, N) if trans == 0 else (N, M)
                    X, Y = rand(n, dt, 5), rand(m, dt, 6)
                    rows = (dist == "row") == (trans == 0)
                    x = vec(X, "*" if rows else block)        # replicated: any layout
                    y = vec(Y, block if rows else 1)          # reduced: any layout
                    pgas.barrier(COMM)
                    blas.gemv(1.5, a, x, 0.5, y, trans=trans)
                    want = ref("gemv", dt)(1.5, A, X, 0.5, Y.copy(), trans=trans)
                    close(gathered(y), want, dt, "gemv %s block %d trans %d" % (dist, block, trans))
                    fresh = blas.gemv(2.0, a, x, trans=trans)
                    close(gathered(fresh), ref("gemv", dt)(2.0, A, X, trans=trans), dt, "gemv y=None")
                    free(x, y, fresh)
                a.free()


def test_ger_by_rows_and_columns():
    for dt in TYPES:
        A, X, Y = rand((M, N), dt, 7), rand(M, dt, 8), rand(N, dt, 9)
        for dist in ("row", "col"):
            for block in blocks(M if dist == "row" else N):
                kinds = ("geru", "gerc") if np.dtype(dt).kind == "c" else ("ger",)
                for kind in kinds:
                    a = mat(A, dist, block)
                    x = vec(X, block if dist == "row" else 2)
                    y = vec(Y, 5 if dist == "row" else block)
                    pgas.barrier(COMM)
                    getattr(blas, kind)(0.75, x, y, a=a)
                    close(gathered(a), ref(kind, dt)(0.75, X, Y, a=A.copy()), dt, "%s %s %d" % (kind, dist, block))
                    if dist == "row":                   # a=None: a new matrix, alpha x y^T, by rows like x
                        new = getattr(blas, kind)(0.75, x, y)
                        close(gathered(new), ref(kind, dt)(0.75, X, Y), dt, "%s a=None" % kind)
                        new.free()
                    free(a, x, y)


def _triangular(n, dt, seed, lower):
    A = rand((n, n), dt, seed) / n
    A[np.diag_indices(n)] += 2
    return np.tril(A) if lower else np.triu(A)


def test_trsv_every_flag():
    n = M
    for dt in TYPES:
        for lower, diag in itertools.product((0, 1), (0, 1)):
            A = _triangular(n, dt, 10, lower)
            for dist, block in itertools.product(("row", "col"), blocks(n) if dt == np.float64 else (3,)):
                a = mat(A, dist, block)
                for trans in (0, 1, 2) if np.dtype(dt).kind == "c" else (0, 1):
                    X = rand(n, dt, 11)
                    x = vec(X, block)
                    pgas.barrier(COMM)
                    blas.trsv(a, x, lower=lower, trans=trans, diag=diag)
                    want = ref("trsv", dt)(A, X, lower=lower, trans=trans, diag=diag)
                    close(gathered(x), want, dt, "trsv a by %s lower %d trans %d diag %d block %d"
                          % (dist, lower, trans, diag, block))
                    x.free()
                a.free()


# ---------------------------------------------------------------- BLAS3

def _gemm_cases(dt):
    """(ta, tb, a's, b's and c's distributions, which operands share c's block):
    op(a)'s rows like C's, op(b)'s columns like C's, or (the outer product)
    op(a)'s columns and op(b)'s rows alike, C by rows or by columns."""
    transes = (0, 1, 2) if np.dtype(dt).kind == "c" else (0, 1)
    for ta, tb in itertools.product(transes, transes):
        for da, db in itertools.product(("row", "col"), ("row", "col")):
            a_rows = (da == "row") == (ta == 0)     # op(a)'s rows on their ranks
            b_cols = (db == "col") == (tb == 0)     # op(b)'s columns on their ranks
            if a_rows:
                yield ta, tb, da, db, "row", "a"
            if b_cols:
                yield ta, tb, da, db, "col", "b"
            if not a_rows and not b_cols:
                yield ta, tb, da, db, "row", "k"
                yield ta, tb, da, db, "col", "k"


def test_gemm_every_distribution_and_trans():
    for dt in TYPES:
        for ta, tb, da, db, dc, like in _gemm_cases(dt):
            if dt in (np.float32, np.complex64) and (ta, tb) not in ((0, 0), (1, 1), (2, 0)):
                continue
            A = rand((M, K) if ta == 0 else (K, M), dt, 12)
            B = rand((K, N) if tb == 0 else (N, K), dt, 13)
            C = rand((M, N), dt, 14)
            for block in blocks(M if dc == "row" else N) if dt in (np.float64, np.complex128) else (3,):
                # the distributed operand of op(a) / op(b) shares C's block, the other any block;
                # in the outer product a and b share their block along k (1, 2 or 3), C any
                ba = block if like == "a" else 2 if like == "b" else 1 + block % 3
                bb = block if like == "b" else 3 if like == "a" else ba
                a, b, c = mat(A, da, ba), mat(B, db, bb), mat(C, dc, block)
                pgas.barrier(COMM)
                blas.gemm(1.25, a, b, 0.5, c, trans_a=ta, trans_b=tb)
                want = ref("gemm", dt)(1.25, A, B, 0.5, C, trans_a=ta, trans_b=tb)
                close(gathered(c), want, dt, "gemm a %s%d b %s%d c %s%d" % (da, ta, db, tb, dc, block))
                free(a, b, c)


def test_gemm_outer_product_new_c_and_unlike_operands():
    """op(a) by columns, op(b) by rows: c=None gives a new matrix by rows;
    op(a)'s columns and op(b)'s rows in different blocks: b redistributed
    like a's columns first."""
    A, B = rand((M, K), np.float64, 24), rand((K, N), np.float64, 25)
    a, b, b2 = mat(A, "col", 2), mat(B, "row", 2), mat(B, "row", 3)
    pgas.barrier(COMM)
    c = blas.gemm(2.0, a, b)
    assert c.dist == "row" and c.shape == (M, N)
    close(gathered(c), 2.0 * A @ B, np.float64, "gemm outer product, new c")
    blas.gemm(1.0, a, b2, 1.0, c)
    close(gathered(c), 3.0 * A @ B, np.float64, "gemm outer product, b in other blocks")
    free(a, b, b2, c)


def _unaligned_gemm_cases(dt):
    """(ta, tb, a's, b's and c's distributions) with no operand where an
    algorithm needs it: c by rows while op(a) is by columns and op(b)'s
    columns are local (and the mirror), op(a)'s rows (op(b)'s columns) in
    other blocks than c's, the outer product with op(b)'s rows in other
    blocks than op(a)'s columns."""
    transes = (0, 2) if np.dtype(dt).kind == "c" else (0, 1)
    for ta, tb in itertools.product(transes, transes):
        for da, db, dc in itertools.product(("row", "col"), repeat=3):
            a_rows = (da == "row") == (ta == 0)
            b_cols = (db == "col") == (tb == 0)
            if a_rows != b_cols:
                yield ta, tb, da, db, dc


def test_gemm_operands_redistributed():
    """Every case an algorithm does not serve in place: the operand in the
    way is redistributed first; c (a view starting on rank 1 when P > 1)
    against scipy, the rest of c untouched, no array left behind."""
    for dt in (np.float64, np.complex128):
        for ta, tb, da, db, dc in _unaligned_gemm_cases(dt):
            A = rand((M, K) if ta == 0 else (K, M), dt, 40)
            B = rand((K, N) if tb == 0 else (N, K), dt, 41)
            C = rand((M + 2, N + 2), dt, 42)
            # a's, b's and c's blocks all differ (2, 3, 2 from rank 1)
            a, b, c = mat(A, da, 2), mat(B, db, 3), mat(C, dc, 2)
            vc = blas.submatrix(c, 2, 2, M, N)
            live = len(c._ctx.objects)
            pgas.barrier(COMM)
            blas.gemm(1.25, a, b, 0.5, vc, trans_a=ta, trans_b=tb)
            assert len(c._ctx.objects) == live, "a temporary matrix left allocated"
            want = C.copy()
            want[2:, 2:] = ref("gemm", dt)(1.25, A, B, 0.5, C[2:, 2:], trans_a=ta, trans_b=tb)
            close(gathered(c), want, dt, "gemm redistributed a %s%d b %s%d c %s" % (da, ta, db, tb, dc))
            free(a, b, c)
    # the outer product with op(b)'s rows starting on another rank than op(a)'s columns
    A, B = rand((M, K + 3), np.float64, 43), rand((K + 3, N), np.float64, 44)
    a, b = mat(A, "col", 3), mat(B, "row", 3)
    va, vb = blas.submatrix(a, 0, 3, M, K), blas.submatrix(b, 0, 0, K, N)
    pgas.barrier(COMM)
    c = blas.gemm(1.0, va, vb)
    close(gathered(c), A[:, 3:] @ B[:K], np.float64, "gemm outer product, op(b) from another rank")
    free(a, b, c)


def test_gemm_panels_across_nodes_and_small_panels(monkeypatch=None):
    """Many panels (one row or column each): the double-buffered gets."""
    import os
    os.environ["PGASCOL_BLAS_PANEL_BYTES"] = "1"
    try:
        A, B = rand((M, K), np.float64, 15), rand((K, N), np.float64, 16)
        for db in ("row", "col"):
            a, b = mat(A, "row", 2), mat(B, db, 1)
            pgas.barrier(COMM)
            c = blas.gemm(1.0, a, b)
            close(gathered(c), A @ B, np.float64, "gemm small panels b by %s" % db)
            free(a, b, c)
    finally:
        del os.environ["PGASCOL_BLAS_PANEL_BYTES"]


def test_syrk_every_flag():
    for dt in TYPES:
        for trans, lower in itertools.product((0, 1), (0, 1)):
            A = rand((N, K) if trans == 0 else (K, N), dt, 17)
            C = rand((N, N), dt, 18)
            for dc, local in itertools.product(("row", "col"), (True, False)):
                # op(a)'s rows and op(a)^T's columns local, or both along k (one Reduce_scatter)
                da = "row" if (trans == 0) == local else "col"
                for block in blocks(N):
                    a, c = mat(A, da, block if local else 1 + block % 3), mat(C, dc, block)
                    pgas.barrier(COMM)
                    blas.syrk(0.5, a, 2.0, c, trans=trans, lower=lower)
                    want = ref("syrk", dt)(0.5, A, 2.0, C, trans=trans, lower=lower)
                    close(gathered(c), want, dt, "syrk trans %d lower %d a %s c %s%d" % (trans, lower, da, dc, block))
                    free(a, c)


def test_trsm_every_side_flag_and_distribution():
    for dt in TYPES:
        transes = (0, 1, 2) if np.dtype(dt).kind == "c" else (0, 1)
        for side, lower, trans, diag in itertools.product((0, 1), (0, 1), transes, (0, 1)):
            if dt != np.float64 and diag:
                continue
            n = M if side == 0 else N
            A = _triangular(n, dt, 19, lower)
            B = rand((M, N), dt, 20)
            for db, da in itertools.product(("row", "col"), ("row", "col")):
                blocked = (side == 0) == (db == "row")   # a in blocks like b's rows (columns)
                sizes = blocks(n if blocked else (M if db == "row" else N)) if dt == np.float64 else (3,)
                for block in sizes:
                    a, b = mat(A, da, block if blocked else 2), mat(B, db, block)
                    pgas.barrier(COMM)
                    blas.trsm(1.5, a, b, side=side, lower=lower, trans_a=trans, diag=diag)
                    want = ref("trsm", dt)(1.5, A, B, side=side, lower=lower, trans_a=trans, diag=diag)
                    close(gathered(b), want, dt, "trsm side %d lower %d trans %d diag %d a %s b %s%d"
                          % (side, lower, trans, diag, da, db, block))
                    free(a, b)


# ---------------------------------------------------------------- views

def test_views_starting_at_block_boundaries():
    """Sub-matrices and sub-vectors that start on a block boundary (not
    necessarily on rank 0): gemv, ger, gemm, trsm, dot on them, against
    scipy on the same slices; the rest of the arrays untouched."""
    b = 3
    for dt in (np.float64, np.complex64):
        A, X, Y = rand((20, 17), dt, 30), rand(17, dt, 31), rand(20, dt, 32)
        a, x, y = mat(A, "row", b), vec(X, 4), vec(Y, b)
        i, j, m, n = b, 2, 12, 9          # rows from block 1: rank 1 when P > 1
        va, vx, vy = blas.submatrix(a, i, j, m, n), blas.subvector(x, 4, n), blas.subvector(y, b, m)
        pgas.barrier(COMM)
        blas.gemv(2.0, va, vx, 0.5, vy)
        want = Y.copy()
        want[i:i + m] = ref("gemv", dt)(2.0, A[i:i + m, j:j + n], X[4:4 + n], 0.5, Y[i:i + m])
        close(gathered(y), want, dt, "gemv on views")
        blas.ger(1.0, blas.subvector(y, b, m), vx, a=va)
        want_a = A.copy()
        want_a[i:i + m, j:j + n] += np.outer(want[i:i + m], X[4:4 + n])
        close(gathered(a), want_a, dt, "ger on views")
        close(blas.dot(blas.subvector(y, b, m), blas.subvector(y, b, m)), want[i:i + m] @ want[i:i + m], dt, "dot")
        # gemm: c's rows from block 2, a's rows alike, b any view
        C, B = rand((15, 8), dt, 33), rand((10, 12), dt, 34)
        c, bb = mat(C, "row", b), mat(B, "col", 2)
        vc = blas.submatrix(c, 2 * b, 1, 9, 7)
        vA = blas.submatrix(a, 2 * b, 0, 9, 5)
        vB = blas.submatrix(bb, 3, 4, 5, 7)
        pgas.barrier(COMM)
        blas.gemm(1.0, vA, vB, 1.0, vc)
        want_c = C.copy()
        want_c[6:15, 1:8] += want_a[6:15, 0:5] @ B[3:8, 4:11]
        close(gathered(c), want_c, dt, "gemm on views")
        # trsm by rows on views
        T = _triangular(9, dt, 35, 1)
        t = mat(np.pad(T, ((2 * b, 0), (0, 0))), "row", b)
        vt = blas.submatrix(t, 2 * b, 0, 9, 9)          # rows from block 2, as vc's
        pgas.barrier(COMM)
        blas.trsm(1.0, vt, vc, lower=1)
        want_c[6:15, 1:8] = ref("trsm", dt)(1.0, T, want_c[6:15, 1:8], lower=1)
        close(gathered(c), want_c, dt, "trsm on views")
        free(a, x, y, c, bb, t)


def test_views_off_block_boundaries_are_refused():
    with mat(np.zeros((12, 10)), "row", 3) as a, vec(np.zeros(10), 4) as x:
        exc = expect(ArgumentError, blas.submatrix, a, 2, 0, 3, 3)
        assert "phase 0" in str(exc)
        expect(ArgumentError, blas.subvector, x, 2, 3)
        expect(ArgumentError, blas.submatrix, a, 0, 0, 13, 3)
        if P > 1:                         # y from rank 0, a's rows from rank 1
            exc = expect(ArgumentError, blas.gemv, 1.0, blas.submatrix(a, 3, 0, 3, 3), blas.subvector(x, 4, 3),
                          0.0, blas.subvector(x, 0, 3))
            assert "from rank" in str(exc)


# ---------------------------------------------------------------- misuse

def test_misuse_raises_on_every_rank_and_writes_nothing():
    A = rand((M, N), np.float64, 21)
    a = mat(A, "row", 2)
    c = mat(np.zeros((M, M)), "row", 2)
    x32 = vec(rand(N, np.float32, 22), 1)
    x = vec(rand(N, np.float64, 23), 1)
    y = vec(np.ones(M), 3)                               # not like a's rows (block 2)
    wrong = vec(np.ones(M + 1), 2)
    pgas.barrier(COMM)
    before = gathered(c)
    cases = [
        (lambda: blas.gemv(1.0, a, x32), "dtype"),       # dtype mismatch
        (lambda: blas.gemv(1.0, a, x, 1.0, y), "distributed like"),
        (lambda: blas.gemv(1.0, a, x, 1.0, wrong), "elements"),
        (lambda: blas.gemm(1.0, a, a, 1.0, c), "op(a) is"),       # shape mismatch
        (lambda: blas.gemm(1.0, a, a, 1.0, c, trans_b=5), "trans_b"),
        (lambda: blas.dot(x, y), "elements"),
        (lambda: blas.axpy(x, x32), "dtype"),
        (lambda: blas.trsm(1.0, c, a, side=1), "columns"),
        (lambda: blas.trsm(1.0, c, mat(np.zeros((M, 3)), "row", 3)), "distributed like"),
        (lambda: blas.syrk(1.0, a, trans=2), "herk"),
        (lambda: blas.gemm(1.0, x, a), "Matrix"),
    ]
    for fn, words in cases:
        exc = expect(ArgumentError, fn)
        assert words in str(exc), (words, str(exc))
    assert np.array_equal(gathered(c), before)
    got = WORLD.allreduce(1)                             # the communicator is still usable
    assert got == P
    free(a, c, x32, x, y, wrong)
    with vec(np.ones(4), 1) as ones:
        assert abs(blas.nrm2(ones) - 2.0) < 1e-15


def test_threads_default_to_one_per_rank():
    from threadpoolctl import threadpool_info
    assert blas.threads() == 1
    assert all(lib["num_threads"] == 1 for lib in threadpool_info() if lib["user_api"] == "blas")
