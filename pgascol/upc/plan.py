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
from ..pgas import context
from .flags import ALLSYNC, MYSYNC, NOSYNC, parse_flags

WAIT, COPY, POST, END = _core.UPC_WAIT, _core.UPC_COPY, _core.UPC_POST, _core.UPC_END
ALL, ENTERED, STEP0, DONE = _core.UPC_ALL, _core.UPC_ENTERED, _core.UPC_STEP0, _core.UPC_DONE

#: The algorithms of each collective, by name; the first is the default
#: inside a node, "hier" the one across nodes (the node leaders over MPI,
#: then the node, through pgascol.Comm's collectives).
ALGORITHMS = {
    "broadcast": ("pull", "push", "tree-pull", "tree-push", "hier"),
    "scatter": ("pull", "push", "hier"),
    "gather": ("push", "pull", "hier"),
    "gather_all": ("pull", "push", "hier"),
    "exchange": ("pull", "push", "hier"),
    "permute": ("push", "pull", "hier"),
    "reduce": ("gather",),
    "prefix_reduce": ("allgather",),
}
#: Static fragmentation of the trees: chunks of this many bytes (PGASCOL_UPC_CHUNK; 0: none).
CHUNK_DEFAULT = 32 << 10
_MAX_PLANS = 256


def chunk_bytes():
    text = os.environ.get("PGASCOL_UPC_CHUNK", str(CHUNK_DEFAULT))
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ArgumentError("PGASCOL_UPC_CHUNK must be a number of bytes >= 0 (0: no fragmentation), "
                            "not %r" % text)
    return value


def algorithm(coll, requested, ctx):
    """The algorithm a call of `coll` runs: `requested`, else PGASCOL_UPC_<COLL>, else the default."""
    names = ALGORITHMS[coll]
    source = "algorithm="
    if requested is None:
        requested = os.environ.get("PGASCOL_UPC_" + coll.upper())
        source = "PGASCOL_UPC_" + coll.upper()
    if requested is None or requested == "":
        return "hier" if ctx.nnodes > 1 and "hier" in names else names[0]
    if requested not in names:
        raise ArgumentError("upc.all_%s: %s%r is not one of its algorithms (%s)"
                            % (coll, source, requested, ", ".join(names)))
    if ctx.nnodes > 1 and "hier" in names and requested != "hier":
        raise ArgumentError("upc.all_%s: algorithm %r moves data inside one node; this communicator spans "
                            "%d nodes, where it runs 'hier'" % (coll, requested, ctx.nnodes))
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


def cached(ctx, key):
    """The plan cached for key, if its arrays are all still allocated."""
    plans = getattr(ctx, "upc_plans", None)
    if plans is None:
        plans = ctx.upc_plans = {}
    plan = plans.get(key)
    if plan is not None:
        for a in plan.arrays:
            if a._freed:
                del plans[key]
                return None
    return plan


def remember(ctx, key, plan):
    plans = ctx.upc_plans
    if len(plans) >= _MAX_PLANS:
        plans.clear()
    plans[key] = plan.compile()
    return plan


class Plan:
    """A resolved call: what to run and how (`run(ctx)` does it)."""
    __slots__ = ("coll", "arrays", "prog", "arg", "nbytes", "body", "in_mode", "out_mode")

    def run(self, ctx):
        if self.prog is not None:
            self.prog.run(ctx.state.core)
        else:
            self.body(ctx, self)

    def compile(self):
        """The program (an array of steps) as the engine's UpcProgram, once resolved."""
        if self.prog is not None:
            self.prog = _core.UpcProgram(self.coll, self.arg, self.prog, self.nbytes)
        return self


def sync_modes(flags, what):
    return parse_flags(flags, what)


def program(me, nranks, transfers, performer, in_mode, out_mode):
    """This member's steps for a flat algorithm: `transfers` are (src owner,
    src address, dst owner, dst address, bytes), performer(t) the member
    that copies t."""
    mine, touched, touching = [], set(), set()
    for t in transfers:
        who = performer(t)
        if who == me:
            mine.append((COPY, t[3], t[1], t[4]))
            touched.update((t[0], t[2]))
        elif me in (t[0], t[2]):
            touching.add(who)
    touched.discard(me)
    touching.discard(me)
    return _wrap(mine, touched, touching, in_mode, out_mode)


def _wrap(work, touched, touching, in_mode, out_mode):
    steps = []
    if in_mode == ALLSYNC:
        steps += [(POST, ENTERED, 0, 0), (WAIT, ALL, ENTERED, 0)]
    elif in_mode == MYSYNC:
        if touching:
            steps.append((POST, ENTERED, 0, 0))
        steps += [(WAIT, p, ENTERED, 0) for p in sorted(touched)]
    steps += work
    steps.append((END, 0, 0, 0))
    if out_mode == ALLSYNC:
        steps.append((WAIT, ALL, DONE, 0))
    elif out_mode == MYSYNC:
        steps += [(WAIT, p, DONE, 0) for p in sorted(touching)]
    assert in_mode in (ALLSYNC, MYSYNC, NOSYNC) and out_mode in (ALLSYNC, MYSYNC, NOSYNC)
    return np.array(steps, dtype=np.uint64).reshape(-1, 4)


def tree_program(me, nranks, root, src_addr, dst_addr, nbytes, chunk, push, in_mode, out_mode):
    """A broadcast down a binomial tree rooted at `root`, chunk by chunk
    (chunk 0: the whole block): pull (each member copies chunk c from its
    parent's dst once the parent posted it) or push (each member copies it
    into its children's dst, then posts). dst_addr(r): r's dst block."""
    v = (me - root) % nranks
    parent = None if v == 0 else ((v & ~(1 << (v.bit_length() - 1))) + root) % nranks
    children, k = [], 1 << v.bit_length() if v else 1
    while v + k < nranks:
        children.append((v + k + root) % nranks)
        k <<= 1
    size = chunk if 0 < chunk < nbytes else nbytes
    work = []
    for c, off in enumerate(range(0, nbytes, size)):
        n = min(size, nbytes - off)
        mine = dst_addr(me) + off
        if parent is None:
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
    return _wrap(work, touched, touching, in_mode, out_mode)
