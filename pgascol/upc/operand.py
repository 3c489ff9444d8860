"""The operands of UPC's collectives: a global array, or (global array,
element offset), read as UPC reads a pointer-to-shared.

A pointer's target has an owner o (its affinity) and a local byte offset L
(its local index times the element size). UPC's collectives then treat the
memory from there as one of two shapes:

- one member's block (`shared [] char[len]`: broadcast's and scatter's
  src, gather's dst): len bytes of o's part from L;
- one block per member (`shared [k] char[k*THREADS]`: every other operand):
  the pointer must have affinity to rank 0 and phase 0 (UPC's rule), and
  member r's block is k bytes of r's part from the same L.

Both must lie inside the parts; a block per member must also lie inside one
block of the array's layout, so that it is the same memory as the global
elements off + r*B onwards."""
import operator

import numpy as np

from ..errors import ArgumentError
from ..pgas.array import GlobalArray
from ..pgas.layout import BlockCyclic


class Operand:
    __slots__ = ("array", "offset", "owner", "local_byte", "itemsize", "what")

    def __init__(self, x, what):
        if isinstance(x, GlobalArray):
            array, offset = x, 0
        elif (isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], GlobalArray) and
              isinstance(x[1], (int, np.integer)) and not isinstance(x[1], bool)):
            array, offset = x[0], operator.index(x[1])
        else:
            raise ArgumentError("%s must be a global array or a (global array, element offset) pair, "
                                "not %r" % (what, type(x).__name__))
        array._live()
        if not 0 <= offset < array.size:
            raise ArgumentError("%s: offset %d out of range for an array of %d elements" % (what, offset, array.size))
        self.array, self.offset, self.what = array, offset, what
        self.owner, local = array.layout.locate(offset)
        self.itemsize = array.dtype.itemsize
        self.local_byte = local * self.itemsize

    def part_bytes(self, rank):
        return self.array.layout.local_size(rank) * self.itemsize

    def check_one(self, nbytes):
        """One member's block of nbytes (the owner's)."""
        if self.local_byte + nbytes > self.part_bytes(self.owner):
            raise ArgumentError("%s: %d bytes from element %d do not fit in rank %d's part of the array "
                                "(%d bytes from there)" % (self.what, nbytes, self.offset, self.owner,
                                                           self.part_bytes(self.owner) - self.local_byte))

    def check_each(self, nbytes):
        """One block of nbytes per member: affinity to rank 0, phase 0, inside one block and every part."""
        layout = self.array.layout
        if self.owner != 0:
            raise ArgumentError("%s must have affinity to rank 0 (UPC's rule for an array with a block per "
                                "rank), but element %d lives on rank %d" % (self.what, self.offset, self.owner))
        if isinstance(layout, BlockCyclic):
            if self.offset % layout.block:
                raise ArgumentError("%s must be at phase 0 (the start of a block; UPC's rule), but element "
                                    "%d is at phase %d of a block of %d" % (self.what, self.offset,
                                                                           self.offset % layout.block, layout.block))
            if nbytes > layout.block * self.itemsize:
                raise ArgumentError("%s: a block per rank of %d bytes does not fit in the array's blocks of "
                                    "%d elements (%d bytes)" % (self.what, nbytes, layout.block,
                                                                layout.block * self.itemsize))
        for r in range(layout.nranks):
            if self.local_byte + nbytes > self.part_bytes(r):
                raise ArgumentError("%s: rank %d's block of %d bytes (from element %d on) does not fit in its "
                                    "part of the array (%d bytes there)" % (self.what, r, nbytes, self.offset,
                                                                            max(self.part_bytes(r) - self.local_byte, 0)))

    def address(self, rank):
        """The address of this operand's block in rank's part (a node peer's)."""
        return self.array.node_view(rank).ctypes.data + self.local_byte

    def view(self, nbytes):
        """The caller's own block as a uint8 numpy view (no copy)."""
        part = self.array.local().view(np.uint8)
        return part[self.local_byte:self.local_byte + nbytes]

    def key(self):
        return self.array, self.offset
