"""pgascol-bench upc: UPC's collectives on global arrays, UOMS-style.

    pgascol-bench upc [--np N] [--colls broadcast,scatter,...] [--algorithms default|all|A,B]
                      [--sizes 4:16M] [--flags ALLSYNC[,MYSYNC,NOSYNC,IN_x|OUT_y]] [--op ADD]
                      [--root R] [--rounds R] [--iters N] [--target-ms MS] [--max-bytes 512M]
                      [--virtual-node-size K] [--mpi-launcher CMD] [--json FILE]
                      [--plot FILE.png | DIR/] [--quick]

For every collective (pgascol.upc's all_broadcast ... all_prefix_reduce),
every algorithm asked for (the default, and with --algorithms all every
variant pgascol.upc names for it), every synchronisation mode of --flags and
every size, one job times side by side, in alternating rounds on the same
ranks: the UPC collective on global arrays, pgascol's MPI-style collective
doing the same data movement on plain numpy buffers (pgascol.Comm: Bcast,
Scatter, Gather, Allgather, Alltoall; a reduce is each rank's numpy
reduction of its part then Reduce of the scalar; a prefix reduce each rank's
cumulative sum then Exscan of its total), and the same with native MPI
(mpi4py's MPI.COMM_WORLD). The UPC permute has no MPI-style twin.

UOMS's conventions (the UPC Operations Microbenchmarking Suite):
- sizes: the block of each rank, nbytes (4 B to 16 MiB in powers of two by
  default); a reduce or prefix reduce of size s reduces s/8 doubles per rank
  (P*s/8 elements, blocked, blk_size "*"); the root is fixed (--root, 0);
- every iteration is timed on every rank, after a barrier that is not
  timed (pgascol.Comm's, the one that lets the ranks go closest together,
  for every side alike); the time of an iteration is the maximum over the ranks; t_min,
  t_avg and t_max are taken over the iterations of a round (UOMS Eq. 3.2,
  not IMB's max over ranks of per-rank means); of several rounds we keep the
  lowest t_min, and t_avg and t_max of the round with the lowest t_avg;
- aggregate bandwidth in MB/s (MB = 10**6 bytes) = factor * nbytes / t_min,
  factor P (broadcast, scatter, gather, permute) or P*P (gather_all,
  exchange); none for the reductions (UOMS reports none);
- iterations per round: enough for ~--target-ms, between 20 and 1000 (UOMS:
  1000 down to 20), after 2 warm-up calls.

The JSON (--json) is a pgascol-bench/1 document (docs/PERFORMANCE.md), so
`pgascol-bench compare` and `plot` read it: each row's "op" is
"upc_<collective>" for pgascol.upc's default algorithm, with ":<algorithm>"
for a forced variant and "@<flags>" for flags other than ALLSYNC; its
"impl" is "pgascol" for the UPC collective (compare checks those for
regressions), "pgascol_comm" for pgascol's MPI-style twin (op without
algorithm and flags), "mpi" for native MPI; "bandwidth_mbs", "algorithm"
and "flags" are added. --plot draws one PNG per collective: every UPC
variant, the MPI-style twin and native MPI, t_avg against size.
`python -m pgascol.tools.bench_upc table FILE.json [SIZES [t_min]]` prints the
markdown tables of docs/PERFORMANCE.md from such a JSON."""
import argparse
import json
import sys
import time

from . import bench_background
from .bench_harness import (SCHEMA, BenchError, _matplotlib, describe_run, human, launch, load_doc,
                            parse_size, parse_sizes, plot_destination, report, run_command)

COLLS = ("broadcast", "scatter", "gather", "gather_all", "exchange", "permute", "reduce",
         "prefix_reduce")
# The aggregate bandwidth factor (UOMS): P, or P*P for the all-to-all ones; None: no bandwidth.
FACTOR = {"broadcast": 1, "scatter": 1, "gather": 1, "permute": 1, "gather_all": 2, "exchange": 2,
          "reduce": None, "prefix_reduce": None}
# The MPI-style collective doing the same data movement (the table's column).
TWIN = {"broadcast": "Bcast", "scatter": "Scatter", "gather": "Gather", "gather_all": "Allgather",
        "exchange": "Alltoall", "permute": None, "reduce": "Reduce (scalar)",
        "prefix_reduce": "Exscan (scalar)"}
DEFAULT_SIZES = "4:16M:2"
QUICK_SIZES = "4,4K,64K"
MIN_ITERS, MAX_ITERS = 20, 1000
FLAG_MODES = ("ALLSYNC", "MYSYNC", "NOSYNC")


def parse_flags(spec):
    """"ALLSYNC,NOSYNC,IN_MYSYNC|OUT_NOSYNC" -> [(label, [UPC flag names])]."""
    out = []
    for tok in (t.strip().upper() for t in spec.split(",") if t.strip()):
        if tok in FLAG_MODES:
            out.append((tok, ["UPC_IN_" + tok, "UPC_OUT_" + tok]))
            continue
        names = [n.strip() for n in tok.split("|")]
        for n in names:
            if n.replace("UPC_", "") not in ["%s_%s" % (d, m) for d in ("IN", "OUT") for m in FLAG_MODES]:
                raise BenchError("bad --flags entry %r: use ALLSYNC, MYSYNC, NOSYNC or "
                                 "IN_<mode>|OUT_<mode>" % tok)
        out.append((tok.replace("UPC_", ""), ["UPC_" + n.replace("UPC_", "") for n in names]))
    if not out:
        raise BenchError("--flags is empty")
    return out


def parse_colls(spec):
    colls = [c.strip().lower() for c in spec.split(",") if c.strip()]
    bad = [c for c in colls if c not in COLLS]
    if bad or not colls:
        raise BenchError("unknown collective(s) %s; choose from: %s" % (",".join(bad), ",".join(COLLS)))
    return list(dict.fromkeys(colls))


def op_label(coll, algorithm, flags_label):
    """The JSON's op of a UPC row."""
    return "upc_%s%s%s" % (coll, ":%s" % algorithm if algorithm else "",
                           "" if flags_label == "ALLSYNC" else "@%s" % flags_label)


def bandwidth(coll, nbytes, P, t_us):
    """UOMS's aggregate bandwidth, MB/s (10**6 bytes), or None."""
    f = FACTOR[coll]
    if f is None or not t_us > 0:
        return None
    return P ** f * nbytes / t_us


# ---------------------------------------------------------------------------
# Rank side
# ---------------------------------------------------------------------------

def algorithms(upc, coll, nnodes):
    """The named variants of a collective, as pgascol.upc lists them, that
    this job can run (across nodes: a reduction's that run there, plan.REDUCTION_ACROSS;
    for the others, where the collective has hier* ones, those)."""
    from ..upc.plan import REDUCTION_ACROSS
    names = [a for a in upc.ALGORITHMS.get(coll, ()) if a]
    if nnodes > 1 and coll in REDUCTION_ACROSS:
        return [a for a in names if a in REDUCTION_ACROSS[coll]]
    return [a for a in names if a.startswith("hier")] if nnodes > 1 and "hier" in names else names


def array_bytes(coll, nbytes, P):
    """What one case allocates, global arrays and MPI buffers (bytes)."""
    one, row = P * nbytes, P * P * nbytes
    return {"broadcast": 2 * one, "scatter": row + one, "gather": one + row, "gather_all": one + 2 * row,
            "exchange": 4 * row, "permute": 2 * one, "reduce": 2 * one, "prefix_reduce": 4 * one}[coll]


class Case:
    """One collective at one size: the UPC call (per algorithm and flags),
    its MPI-style twin on a pgascol.Comm and on native MPI."""

    def __init__(self, coll, nbytes, root, op, comm, pgascol_comm):
        import numpy as np
        from .. import pgas, upc
        self.upc, self.coll, self.root = upc, coll, root
        P, me = comm.Get_size(), comm.Get_rank()
        self.arrays = []
        B = nbytes

        def ga(n, dtype, block, fill=1):
            a = pgas.full(pgascol_comm, n, fill, dtype, block=block)
            self.arrays.append(a)
            return a
        if coll in ("reduce", "prefix_reduce"):
            n = max(nbytes // 8, 1)
            self.nelems = n * P
            src = ga(self.nelems, np.float64, "*")
            dst = ga(P, np.float64, 1) if coll == "reduce" else ga(self.nelems, np.float64, "*")
            self.op = getattr(upc, op)
            self.upc_args = ((dst, root) if coll == "reduce" else dst, src)
            x, y = np.ones(n), np.zeros(n)
            one, tot = np.ones(1), np.zeros(1)
            ufunc = {"ADD": np.add, "MULT": np.multiply, "MIN": np.minimum, "MAX": np.maximum}.get(op, np.add)

            def twin(c):
                if coll == "reduce":
                    def call():
                        one[0] = ufunc.reduce(x)
                        c.Reduce(one, tot, root=root)
                else:
                    def call():
                        ufunc.accumulate(x, out=y)
                        one[0] = y[-1]
                        c.Exscan(one, tot)
                        if me:
                            np.add(y, tot[0], out=y)
                return call
        else:
            u8 = np.uint8
            one, row = P * B, P * P * B
            if coll == "broadcast":
                self.upc_args = (ga(one, u8, B), (ga(one, u8, B), root * B))
            elif coll == "scatter":
                self.upc_args = (ga(one, u8, B), (ga(row, u8, P * B), root * P * B))
            elif coll == "gather":
                self.upc_args = ((ga(row, u8, P * B), root * P * B), ga(one, u8, B))
            elif coll == "gather_all":
                self.upc_args = (ga(row, u8, P * B), ga(one, u8, B))
            elif coll == "exchange":
                self.upc_args = (ga(row, u8, P * B), ga(row, u8, P * B))
            else:
                perm = ga(P, np.intc, 1)
                perm.local()[:] = (me + 1) % P
                self.upc_args = (ga(one, u8, B), ga(one, u8, B), perm)
            small, big = np.ones(B, u8), np.ones(P * B, u8)
            big2 = np.ones(P * B, u8)

            def twin(c):
                return {"broadcast": lambda: c.Bcast(small, root),
                        "scatter": lambda: c.Scatter(big, small, root),
                        "gather": lambda: c.Gather(small, big, root),
                        "gather_all": lambda: c.Allgather(small, big),
                        "exchange": lambda: c.Alltoall(big, big2),
                        "permute": lambda: c.Sendrecv(small, (me + 1) % P, 7, big[:B], (me - 1) % P, 7)}[coll]
        self.nbytes = nbytes
        self.comm_call = twin(pgascol_comm) if TWIN[coll] else None
        self.mpi_call = twin(comm) if TWIN[coll] or coll == "permute" else None
        pgas.barrier(pgascol_comm)

    def upc_call(self, algorithm, flags):
        """The UPC call, its arguments bound positionally as the twin's are
        (a ** of keywords would time Python's argument passing, 0.1 us)."""
        fn = getattr(self.upc, "all_" + self.coll)
        if self.coll in ("reduce", "prefix_reduce"):
            dst, src = self.upc_args
            args = (dst, src, self.op, self.nelems, "*", None, flags, algorithm)
        else:       # (dst, src[, perm]), nbytes
            args = self.upc_args + (self.nbytes, flags, algorithm)
        return lambda: fn(*args)

    def free(self):
        for a in self.arrays:
            a.free()


def time_iterations(call, iters, comm, sync):
    """Per-iteration times, the maximum over the ranks of each (numpy array, s).
    A barrier (not timed) before each iteration; sync() after it (a barrier
    for NOSYNC calls: the caller is responsible). `comm` is the job's
    pgascol.Comm: its Barrier lets the ranks go within one cache-line
    transfer of each other, where MPICH's lets them go microseconds apart,
    and a call that synchronises (ALLSYNC, MPI's Gather) would time that
    skew as its own."""
    import numpy as np
    from mpi4py import MPI
    t = np.empty(iters)
    for i in range(iters):
        comm.Barrier()
        t0 = time.perf_counter()
        call()
        t[i] = time.perf_counter() - t0
        sync()
    out = np.empty_like(t)
    comm.Allreduce(t, out, MPI.MAX)
    return out


def worker_main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m pgascol.tools.bench_upc worker")
    ap.add_argument("--colls", default=",".join(COLLS))
    ap.add_argument("--algorithms", default="all")
    ap.add_argument("--sizes", default=DEFAULT_SIZES)
    ap.add_argument("--flags", default="ALLSYNC")
    ap.add_argument("--op", default="ADD")
    ap.add_argument("--root", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int)
    ap.add_argument("--target-ms", type=float, default=50.0)
    ap.add_argument("--max-bytes", default="512M")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    colls, sizes = parse_colls(args.colls), parse_sizes(args.sizes)
    modes, max_bytes = parse_flags(args.flags), parse_size(args.max_bytes)

    from mpi4py import MPI
    import pgascol
    from .. import pgas, upc

    comm = MPI.COMM_WORLD
    pgascol_comm = pgascol.Comm(comm)
    P, me = comm.Get_size(), comm.Get_rank()
    if not 0 <= args.root < P:
        raise SystemExit("--root %d: not a rank of %d" % (args.root, P))
    lib = MPI.Get_library_version().strip().splitlines()[0].strip()
    results, out = [], sys.stdout
    if me == 0:
        out.write("# np=%d, %s; UOMS-style: per iteration the slowest rank, t_min/t_avg/t_max over the "
                  "iterations of a round (best of %d rounds); root %d; op %s\n" % (
                      P, lib, args.rounds, args.root, args.op))
        out.flush()
    for coll in colls:
        usable = algorithms(upc, coll, pgas.context.of(pgascol_comm).nnodes)
        wanted = [None] + [a for a in usable if args.algorithms == "all" or a in args.algorithms.split(",")]
        for nbytes in sizes:
            if array_bytes(coll, nbytes, P) > max_bytes:
                if me == 0:
                    out.write("# %s %s skipped: %s of arrays and buffers > --max-bytes\n" % (
                        coll, human(nbytes), human(array_bytes(coll, nbytes, P))))
                continue
            case = Case(coll, nbytes, args.root, args.op, comm, pgascol_comm)
            sides = []          # (label, impl, algorithm, flags label, call, sync)
            for label, names in modes:
                flags = 0
                for n in names:
                    flags |= getattr(upc, n)
                nosync = bool(flags & (upc.UPC_IN_NOSYNC | upc.UPC_OUT_NOSYNC))
                sync = (lambda: pgas.barrier(pgascol_comm)) if nosync else (lambda: None)
                for a in wanted:
                    sides.append((op_label(coll, a, label), "pgascol", a, label, case.upc_call(a, flags), sync))
            if case.comm_call:
                sides.append(("upc_" + coll, "pgascol_comm", None, None, case.comm_call, lambda: None))
            if case.mpi_call:
                sides.append(("upc_" + coll, "mpi", None, None, case.mpi_call, lambda: None))
            for side in sides:          # warm up, fault pages in
                for _ in range(2):
                    side[4]()
                    side[5]()
            if args.iters:
                iters = args.iters
            else:
                one = max(time_iterations(s[4], 3, pgascol_comm, s[5]).mean() for s in sides)
                iters = comm.bcast(int(max(MIN_ITERS, min(MAX_ITERS, args.target_ms * 1e-3 / max(one, 1e-7)))), 0)
            best = [None] * len(sides)      # (t_min, t_avg, t_max) in us
            rounds = [[] for _ in sides]    # each round's mean per call, us (the verdict's samples)
            for _ in range(args.rounds):
                for k, s in enumerate(sides):
                    t = time_iterations(s[4], iters, pgascol_comm, s[5]) * 1e6
                    rounds[k].append(float(t.mean()))
                    b = best[k]
                    lo = t.min() if b is None else min(b[0], t.min())
                    if b is None or t.mean() < b[1]:
                        best[k] = (lo, t.mean(), t.max())
                    else:
                        best[k] = (lo, b[1], b[2])
            case.free()
            for s, (tmin, tavg, tmax), samples in zip(sides, best, rounds):
                results.append({"op": s[0], "bytes": nbytes, "np": P, "impl": s[1], "t_min_us": tmin,
                                "t_avg_us": tavg, "t_max_us": tmax, "path": "-", "memcpy_us": 0.0,
                                "iters": iters, "rounds": args.rounds, "buffer_sets": 1, "store_us": None,
                                "collective": coll, "algorithm": s[2] or ("default" if s[1] == "pgascol" else None),
                                "flags": s[3], "bandwidth_mbs": bandwidth(coll, nbytes, P, tmin),
                                "samples_us": samples})
            if me == 0:
                for s, (tmin, tavg, tmax), samples in zip(sides, best, rounds):
                    bw = bandwidth(coll, nbytes, P, tmin)
                    out.write("%-36s %-12s %7s  t_min %10.2f  t_avg %10.2f  t_max %10.2f us%s\n" % (
                        s[0], s[1], human(nbytes), tmin, tavg, tmax,
                        "  %10.1f MB/s" % bw if bw is not None else ""))
                out.flush()
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "mpi_library": lib, "rounds": args.rounds, "iters": args.iters,
                       "target_ms": None if args.iters else args.target_ms, "root": args.root,
                       "op": args.op, "flags": [m[0] for m in modes], "results": results}, f, indent=1)
    pgascol_comm.Free()
    return 0


# ---------------------------------------------------------------------------
# Host side
# ---------------------------------------------------------------------------

def format_table(results):
    """Per collective and size: each UPC row's t_avg, the twins', and the ratios
    of the default UPC row against them."""
    lines = ["UOMS times in us (t_avg: mean over the iterations of the slowest rank per iteration); "
             "ratio = UPC t_avg / twin t_avg; bandwidth aggregated from t_min, MB = 10^6 B",
             "%-40s %7s %10s %10s %10s %8s %12s %12s %9s %9s" % (
                 "op", "bytes", "t_min", "t_avg", "t_max", "iters", "MB/s", "twin t_avg", "/comm", "/mpi")]
    twins = {(r["collective"], r["bytes"], r["impl"]): r for r in results if r["impl"] != "pgascol"}
    for r in results:
        if r["impl"] != "pgascol":
            continue
        c = twins.get((r["collective"], r["bytes"], "pgascol_comm"))
        m = twins.get((r["collective"], r["bytes"], "mpi"))
        bw = r.get("bandwidth_mbs")
        lines.append("%-40s %7s %10.2f %10.2f %10.2f %8d %12s %12s %9s %9s" % (
            r["op"], human(r["bytes"]), r["t_min_us"], r["t_avg_us"], r["t_max_us"], r["iters"],
            "%.1f" % bw if bw is not None else "-", "%.2f" % c["t_avg_us"] if c else "-",
            "%.2f" % (r["t_avg_us"] / c["t_avg_us"]) if c else "-",
            "%.2f" % (r["t_avg_us"] / m["t_avg_us"]) if m else "-"))
    return "\n".join(lines)


def markdown_tables(doc, sizes=None, stat="t_avg"):
    """The two tables of docs/PERFORMANCE.md from a `pgascol-bench upc` JSON:
    the default algorithm against pgascol's MPI-style twin and native MPI
    (t_avg, us, and the ratios), and every variant's t_avg over the
    default's (below 1: the variant is faster), per collective and size;
    stat="t_min" compares the minima instead (on a loaded machine, where
    preemptions dominate the means)."""
    key = stat + "_us"
    rows = doc["results"]
    P = doc["meta"]["np"]
    sizes = sorted({r["bytes"] for r in rows} if sizes is None else sizes)
    at = {(r["op"], r["bytes"], r["impl"]): r for r in rows}
    colls = [c for c in COLLS if any(r["collective"] == c for r in rows)]
    out = ["| np=%d | bytes | UPC default %s (us) | MPI-style twin (us) | native MPI (us) | UPC / twin | UPC / MPI |"
           % (P, stat), "|---|---|---|---|---|---|---|"]
    for c in colls:
        for b in sizes:
            u = at.get(("upc_" + c, b, "pgascol"))
            if u is None:
                continue
            t, m = at.get(("upc_" + c, b, "pgascol_comm")), at.get(("upc_" + c, b, "mpi"))
            out.append("| %s | %s | %.1f | %s | %s | %s | %s |" % (
                c if b == sizes[0] or at.get(("upc_" + c, sizes[0], "pgascol")) is None else "", human(b),
                u[key], "%.1f (%s)" % (t[key], TWIN[c]) if t else "-",
                "%.1f" % m[key] if m else "-", "%.2f" % (u[key] / t[key]) if t else "-",
                "%.2f" % (u[key] / m[key]) if m else "-"))
    out += ["", "| np=%d: variant %s / default %s | %s |" % (P, stat, stat, " | ".join(human(b) for b in sizes)),
            "|---|" + "---|" * len(sizes)]
    for c in colls:
        names = sorted({r["algorithm"] for r in rows if r["collective"] == c and r["impl"] == "pgascol"
                        and r["algorithm"] not in (None, "default") and r["flags"] in (None, "ALLSYNC")})
        for a in names:
            cells = []
            for b in sizes:
                v, d = at.get((op_label(c, a, "ALLSYNC"), b, "pgascol")), at.get(("upc_" + c, b, "pgascol"))
                cells.append("%.2f" % (v[key] / d[key]) if v and d else "-")
            out.append("| %s %s | %s |" % (c, a, " | ".join(cells)))
    return "\n".join(out)


def plot_results(doc, dest):
    """One PNG per collective: t_avg against size for every UPC row (each
    algorithm and flags), pgascol's MPI-style twin and native MPI."""
    Figure, FigureCanvasAgg, FuncFormatter = _matplotlib()
    name_of = plot_destination(dest)
    by_coll = {}
    for r in doc["results"]:
        by_coll.setdefault(r.get("collective") or r["op"], []).append(r)
    written = []
    for coll, rows in by_coll.items():
        fig = Figure(figsize=(8, 5), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        series = {}
        for r in rows:
            label = r["op"] if r["impl"] == "pgascol" else (
                "pgascol %s" % TWIN.get(coll) if r["impl"] == "pgascol_comm" else "native MPI")
            series.setdefault(label, []).append((r["bytes"], r["t_avg_us"], r["t_min_us"], r["t_max_us"]))
        for label, pts in series.items():
            pts.sort()
            xs, avg, lo, hi = zip(*pts)
            style = "o-" if label.startswith("upc_") else "s--"
            line, = ax.plot(xs, avg, style, label=label, markersize=3)
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.1, linewidth=0)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: human(int(x)) if x >= 1 else ""))
        ax.set_xlabel("bytes per rank (nbytes)")
        ax.set_ylabel("t_avg per call (\u00b5s)")
        ax.set_title("upc " + coll, fontsize=12, loc="left")
        ax.set_title("lines: t_avg; bands: t_min-t_max (UOMS)", fontsize=8, loc="right")
        meta = describe_run(doc.get("meta", {}))
        if meta:
            fig.suptitle(meta, fontsize=7, wrap=True, x=0.01, ha="left")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
        path = name_of("upc_" + coll)
        fig.savefig(path, format="png")
        written.append(path)
    return written


def add_parser(sub):
    r = sub.add_parser("upc", help="UPC collectives on global arrays, UOMS-style, against "
                                   "pgascol's MPI-style collectives and native MPI")
    r.add_argument("--np", type=int, help="ranks (default 2)")
    r.add_argument("--colls", help="comma-separated, from: %s (default: all)" % ",".join(COLLS))
    r.add_argument("--algorithms", default="all",
                   help="'all' (the default and every variant pgascol.upc names), 'default', or "
                        "a comma-separated list of names (each collective runs those it has)")
    r.add_argument("--sizes", help="nbytes per rank, e.g. 4,1K,1M or LO:HI[:FACTOR] (default %s; "
                                   "--quick %s)" % (DEFAULT_SIZES, QUICK_SIZES))
    r.add_argument("--flags", default="ALLSYNC",
                   help="comma-separated sync modes: ALLSYNC, MYSYNC, NOSYNC (IN and OUT alike) or "
                        "IN_<mode>|OUT_<mode> (default ALLSYNC)")
    r.add_argument("--op", default="ADD", help="reduce operator: ADD, MULT, MIN, MAX (default ADD)")
    r.add_argument("--root", type=int, default=0, help="the fixed root (default 0)")
    r.add_argument("--rounds", type=int, default=3, help="rounds per case (default 3)")
    r.add_argument("--iters", type=int, help="iterations per round (default: ~--target-ms, 20 to 1000)")
    r.add_argument("--target-ms", type=float, default=50.0, help="length of a round (default 50 ms)")
    r.add_argument("--max-bytes", default="512M",
                   help="skip sizes whose arrays and buffers add up to more (default 512M)")
    r.add_argument("--virtual-node-size", type=int, metavar="K")
    r.add_argument("--mpi-launcher", metavar="CMD")
    r.add_argument("--json", metavar="FILE")
    r.add_argument("--plot", metavar="FILE.png|DIR/")
    bench_background.add_arguments(r)
    r.add_argument("--quick", action="store_true", help="a small sweep: sizes %s, 2 rounds" % QUICK_SIZES)


def cmd_upc(args, argv):
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    rounds = 2 if args.quick and args.rounds == 3 else args.rounds
    np_ = args.np or 2
    parse_sizes(sizes)
    parse_flags(args.flags)
    colls = parse_colls(args.colls or ",".join(COLLS))
    if np_ < 1 or rounds < 1 or (args.iters is not None and args.iters < 1):
        raise BenchError("--np, --rounds and --iters must be >= 1")
    if args.op.upper() not in ("ADD", "MULT", "MIN", "MAX"):
        raise BenchError("--op must be ADD, MULT, MIN or MAX (the float64 reduce operators), not %r" % args.op)
    if not 0 <= args.root < np_:
        raise BenchError("--root %d is not a rank of %d" % (args.root, np_))
    if args.plot:
        plot_destination(args.plot)
        _matplotlib()
    worker = ["--colls", ",".join(colls), "--algorithms", args.algorithms, "--sizes", sizes,
              "--flags", args.flags, "--op", args.op.upper(), "--root", str(args.root), "--rounds", str(rounds),
              "--target-ms", str(args.target_ms), "--max-bytes", args.max_bytes]
    if args.iters:
        worker += ["--iters", str(args.iters)]
    job, meta = launch(args, argv, np_, "pgascol.tools.bench_upc", worker)
    for key in ("rounds", "iters", "target_ms", "root", "op", "flags"):
        meta[key] = job[key]
    meta["benchmark"] = "upc (UOMS conventions)"
    return report({"schema": SCHEMA, "meta": meta, "results": job["results"]},
                  "pgascol-bench upc", format_table, plot_results, args)


def main(argv):
    """``python -m pgascol.tools.bench_upc ARGS``: ``pgascol-bench upc ARGS``,
    parsed by this subcommand's parser alone (bench.py, the command line,
    imports this module, not the other way round)."""
    ap = argparse.ArgumentParser(prog="pgascol-bench")
    add_parser(ap.add_subparsers(dest="command"))
    argv = ["upc", *argv]
    return run_command(cmd_upc, ap.parse_args(argv), argv)


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker_main(sys.argv[2:]))
    if sys.argv[1:2] == ["table"]:      # python -m pgascol.tools.bench_upc table FILE.json [SIZES [t_min]]
        print(markdown_tables(load_doc(sys.argv[2]),
                              parse_sizes(sys.argv[3]) if len(sys.argv) > 3 else None,
                              *sys.argv[4:5]))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
