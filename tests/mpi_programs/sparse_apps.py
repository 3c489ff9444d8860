"""pgascol.sparse's applications: susdot (sparse.dot) on every layout,
conjugate gradients on handles (Poisson 2-D and 3-D against
scipy.sparse.linalg.spsolve, iterate by iterate against
scipy.sparse.linalg.cg, complex Hermitian), NAS CG class S verifying NAS's
zeta, and UPCBLAS's per-format entry points (thread_src a rank or every
rank) against scipy.sparse; misuse raises ArgumentError on every rank and
leaves the communicator usable."""
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from mpi4py import MPI

import pgascol
from pgascol import blas, pgas, sparse
from pgascol.errors import ArgumentError
from pgascol.sparse import problems
from pgascol.sparse import upcblas as U
from pgascol.sparse import cg, dot
from tests.mpi_programs.blas_common import expect, rand

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def tol_of(dt):
    return 2e-4 if np.dtype(dt) in (np.float32, np.complex64) else 1e-10


def close(got, want, tol=1e-10):
    scale = max(1.0, float(np.abs(want).max())) if np.size(want) else 1.0
    assert np.allclose(got, want, rtol=tol, atol=tol * scale), float(np.abs(np.asarray(got) - want).max())


def fill(v, values):
    """Every rank writes its own elements of global array v (a matrix: of its
    flat array); then a barrier."""
    part = pgas.GlobalArray.local(v)
    for lo, hi in v.owned():
        part[pgas.GlobalArray.local_index(v, np.arange(lo, hi))] = values[lo:hi]
    pgas.barrier(COMM)


def gathered(v):
    pgas.barrier(COMM)
    out = v[:]
    pgas.barrier(COMM)
    return out


def uneven_counts(n):
    """Rows per rank, uneven, rank 1 (when there is one) holding none."""
    w = np.array([0 if r == 1 else r + 1 for r in range(P)], float)
    if w.sum() == 0:
        w[:] = 1
    c = np.floor(n * w / w.sum()).astype(int)
    c[np.argmax(w)] += n - c.sum()
    return c.tolist()


# ---------------------------------------------------------------- susdot

def test_dot_every_layout_dtype_and_mode():
    n = 53
    for dt in DTYPES:
        Y = rand(n, dt, 1)
        nz = rand(n, dt, 2)
        idx = np.random.default_rng(3).choice(n, 17, replace=False)
        vals = nz[:17]
        for kw in ({"block": 1}, {"block": 5}, {"block": "*"}, {"block": 0}, {"counts": uneven_counts(n)}):
            with pgas.array(COMM, n, dt, **kw) as y:
                fill(y, Y)
                tol = tol_of(dt)
                close(dot(vals, idx, y), vals @ Y[idx], tol)
                close(dot(vals, idx, y, conj=True), np.conj(vals) @ Y[idx], tol)
                mine = slice(ME, None, P)        # each rank its own entries, disjoint
                close(dot(vals[mine], idx[mine], y, replicated=False), vals @ Y[idx], tol)
                assert dot(vals[:0], idx[:0], y) == 0
                pgas.barrier(COMM)


def test_dot_misuse_on_one_rank_raises_everywhere():
    with pgas.zeros(COMM, 10, np.float64, block=2) as y:
        bad = P - 1
        for vals, idx in ((np.ones(2), [0, 10]), (np.ones(2), [0, -1]), (np.ones(3), [0, 1]),
                          (np.ones(2), [0.0, 1.0]), (np.ones(2, np.complex128), [0, 1])):
            exc = expect(ArgumentError, dot, vals if ME == bad else np.ones(2),
                         idx if ME == bad else [0, 1], y)
            assert "rank %d" % bad in str(exc), exc
        expect(ArgumentError, dot, np.ones(2), [0, 1], np.zeros(10))
        assert dot(np.ones(2), [0, 9], y) == 0.0          # still usable


# ---------------------------------------------------------------- CG

def solve(A_global, A_handle, seed, **kw):
    """b random, x = cg(A, b): (x gathered, info, b)."""
    n = A_global.shape[0]
    B = rand(n, A_handle.dtype, seed)
    b = A_handle.vector("row")
    fill(b, B)
    x, info = cg(A_handle, b, **kw)
    X = gathered(x)
    x.free()
    b.free()
    return X, info, B


def test_cg_poisson2d_against_spsolve():
    G = problems.poisson2d(13, 9)
    with sparse.from_scipy(COMM, G if ME == 0 else None, root=0) as A:
        X, info, B = solve(G, A, 4, tol=1e-12)
    assert info == 0
    close(X, spla.spsolve(G.tocsc(), B), 1e-9)


def test_cg_poisson3d_from_local_rows_against_spsolve():
    dims = (7, 5, 4)
    n = int(np.prod(dims))
    counts = uneven_counts(n)
    lo = sum(counts[:ME])
    rows = problems.poisson3d(*dims, rows=(lo, lo + counts[ME]))
    G = problems.poisson3d(*dims)
    with sparse.from_local_rows(COMM, rows) as A:
        assert list(A.row_counts) == counts
        X, info, B = solve(G, A, 5, tol=1e-12)
    assert info == 0
    close(X, spla.spsolve(G.tocsc(), B), 1e-9)


def test_cg_follows_scipy_iterate_by_iterate():
    G = problems.poisson2d(11, 7)
    n = G.shape[0]
    B, X0 = rand(n, np.float64, 6), rand(n, np.float64, 7)
    ours, theirs = [], []
    with sparse.from_scipy(COMM, G, root=None) as A:
        b, x0 = A.vector("row"), A.vector("row")
        fill(b, B)
        fill(x0, X0)
        x, info = cg(A, b, x0=x0, tol=1e-10, maxiter=6, callback=lambda xk: ours.append(gathered(xk)))
        assert x is x0 and info == 6
        want, winfo = spla.cg(G, B, x0=X0.copy(), rtol=1e-10, maxiter=6, callback=lambda xk: theirs.append(xk.copy()))
        assert winfo == 6 and len(ours) == len(theirs) == 6
        for got, w in zip(ours, theirs):
            close(got, w, 1e-10)
        close(gathered(x0), want, 1e-10)
        # converged: info 0; and b = 0 gives x = 0 at once
        x, info = cg(A, b, x0=x0, tol=1e-9)
        assert info == 0
        r = gathered(b) - G @ gathered(x)
        assert np.linalg.norm(r) <= 1e-9 * np.linalg.norm(B)
        b.local()[:] = 0
        x, info = cg(A, b)
        assert info == 0 and not gathered(x).any()
        for v in (x, b, x0):
            v.free()


def test_cg_complex_hermitian_every_format_that_fits():
    n = 40
    rng = np.random.default_rng(8)
    M = sp.random_array((n, n), density=0.1, random_state=rng) * (1 + 1j)
    G = (M @ M.conj().T + 4 * sp.eye_array(n)).astype(np.complex128).tocsr()
    G.sort_indices()
    want = None
    for fmt in ("csr", "coo", "csc", "dia"):
        with sparse.from_scipy(COMM, G if ME == 0 else None, root=0, format=fmt) as A:
            X, info, B = solve(G, A, 9, tol=1e-12)
        want = spla.spsolve(G.tocsc(), B) if want is None else want
        assert info == 0, fmt
        close(X, want, 1e-8)


def test_cg_misuse_raises_everywhere():
    G = problems.poisson2d(5, 4)
    with sparse.from_scipy(COMM, G, root=None) as A, \
            sparse.from_scipy(COMM, G[:, :10], root=None) as R:
        b = A.vector("row")
        short = pgas.zeros(COMM, 19, np.float64)
        single = pgas.zeros(COMM, 20, np.float32)
        other = pgas.zeros(COMM, 20, np.float64, block=3)
        expect(ArgumentError, cg, R, b)                          # not square
        expect(ArgumentError, cg, A, short)                      # wrong length
        expect(ArgumentError, cg, A, single)                     # wrong dtype
        expect(ArgumentError, cg, A, np.zeros(20))               # not a global array
        expect(ArgumentError, cg, A, b, x0=other)                # x0 not laid out like b
        x, info = cg(A, b)                                       # still usable
        assert info == 0
        for v in (x, b, short, single, other):
            v.free()


def test_nas_cg_class_s_verifies_zeta():
    na, nonzer, niter, shift, zeta_ref = problems.NAS_CG_CLASSES["S"]
    counts = uneven_counts(na)
    lo = sum(counts[:ME])
    rows = problems.nas_cg_matrix("S", rows=(lo, lo + counts[ME]))
    with sparse.from_local_rows(COMM, rows) as A:
        x, z = A.vector("row", fill=1.0), A.vector("row")
        for it in range(niter + 1):            # NAS: one untimed iteration, then x = 1 again
            if it == 1:
                x.local()[:] = 1.0
            z.local()[:] = 0.0
            _, info = cg(A, x, x0=z, tol=0.0, maxiter=problems.NAS_CG_ITERATIONS)
            assert info == problems.NAS_CG_ITERATIONS
            zeta = shift + 1.0 / blas.dot(x, z)
            blas.copy(z, x)
            blas.scal(1.0 / np.sqrt(blas.dot(z, z)), x)
        x.free()
        z.free()
    assert abs(zeta - zeta_ref) / zeta_ref <= problems.NAS_EPSILON, zeta


# ---------------------------------------------------------------- UPCBLAS entry points

# double: every format with the matrix on a rank and replicated; the other
# types on a few formats each (the entry points share one code path per format)
UPCBLAS_CASES = (("d", ("csr", "csc", "coo", "bsr", "dia", "sky"), (0, P - 1, P)),
                 ("z", ("csr", "dia", "sky"), (P,)), ("s", ("coo", "bsr", "csc"), (0,)))


def test_upcblas_susmv_susmm_every_format_and_thread_src():
    m, n = 12, 12
    rng = np.random.default_rng(10)
    for t, fmts, sources in UPCBLAS_CASES:
        dt = U.DTYPES[t]
        keep = sp.diags_array((np.arange(m) != 3).astype(float))      # row 3 empty
        G = (keep @ sp.random_array((m, n), density=0.3, random_state=rng)).astype(dt).tocsr()
        G.eliminate_zeros()
        G.sort_indices()
        X, Y = rand(n, dt, 11), rand(m, dt, 12)
        for fmt in fmts:
            W = sp.tril(G).tocsr() if fmt == "sky" else G
            args = U.arrays_of(W, fmt, (2, 3))
            for src in sources:
                mine = args if src in (ME, P) else (None,) * len(args)
                x, y = pgas.array(COMM, n, dt, block=2), pgas.array(COMM, m, dt, block="*")
                fill(x, X)
                fill(y, Y)
                assert getattr(U, "upc_blas_%ssusmv_%s" % (t, fmt))(0, 2.0, *mine, x, y, src) == 0
                close(gathered(y), 2.0 * (W @ X) + Y, tol_of(dt))
                assert getattr(U, "upc_blas_%ssusmv_%s" % (t, fmt))("T", 1.0, *mine, y, x, src) == 0
                close(gathered(x), W.T @ (2.0 * (W @ X) + Y) + X, 10 * tol_of(dt))
                x.free()
                y.free()
            k = 3
            Bv, Cv = rand((n, k), dt, 13), rand((m, k), dt, 14)
            B = pgas.matrix(COMM, (n, k), dt, block=2, dist="row")
            C = pgas.matrix(COMM, (m, k), dt, block=1, dist="row")
            fill(B, Bv.reshape(-1))
            fill(C, Cv.reshape(-1))
            assert getattr(U, "upc_blas_%ssusmm_%s" % (t, fmt))(0, -1.0, *args, B, C, P) == 0
            close(gathered(C).reshape(m, k), Cv - W @ Bv, tol_of(dt))
            B.free()
            C.free()


def test_upcblas_susdot_thread_src():
    n = 30
    Y = rand(n, np.float64, 15)
    idx = np.array([0, 7, 8, 29])
    vals = rand(4, np.float64, 16)
    with pgas.array(COMM, n, np.float64, block=4) as y, pgas.zeros(COMM, 3, np.float64) as dst:
        fill(y, Y)
        for src in (0, P - 1, P):
            mine = (vals, idx) if src in (ME, P) else (None, None)
            got = U.upc_blas_dsusdot(*mine, y, (dst, 2), src)
            close(got, vals @ Y[idx])
            close(dst[2], vals @ Y[idx])


def test_upcblas_misuse_raises_everywhere():
    G = problems.poisson2d(4, 3)
    val, col, ptr, m, n = U.arrays_of(G, "csr")
    with pgas.zeros(COMM, n) as x, pgas.zeros(COMM, m) as y:
        src = P - 1
        bad_col = col.copy()
        bad_col[0] = n + 5                                  # out of range, on thread_src only
        mine = (val, bad_col, ptr, m, n) if ME == src else (None,) * 5
        exc = expect(ArgumentError, U.upc_blas_dsusmv_csr, 0, 1.0, *mine, x, y, src)
        assert ME == src or "rank" in str(exc)
        short = (val, col, ptr[:-2], m, n) if ME == src else (None,) * 5
        expect(ArgumentError, U.upc_blas_dsusmv_csr, 0, 1.0, *short, x, y, src)
        expect(ArgumentError, U.upc_blas_dsusmv_csr, 0, 1.0, val, col, ptr, m, n, x, y, P + 1)
        expect(ArgumentError, U.upc_blas_dsusmv_csr, 4, 1.0, val, col, ptr, m, n, x, y, P)
        expect(ArgumentError, U.upc_blas_dsusmv_sky, 0, 1.0, val[:3], [0, 1, 2], 2, "L", x, y, P)
        assert not gathered(y).any()                        # nothing written
        assert U.upc_blas_dsusmv_csr(0, 1.0, val, col, ptr, m, n, x, y, P) == 0     # still usable
