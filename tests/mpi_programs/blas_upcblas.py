"""pgascol.blas.upcblas: UPCBLAS's names, argument order, distributions
(the UPCBLAS thesis's Appendix A) and return codes, against scipy.linalg.blas on
the gathered operands; every error code path, with and without check_all."""
import itertools

import numpy as np
import scipy.linalg.blas as sb
from mpi4py import MPI

import pgascol
from pgascol import pgas
from pgascol.blas import upcblas as U
from tests.mpi_programs.blas_common import rand

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)


def shared(values, block):
    """UPC's shared [block] T a[len(values)], every rank writing its own elements."""
    a = pgas.array(COMM, len(values), values.dtype, block=block)
    idx = [i for lo, hi in a.owned() for i in range(lo, hi)]
    a.local()[:] = values[idx]
    return a


def free(*arrays):
    for a in arrays:
        a.free()


def read(a):
    pgas.barrier(COMM)
    out = a[:]
    pgas.barrier(COMM)
    return out


def close(got, want, tol=1e-10):
    assert np.allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max())), np.abs(got - want).max()


def test_blas1_and_scalars_in_shared_memory():
    n, b = 29, 4
    for t, dt in (("d", np.float64), ("z", np.complex128)):
        X, Y = rand(n, dt, 1), rand(n, dt, 2)
        x, y = shared(X, b), shared(Y, b)
        dst = pgas.zeros(COMM, 4, dt, block=1)
        rdst = pgas.zeros(COMM, 4, np.float64, block=1)
        pgas.barrier(COMM)
        if t == "d":
            assert U.upc_blas_ddot(b, n, (x, 0), (y, 0), (dst, 1)) == 0
            assert U.upc_blas_dnrm2(b, n, (x, 0), (rdst, 2)) == 0
            assert U.upc_blas_dasum(b, n, (x, 0), (rdst, 3)) == 0
            close(dst[1], X @ Y)
            close(rdst[2], np.linalg.norm(X))
            close(rdst[3], np.abs(X).sum())
        else:
            assert U.upc_blas_zdotc(b, n, (x, 0), (y, 0), (dst, 1)) == 0
            assert U.upc_blas_zdotu(b, n, (x, 0), (y, 0), (dst, 2)) == 0
            assert U.upc_blas_dznrm2(b, n, (x, 0), (rdst, 2)) == 0
            assert U.upc_blas_dzasum(b, n, (x, 0), (rdst, 3)) == 0
            close(dst[1], np.vdot(X, Y))
            close(dst[2], X @ Y)
            close(rdst[2], np.linalg.norm(X))
            close(rdst[3], sb.dzasum(X))
        pgas.barrier(COMM)
        # a sub-vector from the second block on: phase 0, starting on rank 1
        assert getattr(U, "upc_blas_%saxpy" % t)(b, n - b, 2.0, (x, b), (y, b)) == 0
        want = Y.copy()
        want[b:] += 2 * X[b:]
        close(read(y), want)
        assert getattr(U, "upc_blas_%sscal" % t)(b, n, 0.5, (x, 0)) == 0
        assert getattr(U, "upc_blas_%sswap" % t)(b, n, (x, 0), (y, 0)) == 0
        assert getattr(U, "upc_blas_%scopy" % t)(b, n, (y, 0), (x, 0)) == 0
        close(read(x), 0.5 * X)
        for a in (x, y, dst, rdst):
            a.free()


def test_gemv_both_distributions_and_transposes():
    m, n, b, sec = 11, 9, 2, 3
    for t, dt in (("d", np.float64), ("c", np.complex64)):
        tol = 1e-10 if t == "d" else 1e-4
        for dist, tr in itertools.product((U.upc_pblas_rowDist, U.upc_pblas_colDist), (0, 1, 2)):
            by_rows = (dist == U.upc_pblas_rowDist) == (tr == 0)
            lda = n if by_rows else -(-n // (b * P)) * b * P
            A = rand((m, n), dt, 3)
            flat = np.zeros(m * lda, dt)
            flat.reshape(m, lda)[:, :n] = A
            a = shared(flat, b * lda if by_rows else b)
            xl, yl = (n, m) if tr == 0 else (m, n)
            X, Y = rand(xl, dt, 4), rand(yl, dt, 5)
            bx, by = (sec, b) if dist == U.upc_pblas_rowDist else (b, sec)
            x, y = shared(X, bx), shared(Y, by)
            pgas.barrier(COMM)
            rc = getattr(U, "upc_blas_%sgemv" % t)(dist, b, sec, tr, m, n, 1.5, (a, 0), lda, (x, 0), 0.5, (y, 0))
            assert rc == 0, rc
            op = {0: A, 1: A.T, 2: A.conj().T}[tr]
            close(read(y), 1.5 * op @ X + 0.5 * Y, tol)
            for o in (a, x, y):
                o.free()


def test_ger_gemm_trsm_syrk_trsv():
    m, n, k, b = 10, 8, 6, 2
    A, B, C = rand((m, k), np.float64, 6), rand((k, n), np.float64, 7), rand((m, n), np.float64, 8)
    # gemm by rows: C and A shared [b*ld], B shared [sec] read as rows (sec = 2*ldb), as columns
    # (ldb a multiple of sec*P) and in a general layout (ldb a multiple of sec only)
    for sec, ldb in ((2 * n, n), (1, -(-n // P) * P), (2, n + 2)):
        Bf = np.zeros(k * ldb)
        Bf.reshape(k, ldb)[:, :n] = B
        a, bb, c = shared(A.reshape(-1), b * k), shared(Bf, sec), shared(C.reshape(-1), b * n)
        pgas.barrier(COMM)
        rc = U.upc_blas_dgemm(U.upc_pblas_rowDist, b, sec, 0, 0, m, n, k, 1.0, (a, 0), k, (bb, 0), ldb, 1.0,
                              (c, 0), n)
        assert rc == 0, rc
        close(read(c).reshape(m, n), C + A @ B)
        for o in (a, bb, c):
            o.free()
    # ger by rows
    X, Y = rand(m, np.float64, 9), rand(n, np.float64, 10)
    c, x, y = shared(C.reshape(-1), b * n), shared(X, b), shared(Y, 3)
    pgas.barrier(COMM)
    assert U.upc_blas_dger(U.upc_pblas_rowDist, b, 3, m, n, 2.0, (x, 0), (y, 0), (c, 0), n) == 0
    close(read(c).reshape(m, n), C + 2 * np.outer(X, Y))
    for o in (c, x, y):
        o.free()
    # trsm left by rows, lower, and trsv by rows
    T = np.tril(rand((m, m), np.float64, 11)) / m + 2 * np.eye(m)
    tt, xx = shared(T.reshape(-1), b * m), shared(C.reshape(-1), b * n)
    pgas.barrier(COMM)
    assert U.upc_blas_dtrsm(U.upc_pblas_rowDist, b, 1, U.upc_pblas_left, U.upc_pblas_lower, 0, 0, m, n, 1.0,
                            (tt, 0), m, (xx, 0), n) == 0
    close(read(xx).reshape(m, n), np.linalg.solve(T, C))
    v = shared(X, b)
    pgas.barrier(COMM)
    assert U.upc_blas_dtrsv(U.upc_pblas_rowDist, b, U.upc_pblas_lower, 0, 0, m, (tt, 0), m, (v, 0)) == 0
    close(read(v), np.linalg.solve(T, X))
    # trsv by columns, every transpose: T shared [b] (by columns) or, transposed, shared [b*ldt]
    ldt = -(-m // (b * P)) * b * P
    for tr in (0, 1):
        Tf = np.zeros(m * ldt)
        Tf.reshape(m, ldt)[:, :m] = T
        tc = shared(Tf if tr == 0 else T.reshape(-1), b if tr == 0 else b * m)
        vc = shared(X, b)
        pgas.barrier(COMM)
        rc = U.upc_blas_dtrsv(U.upc_pblas_colDist, b, U.upc_pblas_lower, tr, 0, m, (tc, 0), ldt if tr == 0 else m,
                              (vc, 0))
        assert rc == 0, rc
        close(read(vc), np.linalg.solve(T if tr == 0 else T.T, X))
        tc.free()
        vc.free()
    # trsm right by rows: T replicated (shared [sec])
    T2 = np.triu(rand((n, n), np.float64, 12)) / n + 2 * np.eye(n)
    t2 = shared(T2.reshape(-1), n)
    x2 = shared(C.reshape(-1), b * n)
    pgas.barrier(COMM)
    assert U.upc_blas_dtrsm(U.upc_pblas_rowDist, b, n, U.upc_pblas_right, U.upc_pblas_upper, 0, 0, m, n, 1.0,
                            (t2, 0), n, (x2, 0), n) == 0
    close(read(x2).reshape(m, n), C @ np.linalg.inv(T2), 1e-9)
    # syrk by rows, lower
    cs = shared(np.zeros(m * m), b * m)
    a = shared(A.reshape(-1), b * k)
    pgas.barrier(COMM)
    assert U.upc_blas_dsyrk(U.upc_pblas_rowDist, b, U.upc_pblas_lower, 0, m, k, 1.0, (a, 0), k, 0.0, (cs, 0), m) == 0
    close(np.tril(read(cs).reshape(m, m)), np.tril(A @ A.T))
    for o in (tt, xx, v, t2, x2, cs, a):
        o.free()


def _stored(G, ld, block):
    """G (rows x cols) stored row-major with leading dimension ld in UPC's shared [block] T [rows*ld]."""
    flat = np.zeros(G.shape[0] * ld, G.dtype)
    flat.reshape(G.shape[0], ld)[:, :G.shape[1]] = G
    return shared(flat, block)


def _replicated_layouts(rows, cols):
    """(sec_block_size, ld) of a replicated operand read by rows (sec a multiple
    of ld), by columns (ld a multiple of sec*P) and whole (ld a multiple of sec only)."""
    return ((2 * cols, cols), (1, -(-cols // P) * P), (2, cols + 2 - cols % 2))


def test_gemm_every_case_of_appendix_a():
    """Both distributions of C, every transA x transB, the distributed operand
    as the appendix treats it (A shared [b*lda] or, transposed, shared [b] with
    lda a multiple of b*P; by columns B alike), the replicated one in each of
    its three layouts."""
    m, n, k, b = 9, 7, 5, 2
    for t, dt in (("d", np.float64), ("z", np.complex128)):
        gemm = getattr(U, "upc_blas_%sgemm" % t)
        transes = (0, 1, 2) if t == "z" else (0, 1)
        for dist, ta, tb in itertools.product((U.upc_pblas_rowDist, U.upc_pblas_colDist), transes, transes):
            A = rand((m, k) if ta == 0 else (k, m), dt, 30)
            B = rand((k, n) if tb == 0 else (n, k), dt, 31)
            C = rand((m, n), dt, 32)
            want = 1.5 * {0: A, 1: A.T, 2: A.conj().T}[ta] @ {0: B, 1: B.T, 2: B.conj().T}[tb] + 0.5 * C
            by_rows = dist == U.upc_pblas_rowDist
            mine, tmine, other = (A, ta, B) if by_rows else (B, tb, A)
            # the distributed operand: op() of it holds C's rows (columns)
            if (tmine == 0) == by_rows:
                ldd, bd = mine.shape[1], b * mine.shape[1]
            else:
                ldd, bd = -(-mine.shape[1] // (b * P)) * b * P, b
            ldc, bc = (n, b * n) if by_rows else (-(-n // (b * P)) * b * P, b)
            for sec, ldo in _replicated_layouts(*other.shape):
                d, o, c = _stored(mine, ldd, bd), _stored(other, ldo, sec), _stored(C, ldc, bc)
                (a, lda), (bb, ldb) = ((d, ldd), (o, ldo)) if by_rows else ((o, ldo), (d, ldd))
                pgas.barrier(COMM)
                rc = gemm(dist, b, sec, ta, tb, m, n, k, 1.5, (a, 0), lda, (bb, 0), ldb, 0.5, (c, 0), ldc)
                assert rc == 0, (rc, dist, ta, tb, sec)
                close(read(c).reshape(m, ldc)[:, :n], want)
                for x in (d, o, c):
                    x.free()


def test_error_codes():
    m, n, b = 8, 6, 2
    a = shared(np.zeros(m * n), b * n)
    x, y = shared(np.zeros(n), 3), shared(np.zeros(m), b)
    f32 = shared(np.zeros(m, np.float32), b)
    pgas.barrier(COMM)
    g = U.upc_blas_dgemv
    row = U.upc_pblas_rowDist
    assert g(7, b, 3, 0, m, n, 1.0, (a, 0), n, (x, 0), 0.0, (y, 0)) == -1            # dimmDist
    assert g(row, 0, 3, 0, m, n, 1.0, (a, 0), n, (x, 0), 0.0, (y, 0)) == -2          # block_size
    assert g(row, b, 3, 5, m, n, 1.0, (a, 0), n, (x, 0), 0.0, (y, 0)) == -4          # transpose
    assert g(row, b, 3, 0, -1, n, 1.0, (a, 0), n, (x, 0), 0.0, (y, 0)) == -5         # m
    assert g(row, b, 3, 0, m, n, 1.0, (a, n), n, (x, 0), 0.0, (y, 0)) == -8          # A: not the first row of a block
    assert g(row, b, 3, 0, m, n, 1.0, (a, 0), n - 1, (x, 0), 0.0, (y, 0)) == -9      # lda < n
    assert g(row, b, 3, 0, m, n - 1, 1.0, (a, 0), n, (x, 1), 0.0, (y, 0)) == -10     # x: phase 1
    assert g(row, b, 2, 0, m, n, 1.0, (a, 0), n, (x, 0), 0.0, (y, 0)) == -3          # x's block is not sec
    assert g(row, b, 3, 0, m, n, 1.0, (a, 0), n, (x, 0), 0.0, (f32, 0)) == -12       # y: float32
    rc = g(row, b, 3, 0, m - 2, n, 1.0, (a, 0), n, (x, 0), 0.0, (y, b))          # y starts on rank 1, A on 0
    assert rc == (-12 if P > 1 else 0), rc
    rc = g(row, b, 3, 0, m - 2, n, 1.0, (a, b * n), n, (x, 0), 0.0, (y, b))      # both from block 1
    assert rc == 0, rc
    # by columns: lda must be a multiple of block_size*P
    ac = shared(np.zeros(m * 2 * P), b)
    assert g(U.upc_pblas_colDist, b, 3, 0, m, n, 1.0, (ac, 0), 2 * P + 1, (x, 0), 0.0, (y, 0)) == -9
    # gemm: ldb and sec_block_size multiples of each other
    c = shared(np.zeros(m * n), b * n)
    bb = shared(np.zeros(n * 7), 3)
    assert U.upc_blas_dgemm(row, b, 3, 0, 0, m, n, n, 1.0, (a, 0), n, (bb, 0), 7, 0.0, (c, 0), n) == -13
    # check_all: one rank's bad offset, every rank returns its code
    off = 1 if ME == P - 1 else 0
    rc = U.upc_blas_ddot(3, n - 1, (x, off), (x, off), (y, 0), check_all=True)
    assert rc == -3, rc
    assert WORLD.allreduce(1) == P                       # nobody was left in a collective
    for o in (a, x, y, f32, ac, c, bb):
        o.free()
