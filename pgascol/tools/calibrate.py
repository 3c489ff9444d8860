"""Calibration: where single copy beats copy-in/copy-out on this machine.

    mpiexec -n 2 python -m pgascol calibrate [--output FILE]

For each collective that can use single copy, times it with a team forced to
copy-in/copy-out and with a team forced to single copy, at sizes from 4 KiB to
16 MiB (best of several rounds, slowest rank), and records the smallest size
from which single copy wins at every larger size measured (or "never"). The
result is stored as JSON (default: ~/.cache/pgascol/calibration-<host>.json,
or PGASCOL_CALIBRATION), read by every later job on this machine; PGASCOL_CMA_MIN_*
variables still override it."""
import json
import os
import socket
import time

import numpy as np

from ..engine import _core
from ..node.calibration import default_path

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]
CALIBRATED = ("Bcast", "Gather", "Scatter", "Allgather", "Alltoall")


def _call(team, op, nbytes):
    P = team.size
    a = np.ones(nbytes, np.uint8)
    b = np.zeros(nbytes * P, np.uint8)
    counts = [nbytes] * P
    if op == "Bcast":
        return lambda: team.bcast(a, nbytes, 0)
    if op == "Gather":
        return lambda: team.gather(a, nbytes, b, counts, None, 0)
    if op == "Scatter":
        return lambda: team.scatter(b, counts, None, a, nbytes, 0)
    if op == "Allgather":
        return lambda: team.allgather(a, nbytes, b, counts, None)
    per = max(nbytes // P, 1)
    s, r = np.ones(per * P, np.uint8), np.zeros(per * P, np.uint8)
    return lambda: team.alltoall(s, [per] * P, None, r, [per] * P, None)


def _best(comm, fn, nbytes, rounds=5):
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


def run(comm, output=None, log=print):
    from mpi4py import MPI

    from ..node.team import NodeTeam
    names = [n for n in _core.COLLECTIVES if n.rstrip("v") in CALIBRATED]
    env_cico = {k: v for k, v in os.environ.items() if not k.startswith("PGASCOL_CMA_MIN_")}
    env_cma = dict(env_cico, **{"PGASCOL_CMA_MIN_" + n.upper(): "0" for n in names})
    env_cico.update({"PGASCOL_CMA_MIN_" + n.upper(): "never" for n in names})
    cico, cma = NodeTeam(comm, env_cico), NodeTeam(comm, env_cma)
    me = comm.Get_rank()
    result, table = {}, []
    try:
        # agreed by every rank (nodes may differ: virtual nodes of uneven
        # size), or the ones that can measure would wait for the others
        usable = cico.local_size >= 2 and cma.cma_ok
        if not comm.allreduce(usable, op=MPI.LAND):
            raise SystemExit("calibration needs >= 2 ranks on every node with single copy available (%s)"
                             % ("a node of 1 rank" if usable else cma.cma_reason or "a node of 1 rank"))
        for op in CALIBRATED:
            wins = []
            for n in SIZES:
                t_cico = _best(comm, _call(cico.core, op, n), n)
                t_cma = _best(comm, _call(cma.core, op, n), n)
                wins.append(t_cma < t_cico)
                table.append((op, n, t_cico * 1e6, t_cma * 1e6))
                if me == 0:
                    log("%-10s %9d B  cico %10.1f us  cma %10.1f us" % (op, n, t_cico * 1e6, t_cma * 1e6))
            # smallest size from which single copy wins at every larger size
            threshold = None
            for i in range(len(SIZES) - 1, -1, -1):
                if not wins[i]:
                    break
                threshold = SIZES[i]
            for name in names:
                if name.rstrip("v") == op:
                    result[name] = threshold
    finally:
        cico.free()
        cma.free()
    path = output or default_path()
    if me == 0:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"host": socket.gethostname(), "np": comm.Get_size(), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
                       "cma_min": result, "measurements_us": table}, f, indent=1)
        log("calibration written to %s: %s" % (path, result))
    return result


# ---------------------------------------------------------------------------
# pgascol.upc: the default algorithm per collective, team shape and size
# ---------------------------------------------------------------------------

#: The data-movement collectives whose default is measured (the reductions'
#: crossovers go in the same file, under their own names: upc/defaults.py).
UPC_CALIBRATED = ("broadcast", "scatter", "gather", "gather_all", "exchange", "reduce", "prefix_reduce")
UPC_SIZES = [4, 256, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]


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
    pcomm = comm if isinstance(comm, pgascol.Comm) else pgascol.Comm(comm)
    nnodes = pgas.context.of(pcomm).nnodes
    sized = defaults.shape_of(nnodes, pcomm.size)[1]
    rules, table = {}, []
    try:
        for coll in colls:
            names = _upc_names(upc, coll, nnodes)
            measured = []
            for n in sizes:
                made, call = _upc_case(upc, pgas, pcomm, coll, n)
                try:
                    times = {a: _best(pcomm, call(a), n * pcomm.size) for a in names}
                finally:
                    for a in made:
                        a.free()
                measured.append((n, times))
                table.append((coll, n, {a: t * 1e6 for a, t in times.items()}))
                if pcomm.rank == 0:
                    log("upc %-10s %9d B  %s" % (coll, n, "  ".join(
                        "%s %.1f us" % (a, t * 1e6) for a, t in sorted(times.items(), key=lambda kv: kv[1]))))
            rules[coll] = {sized: defaults.compress(defaults.winners(measured))}
    finally:
        if pcomm is not comm:
            pcomm.Free()
    where = None
    if comm.Get_rank() == 0:
        where = defaults.save(rules, output, host=socket.gethostname(), np=comm.Get_size(), nodes=nnodes,
                              date=time.strftime("%Y-%m-%d %H:%M:%S"), measurements_us=table)
        log("upc defaults written to %s: %s" % (where, rules))
    return rules
