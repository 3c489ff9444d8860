"""Global arrays: UPC shared arrays over a pgascol communicator.

Each node's parts live in one shared segment mapped by every rank of the
node (the node team's memfd mechanism: 0600, never named in /dev/shm,
nothing left after a SIGKILL); each rank's part starts on a page and is
first touched by its owner. An access is resolved per owner: the caller's
own part and a same-node peer's are plain loads and stores on the shared
mapping; another node's through an MPI RMA window over the same memory
(passive target, one Lock_all for the array's life), batched per owner
with indexed datatypes.

Accesses are relaxed (UPC's default): a put or update may complete after
it returns; pgascol.pgas.fence, barrier or strict=True complete it."""
import operator

import numpy as np
from mpi4py import MPI
from mpi4py.util.dtlib import from_numpy_dtype

from ..comm.agree import agree
from ..engine import _core
from ..errors import ArgumentError, FreedError, IndexOutOfRangeError
from . import context
from .layout import BlockCyclic, Irregular
from .nonblocking import Handle

#: Operators of update / fetch_op: the names of the engine's op codes.
UPDATE_OPS = ("SUM", "BAND", "BOR", "BXOR", "MIN", "MAX")
_MPI_OPS = {name: getattr(MPI, name) for name in UPDATE_OPS}
_UFUNCS = {"SUM": np.add, "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor,
           "MIN": np.minimum, "MAX": np.maximum}


def op_name(op):
    """MPI.SUM or "sum" -> "SUM"; refuses what update does not define."""
    if isinstance(op, str):
        name = op.upper()
    else:
        name = next((n for n, o in _MPI_OPS.items() if o == op), None)
    if name not in _MPI_OPS:
        raise ArgumentError("update operator must be one of %s (an MPI.Op or its lower-case name), not %r"
                            % (", ".join(UPDATE_OPS), op))
    return name


def _agree(ctx, what, prepare):
    """comm.agree on the context's communicator, after the layer's bounded barrier."""
    return agree(ctx.comm, what, prepare, ctx.barrier)


class GlobalArray:
    """A UPC shared array of n elements over a pgascol communicator.

    Made by pgascol.pgas.array / zeros / empty / full (collective). Element i
    lives on rank owner(i) at local_index(i). Freed by free() (collective)
    or at the end of a ``with`` block, never by the garbage collector."""

    def __init__(self, comm, layout, dtype, fill=0, name="array"):
        ctx = context.of(comm)
        self._ctx = ctx
        self.layout = layout
        self.dtype = np.dtype(dtype)
        self._name = name
        self._win = None
        self._bitwise_lost = False  # (set below: bitwise updates between nodes are refused)
        self._origins = []      # buffers of Accumulates in flight: MPI reads them until the next flush
        self._dirty = set()     # ranks of other nodes written since the last flush
        self._freed = False
        if layout.nranks != ctx.size:
            raise ArgumentError("%s: a layout of %d ranks on a communicator of %d" % (name, layout.nranks, ctx.size))
        self._mpitype = _mpi_type(self.dtype)
        if ctx.nnodes > 1 and self._mpitype is None:
            raise ArgumentError("%s: dtype %s has no MPI datatype, so it cannot span nodes" % (name, self.dtype))
        self._dtcode = _dtype_code(self.dtype)
        self._allocate(ctx, fill)
        ctx.objects.append(self)

    # ------------------------------------------------------------ allocation

    def _allocate(self, ctx, fill):
        isz = self.dtype.itemsize
        sizes = [self.layout.local_size(r) for r in range(ctx.size)]
        team = ctx.state.team
        seg, offsets = team.shared_segment([sizes[r] * isz for r in ctx.node_ranks], self._name)
        self._seg = seg
        self._parts = [None] * ctx.size
        offsets = dict(zip(ctx.node_ranks, offsets))
        for r in ctx.node_ranks:
            self._parts[r] = np.frombuffer(seg, self.dtype, count=sizes[r], offset=offsets[r])
        # where each part starts in the segment, for the C atomics on global indices (one node)
        self._offsets = np.array([offsets.get(r, -1) for r in range(ctx.size)], np.int64)
        mine = self._parts[ctx.rank]
        mine[...] = fill                # first touch by the owner: its pages on its NUMA node
        # collectives on local() views read peers' parts through our mapping
        self._region = team.register(seg)
        if ctx.nnodes > 1:
            self._bitwise_lost = context.bitwise_updates_lost()
            self._win = MPI.Win.Create(mine, isz, comm=MPI.Intracomm(ctx.comm))
            self._win.Lock_all(MPI.MODE_NOCHECK)
            ctx.spans_nodes(True)
        ctx.barrier()                   # every part initialised before anyone reads it

    def free(self):
        """Collective: complete every access, then release the memory."""
        if self._freed:
            return
        ctx = self._ctx
        self.flush()
        ctx.barrier()                   # nobody accesses the array any more
        if self._win is not None:
            self._win.Unlock_all()
            self._win.Free()
            self._win = None
            ctx.spans_nodes(False)
        if ctx.state.team is not None:
            ctx.state.team.unregister(self._region)
        self._freed = True
        self._parts = None
        self._seg = None                # unmapped once no view of it is left
        if self in ctx.objects:
            ctx.objects.remove(self)
        for forget in ctx.on_free:
            forget(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def _live(self):
        if self._freed:
            raise FreedError("%s was freed" % self._name)
        return self._ctx

    # ------------------------------------------------------------ layout

    @property
    def shape(self):
        return (self.layout.n,)

    @property
    def size(self):
        return self.layout.n

    @property
    def block(self):
        return self.layout.block

    @property
    def nbytes(self):
        return self.layout.n * self.dtype.itemsize

    def __len__(self):
        return self.layout.n

    def owner(self, i):
        return self.layout.owner(self._check_indices(i))

    def local_index(self, i):
        return self.layout.local_index(self._check_indices(i))

    def owned(self):
        """The global index ranges [lo, hi) of the caller's elements."""
        return self.layout.owned(self._ctx.rank)

    def local(self):
        """A writable numpy view of the caller's elements (in local order)."""
        self._live()
        return self._parts[self._ctx.rank]

    def node_view(self, rank):
        """A zero-copy view of same-node rank `rank`'s part."""
        ctx = self._live()
        if not 0 <= rank < ctx.size:
            raise ArgumentError("rank %d out of range for a communicator of %d ranks" % (rank, ctx.size))
        if not ctx.on_node[rank]:
            raise ArgumentError("rank %d is on another node: its part is reached through get/put, "
                                "not a view" % rank)
        return self._parts[rank]

    def node_segment(self):
        """The node's whole segment as one numpy array of the dtype, and
        where each rank's part starts in it in elements (-1 for the ranks of
        other nodes): every part of the node read in place through one index
        space (pgascol.sparse's remapped column indices)."""
        self._live()
        starts = np.where(self._offsets >= 0, self._offsets // self.dtype.itemsize, -1)
        return np.frombuffer(self._seg, self.dtype), starts

    # ------------------------------------------------------------ index resolution

    def _check_indices(self, idx):
        g = np.asarray(idx)
        if g.dtype.kind not in "iu":
            raise ArgumentError("indices must be integers, not %s" % g.dtype)
        g = g.astype(np.int64, copy=False)
        n = self.layout.n
        if g.size and (g.min() < 0 or g.max() >= n):
            bad = g[(g < 0) | (g >= n)].flat[0]
            raise IndexOutOfRangeError("index %d out of range for %s of %d elements" % (bad, self._name, n))
        return g

    def _resolve(self, key):
        """key -> (int64 global indices, the result's shape, or None for one element)."""
        n = self.layout.n
        if isinstance(key, (int, np.integer)):
            i = operator.index(key)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexOutOfRangeError("index %d out of range for %s of %d elements" % (key, self._name, n))
            return np.array([i], np.int64), None
        if isinstance(key, slice):
            g = np.arange(*key.indices(n), dtype=np.int64)
            return g, g.shape
        g = np.asarray(key)
        if g.dtype == bool:
            if g.shape != (n,):
                raise ArgumentError("a boolean index must have the array's shape (%d,)" % n)
            g = np.flatnonzero(g)
        elif g.dtype.kind in "iu":
            g = np.where(g < 0, g + n, g)
        g = self._check_indices(g)
        return g.reshape(-1), g.shape

    def _contiguous(self, key):
        """The first index of a slice of step 1 (a range), else None."""
        if isinstance(key, slice) and key.step in (None, 1):
            lo, hi, _ = key.indices(self.layout.n)
            return lo if hi > lo else None
        return None

    def _by_owner(self, g):
        """[(owner, positions in g, local indices)] for the owners of g."""
        own = self.layout.owner(g)
        loc = self.layout.local_index(g)
        if own.size and (own == own.flat[0]).all():
            return [(int(own.flat[0]), None, loc)]
        order = np.argsort(own, kind="stable")
        owners, starts = np.unique(own[order], return_index=True)
        ends = list(starts[1:]) + [len(order)]
        return [(int(r), order[a:b], loc[order[a:b]]) for r, a, b in zip(owners, starts, ends)]

    # ------------------------------------------------------------ get

    def __getitem__(self, key):
        ctx = self._live()
        if isinstance(key, (int, np.integer)):      # one element: no index arrays
            r, loc = self._locate(key)
            part = self._parts[r]
            if part is not None:
                return part[loc]
            out = np.empty(1, self.dtype)
            ctx.wait_request(self._win.Rget(self._msg(out), r, (loc, 1, self._mpitype)), "a read from rank %d" % r)
            return out[0]
        lo = self._contiguous(key)
        if lo is not None:                          # a[lo:hi]: a range, no index arrays
            return self._get_range(lo, np.empty(len(range(*key.indices(self.layout.n))), self.dtype),
                                   False).wait()
        g, shape = self._resolve(key)
        out = np.empty(len(g), self.dtype)
        self._get_into(ctx, g, out, False).wait()
        return out[0] if shape is None else out.reshape(shape)

    def get(self, start, out, strict=False):
        """Bulk read: out[:] = a[start:start+len(out)]."""
        out = self._destination(out)
        return self._get_range(start, out, strict).wait()

    def get_nb(self, start, out):
        """Non-blocking get: a Handle; out is filled once wait() returns."""
        return self._get_range(start, self._destination(out), False)

    def _get_range(self, start, out, strict):
        ctx = self._live()
        pieces = self._pieces(start, len(out))
        if pieces is None:
            return self._get_into(ctx, self._range(start, len(out)), out, strict)
        if strict:
            _core.rma_fence()
        requests = []
        for r, first, count, pos in pieces:
            if self._parts[r] is not None:
                out[pos:pos + count] = self._parts[r][first:first + count]
            else:
                req = self._win.Rget(self._msg(out[pos:pos + count]), r, (first, count, self._mpitype))
                requests.append((r, req))
        return Handle(ctx, requests, None, out)

    def _pieces(self, start, count):
        """A range as [(owner, first local index, count, position in the
        range)] when each owner's elements in it are one contiguous run of
        the range too (blocked and irregular layouts, a range over at most P
        blocks); None otherwise."""
        start = self._check_range(start, count)
        return self.layout.pieces(start, start + count)

    def _get_into(self, ctx, g, out, strict):
        if strict:
            _core.rma_fence()
        requests, finish = [], []
        for r, pos, loc in self._by_owner(g):
            part = self._parts[r]
            if part is not None:
                if pos is None:
                    out[...] = _take(part, loc)
                else:
                    out[pos] = _take(part, loc)
            else:
                buf = out if pos is None else np.empty(len(loc), self.dtype)
                req = self._rma(r, loc, lambda target, b=buf, r=r: self._win.Rget(self._msg(b), r, target))
                requests.append((r, req))
                if pos is not None:
                    finish.append((pos, buf))

        def scatter():
            for pos, buf in finish:
                out[pos] = buf
        return Handle(ctx, requests, scatter if finish else None, out)

    # ------------------------------------------------------------ put

    def __setitem__(self, key, value):
        ctx = self._live()
        if isinstance(key, (int, np.integer)) and np.ndim(value) == 0:     # one element
            r, loc = self._locate(key)
            part = self._parts[r]
            if part is not None:
                part[loc] = value
            else:
                buf = self._source(value, 1, None)
                ctx.wait_request(self._win.Rput(self._msg(buf), r, (loc, 1, self._mpitype)),
                                 "a global-array write")
            return
        lo = self._contiguous(key)
        if lo is not None:                          # a[lo:hi] = ...: a range, no index arrays
            count = len(range(*key.indices(self.layout.n)))
            self.put_nb(lo, self._source(value, count, (count,))).wait()
            return
        g, shape = self._resolve(key)
        values = self._source(value, len(g), shape)
        self._put_from(ctx, g, values, False).wait()

    def put(self, start, values, strict=False):
        """Bulk write: a[start:start+len(values)] = values."""
        self.put_nb(start, values, strict).wait()

    def put_nb(self, start, values, strict=False):
        """Non-blocking put: a Handle; values may be reused once wait() returns."""
        ctx = self._live()
        values = self._source(values, None, None)
        pieces = self._pieces(start, len(values))
        if pieces is None:
            return self._put_from(ctx, self._range(start, len(values)), values, strict)
        requests = []
        for r, first, count, pos in pieces:
            if self._parts[r] is not None:
                self._parts[r][first:first + count] = values[pos:pos + count]
            else:
                req = self._win.Rput(self._msg(values[pos:pos + count]), r, (first, count, self._mpitype))
                requests.append((r, req))
                self._dirty.add(r)
        if strict:
            self._complete(ctx, requests)
            requests = []
        return Handle(ctx, requests)

    def _put_from(self, ctx, g, values, strict):
        requests = []
        for r, pos, loc in self._by_owner(g):
            vals = values if pos is None else values[pos]
            part = self._parts[r]
            if part is not None:
                _put(part, loc, vals)
            else:
                if len(np.unique(loc)) != len(loc):     # numpy's rule: the last write wins
                    rev = loc[::-1]
                    loc, first = np.unique(rev, return_index=True)
                    vals = vals[::-1][first]
                vals = np.ascontiguousarray(vals)
                req = self._rma(r, loc, lambda target, v=vals, r=r: self._win.Rput(self._msg(v), r, target))
                requests.append((r, req))
                self._dirty.add(r)
        if strict:
            self._complete(ctx, requests)
            requests = []
        return Handle(ctx, requests)

    def _complete(self, ctx, requests):
        Handle(ctx, requests).wait()
        self.flush()

    def flush(self):
        """Complete the caller's puts and updates on this array (at origin
        and target) and order them before what follows. Across nodes, each
        rank written since the last flush must first answer a read (_reach):
        MPI's flush itself cannot be bounded."""
        if self._dirty:
            self._reach(sorted(self._dirty), 0)
            self._win.Flush_all()
            self._dirty.clear()
            self._origins.clear()
        _core.rma_fence()

    def _reach(self, ranks, loc):
        """Wait, bounded, until each rank of `ranks` (on other nodes) has
        answered an atomic read of its element loc, issued after our
        accesses to it (all reads in flight together). A dead rank, or one
        whose MPI never progresses, raises here instead of blocking MPI's
        flush for ever; a live one has then applied what we sent before (MPI
        orders the accumulate operations on one location, MPICH and Open MPI
        deliver one origin's operations to a target in order), so the flush
        that follows returns at once."""
        probes = np.empty(len(ranks), self.dtype)
        reads = []
        for k, r in enumerate(ranks):
            buf = self._msg(probes[k:k + 1])
            reads.append((r, self._win.Rget_accumulate(buf, buf, r, (loc, 1, self._mpitype), MPI.NO_OP)))
        Handle(self._ctx, reads).wait()

    # ------------------------------------------------------------ atomic updates

    def update(self, idx, values, op, strict=False):
        """a[idx[k]] = a[idx[k]] (op) values[k] for every k, duplicates
        included, each atomically (UPC's remote update). Relaxed: complete
        after fence() or barrier() (or at once with strict=True)."""
        ctx = self._live()
        name = op_name(op)
        code = self._update_code(name)
        if isinstance(idx, (int, np.integer)) and 0 <= idx and np.ndim(values) == 0:     # one element
            r, loc = self._locate(idx)
            part = self._atomic_part(r)
            if part is not None:
                _core.rma_update_one(part, loc, self._source(values, 1, None), self._dtcode, code)
                return
        if self._win is None and isinstance(self.layout, BlockCyclic):
            self._update_node(idx, values, code)
            return
        g = self._check_indices(idx).reshape(-1)
        values = self._source(values, len(g), None)
        for r, pos, loc in self._by_owner(g):
            vals = values if pos is None else values[pos]
            part = self._atomic_part(r)
            if part is not None:
                _core.rma_update(part, np.ascontiguousarray(loc, np.int64), np.ascontiguousarray(vals),
                                 self._dtcode, code)
            else:
                # duplicates combined here first: one Accumulate per owner (in the
                # array's dtype: numpy's add.reduceat makes int64 of int32)
                order = np.argsort(loc, kind="stable")
                uniq, starts = np.unique(loc[order], return_index=True)
                combined = np.ascontiguousarray(_UFUNCS[name].reduceat(vals[order], starts, dtype=self.dtype))
                self._origins.append(combined)
                self._rma(r, uniq, lambda target, v=combined, r=r:
                          self._win.Accumulate(self._msg(v), r, target, _MPI_OPS[name]))
                self._dirty.add(r)
        if strict:
            self._complete(ctx, [])

    def _update_node(self, idx, values, code):
        """update of an array on one node: the C core finds each element's
        part and applies the update there, no grouping by owner (refusing
        every update if one index is out of range)."""
        g = np.asarray(idx)
        if g.dtype != np.int64:
            if g.dtype.kind not in "iu":
                raise ArgumentError("indices must be integers, not %s" % g.dtype)
            g = g.astype(np.int64)
        g = np.ascontiguousarray(g).reshape(-1)
        values = self._source(values, len(g), None)
        lay = self.layout
        bad = _core.rma_update_cyclic(self._seg, self._offsets, lay.n, lay.block, lay.nranks, g, values,
                                      self._dtcode, code)
        if bad >= 0:
            raise IndexOutOfRangeError("index %d out of range for %s of %d elements" % (g[bad], self._name, lay.n))

    def fetch_op(self, i, value, op):
        """Atomically: old = a[i]; a[i] = old (op) value; returns old (strict)."""
        self._live()
        name = op_name(op)
        code = self._update_code(name)
        r, loc = self._locate(i)
        val, old = np.array([value], self.dtype), np.empty(1, self.dtype)
        if self._atomic_part(r) is not None:
            _core.rma_fetch_op(self._parts[r], loc, val, old, _dtype_code(self.dtype), code)
        else:
            self._fetch_remote(r, loc, val, old, _MPI_OPS[name], "an atomic access to rank %d" % r)
        return old[0]

    def atomic_read(self, i):
        """a[i], read atomically with respect to update, fetch_op and
        compare_swap (across nodes those are MPI's, so is this read)."""
        self._live()
        r, loc = self._locate(i)
        part = self._atomic_part(r)
        if part is not None:
            return part[loc]            # an aligned word: one load
        old = np.empty(1, self.dtype)
        self._fetch_remote(r, loc, old, old, MPI.NO_OP, "an atomic read from rank %d" % r)
        return old[0]

    def _fetch_remote(self, r, loc, value, old, mpi_op, what):
        """old[0] = rank r's element loc, which becomes old (mpi_op) value[0],
        atomically; a request, so the wait is bounded as every other is."""
        req = self._win.Rget_accumulate(self._msg(value), self._msg(old), r, (loc, 1, self._mpitype), mpi_op)
        self._ctx.wait_request(req, what)

    def compare_swap(self, i, expected, value):
        """Atomically: old = a[i]; a[i] = value if old == expected; returns old (strict)."""
        self._live()
        if self.dtype.itemsize not in (4, 8) or self.dtype.kind not in "iuf":
            raise ArgumentError("compare_swap needs 32- or 64-bit integers or floats, not %s" % self.dtype)
        r, loc = self._locate(i)
        exp, val, old = np.array([expected], self.dtype), np.array([value], self.dtype), np.empty(1, self.dtype)
        if self._atomic_part(r) is not None:
            _core.rma_compare_swap(self._parts[r], loc, exp, val, old, _dtype_code(self.dtype))
        else:
            # MPI has no request form of compare-and-swap: a read of the same
            # element (ordered after it) bounds the wait, then the flush
            # delivers the result
            self._win.Compare_and_swap(self._msg(val), self._msg(exp), self._msg(old), r, loc)
            self._reach([r], loc)
            self._win.Flush(r)
        return old[0]

    def _locate(self, i):
        """(owner, local index) of element i (negative i from the end), checked."""
        i = j = operator.index(i)
        n = self.layout.n
        if i < 0:
            j += n
        if not 0 <= j < n:
            raise IndexOutOfRangeError("index %d out of range for %s of %d elements" % (i, self._name, n))
        return self.layout.locate(j)

    def _msg(self, buf):
        """An MPI message of buf as the window's element type, so that origin
        and target name the same MPI type (Open MPI refuses an Accumulate
        whose origin is MPI_LONG and target MPI_INT64_T)."""
        return [buf, self._mpitype]

    def _atomic_part(self, r):
        """Rank r's part when atomics on it are C atomics on the shared
        mapping; None when they go through MPI. An array that spans nodes
        takes every atomic through MPI, its own part's too: MPI's
        accumulate operations are atomic only with respect to each other,
        and another node's MPI applies its updates with the library's own
        code, which a C atomic beside it would race with."""
        return None if self._win is not None else self._parts[r]

    def _update_code(self, name):
        if self._bitwise_lost and name in ("BAND", "BOR", "BXOR"):
            raise ArgumentError("update with %s between nodes: Open MPI loses bitwise accumulates it gives the "
                                "network's atomics; set OMPI_MCA_osc_rdma_acc_use_amo=0 in the environment before "
                                "MPI starts (import pgascol before mpi4py.MPI sets it)" % name)
        code = self._dtcode
        if code < 0 or not _core.rma_update_valid(_core.OPS[name], code):
            raise ArgumentError("update with %s is defined on int32, int64, uint32, uint64 (and SUM, MIN, "
                                "MAX on float64), not on %s" % (name, self.dtype))
        return _core.OPS[name]

    # ------------------------------------------------------------ helpers

    def _rma(self, r, loc, issue):
        """Issue one MPI operation on rank r's local elements `loc` (in that
        order): one contiguous run as (start, count), else an indexed type."""
        loc = np.asarray(loc, np.int64)
        if len(loc) == 0:
            return MPI.REQUEST_NULL
        if loc[-1] - loc[0] == len(loc) - 1 and (len(loc) == 1 or (np.diff(loc) == 1).all()):
            return issue((int(loc[0]), len(loc), self._mpitype))
        breaks = np.flatnonzero(np.diff(loc) != 1) + 1
        starts = np.concatenate(([0], breaks))
        lengths = np.diff(np.concatenate((starts, [len(loc)])))
        dt = self._mpitype.Create_indexed(lengths.tolist(), loc[starts].tolist()).Commit()
        try:
            return issue((0, 1, dt))
        finally:
            dt.Free()           # MPI keeps it alive for the operation in flight

    def _range(self, start, count):
        start = self._check_range(start, count)
        return np.arange(start, start + count, dtype=np.int64)

    def _check_range(self, start, count):
        start = operator.index(start)
        if start < 0 or start + count > self.layout.n:
            raise IndexOutOfRangeError("range [%d, %d) out of %s of %d elements"
                                       % (start, start + count, self._name, self.layout.n))
        return start

    def _destination(self, out):
        if not isinstance(out, np.ndarray) or out.dtype != self.dtype or out.ndim != 1:
            raise ArgumentError("out must be a 1-D numpy array of %s" % self.dtype)
        if not out.flags.writeable:
            raise ArgumentError("out is read-only")
        return out

    def _source(self, value, count, shape):
        """The values of a write as a contiguous 1-D array of the array's
        dtype: a scalar (broadcast), or as many values as elements."""
        if isinstance(value, np.ndarray) and value.dtype == self.dtype and value.ndim == 1 and \
                (count is None or len(value) == count) and value.flags.c_contiguous:
            return value
        if isinstance(value, np.ndarray) and not np.can_cast(value.dtype, self.dtype, "same_kind"):
            raise ArgumentError("values of %s cannot be stored in %s" % (value.dtype, self.dtype))
        values = np.asarray(value, self.dtype)
        if count is None:
            return np.ascontiguousarray(values.reshape(-1))
        if values.ndim == 0:
            return np.full(count, values, self.dtype)
        if values.size != count or (shape is not None and values.ndim > 1 and values.shape != shape):
            raise ArgumentError("%d values of shape %s for %d elements" % (values.size, values.shape, count))
        return np.ascontiguousarray(values.reshape(-1))

    def __repr__(self):
        state = "freed" if self._freed else "%d ranks" % self._ctx.size
        return "<pgascol.pgas.GlobalArray %s of %d %s, %s, %s>" % (
            self._name, self.layout.n, self.dtype, self.layout.describe(), state)


def _mpi_type(dtype):
    """The predefined MPI datatype of a numpy dtype (MPI's atomic
    operations take predefined types only), or None: such an array moves
    on the node only."""
    predefined = MPI._typedict.get(dtype.char)
    if predefined is not None:
        return predefined
    try:
        return from_numpy_dtype(dtype)
    except Exception:
        return None


def _dtype_code(dtype):
    return _core.DTYPES.get(np.dtype(dtype).name, -1)


def _take(part, loc):
    """part[loc], with a slice when loc is one contiguous run."""
    if len(loc) and loc[-1] - loc[0] == len(loc) - 1 and (np.diff(loc) == 1).all():
        return part[loc[0]:loc[-1] + 1]
    return part[loc]


def _put(part, loc, vals):
    if len(loc) and loc[-1] - loc[0] == len(loc) - 1 and (np.diff(loc) == 1).all():
        part[loc[0]:loc[-1] + 1] = vals
    else:
        part[loc] = vals


# ---------------------------------------------------------------- allocation

def array(comm, n, dtype=np.float64, block=1, counts=None, fill=0):
    """Allocate (collectively) a global array of n elements: block 1 cyclic,
    k block-cyclic, "*" blocked, 0 indefinite (all on rank 0); or counts=[...]
    for one contiguous range per rank of the given lengths."""
    ctx = context.of(comm)

    def prepare():
        dt = np.dtype(dtype)
        np.array(fill, dt)          # a fill value the dtype cannot hold is refused here
        if counts is not None:
            cs = [operator.index(c) for c in counts]
            if len(cs) != ctx.size or min(cs, default=0) < 0:
                raise ArgumentError("counts must be %d lengths >= 0, not %r" % (ctx.size, counts))
            layout = Irregular(cs)
            if n is not None and n != layout.n:
                raise ArgumentError("n is %r but counts add up to %d" % (n, layout.n))
            return (None, dt.str, None, tuple(cs)), (dt, layout)
        if operator.index(n) < 0:
            raise ArgumentError("n must be >= 0, not %d" % n)
        if not (block == "*" or (isinstance(block, (int, np.integer)) and block >= 0)):
            raise ArgumentError('block must be an integer >= 0 or "*", not %r' % (block,))
        return (int(n), dt.str, block, None), (dt, BlockCyclic(int(n), ctx.size, block))
    dt, layout = _agree(ctx, "pgascol.pgas.array", prepare)
    return GlobalArray(comm, layout, dt, fill)


def zeros(comm, n, dtype=np.float64, block=1, counts=None):
    return array(comm, n, dtype, block, counts, 0)


def empty(comm, n, dtype=np.float64, block=1, counts=None):
    """As zeros: the owner touches its pages at allocation either way."""
    return array(comm, n, dtype, block, counts, 0)


def full(comm, n, value, dtype=np.float64, block=1, counts=None):
    return array(comm, n, dtype, block, counts, value)
