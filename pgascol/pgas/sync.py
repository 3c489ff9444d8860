"""Ordering and synchronisation, UPC's model: accesses are relaxed; fence
completes and makes visible what the caller issued; barrier implies a fence
on every rank; notify/wait is the split-phase barrier; wait_until waits on
a flag in the caller's own part."""
import time

import numpy as np
from mpi4py import MPI

from ..engine import _core
from ..errors import ArgumentError
from . import context

_CMPS = {c: i for i, c in enumerate(_core.RMA_CMPS)}


def fence(comm):
    """Complete every put and update the caller issued on comm's global
    arrays and make them visible: to same-node readers at once, to other
    nodes' through MPI (Win.Flush_all)."""
    ctx = context.of(comm)
    for obj in ctx.objects:
        obj.flush()
    _core.rma_fence()


def barrier(comm):
    """A barrier that implies a fence on every rank: after it, every rank
    sees every access issued before it by anyone."""
    fence(comm)
    context.of(comm).barrier()
    _core.rma_fence()


def barrier_count(comm, flag):
    """barrier(comm) that also returns how many ranks passed flag true:
    a collective operation's closing barrier that tells every rank whether
    any failed (pgascol.sparse's products)."""
    fence(comm)
    n = context.of(comm).count(flag)
    _core.rma_fence()
    return n


def notify(comm):
    """The first half of a split-phase barrier (UPC's upc_notify): fence,
    then signal arrival; local work may follow before wait(comm)."""
    ctx = context.of(comm)
    if ctx.split_barrier is not None:
        raise ArgumentError("notify called twice without wait")
    fence(comm)
    ctx.split_barrier = MPI.Intracomm.Ibarrier(comm)


def wait(comm):
    """The second half (UPC's upc_wait): returns once every rank has notified."""
    ctx = context.of(comm)
    if ctx.split_barrier is None:
        raise ArgumentError("wait called without notify")
    req, ctx.split_barrier = ctx.split_barrier, None
    ctx.wait_request(req, "pgascol.pgas.wait")
    _core.rma_fence()


def wait_until(a, i, cmp, value, timeout=None):
    """Wait until a[i] cmp value holds (OpenSHMEM's wait_until), a[i] in the
    caller's own part; cmp one of "==", "!=", "<", "<=", ">", ">=". Bounded
    by `timeout` (default PGASCOL_TIMEOUT) and by the node peers' liveness."""
    ctx = a._live()
    if cmp not in _CMPS:
        raise ArgumentError("cmp must be one of %s, not %r" % (", ".join(_core.RMA_CMPS), cmp))
    code = _core.DTYPES.get(a.dtype.name, -1)
    if a.dtype.name not in ("int32", "int64", "uint32", "uint64", "float64"):
        raise ArgumentError("wait_until needs 32- or 64-bit integers or float64, not %s" % a.dtype)
    owner, loc = a._locate(i)
    if owner != ctx.rank:
        raise ArgumentError("wait_until: element %d lives on rank %d, not on the caller (rank %d)"
                            % (i, owner, ctx.rank))
    part, val = a.local(), np.array([value], a.dtype)
    limit = ctx.timeout if timeout is None else float(timeout)
    spin = 0 if ctx.state.core.config["spin_ns"] == 0 else 2000
    start = time.monotonic()
    while not _core.rma_wait_until(part, loc, _CMPS[cmp], val, code, spin, 10_000_000):
        ctx.progress()
        ctx.check(start, "wait_until(a[%d] %s %r)" % (i, cmp, value), limit)
    return part[loc]
