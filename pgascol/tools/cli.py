"""The `pgascol` command: `pgascol info` describes what pgascol sees and would
do on this machine (run it alone, or under mpiexec to see a real team)."""
import argparse
import os
import platform
import sys

from ..errors import ArgumentError

# The engine, the calibration and pgascol.upc are imported by the commands
# that use them: zero-code mode (a script) starts without them (numpy and
# pgascol.upc cost 0.3 s of a job's start-up).


def _mpi_line():
    from mpi4py import MPI
    import mpi4py
    lib = MPI.Get_library_version().strip().splitlines()[0].strip()
    return "%s (mpi4py %s, MPI %d.%d)" % (lib, mpi4py.__version__, *MPI.Get_version())


def info(args):
    from mpi4py import MPI
    from .. import __version__
    from ..engine import _core
    from ..node import config
    from ..node.team import NodeTeam
    from ..upc import defaults as upc_defaults

    comm = MPI.COMM_WORLD
    team = NodeTeam(comm)
    d = team.describe()
    if comm.Get_rank() != 0:
        team.free()
        return 0
    out = sys.stdout
    out.write("pgascol %s  (Python %s, %s %s)\n" % (__version__, platform.python_version(),
                                                  platform.system(), platform.release()))
    out.write("MPI:        %s\n" % _mpi_line())
    import psutil
    topo = team.topology
    out.write("machine:    %s  [%s]; %d physical / %d logical cores online, %.1f GiB memory\n" % (
        topo.summary(), topo.source, psutil.cpu_count(logical=False) or 0, psutil.cpu_count() or 0,
        psutil.virtual_memory().total / 2**30))
    out.write("job:        %d rank(s) on %d node(s)%s; this node: %d rank(s) on %d CPU(s)%s\n" % (
        d["ranks"], d["nodes"],
        " (virtual nodes of %d)" % config.node_size() if config.node_size() else "",
        d["local_size"], d["cpus_available"], ", OVERSUBSCRIBED" if d["oversubscribed"] else ""))
    kind = ("memfd, never named in /dev/shm" if d["segment_kind"] == "memfd" else
            "/dev/shm name removed once attached" + (" (memfd unavailable)" if d["config"]["segment"] == "memfd" else ""))
    out.write("segment:    %d KiB per node, 0600, %s\n" % (d["segment_bytes"] // 1024, kind))
    if d["local_size"] > 1:
        cma = "available (probed between the node's ranks)" if d["cma"] else "UNAVAILABLE: " + d["cma_reason"]
    else:
        ok, why = _core.cma_probe_fork()
        cma = ("available (probed with a forked process)" if ok else "UNAVAILABLE: " + why)
        cma += "" if d["cma"] else "; disabled for teams: " + d["cma_reason"]
    out.write("single copy: %s\n" % cma)
    cfg = d["config"]
    wait = ("spin %.0f us (%d pauses), then yield %.0f us, then futex sleep" %
            (cfg["spin_ns"] / 1e3, cfg["spin_iters"], cfg["yield_ns"] / 1e3))
    out.write("waits:      %s; timeout %.0f s; shared futex words, woken only when someone sleeps\n"
              % (wait, cfg["timeout_s"]))
    out.write("thresholds: inline <= %d B; copy-in/copy-out chunks of %d KiB (exchanges: %d KiB) "
              "through %d KiB per rank\n" % (cfg["inline_max"], cfg["chunk_bytes"] // 1024,
                                             cfg["xchg_chunk_bytes"] // 1024, cfg["staging_bytes"] // 1024))
    window = cfg["staging_bytes"] // (4 * d["local_size"])  # per block, as coll_reduce.c plans
    out.write("reductions: partitioned copy-in/copy-out, each block in windows of %d KiB%s\n" % (
        window // 1024, "; whole in one window up to %d KiB (oversubscribed)" % (2 * window // 1024)
        if cfg["reduce_one_window"] else ""))
    tree = cfg["bcast_tree_min"]
    out.write("bcast:      %s\n" % ("flat pull at every team size" if not tree else
                                     "flat pull below %d ranks, pipelined %d-nomial tree from %d (this team: %s)"
                                     % (tree, cfg["bcast_radix"], tree,
                                        "tree" if d["local_size"] >= tree else "flat")))
    _tuning_lines(out, cfg, d)
    out.write("staging:    written with streaming stores %s (PGASCOL_STREAM)\n" % (
        ("never", "while measured 3x cheaper than ordinary stores", "always")[cfg["stream"]]))
    out.write("receiving:  %s (PGASCOL_RECV_STREAM_MIN)\n" % (
        "streaming stores once a block reaches %s" % _human(cfg["recv_stream_min"]) if cfg["recv_stream_min"]
        else "ordinary stores"))
    cpu = _core.cpu_simd()
    out.write("vectors:    copies and reduction kernels use %s (PGASCOL_SIMD=%d; this CPU: %s)\n" % (
        "AVX2" if team.core.simd == "avx2" else "the baseline loops", cfg["simd"],
        "AVX2" if cpu == "avx2" else "no AVX2"))
    from ..upc import plan as upc_plan
    upc_source = ("calibrated: " + upc_defaults.path()) if upc_defaults.load() else \
        "built in (no calibration file; run `mpiexec -n 2 pgascol calibrate --upc-only`)"
    out.write("upc:        default algorithm by size [%s]; PGASCOL_UPC_<COLLECTIVE> overrides\n" % upc_source)
    measured = sorted({s for shapes in upc_defaults.load().values() for s in shapes if ":" in s})
    teams = [("one node", 1, 0), ("across nodes", 2, 0)] + [
        ("%s ranks %s" % (s.split(":")[1], "on one node" if s.startswith("node:") else "across nodes"),
         1 if s.startswith("node:") else 2, int(s.split(":")[1])) for s in measured]
    for shape, nnodes, size in teams:
        out.write("            %s: %s\n" % (shape, "; ".join(
            "%s %s" % kv for kv in upc_plan.defaults(nnodes, size).items())))
    set_vars = [k for k in list(config.VARIABLES) if k in os.environ] + \
        [k for k in os.environ if k.startswith(("PGASCOL_CMA_MIN_", "PGASCOL_UPC_"))]
    out.write("environment: %s\n" % (", ".join("%s=%s" % (k, os.environ[k]) for k in set_vars) or
                                     "no PGASCOL_* variable set (defaults)"))
    team.free()
    return 0


def _tuning_lines(out, cfg, d):
    """The path table in force: the tuner, the calibration file's table for
    this machine (each entry's source), and the built-in thresholds under it."""
    tune = os.environ.get("PGASCOL_TUNE", "1").strip() not in ("0", "off", "")
    out.write("paths:      %s\n" % (
        "learned per collective and size class on one node: copy-in/copy-out, single copy and MPI's "
        "own collective (%s) measured in the job's calls, the fastest taken (PGASCOL_TUNE=1; inline "
        "sizes and calls across nodes have one path)" % (
            "off: PGASCOL_TUNE_MPI=0" if os.environ.get("PGASCOL_TUNE_MPI", "1").strip() in ("0", "off", "")
            else "not for the v forms") if tune
        else "the built-in thresholds only (PGASCOL_TUNE=0)"))
    from ..node import calibration
    path = calibration.default_path()
    tables, status = calibration.read()
    out.write("            calibration file %s: %s\n" % (path, {
        "used": "used (this machine's fingerprint)",
        "none": "none yet (a job writes what it learned at exit; `mpiexec -n 2 pgascol calibrate` "
                "measures it ahead)"}.get(status, status)))
    for shape in sorted(tables):
        out.write("            %s:\n" % _shape_text(shape))
        for coll in sorted(tables[shape]):
            classes = tables[shape][coll]
            out.write("              %-20s %s\n" % (coll, "; ".join(
                "%s %s" % (_class_text(k), classes[k]) for k in sorted(classes))))
    cma_min = ", ".join("%s >= %s" % (k, _human(v)) for k, v in cfg["cma_min"].items() if v is not None)
    out.write("            built in (until a class is learned; the v forms with per-rank counts): "
              "single copy from %s\n" % (cma_min or "never"))
    out.write("            ... and %s\n" % (
        "%s from %s: single copy instead of staging while measured cheaper (PGASCOL_ADAPT)"
        % (", ".join(cfg["adapt"]), _human(cfg["adapt_min"])) if cfg["adapt"] and d["cma"] else
        "no run-time switch to single copy (PGASCOL_ADAPT)"))


def _class_text(k):
    """Size class k, calls of 2**k to 2**(k+1) - 1 bytes: '64K-128K'."""
    def short(n):
        for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if n >= size:
                return "%d%s" % (n // size, unit)
        return str(n)
    return "%s-%s" % (short(1 << k), short(1 << (k + 1)))


def _shape_text(shape):
    """'1n2r' -> '1 node, 2 ranks'; 'o': oversubscribed."""
    import re
    m = re.fullmatch(r"(\d+)n(\d+)r(o?)", shape)
    if not m:
        return shape
    return "%s node%s, %s ranks%s" % (m.group(1), "" if m.group(1) == "1" else "s", m.group(2),
                                      ", oversubscribed" if m.group(3) else "")


def _human(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return "%d %s" % (n // size, unit)
    return "%d B" % n


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    # Zero-code-change mode: a script (or -m module, -c command, - for stdin)
    # runs with COMM_WORLD replaced by a pgascol communicator (pgascol.run).
    from ..comm.run import is_program, main as run_main
    if is_program(argv):
        return run_main(argv)
    from ..node import calibration
    from ..upc import defaults as upc_defaults
    from . import calibrate
    from .bench_harness import BenchError
    parser = argparse.ArgumentParser(prog="pgascol", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("info", help="describe the machine, MPI, node layout, single copy and thresholds")
    cal = sub.add_parser("calibrate", help="learn the path table of this machine ahead of a job (run under mpiexec -n 2, or at the job's shape)")
    cal.add_argument("--output", help="file to write (default: %s)" % calibration.default_path())
    cal.add_argument("--max-size", default="16M", help="the largest size class measured (default 16M)")
    cal.add_argument("--upc", action="store_true",
                     help="also measure pgascol.upc's default algorithms per size (any np; with "
                          "PGASCOL_NODE_SIZE, across nodes) into PGASCOL_UPC_CALIBRATION's file")
    cal.add_argument("--upc-only", action="store_true", help="only pgascol.upc's defaults")
    cal.add_argument("--upc-output", help="the pgascol.upc file (default: %s)" % upc_defaults.path())
    cal.add_argument("--upc-sizes", help="nbytes measured, e.g. 4,4K,64K (default: %s)" % ",".join(
        str(n) for n in calibrate.UPC_SIZES))
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _command(args)
    except (ArgumentError, BenchError) as exc:  # a bad variable or option: one line, not a traceback
        sys.stderr.write("pgascol %s: %s\n" % (args.command, exc))
        return 2
    except BaseException as exc:
        # Anything else ends the whole job (MPI.COMM_WORLD.Abort at exit, as
        # python -m mpi4py does) rather than leaving the other ranks waiting.
        from mpi4py.run import set_abort_status
        set_abort_status(exc)
        raise


def _command(args):
    if args.command == "info":
        return info(args)
    from mpi4py import MPI
    from . import calibrate
    if not args.upc_only:
        from .bench_harness import parse_size
        calibrate.run(MPI.COMM_WORLD, args.output, max_bytes=parse_size(args.max_size))
    if args.upc or args.upc_only:
        from .bench_harness import parse_sizes
        calibrate.run_upc(MPI.COMM_WORLD, args.upc_output,
                          sizes=parse_sizes(args.upc_sizes) if args.upc_sizes else calibrate.UPC_SIZES)
    return 0
