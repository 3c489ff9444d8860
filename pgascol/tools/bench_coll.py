"""`pgascol-bench run`: pgascol against native MPI collectives, side by side in one job.

    pgascol-bench run [--np N] [--ops bcast,allreduce,...] [--sizes 8,1K,1M | 8:64M]
                      [--rounds R] [--iters N] [--off-cache] [--buffers shared] [--virtual-node-size K]
                      [--mpi-launcher CMD] [--json FILE] [--plot FILE.png | DIR/] [--quick]

`run` (cmd_run) starts the MPI job itself; every rank runs worker_main
(``python -m pgascol.tools.bench worker ...``, the hidden `worker` subcommand
of bench.py, also what bench/engine_vs_mpi.py calls under your own
``mpiexec``). For each operation and size, rounds alternate pgascol and the
native collective on the same buffers (--via comm: the same mpi4py calls made
on a pgascol.Comm; --via team: the node team's C engine called directly), so
machine noise hits both alike. A round times `iters` calls (--iters N; by
default chosen per case so that a round lasts about 20 ms, 10 ms with
--quick); the time of a round is the slowest rank's mean per call (IMB's
t_max). Over the rounds we keep min/avg/max of that time per side; the table
shows the best round (min), the ratio pgascol/MPI and the memory floor: one
memcpy of the payload (numpy copyto, pre-faulted) timed in the same run.

--off-cache: each side rotates, call after call, through distinct buffer sets
that together cover twice the last-level cache (read from sysfs, else 32 MiB;
at most MAX_BUFFER_SETS sets, so the smallest sizes cover less), so a call
finds its data cold, as IMB's -off_cache does; the memcpy floor rotates the
same way. --plot writes one PNG per operation, time against size (log-log)
for pgascol, native MPI and the memcpy floor (needs matplotlib: the "plot"
extra): --plot out.png writes out-bcast.png, out-allreduce.png, ...; --plot
DIR/ (or an existing directory) writes DIR/bcast.png, ... `pgascol-bench
plot` draws the same figures from a JSON written earlier (plot_results).

--buffers shared adds a third side: pgascol on buffers in node shared memory
(pgascol.empty), which the engine reads in place (one user-space copy), and
each result row carries the floor of its operation: floor_bytes, the bytes a
rank must write at least (the payload; P x the payload for Allgather(v)),
and floor_us, one memcpy of them timed in the same run.

The JSON written by --json (schema "pgascol-bench/1") is documented in
docs/PERFORMANCE.md, as is the regression rule of `compare`. The options of
`run` are declared with the command line (bench.py); the timing, launching,
JSON and plotting helpers every benchmark shares are in bench_harness.py.
"""
import argparse
import itertools
import json
import math
import os
import sys
from types import SimpleNamespace

from .bench_harness import (CACHE_LINE, OFF_CACHE_FACTOR, SCHEMA, BenchError, _matplotlib, cache_text,
                            describe_run, fresh_text, human, iters_text, launch, llc_size, memcpy_calls,
                            memcpy_floor, parse_sizes, plot_destination, report, stats_row, time_calls)

OPS = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
       "reduce_scatter_block", "scan", "exscan", "gatherv", "scatterv", "allgatherv", "alltoallv")
DEFAULT_SIZES = "8,1K,64K,1M,16M"
QUICK_SIZES = "8,1K,64K,1M"
DEFAULT_ROUNDS = 5
QUICK_ROUNDS = 5
DEFAULT_TARGET_MS = 20.0     # wall time of one round of one side (iters chosen for it)
QUICK_TARGET_MS = 10.0
MAX_ITERS = 10000            # cap on iters chosen from the time target (not on --iters)
MAX_BUFFER_SETS = 4096       # --off-cache: at most this many buffer sets (the smallest sizes cover less)


def parse_ops(spec, allowed=OPS):
    """--ops: names out of `allowed`, in order, once each."""
    ops = [o.strip().lower() for o in spec.split(",") if o.strip()]
    if not ops:
        raise BenchError("--ops is empty; choose from: %s" % ",".join(allowed))
    bad = [o for o in ops if o not in allowed]
    if bad:
        raise BenchError("unknown op(s) %s; choose from: %s" % (",".join(bad), ",".join(allowed)))
    return list(dict.fromkeys(ops))


# ---------------------------------------------------------------------------
# Rank side: the cases
# ---------------------------------------------------------------------------

def fresh_input(buffers):
    """A function that stores one byte into every cache line of `buffers`
    (numpy arrays): what producing a call's input leaves in the caches, the
    lines modified in this rank's cache, whatever read them before."""
    import numpy as np
    lines = [np.frombuffer(b, dtype=np.uint8)[::CACHE_LINE] for b in buffers]

    def store():
        for v in lines:
            v.fill(1)   # the lowest byte of a float64 1.0: 1.0000000000000002
    return store


def _sides(ours, theirs, inputs, fresh):
    """The case's two closures; with fresh, each first stores into the
    inputs (fresh_input) and carries that store as `.store`."""
    if not fresh:
        return ours, theirs
    store = fresh_input(inputs)
    out = []
    for call in (ours, theirs):
        def fresh_call(call=call):
            store()
            call()
        fresh_call.store = store
        out.append(fresh_call)
    return tuple(out)


def shared_alloc(team, pgascol_comm=None):
    """An allocator for make_case whose arrays live in node shared memory
    (pgascol.empty: on pgascol_comm's node team, else on `team`), and the list
    of what it allocated, for pgascol.free."""
    import numpy as np
    from ..comm import buffers
    made = []

    def alloc(n, fill):
        a = (buffers.empty(pgascol_comm, n, np.float64) if pgascol_comm is not None
             else buffers.node_empty(team, (n,), np.dtype(np.float64)))
        a.fill(fill)
        made.append(a)
        return a
    return alloc, made


def _private(n, fill):
    import numpy as np
    return np.full(n, float(fill))


def make_case(op, nbytes, comm, team, pgascol_comm=None, fresh=False, alloc=_private):
    """Return (pgascol_call, mpi_call) closures for one op and payload size
    (bytes per rank's contribution, as IMB/OSU count them; Alltoall(v): the
    total a rank sends). With pgascol_comm, the pgascol side makes the native calls
    on that pgascol.Comm; otherwise it calls the team's engine directly.
    fresh: every call first stores into the data this rank contributes (its
    send buffer; a Bcast's or a Scatter's at the root only), as a program
    that computes its input before each call does (_sides). alloc(n, fill):
    the float64 arrays of the case (shared_alloc: in node shared memory)."""
    from mpi4py import MPI
    from ..engine import _core

    if pgascol_comm is not None:
        return (make_case(op, nbytes, pgascol_comm, team, fresh=fresh, alloc=alloc)[1],
                make_case(op, nbytes, comm, team, fresh=fresh)[1])
    F64, SUM = _core.DTYPES["float64"], _core.OPS["SUM"]
    P, me = comm.Get_size(), comm.Get_rank()
    n = max(nbytes // 8, 1)
    t = team.core
    if op == "barrier":
        return t.barrier, comm.Barrier
    if op == "bcast":
        buf = alloc(n, 1)
        return _sides(lambda: t.bcast(buf, buf.nbytes, 0), lambda: comm.Bcast(buf, 0),
                      [buf] if me == 0 else [], fresh)
    if op == "reduce_scatter_block":
        big, y = alloc(n * P, 1), alloc(n, 0)
        return _sides(lambda: t.reduce_scatter(big, y, [n] * P, F64, SUM, block=True),
                      lambda: comm.Reduce_scatter_block(big, y, MPI.SUM), [big], fresh)
    if op in ("allreduce", "reduce", "scan", "exscan"):
        x, y = alloc(n, 1), alloc(n, 0)
        if op == "allreduce":
            pair = (lambda: t.allreduce(x, y, n, F64, SUM)), (lambda: comm.Allreduce(x, y, MPI.SUM))
        elif op == "reduce":
            pair = (lambda: t.reduce(x, y, n, F64, SUM, 0)), (lambda: comm.Reduce(x, y, MPI.SUM, 0))
        elif op == "scan":
            pair = (lambda: t.scan(x, y, n, F64, SUM)), (lambda: comm.Scan(x, y, MPI.SUM))
        else:
            pair = (lambda: t.exscan(x, y, n, F64, SUM)), (lambda: comm.Exscan(x, y, MPI.SUM))
        return _sides(*pair, [x], fresh)
    if op in ("alltoall", "alltoallv"):
        per = max(nbytes // P // 8, 1)
        s2, r2 = alloc(per * P, 1), alloc(per * P, 0)
        c2 = [per * 8] * P
        d2 = [i * per * 8 for i in range(P)]
        if op == "alltoall":
            return _sides(lambda: t.alltoall(s2, c2, None, r2, c2, None),
                          lambda: comm.Alltoall(s2, r2), [s2], fresh)
        ec, ed = [per] * P, [i * per for i in range(P)]
        vs, vr = [s2, ec, ed, MPI.DOUBLE], [r2, ec, ed, MPI.DOUBLE]
        return _sides(lambda: t.alltoall(s2, c2, d2, r2, c2, d2, v=True),
                      lambda: comm.Alltoallv(vs, vr), [s2], fresh)
    b = n * 8
    small = alloc(n, 1)
    big = alloc(n * P, 0)
    counts = [b] * P                         # bytes, for the engine
    displs = [i * b for i in range(P)]
    ecounts = [n] * P                        # elements, for MPI (v-variants: equal counts)
    edispls = [i * n for i in range(P)]
    vbig = [big, ecounts, edispls, MPI.DOUBLE]
    inputs = [small]                         # what this rank contributes
    if op == "allgather":
        pair = (lambda: t.allgather(small, b, big, counts, None)), (lambda: comm.Allgather(small, big))
    elif op == "allgatherv":
        pair = ((lambda: t.allgather(small, b, big, counts, displs, v=True)),
                (lambda: comm.Allgatherv(small, vbig)))
    elif op == "gather":
        pair = (lambda: t.gather(small, b, big, counts, None, 0)), (lambda: comm.Gather(small, big, 0))
    elif op == "gatherv":
        pair = ((lambda: t.gather(small, b, big, counts, displs, 0, v=True)),
                (lambda: comm.Gatherv(small, vbig, 0)))
    elif op == "scatter":
        pair = (lambda: t.scatter(big, counts, None, small, b, 0)), (lambda: comm.Scatter(big, small, 0))
        inputs = [big] if me == 0 else []
    elif op == "scatterv":
        pair = ((lambda: t.scatter(big, counts, displs, small, b, 0, v=True)),
                (lambda: comm.Scatterv(vbig, small, 0)))
        inputs = [big] if me == 0 else []
    else:
        raise BenchError("unknown op %r" % op)
    return _sides(*pair, inputs, fresh)


def case_bytes(op, nbytes, P):
    """Bytes one side of make_case(op, nbytes) touches per call on a rank
    (its buffer set; keep in step with make_case)."""
    n = max(nbytes // 8, 1) * 8
    if op == "barrier":
        return 0
    if op == "bcast":
        return n
    if op == "reduce_scatter_block":
        return n * P + n
    if op in ("allreduce", "reduce", "scan", "exscan"):
        return 2 * n
    if op in ("alltoall", "alltoallv"):
        return 2 * max(nbytes // P // 8, 1) * 8 * P
    return n + n * P                         # (all)gather(v), scatter(v)


def floor_bytes(op, nbytes, P):
    """The bytes a rank must write at least in one call of make_case(op,
    nbytes): its blocks from every rank (P x the payload) in Allgather(v),
    the payload otherwise (an Alltoall's blocks, a Gather sender's block
    into the root's buffer)."""
    return nbytes * P if op in ("allgather", "allgatherv") else nbytes


def buffer_sets(footprint, llc):
    """How many buffer sets of `footprint` bytes an --off-cache case rotates
    through: enough to cover OFF_CACHE_FACTOR x llc, at most MAX_BUFFER_SETS."""
    if footprint <= 0:
        return 1
    return max(1, min(MAX_BUFFER_SETS, -(-OFF_CACHE_FACTOR * llc // footprint)))


def tuned_state(pgascol_comm, op, nbytes, P):
    """What the tuner held for this case's size class at the end of the case
    (pgascol.tuning): {"path", "source"}; None where it does not tune it
    (--via team, the v forms with per-rank counts, sizes up to the inline
    size)."""
    if pgascol_comm is None:
        return None
    import pgascol
    from ..comm._comm import tuner_of
    name = {"reduce_scatter_block": "Reduce_scatter_block"}.get(op, op.capitalize())
    per = nbytes // P if op in ("alltoall", "alltoallv") else nbytes
    entry = pgascol.tuning(pgascol_comm).get(name, {}).get(tuner_of(pgascol_comm).class_of(name, max(per, 1)))
    return None if entry is None else {"path": entry["path"], "source": entry["source"]}


# ---------------------------------------------------------------------------
# Rank side: the worker
# ---------------------------------------------------------------------------

def _worker_args(argv):
    """The worker's command line, checked: (args, ops, sizes); a bad value
    is argparse's usage error."""
    ap = argparse.ArgumentParser(prog="python -m pgascol.tools.bench worker",
                                 description="pgascol vs native MPI, one MPI job (run under mpiexec)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--sizes", default=DEFAULT_SIZES)
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--iters", type=int, help="calls per round (default: from --target-ms)")
    ap.add_argument("--via", choices=("team", "comm"), default="team")
    ap.add_argument("--target-ms", type=float, default=DEFAULT_TARGET_MS,
                    help="wall time of one round of one side (sets iters unless --iters)")
    ap.add_argument("--off-cache", action="store_true",
                    help="rotate through buffer sets covering %d x the last-level cache"
                         % OFF_CACHE_FACTOR)
    ap.add_argument("--fresh", action="store_true",
                    help="every call first stores into each cache line of the rank's input")
    ap.add_argument("--buffers", choices=("private", "shared"), default="private",
                    help="shared: a third side, pgascol on buffers of pgascol.empty")
    ap.add_argument("--json")
    # what `pgascol-bench ab` runs (bench_ab.py): the same calls per round
    # on both sides, pgascol alone, chosen cases; and its test-only slowdown
    ap.add_argument("--iters-file", help="JSON {\"OP:BYTES\": calls per round}: pins iters per case")
    ap.add_argument("--only-ours", action="store_true", help="time pgascol only (no native MPI side)")
    ap.add_argument("--cases", help="comma-separated OP:BYTES, instead of --ops x --sizes")
    ap.add_argument("--inject-slowdown", metavar="OP:BYTES:FRACTION",
                    help="TEST ONLY: that case's pgascol side makes one extra call every "
                         "1/FRACTION calls (a synthetic slowdown of FRACTION, to test a gate)")
    args = ap.parse_args(argv)
    try:
        ops, sizes = parse_ops(args.ops), parse_sizes(args.sizes)
    except BenchError as e:
        ap.error(str(e))
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    if args.iters is not None and args.iters < 1:
        ap.error("--iters must be >= 1")
    if not args.target_ms > 0:
        ap.error("--target-ms must be > 0")
    return args, ops, sizes


def worker_main(argv=None):
    """Run under MPI on every rank; rank 0 prints one line per case (flushed)
    and, with --json, writes {"np", "mpi_library", "via", "rounds", "iters",
    "target_ms", "off_cache", "llc_bytes", "llc_source", "results"}."""
    args, ops, sizes = _worker_args(argv)

    from mpi4py import MPI
    import pgascol

    comm = MPI.COMM_WORLD
    team = pgascol.NodeTeam(comm)
    pgascol_comm = pgascol.Comm(comm) if args.via == "comm" else None
    P, me = comm.Get_size(), comm.Get_rank()
    lib = MPI.Get_library_version().strip().splitlines()[0].strip()
    llc, llc_source = comm.bcast(llc_size() if me == 0 else None, 0)  # same sets on every rank
    cases = [(op, 0 if op == "barrier" else s) for op in ops for s in ([0] if op == "barrier" else sizes)]
    if args.cases:
        cases = [(c.rsplit(":", 1)[0], int(c.rsplit(":", 1)[1])) for c in args.cases.split(",")]
    if args.iters_file:
        with open(args.iters_file) as f:
            args.pinned_iters = json.load(f)
    results = []
    out = sys.stdout
    if me == 0:
        out.write("# np=%d, %s; pgascol via %s; %d rounds per case, %s; %s%s; time = slowest "
                  "rank's mean per call, best round\n" % (
                      P, lib, args.via, args.rounds, iters_text(args.iters, args.target_ms),
                      cache_text(args.off_cache, llc, llc_source), fresh_text(args.fresh)))
        out.flush()
    counters = (lambda: pgascol.stats(pgascol_comm)) if pgascol_comm is not None else team.core.stats
    for k, (op, nbytes) in enumerate(cases, 1):
        case = time_case(args, op, nbytes, comm, team, pgascol_comm, llc, counters)
        results += case_rows(case, op, nbytes, P, tuned_state(pgascol_comm, op, nbytes, P))
        if me == 0:
            out.write(case_line(case, k, len(cases), op, nbytes, args.off_cache))
            out.flush()
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "mpi_library": lib, "via": args.via, "rounds": args.rounds,
                       "iters": args.iters, "target_ms": None if args.iters else args.target_ms,
                       "off_cache": args.off_cache, "fresh": args.fresh, "llc_bytes": llc,
                       "buffers": args.buffers,
                       "llc_source": llc_source,
                       "results": results}, f, indent=1)
    if pgascol_comm is not None:
        pgascol_comm.Free()
    team.free()
    return 0


def _case_closures(args, op, nbytes, comm, team, pgascol_comm, nsets):
    """One case's calls: nsets (pgascol, mpi) pairs of make_case closures;
    with --buffers shared, as many pgascol calls on buffers in node shared
    memory, and the arrays allocated for them (for pgascol.free)."""
    if nsets > 1 and pgascol_comm is None:
        # --via team: make_case's two closures share buffers; cold data
        # needs a set of its own for each side
        sets = [(make_case(op, nbytes, comm, team, fresh=args.fresh)[0],
                 make_case(op, nbytes, comm, team, fresh=args.fresh)[1]) for _ in range(nsets)]
    else:
        sets = [make_case(op, nbytes, comm, team, pgascol_comm, args.fresh) for _ in range(nsets)]
    shared, made = [], []
    if args.buffers == "shared":
        for _ in range(nsets):
            alloc, mine = shared_alloc(team, pgascol_comm)
            shared.append(make_case(op, nbytes, comm, team, pgascol_comm, args.fresh, alloc)[0])
            made += mine
    return sets, shared, made


def _most_used(tally):
    """The path a side took most often in a case ("-": none counted)."""
    return max(tally, key=tally.get) if any(tally.values()) else "-"


def time_case(args, op, nbytes, comm, team, pgascol_comm, llc, counters):
    """Time one case on every rank. Each of args.rounds rounds times
    pgascol (the paths it takes counted from counters()), then with
    --buffers shared pgascol on shared buffers and the operation's floor,
    then native MPI; with --fresh the stores alone follow, and once the
    case's buffers are freed, the memcpy floors. Returns a SimpleNamespace:
    t_ours, t_mpi, t_shared (seconds per call, one per round; t_shared
    empty without --buffers shared), iters, nsets (buffer sets), store (the
    stores alone or None), path and path_shared (the paths taken most),
    floor (one memcpy of the payload), fbytes and op_floor (the operation's
    floor, floor_bytes, and its time)."""
    import pgascol
    P = comm.Get_size()
    nsets = buffer_sets(case_bytes(op, nbytes, P), llc) if args.off_cache else 1
    sets, shared, made = _case_closures(args, op, nbytes, comm, team, pgascol_comm, nsets)
    # the floor of the operation: one memcpy of what a rank must write at
    # least, timed in the rounds beside the collectives (--buffers shared)
    fbytes = floor_bytes(op, nbytes, P)
    copies = memcpy_calls(fbytes, buffer_sets(2 * fbytes, llc) if args.off_cache else 1) \
        if shared and fbytes else None
    name = op.capitalize()
    tally, tally_shared = {}, {}

    def counted(calls, tally):
        before = dict(counters().get(name, {}))
        t = time_calls(calls, iters, comm)
        for p, v in counters().get(name, {}).items():
            tally[p] = tally.get(p, 0) + v - before.get(p, 0)
        return t
    for fn in [f for s in sets for f in s] + shared:  # warm up, fault pages in
        fn()
    ours = injected([s[0] for s in sets], args.inject_slowdown, op, nbytes)
    theirs = itertools.cycle([s[1] for s in sets])
    ours_shared = itertools.cycle(shared) if shared else None
    stores = [getattr(s[0], "store", None) for s in sets]
    del sets
    if args.iters:
        iters = args.iters
    elif getattr(args, "pinned_iters", None) and "%s:%d" % (op, nbytes) in args.pinned_iters:
        iters = args.pinned_iters["%s:%d" % (op, nbytes)]
    else:
        one = max(time_calls(ours, 1, comm), time_calls(theirs, 1, comm), 1e-7)
        iters = comm.bcast(int(max(1, min(MAX_ITERS, args.target_ms * 1e-3 / one))), 0)
    tp, tm, ts, tf = [], [], [], []
    for _ in range(args.rounds):
        tp.append(counted(ours, tally))
        if ours_shared is not None:
            ts.append(counted(ours_shared, tally_shared))
        if copies is not None:
            tf.append(time_calls(copies, iters, comm))
        if not args.only_ours:
            tm.append(time_calls(theirs, iters, comm))
    # --fresh: the stores alone (both sides' times include them)
    store = (min(time_calls(itertools.cycle(stores), iters, comm) for _ in range(3))
             if args.fresh and None not in stores else None)
    del ours, theirs, stores, ours_shared, shared, copies  # free the buffers before the floor allocates its own
    for a in made:
        pgascol.free(a)
    del made
    floor, op_floor = _floors(nbytes, fbytes, tf, llc, args.off_cache, comm)
    return SimpleNamespace(t_ours=tp, t_mpi=tm, t_shared=ts, iters=iters, nsets=nsets, store=store,
                           path=_most_used(tally), path_shared=_most_used(tally_shared),
                           floor=floor, fbytes=fbytes, op_floor=op_floor)


def injected(fns, spec, op, nbytes):
    """An endless iterator over the pgascol side's calls fns, in turn. With
    --inject-slowdown OP:BYTES:FRACTION matching this case, every
    round(1/FRACTION)-th call is made twice, on every rank alike (a test-only
    slowdown of the benchmark, not of the engine). Both ways it is an
    itertools.cycle over one period, iterated in C: the injection adds the
    extra calls and a Python frame for each, nothing per call (a generator
    here cost as much as a small collective, which tripled a 1% slowdown)."""
    fns = list(fns)
    if not spec:
        return itertools.cycle(fns)
    name, size, fraction = spec.split(":")
    if (name, int(size)) != (op, nbytes):
        return itertools.cycle(fns)
    every = max(1, round(1 / float(fraction)))

    def twice(fn):
        def both():
            fn()
            fn()
        return both
    period = [fns[k % len(fns)] for k in range(math.lcm(len(fns), every))]
    for k in range(every - 1, len(period), every):
        period[k] = twice(period[k])
    return itertools.cycle(period)


def _floors(nbytes, fbytes, tf, llc, off_cache, comm):
    """(one memcpy of the payload, the operation's floor: the best of its
    rounds tf, else one memcpy of its fbytes), the same on every rank."""
    floor = memcpy_floor(nbytes, sets=buffer_sets(2 * nbytes, llc) if off_cache else 1) \
        if nbytes else 0.0
    floor = comm.bcast(floor, 0)
    if tf:
        op_floor = min(tf)
    else:
        op_floor = floor if fbytes == nbytes else comm.bcast(
            memcpy_floor(fbytes, sets=buffer_sets(2 * fbytes, llc) if off_cache else 1), 0)
    return floor, op_floor


def case_rows(case, op, nbytes, P, learned):
    """The case's records (time_case's `case`): pgascol, native MPI and,
    with --buffers shared, pgascol-shared; `learned` (tuned_state) goes on
    pgascol's."""
    rows = [("pgascol", case.t_ours, case.path)] + ([("mpi", case.t_mpi, None)] if case.t_mpi else []) + (
        [("pgascol-shared", case.t_shared, case.path_shared)] if case.t_shared else [])
    out = []
    for impl, times, p in rows:
        row = stats_row(impl, op, nbytes, P, times, case.iters, p, case.floor, case.nsets, case.store)
        row.update(floor_bytes=case.fbytes, floor_us=case.op_floor * 1e6,
                   buffers="shared" if impl == "pgascol-shared" else "private")
        if impl != "mpi":
            row.update(tuned=learned)
        out.append(row)
    return out


def case_line(case, k, ncases, op, nbytes, off_cache):
    """Rank 0's line of case k of ncases (time_case's `case`)."""
    tp, tm, ts, op_floor = case.t_ours, case.t_mpi, case.t_shared, case.op_floor
    if not tm:   # --only-ours
        return "[%d/%d] %-20s %6s  pgascol %10.2f us  %d calls per round  %s\n" % (
            k, ncases, op, human(nbytes) if nbytes else "-", min(tp) * 1e6, case.iters, case.path)
    return ("[%d/%d] %-20s %6s  pgascol %10.2f us  mpi %10.2f us  ratio %5.2f  "
            "memcpy %9.2f us  %s%s%s%s\n" % (
                k, ncases, op, human(nbytes) if nbytes else "-", min(tp) * 1e6,
                min(tm) * 1e6, min(tp) / min(tm), case.floor * 1e6, case.path,
                "  shared %.2f us (%.2fx mpi, %.2fx floor %.2f us)" % (
                    min(ts) * 1e6, min(ts) / min(tm), min(ts) / op_floor if op_floor else 0,
                    op_floor * 1e6) if ts else "",
                "  (%d buffer sets)" % case.nsets if off_cache else "",
                "  (stores alone %.2f us)" % (case.store * 1e6) if case.store is not None else ""))


# ---------------------------------------------------------------------------
# Host side: `pgascol-bench run`
# ---------------------------------------------------------------------------

def format_table(results):
    """The readable table: one line per (op, bytes) with both sides (and the
    stores alone of a --fresh run)."""
    pg = {(r["op"], r["bytes"]): r for r in results if r["impl"] == "pgascol"}
    mp = {(r["op"], r["bytes"]): r for r in results if r["impl"] == "mpi"}
    fresh = any(r.get("store_us") is not None for r in results)
    sh = {(r["op"], r["bytes"]): r for r in results if r["impl"] == "pgascol-shared"}
    lines = ["times in us: the slowest rank's mean per call; min = best round, avg over rounds; "
             "ratio = pgascol min / mpi min (below 1: pgascol faster)"
             + ("; stores = --fresh's stores alone (included in both sides' times)" if fresh else "")
             + ("; shared = pgascol on buffers of pgascol.empty, floor = one memcpy of the bytes a "
                "rank must write (floor_us)" if sh else ""),
             "%-20s %7s %11s %11s %11s %11s %7s %11s %9s  %s" % (
                 "op", "bytes", "pgascol min", "pgascol avg", "mpi min", "mpi avg", "ratio",
                 "memcpy", "GB/s", "path") + ("  stores" if fresh else "")
             + ("  %11s %7s %11s %7s" % ("shared min", "/mpi", "floor", "/floor") if sh else "")]
    for key, p in pg.items():
        m = mp.get(key)
        ratio = p["t_min_us"] / m["t_min_us"] if m and m["t_min_us"] > 0 else float("nan")
        bw = key[1] / (p["t_min_us"] * 1e3) if key[1] and p["t_min_us"] > 0 else 0.0
        store = p.get("store_us")
        lines.append("%-20s %7s %11.2f %11.2f %11s %11s %7.2f %11s %9s  %s" % (
            key[0], human(key[1]) if key[1] else "-", p["t_min_us"], p["t_avg_us"],
            "%.2f" % m["t_min_us"] if m else "-", "%.2f" % m["t_avg_us"] if m else "-", ratio,
            "%.2f" % p["memcpy_us"] if key[1] else "-", "%.2f" % bw if key[1] else "-", p["path"])
            + ("  %.2f" % store if store is not None else "  -" if fresh else "")
            + (_shared_cols(sh.get(key), m) if sh else ""))
    return "\n".join(lines)


def _shared_cols(s, m):
    """The table's columns of the shared-buffer side: its best time, over
    native MPI's and over the floor."""
    if s is None:
        return "  %11s %7s %11s %7s" % ("-", "-", "-", "-")
    floor = s.get("floor_us") or 0
    return "  %11.2f %7.2f %11.2f %7.2f" % (
        s["t_min_us"], s["t_min_us"] / m["t_min_us"] if m and m["t_min_us"] > 0 else float("nan"),
        floor, s["t_min_us"] / floor if floor > 0 else float("nan"))


def cmd_run(args, argv):
    def pick(value, default):
        return default if value is None else value

    if args.quick:
        np_ = pick(args.np, 2)
        sizes = pick(args.sizes, QUICK_SIZES)
        rounds = pick(args.rounds, QUICK_ROUNDS)
        target = QUICK_TARGET_MS
    else:
        np_ = pick(args.np, max(2, min(4, os.cpu_count() or 2)))
        sizes = pick(args.sizes, DEFAULT_SIZES)
        rounds = pick(args.rounds, DEFAULT_ROUNDS)
        target = DEFAULT_TARGET_MS
    ops = parse_ops(pick(args.ops, ",".join(OPS)))
    parse_sizes(sizes)  # validate before launching
    if np_ < 1:
        raise BenchError("--np must be >= 1")
    if rounds < 1:
        raise BenchError("--rounds must be >= 1")
    if args.iters is not None and args.iters < 1:
        raise BenchError("--iters must be >= 1 (got %d)" % args.iters)
    if args.virtual_node_size is not None and args.virtual_node_size < 1:
        raise BenchError("--virtual-node-size must be >= 1")
    if args.plot:  # fail now, not after the measurements
        plot_destination(args.plot)
        _matplotlib()
    worker = ["--via", "comm", "--ops", ",".join(ops), "--sizes", sizes, "--rounds", str(rounds),
              "--target-ms", str(target)]
    if args.iters:
        worker += ["--iters", str(args.iters)]
    if args.off_cache:
        worker.append("--off-cache")
    if args.fresh:
        worker.append("--fresh")
    if args.buffers == "shared":
        worker += ["--buffers", "shared"]
    job, meta = launch(args, argv, np_, "pgascol.tools.bench", worker)
    meta["rounds"] = rounds
    meta["via"] = job["via"]
    for key in ("iters", "target_ms", "off_cache", "fresh", "llc_bytes", "llc_source"):
        meta[key] = job[key]
    meta["buffers"] = job.get("buffers", "private")
    return report({"schema": SCHEMA, "meta": meta, "results": job["results"]}, "pgascol-bench",
                  format_table, plot_results, args)


def plot_results(doc, dest):
    """One PNG per operation: best-round time against bytes (log-log) for
    pgascol and native MPI, with their min-max band over the rounds, and the
    memcpy floor. Barrier (no size) is not plotted. Returns the paths written."""
    Figure, FigureCanvasAgg, FuncFormatter = _matplotlib()
    name_of = plot_destination(dest)
    meta = doc.get("meta", {})
    by_op = {}
    for r in doc["results"]:
        if r["bytes"] > 0:
            by_op.setdefault(r["op"], []).append(r)
    written = []
    for op in [o for o in OPS if o in by_op] + sorted(set(by_op) - set(OPS)):
        rows = by_op[op]
        nps = sorted({r["np"] for r in rows})
        fig = Figure(figsize=(8, 5), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        for np_ in nps:
            suffix = " np=%d" % np_ if len(nps) > 1 else ""
            for impl, label, style in (("pgascol", "pgascol", "o-"), ("pgascol-shared", "pgascol, shared buffers",
                                                                    "^-"), ("mpi", "native MPI", "s-")):
                pts = sorted((r["bytes"], r["t_min_us"], r["t_max_us"]) for r in rows
                             if r["impl"] == impl and r["np"] == np_)
                if not pts:
                    continue
                xs, lo, hi = zip(*pts)
                line, = ax.plot(xs, lo, style, label=label + suffix, markersize=4)
                ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15, linewidth=0)
            floor = sorted({(r["bytes"], r["memcpy_us"]) for r in rows
                            if r["np"] == np_ and r.get("memcpy_us", 0) > 0})
            if floor:
                ax.plot(*zip(*floor), "--", color="gray", label="memcpy floor" + suffix)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: human(int(x)) if x >= 1 else ""))
        ax.set_xlabel("bytes per rank")
        ax.set_ylabel("time per call (\u00b5s)")
        ax.set_title(op, fontsize=12, loc="left")
        ax.set_title("lines: best round; bands: min-max over the rounds", fontsize=8, loc="right")
        if describe_run(meta):
            fig.suptitle(describe_run(meta), fontsize=7, wrap=True, x=0.01, ha="left")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        path = name_of(op)
        try:
            fig.savefig(path, format="png")
        except OSError as e:
            raise BenchError("cannot write %s: %s" % (path, e)) from None
        written.append(path)
    return written
