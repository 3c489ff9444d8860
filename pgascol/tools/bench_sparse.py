"""pgascol-bench sparse: SpMV and SpMM on pgascol.sparse matrices against
scipy.sparse in one process, PETSc's MatMult (when petsc4py imports) and
UPCBLAS's per-call redistribution, side by side in one MPI job.

    pgascol-bench sparse [--np N] [--matrices lap2d,lap3d,nas-a,nas-b,powerlaw,band]
                         [--formats csr,coo,bsr,csc,dia,dia-rows,sky] [--cols 1,8]
                         [--rounds R] [--upcblas-formats csr] [--virtual-node-size K]
                         [--json FILE] [--quick]

Matrices (pgascol.sparse.problems): lap2d the 5-point Laplacian on a
2000 x 2000 grid (4M rows, 20M nonzeros), lap3d the 7-point one on 128^3
(2.1M rows, 14.6M nonzeros), nas-a and nas-b NAS CG's class A and B
matrices, powerlaw a random 1M x 1M matrix with power-law row lengths (8 a
row on average), band a random 2M x 2M band matrix of 9 diagonals (the
one whose lower triangle a skyline holds without padding; --quick:
smaller ones). Rank 0 builds each whole and the
SparseMatrix is made once from it (sparse.from_scipy, not timed). Format sky
holds the matrix's lower triangle; dia is DIA split by diagonals (the
default: cyclically, partials summed by Reduce_scatter), dia-rows the same
matrix with split="rows" (row blocks, y in place, x by halo); both are
skipped beyond 64 diagonals and sky when its envelope exceeds 4 nonzeros a
row on average (the reason is printed). bsr uses 2 x 2 blocks (3 x 3, 5 x
5 when 2 does not divide n).

Per matrix, format and column count k (1: SpMV, y = A x with vectors;
k > 1: SpMM with row-distributed matrices B and C) the rounds alternate:
sparse.mv / sparse.mm on every rank (the round's time is the slowest
rank's), scipy.sparse's product on rank 0 alone (the others wait in a
barrier), PETSc's MatMult (k = 1, AIJ, when petsc4py imports; the job
says when it does not), and for the formats of --upcblas-formats (k = 1)
UPCBLAS's entry point with thread_src = 0, which distributes the matrix
anew on every call. The best round is kept.

Figures per case: GFLOP/s = 2 nnz k / t, and the memory bandwidth of the
product, GB/s = bytes / t, with the byte model: every stored matrix entry
read once (value plus its index arrays: CSR nnz (v + i) + (m + 1) i, COO
nnz (v + 2i), BSR per block R C v + i, DIA the whole diagonals, skyline
its envelope), x read once and y written once (k (n + m) v); v, i the
value and index sizes (i = 4 when every index fits in int32). A STREAM
triad on every rank at the start of the job, a[:] = b + s c over 3 x 32
MiB per rank (24 bytes an element), gives the machine's limit in the same
run (meta.triad_gbs). --json writes the pgascol-bench/1 schema (op
"spmv/<matrix>/<format>" or "spmm<k>/...", bytes = the byte model, np,
impl "pgascol" | "scipy" | "petsc" | "upcblas", t_min/avg/max_us; plus
gflops, gbs, nnz), so `pgascol-bench compare` reads it unchanged."""
import argparse
import json
import sys
import time

from . import bench_background

MATRICES = ("lap2d", "lap3d", "nas-a", "nas-b", "powerlaw", "band")
FORMATS = ("csr", "coo", "bsr", "csc", "dia", "dia-rows", "sky")     # dia-rows: format dia, split="rows"
UPC_FORMATS = tuple(f for f in FORMATS if "-" not in f)            # UPCBLAS's entry points: the thesis's split
MAX_DIAGONALS = 64
MAX_ENVELOPE_PER_ROW = 4
TRIAD_BYTES = 32 << 20


def build(name, quick):
    """(label, whole scipy CSR) of a benchmark matrix."""
    from ..sparse import problems as pb
    if name == "lap2d":
        g = 300 if quick else 2000
        return "lap2d-%d" % g, pb.poisson2d(g)
    if name == "lap3d":
        g = 40 if quick else 128
        return "lap3d-%d" % g, pb.poisson3d(g)
    if name in ("nas-a", "nas-b"):
        klass = ("S" if name == "nas-a" else "W") if quick else name[-1].upper()
        return "nas-%s" % klass.lower(), pb.nas_cg_matrix(klass)
    if name == "powerlaw":
        n = 20000 if quick else 1000000
        return "powerlaw-%d" % n, pb.power_law(n)
    if name == "band":
        n = 20000 if quick else 2000000
        return "band-%d" % n, pb.banded(n, 4)
    raise ValueError("unknown matrix %r" % name)        # cmd_sparse checks the names before the job


def describe(G, fmt):
    """(matrix in the format's scipy form, blocksize, stored-bytes of the
    matrix, true nonzeros) or (None, reason) when the format is skipped."""
    import numpy as np
    import scipy.sparse as sp
    m, n = G.shape
    v = G.dtype.itemsize
    i = 4 if max(m, n, G.nnz) < 2 ** 31 - 1 else 8
    fmt = fmt.partition("-")[0]
    if fmt == "dia":
        ndiag = len(np.unique(G.tocoo().col - G.tocoo().row))
        if ndiag > MAX_DIAGONALS:
            return None, "%d diagonals (> %d)" % (ndiag, MAX_DIAGONALS)
        D = sp.dia_array(G)
        return (D, None, ndiag * n * v + ndiag * i, G.nnz), None
    if fmt == "sky":
        L = sp.tril(G, format="csr")
        counts = np.diff(L.indptr)
        first = np.arange(m)
        first[counts > 0] = L.indices[L.indptr[:-1][counts > 0]]
        envelope = int(np.sum(np.arange(m) - first + 1))
        if envelope > MAX_ENVELOPE_PER_ROW * m + L.nnz:
            return None, "lower envelope of %d entries for %d nonzeros" % (envelope, L.nnz)
        return (L, None, envelope * v + (m + 1) * i, L.nnz), None
    if fmt == "bsr":
        R = next((r for r in (2, 3, 5) if m % r == 0 and n % r == 0), None)
        if R is None:
            return None, "no block size of 2, 3 or 5 divides %d x %d" % (m, n)
        B = sp.bsr_array(G, blocksize=(R, R))
        return (B, (R, R), len(B.indices) * (R * R * v + i) + (m // R + 1) * i, G.nnz), None
    if fmt == "coo":
        return (sp.coo_array(G), None, G.nnz * (v + 2 * i), G.nnz), None
    S = sp.csc_array(G) if fmt == "csc" else G
    return (S, None, G.nnz * (v + i) + ((n if fmt == "csc" else m) + 1) * i, G.nnz), None


def _triad(comm):
    """Aggregate STREAM triad bandwidth of all ranks at once (GB/s), best of 5."""
    import numpy as np
    n = TRIAD_BYTES // 8
    a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
    best = float("inf")
    for _ in range(5):
        comm.Barrier()
        t = time.perf_counter()
        np.multiply(c, 3.0, out=a)
        a += b
        best = min(best, comm.allreduce(time.perf_counter() - t, op=_max()))
    return comm.Get_size() * 3 * n * 8 / best / 1e9


def _max():
    from mpi4py import MPI
    return MPI.MAX


def _petsc():
    """petsc4py's PETSc module, or the reason it is not there."""
    try:
        from petsc4py import PETSc
        return PETSc, None
    except Exception as exc:        # ImportError, or a petsc4py built for another MPI
        return None, "%s: %s" % (type(exc).__name__, exc)


def _petsc_case(PETSc, comm, A, G):
    """MatMult on an AIJ matrix of A's rows (CSR only)."""
    import numpy as np
    rows = A.row_counts
    me = comm.Get_rank()
    lo = sum(rows[:me])
    local = comm.scatter([G[sum(rows[:r]):sum(rows[:r + 1])] for r in range(comm.Get_size())]
                         if me == 0 else None, root=0)
    mat = PETSc.Mat().createAIJ(size=((rows[me], G.shape[0] if me == 0 else None), (rows[me], None)),
                                csr=(local.indptr.astype(PETSc.IntType), local.indices.astype(PETSc.IntType),
                                     local.data), comm=PETSc.COMM_WORLD)
    mat.assemble()
    x, y = mat.createVecs()
    x.setArray(np.random.default_rng(lo).random(rows[me]))
    return (lambda: mat.mult(x, y)), (mat, x, y)


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="pgascol.tools.bench_sparse worker")
    ap.add_argument("--matrices", default=",".join(MATRICES))
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--cols", default="1,8")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--upcblas-formats", default="csr")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    from mpi4py import MPI

    import pgascol
    comm = pgascol.Comm(MPI.COMM_WORLD)
    me, P = comm.Get_rank(), comm.Get_size()
    PETSc, no_petsc = _petsc()
    triad = _triad(comm)
    if me == 0:
        print("# STREAM triad, %d ranks at once: %.1f GB/s" % (P, triad), flush=True)
        if no_petsc:
            print("# PETSc's MatMult not measured: petsc4py does not import (%s)" % no_petsc, flush=True)
    results, skipped = [], []
    cols = [int(k) for k in args.cols.split(",")]
    upc_formats = set(filter(None, args.upcblas_formats.split(",")))
    for name in args.matrices.split(","):
        label, G = build(name, args.quick) if me == 0 else (None, None)
        label = comm.bcast(label, root=0)
        for fmt in args.formats.split(","):
            desc, why = describe(G, fmt) if me == 0 else (None, None)
            desc_meta, why = comm.bcast((desc[1:] if desc else None, why), root=0)
            if why:
                skipped.append({"matrix": label, "format": fmt, "reason": why})
                if me == 0:
                    print("%-28s skipped: %s" % ("%s/%s" % (label, fmt), why), flush=True)
                continue
            S = desc[0] if me == 0 else None
            blocksize, matrix_bytes, nnz = desc_meta
            shape = comm.bcast(S.shape if me == 0 else None, root=0)
            for k in cols:
                case = _Case(comm, label, fmt, S, shape, blocksize, k, matrix_bytes, nnz)
                extra = []
                if k == 1 and PETSc is not None and fmt == "csr":
                    extra.append(("petsc",) + _petsc_case(PETSc, comm, case.A, S))
                if k == 1 and fmt in upc_formats:
                    extra.append(("upcblas", case.upcblas(S), ()))
                results += case.run(args.rounds, extra)
                case.free()
                for _, _, objs in extra:
                    for o in objs:
                        o.destroy()
                if me == 0:
                    print(_line(results, case.op), flush=True)
        del G
    if me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": P, "results": results, "skipped": skipped, "triad_gbs": triad,
                       "petsc": None if no_petsc else PETSc.Sys.getVersion(), "petsc_missing": no_petsc,
                       "mpi_library": MPI.Get_library_version().splitlines()[0]}, f)
    comm.Free()
    return 0


class _Case:
    """One matrix, format and column count: the SparseMatrix, its operands,
    and scipy's on rank 0."""

    def __init__(self, comm, label, fmt, S, shape, blocksize, k, matrix_bytes, nnz):
        import numpy as np
        from .. import sparse
        self.comm, self.k, self.fmt = comm, k, fmt
        me = comm.Get_rank()
        self.op = "%s/%s/%s" % ("spmv" if k == 1 else "spmm%d" % k, label, fmt)
        m, n = shape
        self.nnz = nnz
        self.bytes = matrix_bytes + k * (m + n) * 8
        base, _, split = fmt.partition("-")
        self.A = sparse.from_scipy(comm, S, root=0, format=base, blocksize=blocksize, split=split or None)
        rng = np.random.default_rng(me)
        if k == 1:
            self.x, self.y = self.A.vector("col"), self.A.vector("row")
            self.ours = lambda: sparse.mv(self.A, self.x, self.y, alpha=1.0, beta=0.0)
        else:
            self.x, self.y = self.A.matrix("col", k), self.A.matrix("row", k)
            self.ours = lambda: sparse.mm(self.A, self.x, self.y, alpha=1.0, beta=0.0)
        self.x.local()[...] = rng.random(self.x.local().shape)
        if me == 0:
            X = np.random.default_rng(0).random(n if k == 1 else (n, k))
            self.scipy = lambda: S @ X
        else:
            self.scipy = None

    def upcblas(self, S):
        """UPCBLAS's SpMV of this format: the matrix's arrays on rank 0, sent on every call."""
        from ..sparse import upcblas
        args = upcblas.arrays_of(S, self.fmt, self.A.blocksize) if self.comm.Get_rank() == 0 \
            else (None,) * upcblas.NARGS[self.fmt]
        call = getattr(upcblas, "upc_blas_dsusmv_%s" % self.fmt)
        return lambda: call(0, 1.0, *args, self.x, self.y, 0)

    def run(self, rounds, extra):
        comm = self.comm
        me, P = comm.Get_rank(), comm.Get_size()
        times = {"pgascol": [], "scipy": []}
        for impl, _, _ in extra:
            times[impl] = []
        self.ours()                                 # the first product builds the exchange plan
        for _ in range(rounds):
            comm.Barrier()
            t = time.perf_counter()
            self.ours()
            times["pgascol"].append(comm.allreduce(time.perf_counter() - t, op=_max()))
            for impl, call, _ in extra:
                comm.Barrier()
                t = time.perf_counter()
                call()
                times[impl].append(comm.allreduce(time.perf_counter() - t, op=_max()))
            if me == 0:
                t = time.perf_counter()
                self.scipy()
                times["scipy"].append(time.perf_counter() - t)
            comm.Barrier()
        out = []
        for impl, ts in times.items():
            if not ts:
                continue
            best = min(ts)
            out.append({"op": self.op, "bytes": self.bytes, "np": P if impl != "scipy" else 1, "impl": impl,
                        "t_min_us": best * 1e6, "t_avg_us": sum(ts) / len(ts) * 1e6, "t_max_us": max(ts) * 1e6,
                        "path": None, "memcpy_us": None, "iters": 1, "rounds": len(ts), "buffer_sets": 1,
                        "store_us": None, "nnz": self.nnz, "cols": self.k, "format": self.fmt,
                        "gflops": 2 * self.nnz * self.k / best / 1e9, "gbs": self.bytes / best / 1e9,
                        "samples_us": [t * 1e6 for t in ts]})
        return out

    def free(self):
        for o in (self.x, self.y, self.A):
            o.free()


def _line(results, op):
    mine = {r["impl"]: r for r in results if r["op"] == op}
    ours = mine["pgascol"]
    parts = ["%-26s pgascol %9.2f ms %6.2f GF/s %5.1f GB/s" % (op, ours["t_min_us"] / 1e3, ours["gflops"],
                                                               ours["gbs"])]
    for impl in ("scipy", "petsc", "upcblas"):
        if impl in mine:
            parts.append("%s %9.2f ms (x%.2f)" % (impl, mine[impl]["t_min_us"] / 1e3,
                                                  mine[impl]["t_min_us"] / ours["t_min_us"]))
    return "  ".join(parts)


def cmd_sparse(args, argv):
    from .bench_harness import BenchError, run_worker_job, write_results
    rounds = args.rounds or (3 if args.quick else 5)
    for what, given, known in (("matrix", args.matrices, MATRICES), ("format", args.formats, FORMATS),
                               ("format", args.upcblas_formats, UPC_FORMATS)):
        for item in filter(None, (given or "").split(",")):
            if item not in known:
                raise BenchError("unknown %s %r (one of %s)" % (what, item, ", ".join(known)))
    job, meta = run_worker_job(args, argv, "pgascol.tools.bench_sparse",
                               ["--matrices", args.matrices or ",".join(MATRICES),
                                "--formats", args.formats or ",".join(FORMATS), "--cols", args.cols,
                                "--rounds", str(rounds), "--upcblas-formats", args.upcblas_formats]
                               + (["--quick"] if args.quick else []))
    meta.update(rounds=rounds, via="sparse", triad_gbs=job["triad_gbs"], petsc=job["petsc"],
                petsc_missing=job["petsc_missing"], skipped=job["skipped"])
    write_results(args.json, meta, job["results"])
    return 0


def add_parser(sub):
    s = sub.add_parser("sparse", help="pgascol.sparse SpMV/SpMM against scipy.sparse, PETSc and UPCBLAS's path")
    s.add_argument("--np", type=int, help="ranks (default 2)")
    s.add_argument("--matrices", help="comma-separated, from: %s" % ",".join(MATRICES))
    s.add_argument("--formats", help="comma-separated, from: %s" % ",".join(FORMATS))
    s.add_argument("--cols", default="1,8", help="column counts; 1 is SpMV (default %(default)s)")
    s.add_argument("--rounds", type=int, help="rounds per case (default 5; --quick 3)")
    s.add_argument("--upcblas-formats", default="csr",
                   help="formats also timed through UPCBLAS's per-call redistribution, from: %s "
                        "(default %%(default)s; empty: none)" % ",".join(UPC_FORMATS))
    s.add_argument("--virtual-node-size", type=int, metavar="K")
    s.add_argument("--mpi-launcher", metavar="CMD")
    s.add_argument("--json", metavar="FILE")
    bench_background.add_arguments(s)
    s.add_argument("--quick", action="store_true", help="small matrices")
    return s


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker_main(sys.argv[2:]))
    sys.exit("usage: pgascol-bench sparse ... (this module's worker runs under mpiexec)")
