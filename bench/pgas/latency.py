"""Latency of one-sided access to a global array, against mpi4py's RMA on
the same data, side by side in one job (best of rounds, rank 0 measures,
the others wait in MPI's barrier, which lets MPI serve the RMA cases):

    mpiexec -n 2 python bench/pgas/latency.py                       # same-node peer
    PGASCOL_NODE_SIZE=1 mpiexec -n 2 python bench/pgas/latency.py   # another (virtual) node
    mpiexec -n 2 python bench/pgas/latency.py --json pgas.json      # pgascol-bench/1 schema

Cases: one float64 element a[i] owned by rank 1 (pgascol) against
Win.Get + Win.Flush of the same element of rank 1's part (MPI, a window
over the same memory under Lock_all); a 1 MiB bulk get (a.get) against the
same with Win.Get, and against one memcpy of 1 MiB in the caller (the floor)."""
import argparse
import json
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas
from pgascol.tools.bench import SCHEMA


def best(fn, iters, rounds):
    """Best round's mean time per call, microseconds, and (avg, max)."""
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - t0) / iters * 1e6)
    return min(times), sum(times) / len(times), max(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    comm = pgascol.Comm(MPI.COMM_WORLD)
    me, P = comm.Get_rank(), comm.Get_size()
    n = (1 << 20) // 8 * P
    a = pgas.array(comm, n, np.float64, block="*")      # rank r holds [r*n/P, (r+1)*n/P)
    a.local()[:] = me
    target = 1 % P
    first = a.owned()[0][0] if me == target else None
    first = comm.bcast(first, root=target)
    win = MPI.Win.Create(a.local(), 8, comm=MPI.COMM_WORLD)
    win.Lock_all(MPI.MODE_NOCHECK)
    pgas.barrier(comm)
    results = []
    if me == 0:
        one = np.empty(1)
        bulk = np.empty(n // P)
        src = np.ones(n // P)
        where = "same node" if a._ctx.on_node[target] else "another node"

        def mpi_one():
            win.Get(one, target, (0, 1, MPI.DOUBLE))
            win.Flush(target)

        def mpi_bulk():
            win.Get(bulk, target, (0, n // P, MPI.DOUBLE))
            win.Flush(target)

        cases = [("pgas_get_element", 8, lambda: a[first], mpi_one, 20000),
                 ("pgas_get_1MiB", 1 << 20, lambda: a.get(first, bulk), mpi_bulk, 200)]
        for name, nbytes, ours, theirs, iters in cases:
            tp, tm = best(ours, iters, args.rounds), best(theirs, iters, args.rounds)
            floor = best(lambda: np.copyto(bulk, src), 200, args.rounds)[0] if nbytes > 8 else 0.0
            print("%-18s %8d B from rank %d (%s): pgascol %8.2f us  MPI RMA %8.2f us  ratio %.2f%s"
                  % (name, nbytes, target, where, tp[0], tm[0], tp[0] / tm[0],
                     "  memcpy %.2f us (%.2fx)" % (floor, tp[0] / floor) if floor else ""))
            for impl, t in (("pgascol", tp), ("mpi", tm)):
                results.append({"op": name, "bytes": nbytes, "np": P, "impl": impl, "t_min_us": t[0],
                                "t_avg_us": t[1], "t_max_us": t[2], "path": where, "memcpy_us": floor,
                                "iters": iters, "rounds": args.rounds, "buffer_sets": 1, "store_us": None})
    MPI.COMM_WORLD.Barrier()    # MPI's own: the target's MPI must run for the MPI RMA cases
    win.Unlock_all()
    win.Free()
    a.free()
    if me == 0 and args.json:
        meta = {"np": P, "mpi": MPI.Get_library_version().splitlines()[0], "pgascol": pgascol.__version__,
                "benchmark": "bench/pgas/latency.py"}
        with open(args.json, "w") as f:
            json.dump({"schema": SCHEMA, "meta": meta, "results": results}, f, indent=1)
    comm.Free()


if __name__ == "__main__":
    main()
