"""A second self-test program for tests/mpi_harness.py, run in one launch
after harness_selftest.py (tests/test_mpi_harness.py): loaded in the same
processes after it, given the same program arguments."""

import sys

FIRST = sys.modules.get("harness_selftest")   # loaded before this program


def test_runs_after_the_first_program(comm):
    assert FIRST is not None and FIRST.__file__.endswith("harness_selftest.py")
    assert comm.allgather(comm.rank) == list(range(comm.size))


def test_arguments():
    assert sys.argv[1:] == ["-k", "not an option"]
