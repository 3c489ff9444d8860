"""HPCC RandomAccess's random stream, exact and vectorised.

HPCC's generator is the sequence v_0 = 1, v_{k+1} = (v_k << 1) ^ (POLY if
the top bit of v_k is set), on 64-bit words: multiplication by x in GF(2)[x]
modulo x^64 + x^2 + x + 1 (POLY = 7), of period PERIOD. `starts(n)` is
HPCC_starts, v_n (n reduced by PERIOD as HPCC does). A rank of HPCC's MPI
benchmark starting at stream position s applies the updates v_{s+1},
v_{s+2}, ..., at most 1024 in flight; `Stream` yields them group by group of
1024 consecutive values, in chunks, with numpy:

- a jump of s <= 62 positions is closed-form: x^s a(x) = (a << s) + h(x) x^64
  with h the top s bits of a, and x^64 = x^2 + x + 1, so
  v_{k+s} = (v_k << s) ^ h ^ (h << 1) ^ (h << 2), h = v_k >> (64 - s)
  (h (x^2 + x + 1) has degree < 64: no further reduction);
- a group is a (64, 16) matrix whose row 0 holds every 64th value; rows
  1..63 follow by doubling (jumps of 1, 2, 4, ..., 32), all groups of a
  chunk at once;
- the next chunk's row 0 is this one's jumped by the chunk length, a linear
  map applied with eight 256-entry tables (one per byte)."""
import numpy as np

POLY = 7
PERIOD = 1317624576693539401
MASK = (1 << 64) - 1
LANE = 64                       # values per row of a chunk


def step(x):
    """v_{k+1} from v_k (Python integers)."""
    return ((x << 1) & MASK) ^ (POLY if x >> 63 else 0)


def jump_int(x, s):
    """v_{k+s} from v_k, 1 <= s <= 62 (Python integers; `jump` below)."""
    h = x >> (64 - s)
    return ((x << s) & MASK) ^ h ^ (h << 1) ^ (h << 2)


def starts(n):
    """HPCC_starts(n): v_n, HPCC's algorithm (square-and-multiply over the
    64 powers x^(2i))."""
    while n < 0:
        n += PERIOD
    while n > PERIOD:
        n -= PERIOD
    if n == 0:
        return 1
    m2, temp = [], 1
    for _ in range(64):
        m2.append(temp)
        temp = step(step(temp))
    i = 62
    while i >= 0 and not (n >> i) & 1:
        i -= 1
    ran = 2
    while i > 0:
        temp = 0
        for j in range(64):
            if (ran >> j) & 1:
                temp ^= m2[j]
        ran = temp
        i -= 1
        if (n >> i) & 1:
            ran = step(ran)
    return ran


_SHIFT = [np.uint64(s) for s in range(64)]


def jump(x, s, out=None):
    """v_{k+s} for every v_k in the uint64 array x, 1 <= s <= 62 (closed form)."""
    h = x >> _SHIFT[64 - s]
    out = np.left_shift(x, _SHIFT[s], out=out)
    out ^= h
    h <<= _SHIFT[1]
    out ^= h
    h <<= _SHIFT[1]
    out ^= h
    return out


def jump_table(m):
    """Eight tables of 256 words: the map v_k -> v_{k+m} byte by byte
    (v_{k+m} = XOR over b of table[b, byte b of v_k]), m >= 0."""
    cols = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))      # the basis x^i
    while m > 0:
        s = min(m, 62)
        cols = jump(cols, s)
        m -= s
    table = np.zeros((8, 256), np.uint64)
    values = np.arange(256)
    for b in range(8):
        for t in range(8):
            table[b, (values >> t) & 1 == 1] ^= cols[8 * b + t]
    return table


class Stream:
    """The values v_{first+1}, ..., v_{first+count}, `chunk()` by chunk of at
    most `size`, group by group of `group` consecutive values (the updates
    HPCC lets a rank have in flight, which it may apply in any order):
    groups in stream order, the values of a group in the order of a
    (64, group/64) matrix whose columns are runs of 64 consecutive values.
    That order keeps every numpy operation of the doubling on runs of at
    least group/64 contiguous words."""

    def __init__(self, first, count, size=1 << 16, group=1024):
        if group % LANE or size % group:
            raise ValueError("a group is a multiple of %d values, a chunk a multiple of groups" % LANE)
        self.left, self.size, self.group = count, size, group
        lanes = size // LANE
        x, column = starts(first + 1), []
        for _ in range(lanes):              # every 64th value
            column.append(x)
            x = jump_int(jump_int(x, 32), 32)
        self._column = np.array(column, np.uint64)
        self._table = jump_table(size)
        self._rows = np.arange(8) * 256
        self._out = np.empty((size // group, LANE, group // LANE), np.uint64)

    def chunk(self):
        """The next values (a view, valid until the next call); empty at the end."""
        n = min(self.left, self.size)
        groups = -(-n // self.group)
        out = self._out[:groups]
        if n == 0:
            return out.reshape(-1)
        out[:, 0, :] = self._column.reshape(len(self._out), -1)[:groups]
        s = 1
        while s < LANE:
            jump(out[:, :s, :], s, out=out[:, s:2 * s, :])
            s *= 2
        self.left -= n
        if self.left:
            b = self._column.astype("<u8", copy=False).view(np.uint8).reshape(-1, 8) + self._rows
            self._column = np.bitwise_xor.reduce(self._table.reshape(-1)[b], axis=1)
        flat = out.reshape(-1)
        if n % self.group:                  # the last group goes past the end: its first values
            last = flat[(groups - 1) * self.group:]
            last[:] = out[groups - 1].T.reshape(-1)
        return flat[:n]
