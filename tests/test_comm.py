"""pgascol.Comm under MPI (tests/mpi_programs/cco_buf.py): every buffer
collective against the native communicator, constructors, fallbacks, misuse,
pickle-based methods and statistics; on one node with 1, 2, 3, 4 and 8 ranks,
and as a hierarchy of virtual nodes of 1, 2 and 3 ranks."""
from tests.mpi_harness import mpi_program_tests

test_comm_one_node = mpi_program_tests("cco_buf.py", timeout=300)
test_comm_vnodes_of_1 = mpi_program_tests("cco_buf.py", nprocs=(2, 3, 4), env={"PGASCOL_NODE_SIZE": "1"},
                                          timeout=300)
test_comm_vnodes_of_2 = mpi_program_tests("cco_buf.py", nprocs=(3, 4, 8), env={"PGASCOL_NODE_SIZE": "2"},
                                          timeout=300)
test_comm_vnodes_of_3 = mpi_program_tests("cco_buf.py", nprocs=(4, 8), env={"PGASCOL_NODE_SIZE": "3"},
                                          timeout=300)
