"""Cholesky and LU on a global matrix distributed by rows, checked against
scipy.linalg:

    mpiexec -n 2 python examples/blas_factorizations.py [n] [NB]
"""
import sys
import time

import numpy as np
import scipy.linalg as sl
from mpi4py import MPI

import pgascol
from pgascol import pgas
from pgascol.blas import factor

comm = pgascol.Comm(MPI.COMM_WORLD)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
nb = int(sys.argv[2]) if len(sys.argv) > 2 else 64
rng = np.random.default_rng(0)
G = rng.standard_normal((n, n))
A = G @ G.T + n * np.eye(n)                  # the same on every rank (same seed)

for name, run in (("cholesky", lambda a: factor.cholesky(a)), ("lu", lambda a: factor.lu(a))):
    with pgas.matrix(comm, (n, n), np.float64, block=nb, dist="row") as a:
        rows = [i for lo, hi in a.owned_rows() for i in range(lo, min(hi, n))]
        a.local()[:] = A[rows]               # each rank writes its own block rows
        pgas.barrier(comm)
        t = time.perf_counter()
        piv = run(a)
        t = time.perf_counter() - t
        F = a[:, :]                          # gathered, to check on every rank
        pgas.barrier(comm)
    if name == "cholesky":
        L = np.tril(F)
        res = np.linalg.norm(A - L @ L.T) / np.linalg.norm(A)
    else:
        L, U = np.tril(F, -1) + np.eye(n), np.triu(F)
        PA = A.copy()
        for i, p in enumerate(piv):
            PA[[i, p]] = PA[[p, i]]
        res = np.linalg.norm(PA - L @ U) / np.linalg.norm(A)
        assert np.array_equal(piv, sl.lu_factor(A)[1])
    if comm.Get_rank() == 0:
        print("%-8s n=%d NB=%d np=%d: %.3f s, relative residual %.2e (bound 1e-12 * n = %.0e)"
              % (name, n, nb, comm.Get_size(), t, res, 1e-12 * n))
    assert res < 1e-12 * n
