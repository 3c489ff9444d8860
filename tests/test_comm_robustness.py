"""pgascol.Comm robustness: partial errors become timeouts naming the
operation (tests/mpi_programs/errors.py); a rank killed mid-collective
ends the job without leaving a /dev/shm segment behind."""
import glob
import os
import subprocess
import sys
import time

from tests.mpi_harness import REPO_ROOT, cleaned_mpi_shm, find_launcher, mpi_program_tests

test_partial_errors = mpi_program_tests("errors.py", nprocs=(2, 3, 4), env={"PGASCOL_TIMEOUT": "3"},
                                        timeout=120)
# Every rank its own node, and nodes of 2: the others wait in MPI, not in the engine.
test_partial_errors_hier1 = mpi_program_tests("errors.py", nprocs=(2, 3, 4),
                                              env={"PGASCOL_TIMEOUT": "3", "PGASCOL_NODE_SIZE": "1"},
                                              timeout=120)
test_partial_errors_hier2 = mpi_program_tests("errors.py", nprocs=(3, 4),
                                              env={"PGASCOL_TIMEOUT": "3", "PGASCOL_NODE_SIZE": "2"},
                                              timeout=120)

KILLER = """
import os, signal, numpy as np
from mpi4py import MPI
import pgascol
c = pgascol.Comm(MPI.COMM_WORLD)
x = np.ones(1 << 16)
for i in range(200):
    if i == 50 and c.Get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    c.Allreduce(MPI.IN_PLACE, x)
"""


def test_killed_rank_leaves_no_segment_and_no_spinner():
    before = set(glob.glob("/dev/shm/pgascol-*"))
    launcher, _ = find_launcher()
    env = {**os.environ, "PGASCOL_TIMEOUT": "10",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.monotonic()
    with cleaned_mpi_shm():  # MPICH's own segment, left by the killed rank
        proc = subprocess.run([*launcher, "-n", "3", sys.executable, "-c", KILLER], env=env,
                              capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert proc.returncode != 0
    assert time.monotonic() - start < 60
    assert set(glob.glob("/dev/shm/pgascol-*")) <= before
