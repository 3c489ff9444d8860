"""Errors when basic types differ at the same byte count (pgascol.Comm):
ranks pass n doubles as 2n MPI.INT where the others pass MPI.DOUBLE to a
Bcast, Gather(v) or Scatter(v). Erroneous to MPI, which compares no type
signatures and moves the bytes; so does pgascol, except that on one node no
bytes move between ranks of different types, and across virtual nodes a
rank of another type than the root's takes none of its bytes. Every rank
that waited on a peer of the other type raises DatatypeMismatchError, the
others complete, and the communicator stays usable. The same type signature
in other datatypes is no mismatch. (A reduction's differing type is a
mismatch: comm_errors_mismatch.py; both run in the launch of the chapter
test_errors.)"""
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.errors import ArgumentError
from tests.mpi_programs.comm_errors_common import ME, P, WORLD, _flat_comm, _still_usable


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
                # larger, its node's leg states its own type: it raises where
                # it waits on a member (single copy, more than its ring holds)
                return (True if typed else None), "untouched" if typed else "data"
            return (True if flat else None), "either"
        if here and leads and not typed:    # its node's leg states the leader's type: no bytes of it
            return (True if flat else None), ("untouched" if flat else "either")
        if ME == node[0]:   # the leg's root: it raises where it waits on the odd member (single copy)
            return None, "data"
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
