"""Long random sequences of pgascol.Comm's buffer collectives (three
communicators in turn, every type and legal operator, sizes across every
threshold, in place, v forms with gaps, buffers overwritten on return),
each result checked against numpy (tests/mpi_programs/random_mix.py):
on one node with the defaults, with small thresholds (every transfer
method, a binary Bcast tree, streaming stores everywhere), with single copy
and AVX2 off, on virtual nodes (consecutive and round robin), and with
named segments and the path fixed by size."""
from pgascol.engine._core import COLLECTIVES
from tests.mpi_harness import mpi_program_tests

PROGRAM = "random_mix.py"
SMALL = {"PGASCOL_INLINE_MAX": "64", "PGASCOL_CHUNK_BYTES": "4096", "PGASCOL_XCHG_CHUNK_BYTES": "4096",
         "PGASCOL_STAGING_BYTES": "65536", "PGASCOL_RECV_STREAM_MIN": "1000", "PGASCOL_STREAM": "2",
         "PGASCOL_BCAST_TREE_MIN": "3", "PGASCOL_BCAST_RADIX": "2",
         **{"PGASCOL_CMA_MIN_" + name.upper(): "32768" for name in COLLECTIVES},
         "PGASCOL_TEST_EXPECT_CMA": "1"}

test_defaults = mpi_program_tests(PROGRAM, timeout=300)
test_small_thresholds = mpi_program_tests(PROGRAM, nprocs=(2, 3, 4, 8), env=SMALL, timeout=300)
test_no_cma_no_simd = mpi_program_tests(PROGRAM, nprocs=(2, 3), env={"PGASCOL_CMA": "0", "PGASCOL_SIMD": "0"},
                                        timeout=300)
test_vnodes_of_2 = mpi_program_tests(PROGRAM, nprocs=(3, 4, 8), env={"PGASCOL_NODE_SIZE": "2"}, timeout=300)
test_vnodes_of_3_roundrobin = mpi_program_tests(PROGRAM, nprocs=(4, 8), env={"PGASCOL_NODE_SIZE": "3",
                                                                              "PGASCOL_NODE_MAP": "roundrobin"},
                                                timeout=300)
test_named_by_size = mpi_program_tests(PROGRAM, nprocs=(4,), env={"PGASCOL_SEGMENT": "named", "PGASCOL_ADAPT": "0"},
                                       timeout=300)
