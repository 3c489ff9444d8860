"""Errors when several ranks refuse (pgascol.Comm, on one node and across
virtual nodes): the root of a Gatherv or Scatterv refuses its counts while
another node's leader takes the call to MPI; the root and other nodes'
leaders refuse what they pass themselves, one or two of them; every rank
refuses alike (the refusals name their call, so no alert is left behind
for the correct calls that follow); the ranks of one node, or of every
node, refuse a Bcast, Reduce, Scan or Exscan. Every rank ends the call
within a fraction of a second, the refusers with their ArgumentError, and
the next calls raise or are right, never another call's data. One rank's
refusal: comm_errors_refusals.py (the same launch, chapter test_errors)."""
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import ArgumentError, CollectiveMismatchError, PeerRefusedError, TeamAbortedError
from tests.mpi_programs.comm_errors_common import (ME, P, WORLD, _DLPackOnly, _next_allreduce_fails_or_is_right,
                                                   _still_usable)


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
