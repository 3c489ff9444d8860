"""What a small ALLSYNC UPC call costs against the calls that bound it:
pgascol.Comm's Barrier (nobody leaves before everyone entered, which UPC's
ALLSYNC also asks), its Bcast and Scatter (the MPI-style twins: the root
posts and leaves), native MPI's Barrier, and all_broadcast / all_scatter by
the algorithms named, in one job. Each call is timed as pgascol-bench upc
times it (after pgascol.Comm's barrier, not timed; the slowest rank's time
of each call), and the context switches of the whole loop (barrier
included) are counted per rank and call from /proc/self/status: with more
ranks than cores a wait hands the core over (sched_yield, counted as
involuntary) or sleeps (voluntary).

    mpiexec -n 8 python bench/upc_switches.py [NBYTES] [ALGORITHMS]   # default 4 last,push,pull

Best of 3 rounds of 2000 calls (the round with the lowest mean)."""
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas, upc

WORLD = MPI.COMM_WORLD


def switches():
    """(voluntary, involuntary) context switches of this process so far."""
    got = {}
    with open("/proc/self/status") as f:
        for line in f:
            if "ctxt_switches" in line:
                name, value = line.split(":")
                got[name] = int(value)
    return got["voluntary_ctxt_switches"], got["nonvoluntary_ctxt_switches"]


def measure(comm, call, iters):
    """(mean, median) of the slowest rank's time per call (us), (voluntary,
    involuntary) switches per rank and call."""
    for _ in range(5):
        comm.Barrier()
        call()
    t = np.empty(iters)
    before = switches()
    for i in range(iters):
        comm.Barrier()
        t0 = time.perf_counter()
        call()
        t[i] = time.perf_counter() - t0
    after = switches()
    slowest, counts = np.empty_like(t), np.zeros(2)
    WORLD.Allreduce(t, slowest, MPI.MAX)
    WORLD.Allreduce(np.subtract(after, before).astype(float), counts, MPI.SUM)
    per = counts / iters / WORLD.Get_size()
    return slowest.mean() * 1e6, np.median(slowest) * 1e6, per[0], per[1]


def main():
    nbytes = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    algorithms = (sys.argv[2] if len(sys.argv) > 2 else "last,push,pull").split(",")
    comm = pgascol.Comm(WORLD)
    P, B = comm.Get_size(), nbytes
    u8 = np.uint8
    arrays = [pgas.full(comm, n, 1, u8, block=b) for n, b in ((P * B, B), (P * B, B), (P * P * B, P * B))]
    dst, src, rows = arrays
    small, big = np.ones(B, u8), np.ones(P * B, u8)
    calls = {"Barrier": comm.Barrier, "Bcast": lambda: comm.Bcast(small, 0),
             "Scatter": lambda: comm.Scatter(big, small, 0), "MPI Barrier": WORLD.Barrier}
    for a in algorithms:
        calls["broadcast " + a] = lambda a=a: upc.all_broadcast(dst, (src, 0), B, 0, a)
        calls["scatter " + a] = lambda a=a: upc.all_scatter(dst, (rows, 0), B, 0, a)
    best = {}
    for _ in range(3):
        for name, call in calls.items():
            got = measure(comm, call, 2000)
            if name not in best or got[0] < best[name][0]:
                best[name] = got
    if comm.Get_rank() == 0:
        print("np=%d, %d B: us per call (slowest rank), context switches per rank and call "
              "(the loop's barrier included)" % (P, B))
        for name, (mean, median, vol, invol) in best.items():
            print("%-18s mean %7.2f  median %7.2f  voluntary %.2f  involuntary %.2f"
                  % (name, mean, median, vol, invol))
    for a in arrays:
        a.free()


if __name__ == "__main__":
    main()
