"""Shared driver of the application benchmarks (asp.py, cg.py, train.py).

Each application runs the same problem once per implementation in one MPI
job: with MPI.COMM_WORLD ("mpi") and with pgascol.Comm(MPI.COMM_WORLD)
("pgascol"), and with any further implementation the application names in
IMPLS (e.g. cg.py's "sparse": its own code on pgascol.Comm, which run()
tells apart by comm.impl). The application code sees a TimedComm, which adds the wall time
of every collective call to a per-operation total, so the report separates
time spent in collectives from the rest. An application supplies:

    NAME                      e.g. "cg"
    IMPLS                     optional: its implementations (default ("mpi", "pgascol"));
                              every one but "mpi" runs on pgascol.Comm
    add_arguments(parser)     its own options
    describe(args)            one line naming the problem, for the report
    setup(args, world)        the inputs, built once and shared by both runs
    run(problem, comm)        the timed part, on a TimedComm (call comm.start() after
                              any untimed warm-up); returns the answer (a dict)
    verify(problem, answer, world) -> (ok, summary)   collective

and calls ``main(sys.modules[__name__])``. Rank 0 prints one line per
implementation (total time, time in collectives, answer, PASSED/FAILED) and
writes them with --json FILE (schema "pgascol-apps/1"). The exit status is 1
on every rank when a verification failed.

Times: "total" is the slowest rank's wall time of run(); "coll avg" and
"coll max" are the mean and the maximum over ranks of the time spent inside
collectives (which includes waiting for late ranks).
"""
import argparse
import datetime
import json
import os
import platform
import socket
import sys
import time
import traceback
from collections import defaultdict

# One BLAS thread per rank, as usual for MPI programs (ranks already fill
# the cores; extra threads would oversubscribe them). Set before numpy is
# imported, which is why the applications import this module first; an
# explicit setting in the environment wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

SCHEMA = "pgascol-apps/1"
IMPLS = ("mpi", "pgascol")
COLLECTIVES = ("Barrier", "Bcast", "Reduce", "Allreduce", "Gather", "Gatherv", "Scatter",
               "Scatterv", "Allgather", "Allgatherv", "Alltoall", "Alltoallv",
               "Reduce_scatter_block", "Reduce_scatter", "Scan", "Exscan")


class TimedComm:
    """A communicator whose collectives are timed.

    The buffer collectives (Bcast, Allreduce, ...) call the wrapped
    communicator and add their wall time to ``seconds[name]`` (and 1 to
    ``calls[name]``); any other attribute (rank, size, ...) is the wrapped
    communicator's. start() (re)starts the clock of the timed section and
    zeroes the totals, so an application may do untimed warm-up first."""

    def __init__(self, comm, impl):
        self.comm = comm
        self.impl = impl
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.start()

    def start(self):
        """Synchronise the ranks, zero the totals and start the clock."""
        self.comm.Barrier()
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self.elapsed = None
        self._t0 = time.perf_counter()

    def stop(self):
        """Stop the clock (the first call after start() counts: run() may
        stop it before its own clean-up); returns the seconds since start()."""
        if self.elapsed is None:
            self.elapsed = time.perf_counter() - self._t0
        return self.elapsed

    def collective_seconds(self):
        return sum(self.seconds.values())

    def __getattr__(self, name):
        return getattr(self.comm, name)


def _timed_collective(name):
    def collective(self, *args, **kwargs):
        start = time.perf_counter()
        result = getattr(self.comm, name)(*args, **kwargs)
        self.seconds[name] += time.perf_counter() - start
        self.calls[name] += 1
        return result
    collective.__name__ = collective.__qualname__ = name
    collective.__doc__ = "%s on the wrapped communicator, timed." % name
    return collective


for _name in COLLECTIVES:
    setattr(TimedComm, _name, _timed_collective(_name))


def block_range(n, parts, index):
    """[lo, hi) of block `index` when n items are split into `parts`
    contiguous blocks whose sizes differ by at most one (the first n % parts
    blocks are one larger)."""
    base, extra = divmod(n, parts)
    lo = index * base + min(index, extra)
    return lo, lo + base + (1 if index < extra else 0)


def block_counts(n, parts):
    """(counts, displacements) of the blocks of block_range, as lists."""
    bounds = [block_range(n, parts, i) for i in range(parts)]
    return [hi - lo for lo, hi in bounds], [lo for lo, _ in bounds]


def impls_of(app):
    return getattr(app, "IMPLS", IMPLS)


def parse_args(app, argv=None):
    parser = argparse.ArgumentParser(
        prog="mpiexec -n N python bench/apps/%s.py" % app.NAME,
        description=(app.__doc__ or "").strip().splitlines()[0])
    parser.add_argument("--impl", choices=(*impls_of(app), "both", "all"), default="all",
                        help="implementation(s) to run, same inputs; both: MPI.COMM_WORLD, then "
                             "pgascol.Comm(MPI.COMM_WORLD); all (default): %s"
                             % ", ".join(impls_of(app)))
    parser.add_argument("--json", metavar="FILE", help="write the results here (rank 0)")
    app.add_arguments(parser)
    return parser.parse_args(argv)


def _run_one(app, problem, world, impl):
    """One timed run of the application on one implementation; returns the
    result record on rank 0, None on the other ranks."""
    if impl != "mpi":
        import pgascol
        comm = pgascol.Comm(world)
    else:
        comm = world
    try:
        tcomm = TimedComm(comm, impl)
        answer = app.run(problem, tcomm)
        tcomm.stop()
        paths = pgascol.stats(comm) if impl != "mpi" else None
    finally:
        if impl != "mpi":
            comm.Free()
    ok, summary = app.verify(problem, answer, world)
    ok = world.allreduce(bool(ok), op=_mpi().LAND)     # FAILED anywhere is FAILED
    per_rank = world.gather((tcomm.elapsed, dict(tcomm.seconds), dict(tcomm.calls)), root=0)
    if world.Get_rank() != 0:
        return None
    coll = [sum(seconds.values()) for _, seconds, _ in per_rank]
    ops = sorted({op for _, seconds, _ in per_rank for op in seconds})
    return {
        "impl": impl,
        "total_s": max(elapsed for elapsed, _, _ in per_rank),
        "collective_avg_s": sum(coll) / len(coll),
        "collective_max_s": max(coll),
        "collectives": {op: {"calls": per_rank[0][2].get(op, 0),
                             "avg_s": sum(s.get(op, 0.0) for _, s, _ in per_rank) / len(per_rank),
                             "max_s": max(s.get(op, 0.0) for _, s, _ in per_rank)}
                        for op in ops},
        "pgascol_paths": paths,
        "verified": ok,
        "answer": summary,
    }


def _mpi():
    from mpi4py import MPI
    return MPI


def _format_answer(summary):
    return " ".join("%s=%s" % (k, v) for k, v in summary.items() if not isinstance(v, (dict, list)))


def print_table(app, args, results, np_):
    print("%s (%s), np=%d" % (app.NAME, app.describe(args), np_))
    print("%-8s %10s %12s %12s %8s  %-12s %s" % ("impl", "total s", "coll avg s", "coll max s",
                                                  "calls", "verification", "answer"))
    for r in results:
        calls = sum(c["calls"] for c in r["collectives"].values())
        print("%-8s %10.4f %12.4f %12.4f %8d  %-12s %s" % (
            r["impl"], r["total_s"], r["collective_avg_s"], r["collective_max_s"], calls,
            "PASSED" if r["verified"] else "FAILED", _format_answer(r["answer"])))
    sys.stdout.flush()


def _meta(args, np_):
    MPI = _mpi()
    try:
        import pgascol
        version = pgascol.__version__
    except Exception:       # the mpi-only run needs no pgascol
        version = None
    return {"host": socket.gethostname(), "os": platform.platform(),
            "python": platform.python_version(), "mpi_library": MPI.Get_library_version().strip(),
            "pgascol": version, "np": np_, "command": " ".join(sys.argv),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "params": {k: v for k, v in vars(args).items() if k not in ("json", "impl")}}


def main(app, argv=None):
    """Parse the options, run the application with each implementation,
    report, and exit (status 1 on every rank if a verification failed).
    An exception on any rank aborts the whole job instead of leaving the
    other ranks waiting in a collective."""
    MPI = _mpi()
    world = MPI.COMM_WORLD
    try:
        args = parse_args(app, argv)
        impls = {"both": IMPLS, "all": impls_of(app)}.get(args.impl, (args.impl,))
        problem = app.setup(args, world)
        results = [_run_one(app, problem, world, impl) for impl in impls]
        if world.Get_rank() == 0:
            print_table(app, args, results, world.Get_size())
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"schema": SCHEMA, "app": app.NAME,
                               "meta": _meta(args, world.Get_size()), "results": results},
                              f, indent=1)
        passed = world.bcast(all(r["verified"] for r in results) if world.Get_rank() == 0 else None)
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        world.Abort(2)
    sys.exit(0 if passed else 1)
