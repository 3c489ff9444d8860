"""UPC's reductions on global arrays: all_reduce (ALL nelems elements of
src to ONE value at dst) and all_prefix_reduce (dst[i] = op over src[0..i]).

src is read as UPC's `shared [blk_size] T *`: blk_size must be the array's
block size (or its spec: "*" for blocked, 0 for indefinite). Each rank folds
its own elements (one contiguous local run) in index order with numpy
(ops.py); the partial results, one per rank or, for NONCOMM_FUNC, one per
block, travel with the global index of their first element through
pgascol.Comm's Gatherv (reduce: to dst's owner) or Allgatherv (prefix: to
everyone), where they are folded in index order. Every rank reads and
writes only its own parts, so MYSYNC needs no synchronisation beyond those
collectives and ALLSYNC is a barrier on each side."""
import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError
from ..pgas.layout import BlockCyclic
from . import plan as P
from .ops import Operator
from .operand import Operand


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


def _sync_before(ctx, in_mode):
    if in_mode == P.ALLSYNC:
        ctx.comm.Barrier()


def all_reduce(dst, src, op, nelems, blk_size, func=None, flags=0, algorithm=None):
    """dst (one element, on one rank) = op over src[0..nelems-1], in index order."""
    ctx = P.context_of(dst)
    what = "upc.all_reduce"
    nelems = _count(nelems, what)
    s = _source(src, nelems, blk_size, what)
    d = Operand(dst, what + " dst")
    if d.array.dtype != s.array.dtype:
        raise ArgumentError("%s: dst holds %s, src %s: they must be the same UPC type"
                            % (what, d.array.dtype, s.array.dtype))
    oper = Operator(op, s.array.dtype, func, what)
    in_mode, out_mode = P.sync_modes(flags, what)
    P.algorithm("reduce", algorithm, ctx)
    layout, lo, hi = s.array.layout, s.offset, s.offset + nelems
    _sync_before(ctx, in_mode)
    x, gstarts, starts = _local(s, ctx, nelems)
    if oper.commutative:
        counts = [1 if layout.runs(r, lo, hi)[1] else 0 for r in range(ctx.size)]
        values = [oper.reduce(x)] if len(x) else []
        gstarts = gstarts[:1]
    else:
        counts = [_blocks(layout, r, lo, hi) for r in range(ctx.size)]
        scan = oper.scan(x, starts)
        values = scan[np.append(starts[1:], len(x)) - 1] if len(x) else []
    rec = _records(s.array.dtype, gstarts, values)
    root = d.owner
    size = rec.dtype.itemsize
    out = np.empty(sum(counts), rec.dtype) if ctx.rank == root else None
    recv = [out.view(np.uint8), [c * size for c in counts], list(np.cumsum([0] + counts[:-1]) * size), MPI.BYTE] \
        if out is not None else None
    ctx.comm.Gatherv(rec.view(np.uint8), recv, root=root)
    if out is not None:
        ordered = out["value"][np.argsort(out["start"], kind="stable")]
        d.array.local()[d.local_byte // d.itemsize] = oper.reduce(ordered)
    if out_mode == P.ALLSYNC:
        ctx.comm.Barrier()


def all_prefix_reduce(dst, src, op, nelems, blk_size, func=None, flags=0, algorithm=None):
    """dst[i] = op over src[0..i] for i < nelems, in index order (dst laid out as src)."""
    ctx = P.context_of(dst)
    what = "upc.all_prefix_reduce"
    nelems = _count(nelems, what)
    s = _source(src, nelems, blk_size, what)
    d = _source(dst, nelems, blk_size, what)
    d.what = what + " dst"
    period = s.array.layout.block * ctx.size
    if d.array.dtype != s.array.dtype or d.offset % period != s.offset % period:
        raise ArgumentError("%s: dst must hold src's type (%s, not %s) with src's distribution (the same "
                            "block size and the same position in the cycle)" % (what, s.array.dtype, d.array.dtype))
    oper = Operator(op, s.array.dtype, func, what)
    in_mode, out_mode = P.sync_modes(flags, what)
    P.algorithm("prefix_reduce", algorithm, ctx)
    layout, lo, hi = s.array.layout, s.offset, s.offset + nelems
    _sync_before(ctx, in_mode)
    x, gstarts, starts = _local(s, ctx, nelems)
    scan = oper.scan(x, starts)
    ends = np.append(starts[1:], len(x)) - 1 if len(x) else np.zeros(0, np.int64)
    rec = _records(s.array.dtype, gstarts, scan[ends])
    counts = [_blocks(layout, r, lo, hi) for r in range(ctx.size)]
    size = rec.dtype.itemsize
    everyone = np.empty(sum(counts), rec.dtype)
    ctx.comm.Allgatherv(rec.view(np.uint8), [everyone.view(np.uint8), [c * size for c in counts],
                                             list(np.cumsum([0] + counts[:-1]) * size), MPI.BYTE])
    if len(x):
        order = np.argsort(everyone["start"], kind="stable")
        totals = oper.scan(everyone["value"][order])        # inclusive, over the blocks in index order
        k = np.searchsorted(everyone["start"][order], gstarts)  # my blocks' places among them
        block_of = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(x))))
        later = k[block_of] > 0
        if later.any():
            scan[later] = oper.combine(totals[k[block_of][later] - 1], scan[later])
        first, count = d.array.layout.runs(ctx.rank, d.offset, d.offset + nelems)
        d.array.local()[first:first + count] = scan
    if out_mode == P.ALLSYNC:
        ctx.comm.Barrier()
