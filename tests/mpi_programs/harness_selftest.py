"""Self-test program for tests/mpi_harness.py (mpi4py + numpy only).

Besides ordinary tests it contains functions that misbehave on purpose, to
exercise the harness's failure reporting (see tests/test_mpi_harness.py):

* test_fails_on_rank1 raises on rank 1 (expected failure for np > 1);
* test_hangs_on_rank0 and test_crashes_on_rank1 hang or crash the whole job,
  so they are excluded from the normal run and only run on their own.
"""

import os
import time

import numpy as np
from mpi4py import MPI


def test_allreduce_sum(comm):
    mine = np.array([comm.rank], dtype=np.int64)
    total = np.empty_like(mine)
    comm.Allreduce(mine, total, op=MPI.SUM)
    assert total[0] == comm.size * (comm.size - 1) // 2
    assert comm.allreduce(comm.rank) == comm.size * (comm.size - 1) // 2


def test_bcast_from_every_root(comm):
    for root in range(comm.size):
        expected = np.arange(64, dtype=np.float64) + 1000 * root
        data = expected.copy() if comm.rank == root else np.zeros_like(expected)
        comm.Bcast(data, root=root)
        np.testing.assert_array_equal(data, expected)


def test_environment():
    # Takes no comm: the runner only passes it to functions that ask for it.
    assert os.environ["HARNESS_SELFTEST_MARKER"] == "from-test_mpi_harness"
    assert float(os.environ["PGASCOL_TIMEOUT"]) > 0


def test_fails_on_rank1(comm):
    # No collectives here: the other ranks must get to the barrier after it.
    if comm.size > 1 and comm.rank == 1:
        raise RuntimeError("deliberate failure on rank 1")


def test_still_in_step_after_failure(comm):
    # The runner's barrier after each function keeps ranks in step even
    # though rank 1 failed in the previous function.
    assert comm.allgather(comm.rank) == list(range(comm.size))


def test_hangs_on_rank0(comm):
    if comm.rank == 0:
        time.sleep(3600)


def test_crashes_on_rank1(comm):
    if comm.rank == 1:
        os._exit(70)  # dies without MPI_Finalize, like a segfaulting rank
