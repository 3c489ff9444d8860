"""`pgascol-bench ab`: two builds of pgascol timed interleaved in one job, and
the verdict of the new one against the base.

    pgascol-bench ab --base SIDE --new SIDE [--quick] [--np N] [--ops ...] [--sizes ...]
                     [--blocks 24] [--rounds 2] [--min-effect 0.10] [--json-base F] [--json-new F]
                     [--markdown F] [--junit F] [--plot F.png] [--verdict-json F] [--strict]

A SIDE is a Python interpreter (a file), a virtual environment (a
directory with bin/python) or a git revision of the repository in the
current directory (built into a temporary worktree with `python setup.py
build_ext --inplace`, run with this interpreter). Both installs must have
this pgascol-bench (its worker's --iters-file, --only-ours and --cases).

How it measures: one short job of the base side picks each case's calls per
round (a round lasting ~10 ms, ~20 ms without --quick); then --blocks jobs
alternate the sides A B B A A B B A ..., each timing every case --rounds
rounds with those same calls per round, pgascol alone (no native side), on
pinned paths (PINNED_ENV: no learning, no calibration file, no adaptive
switches), so the sides differ by their build only. Every round's time is
kept (samples_us); each case is decided (bench_stats.decide) on one sample
per job, its best round (block_samples_us): the rounds of one job share
its scheduling (which CPUs its ranks got, beside what), so they are not
independent samples, and the jobs are.
Cases flagged as a regression or inconclusive are measured again in as many
fresh blocks and decided on those samples alone, corrected for the cases
measured again (new data, independent of the first pass that chose them). Exit
status as `pgascol-bench verdict`: 0, 1 regression, 2 error, 3 inconclusive.
"""
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from .bench_coll import OPS, QUICK_SIZES, DEFAULT_SIZES, QUICK_TARGET_MS, DEFAULT_TARGET_MS, parse_ops
from .bench_fingerprint import LoadProbe
from .bench_harness import SCHEMA, BenchError, find_launcher, parse_sizes
from .bench_verdict import add_verdict_options, judge, write_reports

# What the engine would otherwise learn or adapt while it runs: pinned, so
# both sides take the built-in paths whatever the other side measured.
PINNED_ENV = {"PGASCOL_TUNE": "0", "PGASCOL_TUNE_SAVE": "0", "PGASCOL_ADAPT": "0", "PGASCOL_STREAM": "0"}
PATTERN = "ABBA"


def add_parser(sub):
    p = sub.add_parser("ab", help="time two builds interleaved in one job and decide; exit 0 no "
                                   "regression, 1 regression, 2 error, 3 inconclusive")
    p.add_argument("--base", required=True, metavar="SIDE", help="python, venv directory or git revision")
    p.add_argument("--new", required=True, metavar="SIDE", help="python, venv directory or git revision")
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--ops", help="comma-separated, from: %s (default: all)" % ",".join(OPS))
    p.add_argument("--sizes", help="bytes per rank (default %s; --quick %s)" % (DEFAULT_SIZES, QUICK_SIZES))
    p.add_argument("--blocks", type=int, default=24, help="jobs, alternating A B B A ... (default 24)")
    p.add_argument("--rounds", type=int, default=2, help="rounds per case in each block (default 2)")
    p.add_argument("--quick", action="store_true", help="the quick sweep's sizes and ~10 ms rounds")
    p.add_argument("--unpinned", action="store_true",
                   help="let the engine learn and adapt its paths (default: pinned, PINNED_ENV)")
    p.add_argument("--no-remeasure", action="store_true", help="decide on the first pass alone")
    p.add_argument("--inject-slowdown", metavar="OP:BYTES:FRACTION",
                   help="TEST ONLY: the new side's worker makes that case's pgascol calls FRACTION more "
                        "often (bench_coll.injected), to check that the gate catches it")
    p.add_argument("--mpi-launcher", metavar="CMD", help="launcher command line (default: detected)")
    p.add_argument("--json-base", metavar="FILE", help="write the base side's samples (pgascol-bench/1)")
    p.add_argument("--json-new", metavar="FILE", help="write the new side's samples (pgascol-bench/1)")
    add_verdict_options(p)
    return p


class Side:
    """One install: the interpreter that runs its worker and the environment."""

    def __init__(self, label, spec, tmp):
        self.label, self.spec = label, spec
        self.env = dict(os.environ)
        if os.path.isfile(spec) and os.access(spec, os.X_OK):
            self.python = spec
        elif os.path.isfile(os.path.join(spec, "bin", "python")):
            self.python = os.path.join(spec, "bin", "python")
        else:
            self.python = sys.executable
            self.env["PYTHONPATH"] = build_revision(spec, os.path.join(tmp, label))
        # start from the same state every time: the calibration file of this
        # job only (never written: PGASCOL_TUNE_SAVE=0)
        self.env["PGASCOL_CALIBRATION"] = os.path.join(tmp, "no-calibration.json")
        self.env["PYTHONUNBUFFERED"] = "1"

    def fingerprint(self, np_):
        out = subprocess.run([self.python, "-m", "pgascol.tools.bench_fingerprint", str(np_)],
                             env=self.env, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise BenchError("%s side (%s): cannot import pgascol: %s" % (
                self.label, self.spec, out.stderr.strip().splitlines()[-1:] or "?"))
        return json.loads(out.stdout)


def build_revision(rev, where):
    """A worktree of git revision `rev` at `where`, its extensions built in
    place; returns its path (for PYTHONPATH)."""
    try:
        subprocess.run(["git", "rev-parse", "--verify", rev + "^{commit}"], check=True,
                       capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        raise BenchError("%r is neither a Python interpreter, a virtual environment nor a git "
                         "revision of the repository here" % rev) from None
    subprocess.run(["git", "worktree", "add", "--detach", where, rev], check=True, capture_output=True)
    print("# building %s in %s" % (rev, where), flush=True)
    if importlib.util.find_spec("Cython") is not None:    # a checkout's environment: build in place
        command, path = [sys.executable, "setup.py", "build_ext", "--inplace", "-q"], where
    else:
        # an environment pip installed pgascol into has no Cython: pip builds
        # the revision with pyproject.toml's build requirements, into a
        # directory of its own
        path = os.path.join(where, "_installed")
        command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", path, where]
    r = subprocess.run(command, cwd=where, capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError("building %s failed: %s" % (rev, r.stderr.strip()[-500:]))
    return path


def remove_worktrees(tmp, sides):
    for side in sides:
        if side.env.get("PYTHONPATH", "").startswith(tmp):     # built from a revision
            subprocess.run(["git", "worktree", "remove", "--force", os.path.join(tmp, side.label)],
                           capture_output=True)


def run_block(prefix, side, np_, worker, tmp):
    """One job of `side`'s worker; the JSON its rank 0 wrote."""
    raw = os.path.join(tmp, "block.json")
    if os.path.exists(raw):
        os.remove(raw)
    command = [*prefix, "-n", str(np_), side.python, "-m", "pgascol.tools.bench", "worker", *worker,
               "--json", raw]
    r = subprocess.run(command, env=side.env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(raw):
        raise BenchError("the %s side's job failed (exit status %s): %s\n  command: %s" % (
            side.label, r.returncode, (r.stderr or r.stdout).strip()[-800:], shlex.join(command)))
    with open(raw) as f:
        return json.load(f)


def interleave(prefix, sides, np_, worker, blocks, rounds, tmp, inject=None):
    """blocks jobs in the order A B B A ...; {side label: {case key:
    {"samples", "blocks", "paths", "iters"}}} (blocks: each job's best round)."""
    got = {"A": {}, "B": {}}
    for i in range(blocks):
        label = PATTERN[i % len(PATTERN)]
        extra = ["--inject-slowdown", inject] if inject and label == "B" else []
        job = run_block(prefix, sides[label], np_, [*worker, "--rounds", str(rounds), *extra], tmp)
        for row in job["results"]:
            key = (row["op"], row["bytes"], row["np"], row["impl"])
            acc = got[label].setdefault(key, {"samples": [], "blocks": [], "paths": {}, "iters": row["iters"]})
            acc["samples"] += row["samples_us"]
            acc["blocks"].append(min(row["samples_us"]))
            acc["paths"][row["path"]] = acc["paths"].get(row["path"], 0) + 1
        print("# block %d/%d (%s: %s) done" % (i + 1, blocks, label, sides[label].spec), flush=True)
    return got


def side_doc(acc, meta):
    """A pgascol-bench/1 document of one side's accumulated samples."""
    results = []
    for (op, nbytes, np_, impl), a in sorted(acc.items()):
        s = a["samples"]
        path = max(a["paths"], key=a["paths"].get)
        results.append({"op": op, "bytes": nbytes, "np": np_, "impl": impl, "t_min_us": min(s),
                        "t_avg_us": sum(s) / len(s), "t_max_us": max(s), "path": path,
                        "paths": a["paths"], "iters": a["iters"], "rounds": len(s), "samples_us": s,
                        "block_samples_us": a["blocks"]})
    return {"schema": SCHEMA, "meta": meta, "results": results}


def cmd_ab(args, argv):
    if args.blocks < 2 or args.rounds < 1 or args.np < 1:
        raise BenchError("--blocks must be >= 2, --rounds and --np >= 1")
    ops = parse_ops(args.ops or ",".join(OPS))
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    parse_sizes(sizes)
    target = QUICK_TARGET_MS if args.quick else DEFAULT_TARGET_MS
    prefix, impl = find_launcher(args.mpi_launcher)
    started = time.time()
    tmp = tempfile.mkdtemp(prefix="pgascol-ab-")
    sides = {}
    try:
        sides = {"A": Side("base", args.base, tmp), "B": Side("new", args.new, tmp)}
        if not args.unpinned:
            for side in sides.values():
                side.env.update(PINNED_ENV)
        prints = {k: s.fingerprint(args.np) for k, s in sides.items()}
        probe = LoadProbe().start()
        worker = ["--via", "comm", "--only-ours", "--ops", ",".join(ops), "--sizes", sizes]
        # the calls per round of every case, picked once (base side), used by both
        calib = run_block(prefix, sides["A"], args.np, [*worker, "--rounds", "1", "--target-ms",
                                                        str(target)], tmp)
        pinned = {"%s:%d" % (r["op"], r["bytes"]): r["iters"] for r in calib["results"]}
        iters_file = os.path.join(tmp, "iters.json")
        with open(iters_file, "w") as f:
            json.dump(pinned, f)
        worker += ["--iters-file", iters_file]
        print("# calls per round pinned for %d cases; %d blocks of %d rounds, order %s..."
              % (len(pinned), args.blocks, args.rounds, PATTERN), flush=True)
        got = interleave(prefix, sides, args.np, worker, args.blocks, args.rounds, tmp,
                         args.inject_slowdown)
        conditions = probe.stop()
        docs = []
        for label in "AB":
            fp = dict(prints[label], conditions=conditions)
            fp["machine"]["mpi_library"] = calib["mpi_library"]
            meta = {"command": shlex.join(["pgascol-bench", *argv]), "np": args.np, "measure": "time",
                    "ab_side": sides[label].label, "ab_spec": sides[label].spec, "ab_blocks": args.blocks,
                    "ab_rounds": args.rounds, "pinned_env": None if args.unpinned else PINNED_ENV,
                    "mpi_library": calib["mpi_library"], "mpi_impl": impl, "fingerprint": fp,
                    "pgascol": fp["build"]["pgascol"], "git_revision": fp["build"]["git_revision"],
                    "cpu_model": fp["machine"]["cpu_model"]}
            docs.append(side_doc(got[label], meta))
        v = judge(docs[0], docs[1], args.min_effect, args.alpha, args.strict)
        if not args.no_remeasure and not v["strict_stop"]:
            v = remeasure(v, docs, prefix, sides, args, worker, tmp)
        for path, doc in ((args.json_base, docs[0]), (args.json_new, docs[1])):
            if path:
                with open(path, "w") as f:
                    json.dump(doc, f, indent=1)
                    f.write("\n")
                print("# wrote %s" % path)
        print("# A/B of %d cases in %.0f s; load during it: %s" % (
            len(v["cases"]), time.time() - started, json.dumps(conditions)))
        write_reports(v, args, title="pgascol-bench ab: %s against %s" % (args.new, args.base))
        return v["status"]
    finally:
        remove_worktrees(tmp, sides.values())
        shutil.rmtree(tmp, ignore_errors=True)


def remeasure(v, docs, prefix, sides, args, worker, tmp):
    """Measure the flagged and undecided cases again in fresh blocks and
    decide them on the new samples alone (corrected for the cases measured
    again)."""
    again = [r for r in v["cases"] if r["verdict"] in ("regression", "inconclusive")]
    if not again:
        return v
    cases = ",".join("%s:%d" % (r["key"][0], r["key"][1]) for r in again)
    print("# re-measuring %d case(s): %s" % (len(again), ", ".join(r["case"] for r in again)), flush=True)
    w = [x for x in worker]
    w[w.index("--ops"):w.index("--ops") + 4] = []            # --ops OPS --sizes SIZES
    got = interleave(prefix, sides, args.np, [*w, "--cases", cases], args.blocks, args.rounds, tmp,
                     args.inject_slowdown)
    second = {tuple(r["key"]): (got["A"].get(tuple(r["key"]), {}).get("blocks"),
                                got["B"].get(tuple(r["key"]), {}).get("blocks")) for r in again}
    for doc, label in zip(docs, "AB"):
        for row in doc["results"]:
            key = (row["op"], row["bytes"], row["np"], row["impl"])
            if key in second:
                row["remeasured_samples_us"] = got[label][key]["samples"]
                row["remeasured_block_samples_us"] = got[label][key]["blocks"]
    # The second pass decides, on its new samples alone, corrected for the
    # cases it measures: its data are independent of the first pass's that
    # chose them, so that correction alone bounds its false regressions.
    v2 = judge(docs[0], docs[1], args.min_effect, args.alpha, args.strict, samples=second)
    by_case = {r["case"]: r for r in v2["cases"]}
    for r in v["cases"]:
        if r["case"] not in by_case:      # not measured again
            continue
        r2 = by_case[r["case"]]
        first, again_verdict = r["verdict"], r2["verdict"]
        if first == "regression" and again_verdict != "regression":
            r2 = dict(r2, reason="not confirmed on re-measure: " + r2["reason"])
        else:
            r2 = dict(r2, reason="re-measured (first: %s): %s" % (first, r2["reason"]))
        r.update({k: r2[k] for k in ("verdict", "ratio", "p_slower", "p_adjusted", "p_bounded",
                                     "spread", "reason", "base_median", "new_median")})
    from .bench_verdict import status_of
    v["status"] = status_of(v, args.strict)
    v["remeasured"] = [r["case"] for r in again]
    return v
