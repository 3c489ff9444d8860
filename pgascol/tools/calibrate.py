"""Calibration: the path table of this machine, learned ahead of a job.

    mpiexec -n 2 python -m pgascol calibrate [--output FILE]

Runs every collective the tuner decides (pgascol/comm/tune.pxi: the
reductions too) at every size class from 16 KiB to 16 MiB on a pgascol.Comm
whose tuner measures each class from its first call, until every class is
decided: the same measurements, agreement and rule a job applies to its own
calls, made at once. The table (collective -> size class -> cico or cma) is
written to the calibration file (pgascol/node/calibration.py:
~/.cache/pgascol/calibration-<host>.json, or PGASCOL_CALIBRATION) under this
job's team shape, with this machine's fingerprint; later jobs of that shape
start from it. Run it once per shape that matters (np=2, the node's core
count, ...); a job of another shape learns its own. Across nodes (and where
the kernel refuses single copy) there is no choice to learn: it says so and
writes nothing."""
import os
import socket
import time

import numpy as np

from ..node import calibration

CLASSES = range(14, 25)             # 16 KiB ... 16 MiB (above the inline size)
MAX_BUFFER = 64 << 20               # bytes of one buffer at the most (the largest classes at many ranks)
MAX_CALLS = 2000                    # per class: a class still undecided then is left to the job


def _call(comm, name, nbytes):
    """call() making one `name` of a class-`nbytes` call on comm (the bytes
    the tuner counts: a vector, a rank's block, Alltoall's block per pair)."""
    from mpi4py import MPI
    P = comm.Get_size()
    n = max(nbytes // 8, 1)
    x, y = np.ones(n), np.zeros(n)
    if name == "Bcast":
        return lambda: comm.Bcast(x, 0)
    if name in ("Allreduce", "Scan", "Exscan"):
        return lambda: getattr(comm, name)(x, y, MPI.SUM)
    if name == "Reduce":
        return lambda: comm.Reduce(x, y, MPI.SUM, 0)
    big = np.zeros(n * P)
    if name == "Reduce_scatter_block":
        return lambda: comm.Reduce_scatter_block(big, x, MPI.SUM)
    if name == "Reduce_scatter":
        return lambda: comm.Reduce_scatter(big, x, [n] * P, MPI.SUM)
    if name == "Gather":
        return lambda: comm.Gather(x, big, 0)
    if name == "Scatter":
        return lambda: comm.Scatter(big, x, 0)
    if name == "Allgather":
        return lambda: comm.Allgather(x, big)
    if name == "Allgatherv":
        return lambda: comm.Allgatherv(x, [big, [n] * P])
    if name == "Gatherv":
        return lambda: comm.Gatherv(x, [big, [n] * P], 0)
    if name == "Scatterv":
        return lambda: comm.Scatterv([big, [n] * P], x, 0)
    out = np.zeros(n * P)
    if name == "Alltoall":
        return lambda: comm.Alltoall(big, out)
    if name == "Alltoallv":
        return lambda: comm.Alltoallv([big, [n] * P], [out, [n] * P])
    raise ValueError(name)


def run(comm, output=None, log=print, max_bytes=1 << 24):
    """Learn the table on comm (an mpi4py communicator, wrapped here), size
    classes from 16 KiB to max_bytes, and write it."""
    import pgascol
    from ..comm._comm import TUNED, tuner_of
    pgascol_comm = pgascol.Comm(comm)
    me, P = pgascol_comm.Get_rank(), pgascol_comm.Get_size()
    start = time.perf_counter()
    table = {}
    try:
        tuner = tuner_of(pgascol_comm)
        if P < 2 or not tuner.requested:
            raise SystemExit("calibration needs >= 2 ranks and PGASCOL_TUNE=1 (%d rank(s), PGASCOL_TUNE=%s)"
                             % (P, os.environ.get("PGASCOL_TUNE", "1")))
        if not tuner.enabled:
            if me == 0:
                log("nothing to calibrate: %s (no file written)" % (
                    "across nodes every call runs the hierarchy" if tuner.hier else
                    "single copy is not allowed here, so copy-in/copy-out runs every call"))
            return table
        tuner.measure_now = True
        tuner.saves = False
        for name in TUNED:
            for k in CLASSES:
                if (1 << k) * P > MAX_BUFFER or (1 << k) > max_bytes:
                    continue
                call, calls = _call(pgascol_comm, name, 1 << k), 0
                while calls < MAX_CALLS:
                    call()
                    calls += 1
                    path, source, measuring = tuner.state_of(name, 1 << k)
                    if path is not None and not measuring and source != "built in":
                        table.setdefault(name, {})[tuner.class_of(name, 1 << k)] = path
                        break
                if me == 0:
                    entry = [e for e in tuner.log if e[1] == name and e[2] == tuner.class_of(name, 1 << k)]
                    log("%-20s %8s  %-6s %s" % (name, _short(1 << k),
                                                table.get(name, {}).get(tuner.class_of(name, 1 << k), "-"),
                                                "  ".join("%s %.1f us" % kv for kv in sorted(
                                                    entry[-1][5].items(), key=lambda kv: kv[1])) if entry else
                                                "undecided after %d calls" % calls))
        shape = tuner.shape
    finally:
        pgascol_comm.Free()
    where = None
    if me == 0:
        where = calibration.save({shape: table}, "calibrate", output)
        log("calibration for %s (%s) written to %s in %.1f s" % (
            shape, socket.gethostname(), where or "nowhere (the cache directory is not writable)",
            time.perf_counter() - start))
    return table


def _short(n):
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return "%d%s" % (n // size, unit)
    return str(n)


# ---------------------------------------------------------------------------
# pgascol.upc: the default algorithm per collective, team shape and size
# ---------------------------------------------------------------------------

#: The data-movement collectives whose default is measured (the reductions'
#: crossovers go in the same file, under their own names: upc/defaults.py).
UPC_CALIBRATED = ("broadcast", "scatter", "gather", "gather_all", "exchange", "reduce", "prefix_reduce")
UPC_SIZES = [4, 256, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]


def _best(comm, fn, nbytes, rounds=5):
    """The slowest rank's best time per call of fn over `rounds` rounds."""
    from mpi4py import MPI
    iters = max(2, min(200, (32 << 20) // max(nbytes, 1)))
    fn()
    best = float("inf")
    for _ in range(rounds):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, comm.allreduce((time.perf_counter() - t0) / iters, op=MPI.MAX))
    return best


def _upc_case(upc, pgas, comm, coll, nbytes):
    """(the call's arrays, call(algorithm)) for one collective at one size,
    ALLSYNC; a reduction's size is each rank's run of doubles (blocked, as
    pgascol-bench upc measures it), reduced with ADD (to rank 0)."""
    P, B = comm.size, nbytes
    one, row = P * B, P * P * B
    made = []

    def ga(n, block, dtype=np.uint8):
        made.append(pgas.zeros(comm, n, dtype, block=block))
        return made[-1]
    if coll in ("reduce", "prefix_reduce"):
        nelems = P * max(nbytes // 8, 1)
        src = ga(nelems, "*", np.float64)
        dst = (ga(P, 1, np.float64), 0) if coll == "reduce" else ga(nelems, "*", np.float64)
        fn = getattr(upc, "all_" + coll)
        return made, (lambda alg: lambda: fn(dst, src, upc.ADD, nelems, "*", algorithm=alg))
    args = {"broadcast": lambda: (ga(one, B), ga(B, 0)),
            "scatter": lambda: (ga(one, B), ga(row, 0)),
            "gather": lambda: (ga(row, 0), ga(one, B)),
            "gather_all": lambda: (ga(row, P * B), ga(one, B)),
            "exchange": lambda: (ga(row, P * B), ga(row, P * B))}[coll]()
    fn = getattr(upc, "all_" + coll)
    return made, (lambda alg: lambda: fn(args[0], args[1], nbytes, algorithm=alg))


def _upc_names(upc, coll, nnodes):
    """The algorithms of a collective calibration compares on this team
    shape: the data movement's (one node: all but the hier* ones; several:
    the hier* ones); a reduction's but 'auto' (what 'auto' then runs with a
    built-in operator), those that run across nodes where the team spans several."""
    from ..upc import plan
    if coll not in plan.REDUCTION_ACROSS:
        return [a for a in upc.ALGORITHMS[coll] if a.startswith("hier") == (nnodes > 1)]
    return [a for a in upc.ALGORITHMS[coll] if a != "auto" and (nnodes == 1 or a in plan.REDUCTION_ACROSS[coll])]


def run_upc(comm, output=None, log=print, sizes=UPC_SIZES, colls=UPC_CALIBRATED):
    """Time every algorithm of each UPC collective this team can run
    (_upc_names), at each size, ALLSYNC (the slowest rank, best of rounds); keep the fastest
    per size (a tie, within defaults.TIE, keeps the smaller size's winner)
    as rules (upc/defaults.py) for this team's shape and number of ranks,
    and write them.
    `comm` is a pgascol.Comm or an mpi4py communicator (wrapped)."""
    import pgascol

    from .. import pgas, upc
    from ..upc import defaults
    pgascol_comm = comm if isinstance(comm, pgascol.Comm) else pgascol.Comm(comm)
    nnodes = pgas.context.of(pgascol_comm).nnodes
    sized = defaults.shape_of(nnodes, pgascol_comm.size)[1]
    rules, table = {}, []
    try:
        for coll in colls:
            names = _upc_names(upc, coll, nnodes)
            measured = []
            for n in sizes:
                made, call = _upc_case(upc, pgas, pgascol_comm, coll, n)
                try:
                    times = {a: _best(pgascol_comm, call(a), n * pgascol_comm.size) for a in names}
                finally:
                    for a in made:
                        a.free()
                measured.append((n, times))
                table.append((coll, n, {a: t * 1e6 for a, t in times.items()}))
                if pgascol_comm.rank == 0:
                    log("upc %-10s %9d B  %s" % (coll, n, "  ".join(
                        "%s %.1f us" % (a, t * 1e6) for a, t in sorted(times.items(), key=lambda kv: kv[1]))))
            rules[coll] = {sized: defaults.compress(defaults.winners(measured))}
    finally:
        if pgascol_comm is not comm:
            pgascol_comm.Free()
    where = None
    if comm.Get_rank() == 0:
        where = defaults.save(rules, output, host=socket.gethostname(), np=comm.Get_size(), nodes=nnodes,
                              date=time.strftime("%Y-%m-%d %H:%M:%S"), measurements_us=table)
        log("upc defaults written to %s: %s" % (where, rules))
    return rules
