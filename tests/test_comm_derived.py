"""pgascol.Comm with derived datatypes and MPI.BOTTOM in the data-movement
collectives (tests/mpi_programs/datatype.py): ranks mixing derived and
predefined types with the same signature all run on pgascol (packed bytes),
in place, zero counts, layouts that do not fit, reductions left to MPI; on
one node with 1, 2, 3, 4 and 8 ranks, and as a hierarchy of virtual nodes of
1 and 2 ranks."""
from tests.mpi_harness import mpi_program_tests

test_derived_one_node = mpi_program_tests("datatype.py", timeout=400)
test_derived_vnodes_of_1 = mpi_program_tests("datatype.py", nprocs=(2, 3, 4), env={"PGASCOL_NODE_SIZE": "1"},
                                             timeout=400)
test_derived_vnodes_of_2 = mpi_program_tests("datatype.py", nprocs=(3, 4, 8), env={"PGASCOL_NODE_SIZE": "2"},
                                             timeout=400)
