"""Where pgascol.blas's LU with partial pivoting spends its time, summed
per rank over one call (the second of two), beside the whole call's time
(the slowest rank's): the local gemm and trsm, the barriers (waiting
included), and on one node the panel's factorization by one rank
(factor_panel) and the interchanges in place (swap_rows); across nodes
the panel's Allgatherv (gather_column), its getrf on every rank and the
interchanges' Alltoallv (interchange).

    mpiexec -n 2 python bench/blas_lu_phases.py 4096 256"""
import collections
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import blas, pgas
from pgascol.blas import _kernels, factor

spent = collections.defaultdict(float)


def timed(name, fn):
    def call(*args, **kw):
        t = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            spent[name] += time.perf_counter() - t
    return call


class Kernels:
    """factor.K's gemm and trsm, timed."""
    gemm = staticmethod(timed("gemm", _kernels.gemm))
    trsm = staticmethod(timed("trsm", _kernels.trsm))


def main(n, nb):
    comm = pgascol.Comm(MPI.COMM_WORLD)
    me = comm.Get_rank()
    blas.set_threads(1)
    for name in ("_gather_column", "_getrf", "_interchange", "_factor_panel", "_swap_rows"):
        setattr(factor, name, timed(name.strip("_"), getattr(factor, name)))
    factor.operands.sync = timed("barrier", factor.operands.sync)
    factor.K = Kernels
    a = pgas.matrix(comm, (n, n), block=nb, dist="row")
    rows = np.array([i for lo, hi in a.owned_rows() for i in range(lo, min(hi, n))], int)
    for _ in range(2):
        loc = a.local()
        loc[:] = np.random.default_rng(me).random(loc.shape)
        loc[np.arange(len(rows)), rows] += 1
        spent.clear()
        comm.Barrier()
        t = time.perf_counter()
        factor.lu(a)
        t = time.perf_counter() - t
    total = comm.allreduce(t, op=MPI.MAX)
    per_rank = comm.gather(dict(spent), root=0)
    if me == 0:
        print("lu n=%d NB=%d np=%d: %.3f s" % (n, nb, comm.Get_size(), total))
        for r, d in enumerate(per_rank):
            print("  rank %d: %s" % (r, "  ".join("%s %.3f s" % kv for kv in sorted(d.items()))))
    a.free()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
