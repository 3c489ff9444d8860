"""Where the elements of a global array live: UPC's block-cyclic layouts and
Global Arrays' irregular blocked one.

Block-cyclic with block size B over P ranks (UPC's `shared [B] T a[n]`):
element i lives on rank (i // B) % P at local offset (i // (B*P))*B + i % B.
B = 1 is UPC's default (cyclic), B = ceil(n/P) the blocked layout
(`block="*"`), and block 0 UPC's indefinite block size (all on rank 0).
Irregular: rank r holds the contiguous range [offsets[r], offsets[r+1]).

Every method is vectorised over numpy index arrays (int64); nothing here
touches memory or MPI."""
import bisect

import numpy as np

from ..errors import ArgumentError


class BlockCyclic:
    """UPC's layout of n elements in blocks of `block` over `nranks` ranks."""

    kind = "block-cyclic"

    def __init__(self, n, nranks, block):
        self.n, self.nranks = int(n), int(nranks)
        if block == 0:                  # indefinite: one block holding everything, on rank 0
            self.block = max(self.n, 1)
        elif block == "*":
            self.block = max(-(-self.n // self.nranks), 1)
        else:
            self.block = int(block)
        self.spec = block               # as the caller gave it (0, "*" or B)

    def owner(self, i):
        return (np.asarray(i) // self.block) % self.nranks

    def local_index(self, i):
        i = np.asarray(i)
        B = self.block
        return (i // (B * self.nranks)) * B + i % B

    def locate(self, i):
        """(owner, local index) of one element, in plain integers."""
        B = self.block
        return (i // B) % self.nranks, (i // (B * self.nranks)) * B + i % B

    def global_index(self, rank, local):
        """The global indices of `rank`'s local elements `local`."""
        local = np.asarray(local)
        B = self.block
        return ((local // B) * self.nranks + rank) * B + local % B

    def local_size(self, rank):
        B, P, n = self.block, self.nranks, self.n
        full, rest = divmod(n, B * P)           # whole cycles, then what is left of the last
        mine = full * B
        start = rank * B
        if rest > start:
            mine += min(B, rest - start)
        return mine

    def owned(self, rank):
        """The global index ranges [lo, hi) of `rank`'s blocks, in order
        (UPC's upc_forall affinity, without a test per element)."""
        B, P, n = self.block, self.nranks, self.n
        return [(lo, min(lo + B, n)) for lo in range(rank * B, n, B * P)]

    def pieces(self, lo, hi):
        """The range [lo, hi) as [(owner, first local index, count, position
        in the range)], one per block it touches, in order, when no owner
        holds two of them (so each owner's elements are one run of the range
        and of its part); None otherwise. Plain integers, O(pieces)."""
        B, P = self.block, self.nranks
        if hi <= lo:
            return []
        b0, b1 = lo // B, (hi - 1) // B
        if b1 - b0 >= P:
            return None
        out = []
        for b in range(b0, b1 + 1):
            g0, g1 = max(lo, b * B), min(hi, (b + 1) * B)
            out.append((b % P, (b // P) * B + g0 - b * B, g1 - g0, g0 - lo))
        return out

    def runs(self, rank, lo, hi):
        """The range [lo, hi) as it lies in `rank`'s part: (first local
        index, count) of the contiguous local run it covers there (a global
        range covers consecutive local elements of each owner)."""
        if hi <= lo:
            return 0, 0
        first = self._first_at_or_after(rank, lo)
        return first, self._first_at_or_after(rank, hi) - first

    def _first_at_or_after(self, rank, g):
        """The number of `rank`'s elements with a global index < g."""
        B, P = self.block, self.nranks
        cycles, within = divmod(g, B * P)
        return cycles * B + min(max(within - rank * B, 0), B)

    def describe(self):
        return ("cyclic" if self.block == 1 and self.spec not in ("*", 0) else
                "blocked" if self.spec == "*" else "indefinite" if self.spec == 0 else
                "block-cyclic, block %d" % self.block)


class Irregular:
    """One contiguous range per rank, of the given lengths."""

    kind = "irregular"

    def __init__(self, counts):
        self.counts = np.asarray(counts, dtype=np.int64)
        if self.counts.ndim != 1 or (self.counts < 0).any():
            raise ArgumentError("counts must be a list of non-negative lengths, one per rank")
        self.nranks = len(self.counts)
        self.offsets = np.concatenate(([0], np.cumsum(self.counts))).astype(np.int64)
        self.n = int(self.offsets[-1])
        self._bounds = [int(x) for x in self.offsets]
        self.block = None
        self.spec = None

    def owner(self, i):
        return np.searchsorted(self.offsets, np.asarray(i), side="right") - 1

    def local_index(self, i):
        i = np.asarray(i)
        return i - self.offsets[self.owner(i)]

    def locate(self, i):
        r = bisect.bisect_right(self._bounds, i) - 1
        return r, i - self._bounds[r]

    def global_index(self, rank, local):
        return np.asarray(local) + self.offsets[rank]

    def local_size(self, rank):
        return int(self.counts[rank])

    def owned(self, rank):
        lo, hi = int(self.offsets[rank]), int(self.offsets[rank + 1])
        return [(lo, hi)] if hi > lo else []

    def pieces(self, lo, hi):
        """As BlockCyclic.pieces: every owner holds one run, never None."""
        out, bounds = [], self._bounds
        r = bisect.bisect_right(bounds, lo) - 1
        while lo < hi and r < self.nranks and bounds[r] < hi:
            a, b = bounds[r], bounds[r + 1]
            g0, g1 = max(lo, a), min(hi, b)
            if g1 > g0:
                out.append((r, g0 - a, g1 - g0, g0 - lo))
            r += 1
        return out

    def runs(self, rank, lo, hi):
        a, b = self._bounds[rank], self._bounds[rank + 1]
        first, last = max(lo, a), min(hi, b)
        return (first - a, last - first) if last > first else (0, 0)

    def describe(self):
        return "irregular"
