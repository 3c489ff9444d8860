"""Rank order whatever the placement of ranks on nodes
(tests/mpi_programs/placement.py): every buffer collective of
pgascol.Comm against numpy references, on virtual nodes of 1, 2 and 3 ranks
dealt round robin (PGASCOL_NODE_MAP=roundrobin: nodes interleaved in rank
order, unequal nodes) and, for comparison, consecutive (block) and one node."""
from tests.mpi_harness import mpi_program_tests

PROGRAM = "placement.py"


def _env(k, node_map):
    return {"PGASCOL_NODE_SIZE": str(k), "PGASCOL_NODE_MAP": node_map}


# round robin: k=1 -> one rank per node (consecutive again); k=2: np=3 -> {0,2} {1},
# np=4 -> {0,2} {1,3}, np=8 -> {0,4} {1,5} {2,6} {3,7}; k=3: np=4 -> {0,2} {1,3},
# np=8 -> {0,3,6} {1,4,7} {2,5}
test_roundrobin_vnodes_of_1 = mpi_program_tests(PROGRAM, nprocs=(3,), env=_env(1, "roundrobin"), timeout=300)
test_roundrobin_vnodes_of_2 = mpi_program_tests(PROGRAM, nprocs=(3, 4, 8), env=_env(2, "roundrobin"),
                                                timeout=400)
test_roundrobin_vnodes_of_3 = mpi_program_tests(PROGRAM, nprocs=(4, 8), env=_env(3, "roundrobin"), timeout=400)
# consecutive (the hierarchical Scan/Exscan): np=3 -> {0,1} {2}, np=4 -> {0,1} {2,3} (equal nodes);
# k=3, np=8 -> {0,1,2} {3,4,5} {6,7}
test_block_vnodes_of_2 = mpi_program_tests(PROGRAM, nprocs=(3, 4), env=_env(2, "block"), timeout=300)
test_block_vnodes_of_3 = mpi_program_tests(PROGRAM, nprocs=(8,), env=_env(3, "block"), timeout=400)
# one node: the engine alone
test_one_node = mpi_program_tests(PROGRAM, nprocs=(3,), timeout=300)
