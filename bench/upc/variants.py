"""Every algorithm of pgascol.upc's data-movement collectives against
pgascol.Comm's collective moving the same bytes, side by side in one job.

    mpiexec -n 2 python bench/upc/variants.py [collective ...] [--flags F] [--rounds R] [--sizes 4,65536]

Per size and variant: the median over iterations of the slowest rank's time
(each iteration timed on every rank, the maximum taken), best of R rounds,
in microseconds, then each variant's ratio to pgascol.Comm's equivalent
(Bcast, Scatter, Gather, Allgather, Alltoall; permute: Alltoallv with one
block each way). flags: UPC's (0: IN_ALLSYNC | OUT_ALLSYNC)."""
import argparse
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas, upc

comm = pgascol.Comm(MPI.COMM_WORLD)
P, ME = comm.size, comm.rank


def timed(fn, iters):
    comm.Barrier()
    out = np.empty(iters)
    for i in range(iters):
        t0 = time.perf_counter()
        fn()
        out[i] = time.perf_counter() - t0
    worst = np.empty_like(out)
    comm.Allreduce(out, worst, op=MPI.MAX)
    return float(np.median(worst))


def setup(coll, n, flags):
    """(arrays, {variant: fn}, comm equivalent)."""
    def arr(size, block):
        return pgas.zeros(comm, size, np.uint8, block=block)
    if coll == "broadcast":
        src, dst, buf = arr(n, 0), arr(n * P, n), np.zeros(n, np.uint8)
        fns = {a: (lambda a=a: upc.all_broadcast(dst, src, n, flags, algorithm=a)) for a in upc.ALGORITHMS[coll]}
        return (src, dst), fns, lambda: comm.Bcast(buf, root=0)
    if coll in ("scatter", "gather"):
        one, each = arr(n * P, 0), arr(n * P, n)
        s, r = np.zeros(n * P, np.uint8), np.zeros(n, np.uint8)
        if coll == "scatter":
            fns = {a: (lambda a=a: upc.all_scatter(each, one, n, flags, algorithm=a)) for a in upc.ALGORITHMS[coll]}
            return (one, each), fns, lambda: comm.Scatter(s, r, root=0)
        fns = {a: (lambda a=a: upc.all_gather(one, each, n, flags, algorithm=a)) for a in upc.ALGORITHMS[coll]}
        return (one, each), fns, lambda: comm.Gather(r, s, root=0)
    if coll == "gather_all":
        src, dst = arr(n * P, n), arr(n * P * P, n * P)
        s, r = np.zeros(n, np.uint8), np.zeros(n * P, np.uint8)
        fns = {a: (lambda a=a: upc.all_gather_all(dst, src, n, flags, algorithm=a)) for a in upc.ALGORITHMS[coll]}
        return (src, dst), fns, lambda: comm.Allgather(s, r)
    if coll == "exchange":
        src, dst = arr(n * P * P, n * P), arr(n * P * P, n * P)
        s, r = np.zeros(n * P, np.uint8), np.zeros(n * P, np.uint8)
        fns = {a: (lambda a=a: upc.all_exchange(dst, src, n, flags, algorithm=a)) for a in upc.ALGORITHMS[coll]}
        return (src, dst), fns, lambda: comm.Alltoall(s, r)
    src, dst = arr(n * P, n), arr(n * P, n)
    perm = pgas.zeros(comm, P, np.int32, block=1)
    perm.local()[:] = (ME + 1) % P
    comm.Barrier()
    s, r = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    sc, rc = [0] * P, [0] * P
    sc[(ME + 1) % P], rc[(ME - 1) % P] = n, n
    fns = {a: (lambda a=a: upc.all_permute(dst, src, perm, n, flags, algorithm=a)) for a in upc.ALGORITHMS[coll]}
    return (src, dst, perm), fns, lambda: comm.Alltoallv([s, (sc, [0] * P)], [r, (rc, [0] * P)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("colls", nargs="*", default=["broadcast", "scatter", "gather", "gather_all", "exchange",
                                                  "permute"])
    ap.add_argument("--flags", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="4,4096,65536,1048576")
    args = ap.parse_args()
    for coll in args.colls:
        for n in [int(x) for x in args.sizes.split(",")]:
            if n * P * (P if coll in ("gather_all", "exchange") else 1) > (256 << 20):
                continue
            arrays, fns, equivalent = setup(coll, n, args.flags)
            iters = 100 if n <= 65536 else 10
            best = {name: float("inf") for name in fns}
            best["comm"] = float("inf")
            for _ in range(args.rounds):                  # interleaved: the same conditions for all
                for name, fn in list(fns.items()) + [("comm", equivalent)]:
                    best[name] = min(best[name], timed(fn, iters))
            for a in arrays:
                a.free()
            if ME == 0:
                base = best.pop("comm")
                cells = "  ".join("%s %.1f (%.2f)" % (k, v * 1e6, v / base) for k, v in best.items())
                print("%-10s %8d B  comm %.1f us | %s" % (coll, n, base * 1e6, cells), flush=True)


main()
