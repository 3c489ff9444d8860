"""Errors when the ranks' calls disagree (pgascol.Comm). Calls out of step,
another count, root or recvcounts in a reduction (recvcounts of the same
hash too), a reduction's basic type that differs at the same byte count,
every rank taking itself for a Bcast's root: every rank raises a mismatch
naming it before any data moves, at once or at its next call. A Scatter(v)
whose root's count for a rank differs from that rank's: it fails there,
nobody hangs; a Gather(v) of which a rank sends another count than the
root receives: the root fails, nobody hangs, nothing lands past its
buffer. Calls whose
paths differ: one rank's arguments take the call to MPI (a user-defined
operator, a buffer without the buffer protocol, a derived datatype in a
reduction) while the others' go to pgascol; on one node every rank ends the
call at once and the communicator stays usable, across nodes all fail at
once; the same operator on every rank takes every rank to MPI, and works.
Run in the launch of the chapter test_errors (comm_errors_refusals.py)."""
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import (ArgumentError, CollectiveMismatchError, DatatypeMismatchError, PeerRefusedError,
                            TeamAbortedError)
from tests.mpi_programs.comm_errors_common import ME, P, WORLD, _DLPackOnly, _flat_comm, _still_usable


def test_calls_out_of_step_are_caught_before_data_moves():
    """Rank 0 calls a Bcast the others skip, then everybody calls Allreduce:
    rank 0's Allreduce would pair with the others' next call. Every rank
    must raise (none may return a wrong sum), naming the mismatch."""
    c = _flat_comm()
    if c is None:
        return
    try:
        if ME == 0:
            c.Bcast(np.ones(2), root=0)
        x = np.full(1000, 1.0)
        y = np.zeros_like(x)
        try:
            c.Allreduce(x, y)
            c.Allreduce(x, y)    # rank 0's second one pairs with nobody: it must not hang either
        except (CollectiveMismatchError, TeamAbortedError) as exc:
            assert "collectives out of step" in str(exc), str(exc)
            assert "Bcast (root 0)" in str(exc) and "Allreduce (float64, SUM)" in str(exc), str(exc)
        else:
            raise AssertionError("rank %d: out-of-step calls went unnoticed (y[0] = %g)" % (ME, y[0]))
        # Later calls: the same error class and a message naming them on
        # every rank, the one that noticed the mismatch included.
        try:
            c.Barrier()
        except TeamAbortedError as exc:
            assert str(exc).startswith("Barrier: the node team was aborted"), str(exc)
            assert "collectives out of step" in str(exc), str(exc)
        else:
            raise AssertionError("rank %d: a Barrier on an aborted team ran" % ME)
    finally:
        c.Free()


def _shape_differs(name, call, words):
    """Rank 0 passes another count (or recvcounts, or root) to a reduction
    than the others: every member splits the vector by its own count, so
    without the shape in the signature they would fold garbage. Every rank
    raises a mismatch naming it, at once or at its next call, and none
    returns a result it believes. Also for other mismatches of the
    signature (a basic type that differs at the same byte count)."""
    c = _flat_comm()
    if c is None:
        return
    start = time.monotonic()
    try:
        try:
            call(c)
            c.Barrier()     # a member that waited for nobody learns it here
        except (CollectiveMismatchError, TeamAbortedError) as exc:
            assert str(exc).startswith(name) or "aborted by local rank" in str(exc), str(exc)
            assert all(w in str(exc) for w in words), str(exc)
            assert time.monotonic() - start < 2.5
        else:
            raise AssertionError("rank %d: a mismatched %s went unnoticed" % (ME, name))
    finally:
        c.Free()


def _counts(small, large):
    """Rank 0's count and everyone else's."""
    return small if ME == 0 else large


def test_allreduce_of_different_counts_is_a_mismatch():
    # inline and staged; (4, 991) and (1000, 1987): counts a 10-bit hash of
    # the shape (the signature before it compared counts exactly) told apart
    # from no other
    for small, large in ((4, 8), (1, 2), (40_000, 80_000), (1024, 2048), (4, 991), (1000, 1987)):
        n = _counts(small, large)
        _shape_differs("Allreduce", lambda c: c.Allreduce(np.ones(n), np.zeros(n)),
                       ["reduces a different number of elements", "every rank must pass the same count"])


def test_reduce_of_different_counts_or_roots_is_a_mismatch():
    n = _counts(4, 8)
    _shape_differs("Reduce", lambda c: c.Reduce(np.ones(n), np.zeros(n), root=0),
                   ["a different number of elements (or to a different root)"])
    root = _counts(0, 1)
    _shape_differs("Reduce", lambda c: c.Reduce(np.ones(4), np.zeros(4), root=root),
                   ["a different number of elements (or to a different root)"])


def test_scan_of_different_counts_is_a_mismatch():
    n = _counts(4, 8)
    _shape_differs("Scan", lambda c: c.Scan(np.ones(n), np.zeros(n)), ["a different number of elements"])


def test_exscan_of_different_counts_is_a_mismatch():
    n = _counts(4, 8)
    _shape_differs("Exscan", lambda c: c.Exscan(np.ones(n), np.zeros(n)), ["a different number of elements"])


def test_reduce_scatter_block_of_different_counts_is_a_mismatch():
    n = _counts(4, 8)
    _shape_differs("Reduce_scatter_block",
                   lambda c: c.Reduce_scatter_block(np.ones(n * P), np.zeros(n)),
                   ["a different number of elements"])


def test_reduce_scatter_of_other_recvcounts_is_a_mismatch():
    """The same total, split otherwise: rank 0 moves an element from the
    last block to the first."""
    counts = [3] * P
    if ME == 0:
        counts[0], counts[-1] = 4, 2
    _shape_differs("Reduce_scatter",
                   lambda c: c.Reduce_scatter(np.ones(3 * P), np.zeros(counts[ME]), counts),
                   ["other recvcounts", "every rank must pass the same recvcounts"])


# Per team size: two first blocks a, b of a vector of 2^23 int8 split
# [a, 2^23 - a, 0, ...] whose block bounds a 41-bit hash of the shape (the
# signature before the members compared the bounds in full) told apart from
# no other. Found by hashing every a below 2^23 and sorting.
_EQUAL_HASH_SPLITS = {2: (4163525, 5887940), 3: (1377336, 8278009), 4: (636180, 3374131),
                      8: (2507564, 7411116)}


def test_reduce_scatter_of_recvcounts_of_equal_hash_is_a_mismatch():
    """Rank 0 splits the same total otherwise, by recvcounts whose hash
    equals the others': the members compare the bounds themselves."""
    if P not in _EQUAL_HASH_SPLITS:
        return
    total, first = 1 << 23, _EQUAL_HASH_SPLITS[P][ME == 0]
    counts = [first, total - first] + [0] * (P - 2)
    _shape_differs("Reduce_scatter",
                   lambda c: c.Reduce_scatter(np.ones(total, np.int8), np.zeros(counts[ME], np.int8),
                                              counts),
                   ["other recvcounts", "recvcounts[0] is", "every rank must pass the same recvcounts"])


def test_ranks_that_all_take_themselves_for_the_root_learn_it_at_the_next_call():
    """Every rank calls a small Bcast with itself as the root (once, or
    twice in a row): a root waits for nobody, so none of them can tell in
    the Bcast; the next collective that waits on a peer compares the
    signatures of the calls in which it did not, and every rank raises
    before that call moves data, naming the Bcasts."""
    for repeats in (1, 2):
        c = _flat_comm()
        if c is None:
            return
        y = np.zeros(4)
        try:
            try:
                for _ in range(repeats):
                    c.Bcast(np.full(4, ME), root=ME)
                c.Allreduce(np.full(4, 1.0), y)
            except (CollectiveMismatchError, TeamAbortedError) as exc:
                # the rank that noticed, at the Allreduce; the others at the
                # Allreduce or, if slower, at their second Bcast
                assert "call(s) before this one" in str(exc), str(exc)
                assert "Bcast (root " in str(exc), str(exc)
                assert isinstance(exc, TeamAbortedError) or str(exc).startswith("Allreduce: "), str(exc)
                assert not y.any()      # nothing was written
            else:
                raise AssertionError("rank %d: every rank a root went unnoticed" % ME)
        finally:
            c.Free()


def test_a_reduction_datatype_differing_at_the_same_byte_count_is_a_mismatch():
    """One rank reduces int64 where the others reduce float64: its members
    fold typed elements, so unlike the rooted data movers this stays a
    mismatch (the team aborted): every rank raises naming it, at once or at
    its next call."""
    odd = P - 1
    _shape_differs("Reduce", lambda c: c.Reduce(np.ones(4, np.int64 if ME == odd else np.float64),
                                                np.zeros(4), root=0), ["the type signatures differ"])


def _each_count_mismatch(check, names, counts):
    """check(c, name, root, q, n, delta) on a fresh communicator for each
    collective of names, (n, delta) of counts, and the root first or last
    with the odd rank at the other end."""
    for name in names:
        for n, delta in counts:
            for root, q in ((0, P - 1), (P - 1, 0)):
                c = pgascol.Comm(WORLD.Dup())
                try:
                    check(c, name, root, q, n, delta)
                except AssertionError as exc:
                    raise AssertionError("%s n=%d%+d root %d, rank %d: %s" % (name, n, delta, root, q, exc)) from exc
                finally:
                    c.Free()


def _scatter_counts_differ(c, name, root, q, n, delta):
    """A Scatter or Scatterv whose root sends rank q n doubles where q
    receives n + delta (every other rank's count agrees): q raises an
    ArgumentError naming the bytes, every rank ends the call within a
    fraction of PGASCOL_TIMEOUT, and a rank that completes it holds its
    right block."""
    src = np.arange(float(n * P))
    mine = np.zeros(n + delta if ME == q else n)
    spec = [src, [n] * P, None, MPI.DOUBLE] if name == "Scatterv" else src
    start = time.monotonic()
    try:
        getattr(c, name)(spec if ME == root else None, mine, root=root)
    except ArgumentError as exc:
        if ME == q:
            assert str(exc).startswith(name) and "bytes" in str(exc), str(exc)
        else:   # the leader's refusal of its node's leg, which it could not run (PeerRefusedError)
            assert isinstance(exc, PeerRefusedError) and "signatures differ" in str(exc), (ME, str(exc))
    except (TeamAbortedError, CollectiveMismatchError) as exc:
        assert ME != q and name in str(exc), (ME, str(exc))
    else:
        assert ME != q, "rank %d received %d doubles where the root sent %d" % (ME, n + delta, n)
        assert (mine == src[ME * n:(ME + 1) * n]).all(), (ME, mine[:4])
    assert time.monotonic() - start < 2.5, time.monotonic() - start


def test_scatter_counts_that_differ_from_a_receivers_fail_there_and_hang_nobody():
    """The root's count for one rank differs from the count that rank
    receives (MPI calls it erroneous), on one node and across nodes, where
    that rank's leader learns its node's counts from the root's message:
    it fails on that rank, nobody waits for PGASCOL_TIMEOUT, and where a
    leader sees it the communicator stays usable (_scatter_counts_differ)."""
    if P == 1:
        return
    _each_count_mismatch(_scatter_counts_differ, ("Scatterv", "Scatter"), ((4, 1), (100000, 1), (100000, -1)))


def _gather_counts_differ(c, name, root, q, n, delta):
    """A Gather or Gatherv whose rank q sends n + delta doubles where the
    root receives n from each rank: the root never completes it (its
    ArgumentError names the bytes; across nodes a DatatypeMismatchError
    where q's leader sent its node's blocks, a refusal or an abort where
    q's node leg failed), a rank raising names the call, every rank ends
    it within a fraction of PGASCOL_TIMEOUT, and nothing lands past the
    root's receive buffer (Open MPI writes a truncated message's bytes
    past its buffer: the root probes first there)."""
    guard = np.full(n * P + 64, -1.0) if ME == root else None
    spec = None if ME != root else [guard[:n * P], [n] * P, None, MPI.DOUBLE] if name == "Gatherv" else guard[:n * P]
    start = time.monotonic()
    try:
        getattr(c, name)(np.full(n + delta if ME == q else n, float(ME)), spec, root=root)
    except (ArgumentError, TeamAbortedError) as exc:
        assert str(exc).startswith(name), (ME, str(exc))
        if ME == root and isinstance(exc, DatatypeMismatchError):
            assert "bytes" in str(exc) and "signatures differ" in str(exc), str(exc)
    else:
        assert ME != root, "the root completed a %s of which rank %d sent %d doubles, not %d" % (name, q, n + delta, n)
    assert time.monotonic() - start < 2.5, time.monotonic() - start
    if ME == root:
        assert (guard[n * P:] == -1.0).all(), "bytes written past the root's receive buffer"


def test_gather_counts_that_differ_from_a_senders_fail_at_the_root_and_hang_nobody():
    """One rank sends another count than the root receives from it (MPI
    calls it erroneous), on one node and across nodes, where the root
    checks the length of each node's message: the root fails, nobody waits
    for PGASCOL_TIMEOUT, nothing is written past the root's buffer
    (_gather_counts_differ)."""
    if P == 1:
        return
    _each_count_mismatch(_gather_counts_differ, ("Gatherv", "Gather"), ((4, 1), (4, -1), (100000, 1), (100000, -1)))


def _on_mpi_alone(c, call, needs_it):
    """call(c) takes the call to MPI on rank 0 alone (arguments pgascol does
    not accelerate) while the others' go to the engine, on one node: every
    rank ends it at once, none entering MPI: rank 0 with an ArgumentError
    saying its arguments take the call to MPI, a rank that needs rank 0
    with PeerRefusedError (RootRefusedError where rank 0 is the root) giving
    that reason, the others completing; the communicator stays usable."""
    start = time.monotonic()
    try:
        call(c)
    except PeerRefusedError as exc:
        assert ME != 0 and needs_it is not False, (ME, str(exc))
        assert "local rank 0" in str(exc) and "take the call to MPI" in str(exc), str(exc)
    except ArgumentError as exc:
        assert ME == 0 and "this rank's arguments take the call to MPI" in str(exc), (ME, str(exc))
    else:
        assert ME != 0 and needs_it is not True, ME
    assert time.monotonic() - start < 2.5
    _still_usable(c)


def test_one_rank_goes_to_mpi():
    """Rank 0 alone passes arguments that take the call to MPI (a
    user-defined operator, a buffer without the buffer protocol, a derived
    datatype a reduction does not take) to each collective, as root and as
    member: every rank ends the call at once (_on_mpi_alone), and the
    communicator is usable after each."""
    mine = MPI.Op.Create(lambda a, b, dt: None, commute=True)
    vec = MPI.DOUBLE.Create_vector(4, 1, 2).Commit()
    n = 4
    x = lambda: _DLPackOnly(np.zeros(n)) if ME == 0 else np.zeros(n)   # noqa: E731
    cases = {   # collective: (call, whether the other ranks need rank 0's part: True, False, None: either)
        "Allreduce user op": (lambda c: c.Allreduce(np.ones(n), np.zeros(n), op=mine if ME == 0 else MPI.SUM), True),
        "Allreduce derived": (lambda c: c.Allreduce([np.arange(8.0), 1, vec], [np.zeros(8), 1, vec]) if ME == 0
                              else c.Allreduce(np.ones(4), np.zeros(4)), True),
        "Reduce to 0": (lambda c: c.Reduce(x(), np.zeros(n) if ME == 0 else None, MPI.SUM, 0), None),
        "Bcast from 0": (lambda c: c.Bcast(x(), 0), True),
        "Bcast to 0": (lambda c: c.Bcast(x(), P - 1), None),
        "Gather from 0": (lambda c: c.Gather(x(), np.zeros(n * P) if ME == P - 1 else None, P - 1), None),
        "Scatter from 0": (lambda c: c.Scatter(_DLPackOnly(np.zeros(n * P)) if ME == 0 else None, np.zeros(n), 0),
                           True),
        "Allgather": (lambda c: c.Allgather(x(), np.zeros(n * P)), True),
        "Alltoall": (lambda c: c.Alltoall(_DLPackOnly(np.zeros(n * P)) if ME == 0 else np.zeros(n * P),
                                          np.zeros(n * P)), True),
        "Scan": (lambda c: c.Scan(x(), np.zeros(n)), None),
    }
    try:
        for name, (call, needs_it) in cases.items():
            c = _flat_comm()
            if c is None:
                return
            try:
                _on_mpi_alone(c, call, needs_it)
            except AssertionError as exc:
                raise AssertionError("%s: %s" % (name, exc)) from exc
            finally:
                c.Free()
    finally:
        vec.Free()
        mine.Free()


def test_ranks_on_different_paths_all_fail_at_once():
    """Rank 0 alone passes a user-defined operator (its Allreduce goes to
    MPI) while the others' go to pgascol, across nodes: every rank raises
    an error naming the disagreement within a fraction of a second (the
    leaders tell each other: TAG_PATH, TAG_ABORT), and none is left waiting
    inside MPI; the communicator is given up. (On one node the call ends
    with the communicator usable: test_one_rank_goes_to_mpi.)"""
    if P == 1:
        return
    c = pgascol.Comm(WORLD.Dup())
    if not c._pg.hier:
        c.Free()
        return
    mine = MPI.Op.Create(lambda a, b, dt: None, commute=True)
    start = time.monotonic()
    try:
        y = np.zeros(4)
        try:
            c.Allreduce(np.ones(4), y, op=mine if ME == 0 else MPI.SUM)
        except (CollectiveMismatchError, TeamAbortedError) as exc:
            assert "to MPI" in str(exc), str(exc)
            assert time.monotonic() - start < 2.5, time.monotonic() - start
        else:
            raise AssertionError("rank %d: the Allreduce completed (y[0] = %g)" % (ME, y[0]))
        try:
            c.Barrier()
        except (TeamAbortedError, CollectiveMismatchError):
            pass
        else:
            raise AssertionError("rank %d: a Barrier ran on a communicator given up" % ME)
    finally:
        mine.Free()
        c.Free()


def test_a_derived_datatype_on_one_rank_only():
    """Rank 0 alone passes a non-contiguous derived datatype (4 doubles,
    every other one of 8). In a reduction it goes to MPI (pgascol reduces
    predefined types only) while the others' predefined types go to
    pgascol: across nodes every rank raises an error naming the
    disagreement within a fraction of a second, none left waiting inside
    MPI (on one node the call ends with the communicator usable:
    test_one_rank_goes_to_mpi). In data movement the same datatype is packed, so every rank
    takes the same path and the call completes with the right data."""
    if P == 1:
        return
    vec = MPI.DOUBLE.Create_vector(4, 1, 2).Commit()
    c = pgascol.Comm(WORLD.Dup())
    try:
        b = np.arange(8.0) if ME == 0 else np.zeros(4)
        c.Bcast([b, 1, vec] if ME == 0 else b, root=0)
        assert np.all(b[:4] == (np.arange(4.0) if ME == 0 else np.arange(0.0, 8.0, 2))), b
    finally:
        c.Free()    # collective: every rank is done with the Bcast before the Allreduce below
    c = pgascol.Comm(WORLD.Dup())
    try:
        if not c._pg.hier:
            return      # (on one node the call ends with the communicator usable: test_one_rank_goes_to_mpi)
        start = time.monotonic()
        y = np.zeros(8)
        try:
            if ME == 0:
                c.Allreduce([np.arange(8.0), 1, vec], [y, 1, vec])
            else:
                c.Allreduce(np.arange(0.0, 8.0, 2), y[:4])
        except (CollectiveMismatchError, TeamAbortedError) as exc:
            assert "to MPI" in str(exc), str(exc)
            assert time.monotonic() - start < 2.5, time.monotonic() - start
        else:
            raise AssertionError("rank %d: the Allreduce completed (y = %s)" % (ME, y))
        if not c._pg.hier:
            assert not y.any()      # found before any data moved (across nodes a node's own
                                    # reduction may have run, as a failed MPI call leaves it undefined)
    finally:
        vec.Free()
        c.Free()


def test_every_rank_to_mpi_across_nodes_still_works():
    """The same operator on every rank: all go to MPI, and agree on it."""
    c = pgascol.Comm(WORLD.Dup())
    mine = MPI.Op.Create(lambda a, b, dt: np.add(np.frombuffer(a), np.frombuffer(b), out=np.frombuffer(b)),
                         commute=True)
    try:
        for _ in range(3):
            y = np.zeros(4)
            c.Allreduce(np.ones(4), y, op=mine)
            assert np.all(y == P), y
        c.Barrier()
    finally:
        mine.Free()
        c.Free()


def test_world_still_usable():
    c = pgascol.Comm(WORLD)
    x = np.ones(3)
    c.Allreduce(MPI.IN_PLACE, x)
    assert np.all(x == P)
    c.Free()
