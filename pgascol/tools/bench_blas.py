"""pgascol-bench blas: pgascol.blas against numpy/SciPy in one process with
the same total number of BLAS threads, and dask.array (threaded scheduler,
as many workers) when it is installed, side by side in one MPI job.

    pgascol-bench blas [--np N] [--ops ddot,daxpy,dgemv,dgemm,dtrsm,dpotrf,dgetrf]
                       [--n OP=N,...] [--rounds R] [--threads K] [--nb NB]
                       [--virtual-node-size K] [--json FILE] [--quick]

Every rank runs ``python -m pgascol.tools.bench_blas worker``. Per case the
rounds alternate: pgascol on all ranks (one BLAS thread each, or --threads
K: the hybrid mode, one rank per node and its cores to BLAS), then numpy/
SciPy on rank 0 alone with np x K BLAS threads, then dask.array on rank 0
with np x K threads, while the other ranks wait in a barrier (asleep after
a few microseconds). A round's pgascol time is the slowest rank's.
--json writes the pgascol-bench/1 schema (op, bytes = the operands' bytes,
np, impl "pgascol" | "numpy" | "dask", t_min/avg/max_us; plus n and gflops),
so `pgascol-bench compare` reads it unchanged."""
import argparse
import json
import os
import sys
import time

from . import bench_background

OPS = ("ddot", "daxpy", "dgemv", "dgemm", "dtrsm", "dpotrf", "dgetrf")
SIZES = {"ddot": 1 << 26, "daxpy": 1 << 26, "dgemv": 8192, "dgemm": 4096, "dtrsm": 4096, "dpotrf": 4096,
         "dgetrf": 4096}
QUICK = {"ddot": 1 << 22, "daxpy": 1 << 22, "dgemv": 2048, "dgemm": 1024, "dtrsm": 1024, "dpotrf": 1024,
         "dgetrf": 1024}
FLOPS = {"ddot": lambda n: 2 * n, "daxpy": lambda n: 2 * n, "dgemv": lambda n: 2 * n * n,
         "dgemm": lambda n: 2 * n ** 3, "dtrsm": lambda n: n ** 3, "dpotrf": lambda n: n ** 3 / 3,
         "dgetrf": lambda n: 2 * n ** 3 / 3}


def _case(op, n, comm, nb):
    """(pgascol call, numpy call, dask call or None, operand bytes, free)."""
    import numpy as np
    import scipy.linalg as sl
    import scipy.linalg.blas as sb
    from .. import blas, pgas
    from ..blas import factor
    P, me = comm.Get_size(), comm.Get_rank()
    rng = np.random.default_rng(me)
    da = _dask()
    if op in ("ddot", "daxpy"):
        x, y = pgas.array(comm, n, block="*"), pgas.array(comm, n, block="*")
        x.local()[:] = rng.random(len(x.local()))
        y.local()[:] = rng.random(len(y.local()))
        X, Y = (np.random.default_rng(0).random(n), np.random.default_rng(1).random(n)) if me == 0 else (None, None)
        if op == "ddot":
            ours, theirs = (lambda: blas.dot(x, y)), (lambda: sb.ddot(X, Y))
            dk = (lambda dx=da.from_array(X, chunks=n // P), dy=da.from_array(Y, chunks=n // P):
                  da.dot(dx, dy).compute()) if da and me == 0 else None
        else:
            ours, theirs = (lambda: blas.axpy(x, y, a=0.5)), (lambda: sb.daxpy(X, Y, a=0.5))
            dk = (lambda dx=da.from_array(X, chunks=n // P), dy=da.from_array(Y, chunks=n // P):
                  (0.5 * dx + dy).compute()) if da and me == 0 else None
        return ours, theirs, dk, 2 * n * 8, (x, y)
    if op == "dgemv":
        a = pgas.matrix(comm, (n, n), block=-(-n // P), dist="row")
        x = pgas.array(comm, n, block="*")
        a.local()[:] = rng.random(a.local().shape)
        x.local()[:] = rng.random(len(x.local()))
        y = blas.gemv(1.0, a, x)
        A, X = (np.random.default_rng(0).random((n, n)), np.random.default_rng(1).random(n)) if me == 0 else (None, None)
        dk = (lambda dA=da.from_array(A, chunks=(-(-n // P), n)), dx=da.from_array(X, chunks=n):
              (dA @ dx).compute()) if da and me == 0 else None
        # A.T is Fortran-ordered: SciPy's BLAS reads it in place (A would be copied every call)
        return ((lambda: blas.gemv(1.0, a, x, 0.0, y)), (lambda: sb.dgemv(1.0, A.T, X, trans=1)), dk,
                (n * n + 2 * n) * 8, (a, x, y))
    square = n * n * 8
    mats = []

    def dist_matrix(fill=None, block=None):
        m = pgas.matrix(comm, (n, n), block=block or -(-n // P), dist="row")
        m.local()[:] = rng.random(m.local().shape) if fill is None else fill(m)
        mats.append(m)
        return m

    A = np.random.default_rng(0).random((n, n)) if me == 0 else None
    if op == "dgemm":
        a, b = dist_matrix(), dist_matrix()
        c = blas.gemm(1.0, a, b)
        mats.append(c)
        B = np.random.default_rng(1).random((n, n)) if me == 0 else None
        dk = (lambda dA=da.from_array(A, chunks=(-(-n // P), n)), dB=da.from_array(B, chunks=(n, -(-n // P))):
              (dA @ dB).compute()) if da and me == 0 else None
        return (lambda: blas.gemm(1.0, a, b, 0.0, c)), (lambda: A @ B), dk, 3 * square, mats
    if op == "dtrsm":
        def lower(m):
            rows = np.array([i for lo, hi in m.owned_rows() for i in range(lo, min(hi, n))], int)
            out = np.tril(rng.random((len(rows), n)) / n, 0)
            out[np.arange(len(rows)), rows] = 2.0
            return np.where(np.arange(n)[None, :] <= rows[:, None], out, 0)
        a, b = dist_matrix(lower, nb), dist_matrix(block=nb)
        L = np.tril(A) / n + 2 * np.eye(n) if me == 0 else None
        B = np.random.default_rng(1).random((n, n)) if me == 0 else None
        # L X = B as X^T L^T = B^T on the Fortran-ordered transposes: no copies
        Lt, Bt = (L.T, B.T) if me == 0 else (None, None)
        return ((lambda: blas.trsm(1.0, a, b, lower=1)),
                (lambda: sb.dtrsm(1.0, Lt, Bt, side=1, lower=0, overwrite_b=1)), None, 2 * square, mats)
    spd = (A @ A.T + n * np.eye(n)) if me == 0 else None
    if op == "dpotrf":
        a = dist_matrix(block=nb)
        ours = lambda: _refill(a, rng, n, True) or factor.cholesky(a)    # noqa: E731
        dk = (lambda dA=da.from_array(spd, chunks=nb * 4): da.linalg.cholesky(dA, lower=True).compute()) \
            if da and me == 0 else None
        return ours, (lambda: sl.cholesky(spd, lower=True, check_finite=False)), dk, square, mats
    a = dist_matrix(block=nb)
    ours = lambda: _refill(a, rng, n, False) or factor.lu(a)             # noqa: E731
    return ours, (lambda: sl.lu_factor(A, check_finite=False)), None, square, mats


def _refill(a, rng, n, spd):
    """A fresh well-conditioned matrix before each factorization (its
    own rows only: a row-local fill, not timed apart)."""
    import numpy as np
    rows = np.array([i for lo, hi in a.owned_rows() for i in range(lo, min(hi, n))], int)
    loc = a.local()
    loc[:] = 0.001
    if len(rows):
        loc[np.arange(len(rows)), rows] = n
    return None


def _dask():
    try:
        import dask.array as da
    except ImportError:
        return None
    return da


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="pgascol.tools.bench_blas worker")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--n", default="")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--nb", type=int, default=256)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    from mpi4py import MPI
    from threadpoolctl import threadpool_limits

    import pgascol
    from .. import blas
    comm = pgascol.Comm(MPI.COMM_WORLD)
    P, me = comm.Get_size(), comm.Get_rank()
    per_rank = blas.set_threads(os.environ.get("PGASCOL_BLAS_THREADS") or "1")
    total = comm.allreduce(per_rank)
    sizes = dict(QUICK if args.quick else SIZES)
    for item in filter(None, args.n.split(",")):
        op, _, n = item.partition("=")
        sizes[op] = int(n)
    results = []
    for op in args.ops.split(","):
        n = sizes[op]
        ours, theirs, dk, nbytes, objs = _case(op, n, comm, args.nb)
        times = {"pgascol": [], "numpy": [], "dask": []}
        for _ in range(args.rounds):
            comm.Barrier()
            t = time.perf_counter()
            ours()
            times["pgascol"].append(comm.allreduce(time.perf_counter() - t, op=MPI.MAX))
            for impl, call in (("numpy", theirs), ("dask", dk)):
                if comm.bcast(call is not None if me == 0 else None, root=0):
                    if me == 0:
                        with threadpool_limits(total, user_api="blas"):
                            if impl == "dask":
                                import dask
                                with dask.config.set(scheduler="threads", num_workers=total):
                                    t = time.perf_counter()
                                    call()
                            else:
                                t = time.perf_counter()
                                call()
                            times[impl].append(time.perf_counter() - t)
                    comm.Barrier()
        for o in objs:
            o.free()
        for impl, ts in times.items():
            if ts:
                best = min(ts)
                results.append({"op": op, "bytes": nbytes, "np": P, "impl": impl, "n": n,
                                "t_min_us": best * 1e6, "t_avg_us": sum(ts) / len(ts) * 1e6,
                                "t_max_us": max(ts) * 1e6, "path": None, "memcpy_us": None, "iters": 1,
                                "rounds": len(ts), "buffer_sets": 1, "store_us": None,
                                "gflops": FLOPS[op](n) / best / 1e9, "blas_threads": total,
                                "samples_us": [t * 1e6 for t in ts]})
        if me == 0:
            print(_line(op, n, results), flush=True)
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "results": results, "blas_threads_per_rank": per_rank,
                       "mpi_library": MPI.Get_library_version().splitlines()[0]}, f)
    return 0


def _line(op, n, results):
    mine = {r["impl"]: r for r in results if r["op"] == op}
    ours = mine["pgascol"]["t_min_us"]
    parts = ["%-7s n=%-9d pgascol %10.1f us (%6.1f GF/s)" % (op, n, ours, mine["pgascol"]["gflops"])]
    for impl in ("numpy", "dask"):
        if impl in mine:
            parts.append("%s %10.1f us (x%.2f)" % (impl, mine[impl]["t_min_us"], mine[impl]["t_min_us"] / ours))
    return "  ".join(parts)


def cmd_blas(args, argv):
    from .bench_harness import run_worker_job, write_results
    env = dict(os.environ)
    if args.threads:
        env["PGASCOL_BLAS_THREADS"] = str(args.threads)
    job, meta = run_worker_job(args, argv, "pgascol.tools.bench_blas",
                               ["--ops", args.ops or ",".join(OPS), "--rounds",
                                str(args.rounds or (3 if args.quick else 5)), "--nb", str(args.nb)]
                               + (["--n", args.n] if args.n else []) + (["--quick"] if args.quick else []), env)
    meta.update(rounds=args.rounds, via="blas", blas_threads_per_rank=job["blas_threads_per_rank"], nb=args.nb)
    write_results(args.json, meta, job["results"])
    return 0


def add_parser(sub):
    b = sub.add_parser("blas", help="pgascol.blas against numpy/SciPy and dask.array (same BLAS threads)")
    b.add_argument("--np", type=int, help="ranks (default 2)")
    b.add_argument("--ops", help="comma-separated, from: %s" % ",".join(OPS))
    b.add_argument("--n", help="sizes, e.g. dgemm=2048,ddot=1000000 (defaults: %s)"
                   % ",".join("%s=%d" % kv for kv in SIZES.items()))
    b.add_argument("--rounds", type=int, help="rounds per case (default 5; --quick 3)")
    b.add_argument("--threads", type=int, help="BLAS threads per rank (hybrid mode; default 1)")
    b.add_argument("--nb", type=int, default=256, help="block size of trsm and the factorizations (default 256)")
    b.add_argument("--virtual-node-size", type=int, metavar="K")
    b.add_argument("--mpi-launcher", metavar="CMD")
    b.add_argument("--json", metavar="FILE")
    bench_background.add_arguments(b)
    b.add_argument("--quick", action="store_true", help="small sizes (%s)" % ",".join("%s=%d" % kv for kv in QUICK.items()))
    return b


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker_main(sys.argv[2:]))
    sys.exit("usage: pgascol-bench blas ... (this module's worker runs under mpiexec)")
