"""Shared pytest setup for the test suite.

The ``mpi_jobs`` fixture is the cache, kept for the whole pytest run, behind
``tests.mpi_harness.program_tests``: each distinct MPI job (programs, rank
count, environment, ...) is launched once and all of its pytest items read
their outcome from that one run.
"""

import pytest

from tests.mpi_harness import MPIJobCache, find_launcher

# Programs in mpi_programs/ only make sense under the MPI launcher; never let
# pytest collect them in its own process.
collect_ignore_glob = ["mpi_programs/*"]


@pytest.fixture(scope="session")
def mpi_jobs():
    return MPIJobCache()


def pytest_report_header(config):
    try:
        prefix, impl = find_launcher()
    except Exception as exc:  # shown in the header; the MPI tests will fail
        return f"mpi launcher: unavailable ({exc})"
    return f"mpi launcher: {' '.join(prefix)} ({impl})"
