"""pgascol.sparse: the multi-rank program tests/mpi_programs/sparse_matrices.py
under mpiexec (every case at np 2 and 3, a sample at np 1, 4 and 8 and on
virtual nodes of 1, 2 and 3 ranks: the halo messages between nodes), and
single-process checks of the formats and the local kernels against scipy.

    pytest tests/test_sparse.py"""
import numpy as np
import pytest
import scipy.sparse as sp

from pgascol.errors import ArgumentError
from pgascol.sparse import _kernels, formats
from tests.mpi_harness import Run, program_tests
from tests.test_mpi_programs import vnodes

SAMPLED = {"PGASCOL_SPARSE_TEST_SAMPLE": "0.1"}

TABLE = [
    Run("sparse_matrices.py", (2, 3), timeout=600),
    Run("sparse_matrices.py", (1, 4, 8), "sampled", SAMPLED, timeout=600),
    Run("sparse_matrices.py", (3,), "vnodes_of_1_sampled", {**vnodes(1), **SAMPLED}, timeout=600),
    Run("sparse_matrices.py", (4,), "vnodes_of_2_sampled", {**vnodes(2), **SAMPLED}, timeout=600),
    Run("sparse_matrices.py", (8,), "vnodes_of_3_sampled", {**vnodes(3, "roundrobin"), **SAMPLED}, timeout=600),
]
test_sparse_matrices = program_tests(TABLE)

TYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _random(shape, dt, seed, density=0.3):
    rng = np.random.default_rng(seed)
    A = sp.random_array(shape, density=density, rng=rng, format="csr")
    if np.dtype(dt).kind == "c":
        A = A + 1j * sp.random_array(shape, density=density, rng=rng, format="csr")
    return sp.csr_array(A.astype(dt))


def test_balanced_by_nonzeros():
    assert formats.balanced(np.array([1, 1, 1, 1]), 2) == [2, 2]
    assert formats.balanced(np.array([8, 1, 1, 1, 1, 0]), 2) == [1, 5]
    assert formats.balanced(np.zeros(5), 2) == [3, 2]               # no nonzeros: by line count
    assert formats.balanced(np.array([5, 0, 0]), 3) == [0, 1, 2]    # a rank with no lines
    assert sum(formats.balanced(np.arange(100), 7)) == 100


@pytest.mark.parametrize("fmt", formats.FORMATS + ("dia-rows",))
def test_split_and_rebuild_every_format(fmt):
    fmt, _, how = fmt.partition("-")
    A = _random((12, 12), np.float64, 1)
    if fmt == "sky":
        A = sp.csr_array(sp.tril(A))
    G = formats.check(A, fmt, (3, 2) if fmt == "bsr" else None)
    counts, fields = formats.split(G, fmt, 3, how or None)
    assert len(counts) == 3 and all(len(f[0]) for f in fields)
    if fmt == "dia" and how != "rows":  # by diagonals: diagonal d whole (12 values) on rank d % 3
        assert counts == np.bincount(np.arange(len(G.offsets)) % 3).tolist()
        bounds = np.cumsum([0] + counts)
        assert [sorted(fields[1][0][a:b]) for a, b in zip(bounds, bounds[1:])] == \
            [sorted(G.offsets[r::3]) for r in range(3)]
    if how == "rows":                   # per rank: its rows of the diagonals that cross them
        ends = [np.cumsum([0] + kind) for _, kind, _ in fields]
        parts = []
        for r in range(3):
            length, idx, val = (f[0][e[r]:e[r + 1]] for f, e in zip(fields, ends))
            piece = dict(ptr=np.concatenate(([0], np.cumsum(length))), idx=idx, val=val)
            parts.append(formats.to_scipy(fmt, G.shape, None, None, piece, sum(counts[:r]), counts[r]))
            assert parts[-1].shape == (counts[r], 12) and parts[-1].format == "dia"
        assert abs(sp.vstack(parts) - A).max() == 0
        return
    ptr = np.concatenate(([0], np.cumsum(fields[0][0])))
    piece = dict(ptr=ptr, idx=fields[1][0], val=fields[2][0])
    lines = 12 if fmt == "dia" else sum(counts)         # (DIA by diagonals: every row of them)
    whole = formats.to_scipy(fmt, G.shape, formats.uplo_of(G, fmt), (3, 2), piece, 0, lines)
    assert abs(sp.csr_array(whole) - A).max() == 0


def test_split_names_dia_only():
    assert formats.split_of("dia", None) == "diagonals" and formats.split_of("dia", "rows") == "rows"
    assert formats.split_of("csr", None) is None
    for fmt, split, words in (("csr", "rows", "format dia only"), ("dia", "cols", "must be one of")):
        with pytest.raises(ArgumentError, match=words):
            formats.split_of(fmt, split)


def test_check_refuses_what_is_not_a_canonical_matrix():
    A = _random((6, 6), np.float64, 2)
    for bad, words in ((A.astype(np.int32), "dtype"), (np.eye(3), "scipy.sparse"),
                       (sp.csr_array(A), "format must")):
        with pytest.raises(ArgumentError, match=words):
            formats.check(bad, "ell" if words == "format must" else "csr", None)
    with pytest.raises(ArgumentError, match="triangular"):
        formats.check(A + A.T, "sky", None)
    with pytest.raises(ArgumentError, match="blocksize"):
        formats.check(A, "bsr", (4, 4))


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("idt", (np.int32, np.int64))
def test_kernels_against_scipy(dt, idt):
    A = _random((9, 7), dt, 3)
    k = 3
    x = _random((7, k), dt, 4).toarray()
    xt = _random((9, k), dt, 5).toarray()
    ptr, idx = A.indptr.astype(idt), A.indices.astype(idt)
    tol = 1e-4 if np.dtype(dt).itemsize <= 8 else 1e-12
    y = np.ones(9 * k, dt)
    _kernels.csr_gather(ptr, idx, A.data, x.reshape(-1), k, y, k, k, dt(2), dt(3), False)
    assert np.allclose(y.reshape(9, k), 2 * (A @ x) + 3, atol=tol)
    z = np.zeros(7 * k, dt)
    _kernels.csr_scatter(ptr, idx, A.data, xt.reshape(-1), k, z, k, k, dt(1), True)
    assert np.allclose(z.reshape(7, k), A.conj().T @ xt, atol=tol)
    rows = np.repeat(np.arange(9), np.diff(A.indptr)).astype(idt)
    y = np.zeros(9 * k, dt)
    _kernels.coo(rows, idx, A.data, x.reshape(-1), k, y, k, k, dt(1), False)
    assert np.allclose(y.reshape(9, k), A @ x, atol=tol)
    # DIA by rows, rows 2..7 (a piece of 6 rows at lo = 2) against the same rows of A
    off = np.unique(sp.coo_array(A).col - sp.coo_array(A).row).astype(idt)
    val = np.stack([np.concatenate([A[[i], [i + o]] if 0 <= i + o < 7 else [0] for i in range(2, 8)])
                    for o in off]).astype(dt).reshape(-1)
    runs = np.array([(d, i0, i1, 2 + i0 + o) for d, o in enumerate(off)
                     for i0, i1 in [(max(0, -2 - o), min(6, 7 - 2 - o))] if i1 > i0], np.int64).reshape(-1)
    y = np.ones(6 * k, dt)
    _kernels.dia_gather(runs, val, 6, x.reshape(-1), k, k, y, k, k, dt(2), dt(3), False)
    assert np.allclose(y.reshape(6, k), 2 * (A[2:8] @ x) + 3, atol=tol)
    z = np.zeros(7 * k, dt)
    _kernels.dia_scatter(runs, val, 6, xt[2:8].reshape(-1), k, z, k, k, k, dt(1), True)
    assert np.allclose(z.reshape(7, k), A[2:8].conj().T @ xt[2:8], atol=tol)
