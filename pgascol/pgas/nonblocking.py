"""Non-blocking accesses to global arrays: the Handle that completes one
(GlobalArray.get_nb, put_nb, copy_nb), and copy / copy_nb from one global
array to another through the caller."""
import numpy as np
from mpi4py import MPI

from ..errors import ArgumentError


class Handle:
    """A non-blocking access in flight: wait() completes it, test() says
    whether it has. `requests`: (target rank, MPI request) pairs."""

    def __init__(self, ctx, requests=(), finish=None, result=None):
        self._ctx, self._requests, self._finish, self.result = ctx, list(requests), finish, result

    def test(self):
        if self._requests and not MPI.Request.Testall([req for _, req in self._requests]):
            return False
        self._complete()
        return True

    def wait(self):
        for r, req in self._requests:
            self._ctx.wait_request(req, "an access to rank %d" % r)
        self._complete()
        return self.result

    def _complete(self):
        self._requests = []
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()


def copy(dst, dst_start, src, src_start, n):
    """dst[dst_start:dst_start+n] = src[src_start:src_start+n] (one-sided, by the caller)."""
    copy_nb(dst, dst_start, src, src_start, n).wait()


def copy_nb(dst, dst_start, src, src_start, n):
    if src.dtype != dst.dtype:
        raise ArgumentError("copy between %s and %s" % (src.dtype, dst.dtype))
    buf = np.empty(n, src.dtype)
    src.get(src_start, buf)
    return dst.put_nb(dst_start, buf)
