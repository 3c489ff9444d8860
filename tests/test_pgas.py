"""pgascol.pgas (tests/mpi_programs/pgas_arrays.py) on one node with 1, 2, 3, 4 and 8 ranks and
on virtual nodes of 1, 2 and 3 ranks (the MPI RMA paths)."""
from tests.mpi_harness import mpi_program_tests
test_pgas_one_node = mpi_program_tests("pgas_arrays.py", timeout=300)
test_pgas_vnodes_1 = mpi_program_tests("pgas_arrays.py", nprocs=(2, 3), env={"PGASCOL_NODE_SIZE": "1"}, timeout=300)
test_pgas_vnodes_2 = mpi_program_tests("pgas_arrays.py", nprocs=(4,), env={"PGASCOL_NODE_SIZE": "2"}, timeout=300)
test_pgas_vnodes_3 = mpi_program_tests("pgas_arrays.py", nprocs=(8,), env={"PGASCOL_NODE_SIZE": "3"}, timeout=300)
