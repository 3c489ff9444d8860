"""The limit of a distributed memory-bound BLAS call on one node: each rank
makes one bare local call (SciPy's BLAS, one thread) on its own half of
the operands, all ranks started together by a barrier and timed by the
slowest, against the same call of pgascol.blas on global arrays and
numpy/SciPy in one process with as many BLAS threads as ranks (rank 0,
the others asleep in a barrier), rounds alternating in one job.

    mpiexec -n 2 python bench/blas_limit.py ddot 67108864 30
    mpiexec -n 2 python bench/blas_limit.py dgemv 8192 40

"bare-private": operands in the rank's private memory (numpy arrays);
"bare-shared": in a shared anonymous mapping, as global arrays are (no
transparent huge pages when shmem_enabled is "never"). Rank 0 prints the
best time of each and numpy's best over it (above 1 is faster than numpy)."""
import mmap
import sys
import time

import numpy as np
from mpi4py import MPI
from threadpoolctl import threadpool_limits

import pgascol
from pgascol import blas, pgas
from pgascol.blas import _kernels as K


def private(rng, shape):
    return rng.random(shape)


def shared(rng, shape):
    a = np.frombuffer(mmap.mmap(-1, max(int(np.prod(shape)), 1) * 8), np.float64)[:int(np.prod(shape))]
    a = a.reshape(shape)
    a[...] = rng.random(shape)
    return a


def cases(op, n, comm, rng):
    """({name: call on every rank}, numpy's call on rank 0, arrays to free)."""
    P, me = comm.Get_size(), comm.Get_rank()
    out = {}
    if op == "ddot":
        for name, alloc in (("bare-private", private), ("bare-shared", shared)):
            x, y = alloc(rng, n // P), alloc(rng, n // P)
            out[name] = lambda x=x, y=y: K.dot(x, y, False)
        gx, gy = pgas.array(comm, n, block="*"), pgas.array(comm, n, block="*")
        for g in (gx, gy):
            g.local()[:] = rng.random(len(g.local()))
        out["pgascol"] = lambda: blas.dot(gx, gy)
        X, Y = (np.random.default_rng(0).random(n), np.random.default_rng(1).random(n)) if me == 0 else (0, 0)
        return out, (lambda: K.dot(X, Y, False)), (gx, gy)
    h = -(-n // P)
    for name, alloc in (("bare-private", private), ("bare-shared", shared)):
        A, x, y = alloc(rng, (h, n)), alloc(rng, n), alloc(rng, h)
        out[name] = lambda A=A, x=x, y=y: K.gemv(0, 1.0, A, x, 0.0, y)
    ga, gx = pgas.matrix(comm, (n, n), block=h, dist="row"), pgas.array(comm, n, block="*")
    ga.local()[:] = rng.random(ga.local().shape)
    gx.local()[:] = rng.random(len(gx.local()))
    gy = blas.gemv(1.0, ga, gx)
    out["pgascol"] = lambda: blas.gemv(1.0, ga, gx, 0.0, gy)
    A, X, Y = ((np.random.default_rng(0).random((n, n)), np.random.default_rng(1).random(n), np.zeros(n))
               if me == 0 else (0, 0, 0))
    return out, (lambda: K.gemv(0, 1.0, A, X, 0.0, Y)), (ga, gx, gy)


def main(op, n, rounds):
    comm = pgascol.Comm(MPI.COMM_WORLD)
    P, me = comm.Get_size(), comm.Get_rank()
    blas.set_threads(1)
    calls, whole, arrays = cases(op, n, comm, np.random.default_rng(me))
    best = dict.fromkeys(list(calls) + ["numpy"], float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            comm.Barrier()
            t = time.perf_counter()
            call()
            best[name] = min(best[name], comm.allreduce(time.perf_counter() - t, op=MPI.MAX))
        if me == 0:
            with threadpool_limits(P, user_api="blas"):
                t = time.perf_counter()
                whole()
                best["numpy"] = min(best["numpy"], time.perf_counter() - t)
        comm.Barrier()
    if me == 0:
        print("%s n=%d np=%d, best of %d: %s" % (op, n, P, rounds, "  ".join(
            "%s %.3f ms (x%.2f)" % (k, v * 1e3, best["numpy"] / v) for k, v in best.items())), flush=True)
    for a in arrays:
        a.free()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 20)
