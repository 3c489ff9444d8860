"""pgascol.blas.factor: Cholesky (gemm and syrk variants) and LU without
and with partial pivoting on global matrices by rows, against scipy.linalg
(relative residual below 1e-12 * n for float64), block sizes 1, odd and
larger, n not divisible by P."""
import numpy as np
import scipy.linalg as sl
from mpi4py import MPI

import pgascol
from pgascol import pgas
from pgascol.blas import factor

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
N = 41


def mat(g, block):
    a = pgas.matrix(COMM, g.shape, g.dtype, block=block, dist="row")
    rows = [i for lo, hi in a.owned_rows() for i in range(lo, min(hi, a.rows))]
    a.local()[:] = g[rows]
    pgas.barrier(COMM)
    return a


def gathered(a):
    pgas.barrier(COMM)
    out = a[:, :]
    pgas.barrier(COMM)
    return out


def spd(n, dt, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal((n, n))
    return (x @ x.conj().T + n * np.eye(n)).astype(dt)


def test_cholesky_both_variants():
    for dt in (np.float64, np.complex128, np.float32):
        A = spd(N, dt)
        for variant in ("gemm", "syrk"):
            for block in (1, 3, 8):
                a = mat(A, block)
                factor.cholesky(a, variant)
                L = np.tril(gathered(a))
                res = np.linalg.norm(A - L @ L.conj().T) / np.linalg.norm(A)
                tol = 1e-12 * N if dt != np.float32 else 1e-5 * N
                assert res < tol, (dt, variant, block, res)
                assert np.allclose(L, sl.cholesky(A, lower=True), atol=tol * 10)
                a.free()


def test_lu_without_and_with_pivoting():
    rng = np.random.default_rng(2)
    for dt in (np.float64, np.complex128):
        G = rng.standard_normal((N, N)).astype(dt)
        for pivoting in (False, True):
            A = G + (N * np.eye(N) if not pivoting else 0)       # no pivoting: diagonally dominant
            for block in (1, 3, 8):
                a = mat(A, block)
                piv = factor.lu(a, pivoting=pivoting)
                LU = gathered(a)
                L, U = np.tril(LU, -1) + np.eye(N), np.triu(LU)
                PA = A.copy()
                for i, p in enumerate(piv):
                    PA[[i, p]] = PA[[p, i]]
                res = np.linalg.norm(PA - L @ U) / np.linalg.norm(A)
                assert res < 1e-12 * N, (dt, pivoting, block, res)
                if pivoting:
                    lu_ref, piv_ref = sl.lu_factor(A)
                    assert np.array_equal(piv, piv_ref), (piv, piv_ref)
                    assert np.allclose(LU, lu_ref, atol=1e-10)
                a.free()


def test_factorizations_refuse_other_distributions():
    from pgascol.errors import ArgumentError
    with pgas.matrix(COMM, (6, 6), np.float64, block=2, dist="col") as a:
        for fn in (factor.cholesky, factor.lu):
            try:
                fn(a)
            except ArgumentError as exc:
                assert "by rows" in str(exc)
            else:
                raise AssertionError("no error")


def test_lu_pivots_rows_across_ranks():
    """The largest entry of each column in the last block row (another
    rank's, another node's on virtual nodes): every panel's interchanges
    move rows between ranks, in both directions; pivots as LAPACK's."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((N, N))
    A[N - 4:, :] *= 100.0
    A[:4, N // 2:] *= 100.0
    for block in (1, 3, 8):
        a = mat(A, block)
        piv = factor.lu(a)
        lu_ref, piv_ref = sl.lu_factor(A)
        assert np.array_equal(piv, piv_ref), (block, piv, piv_ref)
        assert np.allclose(gathered(a), lu_ref, atol=1e-10)
        a.free()


def test_lu_singular_raises_on_every_rank():
    """An exactly zero pivot: PgascolError on every rank, the communicator
    usable after (a barrier and a second factorization)."""
    from pgascol.errors import PgascolError
    rng = np.random.default_rng(4)
    for pivoting, block in ((True, 3), (True, 8), (False, 3)):
        A = rng.standard_normal((N, N)) + (0 if pivoting else N * np.eye(N))
        A[:, 7] = 0.0                          # column 7 zero: U(7, 7) = 0 with or without pivoting
        if not pivoting:
            A[7, :] = 0.0
        a = mat(A, block)
        try:
            factor.lu(a, pivoting=pivoting)
        except PgascolError as exc:
            assert "7" in str(exc), str(exc)
        else:
            raise AssertionError("no error for a singular matrix (pivoting=%s)" % pivoting)
        a.free()
    COMM.Barrier()
    a = mat(rng.standard_normal((N, N)), 3)
    factor.lu(a)
    a.free()


def test_lu_of_a_submatrix():
    """A view starting at block row 1 (on rank 1) and column 2: pivots and
    factors as LAPACK's on the view, the rest of the matrix untouched."""
    from pgascol import blas
    rng = np.random.default_rng(5)
    M, block = 29, 3
    G = rng.standard_normal((M + block + 2, M + 4))
    for pivoting in (True, False):
        H = G.copy()
        if not pivoting:
            H[block:block + M, 2:2 + M] += M * np.eye(M)
        a = mat(H, block)
        piv = factor.lu(blas.submatrix(a, block, 2, M, M), pivoting=pivoting)
        got = gathered(a)
        view = got[block:block + M, 2:2 + M]
        if pivoting:
            lu_ref, piv_ref = sl.lu_factor(H[block:block + M, 2:2 + M])
            assert np.array_equal(piv, piv_ref), (piv, piv_ref)
            assert np.allclose(view, lu_ref, atol=1e-10)
        else:
            L, U = np.tril(view, -1) + np.eye(M), np.triu(view)
            assert np.allclose(L @ U, H[block:block + M, 2:2 + M], atol=1e-10)
        outside = np.ones(H.shape, bool)
        outside[block:block + M, 2:2 + M] = False
        assert np.array_equal(got[outside], H[outside])
        a.free()
