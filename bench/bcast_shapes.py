"""Bcast shapes side by side: the engine's flat pull against the pipelined
k-nomial tree (radix 2 and 4), and native MPI, in one job.

    mpiexec -n 8 python bench/bcast_shapes.py 8K,64K,1M,16M

Three node teams are built with different PGASCOL_BCAST_TREE_MIN/RADIX; every
round times each of them and MPI's Bcast (rotating roots), and the best round
of the slowest rank's mean per call is printed. Use it to choose
PGASCOL_BCAST_TREE_MIN on a machine (docs/PERFORMANCE.md)."""
import os
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.tools.bench_harness import parse_sizes

WORLD = MPI.COMM_WORLD
SHAPES = [("flat", {"PGASCOL_BCAST_TREE_MIN": "0"}),
          ("tree2", {"PGASCOL_BCAST_TREE_MIN": "2", "PGASCOL_BCAST_RADIX": "2"}),
          ("tree4", {"PGASCOL_BCAST_TREE_MIN": "2", "PGASCOL_BCAST_RADIX": "4"})]


def best_time(call, iters, rounds):
    best = float("inf")
    for _ in range(rounds):
        WORLD.Barrier()
        t0 = time.perf_counter()
        for i in range(iters):
            call(i % WORLD.size)
        best = min(best, WORLD.allreduce((time.perf_counter() - t0) / iters, op=MPI.MAX))
    return best


def main():
    sizes = parse_sizes(sys.argv[1] if len(sys.argv) > 1 else "8K,64K,1M,16M")
    teams = [(name, pgascol.NodeTeam(WORLD, {**os.environ, **env})) for name, env in SHAPES]
    for n in sizes:
        buf = np.ones(n, np.uint8)
        iters = max(3, min(2000, int(2e8 // n // WORLD.size)))
        row = [(name, best_time(lambda r, c=team.core: c.bcast(buf, n, r), iters, 7)) for name, team in teams]
        row.append(("mpi", best_time(lambda r: WORLD.Bcast(buf, r), iters, 7)))
        if WORLD.rank == 0:
            print("np=%d %9d B  " % (WORLD.size, n) + "  ".join("%s %9.1f us" % (k, v * 1e6) for k, v in row),
                  flush=True)
    for _, team in teams:
        team.free()


if __name__ == "__main__":
    main()
