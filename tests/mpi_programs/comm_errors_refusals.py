"""Errors (mpi4py's test_exceptions, for collectives): pgascol.Comm when
one rank refuses its own arguments. That rank raises its ArgumentError at
once. The others, already in the collective, raise an error naming the
operation at once: on a node the team takes the op as refused
(PeerRefusedError, RootRefusedError where the root refused), across nodes
(virtual nodes) a refusing leader tells the others, which wait for it in an
inter-node MPI phase (PeerRefusedError); any other wait is bounded by
PGASCOL_TIMEOUT (tests/test_mpi_programs.py sets it to 3 s). A root that
refuses its own arguments to a Gather(v), Scatter(v), Bcast or Reduce, a
member that refuses any collective, and a rank whose specification mpi4py
itself raises for leave the communicator usable (PeerRefusedError on the
ranks that need it). Free refuses while another thread is in a collective.

The chapter test_errors runs this program in one launch with
comm_errors_several_refusers.py, comm_errors_mismatch.py and
comm_errors_types.py; their shared helpers are in comm_errors_common.py."""
import re
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import (ArgumentError, CollectiveMismatchError, PeerRefusedError, PgascolError,
                            PgascolTimeoutError, TeamAbortedError, in_mpi)
from tests.mpi_programs.comm_errors_common import (ME, P, WORLD, _flat_comm, _next_allreduce_fails_or_is_right,
                                                   _still_usable)


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


def test_partial_allreduce_error_fails_the_others_at_once():
    ro = np.zeros(4)
    ro.flags.writeable = False
    _partial("Allreduce", lambda c: c.Allreduce(np.ones(4), ro),
             lambda c: c.Allreduce(np.ones(4), np.zeros(4)), check_next=True)


def test_partial_bcast_error_fails_the_others_at_once():
    _partial("Bcast", lambda c: c.Bcast(np.zeros(4), root=P),
             lambda c: c.Bcast(np.zeros(4), root=0), check_next=True, root_0=True)


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


# A Bcast reader's refusals across nodes: a read-only buffer, a buffer
# shorter than its count.
def _bcast_reader_refusals(n):
    ro = np.zeros(n)
    ro.flags.writeable = False
    return (("read-only", lambda c, root: c.Bcast(ro, root=root)),
            ("short", lambda c, root: c.Bcast([np.zeros(n - 1), n, MPI.DOUBLE], root=root)))


def test_a_bcast_reader_that_refuses_across_nodes_ends_the_call_and_the_comm_stays_usable():
    """Across nodes, each rank in turn but the root refuses its arguments to
    a Bcast (4 and 100000 doubles, roots 0 and P-1): it raises its
    ArgumentError; where it leads another node than the root's, that node's
    members raise RootRefusedError naming it ("this node's leader (rank
    r)"); where it leads the root's node, every other node's rank does
    ("the root's node's leader"): it joins the leaders' leg with the size
    they tell it; every other rank completes with the root's data. Every
    rank within 2.5 s, never an abort, and the communicator usable.
    (Left: another node's leader whose count is no integer cannot join the
    leaders' leg, and nobody tells it the leg's size.)"""
    probe = pgascol.Comm(WORLD.Dup())
    st = probe._pg
    hier, node_of = st.hier, list(st.node_of) if st.hier else None
    leaders = {st.members[k][0] for k in range(st.nnodes)} if hier else set()
    probe.Free()
    if not hier:
        return      # one node: test_a_member_that_refuses_leaves_the_communicator_usable
    for root in sorted({0, P - 1}):
        for n in (4, 100_000):
            for kind, refuse in _bcast_reader_refusals(n):
                for bad in range(P):
                    if bad == root:
                        continue
                    c = pgascol.Comm(WORLD.Dup())
                    where = (ME, kind, n, root, bad)
                    buf = np.full(n, 7.0 if ME == root else 0.0)
                    start = time.monotonic()
                    try:
                        try:
                            refuse(c, root) if ME == bad else c.Bcast(buf, root=root)
                            got = None
                        except PgascolError as exc:
                            got = exc
                        assert time.monotonic() - start < 2.5, where + (time.monotonic() - start,)
                        leads = bad in leaders and node_of[bad] == node_of[ME] != node_of[root]
                        leads_roots = bad in leaders and node_of[bad] == node_of[root] != node_of[ME]
                        if ME == bad:
                            assert isinstance(got, ArgumentError) and not isinstance(got, PeerRefusedError), \
                                where + (repr(got),)
                        elif leads or leads_roots:
                            named = ("this node's leader (rank %d)" if leads else "the root's node's leader (rank %d)")
                            assert isinstance(got, pgascol.RootRefusedError), where + (repr(got),)
                            assert ("Bcast: %s refused its arguments: Argument" % (named % bad)) in str(got), \
                                where + (str(got),)
                        else:
                            assert got is None and (buf == 7.0).all(), where + (repr(got), buf[0])
                        _still_usable(c)
                    finally:
                        c.Free()


# Misuse only the root can see (its send or receive specification), as
# (collective, root's call, others' call), each with 4 and 100000 doubles
# per rank: inline, and staged or single copy; the root is `root`.
def _root_misuse(n, root=0):
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
    ] + _root_specs_mpi4py_refuses(n, root)


# Root specifications mpi4py itself raises for (ValueError, TypeError or
# BufferError in mpi4py's msgbuffer.pxi): refused as pgascol's ArgumentError
# before anything moves, not taken to MPI while the others are in the engine.
# Across nodes a Bcast count that is no integer too: the root's leader joins
# the leaders' MPI leg with the size the other leaders tell it.
def _root_specs_mpi4py_refuses(n, root):
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
        ("Bcast", lambda c: c.Bcast([np.zeros(n), 2.5, d], root=root), lambda c, out: c.Bcast(out, root=root)),
    ]


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
            for name, bad, good in _root_misuse(n, root):
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
