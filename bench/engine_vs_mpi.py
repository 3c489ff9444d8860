"""Intra-node engine vs native MPI, side by side in one job.

    mpiexec -n 2 python bench/engine_vs_mpi.py [--ops bcast,allreduce] [--sizes 8,1M,16M]
                                               [--rounds 7] [--via team|comm] [--json out.json]

For each operation and size, rounds alternate pgascol and mpi4py's native
collective on the same buffers (--via team: the node team's C engine called
from Python; --via comm: the very same mpi4py calls made on a pgascol.Comm), so machine noise hits both alike. A round times `iters` calls; the
time of a round is the slowest rank's per-call average; we report the best
round (min) of each side and the ratio pgascol/MPI, plus the memory floor:
one memcpy of the payload, timed in the same run (numpy copyto, pre-faulted).
"""
import argparse
import json
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import _core

F64 = _core.DTYPES["float64"]
SUM = _core.OPS["SUM"]


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(s[:-1] if mult > 1 else s) * mult


def human(n):
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return "%d%s" % (n // size, unit)
    return str(n)


def make_case(op, nbytes, comm, team, pcomm=None):
    """Return (pgascol_call, mpi_call) closures for one op and payload size
    (bytes per rank's contribution, as IMB/OSU count them). With pcomm, the
    pgascol side makes the native calls on that pgascol.Comm."""
    if pcomm is not None:
        return make_case(op, nbytes, pcomm, team)[1], make_case(op, nbytes, comm, team)[1]
    P, me = comm.Get_size(), comm.Get_rank()
    n = max(nbytes // 8, 1)
    x = np.ones(n)
    y = np.zeros(n)
    t = team.core
    if op == "barrier":
        return t.barrier, comm.Barrier
    if op == "bcast":
        buf = np.ones(n)
        return (lambda: t.bcast(buf, buf.nbytes, 0)), (lambda: comm.Bcast(buf, 0))
    if op == "allreduce":
        return (lambda: t.allreduce(x, y, n, F64, SUM)), (lambda: comm.Allreduce(x, y, MPI.SUM))
    if op == "reduce":
        return (lambda: t.reduce(x, y, n, F64, SUM, 0)), (lambda: comm.Reduce(x, y, MPI.SUM, 0))
    if op == "scan":
        return (lambda: t.scan(x, y, n, F64, SUM)), (lambda: comm.Scan(x, y, MPI.SUM))
    if op == "reduce_scatter_block":
        big = np.ones(n * P)
        return ((lambda: t.reduce_scatter(big, y, [n] * P, F64, SUM, block=True)),
                (lambda: comm.Reduce_scatter_block(big, y, MPI.SUM)))
    if op in ("allgather", "alltoall", "gather", "scatter"):
        b = n * 8
        small = np.ones(n)
        big = np.zeros(n * P)
        counts = [b] * P
        if op == "allgather":
            return ((lambda: t.allgather(small, b, big, counts, None)), (lambda: comm.Allgather(small, big)))
        if op == "gather":
            return ((lambda: t.gather(small, b, big, counts, None, 0)), (lambda: comm.Gather(small, big, 0)))
        if op == "scatter":
            return ((lambda: t.scatter(big, counts, None, small, b, 0)), (lambda: comm.Scatter(big, small, 0)))
        # alltoall: nbytes is the total each rank sends (IMB convention: per pair = nbytes / P)
        per = max(nbytes // P // 8, 1)
        s2, r2 = np.ones(per * P), np.zeros(per * P)
        c2 = [per * 8] * P
        return ((lambda: t.alltoall(s2, c2, None, r2, c2, None)), (lambda: comm.Alltoall(s2, r2)))
    raise SystemExit("unknown op %r" % op)


def time_calls(fn, iters, comm):
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    dt = (time.perf_counter() - t0) / iters
    return comm.allreduce(dt, op=MPI.MAX)


def memcpy_floor(nbytes, rounds):
    src = np.ones(max(nbytes // 8, 1))
    dst = np.zeros_like(src)
    best = float("inf")
    for _ in range(rounds):
        iters = max(1, min(1000, (64 << 20) // max(nbytes, 1)))
        t0 = time.perf_counter()
        for _ in range(iters):
            np.copyto(dst, src)
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="barrier,bcast,allreduce,reduce,allgather,alltoall,"
                                     "reduce_scatter_block,gather,scatter,scan")
    ap.add_argument("--sizes", default="8,1K,64K,1M,4M,16M")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--via", choices=("team", "comm"), default="team")
    ap.add_argument("--json")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    team = pgascol.NodeTeam(comm)
    pcomm = pgascol.Comm(comm) if args.via == "comm" else None
    P, me = comm.Get_size(), comm.Get_rank()
    results = []
    if me == 0:
        print("# np=%d, %s; pgascol via %s; best of %d rounds; time = slowest rank's mean per call"
              % (P, MPI.Get_library_version().splitlines()[0].strip(), args.via, args.rounds))
        print("%-22s %8s %12s %12s %8s %12s  %s" % ("op", "bytes", "pgascol_us", "mpi_us", "ratio",
                                                    "memcpy_us", "path"))
    for op in args.ops.split(","):
        sizes = [0] if op == "barrier" else [parse_size(s) for s in args.sizes.split(",")]
        for nbytes in sizes:
            ours, theirs = make_case(op, nbytes, comm, team, pcomm)
            iters = max(3, min(2000, (256 << 20) // max(nbytes * P, 1) // 4))
            name = {"reduce_scatter_block": "Reduce_scatter_block"}.get(op, op.capitalize())
            counters = (lambda: pgascol.stats(pcomm)) if pcomm is not None else team.core.stats
            before = dict(counters().get(name, {}))
            ours(); theirs()  # warm up, fault pages in
            best_p = best_m = float("inf")
            for _ in range(args.rounds):
                best_p = min(best_p, time_calls(ours, iters, comm))
                best_m = min(best_m, time_calls(theirs, iters, comm))
            floor = memcpy_floor(nbytes, 3) if nbytes else 0.0
            after = counters().get(name, {})
            paths = {k: v - before.get(k, 0) for k, v in after.items() if v > before.get(k, 0)}
            path = max(paths, key=paths.get) if paths else "-"
            row = {"op": op, "bytes": nbytes, "np": P, "pgascol_us": best_p * 1e6, "mpi_us": best_m * 1e6,
                   "ratio": best_p / best_m, "memcpy_us": floor * 1e6, "path": path}
            results.append(row)
            if me == 0:
                print("%-22s %8s %12.2f %12.2f %8.2f %12.2f  %s" % (
                    op, human(nbytes), row["pgascol_us"], row["mpi_us"], row["ratio"], row["memcpy_us"], path))
                sys.stdout.flush()
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "mpi": MPI.Get_library_version().splitlines()[0].strip(),
                       "results": results}, f, indent=1)
    if pcomm is not None:
        pcomm.Free()
    team.free()


if __name__ == "__main__":
    main()
