"""pgascol-bench: pgascol against native MPI, side by side in one job (the command line).

    pgascol-bench run [--np N] [--ops bcast,allreduce,...] [--sizes 8,1K,1M | 8:64M]
                      [--rounds R] [--iters N] [--off-cache] [--buffers shared] [--virtual-node-size K]
                      [--mpi-launcher CMD] [--json FILE] [--plot FILE.png | DIR/] [--quick]
                                                                      (pgascol/tools/bench_coll.py)
    pgascol-bench pgas [--np 1,2] [--benchmarks randomaccess,stream,latency] [--json FILE] ...
                                                                      (pgascol/tools/bench_pgas.py)
    pgascol-bench compare BASE.json NEW.json [--threshold 0.10]
    pgascol-bench verdict BASE.json NEW.json [--min-effect F] [--strict] [--markdown F] [--junit F]
                                                                      (pgascol/tools/bench_verdict.py)
    pgascol-bench ab --base PYTHON|VENV|REV --new PYTHON|VENV|REV [--quick] ...
                                                                      (pgascol/tools/bench_ab.py)
    pgascol-bench instructions [--quick] [--ops ...] [--sizes ...] [--json FILE]
                                                                      (pgascol/tools/bench_callgrind.py)
    pgascol-bench plot RESULTS.json --plot FILE.png | DIR/
    pgascol-bench upc ...      (UPC's collectives, UOMS-style: pgascol/tools/bench_upc.py)
    pgascol-bench blas [--np N] [--ops dgemm,...] [--threads K] [--json FILE]   (pgascol/tools/bench_blas.py)
    pgascol-bench sparse [--np N] [--matrices lap2d,...] [--formats csr,...] [--json FILE]
                                                                      (pgascol/tools/bench_sparse.py)
    pgascol-bench objects [--np N] [--methods bcast,...] [--objects int,tuple,1K,...] [--json FILE]
                                                                      (pgascol/tools/bench_objects.py)

This module is the command line only: the parser (the options of `run`
here, each other benchmark's from its module's add_parser), the dispatch to
the subcommands and `plot`. `run`, the collectives sweep, and its worker are
in bench_coll.py; what every benchmark shares (the schema, timing, the
launcher and the MPI job, the JSON, the plot helpers, `compare`) in
bench_harness.py. The hidden subcommand `worker` (``python -m
pgascol.tools.bench worker ...``) is the sweep's rank side
(bench_coll.worker_main): what `run` launches on every rank, and what
bench/engine_vs_mpi.py calls under your own ``mpiexec``.

The JSON written by --json (schema "pgascol-bench/1") is documented in
docs/PERFORMANCE.md, as is the regression rule of `compare`.
"""
import argparse
import sys

from .bench_coll import (DEFAULT_ROUNDS, DEFAULT_SIZES, DEFAULT_TARGET_MS, OPS, QUICK_ROUNDS, QUICK_SIZES,
                         QUICK_TARGET_MS, cmd_run, plot_results, worker_main)
from . import bench_background
from .bench_harness import OFF_CACHE_FACTOR, SCHEMA, cmd_compare, load_doc, run_command


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
    bench_background.add_arguments(r)
    r.add_argument("--quick", action="store_true", help="a small sweep (np=2, under 2 minutes)")
    from . import (bench_ab, bench_blas, bench_callgrind, bench_objects, bench_pgas, bench_sparse, bench_upc,
                   bench_verdict)
    bench_pgas.add_parser(sub)
    bench_upc.add_parser(sub)
    bench_blas.add_parser(sub)
    bench_sparse.add_parser(sub)
    bench_objects.add_parser(sub)
    c = sub.add_parser("compare", help="compare two JSON results; exit 1 on a pgascol regression")
    c.add_argument("base")
    c.add_argument("new")
    c.add_argument("--threshold", type=float, default=0.10,
                   help="relative slowdown tolerated (default 0.10)")
    bench_verdict.add_parser(sub)
    bench_ab.add_parser(sub)
    bench_callgrind.add_parser(sub)
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
        ap.error("choose a command: run, pgas, upc, blas, sparse, objects, compare, verdict, ab, instructions or plot")
    return run_command(_dispatch, args, argv)


def _dispatch(args, argv):
    """Run the chosen subcommand (under run_command: a BenchError is one line)."""
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
    if args.command == "objects":
        from .bench_objects import cmd_objects
        return cmd_objects(args, argv)
    if args.command == "plot":
        return cmd_plot(args)
    if args.command == "upc":
        from .bench_upc import cmd_upc
        return cmd_upc(args, argv)
    if args.command == "verdict":
        from .bench_verdict import cmd_verdict
        return cmd_verdict(args)
    if args.command == "ab":
        from .bench_ab import cmd_ab
        return cmd_ab(args, argv)
    if args.command == "instructions":
        from .bench_callgrind import cmd_instructions
        return cmd_instructions(args, argv)
    return cmd_compare(args)


if __name__ == "__main__":
    sys.exit(main())
