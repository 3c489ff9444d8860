"""upc.all_broadcast / all_gather_all / all_exchange against pgascol.Comm's
Bcast / Allgather / Alltoall moving the same bytes, side by side in one job.

    mpiexec -n 2 python bench/upc/against_comm.py [flags] [rounds]

Per size: the median over iterations of the slowest rank's time, best of
`rounds` rounds, in microseconds, and the ratio upc / comm."""
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas, upc

comm = pgascol.Comm(MPI.COMM_WORLD)
P, ME = comm.size, comm.rank
FLAGS = int(sys.argv[1]) if len(sys.argv) > 1 else 0
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
SIZES = [4, 64, 1024, 4096, 65536, 1 << 20, 4 << 20]


def timed(fn, iters):
    comm.Barrier()
    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    out = np.array(out)
    worst = np.empty_like(out)
    comm.Allreduce(out, worst, op=MPI.MAX)
    return float(np.median(worst))


def case(name, n):
    if name == "broadcast":
        src = pgas.zeros(comm, n, np.uint8, block=0)
        dst = pgas.zeros(comm, n * P, np.uint8, block=n)
        buf = np.zeros(n, np.uint8)
        return (src, dst), lambda: upc.all_broadcast(dst, src, n, FLAGS), lambda: comm.Bcast(buf, root=0)
    if name == "gather_all":
        src = pgas.zeros(comm, n * P, np.uint8, block=n)
        dst = pgas.zeros(comm, n * P * P, np.uint8, block=n * P)
        s, r = np.zeros(n, np.uint8), np.zeros(n * P, np.uint8)
        return (src, dst), lambda: upc.all_gather_all(dst, src, n, FLAGS), lambda: comm.Allgather(s, r)
    src = pgas.zeros(comm, n * P * P, np.uint8, block=n * P)
    dst = pgas.zeros(comm, n * P * P, np.uint8, block=n * P)
    s, r = np.zeros(n * P, np.uint8), np.zeros(n * P, np.uint8)
    return (src, dst), lambda: upc.all_exchange(dst, src, n, FLAGS), lambda: comm.Alltoall(s, r)


for name in ("broadcast", "gather_all", "exchange"):
    for n in SIZES:
        if name != "broadcast" and n * P * P > (64 << 20):
            continue
        arrays, u, c = case(name, n)
        iters = 200 if n <= 65536 else 20
        best_u = best_c = float("inf")
        for _ in range(ROUNDS):
            best_u = min(best_u, timed(u, iters))
            best_c = min(best_c, timed(c, iters))
        for a in arrays:
            a.free()
        if ME == 0:
            print("%-10s %9d B  upc %9.2f us  comm %9.2f us  ratio %.2f"
                  % (name, n, best_u * 1e6, best_c * 1e6, best_u / best_c), flush=True)
