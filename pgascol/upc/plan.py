"""How a UPC call is resolved: the algorithm it runs, its synchronisation,
and, inside a node, the program of steps each member runs
(csrc/upc/upc.h), cached per arguments.

A call inside one node is a set of transfers (src owner, src address, dst
owner, dst address, bytes), the same on every member; an algorithm says who
performs each (pull: the dst owner, push: the src owner, trees: along a
binomial tree, chunk by chunk). A member's program is then: its IN
synchronisation, its copies, END, its OUT synchronisation, where MYSYNC
waits only for the members whose parts its copies touch (IN) or that touch
its parts (OUT)."""
import os

import numpy as np

from ..engine import _core
from ..errors import ArgumentError
from ..pgas.array import zeros as shared_zeros
from . import defaults as _defaults
from .flags import ALLSYNC, MYSYNC, NOSYNC, parse_flags

WAIT, COPY, POST, END, ARRIVE = _core.UPC_WAIT, _core.UPC_COPY, _core.UPC_POST, _core.UPC_END, _core.UPC_ARRIVE
ALL, ENTERED, STEP0, DONE = _core.UPC_ALL, _core.UPC_ENTERED, _core.UPC_STEP0, _core.UPC_DONE

#: The algorithms of each collective, by name (the default: defaults.py).
#: Across nodes the hier* ones run: "hier", every rank moves its own parts
#: with pgascol.Comm's collectives (node leaders over MPI, then the node);
#: the others are the node leaders' (across.py): hier-flat / hier-binomial,
#: a binomial tree among the node leaders over MPI, then flat or binomial
#: inside each node in shared memory (scatter and gather: flat);
#: hier-gather-bcast, gather_all as a gather to every leader (an allgather
#: among leaders) then the node's pull, no global synchronisation between;
#: hier-aggregate, exchange with one message per pair of nodes (the leader
#: packs its node's blocks for each other node). pull/push: flat (the dst's / the src's owner copies);
#: binomial-<pull|push>[-static|-dynamic]: a binomial tree, unfragmented,
#: in chunks of PGASCOL_UPC_CHUNK bytes, or in two halves (above
#: DYNAMIC_MIN bytes; scatter and gather: each edge carries the child's
#: subtree's blocks, relayed through the scratch array, subtree_program); numa: the NUMA regions as a level (the root, one
#: leader per other region pulling from it, the region pulling from its
#: leader; one region: the flat pull); ring-pull / ring-push: a token passed in rank order
#: from the root, each holder passing it on before it copies;
#: single: rank 0 copies every block (an ALLSYNC call is then a fan-in and
#: a fan-out; for small blocks); last: the member that arrives last copies
#: every block, both ALLSYNCs in one round (last_program; whatever the
#: flags, a call then synchronises as ALLSYNC, which UPC allows);
#: gather-bcast: gather into rank 0's block, then every rank pulls it,
#: with no global synchronisation in between. reduce: auto (by size and
#: team shape: reduction_default), [binomial-]<pull|push>[-static|-dynamic]
#: (the partials, one element per edge, read by the parent or written into
#: its area, flat or along a binomial tree, the runs folded whole or in
#: pieces: folds.py), hier (a fold in C, then pgascol.Comm's Reduce), gather
#: (numpy's folds and a Gatherv: FUNC, NONCOMM_FUNC). prefix_reduce:
#: allgather (every block's total to everyone), three-phase (the PGASCol thesis's,
#: where each rank holds one run in rank order on nodes of consecutive
#: ranks; a C program on one node), hier (each rank's scan in C, then
#: pgascol.Comm's Exscan of the runs' totals; where each rank holds one
#: run, in rank order, with an operator MPI has, else allgather), auto
#: (across nodes hier, else three-phase, where they apply; else allgather).
_TREES = tuple("binomial-%s%s" % (d, f) for d in ("pull", "push") for f in ("", "-static", "-dynamic"))
ALGORITHMS = {
    "broadcast": ("pull", "push", "last") + _TREES + ("numa", "hier", "hier-flat", "hier-binomial"),
    "scatter": ("pull", "push", "last", "ring-pull", "hier", "hier-flat") + _TREES,
    "gather": ("push", "pull", "last", "ring-push", "hier", "hier-flat") + _TREES,
    "gather_all": ("pull", "push", "single", "last", "gather-bcast", "hier", "hier-gather-bcast"),
    "exchange": ("pull", "push", "single", "last", "hier", "hier-aggregate"),
    "permute": ("push", "pull", "hier"),
    "reduce": ("auto",) + tuple(t + d + f for t in ("", "binomial-") for d in ("pull", "push")
                                for f in ("", "-static", "-dynamic")) + ("hier", "gather"),
    "prefix_reduce": ("auto", "allgather", "three-phase", "hier"),
}
#: The reductions' algorithms that fold in numpy, those FUNC and
#: NONCOMM_FUNC may run, and those that run across nodes.
REDUCTION_PYTHON = {"reduce": "gather", "prefix_reduce": "allgather"}
REDUCTION_ANY_OP = {"reduce": ("auto", "gather"), "prefix_reduce": ("auto", "allgather", "three-phase", "hier")}
REDUCTION_ACROSS = {"reduce": ("hier", "gather"), "prefix_reduce": ("allgather", "three-phase", "hier")}
#: all_reduce's default on one node (reduction_default): a flat pull below
#: this many ranks, a binomial pull from there on; unfragmented at every
#: size (docs/PERFORMANCE.md, "Decisions": "UPC reduce is a flat pull").
REDUCE_TREE_MIN_RANKS = 16


def reduction_default(coll, nranks, nnodes, nbytes, op):
    """What 'auto' runs for a reduction with a built-in operator (nbytes:
    the longest run of a rank, in bytes; no size changes the choice on the
    machine measured). prefix_reduce: 'auto' (across nodes hier, else
    three-phase, where the layout and operator allow; else allgather: reduce.py)."""
    if coll == "prefix_reduce":
        return "auto"
    if nnodes > 1:
        return "gather" if op in ("LOGAND", "LOGOR") else "hier"
    return "binomial-pull" if nranks >= REDUCE_TREE_MIN_RANKS else "pull"
#: Static fragmentation of the trees: chunks of this many bytes (PGASCOL_UPC_CHUNK).
CHUNK_DEFAULT = 32 << 10
#: Dynamic fragmentation splits blocks larger than this into two halves.
DYNAMIC_MIN = 8192
_MAX_PLANS = 256


def chunk_bytes():
    text = os.environ.get("PGASCOL_UPC_CHUNK", str(CHUNK_DEFAULT))
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise ArgumentError("PGASCOL_UPC_CHUNK must be a number of bytes > 0, not %r" % text)
    return value


def chunks(alg, nbytes):
    """The (offset, length) chunks of a tree algorithm's block."""
    if alg.endswith("-static"):
        size = chunk_bytes()
        return [(off, min(size, nbytes - off)) for off in range(0, nbytes, size)]
    if alg.endswith("-dynamic") and nbytes > DYNAMIC_MIN:
        return [(0, nbytes // 2), (nbytes // 2, nbytes - nbytes // 2)]
    return [(0, nbytes)]


def default(coll, nbytes, nnodes, size=0, allsync=True, env=os.environ):
    """The algorithm a call of `coll` without algorithm= runs: PGASCOL_UPC_<COLL>,
    else the measured rules (defaults.py) for the size and team shape, else
    the first name. The rules are measured ALLSYNC: on one node a call with
    MYSYNC or NOSYNC on either side runs the first name, where each member
    copies its own blocks (one copier would make every member wait for the
    slowest, which only ALLSYNC asks for). `allsync`: the call synchronises
    every member with every other (sync_everyone)."""
    names = ALGORITHMS[coll]
    chosen = env.get("PGASCOL_UPC_" + coll.upper())
    if chosen:
        return chosen
    usable = names if nnodes == 1 else [a for a in names if a.startswith("hier")] or names
    if nnodes == 1 and not allsync:
        return usable[0]
    shape, sized = _defaults.shape_of(nnodes, size)
    return _defaults.choose(coll, nbytes, shape, sized, usable) or usable[0]


def defaults(nnodes=1, size=0, env=os.environ):
    """{collective: what a call without algorithm= runs, by size} on a team
    of `size` ranks (0: any size) over `nnodes` nodes (pgascol info)."""
    out = {}
    for coll in ALGORITHMS:
        if env.get("PGASCOL_UPC_" + coll.upper()):
            out[coll] = env["PGASCOL_UPC_" + coll.upper()] + " (PGASCOL_UPC_%s)" % coll.upper()
            continue
        rules = _defaults.rules(coll, *_defaults.shape_of(nnodes, size))
        out[coll] = ", ".join(alg if lim is None and len(rules) == 1 else
                              "%s %s" % (alg, "above" if lim is None else "<= %d B" % lim)
                              for lim, alg in rules) if rules else default(coll, 1, nnodes, size, True, env)
    return out


def algorithm(coll, requested, ctx, nbytes=1, allsync=True):
    """The algorithm a call of `coll` runs: `requested`, else PGASCOL_UPC_<COLL>, else the default."""
    names = ALGORITHMS[coll]
    source = "algorithm="
    if requested is None:
        requested = os.environ.get("PGASCOL_UPC_" + coll.upper())
        source = "PGASCOL_UPC_" + coll.upper()
    if requested is None or requested == "":
        return default(coll, nbytes, ctx.nnodes, ctx.size, allsync)
    if requested not in names:
        raise ArgumentError("upc.all_%s: %s%r is not one of its algorithms (%s)"
                            % (coll, source, requested, ", ".join(names)))
    if ctx.nnodes > 1 and "hier" in names and not requested.startswith("hier"):
        raise ArgumentError("upc.all_%s: algorithm %r moves data inside one node; this communicator spans "
                            "%d nodes, where the hier* algorithms run" % (coll, requested, ctx.nnodes))
    return requested


def signature(*values):
    """The call's signature argument (csrc/team/team.h): 18 bits hashing
    what every member must agree on (ints only: their hash is the same in
    every process)."""
    return hash(values) & 0x3ffff


def context_of(x):
    """The PGAS context of an operand (a global array or (array, offset))."""
    array = x[0] if isinstance(x, tuple) and x else x
    ctx = getattr(array, "_ctx", None)
    if ctx is None:
        raise ArgumentError("UPC collectives take global arrays (pgascol.pgas) or (array, offset) "
                            "pairs, not %r" % type(array).__name__)
    return ctx


#: Resolved calls, by their arguments as given (arrays by identity): what
#: runs them (a callable), and their arrays; a plan goes when one of its
#: arrays is freed (Context.on_free).
RUNNERS = {}
_ARRAYS = {}
#: The last call of each collective: [its key, what runs it]. A call
#: repeated in a loop (the common case) compares its key with it instead of
#: hashing it; RUNNERS holds every other (kept in step by keep and _forget).
LAST = {coll: [None, None] for coll in ALGORITHMS}


def run(key, resolve, *args):
    """Run the call `key` (its collective first) through RUNNERS, resolving
    it first if new (resolve(*args) returns what runs it); it becomes its
    collective's LAST."""
    runner = RUNNERS.get(key) or resolve(*args)
    LAST[key[0]][:] = key, runner
    runner()


def runner_of(ctx, plan):
    """What runs a plan: its program in the C core, or its body."""
    if plan.prog is not None:
        return _core.UpcProgram(ctx.state.core, plan.coll, plan.arg, plan.prog, plan.nbytes)
    body = plan.body
    return lambda: body(ctx, plan)


def remember(ctx, key, plan):
    """Keep the plan of a call, and return what runs it."""
    return keep(ctx, key, runner_of(ctx, plan), plan.arrays)


def keep(ctx, key, value, arrays):
    """RUNNERS[key] = value until one of `arrays` is freed."""
    if _forget not in ctx.on_free:
        ctx.on_free.append(_forget)
    if len(RUNNERS) >= _MAX_PLANS:
        RUNNERS.clear()
        _ARRAYS.clear()
        for last in LAST.values():
            last[:] = None, None
    RUNNERS[key], _ARRAYS[key] = value, arrays
    return value


def _forget(array):
    for key in [k for k, arrays in _ARRAYS.items() if array in arrays]:
        del RUNNERS[key], _ARRAYS[key]
        if LAST[key[0]][0] == key:
            LAST[key[0]][:] = None, None


class Plan:
    """A resolved call: a program of steps (inside a node) or a body (across nodes)."""
    __slots__ = ("coll", "arrays", "prog", "arg", "nbytes", "body", "in_mode", "out_mode")


def sync_modes(flags, what):
    return parse_flags(flags, what)


#: The collectives in which every member reads or writes data of every
#: other: there MYSYNC synchronises every member with every other, as ALLSYNC.
EVERYONE_WITH_EVERYONE = ("gather_all", "exchange")


def sync_everyone(coll, in_mode, out_mode):
    """Whether a call synchronises every member with every other: ALLSYNC
    on both sides, or MYSYNC where every member has data with every other
    (then ALLSYNC's measured algorithms, the one-round 'last' for small
    blocks, are what MYSYNC should run too: it allows no less waiting)."""
    if coll in EVERYONE_WITH_EVERYONE:
        return NOSYNC not in (in_mode, out_mode)
    return in_mode == out_mode == ALLSYNC


def program(me, nranks, transfers, performer, in_mode, out_mode):
    """This member's steps for a flat algorithm: `transfers` are (src owner,
    src address, dst owner, dst address, bytes), performer(t) the member
    that copies t."""
    mine, touched, touching, performers = [], set(), set(), set()
    for t in transfers:
        who = performer(t)
        performers.add(who)
        if who == me:
            mine.append((COPY, t[3], t[1], t[4]))
            touched.update((t[0], t[2]))
        elif me in (t[0], t[2]):
            touching.add(who)
    touched.discard(me)
    touching.discard(me)
    return _wrap(mine, touched, touching, in_mode, out_mode, me, nranks, performers)


def _wrap(work, touched, touching, in_mode, out_mode, me=None, nranks=None, performers=None,
          scratch=(frozenset(), False)):
    """A member's program: IN synchronisation, `work`, END, OUT
    synchronisation. `performers`: the members that copy in this call (on
    every member the same set; None: every member, me and nranks then
    unused). `scratch`: (the members whose ENTERED this member waits for
    before its copies, whether it posts its own ENTERED) whatever the IN
    mode, for the scratch areas of the trees (subtree_program), which no
    flag of the caller covers. ALLSYNC orders the copies, not the members:
    only a performer waits for every member's ENTERED before its first copy
    (IN), and a member waits only for the performers' DONE (OUT), since
    nobody else reads or writes. One performer (a root that pushes or pulls
    every block) makes an ALLSYNC call a fan-in then a fan-out, each member
    scheduled once per phase, instead of two all-to-all waits."""
    steps = []
    everyone = performers is None
    others = set() if everyone else set(performers) - {me}
    if in_mode == ALLSYNC:
        if everyone or nranks > 1:      # also when nobody waits for it: a peer that
            # does, by mistake (other arguments, so another program), finds the mismatch at once
            steps.append((POST, ENTERED, 0, 0))
        if everyone or (me in performers and nranks > 1):
            steps.append((WAIT, ALL, ENTERED, 0))
    else:
        mine = in_mode == MYSYNC
        if scratch[1] or (mine and touching):
            steps.append((POST, ENTERED, 0, 0))
        steps += [(WAIT, p, ENTERED, 0) for p in sorted(set(scratch[0]) | (touched if mine else set()))]
    steps += work
    steps.append((END, 0, 0, 0))
    if out_mode == ALLSYNC:
        steps += [(WAIT, ALL, DONE, 0)] if everyone or len(others) == nranks - 1 > 0 else \
            [(WAIT, p, DONE, 0) for p in sorted(others)]
    elif out_mode == MYSYNC:
        steps += [(WAIT, p, DONE, 0) for p in sorted(touching)]
    assert in_mode in (ALLSYNC, MYSYNC, NOSYNC) and out_mode in (ALLSYNC, MYSYNC, NOSYNC)
    return np.array(steps, dtype=np.uint64).reshape(-1, 4)


def last_program(transfers):
    """Every member's program for 'last' (csrc/upc/upc.h: the last
    arrival): ARRIVE, every transfer's copy (made by the member that
    arrives last, skipped by the others), END, WAIT ALL DONE."""
    work = [(COPY, t[3], t[1], t[4]) for t in transfers]
    steps = [(ARRIVE, len(work), 0, 0)] + work + [(END, 0, 0, 0), (WAIT, ALL, DONE, 0)]
    return np.array(steps, dtype=np.uint64).reshape(-1, 4)


def barrier_program(me, nranks):
    """Every member waits for every member's ENTERED (permute's entry, before perm is read)."""
    return _wrap([], set(), set(), ALLSYNC, NOSYNC, me, nranks, set(range(nranks)))


def binomial(me, nranks, root):
    """(parent or None, children) of me in the binomial tree rooted at root."""
    v = (me - root) % nranks
    parent = None if v == 0 else ((v & ~(1 << (v.bit_length() - 1))) + root) % nranks
    children, k = [], 1 << v.bit_length() if v else 1
    while v + k < nranks:
        children.append((v + k + root) % nranks)
        k <<= 1
    return parent, children


def wrap(work, in_mode, out_mode, me=None, root=None):
    """A reduction's steps with its synchronisation: its members read and
    write only their own parts (the partials travel in their inline slots),
    so MYSYNC adds nothing and ALLSYNC waits for everyone. With a root,
    OUT_ALLSYNC is a fan-in and a fan-out through it instead of everyone
    waiting for everyone: the root waits for every DONE before it ends,
    the others wait for its DONE."""
    if out_mode != ALLSYNC or root is None:
        return _wrap(work, set(), set(), in_mode, out_mode)
    steps = _wrap(work, set(), set(), in_mode, NOSYNC)
    if me == root:
        return np.insert(steps, len(steps) - 1, np.array([WAIT, ALL, DONE, 0], np.uint64), axis=0)
    return np.append(steps, np.array([[WAIT, root, DONE, 0]], np.uint64), axis=0)


def binomial_tree(nranks, root):
    """{member: (parent or None, [children])} of the binomial tree rooted at root."""
    return {r: binomial(r, nranks, root) for r in range(nranks)}


def region_tree(nranks, root, region_of):
    """{member: (parent, [children])}: the root, then one leader per other
    NUMA region (its first member) under the root, then each region's other
    members under their leader (the root leads its own region)."""
    regions = {}
    for r in range(nranks):
        regions.setdefault(region_of[r], []).append(r)
    leader = {reg: (root if region_of[root] == reg else members[0]) for reg, members in regions.items()}
    out = {r: (None, []) for r in range(nranks)}
    for r in range(nranks):
        up = leader[region_of[r]] if r != leader[region_of[r]] else (None if r == root else root)
        out[r] = (up, out[r][1])
        if up is not None:
            out[up][1].append(r)
    return out


def tree_program(me, nranks, root, src_addr, dst_addr, pieces, push, in_mode, out_mode, tree=None):
    """A broadcast down a tree rooted at `root` (binomial unless `tree`,
    {member: (parent, children)}, says otherwise), chunk by chunk
    (`pieces`: (offset, length) of each): pull (each member copies chunk c
    from its parent's dst once the parent posted it) or push (each member
    copies it into its children's dst, then posts). dst_addr(r): r's dst
    block. A member's dst block is its children's source: no buffers."""
    tree = tree or binomial_tree(nranks, root)
    parent, children = tree[me]
    work = []
    for c, (off, n) in enumerate(pieces):
        mine = dst_addr(me) + off
        if parent is None:
            if mine != src_addr + off:      # rooted at a block already in place (across.py)
                work.append((COPY, mine, src_addr + off, n))
        elif not push:
            work += [(WAIT, parent, STEP0 + c, 0), (COPY, mine, dst_addr(parent) + off, n)]
        else:
            work.append((WAIT, parent, STEP0 + c, 0))
        if push:
            work += [(COPY, dst_addr(ch) + off, mine, n) for ch in children]
        work.append((POST, STEP0 + c, 0, 0))
    if push:
        touched, touching = set(children), {parent} - {None}
    else:
        touched, touching = {parent} - {None}, set(children)
    # push: the root and whoever has children copy; pull: every member copies
    performers = {r for r, (up, down) in tree.items() if not push or up is None or down}
    return _wrap(work, touched, touching, in_mode, out_mode, me, nranks, performers)


def ring_program(me, nranks, root, transfers, in_mode, out_mode):
    """A token passed in rank order from the root (ring scatter and gather):
    `transfers[r]` is rank r's copy, made once it holds the token, which it
    passes on first (inside a node the copies then overlap, staggered)."""
    src_rank, src, dst_rank, dst, n = transfers[me]
    work = [(POST, STEP0, 0, 0)] if me == root else [(WAIT, (me - 1) % nranks, STEP0, 0), (POST, STEP0, 0, 0)]
    work.append((COPY, dst, src, n))
    touched = {src_rank, dst_rank} - {me}
    touching = {t[0] if t[0] != me else t[2] for t in transfers if me in (t[0], t[2])} - {me}
    return _wrap(work, touched, touching, in_mode, out_mode, me, nranks, set(range(nranks)))


def gather_bcast_program(me, nranks, src_addr, dst_addr, nbytes, in_mode, out_mode):
    """gather_all as a push gather into rank 0's dst block, then a pull of
    that block by every rank, with no synchronisation between the phases
    but rank 0's post that its block is complete."""
    work = [(COPY, dst_addr(0) + me * nbytes, src_addr(me), nbytes), (POST, STEP0, 0, 0)]
    if me == 0:
        work += [(WAIT, ALL, STEP0, 0), (POST, STEP0 + 1, 0, 0)]
        touched, touching = set(range(1, nranks)), set(range(1, nranks))
    else:
        work += [(WAIT, 0, STEP0 + 1, 0), (COPY, dst_addr(me), dst_addr(0), nbytes * nranks)]
        touched, touching = {0}, {0}
    return _wrap(work, touched, touching, in_mode, out_mode, me, nranks, set(range(nranks)))


def subtree(tree, r):
    """r, then the members of its subtree in the binomial tree, depth first."""
    out = [r]
    for child in tree[r][1]:
        out += subtree(tree, child)
    return out


def subtree_program(me, nranks, root, nbytes, root_addr, own_addr, scratch_addr, pieces, push, scatter,
                    in_mode, out_mode):
    """A binomial scatter (the root's blocks down the tree) or gather (up
    it), chunk by chunk (`pieces`: (offset, length) inside each block of
    nbytes). The edge from a member to its child carries the blocks of the
    child's whole subtree; a member other than the root keeps the blocks of
    its subtree but its own in its scratch area (scratch_addr(r), in the
    order of subtree()), its own block in its part of the array
    (own_addr(r): scatter's dst, gather's src), the root all of them in
    its one block (root_addr(b): block b). The edge's copies are the
    child's (scatter pull, gather push) or the parent's. Per chunk a member
    waits until the members whose copies complete the data it copies from
    (or, if it copies none, its own) posted the chunk, copies, posts it.
    Returns the program and the bytes this member copies."""
    tree = binomial_tree(nranks, root)
    below = {r: subtree(tree, r) for r in range(nranks)}

    def place(r, b):
        """(address of block b at member r, whose scratch it is in or None)."""
        if r == root:
            return root_addr(b), None
        if b == r:
            return own_addr(r), None
        return scratch_addr(r) + (below[r].index(b) - 1) * nbytes, r

    edges = []          # (performer, sender, receiver, [blocks]) of each parent-child edge
    for child in range(nranks):
        parent = tree[child][0]
        if parent is not None:
            sender, receiver = (parent, child) if scatter else (child, parent)
            edges.append((child if push != scatter else parent, sender, receiver, below[child]))
    into = {r: [e[0] for e in edges if e[2] == r] for r in range(nranks)}   # who completes r's data
    # (performer, src, the scratch it is in, dst, the scratch it is in): the root's own block, the edges'
    copies = [(root,) + ((place(root, root) + (own_addr(root), None)) if scatter else
                         ((own_addr(root), None) + place(root, root)))]
    for who, sender, receiver, blocks in edges:
        copies += [(who,) + place(sender, b) + place(receiver, b) for b in blocks]
    readers = {}        # scratch owner: the members that copy out of it
    for who, src, src_in, dst, dst_in in copies:
        if src_in is not None:
            readers.setdefault(src_in, set()).add(who)
    entry = {who: set() for who in range(nranks)}
    for who, src, src_in, dst, dst_in in copies:
        if dst_in is not None:
            entry[who] |= readers.get(dst_in, set()) - {who}
    work, done = [], 0
    mine = [e for e in edges if e[0] == me]
    waits = set(into[me]).union(*(into[e[1]] for e in mine)) - {me}
    for c, (off, n) in enumerate(pieces):
        work += [(WAIT, p, STEP0 + c, 0) for p in sorted(waits)]
        for who, src, _, dst, _ in copies:
            if who == me and src != dst:
                work.append((COPY, dst + off, src + off, n))
                done += n
        work.append((POST, STEP0 + c, 0, 0))
    touched, touching = set(), set()
    for e in edges:     # the parts of the array each edge reads or writes: the root's, the child's own
        for b in e[3]:
            parts = {r for r in (e[1], e[2]) if r == root or r == b}
            if e[0] == me:
                touched |= parts
            if me in parts:
                touching.add(e[0])
    performers = {who for who, *_ in copies}
    posts = any(me in waited for waited in entry.values())
    return _wrap(work, touched - {me}, touching - {me}, in_mode, out_mode, me, nranks, performers,
                 (entry[me], posts)), done


def scratch(ctx, nbytes):
    """(the context's scratch array, scratch_addr(r): where member r's part
    of it starts), grown to nbytes per member (collective: every member
    resolves the same call). It lives with the communicator (freed by
    free_all with it), freed early only when a larger one replaces it,
    which drops the plans that use it (Context.on_free)."""
    area = ctx.scratch
    if area is None or area.block < nbytes:
        grown = max(nbytes, 2 * area.block if area is not None else 0)
        if area is not None:
            area.free()
        area = ctx.scratch = shared_zeros(ctx.comm, grown * ctx.size, np.uint8, block=grown)
    return area, lambda r: area.node_view(r).ctypes.data
