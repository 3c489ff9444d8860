"""pgascol.upc: UPC's collectives (UPC 1.3) on global arrays (pgascol.pgas).

    from pgascol import pgas, upc
    src = pgas.zeros(comm, 4, "int32", block=0)          # 4 ints on rank 0
    dst = pgas.zeros(comm, 4 * comm.size, "int32", block=4)
    upc.all_broadcast(dst, src, 16)                      # rank r's block of dst = src
    upc.all_reduce((dst, 0), src, upc.ADD, 4, 0)         # dst[0] = sum of src

src and dst are global arrays or (global array, element offset) pairs,
read as UPC reads pointers-to-shared (operand.py). flags combine one
UPC_IN_* and one UPC_OUT_* mode (0: both ALLSYNC). Every call takes
algorithm= (plan.ALGORITHMS; PGASCOL_UPC_<COLLECTIVE> sets a default).
Every rank must call with the same arguments; bad ones raise ArgumentError
on every rank before anything moves."""
from .flags import (UPC_IN_ALLSYNC, UPC_IN_MYSYNC, UPC_IN_NOSYNC, UPC_OUT_ALLSYNC,  # noqa: F401
                    UPC_OUT_MYSYNC, UPC_OUT_NOSYNC)
from .move import all_broadcast, all_exchange, all_gather, all_gather_all, all_permute, all_scatter  # noqa: F401
from .operators import (ADD, AND, FUNC, LOGAND, LOGOR, MAX, MIN, MULT, NONCOMM_FUNC, OPERATORS, OR,  # noqa: F401
                        TYPES, XOR)
from .plan import ALGORITHMS  # noqa: F401
from .reduce import all_prefix_reduce, all_reduce  # noqa: F401

__all__ = ["all_broadcast", "all_scatter", "all_gather", "all_gather_all", "all_exchange", "all_permute",
           "all_reduce", "all_prefix_reduce", "UPC_IN_ALLSYNC", "UPC_IN_MYSYNC", "UPC_IN_NOSYNC",
           "UPC_OUT_ALLSYNC", "UPC_OUT_MYSYNC", "UPC_OUT_NOSYNC", "ADD", "MULT", "LOGAND", "LOGOR", "AND", "OR",
           "XOR", "MIN", "MAX", "FUNC", "NONCOMM_FUNC", "OPERATORS", "TYPES", "ALGORITHMS"]
