"""Buffers in node shared memory: ``pgascol.empty(comm, shape, dtype)``,
``pgascol.zeros(...)`` and ``pgascol.free(buf)``.

Each rank gets a plain numpy array, its part of one segment per node that
every rank of the node maps (a memfd, 0600, never named in /dev/shm; each
part page-aligned and first touched by its owner). The segment is a shared
region of the communicator's node team (csrc/team/region.h): when a
collective's buffers lie in such regions, a peer reads (or writes) a block
straight through its own mapping of them, one user-space copy, with no
staging and no kernel call, even where process_vm_readv is not allowed
(docs/ARCHITECTURE.md, "Shared-memory buffers").

Allocation and free are collective over the communicator. Nothing is freed
by the garbage collector: ``pgascol.free(buf)`` (on every rank), or the
communicator's ``Free()``, unregisters the region on every member; the
array itself stays valid memory (its view keeps the mapping) that the
collectives treat as any private buffer."""
import weakref

import numpy as np

from ..errors import ArgumentError
from .agree import agree

#: NodeTeam -> the regions of its buffers not yet freed (a global array's
#: region is not pgascol.free's to release)
_regions = weakref.WeakKeyDictionary()


def _state(comm):
    st = getattr(comm, "_pg", None)
    if st is None or st.team is None:
        raise ArgumentError("shared buffers need a live pgascol communicator (pgascol.Comm), not %r"
                            % (comm,))
    return st


def empty(comm, shape, dtype=float):
    """Collective: an uninitialised numpy array of `shape` and `dtype` on
    each rank, in node shared memory that the collectives of `comm` read in
    place. Every rank must pass the same shape and dtype."""
    st = _state(comm)

    def prepare():
        dt = np.dtype(dtype)
        extents = tuple(int(n) for n in ((shape,) if np.ndim(shape) == 0 else shape))
        if dt.hasobject or any(n < 0 for n in extents):
            raise ArgumentError("shape %r and dtype %s: need non-negative extents and a dtype without "
                                "Python objects" % (shape, dt))
        return (extents, dt.str), (extents, dt)
    extents, dt = agree(comm, "pgascol.empty", prepare)
    return node_empty(st.team, extents, dt)


def node_empty(team, shape, dtype):
    """empty() on a NodeTeam (collective over its node; arguments already
    agreed): what pgascol.empty does once it checked them, and what tools
    that drive a node team directly call."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    seg, offsets = team.shared_segment([nbytes] * team.local_size, "pgascol.empty")
    buf = np.frombuffer(seg, np.uint8, count=nbytes, offset=offsets[team.local_rank])
    buf[::4096] = 0         # first touch by the owner: its pages on its NUMA node
    _regions.setdefault(team, set()).add(team.register(seg))
    return buf.view(dtype).reshape(shape)


def zeros(comm, shape, dtype=float):
    """Collective: as empty, filled with zeros."""
    buf = empty(comm, shape, dtype)
    buf.fill(0)
    return buf


def free(buf):
    """Collective (every rank of the communicator frees its own array of
    the same allocation, between the same two collectives): unregister the
    buffer's region on every member. The array stays usable as ordinary
    memory."""
    address = np.asarray(buf).__array_interface__["data"][0]
    for team, regions in list(_regions.items()):
        region = team.region_of(address) if team.core is not None else None
        if region in regions:
            regions.discard(region)
            team.unregister(region)
            return
    raise ArgumentError("pgascol.free: not a live buffer of pgascol.empty or pgascol.zeros "
                        "(already freed, or freed with its communicator)")
