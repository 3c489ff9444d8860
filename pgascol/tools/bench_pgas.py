"""`pgascol-bench pgas`: the PGAS layer's benchmarks, each verified, each side
by side in one job with the MPI (or numpy) way of doing the same thing.

    pgascol-bench pgas [--np 1,2] [--benchmarks randomaccess,stream,latency]
                       [--variants strict,update,batched,rma,alltoallv]
                       [--table-log2 K] [--element-table-log2 K] [--stream-n N]
                       [--rounds R] [--virtual-node-size K] [--json FILE] [--quick]

launches one MPI job per rank count; every rank runs this module's worker
(``python -m pgascol.tools.bench_pgas ...``, also usable under your own
``mpiexec``). Rank 0 prints one line per case; --json writes schema
pgascol-bench/1 (docs/PERFORMANCE.md), one record per case and side, `op`
naming the case ("pgas.randomaccess.batched", ...), plus `rate` and `unit`
and what the benchmark verified, so `pgascol-bench compare` and `plot` work
on it unchanged. Exit status 1 when a verification failed.

randomaccess: HPCC RandomAccess under HPCC's rules. A table of 2^k 64-bit
    words, t[i] = i at the start, in a blocked layout; 4 x 2^k XOR updates
    t[v & (2^k - 1)] ^= v with HPCC's generator (pgascol.tools.hpcc), rank r
    applying its share of the stream in order, at most 1024 updates in
    flight per rank (a batch is completed before the next one starts).
    Every round is one pass of all updates; after an even number of passes
    (one more, untimed, if the rounds are odd) the table must be t[i] = i
    again: the errors are counted and must be 0 (HPCC allows 1% of the table
    per two passes, its timed and its verification pass). Variants:
      strict    a[i] read, then a[i] = old ^ v and a flush, per element: not
                atomic, so racing ranks may lose an update (HPCC's 1% rule,
                the one variant it applies to); on its own smaller table;
      update    a.update(i, v, BXOR) per element (UPC's remote update), a
                flush every 1024; on the smaller table too;
      batched   a.update(idx, v, BXOR) per batch of 1024 (the layer buckets
                them by owner), a flush per batch;
    against two MPI ways on the same stream and layout (native
    MPI.COMM_WORLD, a private numpy table per rank):
      rma       Win.Create, Lock_all; per batch, one Accumulate(BXOR) per
                owner with an indexed datatype (duplicates combined
                first), then Flush_all;
      alltoallv HPCC's MPI algorithm: per batch, the updates bucketed by
                owner, counts by Alltoall, values by Alltoallv, applied by
                the owner.
    Record `t_*_us`: one pass; `rate`: GUPS (updates / s / 1e9). With
    several ranks on one node, `batched` also runs on rank 0 alone in the
    same job (op "pgas.randomaccess.batched.one_rank"), in turns with the
    run on all ranks, the others sleeping: the efficiency from one rank,
    measured side by side.

stream: STREAM's triad c = a + s*b on three blocked global arrays of n
    float64: `local` through each rank's a.local() views, against `numpy`,
    every rank doing the same triad on its own private numpy arrays at the
    same time (the aggregate bandwidth of independent processes); `slicing`,
    c[lo:hi] = a[lo:hi] + s*b[lo:hi] in blocks over the range the next rank
    owns (access through the global array, as from another rank). Rate:
    GB/s counting 24 bytes per element, STREAM's rule. Every result is
    checked (c == a + s*b everywhere).

latency: rank 0 reads from the first rank of its node and the first of
    another node (what exists): one float64 a[i] against mpi4py's
    Win.Get + Win.Flush of the same element (a window over the same memory,
    under Lock_all), and a 1 MiB a.get against the same by Win.Get and
    against its floor, one memcpy of 1 MiB between the caller's buffers (in
    short rounds, the three taking turns). The other ranks wait in MPI's
    barrier, which serves MPI's one-sided operations. The values read are
    checked."""
import argparse
import json
import sys
import time

import numpy as np

from . import bench_background, hpcc
from .bench_harness import BenchError, SCHEMA, collect_meta, find_launcher, human, run_job, stats_row

BENCHMARKS = ("randomaccess", "stream", "latency")
RA_VARIANTS = ("strict", "update", "batched", "rma", "alltoallv")
RA_ELEMENT = ("strict", "update")       # per element: on the smaller table
RA_MPI = ("rma", "alltoallv")
LOOKAHEAD = 1024                        # HPCC: updates in flight per rank
GB = 1e9


def parse_list(spec, allowed, what):
    items = [s.strip().lower() for s in spec.split(",") if s.strip()]
    bad = [s for s in items if s not in allowed]
    if not items or bad:
        raise BenchError("bad %s %r: choose from %s" % (what, spec, ",".join(allowed)))
    return list(dict.fromkeys(items))


def record(op, impl, nbytes, P, times, iters, path, rate, unit, floor=0.0, **extra):
    """One pgascol-bench/1 record (times in seconds), with the rate of the
    best round and what the benchmark checked."""
    row = stats_row(impl, op, nbytes, P, times, iters, path, floor, 1)
    row.update(rate=rate, unit=unit, **extra)
    return row


def slowest(comm, seconds):
    """The slowest rank's time (every rank gets it)."""
    from mpi4py import MPI
    return MPI.Intracomm.allreduce(comm, seconds, op=MPI.MAX)


class Job:
    """What every benchmark needs: the communicators, the printer, the records."""

    def __init__(self, args):
        from mpi4py import MPI
        import pgascol
        self.args = args
        self.world = MPI.COMM_WORLD
        self.comm = pgascol.Comm(MPI.COMM_WORLD)
        from ..comm._comm import state_of
        self.nnodes = state_of(self.comm).nnodes
        self.P, self.me = self.world.Get_size(), self.world.Get_rank()
        self.results = []
        self.failures = []

    def say(self, text):
        if self.me == 0:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def add(self, row):
        self.results.append(row)

    def check(self, what, errors, allowed=0):
        """Verification: `errors` summed over the ranks must be <= allowed."""
        from mpi4py import MPI
        total = int(self.world.allreduce(int(errors), op=MPI.SUM))
        if total > allowed:
            self.failures.append("%s: %d errors (at most %d allowed)" % (what, total, allowed))
        return total


# ---------------------------------------------------------------------------
# RandomAccess
# ---------------------------------------------------------------------------

class Table:
    """HPCC's table of n = 2^k words over P ranks, blocked (block B = ceil(n/P)),
    and this rank's share of the update stream."""

    def __init__(self, log2, P, me):
        self.log2, self.n = log2, 1 << log2
        self.mask = np.uint64(self.n - 1)
        self.block = -(-self.n // P)
        self.lo, self.hi = min(me * self.block, self.n), min((me + 1) * self.block, self.n)
        total = 4 * self.n
        share, extra = divmod(total, P)
        self.updates = total
        self.count = share + (me < extra)
        self.first = me * share + min(me, extra)

    def batches(self):
        """(global indices int64, values uint64) per batch of LOOKAHEAD
        consecutive values of the stream, batches in stream order."""
        stream = hpcc.Stream(self.first, self.count, group=LOOKAHEAD)
        while True:
            values = stream.chunk()
            if not len(values):
                return
            idx = (values & self.mask).view(np.int64)
            for b in range(0, len(values), LOOKAHEAD):
                yield idx[b:b + LOOKAHEAD], values[b:b + LOOKAHEAD]

    def errors(self, part):
        return int(np.count_nonzero(part != np.arange(self.lo, self.hi, dtype=np.uint64)))


def ra_strict(a, table):
    for idx, values in table.batches():
        for i, v in zip(idx.tolist(), values):
            old = a[i]
            a[i] = old ^ v
            a.flush()


def ra_update(a, table):
    for idx, values in table.batches():
        for i, v in zip(idx.tolist(), values):
            a.update(i, v, "bxor")
        a.flush()


def ra_batched(a, table):
    for idx, values in table.batches():
        a.update(idx, values, "bxor")
        a.flush()


class MPIRandomAccess:
    """The MPI ways on a private numpy table per rank (native MPI.COMM_WORLD)."""

    def __init__(self, world, table):
        from mpi4py import MPI
        self.MPI = MPI
        self.world, self.table = world, table
        self.part = np.arange(table.lo, table.hi, dtype=np.uint64)
        self.P = world.Get_size()
        self.win = MPI.Win.Create(self.part, 8, comm=world)
        self.win.Lock_all(MPI.MODE_NOCHECK)

    def rma(self):
        MPI, win, B = self.MPI, self.win, self.table.block
        for idx, values in self.table.batches():
            order = np.argsort(idx, kind="stable")
            g = idx[order]
            uniq, first = np.unique(g, return_index=True)
            combined = np.bitwise_xor.reduceat(values[order], first)
            owners = uniq // B
            bounds = np.searchsorted(owners, np.arange(self.P + 1))
            for r in range(self.P):
                a, b = bounds[r], bounds[r + 1]
                if a == b:
                    continue
                dt = MPI.UINT64_T.Create_indexed_block(1, (uniq[a:b] - r * B).tolist()).Commit()
                win.Accumulate([combined[a:b], MPI.UINT64_T], r, (0, 1, dt), MPI.BXOR)
                dt.Free()
            win.Flush_all()

    def alltoallv(self):
        MPI, world, B, P = self.MPI, self.world, self.table.block, self.P
        counts, rcounts = np.zeros(P, np.int64), np.zeros(P, np.int64)
        displs, rdispls = np.zeros(P, np.int64), np.zeros(P, np.int64)
        recv = np.empty(LOOKAHEAD * P, np.uint64)
        for idx, values in self.table.batches():
            owners = idx // B
            send = values[np.argsort(owners, kind="stable")]
            counts[:] = np.bincount(owners, minlength=P)
            world.Alltoall(counts, rcounts)
            displs[1:] = np.cumsum(counts)[:-1]
            rdispls[1:] = np.cumsum(rcounts)[:-1]
            world.Alltoallv([send, counts, displs, MPI.UINT64_T], [recv, rcounts, rdispls, MPI.UINT64_T])
            got = recv[:rcounts.sum()]
            loc = (got & self.table.mask).view(np.int64) - self.table.lo
            np.bitwise_xor.at(self.part, loc, got)

    def free(self):
        self.win.Unlock_all()
        self.win.Free()


class Side:
    """One way of running RandomAccess on a table: `run()` one pass of this
    rank's updates, `sync()` a barrier that completes them, `part` this
    rank's part of the table, `free()`."""

    def __init__(self, job, variant, comm, P, me):
        from .. import pgas
        log2 = job.args.element_table_log2 if variant in RA_ELEMENT else job.args.table_log2
        self.table = table = Table(log2, P, me)
        if variant in RA_MPI:
            self.impl, mpi = "mpi", MPIRandomAccess(comm, table)
            self.run, self.part, self.sync, self.free = getattr(mpi, variant), mpi.part, comm.Barrier, mpi.free
            return
        self.impl = "pgascol"
        a = pgas.array(comm, table.n, np.uint64, block="*")
        a.local()[:] = np.arange(table.lo, table.hi, dtype=np.uint64)
        pgas.barrier(comm)
        fn = {"strict": ra_strict, "update": ra_update, "batched": ra_batched}[variant]
        self.run, self.part, self.free = (lambda: fn(a, table)), a.local(), a.free
        self.sync = lambda: pgas.barrier(comm)


def idle_barrier(world):
    """A barrier that sleeps while it waits: the rank leaves its CPU to the others."""
    req = world.Ibarrier()
    while not req.Test():
        time.sleep(0.0005)


def randomaccess(job):
    """Each variant on all ranks; the batched one also on rank 0 alone in
    the same job (the others sleeping), round by round in turn: the 1-to-P
    efficiency measured side by side."""
    from mpi4py import MPI
    import pgascol
    args, P, me = job.args, job.P, job.me
    rounds = args.rounds
    passes = rounds + rounds % 2                # an even number: the table returns to t[i] = i
    one_node = job.nnodes == 1
    for variant in args.variants:
        comm = job.world if variant in RA_MPI else job.comm
        sides = [Side(job, variant, comm, P, me)]
        solo = variant == "batched" and P > 1 and one_node
        if solo:
            self_comm = pgascol.Comm(MPI.COMM_SELF) if me == 0 else None
            sides.append(Side(job, variant, self_comm, 1, 0) if me == 0 else None)
        times = [[] for _ in sides]
        for k in range(passes):
            for n, side in enumerate(sides):
                t = 0.0
                if side is not None:
                    side.sync()
                    t0 = time.perf_counter()
                    side.run()
                    side.sync()                     # every update complete
                    t = time.perf_counter() - t0
                if n == 1:
                    idle_barrier(job.world)
                t = slowest(job.world, t)
                if k < rounds:
                    times[n].append(t)
        table = sides[0].table
        # HPCC allows 1% of the table wrong after its timed pass and its
        # verification pass; strict's lost updates come from racing ranks'
        # overlapping read-then-write windows, a number per pass that does not
        # grow with the table, so 1% per two passes.
        allowed = table.n // 100 * passes // 2 if variant == "strict" else 0
        errors = sum(side.table.errors(side.part) for side in sides if side is not None)
        total = job.check("randomaccess.%s" % variant, errors, allowed)
        for side in sides:
            if side is not None:
                side.free()
        if solo and me == 0:
            self_comm.Free()
        impl = sides[0].impl if sides[0] is not None else "pgascol"
        path = ("node" if one_node else "internode") if impl == "pgascol" else None
        for op, t in zip(("pgas.randomaccess." + variant, "pgas.randomaccess.%s.one_rank" % variant), times):
            gups = table.updates / min(t) / GB
            job.add(record(op, impl, table.n * 8, P, t, table.updates, path, gups, "GUPS",
                           table_log2=table.log2, errors=total))
            job.say("randomaccess %-18s table 2^%d (%s), %d updates: %8.4f GUPS  (best %.3f s, worst %.3f s)"
                    "  errors %d" % (op[len("pgas.randomaccess."):], table.log2, human(table.n * 8),
                                     table.updates, gups, min(t), max(t), total))


# ---------------------------------------------------------------------------
# STREAM triad
# ---------------------------------------------------------------------------

SCALAR = 3.0


def triad(a, b, c, s):
    """c = a + s*b (the same numpy calls on both sides)."""
    np.multiply(b, s, out=c)
    c += a


def stream(job):
    from .. import pgas
    args, P, me = job.args, job.P, job.me
    n = args.stream_n
    arrays = [pgas.full(job.comm, n, v, np.float64, block="*") for v in (1.0, 2.0, 0.0)]
    a, b, c = arrays
    mine = [x.local() for x in arrays]
    private = [np.full(len(mine[0]), v) for v in (1.0, 2.0, 0.0)]
    nbytes = 24 * n
    tl, tn = [], []
    for _ in range(args.rounds):             # alternated: the machine's noise hits both
        for side, times in ((mine, tl), (private, tn)):
            job.world.Barrier()
            t0 = time.perf_counter()
            triad(*side, SCALAR)
            times.append(slowest(job.world, time.perf_counter() - t0))
    bad = np.count_nonzero(mine[2] != 1.0 + SCALAR * 2.0) + np.count_nonzero(private[2] != 1.0 + SCALAR * 2.0)
    errors = job.check("stream.local", bad)
    rate_l, rate_n = nbytes / min(tl) / GB, nbytes / min(tn) / GB
    job.add(record("pgas.stream.local", "pgascol", nbytes, P, tl, 1, "local", rate_l, "GB/s", errors=errors))
    job.add(record("pgas.stream.local", "numpy", nbytes, P, tn, 1, None, rate_n, "GB/s", errors=errors))
    job.say("stream local     n=%d: pgascol local() %7.2f GB/s  numpy processes %7.2f GB/s  ratio %.2f"
            % (n, rate_l, rate_n, rate_l / rate_n))
    # through the global arrays: the range of the next rank, in blocks
    lo, hi = c.layout.owned((me + 1) % P)[0] if c.layout.local_size((me + 1) % P) else (0, 0)
    blk = args.stream_block
    ts = []
    for _ in range(args.rounds):
        mine[2][:] = 0.0
        pgas.barrier(job.comm)
        t0 = time.perf_counter()
        for x in range(lo, hi, blk):
            y = min(x + blk, hi)
            c[x:y] = a[x:y] + SCALAR * b[x:y]
        pgas.barrier(job.comm)
        ts.append(slowest(job.world, time.perf_counter() - t0))
    errors = job.check("stream.slicing", np.count_nonzero(mine[2] != 1.0 + SCALAR * 2.0))
    rate_s = nbytes / min(ts) / GB
    where = "node" if job.nnodes == 1 else "internode"
    job.add(record("pgas.stream.slicing", "pgascol", nbytes, P, ts, 1, where, rate_s, "GB/s", errors=errors,
                   block=blk))
    job.say("stream slicing   n=%d: c[lo:hi] = a[lo:hi] + s*b[lo:hi], blocks of %d: %7.2f GB/s, %.3f of local()"
            % (n, blk, rate_s, rate_s / rate_l))
    for x in arrays:
        x.free()


# ---------------------------------------------------------------------------
# Latency
# ---------------------------------------------------------------------------

def alternate(fns, iters, rounds):
    """Per function, each round's mean time per call, seconds: the functions
    take turns round after round, so the machine's noise hits them alike
    (one warm-up call each first)."""
    times = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(rounds):
        for fn, t in zip(fns, times):
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            t.append((time.perf_counter() - t0) / iters)
    return times


def read_back(a, first, mpi_one, one, mpi_bulk, bulk):
    """Both sides read what the target holds: element 7 and all of its part."""
    want = np.arange(first, first + len(bulk), dtype=np.float64)
    one[0], bulk[:] = -1, -1
    mpi_one()
    mpi_bulk()
    mine = np.empty_like(bulk)
    return (a[first + 7] == want[7] == one[0] and (a.get(first, mine) == want).all()
            and (bulk == want).all())


def latency(job):
    from mpi4py import MPI
    from .. import pgas
    P, me = job.P, job.me
    if P < 2:
        job.say("latency: needs 2 ranks or more, skipped")
        return
    per = (1 << 20) // 8
    a = pgas.array(job.comm, per * P, np.float64, block="*")    # rank r holds [r*per, (r+1)*per)
    a.local()[:] = np.arange(me * per, (me + 1) * per, dtype=np.float64)
    win = MPI.Win.Create(a.local(), 8, comm=job.world)
    win.Lock_all(MPI.MODE_NOCHECK)
    pgas.barrier(job.comm)
    ctx = a._ctx
    targets = [r for r in (next((r for r in range(1, P) if ctx.on_node[r]), None),
                           next((r for r in range(1, P) if not ctx.on_node[r]), None)) if r is not None]
    iters, rounds = job.args.latency_iters, job.args.rounds
    if me == 0:
        one, bulk = np.empty(1), np.empty(per)
        for r in targets:
            where = "node" if ctx.on_node[r] else "internode"
            first = r * per

            def mpi_one():
                win.Get(one, r, (7, 1, MPI.DOUBLE))
                win.Flush(r)

            def mpi_bulk():
                win.Get(bulk, r, (0, per, MPI.DOUBLE))
                win.Flush(r)

            # the bulk get in short rounds, many of them, alternated with its
            # floor: one memcpy of 1 MiB between two buffers of the caller
            src = np.ones(per)
            tp, tm = alternate((lambda: a[first + 7], mpi_one), iters, rounds)
            bp, bm, bf = alternate((lambda: a.get(first, bulk), mpi_bulk, lambda: np.copyto(bulk, src)),
                                   max(iters // 1000, 5), 5 * rounds)
            for nbytes, tp, tm, n, fl in ((8, tp, tm, iters, 0.0), (per * 8, bp, bm, max(iters // 1000, 5), min(bf))):
                op = "pgas.latency." + where
                job.add(record(op, "pgascol", nbytes, P, tp, n, where, 1e6 * min(tp), "us", fl, target=r))
                job.add(record(op, "mpi", nbytes, P, tm, n, None, 1e6 * min(tm), "us", fl, target=r))
                job.say("latency %-9s %7s from rank %d: pgascol %8.2f us  MPI Get+Flush %8.2f us  ratio %.2f%s"
                        % (where, human(nbytes), r, 1e6 * min(tp), 1e6 * min(tm), min(tp) / min(tm),
                           "  memcpy %.2f us (%.2fx)" % (1e6 * fl, min(tp) / fl) if fl else ""))
            if not read_back(a, first, mpi_one, one, mpi_bulk, bulk):
                job.failures.append("latency: wrong values read from rank %d" % r)
    job.world.Barrier()             # MPI's own: the targets' MPI serves the MPI cases meanwhile
    win.Unlock_all()
    win.Free()
    a.free()


# ---------------------------------------------------------------------------
# The worker
# ---------------------------------------------------------------------------

def parser():
    ap = argparse.ArgumentParser(prog="python -m pgascol.tools.bench_pgas",
                                 description="the PGAS layer's benchmarks, one MPI job (run under mpiexec)")
    ap.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    ap.add_argument("--variants", default=",".join(RA_VARIANTS))
    ap.add_argument("--table-log2", type=int, default=20)
    ap.add_argument("--element-table-log2", type=int, default=16)
    ap.add_argument("--stream-n", type=int, default=1 << 24)
    ap.add_argument("--stream-block", type=int, default=1 << 16)
    ap.add_argument("--latency-iters", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    return ap


def check_args(args):
    """Refuse bad values before anything is launched or allocated."""
    benchmarks = parse_list(args.benchmarks, BENCHMARKS, "--benchmarks")
    variants = parse_list(args.variants, RA_VARIANTS, "--variants")
    for name, lo, hi in (("table_log2", 1, 40), ("element_table_log2", 1, 40), ("rounds", 1, 10000),
                         ("stream_n", 1, 1 << 40), ("stream_block", 1, 1 << 40), ("latency_iters", 1, 1 << 30)):
        if not lo <= getattr(args, name) <= hi:
            raise BenchError("--%s must be between %d and %d" % (name.replace("_", "-"), lo, hi))
    return benchmarks, variants


def main(argv=None):
    ap = parser()
    args = ap.parse_args(argv)
    try:
        benchmarks, args.variants = check_args(args)
    except BenchError as e:
        ap.error(str(e))
    from mpi4py import MPI
    job = Job(args)
    lib = MPI.Get_library_version().strip().splitlines()[0].strip()
    job.say("# np=%d, %s, %s; best of %d rounds" % (job.P, lib, "one node" if job.nnodes == 1
                                                   else "%d nodes" % job.nnodes, args.rounds))
    for name in benchmarks:
        {"randomaccess": randomaccess, "stream": stream, "latency": latency}[name](job)
    if job.me == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"np": job.P, "mpi_library": lib, "nodes": job.nnodes,
                       "params": {k: getattr(args, k) for k in ("table_log2", "element_table_log2", "stream_n",
                                                                "stream_block", "latency_iters", "rounds")},
                       "failures": job.failures, "results": job.results}, f, indent=1)
    for failure in job.failures:
        job.say("VERIFICATION FAILED: " + failure)
    job.comm.Free()
    return 1 if job.failures else 0


if __name__ == "__main__":
    sys.exit(main())


# ---------------------------------------------------------------------------
# Host side: `pgascol-bench pgas`
# ---------------------------------------------------------------------------

QUICK = {"table_log2": 18, "element_table_log2": 16, "stream_n": 1 << 22, "latency_iters": 2000}


def add_parser(sub):
    p = sub.add_parser("pgas", help="the PGAS layer's benchmarks (RandomAccess, STREAM, latency) against "
                                    "the MPI way, one MPI job per rank count")
    p.add_argument("--np", default=None, help="comma-separated rank counts, one job each (default 1,2; "
                                              "--quick 2)")
    p.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="from: %s" % ",".join(BENCHMARKS))
    p.add_argument("--variants", default=",".join(RA_VARIANTS),
                   help="RandomAccess's, from: %s" % ",".join(RA_VARIANTS))
    p.add_argument("--table-log2", type=int, help="RandomAccess table of 2^K words (default 20; --quick %d)"
                   % QUICK["table_log2"])
    p.add_argument("--element-table-log2", type=int,
                   help="the table of the per-element variants strict and update (default 16; --quick %d)"
                   % QUICK["element_table_log2"])
    p.add_argument("--stream-n", type=int, help="STREAM: elements per array (default 2^24; --quick 2^22)")
    p.add_argument("--stream-block", type=int, help="STREAM slicing: elements per slice (default 65536)")
    p.add_argument("--latency-iters", type=int, help="calls per round of one element (default 20000; the "
                                                     "1 MiB get: a thousandth, in 5 x as many rounds)")
    p.add_argument("--rounds", type=int, help="rounds per case (default 3)")
    p.add_argument("--virtual-node-size", type=int, metavar="K",
                   help="split the node into virtual nodes of K ranks (PGASCOL_NODE_SIZE)")
    p.add_argument("--mpi-launcher", metavar="CMD", help="launcher command line (default: detected)")
    p.add_argument("--json", metavar="FILE", help="write the results (schema %s)" % SCHEMA)
    bench_background.add_arguments(p)
    p.add_argument("--quick", action="store_true", help="np=2 and small sizes (under a minute)")
    return p


def worker_argv(args):
    """The worker's arguments for the host's: the defaults, --quick's, then what was given."""
    defaults = parser().parse_args([])
    argv = ["pgascol.tools.bench_pgas", "--benchmarks", args.benchmarks, "--variants", args.variants]
    for name in ("table_log2", "element_table_log2", "stream_n", "stream_block", "latency_iters", "rounds"):
        value = getattr(args, name)
        if value is None:
            value = QUICK.get(name, getattr(defaults, name)) if args.quick else getattr(defaults, name)
        setattr(args, name, value)
        argv += ["--" + name.replace("_", "-"), str(value)]
    return argv


def parse_nps(spec):
    try:
        nps = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        nps = []
    if not nps or min(nps) < 1:
        raise BenchError("bad --np %r: rank counts >= 1, comma-separated, e.g. 1,2" % spec)
    return list(dict.fromkeys(nps))


def cmd_pgas(args, argv):
    nps = parse_nps(args.np or ("2" if args.quick else "1,2"))
    worker = worker_argv(args)
    check_args(args)
    if args.virtual_node_size is not None and args.virtual_node_size < 1:
        raise BenchError("--virtual-node-size must be >= 1")
    prefix, impl = find_launcher(args.mpi_launcher)
    results, failures, lib = [], [], None
    with bench_background.background_job(args.background, prefix, args.background_np) as bg:
        for np_ in nps:
            rc, job = run_job(prefix, np_, args.virtual_node_size, worker)
            if job is None:
                raise BenchError("the MPI job of %d rank(s) failed (exit status %s); see its output above"
                                 % (np_, rc))
            results += job["results"]
            failures += ["np=%d: %s" % (np_, f) for f in job["failures"]]
            lib = job["mpi_library"]
    meta = collect_meta(" ".join(["pgascol-bench", *argv]), nps[0] if len(nps) == 1 else None,
                        args.virtual_node_size, lib, " ".join(prefix), impl)
    meta.update(nps=nps, rounds=args.rounds, benchmark="pgas", background=bg,
                params={k: getattr(args, k) for k in ("table_log2", "element_table_log2", "stream_n",
                                                      "stream_block", "latency_iters")})
    doc = {"schema": SCHEMA, "meta": meta, "results": results}
    print()
    print(format_pgas(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print("# wrote %s" % args.json)
    for failure in failures:
        print("VERIFICATION FAILED: %s" % failure)
    return 1 if failures else 0


def format_pgas(results):
    """The table of a pgas run, then the ratios the targets are about."""
    lines = ["%-28s %3s %-8s %9s %12s %12s %12s  %s" % ("case", "np", "impl", "bytes", "best us", "avg us",
                                                          "rate", "checked")]
    for r in results:
        checked = ("errors %d" % r["errors"]) if "errors" in r else ""
        lines.append("%-28s %3d %-8s %9s %12.2f %12.2f %8.4g %-4s  %s" % (
            r["op"], r["np"], r["impl"], human(r["bytes"]), r["t_min_us"], r["t_avg_us"], r["rate"],
            r["unit"], checked))
    lines += ["", "ratios (best rounds):"] + summary(results)
    return "\n".join(lines)


def summary(results):
    """RandomAccess: each variant against the better MPI way, and its
    efficiency from 1 rank; STREAM: local() against numpy processes, slicing
    against local(); latency: against MPI, the bulk get against a memcpy."""
    out = []
    by = {(r["op"], r["np"], r["impl"]): r for r in results}
    nps = sorted({r["np"] for r in results})
    for P in nps:
        mpi = [by[k]["rate"] for k in by if k[1] == P and k[0] in ("pgas.randomaccess." + v for v in RA_MPI)]
        for v in ("strict", "update", "batched"):
            r = by.get(("pgas.randomaccess." + v, P, "pgascol"))
            if r is None:
                continue
            text = "randomaccess %-8s np=%d: %.4f GUPS" % (v, P, r["rate"])
            if mpi:
                text += ", %.2fx the better MPI way (%.4f GUPS)" % (r["rate"] / max(mpi), max(mpi))
            one = by.get(("pgas.randomaccess." + v, 1, "pgascol"))
            if one is not None and P > 1 and one["bytes"] == r["bytes"]:
                text += ", efficiency from the np=1 job %.0f%%" % (100 * r["rate"] / (P * one["rate"]))
            alone = by.get(("pgas.randomaccess.%s.one_rank" % v, P, "pgascol"))
            if alone is not None:
                text += ", from one rank in the same job %.0f%%" % (100 * r["rate"] / (P * alone["rate"]))
            out.append(text)
        local, ref = by.get(("pgas.stream.local", P, "pgascol")), by.get(("pgas.stream.local", P, "numpy"))
        if local and ref:
            out.append("stream local np=%d: %.2f GB/s, %.2fx numpy processes (%.2f GB/s)"
                       % (P, local["rate"], local["rate"] / ref["rate"], ref["rate"]))
        sl = by.get(("pgas.stream.slicing", P, "pgascol"))
        if local and sl:
            out.append("stream slicing np=%d: %.2f GB/s, %.3fx local()" % (P, sl["rate"], sl["rate"] / local["rate"]))
        for r in results:
            if r["np"] == P and r["op"].startswith("pgas.latency.") and r["impl"] == "pgascol":
                m = next((x for x in results if x["op"] == r["op"] and x["np"] == P and x["impl"] == "mpi"
                          and x["bytes"] == r["bytes"]), None)
                text = "latency %s %s np=%d: %.2f us" % (r["op"].split(".")[-1], human(r["bytes"]), P, r["t_min_us"])
                if m:
                    text += ", MPI Get+Flush %.2f us (%.1fx faster)" % (m["t_min_us"], m["t_min_us"] / r["t_min_us"])
                if r["memcpy_us"]:
                    text += ", %.2fx a memcpy (%.2f us)" % (r["t_min_us"] / r["memcpy_us"], r["memcpy_us"])
                out.append(text)
    return out
