"""pgascol.upc: the eight UPC collectives over the combinatorial product of
the GWU UPC test suite (tests/mpi_programs/upc_cases.py lists the cases):
every collective x type x operator x flags x source affinity x
non-power-of-two sizes and element counts x block size.

Every rank runs every case in the same order; a case's failure is recorded
(not raised at once, so the ranks stay in step) and the test function fails
at the end listing the failed cases. Each rank checks its own part of the
destination against numpy computed on the whole source, which each rank
reads back with a one-sided get once per source (the gathered data).
PGASCOL_UPC_TEST_SAMPLE ("all" or a fraction) keeps all the cases or a fixed
random part of them; rank 0 prints the seed and the counts."""
import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas, upc
from pgascol.upc.plan import REDUCTION_ACROSS, REDUCTION_ANY_OP
from tests.mpi_programs import upc_cases as cases

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
NOSYNC_IN = upc.UPC_IN_NOSYNC
NOSYNC_OUT = upc.UPC_OUT_NOSYNC
MAX_REPORTED = 25
READBACK = []       # sources whose one-sided read-back differed from what was written


class Arrays:
    """Global arrays by (n, dtype, block), allocated once and reused."""

    def __init__(self):
        self.arrays = {}

    def get(self, n, dtype, block, role="src"):
        key = (n, np.dtype(dtype).str, block, role)
        if key not in self.arrays:
            a = pgas.zeros(COMM, n, dtype, block=block)
            self.arrays[key] = (a, a.layout.global_index(ME, np.arange(len(a.local()))))
        return self.arrays[key]

    def free(self):
        for a, _ in self.arrays.values():
            a.free()
        self.arrays = {}


def _set_mine(a, mine, full):
    """Write my part of global array a from the full content (numpy, by global index)."""
    a.local()[:] = full[mine]


def _report(what, done, failures):
    failures = READBACK + failures
    del READBACK[:]
    counts = WORLD.allreduce(len(failures))
    if ME == 0:
        print("%s: %d cases, seed %d, sample %s; %d failure(s) over all ranks"
              % (what, done, cases.seed(), __import__("os").environ.get("PGASCOL_UPC_TEST_SAMPLE", "all"),
                 counts))
    assert not failures, "%d case(s) failed on rank %d:\n%s" % (
        len(failures), ME, "\n".join(failures[:MAX_REPORTED]))


def _gathered(a):
    """The whole of global array a, read by every rank between barriers."""
    pgas.barrier(COMM)
    out = a[:]
    pgas.barrier(COMM)
    return out


def _sync_in(flags):
    if flags & NOSYNC_IN:       # NOSYNC: the caller makes the data ready everywhere
        pgas.barrier(COMM)


def _sync_out(flags):
    if flags & NOSYNC_OUT:      # NOSYNC: the caller waits for everyone to be done
        pgas.barrier(COMM)


# ---------------------------------------------------------------- data movement

def _move_arrays(arrays, coll, dtype, B, root, cycles=1):
    """(src, src offset, src base, dst, dst offset) of a case: UPC's views of
    the arrays (shared [nbytes] and shared [nbytes*THREADS] char) as global
    arrays whose blocks hold B elements, or P*B. With cycles=2 the arrays
    are twice as long and the operands start one cycle of blocks in (rank
    0 again, at phase 0); base is where the source's cycle starts."""
    one, row = P * B, P * P * B
    c, k = cycles, cycles - 1
    if coll == "broadcast":
        return arrays.get(c * one, dtype, B), k * one + root * B, k * one, arrays.get(c * one, dtype, B, "dst"), k * one
    if coll == "scatter":
        return (arrays.get(c * row, dtype, P * B), k * row + root * P * B, k * row,
                arrays.get(c * one, dtype, B, "dst"), k * one)
    if coll == "gather":
        return (arrays.get(c * one, dtype, B), k * one, k * one, arrays.get(c * row, dtype, P * B, "dst"),
                k * row + root * P * B)
    if coll == "gather_all":
        return arrays.get(c * one, dtype, B), k * one, k * one, arrays.get(c * row, dtype, P * B, "dst"), k * row
    if coll == "exchange":
        return arrays.get(c * row, dtype, P * B), k * row, k * row, arrays.get(c * row, dtype, P * B, "dst"), k * row
    return arrays.get(c * one, dtype, B), k * one, k * one, arrays.get(c * one, dtype, B, "dst"), k * one


def _sentinel(dtype):
    return np.array(0x5A, dtype) if np.dtype(dtype).kind != "f" else np.array(-7.25, dtype)


def _call_move(coll, dst, src, nbytes, flags, perm, algorithm=None):
    kw = {} if algorithm is None else {"algorithm": algorithm}
    if coll == "permute":
        upc.all_permute(dst, src, perm, nbytes, flags, **kw)
    else:
        getattr(upc, "all_" + coll)(dst, src, nbytes, flags, **kw)


def _run_move(arrays, perms, case, k, algorithm=None, cycles=1):
    """One data-movement case; returns a failure message or None."""
    coll, dtype, B, flags, root, variant = case
    (src, src_mine), soff, sbase, (dst, dst_mine), doff = _move_arrays(arrays, coll, dtype, B, root, cycles)
    isz = np.dtype(dtype).itemsize
    full = cases.values(src.size, dtype, k)
    _set_mine(src, src_mine, full)
    sentinel = _sentinel(dtype)
    dst.local()[:] = sentinel
    perm = None
    if coll == "permute":
        perm_array, pv = perms[variant]
        perm = perm_array
    _sync_in(flags)
    if k % 97 == 0 and not np.array_equal(_gathered(src), full):
        READBACK.append("case %d %r: reading the source back gave other data" % (k, case))
    try:
        _call_move(coll, (dst, doff) if doff or k % 2 else dst, (src, soff) if soff or k % 2 else src,
                   B * isz, flags, perm, algorithm)
    except Exception as exc:    # noqa: BLE001 - recorded, the ranks stay in step
        _sync_out(NOSYNC_OUT)
        return "case %d %r raised %s: %s" % (k, case, type(exc).__name__, exc)
    _sync_out(flags)
    want = np.full(dst.size, sentinel, dtype)
    region = cases.expected_move(coll, full[sbase:], P, B, root, None if perm is None else pv)
    want[doff:doff + len(region)] = region
    got = dst.local()
    if not np.array_equal(got, want[dst_mine]):
        bad = np.flatnonzero(got != want[dst_mine])
        return "case %d %s%s %s B=%d flags=%s root=%d: %d wrong element(s), first at global %d: %r, want %r" % (
            k, coll, "" if algorithm is None else "[%s]" % algorithm, dtype, B, cases.flag_name(upc, flags),
            root, len(bad), dst_mine[bad[0]],
            got[bad[0]], want[dst_mine][bad[0]])
    return None


def _perm_array(variant):
    """(a global array of P ints holding permutation `variant`, the permutation)."""
    pv = cases.permutation(P, variant)
    a = pgas.zeros(COMM, P, np.intc, block=1)
    a.local()[:] = pv[ME]
    pgas.barrier(COMM)
    return a, pv


def test_data_movement_every_case():
    every = cases.move_cases(upc, P)
    chosen = cases.sample(every, "move-%d" % P)
    arrays = Arrays()
    perms = {v: _perm_array(v) for v in (0, 1)}
    failures = []
    try:
        for k, case in enumerate(chosen):
            msg = _run_move(arrays, perms, case, k)
            if msg:
                failures.append(msg)
    finally:
        arrays.free()
        for a, _ in perms.values():
            a.free()
    _report("data movement (of %d)" % len(every), len(chosen), failures)


def test_operands_one_cycle_in():
    """(array, offset) operands one cycle of blocks into arrays twice as
    long (affinity to rank 0 and phase 0 again; the rooted side at its
    root's block there): every collective, every root, two block sizes and
    two flag settings."""
    arrays = Arrays()
    failures = []
    perm, pv = _perm_array(1)
    k = 30000
    try:
        for coll in cases.DATA_COLLECTIVES:
            for B in (1, 7):
                for flags in (0, upc.UPC_IN_MYSYNC | upc.UPC_OUT_MYSYNC):
                    for root in (range(P) if coll in cases.ROOTED else (0,)):
                        msg = _run_move(arrays, {1: (perm, pv)}, (coll, "int16", B, flags, root, 1), k, cycles=2)
                        k += 1
                        if msg:
                            failures.append(msg)
    finally:
        arrays.free()
        perm.free()
    _report("operands one cycle in", k - 30000, failures)


# ---------------------------------------------------------------- reductions

def _func_of(op, dtype):
    if op == "FUNC":
        return cases.comm_func(dtype)
    if op == "NONCOMM_FUNC":
        return cases.noncomm_func(dtype)
    return None


def _run_reduce(arrays, case, k, algorithm=None):
    coll, dtype, op, flags, blk, nelems, root = case
    src, src_mine = arrays.get(nelems, dtype, blk)
    full = cases.values(nelems, dtype, k, op)
    _set_mine(src, src_mine, full)
    if k % 97 == 0 and not np.array_equal(_gathered(src), full):
        READBACK.append("case %d %r: reading the source back gave other data" % (k, case))
    func = _func_of(op, dtype)
    sentinel = _sentinel(dtype)
    if coll == "reduce":
        dst, dst_mine = arrays.get(P, dtype, 1, "dst")
    else:
        dst, dst_mine = arrays.get(nelems, dtype, blk, "dst")
    dst.local()[:] = sentinel
    _sync_in(flags)
    try:
        fn = upc.all_reduce if coll == "reduce" else upc.all_prefix_reduce
        target = (dst, root) if coll == "reduce" else dst
        kw = {} if algorithm is None else {"algorithm": algorithm}
        fn(target, src, getattr(upc, op), nelems, blk, func=func, flags=flags, **kw)
    except Exception as exc:    # noqa: BLE001 - recorded, the ranks stay in step
        _sync_out(NOSYNC_OUT)
        return "case %d %r raised %s: %s" % (k, case, type(exc).__name__, exc)
    _sync_out(flags)
    if coll == "reduce":
        want = np.full(P, sentinel, dtype)
        want[root] = _expected("reduce", dtype, op, nelems, k, func)
    else:
        want = _expected("prefix_reduce", dtype, op, nelems, k, func)
    got = dst.local()
    if not np.array_equal(got, want[dst_mine]):
        bad = np.flatnonzero(got != want[dst_mine])
        return "case %d %s%s %s %s flags=%s blk=%r nelems=%d root=%d: %d wrong, first at global %d: %r, want %r" % (
            k, coll, "" if algorithm is None else "[%s]" % algorithm, dtype, op, cases.flag_name(upc, flags), blk, nelems, root, len(bad),
            dst_mine[bad[0]], got[bad[0]], want[dst_mine][bad[0]])
    return None


_EXPECTED = {}


def _expected(coll, dtype, op, nelems, salt, func):
    """numpy's result of a reduction case (cached: the cases of one source
    content differ only in flags, block size and root)."""
    key = (coll, dtype, op, nelems, salt)
    if key not in _EXPECTED:
        full = cases.values(nelems, dtype, salt, op)
        _EXPECTED[key] = (cases.fold if coll == "reduce" else cases.prefix)(op, full, func)
    return _EXPECTED[key]


def _reductions(which):
    every = [c for c in cases.reduce_cases(upc, P) if c[0] == which]
    chosen = cases.sample(every, "%s-%d" % (which, P))
    arrays = Arrays()
    failures = []
    try:
        for k, case in enumerate(chosen):
            msg = _run_reduce(arrays, case, k)
            if msg:
                failures.append(msg)
    finally:
        arrays.free()
    _report("%s (of %d)" % (which, len(every)), len(chosen), failures)


def test_reduce_every_case():
    _reductions("reduce")


def test_prefix_reduce_every_case():
    _reductions("prefix_reduce")


def test_large_reductions():
    """Element counts in the thousands (several blocks per rank, and parts
    of different sizes), default flags, every root; and every algorithm of
    all_reduce forced on runs longer than the static fragment (pieces of
    PGASCOL_UPC_CHUNK bytes, or halves), the flags and roots turning over."""
    arrays = Arrays()
    failures = []
    flagsets = [0, upc.UPC_IN_MYSYNC | upc.UPC_OUT_MYSYNC, upc.UPC_IN_NOSYNC | upc.UPC_OUT_NOSYNC]
    try:
        for coll in ("reduce", "prefix_reduce"):
            for k, (dtype, op) in enumerate((("float64", "ADD"), ("int32", "XOR"), ("uint64", "NONCOMM_FUNC")), 5000):
                for root, blk in enumerate((1, "*", 1000)):
                    msg = _run_reduce(arrays, (coll, dtype, op, 0, blk, 10007, root % P), k)
                    if msg:
                        failures.append(msg)
        k = 5100
        for algorithm in _usable_algorithms("reduce"):
            for dtype, op, blk in (("float64", "ADD", "*"), ("int16", "MIN", 1), ("uint8", "XOR", 5000)):
                case = ("reduce", dtype, op, flagsets[k % 3], blk, 100003, k % P)
                msg = _run_reduce(arrays, case, k, algorithm)
                k += 1
                if msg:
                    failures.append(msg)
    finally:
        arrays.free()
    _report("large reductions", 0, failures)


# ---------------------------------------------------------------- every algorithm

def _usable_algorithms(coll):
    """The algorithms pgascol.upc names for coll that this communicator can
    run: on one node all of them; across nodes, where the collective has
    ones that span nodes (hier*), those."""
    names = list(upc.ALGORITHMS.get(coll, ()))
    if pgas.context.of(COMM).nnodes > 1 and coll in REDUCTION_ACROSS:
        names = ["auto"] + list(REDUCTION_ACROSS[coll])
    elif pgas.context.of(COMM).nnodes > 1 and "hier" in names:
        names = [a for a in names if a.startswith("hier")]
    return names


def _any_op(coll, algorithm):
    """Whether algorithm takes FUNC and NONCOMM_FUNC (the others fold in C)."""
    return algorithm in REDUCTION_ANY_OP[coll]


# The operators each type meets once more in test_every_algorithm_forced, turning over the types.
OTHER_OPS = ("MULT", "MIN", "AND", "OR", "LOGAND")


# Algorithms that take some layouts only (and refuse the others before
# anything moves): the three-phase prefix reduce needs each rank's elements
# in one run, in rank order (blocked, or everything on rank 0).
LAYOUTS = {("prefix_reduce", "three-phase"): ("*", 0)}


def test_every_algorithm_forced():
    """Each algorithm of each collective, forced by algorithm=: every root,
    blocks of 1, 130 and 100003 bytes (beyond the static fragment, not a
    multiple of it), four flag settings turning over the roots, for the data
    movement; for the reductions every type with ADD, MAX, XOR (integers),
    LOGOR and both user functions, every block size the algorithm takes.
    A sampled run keeps a part of each algorithm's cases, at least one."""
    flagsets = [0, upc.UPC_IN_MYSYNC | upc.UPC_OUT_MYSYNC, upc.UPC_IN_NOSYNC | upc.UPC_OUT_NOSYNC,
                upc.UPC_IN_ALLSYNC | upc.UPC_OUT_MYSYNC]
    groups = []         # (collective, algorithm, [(run, case)])
    for coll in cases.DATA_COLLECTIVES:
        for algorithm in _usable_algorithms(coll):
            groups.append((coll, algorithm, [(_run_move, (coll, dtype, B, flagsets[(root + B) % 4] if B < 100000 else 0,
                                                    root, 1))
                                       for dtype, B in (("uint8", 1), ("float64", 130), ("uint8", 100003))
                                       for root in (range(P) if coll in cases.ROOTED else (0,))]))
    for coll in ("reduce", "prefix_reduce"):
        for algorithm in _usable_algorithms(coll):
            ops = ("ADD", "MAX", "XOR", "LOGOR") + (("FUNC", "NONCOMM_FUNC") if _any_op(coll, algorithm) else ())
            groups.append((coll, algorithm, [(_run_reduce, (coll, dtype, op, flagsets[k % 4], blk, 37, k % P))
                                       for k, (dtype, op, blk) in enumerate(
                                           (d, op, b) for i, d in enumerate(cases.REDUCE_TYPES)
                                           for op in ops + (OTHER_OPS[i % len(OTHER_OPS)],)
                                           if cases.op_defined(op, d)
                                           for b in LAYOUTS.get((coll, algorithm), cases.BLOCKS))]))
    arrays = Arrays()
    perm, pv = _perm_array(1)
    failures, done, k = [], 0, 20000
    try:
        for coll, algorithm, group in groups:
            for run, case in cases.sample(group, "algorithm-%s-%s-%d" % (coll, algorithm, P)):
                if run is _run_move:
                    msg = _run_move(arrays, {1: (perm, pv)}, case, k, algorithm)
                else:
                    msg = _run_reduce(arrays, case, k, algorithm)
                k, done = k + 1, done + 1
                if msg:
                    failures.append(msg)
    finally:
        arrays.free()
        perm.free()
    _report("every algorithm %s" % {c: _usable_algorithms(c) for c in upc.ALGORITHMS}, done, failures)
