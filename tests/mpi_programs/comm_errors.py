"""Errors (mpi4py's test_exceptions, for collectives): pgascol.Comm when
only some ranks err. The rank that sees the misuse raises at once. The
others, already in the collective, raise an error naming the operation at
once: on a node the team takes the op as refused, across nodes (virtual
nodes) a refusing leader tells the others, which wait for it in an
inter-node MPI phase (PeerRefusedError); any other wait is bounded by
PGASCOL_TIMEOUT (tests/test_mpi_programs.py sets it to 3 s). Ranks whose
calls go out of step are caught before any data moves. A root that refuses
its own arguments to a Gather(v) or Scatter(v), or across nodes another
node's leader, leaves the communicator usable (PeerRefusedError on the
ranks that need it); ranks whose calls take different paths (MPI and
pgascol) all fail at once, also across nodes."""
import re
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import (ArgumentError, CollectiveMismatchError, PeerRefusedError, PgascolTimeoutError,
                            TeamAbortedError, in_mpi)

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()


def _partial(op_name, call_bad, call_good, check_next=False, root_0=False):
    """Rank 0 refuses, the others are in the call. check_next: the next
    Allreduce then either raises or is right on every rank (across nodes,
    rank 0's own next inter-node collective must not meet the others' one
    of the refused call). root_0: the others take rank 0 for the root of
    a Bcast, so on one node each ends the call with RootRefusedError and
    the communicator stays usable."""
    c = pgascol.Comm(WORLD.Dup())
    start = time.monotonic()
    try:
        if ME == 0:
            try:
                call_bad(c)
            except ArgumentError:
                pass
            else:
                raise AssertionError("the bad call did not raise")
        else:
            try:
                call_good(c)
            except (PgascolTimeoutError, TeamAbortedError, CollectiveMismatchError, PeerRefusedError) as exc:
                # the first to see the refusal aborts the team: the others
                # see that; across nodes rank 0, a leader, told the other
                # leaders, which wait for it in MPI (PeerRefusedError), and
                # gave its node team up (its members in the call would
                # wait for it in a later node leg)
                assert op_name in str(exc), str(exc)
                assert time.monotonic() - start < 2.5, (ME, time.monotonic() - start, str(exc))
                if not c._pg.hier and root_0:
                    assert isinstance(exc, pgascol.RootRefusedError), repr(exc)
                    assert ("%s: the root (local rank 0) refused its arguments: ArgumentError: " % op_name
                            in str(exc)), str(exc)
                elif not c._pg.hier:
                    # every rank waits for rank 0 in the node team: it
                    # refused the op, each gives the call up with its
                    # reason, nobody needs the timeout, no abort
                    assert isinstance(exc, PeerRefusedError), repr(exc)
                    assert "local rank 0 refused its arguments: ArgumentError: " in str(exc), str(exc)
                    assert time.monotonic() - start < 2.5
            else:
                raise AssertionError("no error on rank %d" % ME)
        if not c._pg.hier:
            _still_usable(c)
        elif check_next and P > 1:
            _next_allreduce_fails_or_is_right(c)
    finally:
        c.Free()


def _next_allreduce_fails_or_is_right(c, *where):
    """After a call that failed on some ranks: the next Allreduce raises or
    gives the right sum on every rank, at once (never another call's data)."""
    start = time.monotonic()
    y = np.zeros(3)
    try:
        c.Allreduce(np.full(3, ME, "d"), y)
    except pgascol.PgascolError:
        pass
    else:
        assert np.all(y == sum(range(P))), (ME, y) + where
    assert time.monotonic() - start < 2.5, (ME, time.monotonic() - start) + where


def test_partial_allreduce_error_fails_the_others_at_once():
    ro = np.zeros(4)
    ro.flags.writeable = False
    _partial("Allreduce", lambda c: c.Allreduce(np.ones(4), ro),
             lambda c: c.Allreduce(np.ones(4), np.zeros(4)), check_next=True)


def test_partial_bcast_error_fails_the_others_at_once():
    _partial("Bcast", lambda c: c.Bcast(np.zeros(4), root=P),
             lambda c: c.Bcast(np.zeros(4), root=0), check_next=True, root_0=True)


def _flat_comm():
    """A fresh communicator on one node team, or None (hierarchies and one
    rank: the cases below are about ranks of one team)."""
    c = pgascol.Comm(WORLD.Dup())
    if c._pg.hier or P == 1:
        c.Free()
        return None
    return c


def test_root_refusal_keeps_the_ranks_in_step():
    """The root of a Gatherv refuses a receive buffer too small for its
    counts; the others, who do not wait for the root, complete as they would
    under MPI. The calls that follow must pair up as called: no rank's
    Allreduce may meet another rank's Gatherv."""
    c = _flat_comm()
    if c is None:
        return
    try:
        send = np.full(4, ME, "d")
        if ME == 0:
            try:
                c.Gatherv(send, [np.zeros(4 * P - 1), [4] * P, None, MPI.DOUBLE], root=0)
            except ArgumentError:
                pass
            else:
                raise AssertionError("the Gatherv did not raise")
        else:
            c.Gatherv(send, None, root=0)
        _still_usable(c)
        # the root's refused call is not counted
        assert sum(pgascol.stats(c).get("Gatherv", {}).values()) == (0 if ME == 0 else 1)
    finally:
        c.Free()


def test_refused_op_fails_its_waiters_at_once():
    """The root of a Scatterv refuses a send buffer too small; every other
    rank waits for the root's data, so each fails at once (not after the
    timeout) with an ArgumentError that names the collective and repeats
    the root's reason; the communicator stays usable."""
    c = _flat_comm()
    if c is None:
        return
    start = time.monotonic()
    try:
        out = np.zeros(4)
        if ME == 0:
            try:
                c.Scatterv([np.zeros(4 * P - 1), [4] * P, None, MPI.DOUBLE], out, root=0)
            except ArgumentError:
                pass
            else:
                raise AssertionError("the Scatterv did not raise")
        else:
            try:
                c.Scatterv(None, out, root=0)
            except pgascol.RootRefusedError as exc:
                assert isinstance(exc, ArgumentError)
                assert str(exc).startswith("Scatterv: the root (local rank 0) refused its arguments: "
                                           "ArgumentError: sendbuf holds"), str(exc)
                assert time.monotonic() - start < 2.5
            else:
                raise AssertionError("rank %d completed a Scatterv whose root refused" % ME)
            assert np.all(out == 0)      # nothing was written
        _still_usable(c)
    finally:
        c.Free()


# Each collective with its call from a rank that refuses it (a buffer of
# half the count) and from the others, n doubles a rank; whether a rank
# needs the refusing rank `bad` given the root: 1, it must raise; 0, it may
# (a Bcast tree's member below it); -1, it must complete (the root of a
# Bcast or Scatter skips it).
def _member_calls(n, root, bad):
    half = n // 2 if ME == bad else n
    mine = [np.ones(half * P), n, MPI.DOUBLE]     # a block of n, or P blocks, from a short buffer
    one = [np.ones(half), n, MPI.DOUBLE]
    out = np.zeros(n * P)
    counts, displs = [n] * P, [n * q for q in range(P)]
    return (
        ("Bcast", lambda c: c.Bcast([np.full(half, 1.0 * (ME == root)), n, MPI.DOUBLE], root=root), -(ME == root)),
        ("Reduce", lambda c: c.Reduce(one, out[:n], root=root), ME == root),
        ("Allreduce", lambda c: c.Allreduce(one, out[:n]), 1),
        ("Scan", lambda c: c.Scan(one, out[:n]), ME > bad),
        ("Exscan", lambda c: c.Exscan(one, out[:n]), ME > bad),
        ("Reduce_scatter_block", lambda c: c.Reduce_scatter_block(mine, out[:n]), 1),
        ("Gather", lambda c: c.Gather(one, out if ME == root else None, root=root), ME == root),
        ("Gatherv", lambda c: c.Gatherv(one, [out, counts, displs, MPI.DOUBLE] if ME == root else None,
                                        root=root), ME == root),
        ("Scatter", lambda c: c.Scatter(np.ones(n * P) if ME == root else None, [np.zeros(half), n, MPI.DOUBLE],
                                        root=root), -(ME == root)),
        ("Allgather", lambda c: c.Allgather(one, out), 1),
        ("Allgatherv", lambda c: c.Allgatherv(one, [out, counts, displs, MPI.DOUBLE]), 1),
        ("Alltoall", lambda c: c.Alltoall(mine, out), 1),
        ("Alltoallv", lambda c: c.Alltoallv([np.ones(half * P), counts, displs, MPI.DOUBLE],
                                            [out, counts, displs, MPI.DOUBLE]), 1),
    )


def test_a_member_that_refuses_leaves_the_communicator_usable():
    """On one node, a rank that is not the root refuses its arguments
    (a buffer of half the count) to any collective: it raises its
    ArgumentError; every rank that needs its data (all of them in an
    Allreduce, Allgather(v), Alltoall(v), Reduce_scatter_block; the root of
    a Reduce or Gather(v); the ranks after it in a Scan or Exscan) raises
    PeerRefusedError with its reason within 2.5 s; the root of a Bcast or
    Scatter completes, the others may (a tree's member below it gives up
    too); nothing aborts, and the next collectives are right on every
    rank. The refusing rank: the last, the first (with the last as root),
    4 and 100000 doubles."""
    c = _flat_comm()
    if c is None:
        return
    try:
        for bad, root in ((P - 1, 0), (0, P - 1)):
            for n in (4, 100_000):
                for name, call, needs in _member_calls(n, root, bad):
                    start, where = time.monotonic(), (ME, name, n, bad, root)
                    try:
                        call(c)
                    except PeerRefusedError as exc:
                        assert ME != bad and needs >= 0 and not isinstance(exc, pgascol.RootRefusedError), \
                            where + (repr(exc),)
                        assert str(exc).startswith(name + ": local rank %d refused its arguments: ArgumentError: "
                                                   % bad), where + (str(exc),)
                    except ArgumentError as exc:
                        assert ME == bad and "holds" in str(exc), where + (repr(exc),)
                    else:
                        assert ME != bad and needs <= 0, where
                    assert time.monotonic() - start < 2.5, where + (time.monotonic() - start,)
                    _still_usable(c)
    finally:
        c.Free()


def _still_usable(c):
    """The next collectives pair up as called and give the right results."""
    for k in range(2):
        x = np.full(100, ME + k, "d")
        y = np.zeros_like(x)
        c.Allreduce(x, y)
        assert np.all(y == sum(range(P)) + P * k), (k, y[0])
        b = np.full(10, ME + 100 * k, "d")
        c.Bcast(b, root=P - 1)
        assert np.all(b == P - 1 + 100 * k), (k, b[0])
        out = np.zeros(2)
        c.Scatter(np.repeat(np.arange(P, dtype="d"), 2) if ME == 0 else None, out, root=0)
        assert np.all(out == ME), out


# Misuse only the root can see (its send or receive specification), as
# (collective, root's call, others' call), each with 4 and 100000 doubles
# per rank: inline, and staged or single copy; the root is `root`.
def _root_misuse(n, root=0, hier=False):
    d = MPI.DOUBLE
    short = np.zeros(n * P - 1)
    displs = [n * q for q in range(P)]
    far = [0] * (P - 1) + [n * P]           # the last block past the buffer's end
    return [
        ("Scatterv", lambda c: c.Scatterv([short, [n] * P, None, d], np.zeros(n), root=root),
         lambda c, out: c.Scatterv(None, out, root=root)),
        ("Scatterv", lambda c: c.Scatterv([np.zeros(n * P), [n] * P, far, d], np.zeros(n), root=root),
         lambda c, out: c.Scatterv(None, out, root=root)),
        ("Scatterv", lambda c: c.Scatterv([np.zeros(n * P), [n] * (P - 1) + [-1], displs, d], np.zeros(n),
                                          root=root),
         lambda c, out: c.Scatterv(None, out, root=root)),
        ("Scatter", lambda c: c.Scatter([short, n, d], np.zeros(n), root=root),
         lambda c, out: c.Scatter(None, out, root=root)),
        ("Gatherv", lambda c: c.Gatherv(np.zeros(n), [short, [n] * P, None, d], root=root),
         lambda c, out: c.Gatherv(out, None, root=root)),
        ("Gatherv", lambda c: c.Gatherv(np.zeros(n), [np.zeros(n * P), [n] * (P - 1) + [-1], displs, d],
                                        root=root),
         lambda c, out: c.Gatherv(out, None, root=root)),
        ("Gather", lambda c: c.Gather(np.zeros(n), [short, n, d], root=root),
         lambda c, out: c.Gather(out, None, root=root)),
        ("Bcast", lambda c: c.Bcast([np.zeros(n - 1), n, d], root=root),
         lambda c, out: c.Bcast(out, root=root)),
    ] + _root_specs_mpi4py_refuses(n, root, hier)


# Root specifications mpi4py itself raises for (ValueError, TypeError or
# BufferError in mpi4py's msgbuffer.pxi): refused as pgascol's ArgumentError
# before anything moves, not taken to MPI while the others are in the engine.
# Not a Bcast count that is no integer across nodes: the root's leader
# cannot join the leaders' MPI leg without a count (the call is given up,
# the team aborted).
def _root_specs_mpi4py_refuses(n, root, hier):
    d = MPI.DOUBLE
    odd = np.zeros(n * P + 1)                    # not a multiple of the number of ranks
    strided = np.zeros((n * P, 2))[:, 0]         # not contiguous
    scatter_from = lambda spec: (lambda c: c.Scatter(spec, np.zeros(n), root=root))
    gather_into = lambda spec: (lambda c: c.Gather(np.zeros(n), spec, root=root))
    scattered = lambda c, out: c.Scatter(None, out, root=root)
    gathered = lambda c, out: c.Gather(out, None, root=root)
    return [
        ("Scatter", scatter_from(odd), scattered),
        ("Scatter", scatter_from(strided), scattered),
        ("Scatter", scatter_from([np.zeros(n * P), n, 0, d, 0]), scattered),     # five items
        ("Scatter", scatter_from([np.zeros(n * P), (n, 2 * n * P), d]), scattered),  # displacement past the end
        ("Scatterv", lambda c: c.Scatterv([np.zeros(n * P), [n] * (P + 1), None, d], np.zeros(n), root=root),
         lambda c, out: c.Scatterv(None, out, root=root)),
        ("Gather", gather_into(odd), gathered),
        ("Gather", gather_into(object()), gathered),                                # no buffer
        ("Gatherv", lambda c: c.Gatherv(np.zeros(n), [np.zeros(n * P), ["n"] * P, None, d], root=root),
         lambda c, out: c.Gatherv(out, None, root=root)),
    ] + ([] if hier else [
        ("Bcast", lambda c: c.Bcast([np.zeros(n), 2.5, d], root=root), lambda c, out: c.Bcast(out, root=root))])


def _untouched_by_refusal(c, name, n, root):
    """Whether a non-root's buffer must be untouched after the root refused:
    a Scatter's, and a Bcast's but on another node's leader of a Bcast of
    more than 2 KiB, whose MPI Ibcast into it had begun (a joiner's scratch
    bytes complete it)."""
    st = c._pg
    if name == "Bcast":
        return not (st.hier and st.lrank == 0 and st.nidx != st.node_of[root] and 8 * n > 2048)
    return name.startswith("Scatter")


def test_root_only_misuse_leaves_the_communicator_usable():
    """The root refuses before anything moves; a rank that waits for the
    root (every Scatter receiver and Bcast reader, flat or in a tree; a
    Gather sender whose block does not fit the inline slot and staging at
    once) raises RootRefusedError, an
    ArgumentError naming the collective and the root's reason, at once; a
    Gather sender that needs nothing from the root completes, as under MPI.
    Never an abort: the next collectives work on every rank. Across nodes
    (virtual nodes) too: every Scatter receiver of every node raises at
    once (the root sends the other nodes' leaders its reason instead of
    their blocks), every sender of another node completes (the root takes
    in and drops its leader's message; a Bcast's root's node's leader joins
    the leaders' MPI leg with scratch data, and every other leader then
    refuses its node's leg with the root's reason)."""
    if P == 1:
        return
    c = pgascol.Comm(WORLD.Dup())
    try:
        for n, root in ((4, 0), (100000, 0), (4, P - 1), (100000, P - 1)):
            for name, bad, good in _root_misuse(n, root, c._pg.hier):
                start = time.monotonic()
                out = np.zeros(n)
                try:
                    bad(c) if ME == root else good(c, out)
                except pgascol.RootRefusedError as exc:
                    assert ME != root and str(exc).startswith(name) and "refused its arguments: " in str(exc), str(exc)
                    assert re.search(r"Argument\w*Error: ", str(exc)), str(exc)     # the root's reason
                    who = "rank %d" % root if c._pg.hier else "local rank %d" % root
                    assert "the root (%s)" % who in str(exc), str(exc)
                    assert time.monotonic() - start < 2.5
                except ArgumentError as exc:
                    assert ME == root, repr(exc)
                else:
                    assert ME != root and name.startswith("Gather"), (ME, name, n)
                if _untouched_by_refusal(c, name, n, root):
                    assert not out.any(), (ME, name, n, root)
                _still_usable(c)
    finally:
        c.Free()


def _reduce_root_misuse(n, root):
    """A Reduce whose root alone misuses its buffers, as (the root's call,
    its buffers): a receive buffer too small, a read-only one, in place a
    buffer shorter than its count, a send buffer shorter than its count."""
    d = MPI.DOUBLE
    ro = np.zeros(n)
    ro.flags.writeable = False
    x, small, short = np.full(n, ME + 1.0), np.zeros(n - 1), np.full(n - 1, 7.0)
    return [(lambda c: c.Reduce(x, small, root=root), (x, small)),
            (lambda c: c.Reduce(x, ro, root=root), (x, ro)),
            (lambda c: c.Reduce(MPI.IN_PLACE, [short, n, d], root=root), (short,)),
            (lambda c: c.Reduce([short, n, d], np.zeros(n), root=root), (short,))]


def test_a_reduce_root_that_refuses_runs_with_scratch_and_the_others_complete():
    """The root of a Reduce refuses its own buffers, which no other rank's
    result depends on: it runs its part of the call on scratch buffers and
    raises its ArgumentError (not a RootRefusedError), its buffers as they
    were; every other rank completes at once with nothing raised, as under
    MPI, and the next collectives work. 4 and 100000 doubles, the root a
    node's leader and (on virtual nodes) a member that is not."""
    c = pgascol.Comm(WORLD.Dup())
    try:
        for n in (4, 100000):
            for root in sorted({0, P - 1}):
                for k in range(4):
                    call, bufs = _reduce_root_misuse(n, root)[k]
                    before = [b.copy() for b in bufs]
                    where = (ME, n, root, k)
                    start = time.monotonic()
                    if ME == root:
                        counted = pgascol.stats(c).get("Reduce", {})
                        try:
                            call(c)
                        except ArgumentError as exc:
                            assert type(exc) is in_mpi(ArgumentError), where + (repr(exc),)   # not a refusal
                        else:
                            raise AssertionError("the root raised nothing: %r" % (where,))
                        assert all(np.array_equal(a, b) for a, b in zip(before, bufs)), where
                        # a refused call is not counted, though it ran on scratch
                        assert pgascol.stats(c).get("Reduce", {}) == counted, where
                    else:
                        c.Reduce(np.full(n, ME + 1.0), None, root=root)
                    assert time.monotonic() - start < 2.5, where
                    _still_usable(c)
    finally:
        c.Free()


class _DLPackOnly:
    """A buffer mpi4py takes through DLPack alone (no buffer protocol):
    pgascol leaves a call with it to MPI."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def _misuse_on_two_ranks(name, n, root, q):
    """A Gatherv or Scatterv whose root passes a negative count (only it
    can see that) while rank q passes a buffer pgascol does not take (so it
    takes the call to MPI); the others' calls are right."""
    d = MPI.DOUBLE
    if ME == root:
        spec = [np.zeros(n * P), [n] * (P - 1) + [-1], [n * k for k in range(P)], d]
        return (lambda c: c.Scatterv(spec, np.zeros(n), root=root)) if name == "Scatterv" else \
            (lambda c: c.Gatherv(np.zeros(n), spec, root=root))
    mine = _DLPackOnly(np.zeros(n)) if ME == q else np.zeros(n)
    return (lambda c: c.Scatterv(None, mine, root=root)) if name == "Scatterv" else \
        (lambda c: c.Gatherv(mine, None, root=root))


def test_misuse_on_the_root_and_another_leader_ends_every_rank_at_once():
    """Two ranks err, each in its own way: the root of a Gatherv or
    Scatterv refuses its counts while another node's leader (on one node,
    another rank) takes the call to MPI. Nobody may wait for a message
    that never comes (a root that is no leader for that leader's blocks,
    as it takes in what the other leaders send it): every rank ends its
    call at once, the root with its own ArgumentError, the others
    completing or with an error naming the collective; the next collective
    then ends at once on every rank too (the communicator was given up)."""
    if P == 1:
        return
    for name in ("Scatterv", "Gatherv"):
        for n in (4, 100000):
            for root in (0, P - 1):
                c = pgascol.Comm(WORLD.Dup())
                st = c._pg
                if st.hier:
                    q = [m[0] for i, m in enumerate(st.members) if i != st.node_of[root]][0]
                else:
                    q = (root + 1) % P
                call = _misuse_on_two_ranks(name, n, root, q)
                try:
                    start = time.monotonic()
                    try:
                        call(c)
                    except ArgumentError as exc:
                        # a rank waiting for the root (the root's node, other
                        # leaders) or for another leader (q's TAG_PATH) names it
                        assert ME == root or isinstance(exc, pgascol.PeerRefusedError) or (
                            ME == q and "take the call to MPI" in str(exc)), repr(exc)
                        assert ME == root or str(exc).startswith(name), str(exc)
                    except (TeamAbortedError, CollectiveMismatchError) as exc:
                        assert ME != root and name in str(exc), (ME, str(exc))
                    else:
                        assert ME not in (root, q) and name == "Gatherv", (ME, name)
                    assert time.monotonic() - start < 2.5, (ME, name, n, root, time.monotonic() - start)
                    _next_allreduce_fails_or_is_right(c, name, n, root)
                finally:
                    c.Free()
                WORLD.Barrier()


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


# A rank's specification that mpi4py raises for, as (collective, the call,
# whether this rank needs the refusing one's data: True, False, or None
# where either ending is right: a Scatter receiver below a refusing one in
# a tree gives up too, a Gather sender whose block the refusing root would
# have taken through single copy or staging ends with it).
def _member_specs_mpi4py_refuses(n, bad):
    d = MPI.DOUBLE
    odd, out = np.zeros(n * P + 1), np.zeros(n * P)
    strided = np.zeros((n, 2))[:, 0]
    mine = lambda good, wrong: wrong if ME == bad else good
    return [
        ("Allreduce", lambda c: c.Allreduce(mine(np.ones(n), object()), out[:n]), True),
        ("Allreduce", lambda c: c.Allreduce(mine(np.ones(n), [np.ones(n), n, d, 0, 0]), out[:n]), True),
        ("Allreduce", lambda c: c.Allreduce(mine(np.ones(n), [np.ones(n), "four", d]), out[:n]), True),
        ("Alltoall", lambda c: c.Alltoall(mine(np.ones(n * P), odd), out), True),
        ("Allgather", lambda c: c.Allgather(np.ones(n), mine(out, odd)), True),
        ("Allgatherv", lambda c: c.Allgatherv(np.ones(n), mine([out, [n] * P, None, d],
                                                              [out, [n] * (P - 1), None, d])), True),
        ("Reduce_scatter_block", lambda c: c.Reduce_scatter_block(mine(np.ones(n * P), odd), out[:n]), True),
        ("Gather", lambda c: c.Gather(mine(np.ones(n), strided), out if ME == 0 else None, root=0),
         None if bad == 0 else ME == 0),
        ("Scatter", lambda c: c.Scatter(np.ones(n * P) if ME == 0 else None, mine(out[:n], strided), root=0),
         True if bad == 0 else None),
    ]


def test_a_spec_mpi4py_refuses_on_one_rank_leaves_the_communicator_usable():
    """One rank passes what mpi4py raises for (an object that is no buffer,
    five items, a count that is no integer, a buffer not a multiple of the
    ranks or not contiguous, counts of the wrong length): it raises
    ArgumentError with mpi4py's reason ("message: ...") before anything
    moves, instead of taking the call to MPI while the others are in the
    engine (which aborted the team); the ranks that need its data raise
    PeerRefusedError, the others complete, and a correct call follows on
    the same, fresh, communicator. One node (the root's side across nodes:
    test_root_only_misuse_leaves_the_communicator_usable)."""
    for bad in {P - 1, 0}:
        for n in (4, 100_000):
            for name, call, needs in _member_specs_mpi4py_refuses(n, bad):
                c = _flat_comm()
                if c is None:
                    return
                where = (ME, name, n, bad)
                start = time.monotonic()
                try:
                    try:
                        call(c)
                    except PeerRefusedError as exc:
                        assert ME != bad and needs is not False, where + (repr(exc),)
                        assert re.search(r"local rank %d\)? refused its arguments: Argument\w*Error: message: " % bad,
                                         str(exc)), where + (str(exc),)
                    except ArgumentError as exc:
                        assert ME == bad and str(exc).startswith("message: "), where + (repr(exc),)
                    else:
                        assert ME != bad and needs is not True, where
                    assert time.monotonic() - start < 2.5, where
                    _still_usable(c)
                finally:
                    c.Free()


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


def test_free_while_another_thread_is_in_a_collective():
    """Rank 0's worker thread waits in a Barrier for rank 1 (late by 0.5 s)
    when rank 0's main thread frees the communicator: Free must refuse
    (the worker's collective would find its shared memory gone), and work
    once the Barrier is over."""
    import threading
    c = _flat_comm()
    if c is None:
        return
    errors = []
    if ME == 0:
        worker = threading.Thread(target=lambda: _record(errors, c.Barrier))
        worker.start()
        time.sleep(0.1)
        try:
            c.Free()
        except pgascol.PgascolError as exc:
            assert "cannot be freed while one of its collectives runs" in str(exc), str(exc)
        else:
            raise AssertionError("Free went ahead under a running Barrier")
        worker.join()
        assert errors == [], errors
    else:
        if ME == 1:
            time.sleep(0.5)
        c.Barrier()
    c.Allreduce(MPI.IN_PLACE, np.ones(2))     # still whole
    c.Free()


def _record(errors, call):
    try:
        call()
    except BaseException as exc:   # reported by the main thread
        errors.append(repr(exc))


def test_world_still_usable():
    c = pgascol.Comm(WORLD)
    x = np.ones(3)
    c.Allreduce(MPI.IN_PLACE, x)
    assert np.all(x == P)
    c.Free()


def _typed(buf, odd):
    """buf as MPI.INT (its bytes as int32) on the rank that passes the
    other type, as MPI.DOUBLE elsewhere: the same byte count."""
    return [buf.view(np.int32), MPI.INT] if odd else [buf.view(np.float64), MPI.DOUBLE]


def _differing_type_calls(n, root, odd, bufs=None):
    """Bcast, Gather(v), Scatter(v) of n doubles a rank, rank `odd` passing
    its bytes as 2n MPI.INT: name, call(c) -> what this rank's buffer must
    hold after it (the bytes MPI would move), where the buffer is. bufs: a
    list each call appends that pair to before the call (if it raises)."""
    me_odd = ME == odd
    blocks = np.arange(n * P, dtype=np.float64) + 1
    mine = blocks[n * ME:n * (ME + 1)]
    counts, displs = [n] * P, [n * k for k in range(P)]

    def vec(buf, odd_):
        spec, t = _typed(buf, odd_)
        k = 2 if odd_ else 1
        return [spec, [c * k for c in counts], [d * k for d in displs], t]

    def kept(got, want):
        if bufs is not None:
            bufs.append((got, want))
        return got, want

    def bcast(c):
        buf, _ = kept(blocks[:n].copy() if ME == root else np.zeros(n), blocks[:n])
        c.Bcast(_typed(buf, me_odd), root=root)
        return buf, blocks[:n]

    def gather(v):
        def call(c):
            out, _ = kept(np.zeros(n * P) if ME == root else None, blocks if ME == root else None)
            spec = (vec(out, me_odd) if v else _typed(out, me_odd)) if ME == root else None
            (c.Gatherv if v else c.Gather)(_typed(mine.copy(), me_odd), spec, root=root)
            return out, blocks if ME == root else None
        return call

    def scatter(v):
        def call(c):
            out, _ = kept(np.zeros(n), mine)
            spec = (vec(blocks.copy(), me_odd) if v else _typed(blocks.copy(), me_odd)) if ME == root else None
            (c.Scatterv if v else c.Scatter)(spec, _typed(out, me_odd), root=root)
            return out, mine
        return call

    return [("Bcast", bcast), ("Gather", gather(False)), ("Gatherv", gather(True)),
            ("Scatter", scatter(False)), ("Scatterv", scatter(True))]


def _must_raise(c, name, n, root, odd):
    """Whether this rank must see the difference. On one node: a Bcast
    reader (when the team broadcasts flat) and a Scatter receiver wait on
    the root, a Gather root on every sender. The others see it if they wait
    on a peer of the other type (a root whose readers pull from its buffer,
    or take more than its staging ring holds; a Gather sender that pushes
    its block, or streams more than its ring holds), or complete. Across
    nodes each node's leg compares as on one node with the leg's root (the
    root on its node, the leader elsewhere), and the leaders' messages carry
    types: in a Scatter and a Bcast of up to 2 KiB the root's (each other
    leader compares it with its own, and its node's leg states the root's,
    so every rank of another type than the root's raises), in a
    Gather the leader's and whether its node's leg met another (the root
    compares them with its own)."""
    if P == 1:
        return False
    st = c._pg
    mine, roots = ME == odd, root == odd    # whether this rank, the root, pass the other type
    if not st.hier:
        if ME != odd and ME != root:
            return False
        if name == "Bcast":
            return ME != root and not 0 < st.core.config["bcast_tree_min"] <= P
        return (ME == root) == name.startswith("Gather")
    leader = st.members[st.nidx][0]
    leaders = leader == odd                 # whether this node's leader passes the other type
    flat = not 0 < st.core.config["bcast_tree_min"] <= st.lsize
    at_roots = st.nidx == st.node_of[root]
    if name.startswith("Gather"):
        mixed = odd in st.members[st.nidx] and st.lsize > 1
        return ME == root or (ME == leader and not at_roots and mixed)
    if name == "Bcast" and at_roots:
        return ME != root and mine != roots and flat
    if name == "Bcast" and n * 8 <= 2 << 10:
        return mine != roots and (ME == leader or flat)
    if name == "Bcast":         # larger: no type between nodes; its node's leg compares with its leader
        return ME != leader and mine != leaders and flat
    if at_roots:                # Scatter(v)
        return ME != root and mine != roots
    return mine != roots        # a leader from the root's tag; a member in its node's leg, which states the root's


def _never_raises(c, name, n, root, odd):
    """Whether this rank must complete: a Bcast reader of the root's type
    that compares with the root, or (across nodes, up to 2 KiB) with a
    leader stating the root's type, when the node broadcasts flat."""
    st = c._pg
    size = st.lsize if st.hier else P
    return (name == "Bcast" and ME != root and (ME == odd) == (root == odd)
            and not 0 < st.core.config["bcast_tree_min"] <= size
            and (not st.hier or n * 8 <= 2 << 10 or st.nidx == st.node_of[root]))


def _odd_ranks(c, root):
    """The ranks that pass the other type in turn: the root, the next rank
    and, on a hierarchy, a rank of another node than the root's that is not
    its leader (its node's leg sees it, and the leaders' messages must
    tell)."""
    st = c._pg
    odd = {root, (root + 1) % P}
    if st.hier:
        odd |= set([m[1] for i, m in enumerate(st.members) if i != st.node_of[root] and len(m) > 1][-1:])
    return sorted(odd)


def test_a_root_datatype_differing_at_the_same_byte_count_is_refused_and_the_comm_stays_usable():
    """A root that sends n doubles as 2n MPI.INT where the others receive
    MPI.DOUBLE (and one rank that passes MPI.INT where the root and the
    others pass MPI.DOUBLE): erroneous to MPI, which compares no type
    signatures and moves the bytes. So does pgascol; every rank that waited
    on a peer of the other type raises DatatypeMismatchError, an
    ArgumentError naming the collective, both types and the root, at once
    once the call completed; the others complete; nobody aborts, at once or
    at its next call: the next collectives work on every rank. Roots 0 and
    P-1, inline and staged sizes, one node and virtual nodes (types are
    compared within each node's leg, and between nodes in a Scatter(v), a
    Bcast of up to 2 KiB and a Gather(v): _must_raise says which ranks)."""
    c = pgascol.Comm(WORLD.Dup())
    try:
        for n, root in ((4, 0), (100_000, 0), (4, P - 1), (100_000, P - 1)):
            for odd in _odd_ranks(c, root):
                for name, call in _differing_type_calls(n, root, odd):
                    start = time.monotonic()
                    try:
                        got, want = call(c)
                    except pgascol.DatatypeMismatchError as exc:
                        assert isinstance(exc, ArgumentError) and str(exc).startswith(name), str(exc)
                        assert "the type signatures differ" in str(exc), str(exc)
                        # both types named, but by a Gather's root told only that a node mixes types
                        assert "int32" in str(exc) or "ranks of the node of rank" in str(exc), str(exc)
                        assert "float64" in str(exc), str(exc)
                        assert not _never_raises(c, name, n, root, odd), (ME, name, n, root, odd, str(exc))
                        assert time.monotonic() - start < 2.5
                    else:
                        assert not _must_raise(c, name, n, root, odd), (ME, name, n, root, odd)
                        if want is not None:
                            assert got.tobytes() == want.tobytes(), (name, n, root, odd)
                    if name.startswith("Gather"):
                        _gather_again(c, root)
                    _still_usable(c)
    finally:
        c.Free()


def _gather_again(c, root):
    """A right Gather to the same root straight after one of differing
    types, nothing between: a leader that sent its blocks on the tag of
    another type may be in it before the root left the other; its blocks
    must meet this call's receive, not the one the root had posted."""
    got = np.zeros(2 * P) if ME == root else None
    c.Gather(np.full(2, ME, "d"), got, root=root)
    if ME == root:
        assert list(got) == [q for q in range(P) for _ in range(2)], got


def test_across_nodes_a_rank_of_another_type_than_the_roots_takes_no_bytes_of_it():
    """Virtual nodes: a leader, then a non-leader, of another node than the
    root's passes MPI.INT where every other rank passes MPI.DOUBLE, at the
    same byte count. Up to 2 KiB (4 doubles) a Bcast leader of another
    type raises DatatypeMismatchError, keeps its buffer untouched and still
    feeds its node, whose members compare with the root's type and get the
    root's data; larger (1000 and 100000 doubles) the leaders compare no
    types, and its members compare theirs with its own. A Scatter(v) leader of
    another type keeps its block out of its buffer and passes its members
    theirs, stating the root's type, so they compare theirs with the root's. A Gather(v) root keeps the blocks of a node that passes another
    type out of its receive buffer. Roots 0 and P-1; _across_expected says
    which ranks raise and what each buffer holds; a right call follows."""
    c = pgascol.Comm(WORLD.Dup())
    try:
        if not c._pg.hier:
            return
        for root in sorted({0, P - 1}):
            for odd in _another_nodes_ranks(c._pg, root):
                for n in (4, 1000, 100_000):
                    bufs = []
                    for name, call in _differing_type_calls(n, root, odd, bufs):
                        if n == 100_000 and name != "Bcast":
                            continue
                        raises, holds = _across_expected(c, name, n, root, odd)
                        try:
                            call(c)
                        except pgascol.DatatypeMismatchError as exc:
                            assert str(exc).startswith(name + " (hierarchical)"), str(exc)
                            assert raises is not False, (ME, name, n, root, odd, str(exc))
                        else:
                            assert not raises, (ME, name, n, root, odd)
                        got, want = bufs.pop()
                        _assert_holds(c, name, n, odd, holds, got, want)
                        if name.startswith("Gather"):
                            _gather_again(c, root)
                        _still_usable(c)
    finally:
        c.Free()


def _another_nodes_ranks(st, root):
    """A leader and a non-leader (if any) of other nodes than the root's."""
    others = [m for i, m in enumerate(st.members) if i != st.node_of[root]]
    return sorted({others[-1][0]} | set([m[1] for m in others if len(m) > 1][-1:]))


def _across_expected(c, name, n, root, odd):
    """(raises: True, False or None for either; holds: "data", "untouched",
    "either" or, at a Gather root, the ranks whose blocks stay untouched)
    for this rank, when rank `odd`, of another node than the root's, passes
    another type than everybody else. A member's node leg is the engine's
    (it moves a member's bytes before it compares types: "either")."""
    st = c._pg
    node = st.members[st.node_of[odd]]
    here, leads = ME in node, odd == node[0]
    flat = not 0 < st.core.config["bcast_tree_min"] <= len(node)
    if name == "Bcast":
        typed = n * 8 <= 2 << 10        # the leaders carry the root's type
        if ME == odd:
            if leads:
                return typed, "untouched" if typed else "data"
            return (True if flat else None), "either"
        if here and leads and not typed:    # its node's leg states the leader's type: no bytes of it
            return (True if flat else None), ("untouched" if flat else "either")
        return (None if here and not flat else False), "data"
    if name.startswith("Gather"):
        if ME == root:
            return True, set(node)
        if ME == node[0]:
            return len(node) > 1, None
        return (None if here else False), None
    if ME == odd:           # Scatter(v)
        return True, "untouched" if leads else "either"
    return False, "data"    # a leader of another type states the root's type in its node's leg


def _assert_holds(c, name, n, odd, holds, got, want):
    """What this rank's receive buffer holds after the call (zeros before):
    see _across_expected."""
    if holds is None:
        return
    if isinstance(holds, set):      # a Gather root's: blocks of n doubles
        for q in range(P):
            block, right = got[n * q:n * (q + 1)], want[n * q:n * (q + 1)]
            if q in holds:
                assert not block.any(), (name, n, odd, q, block[:4])
            else:
                assert block.tobytes() == right.tobytes(), (name, n, odd, q, block[:4])
        return
    if holds == "untouched" or (holds == "either" and not got.any()):
        assert not got.any(), (ME, name, n, odd, got[:4])
    else:
        assert got.tobytes() == want.tobytes(), (ME, name, n, odd, holds, got[:4])


def test_a_reduction_datatype_differing_at_the_same_byte_count_is_a_mismatch():
    """One rank reduces int64 where the others reduce float64: its members
    fold typed elements, so unlike the rooted data movers this stays a
    mismatch (the team aborted): every rank raises naming it, at once or at
    its next call."""
    odd = P - 1
    _shape_differs("Reduce", lambda c: c.Reduce(np.ones(4, np.int64 if ME == odd else np.float64),
                                                np.zeros(4), root=0), ["the type signatures differ"])


def test_the_same_type_signature_in_other_datatypes_is_no_mismatch():
    """MPI matches type signatures, not datatypes: a contiguous derived type
    of two MPI.INT against MPI.INT x 2, a vector of MPI.DOUBLE against
    MPI.DOUBLE, a struct {double, double} against MPI.DOUBLE x 2, uint8
    arrays against bytes. On every layout of nodes."""
    c = pgascol.Comm(WORLD.Dup())
    pair = MPI.INT.Create_contiguous(2).Commit()
    strided = MPI.DOUBLE.Create_vector(3, 1, 2).Commit()
    doubles = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.DOUBLE, MPI.DOUBLE]).Commit()
    try:
        for root in {0, P - 1}:
            n = 5
            out = np.zeros(2 * n, np.int32)
            sent = np.arange(2 * n * P, dtype=np.int32)
            c.Scatter([sent, n, pair] if ME == root else None, [out, 2 * n, MPI.INT], root=root)
            assert (out == sent[2 * n * ME:2 * n * (ME + 1)]).all(), out
            buf = np.zeros(6)
            if ME == root:
                buf[:] = np.arange(6)
                c.Bcast([buf, 1, strided], root=root)
            else:
                c.Bcast([buf, 3, MPI.DOUBLE], root=root)
                assert list(buf[:3]) == [0, 2, 4], buf
            b = bytearray(b"pgascol!") if ME == root else np.zeros(8, np.uint8)
            c.Bcast(b, root=root)
            assert bytes(b) == b"pgascol!", b
            got = np.zeros(2 * P, np.int32) if ME == root else None
            c.Gather([np.full(1, ME, np.int64).view(np.int32), 1, pair],
                     [got, 2, MPI.INT] if ME == root else None, root=root)
            if ME == root:
                assert list(got.view(np.int64)) == list(range(P)), got
            mine = np.array([ME, -ME], np.float64)
            both = np.zeros(2 * P) if ME == root else None
            c.Gather([mine, 1, doubles], [both, 2, MPI.DOUBLE] if ME == root else None, root=root)
            if ME == root:
                assert list(both) == [v for r in range(P) for v in (r, -r)], both
            c.Bcast([mine, 1, doubles] if ME == root else [mine, 2, MPI.DOUBLE], root=root)
            assert list(mine) == [root, -root], mine
    finally:
        pair.Free()
        strided.Free()
        doubles.Free()
        c.Free()


def _other_leader(st, root):
    """A node's leader other than the root's node's (a hierarchy only)."""
    return [m[0] for i, m in enumerate(st.members) if i != st.node_of[root]][-1]


def _own_misuse(name, n, root, refusers):
    """A Gatherv or Scatterv in which the ranks `refusers` each refuse what
    they pass themselves (a send buffer shorter than its count, a read-only
    receive buffer: misuse that every rank might make alike) and the
    others' calls are right."""
    d = MPI.DOUBLE
    ro = np.zeros(n)
    ro.flags.writeable = False
    bad = ME in refusers
    if name == "Gatherv":
        send = [np.zeros(n - 1), n, d] if bad else np.full(n, ME, "d")
        recv = [np.zeros(n * P), [n] * P, None, d] if ME == root else None
        return lambda c: c.Gatherv(send, recv, root=root)
    send = [np.zeros(n * P), [n] * P, None, d] if ME == root else None
    recv = ro if bad else np.zeros(n)
    return lambda c: c.Scatterv(send, recv, root=root)


def test_a_refusal_of_its_own_arguments_across_nodes_ends_every_rank_at_once():
    """On a hierarchy, ranks that exchange inter-node messages in a Gatherv
    or Scatterv (the root, other nodes' leaders) refuse what they pass
    themselves, one or two of them on different nodes: the refusal takes
    the place of their messages, so every rank ends the call within a
    fraction of a second (the refusers with their ArgumentError, a rank
    that needed one of them with PeerRefusedError naming the collective,
    the rank and its reason, the others completing), nothing is left in
    flight, and the next collectives work on every rank. On one node, the
    root alone (its node team's refusal)."""
    if P == 1:
        return
    c = pgascol.Comm(WORLD.Dup())
    st = c._pg
    try:
        for n in (4, 100000):
            for root in (0, P - 1):
                q = _other_leader(st, root) if st.hier else None
                for refusers in ([root], [q], [root, q]):
                    if None in refusers:
                        continue
                    for name in ("Gatherv", "Scatterv"):
                        call = _own_misuse(name, n, root, refusers)
                        start = time.monotonic()
                        try:
                            call(c)
                        except pgascol.PeerRefusedError as exc:
                            assert ME not in refusers, repr(exc)
                            assert str(exc).startswith(name + ": "), str(exc)
                            assert "refused its arguments: ArgumentError: " in str(exc), str(exc)
                        except ArgumentError as exc:
                            assert ME in refusers, repr(exc)
                        elapsed = time.monotonic() - start
                        assert elapsed < 2.5, (ME, name, n, root, refusers, elapsed)
                        _still_usable(c)
    finally:
        c.Free()


def _slow_allreduce(c, late):
    """An Allreduce for which every rank but `late` waits 0.3 s: long
    enough for an inter-node wait to look for alerts (every 100 ms)."""
    if ME == late:
        time.sleep(0.3)
    y = np.zeros(2)
    c.Allreduce(np.full(2, ME, "d"), y)
    assert np.all(y == sum(range(P))), y


def test_refusals_every_rank_makes_alike_leave_no_alert_behind():
    """Every rank refuses the same misuse (a Bcast count past the buffer,
    a read-only Allreduce result, a Gatherv or Scatterv buffer too short):
    on a hierarchy each leader tells the others, which are out of the call
    already. Those refusals name their call, so the correct calls that
    follow (waits long enough to look for alerts, a Scatter from a leader
    that sent one) never meet them; then a refusal by some ranks only, and
    correct calls again."""
    c = pgascol.Comm(WORLD.Dup())
    d = MPI.DOUBLE
    ro = np.zeros(4)
    ro.flags.writeable = False
    alike = [lambda: c.Bcast([np.zeros(3), 4, d], root=0),
             lambda: c.Allreduce(np.ones(4), ro),
             lambda: c.Gatherv([np.zeros(3), 4, d], [np.zeros(4 * P), [4] * P, None, d] if ME == 0 else None,
                               root=0),
             lambda: c.Scatterv([np.zeros(4 * P), [4] * P, None, d] if ME == P - 1 else None, ro, root=P - 1)]
    try:
        for k, call in enumerate(alike):
            try:
                call()
            except PeerRefusedError as exc:
                raise AssertionError("rank %d, call %d: %r" % (ME, k, exc))
            except ArgumentError:
                pass
            else:
                raise AssertionError("rank %d: call %d did not raise" % (ME, k))
        for late in range(min(P, 3)):
            _slow_allreduce(c, late)
            _still_usable(c)
        if P > 1:
            st = c._pg
            q = _other_leader(st, 0) if st.hier else 0
            call = _own_misuse("Gatherv", 4, 0, [q])
            try:
                call(c)
            except ArgumentError:
                pass
        for late in range(min(P, 2)):
            _slow_allreduce(c, late)
            _still_usable(c)
    finally:
        c.Free()


def _rooted_misuse(name, n, refusers, op=None):
    """A Bcast (root 0), Reduce (root 0), Scan or Exscan in which the ranks
    `refusers` refuse what they pass themselves (a count past their buffer,
    a read-only result, `op` where MPI does not define it) and the others'
    calls are right: (call, the right result on this rank or None)."""
    d = MPI.DOUBLE
    bad = ME in refusers
    short = [np.zeros(n - 1), n, d]
    ro = np.zeros(n)
    ro.flags.writeable = False
    if name == "Bcast":
        buf = short if bad else (np.arange(n, dtype="d") if ME == 0 else np.zeros(n))
        return (lambda c: c.Bcast(buf, root=0)), (buf, np.arange(n, dtype="d"))
    x = np.full(n, ME + 1.0)
    y = np.zeros(n)
    if name == "Reduce":
        send = short if bad and op is None else x
        recv = (short if bad and op is None else y) if ME == 0 else None
        mine = op if bad and op is not None else MPI.SUM
        return (lambda c: c.Reduce(send, recv, op=mine, root=0)), \
            ((y, P * (P + 1) / 2) if ME == 0 and not bad else None)
    recv = ro if bad else y
    call = (lambda c: c.Scan(x, recv)) if name == "Scan" else (lambda c: c.Exscan(x, recv))
    want = (ME + 1) * (ME + 2) / 2 if name == "Scan" else ME * (ME + 1) / 2
    return call, ((y, want) if not (name == "Exscan" and ME == 0) else None)


def _needing(name, st, refused_nodes):
    """The nodes in the call whose results need a refusing node's data (a
    Bcast's root node, the root's node for a Reduce, a node before them in
    a Scan/Exscan): none when every rank refused alike."""
    if not st.hier or len(refused_nodes) == st.nnodes:
        return []
    others = [k for k in range(st.nnodes) if k not in refused_nodes]
    if name == "Bcast":
        return others if st.node_of[0] in refused_nodes else []
    if name == "Reduce":
        return [k for k in others if k == st.node_of[0]]
    return [k for k in others if k > min(refused_nodes)]


def test_a_refusal_of_a_bcast_reduce_or_scan_by_whole_nodes_never_gives_wrong_data():
    """The ranks of one node (or of every node) refuse their own arguments
    to a Bcast, Reduce, Scan or Exscan, whose inter-node leg some leaders
    complete without the refusing one (a Bcast's leaves, the ranks before it
    in a Scan). The refusers join the leg with no data once every rank that
    needs their data refused too, is alone on its node or leads a node in
    a Bcast (it then raises PeerRefusedError naming the collective, the
    rank and its reason; in a Bcast RootRefusedError, as do its node's
    members): every other rank completes with the right result, and the
    communicator stays usable. Where a node of several ranks needs it in a
    Reduce, Scan or Exscan, the call is given up:
    every rank ends within a fraction of a second (the refusers with their
    ArgumentError, the others with an error naming the collective or the
    right result) and the next calls raise or are right, never another
    call's data."""
    if P == 1:
        return
    c = pgascol.Comm(WORLD.Dup())
    st = c._pg
    nodes = range(st.nnodes) if st.hier else [0]
    members = st.members if st.hier else [list(range(P))]
    cases = [("Bcast", 4, [len(nodes) - 1], None), ("Bcast", 200000, [len(nodes) - 1], None),
             ("Reduce", 4, [st.node_of[0] if st.hier else 0], None), ("Scan", 4, [len(nodes) - 1], None),
             ("Exscan", 4, [len(nodes) - 1], None), ("Reduce", 4, list(nodes), None),
             ("Scan", 4, list(nodes), None), ("Bcast", 4, list(nodes), None),
             # a refusing node whose data others need
             ("Bcast", 4, [0], None), ("Reduce", 4, [len(nodes) - 1], MPI.BAND), ("Scan", 4, [0], None)]
    try:
        for name, n, refused_nodes, op in cases:
            refusers = [q for k in refused_nodes for q in members[k]]
            needing = _needing(name, st, refused_nodes)
            mine = st.hier and st.nidx in needing
            # a Bcast's needing leaders refuse their node's leg with the root's reason
            usable = name == "Bcast" or all(len(members[k]) == 1 for k in needing)
            call, right = _rooted_misuse(name, n, refusers, op)
            start = time.monotonic()
            where = (ME, name, n, refused_nodes)
            try:
                call(c)
            except PeerRefusedError as exc:
                assert mine, where + (repr(exc),)
                assert str(exc).startswith(name) and "refused its arguments" in str(exc), where + (str(exc),)
            except ArgumentError as exc:
                assert ME in refusers, where + (repr(exc),)
            except pgascol.PgascolError as exc:
                assert not usable and ME not in refusers and name in str(exc), where + (repr(exc),)
            else:   # (a member of a needing node that waits for nobody may complete)
                assert ME not in refusers and not (mine and usable), where
                if right is not None:
                    assert np.all(right[0] == right[1]), where + (right[0][:4],)
            assert time.monotonic() - start < 2.5, where + (time.monotonic() - start,)
            if usable:
                _still_usable(c)
            else:
                _next_allreduce_fails_or_is_right(c, *where)
                c.Free()
                c = pgascol.Comm(WORLD.Dup())
                st = c._pg
    finally:
        c.Free()


def _tree_parent(root, k):
    """This rank's parent in the k-nomial Bcast tree from `root` (None at
    the root) and whether it has children (csrc/coll/coll_bcast.c,
    tree_links_of)."""
    v = (ME - root) % P
    place = 1
    while v and (v // place) % k == 0:
        place *= k
    if v == 0:
        return None, P > 1
    return (v - (v // place) % k * place + root) % P, v + 1 < P and place > 1


def _typed_call(call):
    """call() -> whether it raised DatatypeMismatchError (checked: an
    ArgumentError naming both types)."""
    try:
        call()
    except pgascol.DatatypeMismatchError as exc:
        assert isinstance(exc, ArgumentError) and "the type signatures differ" in str(exc), str(exc)
        assert "int32" in str(exc) and "float64" in str(exc), str(exc)
        return True
    return False


def test_on_one_node_no_bytes_move_between_ranks_of_different_types():
    """On one node, Bcast, Gather(v) and Scatter(v) move no bytes between
    two ranks whose basic types differ at the same byte count (rank `odd`
    passes n doubles as 2n MPI.INT, the others MPI.DOUBLE): a Bcast reader
    whose source (the root, or in a tree its parent) passes the other type
    raises DatatypeMismatchError with its buffer untouched (a single-copy
    tree's relay, whose children read its buffer, holds the data); a
    Scatter(v) receiver of another type than the root's likewise; a
    Gather(v) root raises and holds the blocks of the senders of its own
    type only. Every other rank has what MPI would give, and the next
    collectives work. Inline and staged or single-copy sizes, roots 0 and
    P-1, the odd rank the root or the next rank."""
    c = _flat_comm()
    if c is None:
        return
    cfg = c._pg.core.config
    try:
        for n, root in ((4, 0), (100_000, 0), (4, P - 1), (100_000, P - 1)):
            for odd in sorted({root, (root + 1) % P}):
                me_odd, differs = ME == odd, (ME == odd) != (root == odd)
                blocks = np.arange(n * P, dtype=np.float64) + 1
                where = (ME, n, root, odd)
                # Bcast: the source of a reader is the root, or its tree parent
                tree = n * 8 > cfg["inline_max"] and 0 < cfg["bcast_tree_min"] <= P
                source, relay = _tree_parent(root, cfg["bcast_radix"]) if tree else (
                    (None, True) if ME == root else (root, False))
                buf = blocks[:n].copy() if ME == root else np.zeros(n)
                raised = _typed_call(lambda: c.Bcast(_typed(buf, me_odd), root=root))
                skips = source is not None and (source == odd) != me_odd
                assert raised or not skips, where
                if ME == root or not skips:
                    assert buf.tobytes() == blocks[:n].tobytes(), where + ("Bcast",)
                elif not (relay and tree):
                    assert not buf.any(), where + ("Bcast: bytes of another type taken",)
                else:   # a relay: untouched when staged, the data when its children pull from it
                    assert not buf.any() or buf.tobytes() == blocks[:n].tobytes(), where
                _still_usable(c)
                # Gather(v): the root takes the blocks of its own type only
                for v in (False, True):
                    out = np.zeros(n * P) if ME == root else None
                    spec = None
                    if ME == root:
                        k = 2 if me_odd else 1
                        spec = _typed(out, me_odd)
                        if v:
                            spec = [spec[0], [n * k] * P, [n * k * q for q in range(P)], spec[1]]
                    mine = _typed(blocks[n * ME:n * (ME + 1)].copy(), me_odd)
                    raised = _typed_call(lambda: (c.Gatherv if v else c.Gather)(mine, spec, root=root))
                    assert raised or ME != root, where + ("Gather", v)
                    assert not raised or ME == root or differs, where + ("Gather", v)
                    if ME == root:
                        want = blocks.copy()
                        for q in range(P):
                            if q != root and (q == odd) != me_odd:
                                want[n * q:n * (q + 1)] = 0
                        assert out.tobytes() == want.tobytes(), where + ("Gather", v)
                    _gather_again(c, root)
                    # inline senders wait for nobody: PGC_SIG_RING calls ahead
                    # they would reuse the slot of the signature the root has
                    # yet to check, and it would take their block unknowing
                    c.Barrier()
                # Scatter(v): a receiver of another type than the root's takes nothing
                for v in (False, True):
                    out = np.zeros(n)
                    spec = None
                    if ME == root:
                        k = 2 if me_odd else 1
                        spec = _typed(blocks.copy(), me_odd)
                        if v:
                            spec = [spec[0], [n * k] * P, [n * k * q for q in range(P)], spec[1]]
                    raised = _typed_call(lambda: (c.Scatterv if v else c.Scatter)(spec, _typed(out, me_odd),
                                                                                  root=root))
                    assert raised == differs or (ME == root and raised), where + ("Scatter", v, raised)
                    want = np.zeros(n) if differs else blocks[n * ME:n * (ME + 1)]
                    assert out.tobytes() == want.tobytes(), where + ("Scatter", v)
                _still_usable(c)
    finally:
        c.Free()
