"""pgascol.pgas.Lock: a first-come-first-served lock over a communicator.

A ticket lock in one 64-bit word on rank 0 (the next ticket in the high 32
bits, the ticket being served in the low 32), so acquire is one atomic
fetch-and-add and release another, on the node through the shared mapping
and across nodes through MPI's accumulate operations; waiters poll it with
an atomic load. Beside it: the holder's rank
(so a release by another rank raises and a dead holder is named) and one
slot per rank for a ticket given up by a timed-out acquire, which the next
release skips."""
import time

import numpy as np

from ..errors import ArgumentError, PeerDeadError, PgascolTimeoutError
from . import context
from .array import GlobalArray
from .layout import Irregular

_TICKET, _HOLDER, _GIVEN_UP = 0, 1, 2
_SERVING = (1 << 32) - 1


class Lock:
    """Allocated collectively: ``lock = pgascol.pgas.Lock(comm)``; then
    ``acquire(blocking=True, timeout=None)`` / ``release()`` or ``with lock:``
    on any rank. Freed by free() (collective) or with the communicator."""

    def __init__(self, comm):
        ctx = context.of(comm)
        self._ctx = ctx
        counts = [0] * ctx.size
        counts[0] = 2 + ctx.size
        self._words = GlobalArray(comm, Irregular(counts), np.int64, 0, "lock")
        self._words[_HOLDER] = -1
        ctx.barrier()
        self._ctx.objects.remove(self._words)    # freed through the lock
        ctx.objects.append(self)

    def acquire(self, blocking=True, timeout=None):
        """Take the lock; True once held. Non-blocking: False at once if
        another rank holds it or waits for it. With a timeout (seconds):
        False when it passes (the ticket is given up). Raises if the holder
        dies while we wait (PeerDeadError naming it)."""
        w, me = self._words, self._ctx.rank
        if self.held_by() == me:
            raise ArgumentError("rank %d already holds this lock" % me)
        if not blocking:
            cur = int(w.atomic_read(_TICKET))
            if (cur >> 32) != (cur & _SERVING) or w.compare_swap(_TICKET, cur, cur + (1 << 32)) != cur:
                return False
            w.put(_HOLDER, np.array([me], np.int64), strict=True)
            return True
        ticket = (int(w.fetch_op(_TICKET, 1 << 32, "sum")) >> 32) & _SERVING
        limit = self._ctx.timeout if timeout is None else float(timeout)
        start = time.monotonic()
        polls = 0
        while self._serving() != ticket:
            polls += 1
            if polls % 64 == 0:
                self._check_holder()
                self._ctx.progress()
                if time.monotonic() - start > limit:
                    if self._give_up(ticket):
                        return False
                    break       # our turn came while giving up: we hold the lock
            self._ctx.yield_cpu()
        w.put(_HOLDER, np.array([me], np.int64), strict=True)
        return True

    def release(self):
        """Give the lock to the next ticket; raises unless the caller holds it."""
        w, me = self._words, self._ctx.rank
        holder = self.held_by()
        if holder != me:
            raise ArgumentError("rank %d releases a lock it does not hold (%s)"
                                % (me, "free" if holder < 0 else "held by rank %d" % holder))
        w.put(_HOLDER, np.array([-1], np.int64), strict=True)
        self._advance()

    def held_by(self):
        """The holder's rank, or -1."""
        return int(self._words[_HOLDER])

    def _serving(self):
        """The ticket being served (read atomically: waiters poll it with a load)."""
        return int(self._words.atomic_read(_TICKET)) & _SERVING

    def _advance(self):
        """Serve the next ticket, skipping the ones given up."""
        w, P = self._words, self._ctx.size
        serving = (int(w.fetch_op(_TICKET, 1, "sum")) + 1) & _SERVING
        while True:
            slots = w[_GIVEN_UP:_GIVEN_UP + P]        # one read; the matches taken by compare-and-swap
            if not any(w.compare_swap(_GIVEN_UP + r, serving + 1, 0) == serving + 1
                       for r in np.flatnonzero(slots == serving + 1)):
                return
            serving = (int(w.fetch_op(_TICKET, 1, "sum")) + 1) & _SERVING

    def _give_up(self, ticket):
        """Mark our ticket given up; True unless its turn came meanwhile (then
        we hold the lock). The slot is taken back by compare-and-swap, by us
        or by the releaser that skips it: never both."""
        w, me = self._words, self._ctx.rank
        w.put(_GIVEN_UP + me, np.array([ticket + 1], np.int64), strict=True)
        if self._serving() == ticket:
            if w.compare_swap(_GIVEN_UP + me, ticket + 1, 0) == ticket + 1:
                return False        # our turn: we hold it after all
        return True

    def _check_holder(self):
        """Raise if the holder died (seen on its node only), or a node peer
        died or gave up on the node team."""
        ctx = self._ctx
        holder = int(self._words[_HOLDER])
        dead = holder >= 0 and ctx.on_node[holder] and not ctx.state.core.member_alive(ctx.local_of[holder])
        if not dead:
            try:
                ctx.check_node("pgascol.pgas.Lock.acquire")
                return
            except PeerDeadError as exc:
                # the holder may have died between the two checks
                if holder < 0 or not ctx.on_node[holder] or exc.peer != ctx.local_of[holder]:
                    raise
        raise PeerDeadError("pgascol.pgas.Lock.acquire: the holder of the lock, rank %d, died or exited "
                            "holding it" % holder, ctx.local_of[holder])

    def flush(self):
        self._words.flush()

    def free(self):
        """Collective."""
        if self in self._ctx.objects:
            self._ctx.objects.remove(self)
        self._words.free()

    def __enter__(self):
        if not self.acquire():
            holder = self.held_by()
            raise PgascolTimeoutError("pgascol.pgas.Lock: not acquired within PGASCOL_TIMEOUT=%gs%s" % (
                self._ctx.timeout, "" if holder < 0 else ": the holder of the lock, rank %d, %s" % (
                    holder, "kept it" if self._ctx.on_node[holder] else
                    "is on another node: it died or kept the lock that long")))
        return self

    def __exit__(self, *exc):
        self.release()
