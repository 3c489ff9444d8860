"""What engine_collectives_results.py and engine_collectives_paths.py
share (one launch, the chapter test_engine_collectives of
tests/test_mpi_programs.py): the node team over COMM_WORLD they test,
made once per launch when the first of them loads, its rank and size, and
the inputs and numpy references of the reductions and data movement."""
import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.engine import _core

WORLD = MPI.COMM_WORLD
TEAM = pgascol.NodeTeam(WORLD)
T = TEAM.core
P, ME = T.size, T.rank

NUMPY_OP = {"SUM": np.add, "PROD": np.multiply, "MIN": np.minimum, "MAX": np.maximum,
            "LAND": np.logical_and, "LOR": np.logical_or, "LXOR": np.logical_xor,
            "BAND": np.bitwise_and, "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}


def code(dtype):
    name = {np.dtype(np.longdouble): "longdouble", np.dtype(np.clongdouble): "clongdouble",
            np.dtype(np.bool_): "bool"}.get(np.dtype(dtype), np.dtype(dtype).name)
    return _core.DTYPES[name]


def contribution(rank, n, dtype, salt=0):
    """Rank r's input: small integers so sums/products stay exact."""
    i = np.arange(n, dtype=np.int64)
    if np.dtype(dtype) == np.bool_:
        return ((i + rank + salt) % 3 == 0)
    base = (i * 7 + rank * 3 + salt) % 5 + 1  # 1..5: products of 8 ranks fit in int32/float32
    return base.astype(dtype)


def reference(op, dtype, n, ranks, salt=0):
    acc = contribution(ranks[0], n, dtype, salt)
    for r in ranks[1:]:
        acc = NUMPY_OP[op](acc, contribution(r, n, dtype, salt))
    return acc.astype(dtype)


def valid_ops(dtype):
    return [op for op in NUMPY_OP if _core.op_valid(_core.OPS[op], code(dtype))]


def _block_of(rank, n, salt):
    return ((np.arange(n) * 11 + rank * 7 + salt) % 250 + 1).astype(np.uint8)
