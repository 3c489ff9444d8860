"""The node leaders' algorithms of the data-movement collectives across
nodes (the PGASCol thesis's hierarchical variants; plan.ALGORITHMS names them).

Each node's first rank (local rank 0) is its leader. A call is:

1. IN: ALLSYNC, pgascol.Comm's Barrier; MYSYNC, the node's fan-in (every
   member posts ENTERED, the leader waits for its node's), since the leader
   reads and writes its members' parts; NOSYNC, nothing.
2. The leader's leg: numpy copies between its node's parts (every part of
   the node is mapped, node_view) and its own buffers, and MPI messages
   among the leaders (the team's leader communicator), every wait bounded
   (Context.wait_request): a binomial tree rooted at the root's node
   (broadcast, scatter, gather: a node's buffer holds its subtree's blocks,
   its own node's first, then each child's subtree, so that a subtree is
   one contiguous message), an allgather among leaders (gather_all), one
   message per pair of nodes (exchange).
3. The node's program (csrc/upc: posts, waits and copies on the node
   team): the leader posts that its part is ready, and the members copy
   from it (flat, or down a binomial tree rooted at the leader) or the
   leader pushes into their parts; OUT_MYSYNC waits, as inside a node, for
   the members whose parts one touched, the leader included.
4. OUT: ALLSYNC, pgascol.Comm's Barrier."""
import numpy as np

from ..engine import _core
from . import plan as P

TAG = 0x7570        # "up": messages among leaders


class Nodes:
    """Where the ranks are: every node's members (global ranks, local order),
    this rank's node, and a binomial tree of the nodes rooted at one."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.count = ctx.nnodes
        self.members = [[] for _ in range(self.count)]
        for g in sorted(range(ctx.size), key=lambda g: ctx.local_of[g]):
            self.members[ctx.node_of[g]].append(g)
        self.node, self.me, self.size = ctx.node_of[ctx.rank], ctx.local_rank, ctx.local_size
        self.leaders = ctx.state.team.leader_comm     # None off the leaders

    def tree(self, root_node):
        """(parent, [(child, its subtree's ranks)], my subtree's ranks in
        buffer order): nodes as leader-communicator ranks."""
        n = self.count

        def real(v):
            return (v + root_node) % n

        def layout(v):
            out = list(self.members[real(v)])
            for c in P.binomial(v, n, 0)[1]:
                out += layout(c)
            return out
        v = (self.node - root_node) % n
        parent, children = P.binomial(v, n, 0)
        return (None if parent is None else real(parent), [(real(c), layout(c)) for c in children], layout(v))


def _program(ctx, p, phase, prog, nbytes=0):
    return _core.UpcProgram(ctx.state.core, p.coll, P.signature(p.arg, phase), prog, nbytes)


def _out(p, nodes, members):
    """A node program's OUT side: (its mode, the members this one waits for
    under OUT_MYSYNC). `members`: the local ranks whose parts the leader
    touched or that read the leader's; the leader waits for them, they for
    it. ALLSYNC is pgascol.Comm's Barrier after the program (body)."""
    out = p.out_mode if p.out_mode == P.MYSYNC else P.NOSYNC
    if nodes.me == 0:
        return out, set(members) - {0}
    return out, {0} if nodes.me in members else set()


def body(ctx, p, leg, final, touches_members):
    """The plan's body: IN, the leader's leg (leg(), leaders only), the
    node's program (final), OUT. touches_members: the leader reads or writes
    members' parts in its leg (IN_MYSYNC then needs the node's fan-in)."""
    nodes = Nodes(ctx)
    fan_in = None
    if p.in_mode == P.MYSYNC and touches_members and nodes.size > 1:
        mates = set(range(1, nodes.size))
        fan_in = _program(ctx, p, 1, P._wrap([], mates if nodes.me == 0 else set(),
                                            set() if nodes.me == 0 else {0}, P.MYSYNC, P.NOSYNC,
                                            nodes.me, nodes.size, set()))
    comm = ctx.comm

    def run(ctx, p):
        if p.in_mode == P.ALLSYNC:
            comm.Barrier()
        elif fan_in is not None:
            fan_in()
        if nodes.me == 0:
            leg()
        final()
        if p.out_mode == P.ALLSYNC:
            comm.Barrier()
    p.body = run
    return nodes


def _wait_all(ctx, reqs, what):
    for req in reqs:
        ctx.wait_request(req, what)


def _as_rows(x, nbytes, rank, count):
    """count blocks of nbytes from operand x's block in `rank`'s part, as a (count, nbytes) uint8 view."""
    part = x.array.node_view(rank).view(np.uint8)
    return part[x.local_byte:x.local_byte + count * nbytes].reshape(count, nbytes)


# ---------------------------------------------------------------- broadcast

def broadcast(ctx, p, d, s, nbytes, root, alg):
    """Down the leaders' tree into each leader's dst block, then the node
    pulls it from there (flat, or down a binomial tree rooted at the leader)."""
    nodes = Nodes(ctx)
    parent, children, _ = nodes.tree(ctx.node_of[root])
    mine = d.view(nbytes)
    what = "upc.all_broadcast (%s)" % alg

    def leg():
        if ctx.node_of[root] == nodes.node:
            mine[:] = _as_rows(s, nbytes, root, 1)[0]
        else:
            ctx.wait_request(nodes.leaders.Irecv(mine, parent, TAG), what)
        _wait_all(ctx, [nodes.leaders.Isend(mine, c, TAG) for c, _ in children], what)
    local = nodes.members[nodes.node]
    out = _out(p, nodes, ())[0]
    if alg == "hier-binomial":
        prog = P.tree_program(nodes.me, nodes.size, 0, d.address(local[0]), lambda m: d.address(local[m]),
                              [(0, nbytes)], False, P.NOSYNC, out)
    else:
        prog = _pull_from_leader(p, nodes, d, local, nbytes)
    final = _program(ctx, p, 2, prog, nbytes)
    # the root's block is read by its node's leader: it waits for the root
    # (IN_MYSYNC), and the root for it (OUT_MYSYNC; flat: every member does)
    root_local = {ctx.local_of[root]} if ctx.node_of[root] == nodes.node and ctx.local_of[root] else set()
    if root_local and p.out_mode == P.MYSYNC and alg == "hier-binomial":
        final = _then(final, _program(ctx, p, 3, _leader_done(nodes, root_local)))
    body(ctx, p, leg, final, bool(root_local))


def _pull_from_leader(p, nodes, d, local, nbytes):
    """The node's program after the leader's leg: the leader posts that its
    dst block is ready, each member copies it into its own (single copy)."""
    out, touching = _out(p, nodes, range(1, nodes.size))
    work = [(P.POST, P.STEP0, 0, 0)] if nodes.me == 0 else \
        [(P.WAIT, 0, P.STEP0, 0), (P.COPY, d.address(local[nodes.me]), d.address(local[0]), nbytes)]
    return P._wrap(work, set(), touching, P.NOSYNC, out, nodes.me, nodes.size, set(range(1, nodes.size)))


def _leader_done(nodes, members):
    """The leader posts that it is done with `members`' parts; they wait for it."""
    if nodes.me == 0:
        return P._wrap([], set(), set(), P.NOSYNC, P.NOSYNC, 0, nodes.size, set())
    if nodes.me in members:
        return np.array([(P.WAIT, 0, P.DONE, 0), (P.END, 0, 0, 0)], dtype=np.uint64)
    return P._wrap([], set(), set(), P.NOSYNC, P.NOSYNC, nodes.me, nodes.size, set())


def _then(first, second):
    def both():
        first()
        second()
    return both


# ---------------------------------------------------------------- scatter / gather

def rooted(ctx, p, d, s, nbytes, root, scatter):
    """Scatter: the root's node leader packs the root's blocks in tree order,
    each leader receives its subtree's from its parent and sends each
    child's on, then pushes its node's into the members' dst blocks.
    Gather: the reverse (each leader collects its node's src blocks and its
    children's subtrees, sends them up; the root's leader unpacks them into
    the root's dst)."""
    nodes = Nodes(ctx)
    root_node = ctx.node_of[root]
    parent, children, order = nodes.tree(root_node)
    buf = np.empty((len(order), nbytes), np.uint8)
    local = nodes.members[nodes.node]
    k = len(local)
    at, segments = k, []
    for c, ranks in children:
        segments.append((c, buf[at:at + len(ranks)]))
        at += len(ranks)
    what = "upc.all_%s (hier-flat)" % ("scatter" if scatter else "gather")
    one = d if not scatter else s           # the root's nbytes*P bytes

    def leg():
        if scatter:
            if nodes.node == root_node:
                np.take(_as_rows(one, nbytes, root, ctx.size), order, axis=0, out=buf)
            else:
                ctx.wait_request(nodes.leaders.Irecv(buf, parent, TAG), what)
            _wait_all(ctx, [nodes.leaders.Isend(seg, c, TAG) for c, seg in segments], what)
        else:
            for i, g in enumerate(local):
                buf[i] = _as_rows(s, nbytes, g, 1)[0]
            _wait_all(ctx, [nodes.leaders.Irecv(seg, c, TAG) for c, seg in segments], what)
            if nodes.node == root_node:
                _as_rows(one, nbytes, root, ctx.size)[order] = buf
            else:
                ctx.wait_request(nodes.leaders.Isend(buf, parent, TAG), what)
    touched_members = set(range(1, nodes.size))
    if nodes.node == root_node:
        touched_members.add(ctx.local_of[root])
    touched_members.discard(0)
    if scatter:             # the leader pushes its node's blocks
        work = [(P.COPY, d.address(g), buf.ctypes.data + i * nbytes, nbytes) for i, g in enumerate(local)
                if nodes.me == 0]
    else:
        work = []
    out, touching = _out(p, nodes, touched_members)
    prog = P._wrap(work, set(), touching, P.NOSYNC, out, nodes.me, nodes.size, {0})
    p.nbytes = nbytes * k if nodes.me == 0 else 0
    final = _program(ctx, p, 2, prog, p.nbytes)
    body(ctx, p, leg, final, True)


# ---------------------------------------------------------------- gather_all / exchange

def gather_all(ctx, p, d, s, nbytes):
    """Each leader packs its node's src blocks, the leaders allgather them
    (no global synchronisation between that and the rest), each leader
    writes the whole row into its dst block, and its node pulls it."""
    from mpi4py import MPI
    nodes = Nodes(ctx)
    P_ = ctx.size
    order = [g for members in nodes.members for g in members]
    counts = [len(m) * nbytes for m in nodes.members]
    displs = list(np.cumsum([0] + counts[:-1]))
    full = np.empty((P_, nbytes), np.uint8)
    local = nodes.members[nodes.node]
    mine = full[displs[nodes.node] // nbytes:displs[nodes.node] // nbytes + len(local)]
    what = "upc.all_gather_all (hier-gather-bcast)"

    def leg():
        for i, g in enumerate(local):
            mine[i] = _as_rows(s, nbytes, g, 1)[0]
        ctx.wait_request(nodes.leaders.Iallgatherv([mine.copy(), MPI.BYTE],
                                                    [full, (counts, displs), MPI.BYTE]), what)
        _as_rows(d, nbytes, local[0], P_)[order] = full
    final = _program(ctx, p, 2, _pull_from_leader(p, nodes, d, local, nbytes * P_), nbytes * P_)
    body(ctx, p, leg, final, True)


def exchange(ctx, p, d, s, nbytes):
    """Node-level aggregation: the leader packs, for every other node, the
    blocks its members send to that node's members (one message per pair of
    nodes), exchanges them with the other leaders, and unpacks what it
    received, and its own node's blocks, straight into its members' dst."""
    nodes = Nodes(ctx)
    P_ = ctx.size
    local = nodes.members[nodes.node]
    k = len(local)
    others = [n for n in range(nodes.count) if n != nodes.node]
    sendbufs = {n: np.empty((k, len(nodes.members[n]), nbytes), np.uint8) for n in others}
    recvbufs = {n: np.empty((len(nodes.members[n]), k, nbytes), np.uint8) for n in others}
    what = "upc.all_exchange (hier-aggregate)"

    def leg():
        srcs = [_as_rows(s, nbytes, g, P_) for g in local]
        dsts = [_as_rows(d, nbytes, g, P_) for g in local]
        reqs = [nodes.leaders.Irecv(recvbufs[n], n, TAG) for n in others]
        for n in others:
            for i in range(k):
                np.take(srcs[i], nodes.members[n], axis=0, out=sendbufs[n][i])
        reqs += [nodes.leaders.Isend(sendbufs[n], n, TAG) for n in others]
        for j in range(k):
            dsts[j][local] = [srcs[i][local[j]] for i in range(k)]
        _wait_all(ctx, reqs, what)
        for n in others:
            for j in range(k):
                dsts[j][nodes.members[n]] = recvbufs[n][:, j]
    out, touching = _out(p, nodes, range(1, nodes.size))
    prog = P._wrap([], set(), touching, P.NOSYNC, out, nodes.me, nodes.size, {0})
    final = _program(ctx, p, 2, prog, 0)
    body(ctx, p, leg, final, True)
