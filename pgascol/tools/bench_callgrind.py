"""`pgascol-bench instructions`: instructions per call of pgascol's
collectives, counted under valgrind's callgrind, the engine's waits left out.

    pgascol-bench instructions [--np N] [--ops ...] [--sizes ...] [--iters 100] [--rounds 3]
                               [--quick] [--json FILE] [--inject-slowdown OP:BYTES:FRACTION]

Every rank runs under ``valgrind --tool=callgrind --instr-atstart=no
--collect-atstart=no`` (start-up runs uninstrumented). For each case the
worker warms the calls up, then each round zeroes the counters, collects
over `iters` calls of the pgascol side (on a pgascol.Comm) and dumps what
it counted under a label naming the case, round and rank (csrc/base/count.c
through ctypes). The engine's waits turn collection off while they last
(csrc/base/count.h), so a count does not depend on how long a rank waited
for its peers. What else could vary is pinned: PINNED_ENV (no learning, no
calibration file, no adaptive switches, the baseline SIMD loops, no
streaming stores) and PYTHONHASHSEED. The native MPI side is not counted
(MPI's progress loop spins for as long as its peers take).

The host reads the dumps: a case's sample per round is the mean over the
ranks of instructions per call (instr_by_rank has each rank's). The JSON is
a pgascol-bench/1 document with meta["measure"] = "instructions" and rows
{"op", "bytes", "np", "impl": "pgascol", "path", "iters", "rounds",
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

from .bench_coll import OPS, QUICK_SIZES, DEFAULT_SIZES, injected, parse_ops
from .bench_fingerprint import LoadProbe
from .bench_harness import SCHEMA, BenchError, collect_meta, find_launcher, human, parse_sizes

PINNED_ENV = {"PGASCOL_TUNE": "0", "PGASCOL_TUNE_SAVE": "0", "PGASCOL_ADAPT": "0", "PGASCOL_STREAM": "0",
              "PGASCOL_SIMD": "0", "PGASCOL_RECV_STREAM_MIN": "0", "PYTHONHASHSEED": "0"}
DEFAULT_ITERS = 100
DEFAULT_ROUNDS = 3
WARMUP_CALLS = 50     # past CPython's specialisation of the calling code
LABEL = "pgascol-bench case=%s:%d round=%d rank=%d"
INSTALL_HINT = ("valgrind is not installed: it is a Debian/Ubuntu package (sudo apt-get install "
                "valgrind; dnf install valgrind; on GitHub's ubuntu runners the same apt-get line)")


def add_parser(sub):
    p = sub.add_parser("instructions", help="count instructions per call under callgrind (waits left "
                                             "out): deterministic figures for a CI gate")
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--ops", help="comma-separated, from: %s (default: all)" % ",".join(OPS))
    p.add_argument("--sizes", help="bytes per rank (default %s; --quick %s)" % (DEFAULT_SIZES, QUICK_SIZES))
    p.add_argument("--iters", type=int, default=DEFAULT_ITERS, help="calls per round (default %d)"
                   % DEFAULT_ITERS)
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="rounds per case (default %d)"
                   % DEFAULT_ROUNDS)
    p.add_argument("--quick", action="store_true", help="the quick sweep's sizes (%s)" % QUICK_SIZES)
    p.add_argument("--inject-slowdown", metavar="OP:BYTES:FRACTION",
                   help="TEST ONLY: that case makes one extra call every 1/FRACTION calls")
    p.add_argument("--mpi-launcher", metavar="CMD", help="launcher command line (default: detected)")
    p.add_argument("--valgrind", default="valgrind", metavar="PATH", help="the valgrind to run")
    p.add_argument("--json", metavar="FILE", help="write the results (pgascol-bench/1)")
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
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--sizes", default=QUICK_SIZES)
    ap.add_argument("--iters", type=int, default=DEFAULT_ITERS)
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--inject-slowdown")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    from mpi4py import MPI
    import gc
    import pgascol
    from .bench_coll import make_case, tuned_state  # noqa: F401 (tuned_state: same module state)

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
    ops, sizes = parse_ops(args.ops), parse_sizes(args.sizes)
    cases = [(op, 0 if op == "barrier" else s) for op in ops for s in ([0] if op == "barrier" else sizes)]
    lib.pgc_count_start()
    rows = []
    for op, nbytes in cases:
        ours = make_case(op, nbytes, comm, team, pcomm)[0]
        for _ in range(WARMUP_CALLS):
            ours()
        calls = injected(itertools.repeat(ours), args.inject_slowdown, op, nbytes)
        name = op.capitalize()
        before = dict(pgascol.stats(pcomm).get(name, {}))
        gc.collect()
        gc.disable()
        for r in range(-1, args.rounds):    # round -1: counted, not kept (first-round effects)
            comm.Barrier()
            label = (LABEL % (op, nbytes, r, me)).encode()
            lib.pgc_count_round_begin()
            for fn in itertools.islice(calls, args.iters):
                fn()
            lib.pgc_count_round_end(label)
        gc.enable()
        tally = {p: v - before.get(p, 0) for p, v in pgascol.stats(pcomm).get(name, {}).items()}
        path = max(tally, key=tally.get) if any(tally.values()) else "-"
        rows.append({"op": op, "bytes": nbytes, "path": path})
        if me == 0:
            print("[%d/%d] %-20s %6s  counted (%s)" % (len(rows), len(cases), op,
                                                      human(nbytes) if nbytes else "-", path), flush=True)
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "mpi_library": MPI.Get_library_version().strip().splitlines()[0].strip(),
                       "iters": args.iters, "rounds": args.rounds, "cases": rows}, f)
    pcomm.Free()
    team.free()
    return 0


# ---------------------------------------------------------------------------
# Host side
# ---------------------------------------------------------------------------

_DESC = re.compile(r"^desc: Trigger: Client Request: (.*)$", re.M)
_TOTALS = re.compile(r"^(?:totals|summary): *(\d+)", re.M)
_LABEL = re.compile(r"pgascol-bench case=(\w+):(\d+) round=(-?\d+) rank=(\d+)")


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


def results_from(counts, job):
    """The pgascol-bench/1 rows of a count (read_dumps) and the worker's JSON."""
    P, iters, rounds = job["np"], job["iters"], job["rounds"]
    rows = []
    for case in job["cases"]:
        op, nbytes = case["op"], case["bytes"]
        by_rank = [[counts.get((op, nbytes, r, k)) for r in range(rounds)] for k in range(P)]
        if any(v is None for ranks in by_rank for v in ranks):
            raise BenchError("callgrind wrote no count for %s %s (a dump is missing)" % (op, human(nbytes)))
        samples = [sum(by_rank[k][r] for k in range(P)) / P / iters for r in range(rounds)]
        s = sorted(samples)
        rows.append({"op": op, "bytes": nbytes, "np": P, "impl": "pgascol", "path": case["path"],
                     "iters": iters, "rounds": rounds, "instructions": s[len(s) // 2],
                     "instr_min": s[0], "instr_avg": sum(s) / len(s), "instr_max": s[-1],
                     "samples_instr": samples,
                     "instr_by_rank": [[v / iters for v in ranks] for ranks in by_rank]})
    return rows


def cmd_instructions(args, argv):
    valgrind = shutil.which(args.valgrind)
    if valgrind is None:
        raise BenchError(INSTALL_HINT)
    if args.iters < 1 or args.rounds < 1 or args.np < 1:
        raise BenchError("--iters, --rounds and --np must be >= 1")
    ops = parse_ops(args.ops or ",".join(OPS))
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
                   # a small payload's call takes the GIL back only if it waited
                   # (pgascol/engine/_core.pyx, _leave): scheduling, left out too
                   "--toggle-collect=PyEval_RestoreThread",
                   sys.executable, "-m", "pgascol.tools.bench_callgrind", "worker", "--ops", ",".join(ops),
                   "--sizes", sizes, "--iters", str(args.iters), "--rounds", str(args.rounds), "--json", raw]
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
    print("\n# pgascol-bench instructions: np=%d, %d calls per round, %d rounds; instructions per call, "
          "mean over the ranks" % (job["np"], args.iters, args.rounds))
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
