"""Shared pytest setup for the test suite.

The ``mpi_jobs`` fixture is the cache, kept for the whole pytest run, behind
``tests.mpi_harness.program_tests``: each distinct MPI job (programs, rank
count, environment, ...) is launched once and all of its pytest items read
their outcome from that one run.
"""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.mpi_harness import MPIJobCache, find_launcher

# Programs in mpi_programs/ only make sense under the MPI launcher; never let
# pytest collect them in its own process.
collect_ignore_glob = ["mpi_programs/*"]
# mpi4py's vendored suite runs under the launcher (test_mpi4py_suite.py);
# only its two collective modules also run here, in one process.
collect_ignore = [str(p.relative_to(Path(__file__).parent)) for p in
                  (Path(__file__).parent / "mpi4py_suite").glob("*.py")
                  if p.name not in ("test_cco_buf.py", "test_cco_vec.py")]


# What a job learns is kept in the calibration file (pgascol/node/calibration.py):
# never in the user's ~/.cache from the tests. tests/mpi_harness.py gives each
# MPI job a file of its own, so that every job starts as a new user's would.
_CALIBRATION_DIR = tempfile.mkdtemp(prefix="pgascol-test-calibration-")
atexit.register(shutil.rmtree, _CALIBRATION_DIR, True)
os.environ.setdefault("PGASCOL_CALIBRATION", os.path.join(_CALIBRATION_DIR, "calibration.json"))


def pytest_addoption(parser):
    parser.addoption("--hosts", type=int, default=None, metavar="N",
                     help="launch the multi-rank tests across N emulated hosts (PGASCOL_TEST_HOSTS; root needed)")


def pytest_configure(config):
    # before collection: the table's items depend on it (one-node tests skip)
    if config.getoption("--hosts") is not None:
        os.environ["PGASCOL_TEST_HOSTS"] = str(config.getoption("--hosts"))


@pytest.fixture(scope="session")
def mpi_jobs():
    return MPIJobCache()


def pytest_report_header(config):
    try:
        prefix, impl = find_launcher()
    except Exception as exc:  # shown in the header; the MPI tests will fail
        return f"mpi launcher: unavailable ({exc})"
    hosts = os.environ.get("PGASCOL_TEST_HOSTS", "").strip()
    across = f", across {hosts} emulated hosts" if hosts not in ("", "0") else ""
    return f"mpi launcher: {' '.join(prefix)} ({impl}){across}"
