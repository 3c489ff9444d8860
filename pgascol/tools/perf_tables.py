"""Markdown tables of `pgascol-bench run --json` results (docs/PERFORMANCE.md).

    python -m pgascol.tools.perf_tables RESULT.json [RESULT.json ...]
    python -m pgascol.tools.perf_tables --update docs/PERFORMANCE.md

One table per file (per number of ranks, should a file hold several): a row
per collective, a column per payload size (bytes of one rank's contribution;
Alltoall: all a rank sends), each cell ``ratio (time, path)``: ratio is
pgascol's best round over native MPI's best round (below 1: pgascol is
faster), time is pgascol's best round (the slowest rank's mean per call),
path the way pgascol took most often (inline, cico, cma, hier, mpi). Above
each table one line says what was measured, on what, and by which command.

--update DOC rewrites, in DOC, every block between a line
``<!-- perf_tables FILE.json ... -->`` and the next ``<!-- end perf_tables -->``
with the tables of those files (paths relative to the current directory), so
the figures in the document are regenerated, never retyped.
"""
import argparse
import re
import sys

from .bench_coll import OPS
from .bench_harness import BenchError, human, load_doc

BEGIN = re.compile(r"^<!-- perf_tables ((?:\S+ )*\S+) -->$")
END = "<!-- end perf_tables -->"


def size_label(nbytes):
    """8 -> '8 B', 65536 -> '64 KiB'; 0 (Barrier) -> '-'."""
    if not nbytes:
        return "-"
    h = human(nbytes)
    return "%s %siB" % (h[:-1], h[-1]) if h[-1] in "KMG" else "%s B" % h


def time_label(us):
    """Three significant digits or two decimals: 0.15 us, 35.6 us, 666 us, 1.91 ms."""
    value, unit = (us, "us") if us < 1000 else (us / 1000, "ms")
    return "%.*f %s" % (2 if value < 10 else 1 if value < 100 else 0, value, unit)


def mpi_name(library):
    """'MPICH Version:  5.0.2\\nMPICH Release date: ...' -> 'MPICH 5.0.2';
    'Open MPI v5.0.11, package: ...' -> 'Open MPI v5.0.11'."""
    first = (library or "MPI").splitlines()[0].split(",")[0]
    return " ".join(first.replace("Version:", "").split())


def caption(meta, np_):
    """What was measured, on what, by which command."""
    cores = (meta.get("cores") or {}).get("logical")
    what = ["%s, np=%d" % (mpi_name(meta.get("mpi_library")), np_)]
    if meta.get("virtual_node_size"):
        what.append("virtual nodes of %d" % meta["virtual_node_size"])
    machine = meta.get("cpu_model") or "unknown CPU"
    if cores:
        machine = "%d logical CPUs (%s)" % (cores, machine)
    what.append(machine)
    what.append("best of %s rounds" % meta.get("rounds", "?"))
    what.append("off-cache" if meta.get("off_cache") else "in cache")
    if meta.get("fresh"):
        what.append("fresh input")
    if meta.get("git_revision"):
        what.append("pgascol at %s" % meta["git_revision"][:10])
    return "%s; `%s`" % (", ".join(what), meta.get("command", "pgascol-bench run"))


def _op_order(op):
    return (OPS.index(op), op) if op in OPS else (len(OPS), op)


def table(results, np_):
    """The markdown table of one run's cases at np_ ranks."""
    pg = {(r["op"], r["bytes"]): r for r in results if r["impl"] == "pgascol" and r["np"] == np_}
    mpi = {(r["op"], r["bytes"]): r for r in results if r["impl"] == "mpi" and r["np"] == np_}
    sizes = sorted({b for _, b in pg})
    lines = ["| collective | " + " | ".join(size_label(b) for b in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    for op in sorted({op for op, _ in pg}, key=_op_order):
        cells = []
        for b in sizes:
            p, m = pg.get((op, b)), mpi.get((op, b))
            if p is None:
                cells.append("")
                continue
            ratio = ("%.2f" % (p["t_min_us"] / m["t_min_us"])
                     if m is not None and m["t_min_us"] > 0 else "-")
            cells.append("%s (%s, %s)" % (ratio, time_label(p["t_min_us"]), p.get("path") or "-"))
        lines.append("| %s | %s |" % (op.capitalize(), " | ".join(cells)))
    return lines


def tables(paths):
    """Caption and table of every run in `paths`, as markdown lines."""
    out = []
    for path in paths:
        doc = load_doc(path)
        meta = doc.get("meta", {})
        results = doc.get("results", [])
        for np_ in sorted({r["np"] for r in results}):
            if out:
                out.append("")
            out += [caption(meta, np_), ""] + table(results, np_)
    return out


def update(doc_path):
    """Regenerate every perf_tables block of doc_path; returns how many."""
    with open(doc_path) as f:
        lines = f.read().split("\n")
    out, blocks, i = [], 0, 0
    while i < len(lines):
        out.append(lines[i])
        m = BEGIN.match(lines[i])
        i += 1
        if not m:
            continue
        try:
            end = lines.index(END, i)
        except ValueError:
            raise BenchError("%s: no %r after %r" % (doc_path, END, lines[i - 1])) from None
        out += [""] + tables(m.group(1).split()) + ["", END]
        blocks += 1
        i = end + 1
    with open(doc_path, "w") as f:
        f.write("\n".join(out))
    return blocks


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m pgascol.tools.perf_tables",
                                 description="markdown tables of pgascol-bench run --json results")
    ap.add_argument("results", nargs="*", metavar="RESULT.json")
    ap.add_argument("--update", metavar="DOC",
                    help="regenerate the <!-- perf_tables ... --> blocks of DOC in place")
    args = ap.parse_args(argv)
    if not args.results and not args.update:
        ap.error("give RESULT.json files or --update DOC")
    try:
        if args.results:
            print("\n".join(tables(args.results)))
        if args.update:
            print("%s: %d block(s) regenerated" % (args.update, update(args.update)), file=sys.stderr)
    except BenchError as e:
        print("perf_tables: error: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
