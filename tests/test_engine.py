"""The intra-node engine, every collective, under MPI with 1, 2, 3, 4 and 8
ranks, in four configurations so every size lands on both sides of every
threshold and each transfer method, Bcast shape, set of vector loops and
way of writing staging runs (tests/mpi_programs/engine.py)."""
from pgascol.engine._core import COLLECTIVES
from tests.mpi_harness import mpi_program_tests

SMALL = {"PGASCOL_INLINE_MAX": "64", "PGASCOL_CHUNK_BYTES": "4096", "PGASCOL_XCHG_CHUNK_BYTES": "4096",
         "PGASCOL_STAGING_BYTES": "16384"}
CMA_EVERYWHERE = {"PGASCOL_CMA_MIN_" + name.upper(): "0" for name in COLLECTIVES}

test_engine_defaults = mpi_program_tests("engine.py", timeout=600)
# ... with the baseline loops (no AVX2) and staging written with streaming
# stores in this one (the defaults write it with ordinary stores).
test_engine_small_no_cma = mpi_program_tests("engine.py", env={**SMALL, "PGASCOL_CMA": "0", "PGASCOL_SIMD": "0",
                                                              "PGASCOL_STREAM": "2"},
                                             exclude=("test_large_messages",), timeout=600)
test_engine_small_cma = mpi_program_tests("engine.py", env={**SMALL, **CMA_EVERYWHERE},
                                          exclude=("test_large_messages",), timeout=600)
# Bcast down a binary tree (every team of 2 or more), both copy methods.
test_engine_small_tree = mpi_program_tests("engine.py", env={**SMALL, **CMA_EVERYWHERE,
                                                            "PGASCOL_BCAST_TREE_MIN": "2",
                                                            "PGASCOL_BCAST_RADIX": "2",
                                                            "PGASCOL_CMA_MIN_BCAST": "20000"},
                                           exclude=("test_large_messages",), timeout=600)
