"""What every pgascol-bench benchmark shares: the collectives sweep
(bench_coll.py, `pgascol-bench run`) and the per-layer ones (bench_pgas.py,
bench_upc.py, bench_blas.py, bench_sparse.py).

- the pgascol-bench/1 schema (SCHEMA, docs/PERFORMANCE.md) and BenchError,
  the one-line error of every subcommand (run_command);
- sizes: parse_size, parse_sizes, human;
- measuring on the ranks: llc_size, time_calls, the memcpy floor
  (memcpy_floor, memcpy_calls) and stats_row, one record of the schema;
- the line that describes a run (describe_run, with iters_text, cache_text
  and fresh_text, which the sweep's worker prints too);
- the host side: find_launcher, the run's meta (collect_meta), the MPI job
  (run_job, launch, run_worker_job; with --background's job beside it,
  bench_background), writing the results (write_results,
  report) and the plots' helpers (_matplotlib, plot_destination);
- `pgascol-bench compare`: load_doc, results_by_case, is_regression,
  cmd_compare.

This module imports no other benchmark module (they import it; bench.py, the
command line, imports them), and importing it loads neither MPI nor the C
extension (tests/mpi_harness.py uses find_launcher).
"""
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
LLC_FALLBACK = 32 << 20      # last-level cache assumed when sysfs does not tell
OFF_CACHE_FACTOR = 2         # --off-cache: each side's buffer sets cover 2 x the LLC
CACHE_LINE = 64              # --fresh stores one byte into every line of this size


class BenchError(Exception):
    """A bad argument or an unusable environment: reported in one line."""


def run_command(command, args, argv):
    """command(args, argv), a subcommand, as pgascol-bench runs it: a
    BenchError is one line on stderr and exit status 2, any other
    exception its traceback and exit status 2, ^C exit status 130."""
    try:
        return command(args, argv)
    except BenchError as e:
        print("pgascol-bench: error: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:
        # a bug must not read as a verdict (1 is "a regression")
        import traceback
        traceback.print_exc()
        print("pgascol-bench: error: unexpected failure (above)", file=sys.stderr)
        return 2


# ---------------------------------------------------------------------------
# Sizes
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


def human(n):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return "%d%s" % (n // size, unit)
    return str(n)


# ---------------------------------------------------------------------------
# Rank side: measuring
# ---------------------------------------------------------------------------

def llc_size(root="/sys/devices/system/cpu/cpu0/cache"):
    """(bytes, source) of the last-level cache (topology.last_level_cache);
    (LLC_FALLBACK, "fallback") when sysfs says nothing."""
    from ..node.topology import last_level_cache
    size = last_level_cache(root)
    return (size, "sysfs") if size else (LLC_FALLBACK, "fallback")


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


def memcpy_calls(nbytes, sets=1):
    """An endless iterator of closures, each one numpy copyto of nbytes
    (pre-faulted buffers), rotating through `sets` pairs: the floor timed
    like a collective (time_calls), in the same rounds."""
    import numpy as np
    n = max(nbytes // 8, 1)
    src, dst = np.ones(n * sets), np.ones(n * sets)
    return itertools.cycle([lambda d=dst[i * n:(i + 1) * n], s=src[i * n:(i + 1) * n]: np.copyto(d, s)
                            for i in range(sets)])


def stats_row(impl, op, nbytes, P, times, iters, path, floor, sets, store=None):
    """One pgascol-bench/1 record of a case and side from its rounds' times
    (seconds per call; floor and store in seconds too)."""
    return {"op": op, "bytes": nbytes, "np": P, "impl": impl,
            "t_min_us": min(times) * 1e6, "t_avg_us": sum(times) / len(times) * 1e6,
            "t_max_us": max(times) * 1e6, "path": path, "memcpy_us": floor * 1e6,
            "iters": iters, "rounds": len(times), "buffer_sets": sets,
            "store_us": None if store is None else store * 1e6,
            "samples_us": [t * 1e6 for t in times]}


# ---------------------------------------------------------------------------
# Describing a run
# ---------------------------------------------------------------------------

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


def collect_meta(command, np_, vns, mpi_library, launcher, impl, conditions=None):
    """The run's meta; its fingerprint (bench_fingerprint) is this
    interpreter's, with `conditions` (LoadProbe.stop()) where measured."""
    import numpy
    from .bench_fingerprint import fingerprint
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
            "command": command, "np": np_, "virtual_node_size": vns,
            "fingerprint": dict(fingerprint(np_, mpi_library), **(
                {"conditions": conditions} if conditions else {}))}


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


def launch(args, argv, np_, module, worker):
    """Run `python -m module worker WORKER... --json RAW` on np_ ranks under the
    launcher (args.mpi_launcher, args.virtual_node_size), echoing its output;
    returns (the job's JSON, the run's meta)."""
    from .bench_background import background_job
    from .bench_fingerprint import LoadProbe
    prefix, impl = find_launcher(args.mpi_launcher)
    with background_job(args.background, prefix, args.background_np) as bg:
        probe = LoadProbe().start()
        rc, job = run_job(prefix, np_, args.virtual_node_size, [module, "worker", *worker])
        conditions = probe.stop()
    if rc != 0 or job is None:
        raise BenchError("the MPI job failed (exit status %s); see its output above" % rc)
    meta = collect_meta(shlex.join(["pgascol-bench", *argv]), job["np"], args.virtual_node_size,
                        job["mpi_library"], shlex.join(prefix), impl, conditions)
    meta["background"] = bg
    return job, meta


def run_worker_job(args, argv, module, worker_args, env=None):
    """Launch `module`'s worker (``python -m <module> worker ...``) on
    args.np ranks (default 2; args.virtual_node_size: PGASCOL_NODE_SIZE)
    with worker_args and --json, wait for it, and return (the JSON rank 0
    wrote, the pgascol-bench/1 meta of the run). BenchError when it failed."""
    from .bench_background import background_job
    from .bench_fingerprint import LoadProbe
    prefix, impl = find_launcher(args.mpi_launcher)
    env = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1")
    with background_job(args.background, prefix, args.background_np, env) as bg, \
            tempfile.TemporaryDirectory(prefix="pgascol-bench-") as tmp:
        if args.virtual_node_size:
            env["PGASCOL_NODE_SIZE"] = str(args.virtual_node_size)
        probe = LoadProbe().start()
        raw = os.path.join(tmp, "raw.json")
        command = [*prefix, "-n", str(args.np or 2), sys.executable, "-m", module, "worker", *worker_args,
                   "--json", raw]
        print("# launching: %s" % shlex.join(command), flush=True)
        rc = subprocess.call(command, env=env, stdin=subprocess.DEVNULL)
        conditions = probe.stop()
        if rc != 0 or not os.path.exists(raw):
            raise BenchError("the MPI job failed (exit status %s)" % rc)
        with open(raw) as f:
            job = json.load(f)
    meta = collect_meta(shlex.join(["pgascol-bench", *argv]), job["np"], args.virtual_node_size,
                        job["mpi_library"], shlex.join(prefix), impl, conditions)
    meta["background"] = bg
    return job, meta


def write_results(path, meta, results):
    """The pgascol-bench/1 document of a run, when a path is given."""
    if path:
        with open(path, "w") as f:
            json.dump({"schema": SCHEMA, "meta": meta, "results": results}, f, indent=1)
            f.write("\n")
        print("# wrote %s" % path)


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


def best_and_worst(row):
    """(best, worst round) of a row: t_min_us, t_max_us, or in an
    instruction count (bench_callgrind) instr_min, instr_max."""
    if "t_min_us" in row:
        return row["t_min_us"], row["t_max_us"]
    return row["instr_min"], row["instr_max"]


def is_regression(base, new, threshold):
    """The rule of `compare`: slower than the threshold AND beyond the
    spread of the base run (its slowest round)."""
    (b_min, b_max), (n_min, _) = best_and_worst(base), best_and_worst(new)
    return n_min > b_min * (1 + threshold) and n_min > b_max


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
        (b_min, b_max), (n_min, _) = best_and_worst(base[k]), best_and_worst(new[k])
        b, n = {"t_min_us": b_min, "t_max_us": b_max}, {"t_min_us": n_min}
        change = n_min / b_min - 1 if b_min > 0 else float("nan")
        flag = ""
        if k[3] in OURS:
            if is_regression(base[k], new[k], args.threshold):
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
