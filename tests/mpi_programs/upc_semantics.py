"""pgascol.upc: what the synchronisation flags mean, misuse, user functions.

- The flags: under NOSYNC a root that only sends leaves a broadcast without
  waiting for slow readers, under ALLSYNC it waits for them; under
  IN_ALLSYNC and IN_MYSYNC nobody writes a late rank's destination or reads
  its source before it entered (sentinels that a too-early access would
  catch); under OUT_ALLSYNC every rank's destination is complete when any
  rank returns; under OUT_MYSYNC a rank returns once nobody will touch its
  data again (it overwrites its source at once and the result is still
  right), without waiting for ranks it has no data with.
- Misuse (nbytes against the arrays, a destination too small, the phase-0
  rule, a bad permutation, bad flags, an (op, type) pair UPC does not
  define, arguments that differ between ranks): ArgumentError on every rank,
  nothing written, and the communicator usable afterwards.
- User functions: NONCOMM_FUNC applied strictly in index order (2x2 matrix
  products, which do not commute), and every user function called on whole
  arrays, not once per element.

Timings use SLOW = 0.4 s for the late rank and accept up to SLOW / 2 where
a rank must not wait (the machine is shared and oversubscribed at np=8)."""
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas, upc
from pgascol.errors import ArgumentError, PgascolError
from tests.mpi_programs import upc_cases as cases

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
SLOW = 0.4
B = 5                    # float64 elements per block: nbytes = 40
NBYTES = B * 8
SENTINEL = -7.25


def _data(salt, n):
    return np.arange(n, dtype=np.float64) * 3 + salt


def _broadcast_arrays():
    """src: block B, the data in root 0's block; dst: block B, sentinels."""
    src = pgas.zeros(COMM, P * B, np.float64, block=B)
    dst = pgas.full(COMM, P * B, SENTINEL, np.float64, block=B)
    if ME == 0:
        src.local()[:] = _data(1, B)
    pgas.barrier(COMM)
    return src, dst


def _timed(fn, *args, **kw):
    t0 = time.perf_counter()
    fn(*args, **kw)
    return time.perf_counter() - t0


def _all_true(ok):
    return WORLD.allreduce(bool(ok), op=MPI.LAND)


# ---------------------------------------------------------------- flags

def test_nosync_root_leaves_without_waiting_for_slow_readers():
    src, dst = _broadcast_arrays()
    with src, dst:
        flags = upc.UPC_IN_NOSYNC | upc.UPC_OUT_NOSYNC
        if ME == 0:
            dt = _timed(upc.all_broadcast, dst, src, NBYTES, flags)
        else:
            time.sleep(SLOW)
            upc.all_broadcast(dst, src, NBYTES, flags)
        pgas.barrier(COMM)               # NOSYNC: the caller synchronises
        assert np.array_equal(dst.local()[:B], _data(1, B))
        if ME == 0 and P > 1:
            assert dt < SLOW / 2, "the root waited %.3f s under NOSYNC for readers %.1f s late" % (dt, SLOW)


def test_allsync_root_waits_for_slow_readers():
    """The contrast to the test above: the same broadcast under ALLSYNC."""
    src, dst = _broadcast_arrays()
    with src, dst:
        if ME == 0:
            dt = _timed(upc.all_broadcast, dst, src, NBYTES, 0)
        else:
            time.sleep(SLOW)
            upc.all_broadcast(dst, src, NBYTES, 0)
        assert np.array_equal(dst.local()[:B], _data(1, B))
        if ME == 0 and P > 1:
            assert dt > SLOW * 0.8, "the root returned after %.3f s under ALLSYNC, readers %.1f s late" % (dt, SLOW)


def test_mysync_rank_does_not_wait_for_ranks_it_has_no_data_with():
    """Broadcast from 0 with IN_MYSYNC | OUT_MYSYNC; rank 2 comes SLOW late.
    Rank 1's data is written by (or read from) the root only, in a flat
    algorithm and in a binomial tree either way round: it returns long
    before rank 2 calls. Under ALLSYNC it must wait for rank 2."""
    failures = []
    for flags, fast in ((upc.UPC_IN_MYSYNC | upc.UPC_OUT_MYSYNC, True), (0, False)):
        src, dst = _broadcast_arrays()
        with src, dst:
            dt = None
            if ME == 2:
                time.sleep(SLOW)
            if ME == 1:
                dt = _timed(upc.all_broadcast, dst, src, NBYTES, flags)
            else:
                upc.all_broadcast(dst, src, NBYTES, flags)
            if not np.array_equal(dst.local()[:B], _data(1, B)):
                failures.append("%s: wrong data" % cases.flag_name(upc, flags))
            pgas.barrier(COMM)
            if dt is not None and P >= 3:
                if fast and not dt < SLOW / 2:
                    failures.append("rank 1 waited %.3f s under MYSYNC for rank 2, %.1f s late" % (dt, SLOW))
                if not fast and not dt > SLOW * 0.8:
                    failures.append("rank 1 returned after %.3f s under ALLSYNC, rank 2 %.1f s late" % (dt, SLOW))
    assert not failures, failures


def _algorithms(collective, kind):
    """The default (None) and the algorithms pgascol.upc names for a
    collective whose name says `kind` ("push": they write peers' parts,
    "pull": they read them; "last", whose last member to arrive does both,
    always) that this communicator can run (across nodes, the one that
    spans nodes, "hier", where the collective has it)."""
    names = [a for a in upc.ALGORITHMS.get(collective, ()) if kind in a or a in ("hier", "last")]
    if pgas.context.of(COMM).nnodes > 1 and "hier" in upc.ALGORITHMS.get(collective, ()):
        names = [a for a in names if a == "hier"]
    return [None] + names


def _with_algorithm(fn, algorithm, *args, **kw):
    if algorithm is not None:
        kw["algorithm"] = algorithm
    return fn(*args, **kw)


# IN_ALLSYNC and IN_MYSYNC: the default algorithm under both, the others alternately
IN_SYNCS = (upc.UPC_IN_MYSYNC | upc.UPC_OUT_MYSYNC, upc.UPC_IN_ALLSYNC | upc.UPC_OUT_ALLSYNC)


def test_in_sync_nobody_writes_a_late_rank_before_it_entered():
    """Broadcast from 0: the late rank's destination still holds its
    sentinel right before it calls (a push that did not wait would have
    overwritten it), then holds the data. IN_ALLSYNC and IN_MYSYNC, every
    algorithm of the broadcast."""
    late = P - 1
    failures = []
    for i, algorithm in enumerate(_algorithms("broadcast", "push")):
        for flags in IN_SYNCS[i % 2:] if algorithm else IN_SYNCS:
            src, dst = _broadcast_arrays()
            with src, dst:
                if ME == late:
                    time.sleep(SLOW)
                    if not (dst.local()[:B] == SENTINEL).all():
                        failures.append("%s %s: the late rank's block was written before it entered"
                                        % (algorithm, cases.flag_name(upc, flags)))
                _with_algorithm(upc.all_broadcast, algorithm, dst, src, NBYTES, flags)
                if not np.array_equal(dst.local()[:B], _data(1, B)):
                    failures.append("%s %s: wrong data" % (algorithm, cases.flag_name(upc, flags)))
                pgas.barrier(COMM)
    assert not failures, failures


def test_in_sync_nobody_reads_a_late_rank_before_it_entered():
    """Gather to 0: the late rank writes its source block only right before
    it calls (before that it holds stale values); the root must get the
    fresh ones. IN_ALLSYNC and IN_MYSYNC, every algorithm of the gather."""
    late = P - 1
    failures = []
    for i, algorithm in enumerate(_algorithms("gather", "pull")):
        for flags in IN_SYNCS[i % 2:] if algorithm else IN_SYNCS:
            with pgas.full(COMM, P * B, -1.0, np.float64, block=B) as src, \
                    pgas.full(COMM, P * P * B, SENTINEL, np.float64, block=P * B) as dst:
                if ME != late:
                    src.local()[:] = _data(10 * ME, B)
                pgas.barrier(COMM)
                if ME == late:
                    time.sleep(SLOW)
                    src.local()[:] = _data(10 * ME, B)
                _with_algorithm(upc.all_gather, algorithm, dst, src, NBYTES, flags)
                if ME == 0:
                    want = np.concatenate([_data(10 * r, B) for r in range(P)])
                    if not np.array_equal(dst.local()[:P * B], want):
                        failures.append("%s %s: the root gathered %r, want %r" % (
                            algorithm, cases.flag_name(upc, flags), dst.local()[:P * B], want))
                pgas.barrier(COMM)
    assert not failures, failures


def test_out_allsync_every_destination_complete_on_return():
    """Right after an ALLSYNC broadcast returns, any rank reads every rank's
    block complete (nobody returned before everybody finished)."""
    failures = []
    for algorithm in _algorithms("broadcast", ""):
        src, dst = _broadcast_arrays()
        with src, dst:
            if ME == P - 1:
                time.sleep(SLOW / 3)
            _with_algorithm(upc.all_broadcast, algorithm, dst, src, NBYTES, upc.UPC_OUT_ALLSYNC)
            seen = dst[:]
            pgas.barrier(COMM)
            if not np.array_equal(seen, np.tile(_data(1, B), P)):
                failures.append("%s: right after the return rank %d saw %r" % (algorithm, ME, seen))
    assert not failures, failures


def test_out_mysync_rank_returns_once_nobody_touches_its_data():
    """Gather to 0 and broadcast from 0 with OUT_MYSYNC: each rank
    overwrites its source the moment it returns; the results are still the
    original data (nobody read a source after its owner returned)."""
    flags = upc.UPC_IN_ALLSYNC | upc.UPC_OUT_MYSYNC
    failures = []
    for algorithm in _algorithms("gather", "pull"):
        with pgas.zeros(COMM, P * B, np.float64, block=B) as src, \
                pgas.full(COMM, P * P * B, SENTINEL, np.float64, block=P * B) as dst:
            src.local()[:] = _data(10 * ME, B)
            pgas.barrier(COMM)
            _with_algorithm(upc.all_gather, algorithm, dst, src, NBYTES, flags)
            src.local()[:] = -99.0
            pgas.barrier(COMM)
            if ME == 0:
                want = np.concatenate([_data(10 * r, B) for r in range(P)])
                if not np.array_equal(dst.local()[:P * B], want):
                    failures.append("gather %s: the root got %r" % (algorithm, dst.local()[:P * B]))
            pgas.barrier(COMM)
    for algorithm in _algorithms("broadcast", "pull"):
        src, dst = _broadcast_arrays()
        with src, dst:
            _with_algorithm(upc.all_broadcast, algorithm, dst, src, NBYTES, flags)
            src.local()[:] = -99.0
            if not np.array_equal(dst.local()[:B], _data(1, B)):
                failures.append("broadcast %s: rank %d's block incomplete on return" % (algorithm, ME))
            pgas.barrier(COMM)
            if not np.array_equal(dst[:], np.tile(_data(1, B), P)):
                failures.append("broadcast %s: a source was read after its owner returned" % algorithm)
            pgas.barrier(COMM)
    assert not failures, failures


# ---------------------------------------------------------------- user functions

class Counted:
    """A user function that counts its calls and the elements it gets."""

    def __init__(self, fn):
        self.fn, self.calls, self.elements = fn, 0, 0

    def __call__(self, a, b):
        self.calls += 1
        self.elements += np.size(a)
        return self.fn(a, b)


def test_noncomm_func_is_applied_in_index_order():
    """2x2 matrix products (uint64, 16-bit fields): reduce and prefix
    reduce equal numpy's left-to-right fold, which the reversed order and a
    rotation do not (checked, so the test can fail), for every block size
    and root."""
    n = 7 * P + 5
    x = cases.values(n, "uint64", 77, "NONCOMM_FUNC")
    want = cases.fold("NONCOMM_FUNC", x, cases.compose_2x2)
    assert want != cases.fold("NONCOMM_FUNC", x[::-1], cases.compose_2x2)
    assert want != cases.fold("NONCOMM_FUNC", np.roll(x, 3), cases.compose_2x2)
    want_prefix = cases.prefix("NONCOMM_FUNC", x, cases.compose_2x2)
    failures = []
    for blk in (1, 3, "*", 0):
        with pgas.zeros(COMM, n, np.uint64, block=blk) as src, \
                pgas.zeros(COMM, n, np.uint64, block=blk) as pre, \
                pgas.zeros(COMM, P, np.uint64, block=1) as out:
            src.local()[:] = x[src.layout.global_index(ME, np.arange(len(src.local())))]
            pgas.barrier(COMM)
            for root in range(P):
                upc.all_reduce((out, root), src, upc.NONCOMM_FUNC, n, blk, func=cases.compose_2x2)
                if ME == root and out.local()[0] != want:
                    failures.append("reduce blk=%r root=%d: %r, want %r" % (blk, root, out.local()[0], want))
            upc.all_prefix_reduce(pre, src, upc.NONCOMM_FUNC, n, blk, func=cases.compose_2x2)
            mine = pre.layout.global_index(ME, np.arange(len(pre.local())))
            if not np.array_equal(pre.local(), want_prefix[mine]):
                failures.append("prefix reduce blk=%r: out of order" % blk)
    assert not failures, failures


def test_user_functions_are_called_on_arrays_not_per_element():
    """10007 elements: a commutative FUNC and a NONCOMM_FUNC are called a
    few times per rank on arrays (never once per element), and give numpy's
    result."""
    n = 10007
    x = cases.values(n, "int64", 5, "NONCOMM_FUNC")
    wants = {"FUNC": (np.add.reduce(x), np.cumsum(x)),
             "NONCOMM_FUNC": (cases.fold("NONCOMM_FUNC", x, cases.compose_2x2),
                              cases.prefix("NONCOMM_FUNC", x, cases.compose_2x2))}
    failures = []
    for blk in (1, "*"):
        with pgas.zeros(COMM, n, np.int64, block=blk) as src, \
                pgas.zeros(COMM, n, np.int64, block=blk) as pre, \
                pgas.zeros(COMM, P, np.int64, block=1) as out:
            src.local()[:] = x[src.layout.global_index(ME, np.arange(len(src.local())))]
            pgas.barrier(COMM)
            for op, fn in ((upc.FUNC, np.add), (upc.NONCOMM_FUNC, cases.compose_2x2)):
                name = "FUNC" if op == upc.FUNC else "NONCOMM_FUNC"
                counted = Counted(fn)
                upc.all_reduce((out, 0), src, op, n, blk, func=counted)
                if ME == 0 and out.local()[0] != wants[name][0]:
                    failures.append("reduce %s blk=%r: wrong result" % (name, blk))
                counted_prefix = Counted(fn)
                upc.all_prefix_reduce(pre, src, op, n, blk, func=counted_prefix)
                mine = pre.layout.global_index(ME, np.arange(len(pre.local())))
                if not np.array_equal(pre.local(), wants[name][1][mine]):
                    failures.append("prefix reduce %s blk=%r: wrong result" % (name, blk))
                calls = WORLD.allreduce(counted.calls + counted_prefix.calls)
                if calls > n // 20:
                    failures.append("%s blk=%r: %d calls for %d elements" % (name, blk, calls, n))
    assert not failures, failures


# ---------------------------------------------------------------- misuse

def _refused_everywhere(label, fn, *args, **kw):
    """Call fn expecting ArgumentError; '' when every rank got it, else why not."""
    try:
        fn(*args, **kw)
        got = "returned normally"
    except ArgumentError as exc:
        got = "" if str(exc) else "ArgumentError without a message"
    except Exception as exc:     # noqa: BLE001 - reported
        got = "%s: %s" % (type(exc).__name__, exc)
    outcomes = WORLD.allgather(got)
    bad = ["rank %d %s" % (r, o) for r, o in enumerate(outcomes) if o]
    return "%s: %s" % (label, "; ".join(bad)) if bad else ""


def _untouched(arrays, values):
    return _all_true(all((a.local() == v).all() for a, v in zip(arrays, values)))


def _still_usable():
    """A correct broadcast and an MPI-style collective after a refusal."""
    src, dst = _broadcast_arrays()
    with src, dst:
        upc.all_broadcast(dst, src, NBYTES)
        ok = np.array_equal(dst.local()[:B], _data(1, B))
    return _all_true(ok) and COMM.allreduce(1) == P


def _misuse(label, fn, *args, arrays=(), **kw):
    if ME == 0:
        print("misuse:", label, flush=True)
    before = [a.local().copy() for a in arrays]
    why = _refused_everywhere(label, fn, *args, **kw)
    if why:
        if ME == 0:
            print("  not refused everywhere:", why, flush=True)
        return [why]
    out = []
    if not _untouched(arrays, before):
        out.append("%s: data was written before the refusal" % label)
    if not _still_usable():
        out.append("%s: the communicator is not usable afterwards" % label)
    return out


def test_misuse_of_the_data_movement_collectives():
    failures = []
    src, dst = _broadcast_arrays()
    small = pgas.full(COMM, P * B - 1, SENTINEL, np.float64, block=B)
    row = pgas.full(COMM, P * P * B, SENTINEL, np.float64, block=P * B)
    row_small = pgas.full(COMM, P * P * B - 1, SENTINEL, np.float64, block=P * B)
    perm = pgas.zeros(COMM, P, np.intc, block=1)
    watched = (src, dst, small, row, row_small)
    try:
        m = lambda label, fn, *a, **kw: failures.extend(_misuse(label, fn, *a, arrays=watched, **kw))  # noqa: E731
        m("nbytes not a multiple of the element size", upc.all_broadcast, dst, src, NBYTES + 1)
        m("nbytes larger than the destination's block", upc.all_broadcast, dst, src, 2 * NBYTES)
        m("nbytes negative", upc.all_broadcast, dst, src, -NBYTES)
        m("broadcast destination too small", upc.all_broadcast, small, src, NBYTES)
        m("scatter destination too small", upc.all_scatter, small, (row, 0), NBYTES)
        m("gather destination too small", upc.all_gather, (row_small, (P - 1) * P * B), src, NBYTES)
        m("gather_all destination too small", upc.all_gather_all, row_small, src, NBYTES)
        m("exchange destination too small", upc.all_exchange, row_small, row, NBYTES)
        m("destination offset past the end", upc.all_broadcast, (dst, P * B), src, NBYTES)
        m("destination offset not at a block's start (phase 0)", upc.all_broadcast, (dst, 1), src, NBYTES)
        m("source block spanning two ranks", upc.all_broadcast, dst, (src, 1), NBYTES)
        bad_flags = [(1 << 30, "an unknown bit"), (-1, "negative")]
        for a, b, what in (("IN_MYSYNC", "IN_NOSYNC", "two IN modes"), ("OUT_MYSYNC", "OUT_NOSYNC", "two OUT modes"),
                           ("IN_ALLSYNC", "IN_NOSYNC", "IN_ALLSYNC with IN_NOSYNC")):
            fa, fb = getattr(upc, "UPC_" + a), getattr(upc, "UPC_" + b)
            if fa and fb and fa & fb == 0:      # distinct bits: both given is a contradiction
                bad_flags.append((fa | fb, what))
        for flags, what in bad_flags:
            m("flags %s" % what, upc.all_broadcast, dst, src, NBYTES, flags)
        # a permutation of 0..P-1 or nothing, on every rank
        for values, what in (([P] * P, "out of range"), ([-1] * P, "negative"),
                             ([0] * P if P > 1 else None, "with duplicates")):
            if values is None:
                continue
            perm.local()[:] = values[ME]
            pgas.barrier(COMM)
            m("perm %s" % what, upc.all_permute, dst, src, perm, NBYTES)
    finally:
        for a in (*watched, perm):
            a.free()
    assert not failures, "\n".join(failures)


def test_misuse_of_the_reductions():
    failures = []
    n = 2 * P + 3
    f64 = pgas.full(COMM, n, 2.0, np.float64, block=3)
    f32 = pgas.full(COMM, n, 2.0, np.float32, block=3)
    ld = pgas.full(COMM, n, 2.0, np.longdouble, block=3)
    i32 = pgas.full(COMM, n, 2, np.int32, block=3)
    out64 = pgas.full(COMM, P, SENTINEL, np.float64, block=1)
    out32 = pgas.full(COMM, P, -3, np.int32, block=1)
    pre64 = pgas.full(COMM, n, SENTINEL, np.float64, block=3)
    watched = (f64, f32, ld, i32, out64, out32, pre64)
    try:
        m = lambda label, fn, *a, **kw: failures.extend(_misuse(label, fn, *a, arrays=watched, **kw))  # noqa: E731
        m("AND on float64", upc.all_reduce, (out64, 0), f64, upc.AND, n, 3)
        m("XOR on float32", upc.all_reduce, (out64, 0), f32, upc.XOR, n, 3)
        m("OR on long double", upc.all_prefix_reduce, ld, ld, upc.OR, n, 3)
        m("AND on float64, prefix", upc.all_prefix_reduce, pre64, f64, upc.AND, n, 3)
        m("an unknown operator", upc.all_reduce, (out64, 0), f64, 12345, n, 3)
        m("FUNC without a function", upc.all_reduce, (out64, 0), f64, upc.FUNC, n, 3)
        m("NONCOMM_FUNC with something not callable", upc.all_reduce, (out64, 0), f64, upc.NONCOMM_FUNC,
          n, 3, func=42)
        m("nelems beyond the source", upc.all_reduce, (out64, 0), f64, upc.ADD, n + 1, 3)
        m("nelems negative", upc.all_reduce, (out64, 0), f64, upc.ADD, -1, 3)
        m("blk_size not the source's block", upc.all_reduce, (out64, 0), f64, upc.ADD, n, 4)
        m("destination of another type", upc.all_reduce, (out32, 0), f64, upc.ADD, n, 3)
        m("prefix destination of another type", upc.all_prefix_reduce, pre64, i32, upc.ADD, n, 3)
        m("prefix destination too small", upc.all_prefix_reduce, out64, f64, upc.ADD, n, 3)
        m("reduce destination past the end", upc.all_reduce, (out64, P), f64, upc.ADD, n, 3)
        m("bad flags", upc.all_reduce, (out64, 0), f64, upc.ADD, n, 3, flags=1 << 30)
        m("FUNC by an algorithm that folds in C", upc.all_reduce, (out64, 0), f64, upc.FUNC, n, 3,
          func=np.add, algorithm="binomial-push")
        m("an unknown reduce algorithm", upc.all_reduce, (out64, 0), f64, upc.ADD, n, 3, algorithm="ring")
    finally:
        for a in watched:
            a.free()
    assert not failures, "\n".join(failures)


def _differing(label, call):
    """One case of arguments that differ between ranks, on a communicator of
    its own (a refusal on some ranks only may abort that communicator's node
    team, which is the engine's rule for calls out of step): every rank must
    raise a pgascol error that names the collective; nothing is written."""
    comm = pgascol.Comm(WORLD.Dup())
    n = 2 * P + 3
    src = pgas.zeros(comm, P * B, np.float64, block=B)
    dst = pgas.full(comm, P * B, SENTINEL, np.float64, block=B)
    f64 = pgas.full(comm, n, 2.0, np.float64, block=3)
    out64 = pgas.full(comm, P, SENTINEL, np.float64, block=1)
    scan64 = pgas.full(comm, n, SENTINEL, np.float64, block=3)
    if ME == 0:
        src.local()[:] = _data(1, B)
    pgas.barrier(comm)
    try:
        call(src, dst, f64, out64, n, scan64)
        got = "returned normally"
    except PgascolError as exc:
        got = "" if "all_" in str(exc) else "%s without the collective's name: %s" % (type(exc).__name__, exc)
    except Exception as exc:     # noqa: BLE001 - reported
        got = "%s: %s" % (type(exc).__name__, exc)
    written = not all((a.local() == SENTINEL).all() for a in (dst, out64, scan64))
    outcomes = WORLD.allgather((got, written))
    for a in (src, dst, f64, out64, scan64):
        try:
            a.free()
        except PgascolError:
            pass                # the node team was aborted: the views go with the process
    try:
        comm.Free()
    except PgascolError:
        pass
    bad = ["rank %d %s" % (r, o) for r, (o, _) in enumerate(outcomes) if o]
    bad += ["rank %d: data written" % r for r, (_, w) in enumerate(outcomes) if w]
    return ["%s: %s" % (label, "; ".join(bad))] if bad else []


def test_misuse_arguments_differing_between_ranks():
    """Last: a refusal on some ranks only (each case on its own communicator).
    One rank has nobody to differ from."""
    if P == 1:
        return
    cases_ = [
        ("nbytes differing between ranks",
         lambda src, dst, f, o, n, *_: upc.all_broadcast(dst, src, NBYTES if ME else 2 * NBYTES)),
        # The root under ALLSYNC, the readers under MYSYNC: each waits on a peer
        # before it moves data, where the signatures are compared. (A rank that
        # waits for nobody before moving data, under IN_NOSYNC, or a MYSYNC root
        # that only copies its own block, checks nothing: its peers that wait
        # find the disagreement, it cannot.)
        ("flags differing between ranks",
         lambda src, dst, f, o, n, *_: upc.all_broadcast(dst, src, NBYTES,
                                                      upc.UPC_IN_MYSYNC | upc.UPC_OUT_MYSYNC if ME else 0)),
        ("operator differing between ranks",
         lambda src, dst, f, o, n, *_: upc.all_reduce((o, 0), f, upc.ADD if ME else upc.MULT, n, 3)),
        ("nelems differing between ranks",
         lambda src, dst, f, o, n, *_: upc.all_reduce((o, 0), f, upc.ADD, n - (ME == 0), 3)),
    ]
    cases_ += [
        # the prefix reduce on one node is a C program; across nodes its agreement's Allreduce
        ("prefix operator differing between ranks",
         lambda src, dst, f, o, n, p: upc.all_prefix_reduce(p, f, upc.ADD if ME else upc.MULT, n, 3)),
        ("prefix nelems differing between ranks",
         lambda src, dst, f, o, n, p: upc.all_prefix_reduce(p, f, upc.ADD, n - (ME == 0), 3)),
        ("prefix operator built in on some ranks, a function on others",
         lambda src, dst, f, o, n, p: upc.all_prefix_reduce(p, f, upc.FUNC if ME == 0 else upc.ADD, n, 3, np.add)),
        ("prefix algorithm differing between ranks",      # one run per rank: the default is the C program
         lambda src, dst, f, o, n, p: upc.all_prefix_reduce(p, f, upc.ADD, min(n, 3 * P), 3,
                                                            algorithm=None if ME else "allgather")),
        # rank 1 under MYSYNC waits for rank 0 only, then writes: it must raise before (a rank without
        # elements under MYSYNC waits for nobody and cannot tell, as a NOSYNC one)
        ("prefix flags differing between ranks",
         lambda src, dst, f, o, n, p: upc.all_prefix_reduce(p, f, upc.ADD, n, 3, None,
                                                            upc.UPC_IN_MYSYNC | upc.UPC_OUT_MYSYNC if ME == 1 else 0)),
    ]
    if P > 1:
        cases_.append(("root differing between ranks",
                       lambda src, dst, f, o, n, *_: upc.all_broadcast(dst, (src, B if ME == 0 else 0), NBYTES)))
    failures = []
    for label, call in cases_:
        failures += _differing(label, call)
    assert not failures, "\n".join(failures)
