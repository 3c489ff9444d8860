"""The programs of UPC's reductions inside a node, for the built-in
operators (csrc/upc/: FOLD, SCAN and LEFT steps, folds in C, no GIL).

Each member folds its own run of src (one contiguous run of its part) into
partial results kept in the members' partial-result areas (their inline
slots of the call, plan.slot); the partials then meet at the root:

- pull: the root waits for each member's post and folds the partials it
  reads from their areas;
- push: each member folds straight into its own place in the root's area,
  then posts; the root folds them all at once;
- binomial-pull / binomial-push: along a binomial tree rooted at the root,
  a member folds its children's partials into its own (reading them from
  the children's areas, or finding them written into its own by the
  children), then posts, one element per tree edge (the PGASCol thesis's
  Algorithm 7);
- -static / -dynamic: the runs are folded and passed on in pieces
  (plan.chunks on the longest run: PGASCOL_UPC_CHUNK bytes, or two halves),
  one post per piece, so a parent folds piece c of its children while they
  fold piece c + 1; the root folds the pieces' results last.

Who contributes to which piece is known when the call is planned (every
rank's run), so members and pieces without elements are left out rather
than given an identity element.

all_prefix_reduce's three-phase program on one node: each member scans
its run into dst, posts its total, folds the totals of the members before
it (the ranks hold their runs in rank order) and folds that on the left of
its scan."""

from ..engine import _core
from ..errors import ArgumentError
from . import plan as P

WAIT, POST, END = _core.UPC_WAIT, _core.UPC_POST, _core.UPC_END
OPTYPE, FOLD, SCAN, LEFT, COPY = _core.UPC_OPTYPE, _core.UPC_FOLD, _core.UPC_SCAN, _core.UPC_LEFT, _core.UPC_COPY
SLOT, INTO = _core.UPC_SLOT, _core.UPC_INTO
STEP0 = _core.UPC_STEP0


def slot(member, index, item):
    """The address operand of partial `index` (of `item` bytes) in member's area."""
    return SLOT | (member << 32) | (index * item)


def _pieces(alg, counts, item, most):
    """How many pieces the runs are folded in (at most `most`: what the
    partial-result areas hold), and each rank's piece bounds."""
    longest = max(counts)
    k = len(P.chunks(alg, longest * item)) if alg.endswith(("-static", "-dynamic")) else 1
    k = max(1, min(k, longest, most))
    return k, [[(c * n // k, (c + 1) * n // k) for c in range(k)] for n in counts]


def reduce_program(me, nranks, alg, root, counts, run_addr, dst_addr, oper, slot_bytes, in_mode, out_mode):
    """This member's program for all_reduce by `alg` (pull, push,
    binomial-pull, binomial-push, each -static or -dynamic too): counts[r]
    the elements of rank r's run, run_addr my run's address, dst_addr the
    result's (on the root)."""
    item = oper.dtype.itemsize
    parents = [P.binomial(r, nranks, root) for r in range(nranks)]
    shape = alg.replace("-static", "").replace("-dynamic", "")
    per_piece = {"binomial-push": _width(parents) + 1, "push": nranks + 1}.get(shape, 2)   # partials kept per piece
    k, bounds = _pieces(alg, counts, item, slot_bytes // (item * per_piece))
    has = [[hi > lo for lo, hi in b] for b in bounds]
    work = [(OPTYPE, oper.code, oper.dtype_code, 0)]
    mine = [(run_addr + lo * item, hi - lo) for lo, hi in bounds[me]]
    if alg.startswith("binomial"):
        below = _subtrees(parents, has, root, k)
        body, room = (_tree_push if alg.startswith("binomial-push") else _tree_pull)(
            me, parents, below, mine, has, k, item)
    else:
        body, room = (_flat_push if alg.startswith("push") else _flat_pull)(me, nranks, root, mine, has, k, item)
    if room * item > slot_bytes:
        raise ArgumentError("upc.all_reduce: algorithm %r keeps %d partial results of %d bytes in a member's "
                            "inline slot of %d bytes (PGASCOL_INLINE_MAX)" % (alg, room, item, slot_bytes))
    work += body
    if me == root:
        work.append((FOLD, dst_addr, slot(root, room - k, item), k))      # the pieces' results, last
    return P.wrap(work, in_mode, out_mode, me, root)


def _combine(work, target, source, first):
    """target = source (first) or target op source: one element."""
    work.append((FOLD, target, source, 1 if first else 1 | INTO))


def _flat_pull(me, nranks, root, mine, has, k, item):
    """Partials in each member's area (piece c at index c); the root folds them into its
    own pieces' results (indices k ... 2k - 1)."""
    work = []
    for c, (addr, n) in enumerate(mine):
        if n:
            work.append((FOLD, slot(me, c, item), addr, n))
        if me != root:
            work.append((POST, STEP0 + c, 0, 0))
            continue
        first = True
        for r in range(nranks):
            if not has[r][c]:
                continue
            if r != me:
                work.append((WAIT, r, STEP0 + c, 0))
            _combine(work, slot(me, k + c, item), slot(r, c, item), first)
            first = False
    return work, 2 * k


def _flat_push(me, nranks, root, mine, has, k, item):
    """Partial (r, c) at its own index of the root's area (those with elements, in
    order); the root folds each piece's into its results (after them)."""
    index = {}
    for r in range(nranks):
        for c in range(k):
            if has[r][c]:
                index[r, c] = len(index)
    results = len(index)
    work = []
    for c, (addr, n) in enumerate(mine):
        if n:
            work.append((FOLD, slot(root, index[me, c], item), addr, n))
        if me != root:
            work.append((POST, STEP0 + c, 0, 0))
    if me == root:
        for c in range(k):
            parts = [index[r, c] for r in range(nranks) if has[r][c]]
            work += [(WAIT, r, STEP0 + c, 0) for r in range(nranks) if r != me and has[r][c]]
            for i, at in enumerate(parts):
                _combine(work, slot(root, results + c, item), slot(root, at, item), i == 0)
    return work, results + k


def _subtrees(parents, has, root, k):
    """below[r][c]: whether r's subtree has elements in piece c."""
    nranks = len(parents)
    below = [list(h) for h in has]
    order = sorted(range(nranks), key=lambda r: -((r - root) % nranks))   # leaves (highest v) first
    for r in order:
        parent = parents[r][0]
        if parent is not None:
            below[parent] = [a or b for a, b in zip(below[parent], below[r])]
    return below


def _tree_pull(me, parents, below, mine, has, k, item):
    """Piece c's partial of my subtree at index c of my area (the root's results at k + c)."""
    parent, children = parents[me]
    work, at = [], (lambda c: slot(me, c if parent is not None else k + c, item))
    for c, (addr, n) in enumerate(mine):
        first = True
        if n:
            work.append((FOLD, at(c), addr, n))
            first = False
        for ch in children:
            if below[ch][c]:
                work.append((WAIT, ch, STEP0 + c, 0))
                _combine(work, at(c), slot(ch, c, item), first)
                first = False
        if parent is not None:
            work.append((POST, STEP0 + c, 0, 0))
    return work, 2 * k


def _width(parents):
    """binomial-push's places per piece in a member's area: itself and its children."""
    return max(1 + len(children) for _, children in parents)


def _tree_push(me, parents, below, mine, has, k, item):
    """Member m's area: for each piece c, a place per contributor (m itself
    if it has elements there, then each child whose subtree has), at
    c * width + j; a member folds its places into its parent's place for it
    (the root: into its results, after every piece's places)."""
    width = _width(parents)

    def places(m, c):
        return ([m] if has[m][c] else []) + [ch for ch in parents[m][1] if below[ch][c]]

    parent, children = parents[me]
    work = []
    for c, (addr, n) in enumerate(mine):
        here = places(me, c)
        if not here:
            continue
        if n:
            work.append((FOLD, slot(me, c * width, item), addr, n))
        work += [(WAIT, ch, STEP0 + c, 0) for ch in children if below[ch][c]]
        target = slot(parent, c * width + places(parent, c).index(me), item) if parent is not None \
            else slot(me, k * width + c, item)
        work.append((FOLD, target, slot(me, c * width, item), len(here)))
        if parent is not None:
            work.append((POST, STEP0 + c, 0, 0))
    return work, (k * width + k)


def prefix_program(me, nranks, counts, src_addr, dst_addr, oper, in_mode, out_mode):
    """This member's three-phase prefix reduce on one node (ranks hold their
    runs in rank order): scan, post the total, fold the earlier totals, fold
    them on the left of the scan. Under IN_ALLSYNC every member has waited
    for every other (where the call's signatures are compared) before its
    scan; otherwise a member that waits for earlier ones folds its total
    first and scans into dst only after its first wait, so that ranks that
    passed different arguments raise before writing (one more read of the
    run, no more writes)."""
    item, n = oper.dtype.itemsize, counts[me]
    earlier = [q for q in range(me) if counts[q]]
    late_scan = bool(n and earlier) and in_mode != P.ALLSYNC
    work = [(OPTYPE, oper.code, oper.dtype_code, 0)]
    if late_scan:
        work.append((FOLD, slot(me, 0, item), src_addr, n))
    elif n:
        work += [(SCAN, dst_addr, src_addr, n), (COPY, slot(me, 0, item), dst_addr + (n - 1) * item, item)]
    work.append((POST, STEP0, 0, 0))
    if n and earlier:
        for i, q in enumerate(earlier):
            work.append((WAIT, q, STEP0, 0))
            _combine(work, slot(me, 1, item), slot(q, 0, item), i == 0)
        if late_scan:
            work.append((SCAN, dst_addr, src_addr, n))
        work.append((LEFT, dst_addr, slot(me, 1, item), n))
    return P.wrap(work, in_mode, out_mode)
