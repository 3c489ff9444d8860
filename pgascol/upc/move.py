"""The six data-movement collectives of UPC: all_broadcast, all_scatter,
all_gather, all_gather_all, all_exchange, all_permute.

Inside one node each call runs a program of copies between the parts of
the arrays (plan.py, csrc/upc/); across nodes, 'hier' has every member move
only its own parts, through pgascol.Comm's collectives (node leaders over
MPI, then the node in shared memory), so ALLSYNC is a barrier on each side
and MYSYNC needs nothing more than the collective itself; the other hier-*
algorithms are the node leaders' (across.py)."""
import numpy as np

from ..engine import _core
from ..errors import ArgumentError
from . import across
from . import plan as P
from .operand import Operand

_ID = _core.UPC_COLLECTIVES
_RUNNERS, _LAST = P.RUNNERS, P.LAST


def _refusing(ctx, coll):
    """Run on a refusal: peers already inside the call fail at once (pgc_coll_refuse)."""
    if ctx.nnodes == 1 and ctx.size > 1:
        _core.upc_refuse(ctx.state.core, _ID["upc_all_" + coll])


def _resolve(key, build, dst, src, nbytes, flags, algorithm, run=True):
    """What runs a call not seen before (or since an array of it was freed):
    its plan, built and checked, as P.remember keeps it (run=False: the plan itself)."""
    ctx = P.context_of(dst)
    try:
        plan = build(dst, src, nbytes, flags, algorithm, ctx)
    except ArgumentError:
        _refusing(ctx, key[0])
        raise
    return P.remember(ctx, key, plan) if run else P.keep(ctx, key, plan, plan.arrays)


def _nbytes(nbytes, what):
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
        raise ArgumentError("%s: nbytes must be an int > 0 (UPC's rule), not %r" % (what, nbytes))
    return int(nbytes)


def _common(coll, dst, src, nbytes, flags, algorithm, ctx):
    what = "upc.all_" + coll
    nbytes = _nbytes(nbytes, what)
    d, s = Operand(dst, what + " dst"), Operand(src, what + " src")
    if d.array._ctx is not ctx or s.array._ctx is not ctx:
        raise ArgumentError("%s: dst and src must be arrays of the same communicator" % what)
    in_mode, out_mode = P.sync_modes(flags, what)
    alg = P.algorithm(coll, algorithm, ctx, nbytes, P.sync_everyone(coll, in_mode, out_mode))
    p = P.Plan()
    p.coll, p.arrays, p.nbytes, p.in_mode, p.out_mode = _ID["upc_all_" + coll], (d.array, s.array), nbytes, in_mode, out_mode
    p.arg = P.signature(p.coll, d.array.size, d.offset, s.array.size, s.offset, nbytes, flags,
                        P.ALGORITHMS[coll].index(alg))
    p.prog = p.body = None
    return d, s, nbytes, alg, p


def _flat(ctx, p, alg, transfers):
    me = ctx.rank
    if alg == "last":
        p.prog, p.nbytes = P.last_program(transfers), sum(t[4] for t in transfers)
        return
    if alg == "pull":
        performer = lambda t: t[2]      # noqa: E731: the dst owner copies
    elif alg == "single":
        performer = lambda t: 0         # noqa: E731: rank 0 copies every block
    else:
        performer = lambda t: t[0]      # noqa: E731: the src owner copies
    p.prog = P.program(me, ctx.size, transfers, performer, p.in_mode, p.out_mode)
    p.nbytes = sum(t[4] for t in transfers if performer(t) == me)


def _hier(ctx, p, move):
    """Across nodes: every member moves its own parts with one of
    pgascol.Comm's collectives; ALLSYNC a barrier before / after."""
    def body(ctx, p):
        if p.in_mode == P.ALLSYNC:
            ctx.comm.Barrier()
        move(ctx.comm)
        if p.out_mode == P.ALLSYNC:
            ctx.comm.Barrier()
    p.body = body


# ---------------------------------------------------------------- broadcast

def all_broadcast(dst, src, nbytes, flags=0, algorithm=None):
    """Copy the block of nbytes at src (affinity to one rank, the root) to
    every rank's block of dst (a block of nbytes per rank from dst, which
    has affinity to rank 0 at phase 0)."""
    key = ("broadcast", dst, src, nbytes, flags, algorithm)
    last = _LAST["broadcast"]
    if key == last[0]:
        return last[1]()
    P.run(key, _resolve, key, _broadcast_plan, dst, src, nbytes, flags, algorithm)


def _broadcast_plan(dst, src, nbytes, flags, algorithm, ctx):
    d, s, nbytes, alg, p = _common("broadcast", dst, src, nbytes, flags, algorithm, ctx)
    s.check_one(nbytes)
    d.check_each(nbytes)
    root = s.owner
    if alg == "hier":
        def move(comm):
            buf = d.view(nbytes)
            if ctx.rank == root:
                buf[:] = s.view(nbytes)
            comm.Bcast(buf, root=root)
        _hier(ctx, p, move)
    elif alg.startswith("hier-"):
        across.broadcast(ctx, p, d, s, nbytes, root, alg)
    elif alg.startswith("binomial"):
        p.prog = P.tree_program(ctx.rank, ctx.size, root, s.address(root), d.address, P.chunks(alg, nbytes),
                                alg.startswith("binomial-push"), p.in_mode, p.out_mode)
    elif alg == "numa":
        p.prog = P.tree_program(ctx.rank, ctx.size, root, s.address(root), d.address, [(0, nbytes)], False,
                                p.in_mode, p.out_mode, P.region_tree(ctx.size, root, numa_regions(ctx)))
    else:
        _flat(ctx, p, alg, [(root, s.address(root), r, d.address(r), nbytes) for r in range(ctx.size)])
    return p


def numa_regions(ctx):
    """The NUMA region of each member of the node (its home CPU's: node/topology.py)."""
    team = ctx.state.team
    return [team.topology.cpu(cpu).numa for cpu in team.layout.home_cpus]


# ---------------------------------------------------------------- scatter / gather

def all_scatter(dst, src, nbytes, flags=0, algorithm=None):
    """Block r of the nbytes*P bytes at src (on one rank, the root) to rank
    r's block of dst (affinity to rank 0, phase 0)."""
    key = ("scatter", dst, src, nbytes, flags, algorithm)
    last = _LAST["scatter"]
    if key == last[0]:
        return last[1]()
    P.run(key, _resolve, key, _scatter_plan, dst, src, nbytes, flags, algorithm)


def _rooted(ctx, p, alg, root, transfers):
    """Scatter's or gather's transfers inside a node: flat, or along the token ring."""
    if alg.startswith("ring"):
        p.prog = P.ring_program(ctx.rank, ctx.size, root, transfers, p.in_mode, p.out_mode)
        p.nbytes = transfers[ctx.rank][4]
    else:
        _flat(ctx, p, alg, transfers)


def all_gather(dst, src, nbytes, flags=0, algorithm=None):
    """Rank r's block of src (affinity to rank 0, phase 0) to block r of the
    nbytes*P bytes at dst (on one rank, the root)."""
    key = ("gather", dst, src, nbytes, flags, algorithm)
    last = _LAST["gather"]
    if key == last[0]:
        return last[1]()
    P.run(key, _resolve, key, _gather_plan, dst, src, nbytes, flags, algorithm)


def _rooted_plan(dst, src, nbytes, flags, algorithm, ctx, scatter):
    """Scatter (the root's nbytes*P bytes to a block per rank) or gather (the reverse)."""
    d, s, nbytes, alg, p = _common("scatter" if scatter else "gather", dst, src, nbytes, flags, algorithm, ctx)
    one, each = (s, d) if scatter else (d, s)       # the root's bytes, a block per rank
    one.check_one(nbytes * ctx.size)
    each.check_each(nbytes)
    root, n = one.owner, ctx.size
    if alg == "hier":
        whole = one.view(nbytes * n) if ctx.rank == root else None
        _hier(ctx, p, (lambda comm: comm.Scatter(whole, d.view(nbytes), root=root)) if scatter else
              (lambda comm: comm.Gather(s.view(nbytes), whole, root=root)))
        return p
    if alg == "hier-flat":
        across.rooted(ctx, p, d, s, nbytes, root, scatter)
        return p
    base = one.address(root)
    if alg.startswith("binomial"):
        _subtree(ctx, p, alg, root, base, each, nbytes, scatter)
        return p
    blocks = [(root, base + r * nbytes, r, each.address(r), nbytes) for r in range(n)]
    if not scatter:
        blocks = [(r, at, q, there, k) for q, there, r, at, k in blocks]
    _rooted(ctx, p, alg, root, blocks)
    return p


def _subtree(ctx, p, alg, root, base, each, nbytes, scatter):
    """Scatter or gather along the binomial tree (plan.subtree_program),
    through the scratch area of the members that relay their subtrees."""
    tree = P.binomial_tree(ctx.size, root)
    relayed = max((len(P.subtree(tree, r)) - 1 for r in range(ctx.size) if r != root), default=0)
    area, at = P.scratch(ctx, relayed * nbytes) if relayed else (None, None)
    p.prog, p.nbytes = P.subtree_program(ctx.rank, ctx.size, root, nbytes, lambda b: base + b * nbytes,
                                         each.address, at, P.chunks(alg, nbytes), "push" in alg, scatter,
                                         p.in_mode, p.out_mode)
    if area is not None:
        p.arrays += (area,)


def _scatter_plan(dst, src, nbytes, flags, algorithm, ctx):
    return _rooted_plan(dst, src, nbytes, flags, algorithm, ctx, True)


def _gather_plan(dst, src, nbytes, flags, algorithm, ctx):
    return _rooted_plan(dst, src, nbytes, flags, algorithm, ctx, False)


# ---------------------------------------------------------------- gather_all / exchange

def all_gather_all(dst, src, nbytes, flags=0, algorithm=None):
    """Every rank's block of src (nbytes each) to every rank's block of dst
    (nbytes*P each, block j from rank j)."""
    key = ("gather_all", dst, src, nbytes, flags, algorithm)
    last = _LAST["gather_all"]
    if key == last[0]:
        return last[1]()
    P.run(key, _resolve, key, _gather_all_plan, dst, src, nbytes, flags, algorithm)


def _gather_all_plan(dst, src, nbytes, flags, algorithm, ctx):
    d, s, nbytes, alg, p = _common("gather_all", dst, src, nbytes, flags, algorithm, ctx)
    n = ctx.size
    s.check_each(nbytes)
    d.check_each(nbytes * n)
    if alg == "hier":
        _hier(ctx, p, lambda comm: comm.Allgather(s.view(nbytes), d.view(nbytes * n)))
    elif alg == "hier-gather-bcast":
        across.gather_all(ctx, p, d, s, nbytes)
    elif alg == "gather-bcast":
        p.prog = P.gather_bcast_program(ctx.rank, n, s.address, d.address, nbytes, p.in_mode, p.out_mode)
        p.nbytes = nbytes * n
    else:
        srcs = [s.address(j) for j in range(n)]
        _flat(ctx, p, alg, [(j, srcs[j], i, d.address(i) + j * nbytes, nbytes) for i in range(n) for j in range(n)])
    return p


def all_exchange(dst, src, nbytes, flags=0, algorithm=None):
    """Slice j (nbytes) of rank i's block of src to slice i of rank j's
    block of dst (blocks of nbytes*P per rank)."""
    key = ("exchange", dst, src, nbytes, flags, algorithm)
    last = _LAST["exchange"]
    if key == last[0]:
        return last[1]()
    P.run(key, _resolve, key, _exchange_plan, dst, src, nbytes, flags, algorithm)


def _exchange_plan(dst, src, nbytes, flags, algorithm, ctx):
    d, s, nbytes, alg, p = _common("exchange", dst, src, nbytes, flags, algorithm, ctx)
    n = ctx.size
    s.check_each(nbytes * n)
    d.check_each(nbytes * n)
    if alg == "hier":
        _hier(ctx, p, lambda comm: comm.Alltoall(s.view(nbytes * n), d.view(nbytes * n)))
    elif alg == "hier-aggregate":
        across.exchange(ctx, p, d, s, nbytes)
    else:
        srcs, dsts = [s.address(i) for i in range(n)], [d.address(j) for j in range(n)]
        _flat(ctx, p, alg, [(i, srcs[i] + j * nbytes, j, dsts[j] + i * nbytes, nbytes)
                            for i in range(n) for j in range(n)])
    return p


# ---------------------------------------------------------------- permute

def all_permute(dst, src, perm, nbytes, flags=0, algorithm=None):
    """Rank i's block of src to rank perm[i]'s block of dst (blocks of
    nbytes, affinity to rank 0, phase 0). perm: a global array of P ints
    (or (array, offset)), read after the IN synchronisation; one that is not
    a permutation of 0..P-1 is refused on every rank, nothing written."""
    key = ("permute", dst, src, perm, nbytes, flags, algorithm)
    last = _LAST["permute"]
    if key != last[0]:
        build = lambda d, s, n, f, a, ctx: _permute_plan(d, s, perm, n, f, a, ctx)    # noqa: E731
        last[:] = key, _RUNNERS.get(key) or _resolve(key, build, dst, src, nbytes, flags, algorithm, run=False)
    last[1]()


class _Permute:
    """A permute resolved but for perm's values: calling it synchronises
    the entry (unless IN_NOSYNC), reads perm (straight from the parts on one
    node), and runs the program of that order, built once per order seen
    (at most _ORDERS kept) after checking it is a permutation."""
    __slots__ = ("ctx", "arrays", "enter", "read", "body", "runners")

    def __call__(self):
        if self.enter is not None:
            self.enter()        # perm and src may be written up to every member's entry: read perm after it
        order = self.read()
        (self.runners.get(order) or self.add(order))()

    def add(self, order):
        n = self.ctx.size
        if sorted(order) != list(range(n)):
            raise ArgumentError("upc.all_permute: perm %s is not a permutation of 0..%d (nothing was moved)"
                                % (list(order), n - 1))
        if len(self.runners) >= _ORDERS:
            self.runners.clear()
        runner = self.runners[order] = P.runner_of(self.ctx, self.body(order))
        return runner


_ORDERS = 16


def _permute_plan(dst, src, perm, nbytes, flags, algorithm, ctx):
    what = "upc.all_permute"
    pa = Operand(perm, what + " perm")
    if pa.array._ctx is not ctx:
        raise ArgumentError("%s: perm must be an array of dst's communicator" % what)
    if pa.array.dtype.kind not in "iu":
        raise ArgumentError("%s: perm must be an array of integers, not %s" % (what, pa.array.dtype))
    if pa.offset + ctx.size > pa.array.size:
        raise ArgumentError("%s: perm needs %d elements from %d, the array has %d"
                            % (what, ctx.size, pa.offset, pa.array.size))
    p = _permute_base(dst, src, nbytes, flags, algorithm, ctx)
    out = _Permute()
    out.ctx, out.arrays, out.body, out.runners = ctx, p.arrays + (pa.array,), p.body, {}
    out.enter = None
    if p.in_mode != P.NOSYNC:
        out.enter = p.prog if ctx.nnodes == 1 else ctx.comm.Barrier
    lo, hi = pa.offset, pa.offset + ctx.size
    if ctx.nnodes == 1:         # straight from the parts
        cells = [(pa.array.node_view(r), i) for r, i in map(pa.array.layout.locate, range(lo, hi))]
        out.read = lambda: tuple([part.item(i) for part, i in cells])
    else:
        out.read = lambda: tuple(pa.array[lo:hi].tolist())
    return out


def _permute_base(dst, src, nbytes, flags, algorithm, ctx):
    d, s, nbytes, alg, p = _common("permute", dst, src, nbytes, flags, algorithm, ctx)
    s.check_each(nbytes)
    d.check_each(nbytes)
    in_mode = P.NOSYNC          # the entry is the separate synchronisation before perm is read
    if ctx.nnodes == 1:         # that entry: POST ENTERED, WAIT ALL ENTERED, END
        p.prog = _core.UpcProgram(ctx.state.core, p.coll, p.arg, P.barrier_program(ctx.rank, ctx.size), 0)

    def with_perm(order):
        q = P.Plan()
        q.coll, q.arrays, q.in_mode, q.out_mode, q.prog, q.body = p.coll, p.arrays, in_mode, p.out_mode, None, None
        q.arg, q.nbytes = P.signature(p.arg, *order), nbytes
        n = ctx.size
        if alg == "hier":
            me = ctx.rank
            inverse = order.index(me)

            def move(comm):
                sc, rc = [0] * n, [0] * n
                sc[order[me]], rc[inverse] = nbytes, nbytes
                comm.Alltoallv([s.view(nbytes), (sc, [0] * n)], [d.view(nbytes), (rc, [0] * n)])
            _hier(ctx, q, move)
        else:
            _flat(ctx, q, alg, [(i, s.address(i), order[i], d.address(order[i]), nbytes) for i in range(n)])
        return q
    p.body = with_perm
    return p
