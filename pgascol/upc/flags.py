"""UPC's synchronisation flags (UPC 1.3, upc_collective.h), combined with |.

One IN mode and one OUT mode; a side given no mode is ALLSYNC, so 0 means
UPC_IN_ALLSYNC | UPC_OUT_ALLSYNC. ALLSYNC: no member moves data before every
member entered (IN) / nobody returns before every member finished (OUT).
MYSYNC: a member moves data only of members that entered (IN) / returns once
nobody will read or write its data again in this call (OUT). NOSYNC: no
synchronisation at all (the caller is responsible, as in UPC)."""
import numpy as np

from ..errors import ArgumentError

UPC_IN_ALLSYNC = 1
UPC_IN_MYSYNC = 2
UPC_IN_NOSYNC = 4
UPC_OUT_ALLSYNC = 8
UPC_OUT_MYSYNC = 16
UPC_OUT_NOSYNC = 32

#: The modes of one side, as parse_flags returns them.
ALLSYNC, MYSYNC, NOSYNC = "all", "my", "no"

_IN = {UPC_IN_ALLSYNC: ALLSYNC, UPC_IN_MYSYNC: MYSYNC, UPC_IN_NOSYNC: NOSYNC}
_OUT = {UPC_OUT_ALLSYNC: ALLSYNC, UPC_OUT_MYSYNC: MYSYNC, UPC_OUT_NOSYNC: NOSYNC}
_ALL_BITS = 63


def parse_flags(flags, what):
    """flags -> (in mode, out mode); ArgumentError for anything UPC does not define."""
    if isinstance(flags, bool) or not isinstance(flags, (int, np.integer)) or flags < 0 or flags & ~_ALL_BITS:
        raise ArgumentError("%s: flags must be UPC_IN_* | UPC_OUT_* (an int of at most one IN and one "
                            "OUT mode), not %r" % (what, flags))
    flags = int(flags)
    ins = [m for bit, m in _IN.items() if flags & bit]
    outs = [m for bit, m in _OUT.items() if flags & bit]
    if len(ins) > 1 or len(outs) > 1:
        raise ArgumentError("%s: flags %#x combine %s; give at most one IN and one OUT mode"
                            % (what, flags, "several IN modes" if len(ins) > 1 else "several OUT modes"))
    return (ins[0] if ins else ALLSYNC), (outs[0] if outs else ALLSYNC)
