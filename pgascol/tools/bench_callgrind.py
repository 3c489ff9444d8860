"""`pgascol-bench instructions`: instructions per call of pgascol's
collectives, counted under valgrind's callgrind, the engine's waits left out.

    pgascol-bench instructions [--np N] [--ops ...] [--sizes ...] [--iters N] [--rounds 3]
                               [--quick] [--json FILE] [--inject-slowdown OP:BYTES:FRACTION]
                               [--keep-dumps DIR]

Every rank runs under ``valgrind --tool=callgrind --instr-atstart=no
--collect-atstart=no`` (start-up runs uninstrumented). For each case the
worker warms the calls up, then each round zeroes the counters, collects
over `iters` calls of the pgascol side (on a pgascol.Comm; iters_for: fixed
per case and path) and dumps what it counted under a label naming the case,
round and rank (csrc/base/count.c through ctypes). The engine's waits are
left out whole (UNCOUNTED, named to callgrind's --toggle-collect;
csrc/base/count.h), so a count does not depend on how long a rank waited
for its peers, and the cheap cases' calls are paced so that the ranks enter
each in the same order in every run (paced). What else could vary is
pinned: PINNED_ENV (no learning, no calibration file, no adaptive switches,
the baseline SIMD loops, no streaming stores) and PYTHONHASHSEED; what
follows where the heap put things (the interpreter's type lookups,
glibc's bins) is left out (TYPE_LOOKUP, ALLOCATOR). The
native MPI side is not counted (MPI's progress loop spins for as long as
its peers take).

The host reads the dumps: a case's sample per round is the mean over the
ranks of instructions per call (instr_by_rank has each rank's). The JSON is
a pgascol-bench/1 document with meta["measure"] = "instructions" and rows
{"op", "bytes", "np", "impl": "pgascol", "path", "iters", "paced", "rounds",
"instructions" (the median), "instr_min", "instr_avg", "instr_max",
"samples_instr", "instr_by_rank"}: `verdict` and `compare` read it.
"""
import argparse
import ctypes
import glob
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from .bench_coll import OPS, QUICK_SIZES, DEFAULT_SIZES, injected, parse_ops
from .bench_layer_cases import LAYER_OPS, LAYER_PACED, layer_sizes
from .bench_fingerprint import LoadProbe
from .bench_harness import SCHEMA, BenchError, collect_meta, find_launcher, human, parse_sizes

PINNED_ENV = {"PGASCOL_TUNE": "0", "PGASCOL_TUNE_SAVE": "0", "PGASCOL_ADAPT": "0", "PGASCOL_STREAM": "0",
              "PGASCOL_SIMD": "0", "PGASCOL_RECV_STREAM_MIN": "0", "PYTHONHASHSEED": "0",
              "PYTHONMALLOC": "malloc"}
# PYTHONMALLOC=malloc: Python's own allocator (pymalloc) takes a new pool or
# arena where the cases before left it, which differs between jobs; the
# layers' one-sided cases allocate per call and varied by up to 0.85%
# between jobs with it (a fetch_op of 8 bytes), by under 0.1% with glibc's
# malloc, whose per-thread cache serves a call's allocations the same way.
# What a count still owes to scheduling is a few instructions in a wait's
# caller (the branch, the call's arguments, the GIL taken back), which weigh
# most where a call makes few instructions: small payloads, and large ones
# the kernel copies (cma). Unpaced they weighed up to 0.25% between runs on
# a 2-CPU machine with two busy processes (a Bcast's reader found its root
# there in one run and waited for it in another). So those cases are paced
# (csrc/base/count.h): rank r enters call k at start + k periods + r/P of a
# period, in rank order in every run (paced: below 0.05%). A period is twice
# the slowest rank's mean time of PACE_CALLS warm-up calls, at least
# PACE_MIN_S.
# Payloads of PACED_BELOW bytes or more that the engine copies itself make
# tens of thousands of instructions per call, where the branches weigh below
# 0.03%: they run back to back, as do the layers' cases but their
# collectives (LAYER_PACED).
PACED_BELOW, PACE_CALLS, PACE_MIN_S = 64 << 10, 4, 300e-6
# Calls per round, a function of the case and its path (pinned) so that every
# run of a case counts the same loop: ITERS_PACED (a paced call takes a
# period), ITERS, or ITERS_COPIED from COPIED bytes on (hundreds of
# thousands of instructions per call: as exact, at a third of the time).
ITERS_PACED, ITERS, ITERS_COPIED, COPIED = 500, 1000, 300, 1 << 20


def paced(op, nbytes, path):
    """Whether the calls of a case whose warm-up took `path` are paced."""
    if op in LAYER_OPS:
        return op in LAYER_PACED
    return nbytes < PACED_BELOW or path in ("inline", "cma")


def iters_for(op, nbytes, path, override=None):
    """Calls per round of a case whose warm-up took `path` (a multiple of
    100, so that a slowdown of 1% injected once every 100 calls weighs the
    same in every round)."""
    if override:
        return override
    if paced(op, nbytes, path):
        return ITERS_PACED
    return ITERS_COPIED if nbytes >= COPIED else ITERS


DEFAULT_ROUNDS = 3
WARMUP_CALLS = 50     # past CPython's specialisation of the calling code
LABEL = "pgascol-bench case=%s:%d round=%d rank=%d"
# Left out of every count, from their first instruction to their return,
# callees included: the engine's waits and the waking of sleepers
# (csrc/base/count.h), the pacing of small cases (count_pace), and the GIL's
# taking back, which a small payload's call does only if it waited
# (pgascol/engine/gil.pxi, _leave). None calls another: callgrind toggles
# collection on entry, so a nested one would count again.
UNCOUNTED = ("pgc_wait_slow", "pgc_wait_signed", "pgc_rma_wait_until", "pgc_ring_doorbell", "pgc_count_pace",
             "pgascol_gil_take_back")
# The interpreter's type attribute lookups are left out too. A lookup first
# tries the method cache, a table of 4096 entries indexed by the type's
# version tag xor the name's address: which hot (type, name) pairs share an
# entry, and so miss it on every call and walk the MRO's dicts, depends on
# where the heap put each name, which differs from job to job (the order in
# which earlier cases' waits allocated). A fetch_op of 8 bytes made 39,460
# or 40,005 instructions a call depending on a few small objects allocated
# at start-up (the +545 all in _PyType_Lookup and its MRO walk). The
# outermost lookup function is named so that nothing nests: Python 3.11-3.12
# call find_name_in_mro from _PyType_Lookup only; later versions have
# several entry points above it, where its own miss path is left out.
TYPE_LOOKUP = ("_PyType_Lookup",) if sys.version_info < (3, 13) else ("find_name_in_mro",)
ALLOCATOR = ("_int_malloc", "_int_free")
INSTALL_HINT = ("valgrind is not installed: it is a Debian/Ubuntu package (sudo apt-get install "
                "valgrind; dnf install valgrind; on GitHub's ubuntu runners the same apt-get line)")


def add_parser(sub):
    p = sub.add_parser("instructions", help="count instructions per call under callgrind (waits left "
                                             "out): deterministic figures for a CI gate")
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--ops", help="comma-separated, from the collectives (%s) and the layers' small "
                   "operations (%s); default: all" % (",".join(OPS), ",".join(LAYER_OPS)))
    p.add_argument("--sizes", help="bytes per rank (default %s; --quick %s)" % (DEFAULT_SIZES, QUICK_SIZES))
    p.add_argument("--iters", type=int, help="calls per round (default %d for a paced case, else %d; "
                   "%d from %s)" % (ITERS_PACED, ITERS, ITERS_COPIED, human(COPIED)))
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="rounds per case (default %d)"
                   % DEFAULT_ROUNDS)
    p.add_argument("--quick", action="store_true", help="the quick sweep's sizes (%s)" % QUICK_SIZES)
    p.add_argument("--inject-slowdown", metavar="OP:BYTES:FRACTION",
                   help="TEST ONLY: that case makes one extra call every 1/FRACTION calls")
    p.add_argument("--mpi-launcher", metavar="CMD", help="launcher command line (default: detected)")
    p.add_argument("--valgrind", default="valgrind", metavar="PATH", help="the valgrind to run")
    p.add_argument("--json", metavar="FILE", help="write the results (pgascol-bench/1)")
    p.add_argument("--keep-dumps", metavar="DIR", help="copy callgrind's dump files (one per case, round "
                   "and rank; its desc line names them) into DIR, to read a case's cost by function with "
                   "callgrind_annotate")
    return p


# ---------------------------------------------------------------------------
# Rank side
# ---------------------------------------------------------------------------

def _count_library():
    """The C core's count functions (csrc/base/count.c), through ctypes."""
    from ..engine import _core
    lib = ctypes.CDLL(_core.__file__)
    lib.pgc_count_round_end.argtypes = [ctypes.c_char_p]
    return lib


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="python -m pgascol.tools.bench_callgrind worker")
    ap.add_argument("--ops", default=",".join(ALL_OPS))
    ap.add_argument("--sizes", default=QUICK_SIZES)
    ap.add_argument("--iters", type=int)
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--inject-slowdown")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    from mpi4py import MPI
    import gc
    import pgascol
    from . import bench_layer_cases
    from .bench_coll import make_case, tuned_state  # noqa: F401 (tuned_state: same module state)
    from ..engine import _core

    lib = _count_library()
    comm = MPI.COMM_WORLD
    me, P = comm.Get_rank(), comm.Get_size()
    if not lib.pgc_count_available():
        if me == 0:
            print("pgascol-bench: error: not under valgrind, or the C core was built without "
                  "<valgrind/callgrind.h>", file=sys.stderr)
        return 2
    team = pgascol.NodeTeam(comm)
    pcomm = pgascol.Comm(comm)
    ops, sizes = parse_ops(args.ops, ALL_OPS), parse_sizes(args.sizes)
    cases = [(op, s) for op in ops for s in case_sizes(op, sizes)]
    lib.pgc_count_start()
    rows = []
    for op, nbytes in cases:
        if op in LAYER_OPS:
            ours, free = bench_layer_cases.make_case(op, nbytes, pcomm)
        else:
            ours, free = make_case(op, nbytes, comm, team, pcomm)[0], None
        name = op.capitalize()      # a collective's row in pgascol.stats (none for the layers' cases)
        before = dict(pgascol.stats(pcomm).get(name, {}))
        for _ in range(WARMUP_CALLS - PACE_CALLS):
            ours()
        t0 = time.perf_counter()
        for _ in range(PACE_CALLS):
            ours()
        period = comm.allreduce(max(PACE_MIN_S, 2 * (time.perf_counter() - t0) / PACE_CALLS), op=MPI.MAX)
        path = _most_taken(before, pgascol.stats(pcomm).get(name, {}))
        iters = comm.allreduce(iters_for(op, nbytes, path, args.iters), op=MPI.MAX)    # one loop on every rank
        calls = injected([ours], args.inject_slowdown, op, nbytes)
        pace = comm.allreduce(paced(op, nbytes, path), op=MPI.LOR)
        before = dict(pgascol.stats(pcomm).get(name, {}))
        gc.collect()
        gc.disable()
        for r in range(-1, args.rounds):    # round -1: counted, not kept (first-round effects)
            comm.Barrier()
            if pace:        # from a time every rank agrees on, a little ahead
                _core.count_pace_setup(me, P, int(period * 1e9), comm.bcast(time.monotonic_ns() + 2000000))
            label = (LABEL % (op, nbytes, r, me)).encode()
            lib.pgc_count_round_begin()
            if pace:        # two loops: a no-op in count_pace's place would be counted
                pace_call = _core.count_pace
                for fn in itertools.islice(calls, iters):
                    pace_call()
                    fn()
            else:
                for fn in itertools.islice(calls, iters):
                    fn()
            lib.pgc_count_round_end(label)
        gc.enable()
        path = _most_taken(before, pgascol.stats(pcomm).get(name, {}))
        if free is not None:
            free()
        rows.append({"op": op, "bytes": nbytes, "path": path, "iters": iters, "paced": pace})
        if me == 0:
            print("[%d/%d] %-20s %6s  counted (%s)" % (len(rows), len(cases), op,
                                                      human(nbytes) if nbytes else "-", path), flush=True)
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "mpi_library": MPI.Get_library_version().strip().splitlines()[0].strip(),
                       "rounds": args.rounds, "cases": rows}, f)
    pcomm.Free()
    team.free()
    return 0


ALL_OPS = OPS + LAYER_OPS


def case_sizes(op, sizes):
    """The sizes op is counted at: Barrier one case without payload, a
    layer's operation its small sizes (bench_layer_cases.layer_sizes)."""
    if op == "barrier":
        return [0]
    return layer_sizes(op, sizes) if op in LAYER_OPS else sizes


def _most_taken(before, after):
    """The path a case's calls took most between two pgascol.stats tallies."""
    tally = {p: v - before.get(p, 0) for p, v in after.items()}
    return max(tally, key=tally.get) if any(tally.values()) else "-"


# ---------------------------------------------------------------------------
# Host side
# ---------------------------------------------------------------------------

_DESC = re.compile(r"^desc: Trigger: Client Request: (.*)$", re.M)
_TOTALS = re.compile(r"^(?:totals|summary): *(\d+)", re.M)
_LABEL = re.compile(r"pgascol-bench case=([\w.]+):(\d+) round=(-?\d+) rank=(\d+)")


def read_dumps(directory):
    """{(op, bytes, round, rank): instructions} from callgrind's dump files."""
    out = {}
    for path in glob.glob(os.path.join(directory, "cg.*")):
        with open(path, errors="replace") as f:
            text = f.read()
        d, t = _DESC.search(text), _TOTALS.search(text)
        if not d or not t:
            continue
        m = _LABEL.search(d.group(1))
        if m:
            out[(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))] = int(t.group(1))
    return out


def keep_dumps(directory, dest):
    """Copy the dumps of a job's counted rounds into dest, named by case."""
    os.makedirs(dest, exist_ok=True)
    for path in glob.glob(os.path.join(directory, "cg.*")):
        with open(path, errors="replace") as f:
            d = _DESC.search(f.read())
        m = d and _LABEL.search(d.group(1))
        if m:
            op, nbytes, r, k = m.groups()
            shutil.copy(path, os.path.join(dest, "%s-%s.round%s.rank%s.callgrind" % (op, nbytes, r, k)))
    print("# kept the dumps in %s (callgrind_annotate FILE reads one)" % dest)


def results_from(counts, job):
    """The pgascol-bench/1 rows of a count (read_dumps) and the worker's JSON."""
    P, rounds = job["np"], job["rounds"]
    rows = []
    for case in job["cases"]:
        op, nbytes, iters = case["op"], case["bytes"], case["iters"]
        by_rank = [[counts.get((op, nbytes, r, k)) for r in range(rounds)] for k in range(P)]
        if any(v is None for ranks in by_rank for v in ranks):
            raise BenchError("callgrind wrote no count for %s %s (a dump is missing)" % (op, human(nbytes)))
        samples = [sum(by_rank[k][r] for k in range(P)) / P / iters for r in range(rounds)]
        s = sorted(samples)
        rows.append({"op": op, "bytes": nbytes, "np": P, "impl": "pgascol", "path": case["path"],
                     "iters": iters, "paced": case.get("paced", False), "rounds": rounds,
                     "instructions": s[len(s) // 2], "instr_min": s[0], "instr_avg": sum(s) / len(s),
                     "instr_max": s[-1], "samples_instr": samples,
                     "instr_by_rank": [[v / iters for v in ranks] for ranks in by_rank]})
    return rows


def cmd_instructions(args, argv):
    valgrind = shutil.which(args.valgrind)
    if valgrind is None:
        raise BenchError(INSTALL_HINT)
    if (args.iters is not None and args.iters < 1) or args.rounds < 1 or args.np < 1:
        raise BenchError("--iters, --rounds and --np must be >= 1")
    ops = parse_ops(args.ops or ",".join(ALL_OPS), ALL_OPS)
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    parse_sizes(sizes)
    prefix, impl = find_launcher(args.mpi_launcher)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **PINNED_ENV)
    with tempfile.TemporaryDirectory(prefix="pgascol-cg-") as tmp:
        env["PGASCOL_CALIBRATION"] = os.path.join(tmp, "no-calibration.json")
        raw = os.path.join(tmp, "raw.json")
        command = [*prefix, "-n", str(args.np), valgrind, "--tool=callgrind", "--instr-atstart=no",
                   "--collect-atstart=no", "--callgrind-out-file=%s" % os.path.join(tmp, "cg.%p"),
                   "--dump-line=no", "--compress-strings=no", "--compress-pos=no", "-q",
                   *("--toggle-collect=%s" % fn for fn in UNCOUNTED + TYPE_LOOKUP + ALLOCATOR),
                   sys.executable, "-m", "pgascol.tools.bench_callgrind", "worker", "--ops", ",".join(ops),
                   "--sizes", sizes, "--rounds", str(args.rounds), "--json", raw]
        if args.iters:
            command += ["--iters", str(args.iters)]
        if args.inject_slowdown:
            command += ["--inject-slowdown", args.inject_slowdown]
        print("# launching: %s" % shlex.join(command), flush=True)
        probe = LoadProbe().start()
        rc = subprocess.call(command, env=env, stdin=subprocess.DEVNULL)
        if rc != 0 or not os.path.exists(raw):
            raise BenchError("the job under callgrind failed (exit status %s)" % rc)
        with open(raw) as f:
            job = json.load(f)
        results = results_from(read_dumps(tmp), job)
        conditions = probe.stop()
        if args.keep_dumps:
            keep_dumps(tmp, args.keep_dumps)
    saved = {k: os.environ.get(k) for k in PINNED_ENV}
    os.environ.update(PINNED_ENV)     # the fingerprint's env: what the ranks ran with
    try:
        meta = collect_meta(shlex.join(["pgascol-bench", *argv]), job["np"], None, job["mpi_library"],
                            shlex.join(prefix), impl, conditions)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    meta.update(measure="instructions", iters=args.iters, rounds=args.rounds, pinned_env=PINNED_ENV,
                valgrind=subprocess.run([valgrind, "--version"], capture_output=True, text=True).stdout.strip())
    doc = {"schema": SCHEMA, "meta": meta, "results": results}
    print("\n# pgascol-bench instructions: np=%d, %s calls per round, %d rounds; instructions per call, "
          "mean over the ranks" % (job["np"], args.iters or "%d paced, else %d (%d from %s)" % (
              ITERS_PACED, ITERS, ITERS_COPIED, human(COPIED)), args.rounds))
    print("%-20s %7s %14s %10s  %s" % ("op", "bytes", "instructions", "spread", "path"))
    for r in results:
        print("%-20s %7s %14.1f %9.3f%%  %s" % (r["op"], human(r["bytes"]) if r["bytes"] else "-",
                                               r["instructions"], (r["instr_max"] / r["instr_min"] - 1) * 100,
                                               r["path"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print("# wrote %s" % args.json)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker_main(sys.argv[2:]))
    sys.exit("usage: python -m pgascol.tools.bench_callgrind worker ... (pgascol-bench instructions)")
