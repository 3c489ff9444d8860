"""The collective check of a collective allocation's arguments, shared by
pgascol.empty (comm/buffers.py) and the PGAS layer's arrays and matrices."""
import hashlib

import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError


def agree(comm, what, prepare, arrive=None):
    """prepare() checks this rank's arguments and returns (key, result). If
    it raised on any rank, or the keys differ, every rank raises
    ArgumentError (nothing allocated, no rank left waiting for the others);
    else returns this rank's result. `arrive`: a bounded wait for every rank
    before the exchange (the PGAS layer's barrier, which keeps MPI
    progressing), so that the allocation's blocking calls after it do not
    wait for a rank that died before."""
    try:
        key, result = prepare()
        error = None
    except Exception as exc:        # whatever refused them: every rank must hear of it
        key, result, error = None, None, "%s: %s" % (type(exc).__name__, exc)
    if arrive is not None:
        arrive()
    if _alike(comm, key, error):
        return result
    seen = comm.allgather((key, error))
    for r, (_, err) in enumerate(seen):
        if err is not None:
            raise ArgumentError("%s: rank %d's arguments were refused: %s" % (what, r, err))
    me = comm.Get_rank()
    for r, (other, _) in enumerate(seen):
        if other != key:
            raise ArgumentError("%s: rank %d passed %r, rank %d passed %r: a collective allocation "
                                "needs the same arguments on every rank" % (what, me, key, r, other))
    return result


def _alike(comm, key, error):
    """The common case in one fixed-size Allreduce instead of the pickled
    allgather (two collectives): no rank refused and every rank's key has
    the same 62-bit digest of its repr. Otherwise (or keys whose repr
    differs though they are equal) agree compares the keys themselves."""
    h = int.from_bytes(hashlib.blake2b(repr(key).encode(), digest_size=8).digest(), "little") >> 2
    mine, out = np.array([error is not None, h, -h], np.int64), np.empty(3, np.int64)
    comm.Allreduce(mine, out, op=MPI.MAX)
    return out[0] == 0 and out[1] == -out[2]          # max == min: every digest the same
