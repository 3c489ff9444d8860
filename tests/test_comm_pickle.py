"""pgascol.Comm's pickle-based methods (tests/mpi_programs/cco_obj.py)
against mpi4py's: on one node with 1, 2, 3, 4 and 8 ranks (path "shm"), and
on virtual nodes of 2 ranks (path "mpi": mpi4py's own methods; the misuse
test is left out there, as mpi4py leaves the ranks that did nothing wrong
blocked in MPI)."""
from tests.mpi_harness import mpi_program_tests

test_comm_pickle_one_node = mpi_program_tests("cco_obj.py", timeout=400)
test_comm_pickle_vnodes_of_2 = mpi_program_tests("cco_obj.py", nprocs=(4,), env={"PGASCOL_NODE_SIZE": "2"},
                                                 timeout=400,
                                                 exclude=("test_misuse_raises_everywhere_and_comm_stays_usable",))
