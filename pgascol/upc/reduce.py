"""UPC's reductions on global arrays: all_reduce (ALL nelems elements of
src to ONE value at dst) and all_prefix_reduce (dst[i] = op over src[0..i]).

src is read as UPC's `shared [blk_size] T *`: blk_size must be the array's
block size (or its spec: "*" for blocked, 0 for indefinite). Each rank folds
its own elements (one contiguous local run) in index order. With UPC's
built-in operators on one node, the whole call is a program of the C core
(folds.py: the folds in C, the partials through the members' inline slots,
by the algorithm chosen: pull, push, binomial trees, fragmented or not);
across nodes all_reduce folds in C and reduces the partials with
pgascol.Comm's Reduce (hier). Otherwise the partial results, one per rank
or, for NONCOMM_FUNC, one per block, travel with the global index of their
first element through pgascol.Comm's Gatherv (reduce: to dst's owner) or
Allgatherv (prefix: to everyone), where they are folded in index order
(gather, allgather); the three-phase prefix reduce across nodes is below.
Every rank reads and writes only its own parts, so MYSYNC needs no
synchronisation beyond the collective itself; ALLSYNC is the agreement's
Allreduce before (_agreement) and a barrier after."""
import os

import numpy as np
from mpi4py import MPI

from ..engine import _core
from ..errors import ArgumentError
from ..pgas.layout import BlockCyclic
from . import defaults as _defaults
from . import folds
from . import plan as P
from .operators import OPERATORS, Operator
from .operand import Operand

_LAST = P.LAST


def _count(n, what):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise ArgumentError("%s: nelems must be an int > 0, not %r" % (what, n))
    return int(n)


def _source(src, nelems, blk_size, what):
    s = Operand(src, what + " src")
    layout = s.array.layout
    if not isinstance(layout, BlockCyclic):
        raise ArgumentError("%s: src must have a block-cyclic layout (UPC's), not %s" % (what, layout.describe()))
    if blk_size not in (layout.block, layout.spec) or isinstance(blk_size, bool):
        raise ArgumentError("%s: blk_size %r is not src's block size (%d, given as %r)"
                            % (what, blk_size, layout.block, layout.spec))
    if s.offset + nelems > s.array.size:
        raise ArgumentError("%s: %d elements from %d exceed src's %d" % (what, nelems, s.offset, s.array.size))
    return s


def _blocks(layout, rank, lo, hi):
    """How many of rank's blocks meet [lo, hi)."""
    B, n = layout.block, layout.nranks
    k0, k1 = lo // B, (hi - 1) // B
    return (k1 - rank) // n - (k0 - 1 - rank) // n


def _local(s, ctx, nelems):
    """My elements of src[off:off+nelems]: (local values, global index of each block's first, block starts in the run)."""
    layout, lo, hi = s.array.layout, s.offset, s.offset + nelems
    first, count = layout.runs(ctx.rank, lo, hi)
    x = s.array.local()[first:first + count]
    if count == 0:
        return x, np.zeros(0, np.int64), np.zeros(0, np.int64)
    g = layout.global_index(ctx.rank, np.arange(first, first + count))
    starts = np.flatnonzero((g % layout.block == 0) | (np.arange(count) == 0))
    return x, g[starts], starts


def _records(dtype, starts, values):
    rec = np.empty(len(starts), dtype=[("start", "<i8"), ("value", dtype)])
    rec["start"], rec["value"] = starts, values
    return rec


def all_reduce(dst, src, op, nelems, blk_size, func=None, flags=0, algorithm=None):
    """dst (one element, on one rank) = op over src[0..nelems-1], in index order."""
    key = ("reduce", dst, src, op, nelems, blk_size, func, flags, algorithm)
    last = _LAST["reduce"]
    if key == last[0]:
        return last[1]()
    P.run(key, _refusing, _reduce_plan, key, dst, src, op, nelems, blk_size, func, flags, algorithm)


def all_prefix_reduce(dst, src, op, nelems, blk_size, func=None, flags=0, algorithm=None):
    """dst[i] = op over src[0..i] for i < nelems, in index order (dst laid out as src)."""
    key = ("prefix_reduce", dst, src, op, nelems, blk_size, func, flags, algorithm)
    last = _LAST["prefix_reduce"]
    if key == last[0]:
        return last[1]()
    P.run(key, _refusing, _prefix_plan, key, dst, src, op, nelems, blk_size, func, flags, algorithm)


def _refusing(plan, key, dst, src, *args):
    """plan(...), or, when this rank refuses its arguments, the refusal
    where its peers are about to meet it: in the C core when the call would
    run there (pgc_coll_refuse: peers waiting in it fail at once), else in
    the agreement they are about to check (_agreement), so that they raise
    too instead of waiting for it; then the refusal itself."""
    try:
        return plan(key, dst, src, *args)
    except ArgumentError:
        for operand in (dst, src):
            try:
                ctx = P.context_of(operand)
            except ArgumentError:
                continue
            if _in_core(ctx, key):
                if ctx.size > 1:
                    _core.upc_refuse(ctx.state.core, _core.UPC_COLLECTIVES["upc_all_" + key[0]])
                break
            refused = np.array([-1, -(1 << 62)], np.int64)     # min = -1 can match no hash: all raise
            ctx.comm.Allreduce(MPI.IN_PLACE, refused, op=MPI.MIN)
            break
        raise


def _in_core(ctx, key):
    """Whether a call (its key: the arguments as given) would run as a
    program of the C core, as far as a rank that refuses it can tell: on one
    node, with a built-in operator, by an algorithm that runs there."""
    coll, op, algorithm = key[0], key[3], key[-1]
    if algorithm is None:
        algorithm = os.environ.get("PGASCOL_UPC_" + coll.upper()) or "auto"
    name = op.upper() if isinstance(op, str) else op
    return ctx.nnodes == 1 and name in _core.UPC_OPS and algorithm not in ("gather", "hier", "allgather")


def _checked(what, coll, src, op, nelems, blk_size, func, flags, algorithm):
    nelems = _count(nelems, what)
    s = _source(src, nelems, blk_size, what)
    oper = Operator(op, s.array.dtype, func, what)
    in_mode, out_mode = P.sync_modes(flags, what)
    return nelems, s, oper, in_mode, out_mode


def _requested(coll, requested):
    """(the algorithm asked for: `requested`, else PGASCOL_UPC_<COLL>, else 'auto'; where it was asked)."""
    if requested is None:
        return os.environ.get("PGASCOL_UPC_" + coll.upper()) or "auto", "PGASCOL_UPC_" + coll.upper()
    return requested or "auto", "algorithm="


def _algorithm(coll, requested, ctx, oper, nbytes):
    """The algorithm a reduction runs: `requested`, else PGASCOL_UPC_<COLL>,
    else 'auto', which the calibrated rules (defaults.py) or else
    plan.reduction_default resolve by the team's shape and the bytes per rank. The variants that fold in C take the built-in
    operators; FUNC and NONCOMM_FUNC run 'gather' / 'allgather'."""
    names = P.ALGORITHMS[coll]
    requested, source = _requested(coll, requested)
    if requested not in names:
        raise ArgumentError("upc.all_%s: %s%r is not one of its algorithms (%s)"
                            % (coll, source, requested, ", ".join(names)))
    python = P.REDUCTION_PYTHON[coll]
    if oper.code is None and requested not in P.REDUCTION_ANY_OP[coll]:
        raise ArgumentError("upc.all_%s: algorithm %r folds in C, with UPC's built-in operators; %s runs %s"
                            % (coll, requested, oper.name, " or ".join(P.REDUCTION_ANY_OP[coll])))
    if requested == "auto":
        if oper.code is None:
            return python
        # rules measured for this collective and team shape (defaults.py), else the built-in choice
        usable = [a for a in names if a != "auto" and (ctx.nnodes == 1 or a in P.REDUCTION_ACROSS[coll])]
        chosen = (_defaults.choose(coll, nbytes, *_defaults.shape_of(ctx.nnodes, ctx.size), usable) or
                  P.reduction_default(coll, ctx.size, ctx.nnodes, nbytes, oper.name))
        return chosen               # three-phase, hier: where the layout allows them (_prefix_plan)
    if ctx.nnodes > 1 and requested not in P.REDUCTION_ACROSS[coll]:
        raise ArgumentError("upc.all_%s: algorithm %r runs inside one node; this communicator spans %d nodes, "
                            "where it runs %s" % (coll, requested, ctx.nnodes, " or ".join(P.REDUCTION_ACROSS[coll])))
    return requested


def _agreement(what, args, comm):
    """What checks, before any data moves, that every rank passed the same
    arguments (UPC's single-valued arguments): one 16-byte Allreduce of a
    64-bit hash of them, so that a rank that differs makes every rank raise
    instead of some folding wrong data. The data collectives need none: their
    first wait on a peer compares the call's signature (plan.signature).
    An Allreduce returns on no rank before every rank entered it, so it is
    also the barrier IN_ALLSYNC asks for: the calls that check agreement
    make no other."""
    sig = hash(tuple(int(x) if not isinstance(x, (list, tuple)) else tuple(x) for x in args)) & ((1 << 62) - 1)
    both = np.empty(2, np.int64)

    def agreed():
        both[0], both[1] = sig, -sig
        comm.Allreduce(MPI.IN_PLACE, both, op=MPI.MIN)
        if both[0] != -both[1]:
            raise ArgumentError("%s: the ranks passed different arguments (op, nelems, blk_size, flags, src and "
                                "dst must be the same on every rank, as UPC requires)" % what)
    return agreed


def _bytes_layout(counts, size):
    """[counts, displacements] in bytes of records of `size` bytes."""
    return [[c * size for c in counts], [int(d) * size for d in np.cumsum([0] + counts[:-1])]]


def _reduce_plan(key, dst, src, op, nelems, blk_size, func, flags, algorithm):
    ctx = P.context_of(dst)
    what = "upc.all_reduce"
    nelems, s, oper, in_mode, out_mode = _checked(what, "reduce", src, op, nelems, blk_size, func, flags, algorithm)
    d = Operand(dst, what + " dst")
    if d.array.dtype != s.array.dtype:
        raise ArgumentError("%s: dst holds %s, src %s: they must be the same UPC type"
                            % (what, d.array.dtype, s.array.dtype))
    layout, lo, hi = s.array.layout, s.offset, s.offset + nelems
    counts = [layout.runs(r, lo, hi)[1] for r in range(ctx.size)]
    alg = _algorithm("reduce", algorithm, ctx, oper, max(counts) * d.itemsize)
    if alg == "hier" and oper.name in _MPI_OPS:
        return _hier_reduce(key, ctx, s, d, oper, flags, out_mode, nelems)
    if alg not in ("hier", "gather"):
        return _reduce_program(key, ctx, s, d, oper, flags, alg, counts, in_mode, out_mode, nelems)
    first, count = layout.runs(ctx.rank, lo, hi)
    _, gstarts, starts = _local(s, ctx, nelems)
    ends = np.append(starts[1:], count) - 1 if count else np.zeros(0, np.int64)
    if oper.commutative:                    # one partial per rank
        counts = [1 if layout.runs(r, lo, hi)[1] else 0 for r in range(ctx.size)]
        gstarts = gstarts[:1]
    else:                                   # one per block
        counts = [_blocks(layout, r, lo, hi) for r in range(ctx.size)]
    rec = _records(s.array.dtype, gstarts, np.zeros(len(gstarts), s.array.dtype))
    root, comm = d.owner, ctx.comm
    out = recv = order = None
    if ctx.rank == root:
        out = np.empty(sum(counts), rec.dtype)
        recv = [out.view(np.uint8)] + _bytes_layout(counts, rec.dtype.itemsize) + [MPI.BYTE]
    slot = d.local_byte // d.itemsize
    sent = rec.view(np.uint8)

    agreed = _agreement(what, (OPERATORS.index(op), nelems, s.offset, d.offset, flags, counts),
                        comm)

    def run():
        agreed()                            # also IN_ALLSYNC's barrier (_agreement)
        if count:
            mine = s.array.local()[first:first + count]
            rec["value"] = oper.fold(mine) if oper.commutative else oper.scan(mine, starts)[ends]
        comm.Gatherv(sent, recv, root=root)
        if out is not None:
            d.array.local()[slot] = oper.fold(out["value"][order])
        if out_mode == P.ALLSYNC:
            comm.Barrier()
    if out is not None:
        # the partials' order is known now: every rank sends the same blocks each call
        everyone = np.concatenate([_starts_of(layout, r, lo, hi, oper.commutative) for r in range(ctx.size)])
        order = np.argsort(everyone, kind="stable")
    return P.keep(ctx, key, run, (s.array, d.array))


def _reduce_program(key, ctx, s, d, oper, flags, alg, counts, in_mode, out_mode, nelems):
    """all_reduce on one node by a C program (folds.py)."""
    me, item = ctx.rank, d.itemsize
    first, _ = s.array.layout.runs(me, s.offset, s.offset + nelems)
    prog = folds.reduce_program(me, ctx.size, alg, d.owner, counts, s.array.local().ctypes.data + first * item,
                                d.array.local().ctypes.data + d.local_byte, oper, _core.upc_slot_bytes(ctx.state.core),
                                in_mode, out_mode)
    coll = _core.UPC_COLLECTIVES["upc_all_reduce"]
    arg = P.signature(coll, s.array.size, s.offset, d.offset, d.owner, nelems, flags, oper.code, oper.dtype_code,
                      P.ALGORITHMS["reduce"].index(alg))
    runner = _core.UpcProgram(ctx.state.core, coll, arg, prog, counts[me] * item)
    return P.keep(ctx, key, runner, (s.array, d.array))


#: The MPI operators of UPC's built-in ones (LOGAND and LOGOR have none on
#: floating types: 'hier' runs 'gather' for them), and their identities (a
#: rank without elements contributes one).
_MPI_OPS = {"ADD": (MPI.SUM, 0), "MULT": (MPI.PROD, 1), "AND": (MPI.BAND, -1), "OR": (MPI.BOR, 0),
            "XOR": (MPI.BXOR, 0), "MIN": (MPI.MIN, "max"), "MAX": (MPI.MAX, "min")}


def _identity(oper):
    value = _MPI_OPS[oper.name][1]
    if isinstance(value, str):
        info = np.finfo(oper.dtype) if oper.dtype.kind == "f" else np.iinfo(oper.dtype)
        value = info.max if value == "max" else info.min
        if oper.dtype.kind == "f":
            value = np.inf if value > 0 else -np.inf
    return np.array(value).astype(oper.dtype)


def _hier_reduce(key, ctx, s, d, oper, flags, out_mode, nelems):
    """all_reduce across nodes: every rank folds its run in C, then
    pgascol.Comm's Reduce combines the partials (on each node in shared
    memory, then over MPI among the node leaders)."""
    first, count = s.array.layout.runs(ctx.rank, s.offset, s.offset + nelems)
    part, result = np.empty(1, oper.dtype), np.empty(1, oper.dtype)
    identity, mpi_op, root, comm = _identity(oper), _MPI_OPS[oper.name][0], d.owner, ctx.comm
    slot = d.local_byte // d.itemsize
    agreed = _agreement("upc.all_reduce", (OPERATORS.index(oper.name), nelems, s.offset, d.offset, root, flags),
                        comm)
    u8 = np.uint8

    def run():
        agreed()                            # also IN_ALLSYNC's barrier (_agreement)
        if count:
            _core.upc_fold(oper.code, oper.dtype_code, part.view(u8), s.array.local()[first:first + count].view(u8))
        else:
            part[0] = identity
        comm.Reduce(part, result, op=mpi_op, root=root)
        if ctx.rank == root:
            d.array.local()[slot] = result[0]
        if out_mode == P.ALLSYNC:
            comm.Barrier()
    return P.keep(ctx, key, run, (s.array, d.array))


def _starts_of(layout, rank, lo, hi, one):
    """The global index of the first element of each of rank's blocks in [lo, hi) (one: of the first only)."""
    ranges = [(max(a, lo), min(b, hi)) for a, b in layout.owned(rank) if min(b, hi) > max(a, lo)]
    starts = np.array([a for a, _ in ranges], np.int64)
    return starts[:1] if one else starts


def _prefix_plan(key, dst, src, op, nelems, blk_size, func, flags, algorithm):
    ctx = P.context_of(dst)
    what = "upc.all_prefix_reduce"
    nelems, s, oper, in_mode, out_mode = _checked(what, "prefix_reduce", src, op, nelems, blk_size, func, flags,
                                                  algorithm)
    d = _source(dst, nelems, blk_size, what)
    period = s.array.layout.block * ctx.size
    if d.array.dtype != s.array.dtype or d.offset % period != s.offset % period:
        raise ArgumentError("%s: dst must hold src's type (%s, not %s) with src's distribution (the same "
                            "block size and the same position in the cycle)" % (what, s.array.dtype, d.array.dtype))
    layout, lo, hi = s.array.layout, s.offset, s.offset + nelems
    agreed = _agreement(what, (OPERATORS.index(op), nelems, s.offset, d.offset, flags), ctx.comm)
    alg = _algorithm("prefix_reduce", algorithm, ctx, oper, 0)
    runs = _one_run_each(layout, ctx.size, lo, hi)
    if alg == "hier" or (alg == "auto" and ctx.nnodes > 1):
        if runs and oper.name in _MPI_OPS:
            return _hier_prefix(key, ctx, s, d, oper, out_mode, nelems, agreed)
    if alg == "three-phase" or (alg == "auto" and (ctx.nnodes > 1 or oper.code is not None)):
        if (ctx.nnodes == 1 or ctx.state.in_rank_order) and runs:
            if ctx.nnodes == 1 and oper.code is not None:
                return _prefix_program(key, ctx, s, d, oper, flags, in_mode, out_mode, nelems)
            return _three_phase(key, ctx, s, d, oper, out_mode, nelems, agreed)
        if _requested("prefix_reduce", algorithm)[0] == "three-phase":
            raise ArgumentError("%s: algorithm 'three-phase' needs each rank's elements to be one run, in rank "
                                "order, and nodes of consecutive ranks" % what)
    first, count = layout.runs(ctx.rank, lo, hi)
    dfirst, _ = d.array.layout.runs(ctx.rank, d.offset, d.offset + nelems)
    _, gstarts, starts = _local(s, ctx, nelems)
    ends = np.append(starts[1:], count) - 1 if count else np.zeros(0, np.int64)
    counts = [_blocks(layout, r, lo, hi) for r in range(ctx.size)]
    rec = _records(s.array.dtype, gstarts, np.zeros(len(gstarts), s.array.dtype))
    everyone = np.empty(sum(counts), rec.dtype)
    recv = [everyone.view(np.uint8)] + _bytes_layout(counts, rec.dtype.itemsize) + [MPI.BYTE]
    sent, comm = rec.view(np.uint8), ctx.comm
    # where my blocks stand among all blocks in index order, known now
    order = np.argsort(np.concatenate([_starts_of(layout, r, lo, hi, False) for r in range(ctx.size)]), kind="stable")
    place = np.searchsorted(np.sort(np.concatenate([_starts_of(layout, r, lo, hi, False)
                                                    for r in range(ctx.size)])), gstarts)
    block_of = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, count))) if count else None
    before = place[block_of] - 1 if count else None       # the blocks before each element's
    later = before >= 0 if count else None

    def run():
        agreed()                            # also IN_ALLSYNC's barrier (_agreement)
        if count:
            scan = oper.scan(s.array.local()[first:first + count], starts)
            rec["value"] = scan[ends]
        comm.Allgatherv(sent, recv)
        if count:
            totals = oper.scan(everyone["value"][order])       # inclusive, over the blocks in index order
            if later.any():
                scan[later] = oper.combine(totals[before[later]], scan[later])
            d.array.local()[dfirst:dfirst + count] = scan
        if out_mode == P.ALLSYNC:
            comm.Barrier()
    return P.keep(ctx, key, run, (s.array, d.array))


def _one_run_each(layout, nranks, lo, hi):
    """Whether each rank's elements of [lo, hi) are one run, the runs in rank order."""
    owners = [r for r in range(nranks) for _ in _starts_of(layout, r, lo, hi, False)]
    ordered = [layout.owner(g) for g in sorted(g for r in range(nranks) for g in _starts_of(layout, r, lo, hi, False))]
    return len(owners) == len(set(owners)) and ordered == sorted(ordered)


def _hier_prefix(key, ctx, s, d, oper, out_mode, nelems, agreed):
    """all_prefix_reduce where each rank holds one run, in rank order, with
    an operator MPI has: every rank scans its run (in C), pgascol.Comm's
    Exscan gives it the fold of the runs before it (the twin's movement: on
    each node in shared memory, then among the node leaders over MPI), which
    it combines on the left of its scan. One collective for the data where
    the three-phase one makes three, each a round trip over MPI."""
    first, count = s.array.layout.runs(ctx.rank, s.offset, s.offset + nelems)
    dfirst, _ = d.array.layout.runs(ctx.rank, d.offset, d.offset + nelems)
    total, before = np.empty(1, oper.dtype), np.empty(1, oper.dtype)
    identity, mpi_op, comm = _identity(oper), _MPI_OPS[oper.name][0], ctx.comm

    def run():
        agreed()                            # also IN_ALLSYNC's barrier (_agreement)
        scan = oper.scan(s.array.local()[first:first + count]) if count else None
        total[0] = scan[-1] if count else identity
        comm.Exscan(total, before, op=mpi_op)
        if count:
            # Exscan leaves rank 0's before undefined; an earlier rank without
            # elements contributed the identity
            d.array.local()[dfirst:dfirst + count] = oper.combine(before, scan) if ctx.rank else scan
        if out_mode == P.ALLSYNC:
            comm.Barrier()
    return P.keep(ctx, key, run, (s.array, d.array))


def _prefix_program(key, ctx, s, d, oper, flags, in_mode, out_mode, nelems):
    """The three-phase prefix reduce on one node, a C program (folds.py)."""
    me, item = ctx.rank, s.itemsize
    counts = [s.array.layout.runs(r, s.offset, s.offset + nelems)[1] for r in range(ctx.size)]
    first, _ = s.array.layout.runs(me, s.offset, s.offset + nelems)
    dfirst, _ = d.array.layout.runs(me, d.offset, d.offset + nelems)
    prog = folds.prefix_program(me, ctx.size, counts, s.array.local().ctypes.data + first * item,
                                d.array.local().ctypes.data + dfirst * item, oper, in_mode, out_mode)
    coll = _core.UPC_COLLECTIVES["upc_all_prefix_reduce"]
    arg = P.signature(coll, s.array.size, s.offset, d.array.size, d.offset, nelems, flags, oper.code,
                      oper.dtype_code)
    return P.keep(ctx, key, _core.UpcProgram(ctx.state.core, coll, arg, prog, counts[me] * item), (s.array, d.array))


def _three_phase(key, ctx, s, d, oper, out_mode, nelems, agreed):
    """the PGASCol thesis's prefix reduce for ranks holding one run each, in rank
    order, on nodes of consecutive ranks: (1) every rank scans its run and
    the node's members exchange their totals, (2) the node leaders combine
    the node totals by dissemination, ceil(log2 N) rounds of point-to-point
    messages (round j: from the leader 2^j before, to the one 2^j after),
    (3) each leader broadcasts its node's prefix to its members, who combine
    it on the left of their own scan."""
    team = ctx.state.team
    node, leaders = team.node_comm, team.leader_comm
    first, count = s.array.layout.runs(ctx.rank, s.offset, s.offset + nelems)
    dfirst, _ = d.array.layout.runs(ctx.rank, d.offset, d.offset + nelems)
    rec = np.zeros(1, dtype=[("has", "<i8"), ("value", s.array.dtype)])
    mates = np.zeros(node.Get_size(), rec.dtype)
    before = np.zeros(1, rec.dtype)          # the prefix of the nodes before mine (from the leader)
    incoming = np.zeros(1, rec.dtype)
    me = node.Get_rank()
    what = "upc.all_prefix_reduce (three-phase)"

    def fold(parts):
        """(has, value) of the fold of the parts that have a value, in order."""
        vals = parts["value"][parts["has"] != 0]
        return (1, oper.reduce(vals)) if len(vals) else (0, 0)

    def run():
        agreed()                            # also IN_ALLSYNC's barrier (_agreement)
        scan = oper.scan(s.array.local()[first:first + count]) if count else None
        rec["has"], rec["value"] = (1, scan[-1]) if count else (0, 0)
        ctx.wait_request(node.Iallgather(rec.view(np.uint8), mates.view(np.uint8)), what)   # phase 1
        if leaders is not None:                                                     # phase 2
            total, excl = np.array(fold(mates), rec.dtype), np.zeros((), rec.dtype)
            i, n, step = leaders.Get_rank(), leaders.Get_size(), 1
            while step < n:
                reqs = []
                if i + step < n:
                    reqs.append(leaders.Isend(total.reshape(1).view(np.uint8).copy(), i + step, 77))
                if i - step >= 0:
                    reqs.append(leaders.Irecv(incoming.view(np.uint8), i - step, 77))
                for req in reqs:
                    ctx.wait_request(req, what)
                if i - step >= 0 and incoming["has"][0]:
                    total = np.array(fold(np.concatenate((incoming, total.reshape(1)))), rec.dtype)
                    excl = np.array(fold(np.concatenate((incoming, excl.reshape(1)))), rec.dtype)
                step *= 2
            before[0] = excl
        ctx.wait_request(node.Ibcast(before.view(np.uint8), root=0), what)                   # phase 3
        if count:
            has, prefix = fold(np.concatenate((before, mates[:me])))
            d.array.local()[dfirst:dfirst + count] = oper.combine(np.full(count, prefix, s.array.dtype), scan) \
                if has else scan
        if out_mode == P.ALLSYNC:
            ctx.comm.Barrier()
    return P.keep(ctx, key, run, (s.array, d.array))
