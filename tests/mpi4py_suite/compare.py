"""Run mpi4py's whole test suite plain and in zero-code mode and fail on any
test whose outcome differs (see README.md):

    python tests/mpi4py_suite/compare.py --np 2 [--launcher "mpiexec"] [--timeout 900]

Each run is `LAUNCHER -n NP python [-m pgascol] outcomes.py OUTDIR`, bounded by
PGASCOL_TIMEOUT inside and by --timeout around it. A test's outcome is compared
rank by rank; a test one run did not finish counts as "not run" (a hang or a
crash). Outcomes that are the same in both runs (environment failures) pass.
Exit status 0 when nothing differs except the tests in ACCEPTED."""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "outcomes.py")

# Differences known and documented (README.md, section on the drop-in mode):
# test id -> reason. Nothing broader than named tests.
ACCEPTED = {}


def run(mode, np_, launcher, timeout, outdir):
    """One launch of the suite; returns (exit status or "timeout", stderr tail).
    A run that outlives `timeout` is asked where its ranks are (SIGUSR1: each
    writes its Python stacks, outcomes.py) before it is killed; the stacks
    follow the tail."""
    python = [sys.executable] + (["-m", "pgascol"] if mode == "zero-code" else [])
    env = {**os.environ, "PGASCOL_TIMEOUT": os.environ.get("PGASCOL_TIMEOUT", "30")}
    cmd = [*launcher, "-n", str(np_), *python, RUNNER, outdir]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        ranks = _ranks_of(outdir, proc.pid)
        for rank in ranks:
            _signal(rank, signal.SIGUSR1)
        time.sleep(2)
        for rank in ranks:
            _signal(rank, signal.SIGKILL)
        proc.kill()
        _, err = proc.communicate()
        return "timeout", (err or "")[-3000:] + _stacks(outdir, np_)
    return proc.returncode, err[-3000:]


def _ranks_of(outdir, launcher_pid):
    """The live processes running this run's outcomes.py (the ranks, not
    the launcher, whose command line names it too)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmdline = p.info["cmdline"] or []
        if RUNNER in cmdline and outdir in cmdline and p.pid != launcher_pid:
            found.append(p)
    return found


def _signal(process, signum):
    try:
        process.send_signal(signum)
    except psutil.NoSuchProcess:
        pass        # it ended meanwhile


def _stacks(outdir, np_):
    """Each rank's stacks as it wrote them on SIGUSR1 (nothing if it did not)."""
    text = ""
    for rank in range(np_):
        path = os.path.join(outdir, "stack-%d.txt" % rank)
        if os.path.exists(path) and os.path.getsize(path):
            with open(path) as f:
                text += "\n--- rank %d, where it was when the run timed out:\n%s" % (rank, f.read()[-4000:])
    return text


def outcomes(outdir, np_):
    """{(rank, test id): outcome}; a test started but not ended is "not run"."""
    result = {}
    for rank in range(np_):
        path = os.path.join(outdir, "rank-%d.jsonl" % rank)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                record = json.loads(line)
                if "start" in record:
                    result.setdefault((rank, record["start"]), "not run")
                elif "id" in record:
                    key = (rank, record["id"])
                    if result.get(key) in (None, "not run", "pass"):  # a failed subtest stays
                        result[key] = record["outcome"]
    return result


def slowest(outdir, count=8):
    """The `count` longest tests of rank 0's run, [(seconds, test id)]."""
    began, took = {}, []
    path = os.path.join(outdir, "rank-0.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for record in map(json.loads, f):
                if "start" in record and "t" in record:
                    began[record["start"]] = record["t"]
                elif record.get("id") in began and "t" in record:
                    took.append((record["t"] - began.pop(record["id"]), record["id"]))
    return sorted(took, reverse=True)[:count]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--launcher", default="mpiexec", help="the launcher command (split like a shell)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    args = parser.parse_args(argv)
    launcher = shlex.split(args.launcher)
    found, status = {}, {}
    with tempfile.TemporaryDirectory(prefix="mpi4py-suite-") as tmp:
        for mode in ("plain", "zero-code"):
            outdir = os.path.join(tmp, mode)
            os.mkdir(outdir)
            began = time.monotonic()
            status[mode], tail = run(mode, args.np, launcher, args.timeout, outdir)
            found[mode] = outcomes(outdir, args.np)
            print("%s: exit %s, %d outcomes, %.0f s" % (mode, status[mode], len(found[mode]),
                                                         time.monotonic() - began), flush=True)
            print("  slowest: " + ", ".join("%s %.1f s" % (test, t) for t, test in slowest(outdir)))
            if status[mode] != 0:
                print(tail)
    plain, zero = found["plain"], found["zero-code"]
    differ = sorted(k for k in plain.keys() | zero.keys() if plain.get(k, "not run") != zero.get(k, "not run"))
    unexpected = [k for k in differ if k[1] not in ACCEPTED]
    for rank, test in differ:
        note = "accepted: " + ACCEPTED[test] if test in ACCEPTED else "DIFFERS"
        print("rank %d %s: plain %s, zero-code %s (%s)" % (
            rank, test, plain.get((rank, test), "not run"), zero.get((rank, test), "not run"), note))
    if not plain:
        print("the plain run recorded nothing")
        return 1
    print("%d tests per run, %d differences, %d not accepted" % (len(plain), len(differ), len(unexpected)))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
