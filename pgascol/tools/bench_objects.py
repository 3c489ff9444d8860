"""pgascol-bench objects: pgascol.Comm's pickle-based methods (bcast, reduce,
allreduce, gather, scatter, allgather, alltoall, barrier) against mpi4py's
own on a duplicate of the same communicator, side by side in one MPI job.

    pgascol-bench objects [--np N] [--methods bcast,allgather,...]
                          [--objects int,tuple,dict,1K,64K,1M,16M]
                          [--rounds R] [--virtual-node-size K] [--json FILE] [--quick]

Objects: a Python int, a 3-tuple, a dict of five entries, and float64 numpy
arrays of the given bytes (scatter and alltoall send a list of one per rank).
Per case the rounds alternate mpi4py, pgascol, pgascol, mpi4py, ... with the
same calls per round on both sides (chosen from a warm-up of the slower one
for about --target-ms per round); a round's time is the slowest rank's, per
call. --json writes the pgascol-bench/1 schema (op "obj.METHOD", bytes = the
object's pickle, impl "pgascol" | "mpi4py", object = its kind, every
round's time in samples_us), so `pgascol-bench compare` and `verdict` read it."""
import argparse
import json
import pickle
import sys
import time

from . import bench_background

METHODS = ("bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "barrier")
PYTHON_OBJECTS = ("int", "tuple", "dict")
OBJECTS = PYTHON_OBJECTS + ("1K", "64K", "1M", "16M")
QUICK_OBJECTS = ("int", "tuple", "dict", "1K", "64K", "1M")
IMPLS = ("mpi4py", "pgascol")


def make_object(kind, rank):
    """The object of a case on this rank (its values depend on the rank)."""
    import numpy as np
    if kind == "none":
        return None
    if kind == "int":
        return rank
    if kind == "tuple":
        return (rank, "x", 1.5)
    if kind == "dict":
        return {"step": rank, "loss": 0.5 * rank, "shape": (3, 4), "ok": True, "name": "r%d" % rank}
    from .bench_harness import parse_sizes
    (nbytes,) = parse_sizes(kind)
    return np.full(max(1, nbytes // 8), float(rank))


def method_call(method, kind, comm):
    """A function making one call of `method` on comm with this rank's object."""
    from mpi4py import MPI
    P, me = comm.Get_size(), comm.Get_rank()
    obj = make_object(kind, me)
    items = [obj] * P
    calls = {
        "bcast": lambda: comm.bcast(obj if me == 0 else None, root=0),
        "reduce": lambda: comm.reduce(obj, op=MPI.SUM, root=0),
        "allreduce": lambda: comm.allreduce(obj, op=MPI.SUM),
        "gather": lambda: comm.gather(obj, root=0),
        "scatter": lambda: comm.scatter(items if me == 0 else None, root=0),
        "allgather": lambda: comm.allgather(obj),
        "alltoall": lambda: comm.alltoall(items),
        "barrier": lambda: comm.barrier(),
    }
    return calls[method]


def cases(methods, objects):
    """(method, kind) pairs of a sweep: reductions on reducible objects only,
    barrier once (kind "none")."""
    for m in methods:
        if m == "barrier":
            yield m, "none"
            continue
        for kind in objects:
            if m in ("reduce", "allreduce") and kind in ("tuple", "dict"):   # MPI.SUM would concatenate them
                continue
            yield m, kind


def _round(comm, fn, iters):
    """One round of iters calls: the slowest rank's time per call."""
    from mpi4py import MPI
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    return comm.allreduce((time.perf_counter() - t) / iters, op=MPI.MAX)


def time_case(world, sides, method, kind, rounds, target_s):
    """Both sides' per-call times of one case: {impl: [seconds per round]}."""
    fns = {impl: method_call(method, kind, comm) for impl, comm in sides.items()}
    warm = max(_round(world, fns[impl], 3) for impl in IMPLS)
    iters = world.bcast(max(1, min(100000, int(target_s / max(warm, 1e-7)))), root=0)
    times = {impl: [] for impl in IMPLS}
    for r in range(rounds):
        order = IMPLS if r % 2 == 0 else IMPLS[::-1]      # mpi4py pgascol pgascol mpi4py ...
        for impl in order:
            times[impl].append(_round(world, fns[impl], iters))
    return times, iters


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="pgascol.tools.bench_objects worker")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--objects", default=",".join(OBJECTS))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--target-ms", type=float, default=10.0)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    from mpi4py import MPI

    import pgascol
    world = MPI.COMM_WORLD
    sides = {"mpi4py": world.Dup(), "pgascol": pgascol.Comm(world.Dup())}
    P, me = world.Get_size(), world.Get_rank()
    results = []
    for method, kind in cases(args.methods.split(","), args.objects.split(",")):
        times, iters = time_case(world, sides, method, kind, args.rounds, args.target_ms * 1e-3)
        nbytes = 0 if method == "barrier" else len(pickle.dumps(make_object(kind, 0), 5))
        for impl, ts in times.items():
            results.append({"op": "obj." + method, "bytes": nbytes, "np": P, "impl": impl, "object": kind,
                            "t_min_us": min(ts) * 1e6, "t_avg_us": sum(ts) / len(ts) * 1e6,
                            "t_max_us": max(ts) * 1e6, "path": None, "memcpy_us": None, "iters": iters,
                            "rounds": len(ts), "buffer_sets": 1, "store_us": None,
                            "samples_us": [t * 1e6 for t in ts]})
        if me == 0:
            print(_line(method, kind, times), flush=True)
    sides["pgascol"].Free()
    sides["mpi4py"].Free()
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "results": results, "mpi_library": MPI.Get_library_version().splitlines()[0]}, f)
    return 0


def _line(method, kind, times):
    theirs, ours = min(times["mpi4py"]) * 1e6, min(times["pgascol"]) * 1e6
    return "%-10s %-6s mpi4py %10.2f us  pgascol %10.2f us  x%.2f" % (method, kind, theirs, ours, ours / theirs)


def cmd_objects(args, argv):
    from .bench_harness import BenchError, parse_sizes, run_worker_job, write_results
    methods = args.methods or ",".join(METHODS)
    objects = args.objects or ",".join(QUICK_OBJECTS if args.quick else OBJECTS)
    for item in methods.split(","):
        if item not in METHODS:
            raise BenchError("--methods: unknown %r (choose from %s)" % (item, ",".join(METHODS)))
    for kind in objects.split(","):
        if kind not in PYTHON_OBJECTS:
            parse_sizes(kind)       # an array's bytes: raises BenchError if it is not one
    job, meta = run_worker_job(args, argv, "pgascol.tools.bench_objects",
                               ["--methods", methods, "--objects", objects, "--rounds",
                                str(args.rounds or (4 if args.quick else 6)),
                                "--target-ms", str(5.0 if args.quick else 10.0)])
    meta.update(rounds=args.rounds, via="objects")
    write_results(args.json, meta, job["results"])
    return 0


def add_parser(sub):
    p = sub.add_parser("objects", help="pgascol.Comm's pickle-based methods against mpi4py's own, side by side")
    p.add_argument("--np", type=int, help="ranks (default 2)")
    p.add_argument("--methods", help="comma-separated, from: %s (default: all)" % ",".join(METHODS))
    p.add_argument("--objects", help="comma-separated kinds int,tuple,dict and array bytes (default %s; "
                                     "--quick %s)" % (",".join(OBJECTS), ",".join(QUICK_OBJECTS)))
    p.add_argument("--rounds", type=int, help="rounds per side and case (default 6; --quick 4)")
    p.add_argument("--virtual-node-size", type=int, metavar="K")
    p.add_argument("--mpi-launcher", metavar="CMD")
    p.add_argument("--json", metavar="FILE")
    bench_background.add_arguments(p)
    p.add_argument("--quick", action="store_true", help="objects up to 1 MiB, shorter rounds")
    return p


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker_main(sys.argv[2:]))
    sys.exit("usage: pgascol-bench objects ... (this module's worker runs under mpiexec)")
