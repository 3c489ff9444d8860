"""pgascol-bench: pgascol against native MPI, side by side in one job.

    pgascol-bench run [--np N] [--ops bcast,allreduce,...] [--sizes 8,1K,1M | 8:64M]
                      [--rounds R] [--iters N] [--off-cache] [--buffers shared] [--virtual-node-size K]
                      [--mpi-launcher CMD] [--json FILE] [--plot FILE.png | DIR/] [--quick]
    pgascol-bench pgas [--np 1,2] [--benchmarks randomaccess,stream,latency] [--json FILE] ...
    pgascol-bench compare BASE.json NEW.json [--threshold 0.10]
    pgascol-bench plot RESULTS.json --plot FILE.png | DIR/
    pgascol-bench upc ...      (UPC's collectives, UOMS-style: pgascol/tools/bench_upc.py)
    pgascol-bench blas [--np N] [--ops dgemm,...] [--threads K] [--json FILE]   (pgascol/tools/bench_blas.py)
    pgascol-bench sparse [--np N] [--matrices lap2d,...] [--formats csr,...] [--json FILE]
                                                                      (pgascol/tools/bench_sparse.py)

`run` starts the MPI job itself; every rank runs the worker of this module
(``python -m pgascol.tools.bench worker ...``, also what bench/engine_vs_mpi.py
calls under your own ``mpiexec``). For each operation and size, rounds
alternate pgascol and the native collective on the same buffers (--via comm:
the same mpi4py calls made on a pgascol.Comm; --via team: the node team's C
engine called directly), so machine noise hits both alike. A round times
`iters` calls (--iters N; by default chosen per case so that a round lasts
about 20 ms, 10 ms with --quick); the time of a round is the slowest rank's
mean per call (IMB's t_max). Over the rounds we keep min/avg/max of that time
per side; the table shows the best round (min), the ratio pgascol/MPI and the
memory floor: one memcpy of the payload (numpy copyto, pre-faulted) timed in
the same run.

--off-cache: each side rotates, call after call, through distinct buffer sets
that together cover twice the last-level cache (read from sysfs, else 32 MiB;
at most MAX_BUFFER_SETS sets, so the smallest sizes cover less), so a call
finds its data cold, as IMB's -off_cache does; the memcpy floor rotates the
same way. --plot writes one PNG per operation, time against size (log-log)
for pgascol, native MPI and the memcpy floor (needs matplotlib: the "plot"
extra): --plot out.png writes out-bcast.png, out-allreduce.png, ...; --plot
DIR/ (or an existing directory) writes DIR/bcast.png, ... `plot` draws the
same figures from a JSON written earlier.

--buffers shared adds a third side: pgascol on buffers in node shared memory
(pgascol.empty), which the engine reads in place (one user-space copy), and
each result row carries the floor of its operation: floor_bytes, the bytes a
rank must write at least (the payload; P x the payload for Allgather(v)),
and floor_us, one memcpy of them timed in the same run.

The JSON written by --json (schema "pgascol-bench/1") is documented in
docs/PERFORMANCE.md, as is the regression rule of `compare`.
"""
import argparse
import datetime
import itertools
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

SCHEMA = "pgascol-bench/1"
OURS = ("pgascol", "pgascol-shared")    # the impls whose slowdown `compare` calls a regression

OPS = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
       "reduce_scatter_block", "scan", "exscan", "gatherv", "scatterv", "allgatherv", "alltoallv")
DEFAULT_SIZES = "8,1K,64K,1M,16M"
QUICK_SIZES = "8,1K,64K,1M"
DEFAULT_ROUNDS = 5
QUICK_ROUNDS = 5
DEFAULT_TARGET_MS = 20.0     # wall time of one round of one side (iters chosen for it)
QUICK_TARGET_MS = 10.0
MAX_ITERS = 10000            # cap on iters chosen from the time target (not on --iters)
LLC_FALLBACK = 32 << 20      # last-level cache assumed when sysfs does not tell
OFF_CACHE_FACTOR = 2         # --off-cache: each side's buffer sets cover 2 x the LLC...
MAX_BUFFER_SETS = 4096       # ...with at most this many sets (the smallest sizes cover less)


class BenchError(Exception):
    """A bad argument or an unusable environment: reported in one line."""


# ---------------------------------------------------------------------------
# Sizes and operations
# ---------------------------------------------------------------------------

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(s):
    """'8', '1K', '16M', '1G' (binary units) -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)(?:I?B)?\s*", s.upper())
    if not m:
        raise BenchError("bad size %r: expected a number of bytes with an optional K, M or G "
                         "suffix, e.g. 8, 1K, 16M" % s)
    n = int(m.group(1)) * _UNITS[m.group(2)]
    if n <= 0:
        raise BenchError("bad size %r: must be at least 1 byte" % s)
    return n


def parse_sizes(spec):
    """'8,1K,1M' and ranges 'LO:HI' (LO, 4*LO, 16*LO, ... up to HI) or
    'LO:HI:F' (factor F) -> sorted list of distinct byte counts."""
    out = []
    for tok in spec.split(","):
        tok = tok.strip()
        if not tok:
            raise BenchError("bad --sizes %r: empty entry" % spec)
        if ":" in tok:
            parts = tok.split(":")
            if len(parts) not in (2, 3):
                raise BenchError("bad size range %r: expected LO:HI or LO:HI:FACTOR" % tok)
            lo, hi = parse_size(parts[0]), parse_size(parts[1])
            try:
                f = int(parts[2]) if len(parts) == 3 else 4
            except ValueError:
                raise BenchError("bad size range %r: FACTOR must be an integer" % tok) from None
            if f < 2 or lo > hi:
                raise BenchError("bad size range %r: need LO <= HI and FACTOR >= 2" % tok)
            n = lo
            while n <= hi:
                out.append(n)
                n *= f
        else:
            out.append(parse_size(tok))
    return sorted(set(out))


def parse_ops(spec):
    ops = [o.strip().lower() for o in spec.split(",") if o.strip()]
    if not ops:
        raise BenchError("--ops is empty; choose from: %s" % ",".join(OPS))
    bad = [o for o in ops if o not in OPS]
    if bad:
        raise BenchError("unknown op(s) %s; choose from: %s" % (",".join(bad), ",".join(OPS)))
    return list(dict.fromkeys(ops))


def human(n):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return "%d%s" % (n // size, unit)
    return str(n)


# ---------------------------------------------------------------------------
# Rank side: the worker
# ---------------------------------------------------------------------------

CACHE_LINE = 64                  # --fresh stores one byte into every line of this size


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


def shared_alloc(team, pcomm=None):
    """An allocator for make_case whose arrays live in node shared memory
    (pgascol.empty: on pcomm's node team, else on `team`), and the list
    of what it allocated, for pgascol.free."""
    import numpy as np
    from ..comm import buffers
    made = []

    def alloc(n, fill):
        a = (buffers.empty(pcomm, n, np.float64) if pcomm is not None
             else buffers.node_empty(team, (n,), np.dtype(np.float64)))
        a.fill(fill)
        made.append(a)
        return a
    return alloc, made


def _private(n, fill):
    import numpy as np
    return np.full(n, float(fill))


def make_case(op, nbytes, comm, team, pcomm=None, fresh=False, alloc=_private):
    """Return (pgascol_call, mpi_call) closures for one op and payload size
    (bytes per rank's contribution, as IMB/OSU count them; Alltoall(v): the
    total a rank sends). With pcomm, the pgascol side makes the native calls
    on that pgascol.Comm; otherwise it calls the team's engine directly.
    fresh: every call first stores into the data this rank contributes (its
    send buffer; a Bcast's or a Scatter's at the root only), as a program
    that computes its input before each call does (_sides). alloc(n, fill):
    the float64 arrays of the case (shared_alloc: in node shared memory)."""
    import numpy as np
    from mpi4py import MPI
    from ..engine import _core

    if pcomm is not None:
        return (make_case(op, nbytes, pcomm, team, fresh=fresh, alloc=alloc)[1],
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


def llc_size(root="/sys/devices/system/cpu/cpu0/cache"):
    """(bytes, source) of the last-level cache (topology.last_level_cache);
    (LLC_FALLBACK, "fallback") when sysfs says nothing."""
    from ..node.topology import last_level_cache
    size = last_level_cache(root)
    return (size, "sysfs") if size else (LLC_FALLBACK, "fallback")


def buffer_sets(footprint, llc):
    """How many buffer sets of `footprint` bytes an --off-cache case rotates
    through: enough to cover OFF_CACHE_FACTOR x llc, at most MAX_BUFFER_SETS."""
    if footprint <= 0:
        return 1
    return max(1, min(MAX_BUFFER_SETS, -(-OFF_CACHE_FACTOR * llc // footprint)))


def time_calls(calls, iters, comm):
    """The slowest rank's mean time per call over the next `iters` calls of
    the iterator `calls` (a cycle over one closure, or over one per buffer
    set with --off-cache)."""
    from mpi4py import MPI
    comm.Barrier()
    t0 = time.perf_counter()
    for fn in itertools.islice(calls, iters):
        fn()
    dt = (time.perf_counter() - t0) / iters
    return comm.allreduce(dt, op=MPI.MAX)


def memcpy_floor(nbytes, rounds=3, sets=1):
    """Best time of one numpy copyto of nbytes (pre-faulted buffers),
    rotating through `sets` source/destination pairs (--off-cache)."""
    import numpy as np
    n = max(nbytes // 8, 1)
    src, dst = np.ones(n * sets), np.ones(n * sets)      # both pre-faulted
    pairs = itertools.cycle([(dst[i * n:(i + 1) * n], src[i * n:(i + 1) * n]) for i in range(sets)])
    iters = max(1, min(1000, (64 << 20) // max(nbytes, 1)))
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for d, s in itertools.islice(pairs, iters):
            np.copyto(d, s)
        best = min(best, (time.perf_counter() - t0) / iters)
    return best


def floor_bytes(op, nbytes, P):
    """The bytes a rank must write at least in one call of make_case(op,
    nbytes): its blocks from every rank (P x the payload) in Allgather(v),
    the payload otherwise (an Alltoall's blocks, a Gather sender's block
    into the root's buffer)."""
    return nbytes * P if op in ("allgather", "allgatherv") else nbytes


def memcpy_calls(nbytes, sets=1):
    """An endless iterator of closures, each one numpy copyto of nbytes
    (pre-faulted buffers), rotating through `sets` pairs: the floor timed
    like a collective (time_calls), in the same rounds."""
    import numpy as np
    n = max(nbytes // 8, 1)
    src, dst = np.ones(n * sets), np.ones(n * sets)
    return itertools.cycle([lambda d=dst[i * n:(i + 1) * n], s=src[i * n:(i + 1) * n]: np.copyto(d, s)
                            for i in range(sets)])


def _stats_row(impl, op, nbytes, P, times, iters, path, floor, sets, store=None):
    return {"op": op, "bytes": nbytes, "np": P, "impl": impl,
            "t_min_us": min(times) * 1e6, "t_avg_us": sum(times) / len(times) * 1e6,
            "t_max_us": max(times) * 1e6, "path": path, "memcpy_us": floor * 1e6,
            "iters": iters, "rounds": len(times), "buffer_sets": sets,
            "store_us": None if store is None else store * 1e6}


def tuned_state(pcomm, op, nbytes, P):
    """What the tuner held for this case's size class at the end of the case
    (pgascol.tuning): {"path", "source"}; None where it does not tune it
    (--via team, the v forms with per-rank counts, sizes up to the inline
    size)."""
    if pcomm is None:
        return None
    import pgascol
    from ..comm._comm import tuner_of
    name = {"reduce_scatter_block": "Reduce_scatter_block"}.get(op, op.capitalize())
    per = nbytes // P if op in ("alltoall", "alltoallv") else nbytes
    entry = pgascol.tuning(pcomm).get(name, {}).get(tuner_of(pcomm).class_of(name, max(per, 1)))
    return None if entry is None else {"path": entry["path"], "source": entry["source"]}


def iters_text(iters, target_ms):
    return ("%d calls per round" % iters if iters
            else "calls per round chosen per case for ~%g ms" % target_ms)


def cache_text(off_cache, llc, llc_source):
    llc_text = "LLC %s%s" % (human(llc), "" if llc_source == "sysfs" else " assumed")
    if off_cache:
        return "off-cache (each side rotates buffer sets covering %d x %s)" % (OFF_CACHE_FACTOR,
                                                                            llc_text)
    return "in cache (same buffers every call; %s)" % llc_text


def fresh_text(fresh):
    return ("; fresh input (every call first stores into each %d-byte line of the rank's "
            "input; times include it)" % CACHE_LINE if fresh else "")


def worker_main(argv=None):
    """Run under MPI on every rank; rank 0 prints one line per case (flushed)
    and, with --json, writes {"np", "mpi_library", "via", "rounds", "iters",
    "target_ms", "off_cache", "llc_bytes", "llc_source", "results"}."""
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

    from mpi4py import MPI
    import pgascol

    comm = MPI.COMM_WORLD
    team = pgascol.NodeTeam(comm)
    pcomm = pgascol.Comm(comm) if args.via == "comm" else None
    P, me = comm.Get_size(), comm.Get_rank()
    lib = MPI.Get_library_version().strip().splitlines()[0].strip()
    llc, llc_source = comm.bcast(llc_size() if me == 0 else None, 0)  # same sets on every rank
    cases = [(op, 0 if op == "barrier" else s) for op in ops for s in ([0] if op == "barrier" else sizes)]
    results = []
    out = sys.stdout
    if me == 0:
        out.write("# np=%d, %s; pgascol via %s; %d rounds per case, %s; %s%s; time = slowest "
                  "rank's mean per call, best round\n" % (
                      P, lib, args.via, args.rounds, iters_text(args.iters, args.target_ms),
                      cache_text(args.off_cache, llc, llc_source), fresh_text(args.fresh)))
        out.flush()
    counters = (lambda: pgascol.stats(pcomm)) if pcomm is not None else team.core.stats
    for k, (op, nbytes) in enumerate(cases, 1):
        nsets = buffer_sets(case_bytes(op, nbytes, P), llc) if args.off_cache else 1
        if nsets > 1 and pcomm is None:
            # --via team: make_case's two closures share buffers; cold data
            # needs a set of its own for each side
            sets = [(make_case(op, nbytes, comm, team, fresh=args.fresh)[0],
                     make_case(op, nbytes, comm, team, fresh=args.fresh)[1]) for _ in range(nsets)]
        else:
            sets = [make_case(op, nbytes, comm, team, pcomm, args.fresh) for _ in range(nsets)]
        shared, made = [], []
        if args.buffers == "shared":
            for _ in range(nsets):
                alloc, mine = shared_alloc(team, pcomm)
                shared.append(make_case(op, nbytes, comm, team, pcomm, args.fresh, alloc)[0])
                made += mine
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
        ours, theirs = (itertools.cycle([s[side] for s in sets]) for side in (0, 1))
        ours_shared = itertools.cycle(shared) if shared else None
        stores = [getattr(s[0], "store", None) for s in sets]
        del sets
        if args.iters:
            iters = args.iters
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
            tm.append(time_calls(theirs, iters, comm))
        # --fresh: the stores alone (both sides' times include them)
        store = (min(time_calls(itertools.cycle(stores), iters, comm) for _ in range(3))
                 if args.fresh and None not in stores else None)
        del ours, theirs, stores, ours_shared, shared, copies  # free the buffers before the floor allocates its own
        for a in made:
            pgascol.free(a)
        del made
        floor = memcpy_floor(nbytes, sets=buffer_sets(2 * nbytes, llc) if args.off_cache else 1) \
            if nbytes else 0.0
        floor = comm.bcast(floor, 0)
        if tf:
            op_floor = min(tf)
        else:
            op_floor = floor if fbytes == nbytes else comm.bcast(
                memcpy_floor(fbytes, sets=buffer_sets(2 * fbytes, llc) if args.off_cache else 1), 0)

        def most(tally):
            return max(tally, key=tally.get) if any(tally.values()) else "-"
        path = most(tally)
        learned = tuned_state(pcomm, op, nbytes, P)
        rows = [("pgascol", tp, path), ("mpi", tm, None)] + ([("pgascol-shared", ts, most(tally_shared))]
                                                             if ts else [])
        for impl, times, p in rows:
            row = _stats_row(impl, op, nbytes, P, times, iters, p, floor, nsets, store)
            row.update(floor_bytes=fbytes, floor_us=op_floor * 1e6,
                       buffers="shared" if impl == "pgascol-shared" else "private")
            if impl != "mpi":
                row.update(tuned=learned)
            results.append(row)
        if me == 0:
            out.write("[%d/%d] %-20s %6s  pgascol %10.2f us  mpi %10.2f us  ratio %5.2f  "
                      "memcpy %9.2f us  %s%s%s%s\n" % (
                          k, len(cases), op, human(nbytes) if nbytes else "-", min(tp) * 1e6,
                          min(tm) * 1e6, min(tp) / min(tm), floor * 1e6, path,
                          "  shared %.2f us (%.2fx mpi, %.2fx floor %.2f us)" % (
                              min(ts) * 1e6, min(ts) / min(tm), min(ts) / op_floor if op_floor else 0,
                              op_floor * 1e6) if ts else "",
                          "  (%d buffer sets)" % nsets if args.off_cache else "",
                          "  (stores alone %.2f us)" % (store * 1e6) if store is not None else ""))
            out.flush()
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "mpi_library": lib, "via": args.via, "rounds": args.rounds,
                       "iters": args.iters, "target_ms": None if args.iters else args.target_ms,
                       "off_cache": args.off_cache, "fresh": args.fresh, "llc_bytes": llc,
                       "buffers": args.buffers,
                       "llc_source": llc_source,
                       "results": results}, f, indent=1)
    if pcomm is not None:
        pcomm.Free()
    team.free()
    return 0


# ---------------------------------------------------------------------------
# Host side: launching the job
# ---------------------------------------------------------------------------

def find_launcher(override=None):
    """(argv prefix, impl) for starting MPI jobs; impl is "mpich", "openmpi"
    or "unknown". `override` (a command line, split like a shell would) wins;
    otherwise the mpiexec next to this interpreter (the MPI wheels put it
    there), then mpiexec/mpirun on PATH. Open MPI gets --oversubscribe (and
    --allow-run-as-root as root)."""
    if override:
        command, *extra = shlex.split(override)
        path = shutil.which(command)
        if path is None:
            raise BenchError("--mpi-launcher %r: %r not found" % (override, command))
    else:
        extra = []
        beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        path = beside if os.access(beside, os.X_OK) else shutil.which("mpiexec") or shutil.which("mpirun")
        if path is None:
            raise BenchError("no mpiexec/mpirun found next to %s or on PATH "
                             "(use --mpi-launcher)" % sys.executable)
    try:
        v = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        text = v.stdout + v.stderr
    except (OSError, subprocess.TimeoutExpired):
        text = ""
    if re.search(r"Open MPI|OpenRTE|PRRTE", text, re.IGNORECASE):
        impl = "openmpi"
        extra = ["--oversubscribe", *extra]
        if os.geteuid() == 0:
            extra = ["--allow-run-as-root", *extra]
    elif re.search(r"HYDRA|MPICH|Intel", text, re.IGNORECASE):
        impl = "mpich"
    else:
        impl = "unknown"
    return [path, *extra], impl


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None


def _git_revision():
    """The commit of the source tree pgascol is imported from, read from the
    .git directory (no git process); None when not in a checkout."""
    d = os.path.dirname(os.path.abspath(__file__))
    while True:
        g = os.path.join(d, ".git")
        if os.path.exists(g):
            break
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    try:
        if os.path.isfile(g):  # worktree: "gitdir: PATH"
            with open(g) as f:
                g = os.path.join(d, f.read().split(":", 1)[1].strip())
        with open(os.path.join(g, "HEAD")) as f:
            head = f.read().strip()
        if not head.startswith("ref:"):
            return head or None
        ref = head.split(":", 1)[1].strip()
        common = g
        cd = os.path.join(g, "commondir")
        if os.path.isfile(cd):
            with open(cd) as f:
                common = os.path.join(g, f.read().strip())
        for base in (g, common):
            p = os.path.join(base, ref)
            if os.path.isfile(p):
                with open(p) as f:
                    return f.read().strip() or None
        with open(os.path.join(common, "packed-refs")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1] == ref:
                    return parts[0]
    except (OSError, IndexError):
        pass
    return None


def run_worker_job(args, argv, module, worker_args, env=None):
    """Launch `module`'s worker (``python -m <module> worker ...``) on
    args.np ranks (default 2; args.virtual_node_size: PGASCOL_NODE_SIZE)
    with worker_args and --json, wait for it, and return (the JSON rank 0
    wrote, the pgascol-bench/1 meta of the run). BenchError when it failed."""
    prefix, impl = find_launcher(args.mpi_launcher)
    env = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1")
    if args.virtual_node_size:
        env["PGASCOL_NODE_SIZE"] = str(args.virtual_node_size)
    with tempfile.TemporaryDirectory(prefix="pgascol-bench-") as tmp:
        raw = os.path.join(tmp, "raw.json")
        command = [*prefix, "-n", str(args.np or 2), sys.executable, "-m", module, "worker", *worker_args,
                   "--json", raw]
        print("# launching: %s" % shlex.join(command), flush=True)
        rc = subprocess.call(command, env=env, stdin=subprocess.DEVNULL)
        if rc != 0 or not os.path.exists(raw):
            raise BenchError("the MPI job failed (exit status %s)" % rc)
        with open(raw) as f:
            job = json.load(f)
    meta = collect_meta(shlex.join(["pgascol-bench", *argv]), job["np"], args.virtual_node_size,
                        job["mpi_library"], shlex.join(prefix), impl)
    return job, meta


def write_results(path, meta, results):
    """The pgascol-bench/1 document of a run, when a path is given."""
    if path:
        with open(path, "w") as f:
            json.dump({"schema": SCHEMA, "meta": meta, "results": results}, f, indent=1)
            f.write("\n")
        print("# wrote %s" % path)


def collect_meta(command, np_, vns, mpi_library, launcher, impl):
    import numpy
    try:
        import psutil
        physical = psutil.cpu_count(logical=False)
    except Exception:
        physical = None
    try:
        import mpi4py
        mpi4py_version = mpi4py.__version__
    except Exception:
        mpi4py_version = None
    from .. import __version__
    return {"machine": platform.node(), "cpu_model": _cpu_model(),
            "cores": {"logical": os.cpu_count(), "physical": physical},
            "os": "%s %s" % (platform.system(), platform.release()),
            "mpi_library": mpi_library, "mpi_launcher": launcher, "mpi_impl": impl,
            "mpi4py": mpi4py_version, "pgascol": __version__, "git_revision": _git_revision(),
            "python": platform.python_version(), "numpy": numpy.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": command, "np": np_, "virtual_node_size": vns}


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


def _kill_job(proc):
    import signal
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=3)
            return
        except subprocess.TimeoutExpired:
            pass


def run_job(prefix, np_, virtual_node_size, worker):
    """Run ``python -m WORKER... --json RAW`` on np_ ranks, its output echoed
    as it comes; (exit status, the JSON it wrote or None)."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if virtual_node_size:
        env["PGASCOL_NODE_SIZE"] = str(virtual_node_size)
    with tempfile.TemporaryDirectory(prefix="pgascol-bench-") as tmp:
        raw = os.path.join(tmp, "raw.json")
        command = [*prefix, "-n", str(np_), sys.executable, "-m", *worker, "--json", raw]
        print("# launching: %s" % shlex.join(command), flush=True)
        proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
            rc = proc.wait()
        except BaseException:
            _kill_job(proc)
            raise
        if not os.path.exists(raw):
            return rc, None
        with open(raw) as f:
            return rc, json.load(f)


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


def launch(args, argv, np_, module, worker):
    """Run `python -m module worker WORKER... --json RAW` on np_ ranks under the
    launcher (args.mpi_launcher, args.virtual_node_size), echoing its output;
    returns (the job's JSON, the run's meta)."""
    prefix, impl = find_launcher(args.mpi_launcher)
    rc, job = run_job(prefix, np_, args.virtual_node_size, [module, "worker", *worker])
    if rc != 0 or job is None:
        raise BenchError("the MPI job failed (exit status %s); see its output above" % rc)
    meta = collect_meta(shlex.join(["pgascol-bench", *argv]), job["np"], args.virtual_node_size,
                        job["mpi_library"], shlex.join(prefix), impl)
    return job, meta


def report(doc, title, table, plot, args):
    """Print the run's table, write --json and --plot."""
    print()
    print("# %s: %s" % (title, describe_run(doc["meta"])))
    print(table(doc["results"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print("# wrote %s" % args.json)
    if args.plot:
        for path in plot(doc, args.plot):
            print("# wrote %s" % path)
    return 0


def describe_run(meta):
    """One line saying how a run measured (the table's and the plots' header)."""
    parts = []
    if meta.get("np") is not None:
        parts.append("np=%d" % meta["np"])
    elif meta.get("nps"):
        parts.append("np=%s" % ",".join(map(str, meta["nps"])))
    if meta.get("mpi_library"):
        parts.append(" ".join(meta["mpi_library"].split()))
    if meta.get("machine"):
        parts.append(meta["machine"])
    if meta.get("rounds") is not None:
        parts.append("%d rounds" % meta["rounds"])
    if meta.get("virtual_node_size"):
        parts.append("virtual nodes of %d" % meta["virtual_node_size"])
    if "iters" in meta or "target_ms" in meta:
        parts.append(iters_text(meta.get("iters"), meta.get("target_ms")))
    if "off_cache" in meta:
        parts.append(cache_text(meta["off_cache"], meta.get("llc_bytes") or LLC_FALLBACK,
                                meta.get("llc_source")) + fresh_text(meta.get("fresh")))
    return ", ".join(parts)


# ---------------------------------------------------------------------------
# plot
# ---------------------------------------------------------------------------

def _matplotlib():
    """matplotlib's Figure, Agg canvas and FuncFormatter, imported only when
    plotting (no pyplot: the global backend is left alone)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter
    except ImportError as e:
        raise BenchError('--plot needs matplotlib (%s): pip install "pgascol[plot]"' % e) from None
    return Figure, FigureCanvasAgg, FuncFormatter


def plot_destination(dest):
    """--plot DEST -> a function op -> PNG path. DEST an existing directory or
    ending in "/": DEST/OP.png (the directory is created); otherwise
    DEST without a trailing ".png", then "-OP.png" (out.png -> out-bcast.png)."""
    if dest.endswith(("/", os.sep)) or os.path.isdir(dest):
        try:
            os.makedirs(dest, exist_ok=True)
        except OSError as e:
            raise BenchError("--plot %s: cannot create the directory: %s" % (dest, e)) from None
        return lambda op: os.path.join(dest, "%s.png" % op)
    stem = dest[:-4] if dest.lower().endswith(".png") else dest
    parent = os.path.dirname(stem) or "."
    if not os.path.isdir(parent):
        raise BenchError("--plot %s: directory %s does not exist" % (dest, parent))
    return lambda op: "%s-%s.png" % (stem, op)


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


def cmd_plot(args):
    doc = load_doc(args.results)
    if str(doc.get("meta", {}).get("benchmark", "")).startswith("upc"):
        from .bench_upc import plot_results as plot_upc
        paths = plot_upc(doc, args.plot)
    else:
        paths = plot_results(doc, args.plot)
    for path in paths:
        print("# wrote %s" % path)
    if not paths:
        print("# nothing to plot (only barrier, or no results) in %s" % args.results)
    return 0


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------

def load_doc(path):
    """A pgascol-bench/1 document, schema checked."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError("cannot read %s: %s" % (path, e)) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise BenchError("%s is not a %s file (schema %r)" % (
            path, SCHEMA, doc.get("schema") if isinstance(doc, dict) else None))
    return doc


def results_by_case(doc):
    return {(r["op"], r["bytes"], r["np"], r["impl"]): r for r in doc.get("results", [])}


def load_results(path):
    return results_by_case(load_doc(path))


def is_regression(base, new, threshold):
    """The rule of `compare`: slower than the threshold AND beyond the
    spread of the base run (its slowest round)."""
    return (new["t_min_us"] > base["t_min_us"] * (1 + threshold)
            and new["t_min_us"] > base["t_max_us"])


def cmd_compare(args):
    if args.threshold < 0:
        raise BenchError("--threshold must be >= 0")
    base_doc, new_doc = load_doc(args.base), load_doc(args.new)
    base, new = results_by_case(base_doc), results_by_case(new_doc)
    bm, nm = base_doc.get("meta", {}), new_doc.get("meta", {})
    for key, default in (("off_cache", False), ("fresh", False), ("cpu_model", None),
                         ("mpi_library", None)):
        if bm.get(key, default) != nm.get(key, default):
            print("note: %s differs: base %r, new %r (the times may not be comparable)"
                  % (key, bm.get(key, default), nm.get(key, default)))
    keys = sorted(set(base) & set(new), key=lambda k: (k[0], k[1], k[2], k[3] != "pgascol"))
    print("change of the best round (t_min); regression: pgascol new t_min > base t_min * (1 + %.2f) "
          "and > base t_max" % args.threshold)
    print("%-20s %7s %4s %-8s %11s %11s %11s %8s  %s" % (
        "op", "bytes", "np", "impl", "base min", "base max", "new min", "change", ""))
    regressions = []
    for k in keys:
        b, n = base[k], new[k]
        change = n["t_min_us"] / b["t_min_us"] - 1 if b["t_min_us"] > 0 else float("nan")
        flag = ""
        if k[3] in OURS:
            if is_regression(b, n, args.threshold):
                flag = "REGRESSION"
                regressions.append(k)
            elif n["t_min_us"] > b["t_min_us"] * (1 + args.threshold):
                flag = "slower, within the base run's spread"
        else:
            flag = "(native, for context)"
        print("%-20s %7s %4d %-8s %11.2f %11.2f %11.2f %+7.1f%%  %s" % (
            k[0], human(k[1]) if k[1] else "-", k[2], k[3], b["t_min_us"], b["t_max_us"],
            n["t_min_us"], change * 100, flag))
    for label, only in (("only in base", set(base) - set(new)), ("only in new", set(new) - set(base))):
        for k in sorted(only):
            print("missing case (%s): %s %s np=%d %s" % (label, k[0], human(k[1]) if k[1] else "-",
                                                        k[2], k[3]))
    if not keys:
        print("no case in common")
    if regressions:
        print("%d regression(s): %s" % (len(regressions), ", ".join(
            "%s %s np=%d" % (k[0], human(k[1]) if k[1] else "-", k[2]) for k in regressions)))
        return 1
    print("no regression (%d pgascol case(s) compared)" % sum(1 for k in keys if k[3] in OURS))
    return 0


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def _parser():
    ap = argparse.ArgumentParser(prog="pgascol-bench",
                                 description="pgascol.Comm against native MPI collectives, and the PGAS "
                                             "layer's benchmarks (pgas); no arguments: `run` with the "
                                             "default sweep")
    sub = ap.add_subparsers(dest="command")
    r = sub.add_parser("run", help="launch an MPI job and time pgascol vs native MPI")
    r.add_argument("--np", type=int, help="ranks (default: 2-4 by the CPU count; --quick: 2)")
    r.add_argument("--ops", help="comma-separated, from: %s (default: all)" % ",".join(OPS))
    r.add_argument("--sizes", help="bytes per rank, e.g. 8,1K,1M or a range LO:HI[:FACTOR] "
                                   "(default %s; --quick %s)" % (DEFAULT_SIZES, QUICK_SIZES))
    r.add_argument("--rounds", type=int, help="rounds per case (default %d; --quick %d)"
                   % (DEFAULT_ROUNDS, QUICK_ROUNDS))
    r.add_argument("--iters", type=int, metavar="N",
                   help="calls per round, the same for every case (default: chosen per case "
                        "so a round lasts ~%g ms; --quick ~%g ms)" % (DEFAULT_TARGET_MS,
                                                                        QUICK_TARGET_MS))
    r.add_argument("--off-cache", action="store_true",
                   help="rotate through buffer sets covering %d x the last-level cache, so "
                        "calls find their data cold (both sides)" % OFF_CACHE_FACTOR)
    r.add_argument("--fresh", action="store_true",
                   help="every call first stores into each cache line of the rank's input, as a "
                        "program that computes it does (both sides; the stores alone are timed too)")
    r.add_argument("--buffers", choices=("private", "shared"), default="private",
                   help="shared: also time pgascol on buffers in node shared memory (pgascol.empty), "
                        "and report the floor: one memcpy of the bytes a rank must write")
    r.add_argument("--virtual-node-size", type=int, metavar="K",
                   help="split the node into virtual nodes of K ranks (PGASCOL_NODE_SIZE)")
    r.add_argument("--mpi-launcher", metavar="CMD",
                   help="launcher command line, e.g. 'mpirun --bind-to none' (default: detected)")
    r.add_argument("--json", metavar="FILE", help="write the results (schema %s)" % SCHEMA)
    r.add_argument("--plot", metavar="FILE.png|DIR/",
                   help="one PNG per op, time against size: out.png -> out-bcast.png, ...; "
                        "DIR/ -> DIR/bcast.png, ... (needs matplotlib)")
    r.add_argument("--quick", action="store_true", help="a small sweep (np=2, under 2 minutes)")
    from . import bench_blas, bench_pgas, bench_sparse, bench_upc
    bench_pgas.add_parser(sub)
    bench_upc.add_parser(sub)
    bench_blas.add_parser(sub)
    bench_sparse.add_parser(sub)
    c = sub.add_parser("compare", help="compare two JSON results; exit 1 on a pgascol regression")
    c.add_argument("base")
    c.add_argument("new")
    c.add_argument("--threshold", type=float, default=0.10,
                   help="relative slowdown tolerated (default 0.10)")
    p = sub.add_parser("plot", help="plot a JSON written by `run --json`, `upc --json` or `blas --json`, one PNG per op")
    p.add_argument("results", metavar="RESULTS.json")
    p.add_argument("--plot", metavar="FILE.png|DIR/", required=True,
                   help="out.png -> out-bcast.png, ...; DIR/ -> DIR/bcast.png, ...")
    return ap


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        return worker_main(argv[1:])
    if not argv:
        argv = ["run"]
    ap = _parser()
    args = ap.parse_args(argv)
    if args.command is None:
        ap.error("choose a command: run, pgas, upc, blas, sparse, compare or plot")
    try:
        if args.command == "run":
            return cmd_run(args, argv)
        if args.command == "pgas":
            from . import bench_pgas
            return bench_pgas.cmd_pgas(args, argv)
        if args.command == "blas":
            from .bench_blas import cmd_blas
            return cmd_blas(args, argv)
        if args.command == "sparse":
            from .bench_sparse import cmd_sparse
            return cmd_sparse(args, argv)
        if args.command == "plot":
            return cmd_plot(args)
        if args.command == "upc":
            from .bench_upc import cmd_upc
            return cmd_upc(args, argv)
        return cmd_compare(args)
    except BenchError as e:
        print("pgascol-bench: error: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    # through the imported module, not this __main__ copy of it: the
    # subcommands in other modules (bench_pgas, bench_upc) raise its BenchError
    from pgascol.tools.bench import main as _main
    sys.exit(_main())
