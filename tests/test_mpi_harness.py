"""Tests of the MPI test harness itself (tests/mpi_harness.py), using
tests/mpi_programs/harness_selftest.py (and harness_selftest_peer.py, which
shares its launches)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.mpi_harness import (DEFAULT_NPROCS, MPITestFailure, Run, cleaned_mpi_shm, emulated_hosts,
                               find_launcher, list_test_functions, list_tests, program_tests, run_mpi,
                               selected_nprocs)

SELFTEST = "harness_selftest.py"
SELFTEST_ENV = {"HARNESS_SELFTEST_MARKER": "from-test_mpi_harness"}
# Functions that hang or crash a job on purpose; run separately below.
FAILURE_SCENARIOS = ("test_hangs_on_rank0", "test_crashes_on_rank1")


def _fails_on_rank1(np):
    # Strict: if the harness ever stopped noticing the failure, XPASS fails.
    if np > 1:
        return pytest.mark.xfail(strict=True, reason="raises on rank 1 on purpose")
    return ()


test_program = program_tests([
    Run(SELFTEST, DEFAULT_NPROCS, env=SELFTEST_ENV,
        marks={"test_fails_on_rank1": _fails_on_rank1}, exclude=FAILURE_SCENARIOS)])


def test_launcher_is_detected():
    prefix, impl = find_launcher()
    assert impl in ("mpich", "openmpi")
    if impl == "openmpi":
        assert "--oversubscribe" in prefix


def test_functions_are_listed_in_definition_order():
    names = list_test_functions(SELFTEST)
    assert names[:2] == ["test_allreduce_sum", "test_bcast_from_every_root"]
    assert names[-2:] == list(FAILURE_SCENARIOS)


@pytest.mark.parametrize("form", ["name", "relative to the working directory", "absolute"])
def test_rank_side_runs_by_hand(tmp_path, form):
    """`python -m tests.mpi_harness -k NAME PROGRAM DIR`, as one reruns a
    single function by hand: the program may be named as in a Run,
    relative to the working directory, or absolutely."""
    repo = Path(__file__).resolve().parent.parent
    program = {"name": SELFTEST,
               "relative to the working directory": "tests/mpi_programs/" + SELFTEST,
               "absolute": str(repo / "tests" / "mpi_programs" / SELFTEST)}[form]
    prefix, _ = find_launcher()
    subprocess.run([*prefix, "-n", "1", sys.executable, "-m", "tests.mpi_harness",
                    "-k", "test_allreduce_sum", program, str(tmp_path)],
                   cwd=repo, check=True, timeout=120)
    log = json.loads((tmp_path / "rank-0.json").read_text())
    assert log["setup_error"] is None and log["finished"]
    assert list(log["results"]) == ["test_allreduce_sum"]
    assert log["results"]["test_allreduce_sum"]["ok"], log["results"]


def test_programs_share_a_launch():
    """Programs of one launch are loaded in the order given, their functions
    named <stem>::<function> and run one program after the other; the
    program arguments (after "--", options among them) go to every program."""
    programs = (SELFTEST, "harness_selftest_peer.py")
    names = list_tests(programs)
    assert names[0] == "harness_selftest::test_allreduce_sum"
    assert names[-2:] == ["harness_selftest_peer::test_runs_after_the_first_program",
                          "harness_selftest_peer::test_arguments"]
    select = [names[0], *names[-2:]]
    result = run_mpi(programs, np=2, args=["-k", "not an option"], select=select)
    result.check()
    assert list(result.ranks[1].results) == select
    with pytest.raises(ValueError):
        list_tests((SELFTEST, SELFTEST))


def test_np_restriction(monkeypatch):
    monkeypatch.setenv("PGASCOL_TEST_NP", "2, 8")
    assert selected_nprocs(DEFAULT_NPROCS) == [2, 8]
    monkeypatch.delenv("PGASCOL_TEST_NP")
    assert selected_nprocs(DEFAULT_NPROCS) == list(DEFAULT_NPROCS)


def test_failure_is_reported_per_rank():
    name = "test_fails_on_rank1"
    result = run_mpi(SELFTEST, np=3, select=[name, "test_still_in_step_after_failure"])

    assert result.failed_ranks(name) == [1]
    assert [r.state(name) for r in result.ranks] == ["passed", "failed", "passed"]
    assert "RuntimeError: deliberate failure on rank 1" in result.ranks[1].results[name].error
    # The barrier after the failure kept the ranks in step.
    assert result.passed("test_still_in_step_after_failure")
    result.check_exit()

    with pytest.raises(MPITestFailure) as failure:
        result.check(name)
    message = str(failure.value)
    assert "did not pass on rank(s) 1;" in message
    assert "rank 0: passed" in message and "rank 2: passed" in message
    assert "--- rank 1: traceback ---" in message
    assert "RuntimeError: deliberate failure on rank 1" in message


def test_timeout_names_stuck_function_and_leaves_no_processes():
    name = "test_hangs_on_rank0"
    result = run_mpi(SELFTEST, np=2, select=["test_allreduce_sum", name], timeout=8)

    assert result.timed_out
    assert result.passed("test_allreduce_sum")
    assert [r.state(name) for r in result.ranks] == ["running", "passed"]
    with pytest.raises(MPITestFailure) as failure:
        result.check(name)
    message = str(failure.value)
    assert "TIMED OUT after 8 s" in message
    assert "rank 0: STUCK/CRASHED: was still running it when killed" in message
    # Rank 0's stack dump shows where it hung.
    assert f"in {name}" in result.ranks[0].stack

    # Nothing of the job survives: not the ranks, not the launcher's helpers
    # (across emulated hosts, only the hosts' own PID 1s and their unshare).
    hosts = emulated_hosts()
    cluster = set() if hosts is None else hosts.pids
    assert not [p for p in psutil.Process().children(recursive=True) if p.pid not in cluster]
    if hosts is None:
        for report in result.ranks:
            assert not psutil.pid_exists(report.pid) or \
                psutil.Process(report.pid).status() == psutil.STATUS_ZOMBIE


def test_crashed_rank_is_reported():
    name = "test_crashes_on_rank1"
    result = run_mpi(SELFTEST, np=3, select=[name], timeout=60)

    assert not result.timed_out
    assert result.ranks[1].state(name) == "running"
    with pytest.raises(MPITestFailure) as failure:
        result.check()
    message = str(failure.value)
    assert "rank 1: STUCK/CRASHED: died inside it" in message
    assert f"rank 1: inside {name}" in message  # from the clean-exit part


def _processes_with(marker):
    """The live processes whose environment holds HARNESS_SELFTEST_MARKER=marker."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("HARNESS_SELFTEST_MARKER") == marker and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def test_ranks_do_not_outlive_a_killed_host():
    """The host (a pytest process, say) is SIGKILLed while its job hangs:
    nobody is left to kill the job, and hydra's ranks left the host's process
    group by setsid(2). Each rank's alarm (PGASCOL_TEST_KILL_AFTER) ends it anyway."""
    marker = "orphan-%d" % time.monotonic_ns()
    with cleaned_mpi_shm():             # MPICH's segment: the dead host cannot remove it
        _orphans_die_by_their_alarm(marker)


def _orphans_die_by_their_alarm(marker):
    host = subprocess.Popen([sys.executable, "-c", (
        "from tests.mpi_harness import run_mpi\n"
        "run_mpi(%r, np=2, select=['test_hangs_on_rank0'], timeout=600,\n"
        "        env={'HARNESS_SELFTEST_MARKER': %r, 'PGASCOL_TEST_KILL_AFTER': '5'})\n" % (SELFTEST, marker))],
        cwd=Path(__file__).resolve().parent.parent)
    try:
        deadline = time.monotonic() + 60
        while len([p for p in _processes_with(marker) if "tests.mpi_harness" in p.cmdline()]) < 2:
            assert time.monotonic() < deadline, "the job's ranks never started"
            time.sleep(0.1)
    finally:
        host.kill()
        host.wait()
    orphans = _processes_with(marker)
    assert orphans, "the job ended with its host: nothing to test"
    gone, alive = psutil.wait_procs(orphans, timeout=30)
    assert not alive, "survived their host by 30 s: %s" % [(p.pid, p.cmdline()[:4]) for p in alive]


def test_only_a_launcher_that_failed_to_start_is_launched_again():
    """A job is launched once more only when the launcher failed before any
    rank reported, with a start-up message of its own."""
    from types import SimpleNamespace as NS

    from tests.mpi_harness import _launcher_failed_to_start
    failed, ok = NS(returncode=213), NS(returncode=0)
    silent, started = [NS(pid=None), NS(pid=None)], [NS(pid=123), NS(pid=None)]
    pmix = "--\nThe PMIx server's listener thread failed to start. We cannot\ncontinue.\n--"
    assert _launcher_failed_to_start(failed, False, pmix, silent)
    assert not _launcher_failed_to_start(failed, False, pmix, started)      # a rank ran: its result counts
    assert not _launcher_failed_to_start(failed, True, pmix, silent)        # a timeout is a failure
    assert not _launcher_failed_to_start(ok, False, pmix, silent)
    assert not _launcher_failed_to_start(failed, False, "Segmentation fault", silent)


ACROSS_HOSTS = """
import json, sys
from tests.mpi_harness import run_mpi
r = run_mpi(%r, np=3, select=["test_allreduce_sum", "test_hangs_on_rank0"], timeout=15)
print(json.dumps({"timed_out": r.timed_out, "passed": r.passed("test_allreduce_sum"),
                  "states": [x.state("test_hangs_on_rank0") for x in r.ranks],
                  "hosts": [x.host for x in r.ranks], "stacks": [x.stack or "" for x in r.ranks]}))
""" % SELFTEST


def test_across_emulated_hosts_a_timeout_dumps_every_ranks_stack():
    """PGASCOL_TEST_HOSTS=2: a job of 3 ranks is placed 2 + 1 on two emulated
    hosts, and when it hangs the stack dump reaches the ranks of both hosts
    (signalled by the PIDs this side sees, not their hosts' own); after it
    nothing of the cluster is left."""
    from tests.cluster.hosts import why_unavailable
    why = why_unavailable()
    if why is not None:
        pytest.skip(why)
    before = set(Path("/run").glob("pgascol-emu-pt*"))
    job = subprocess.run([sys.executable, "-c", ACROSS_HOSTS], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parent.parent,
                         env={**os.environ, "PGASCOL_TEST_HOSTS": "2"})
    assert job.returncode == 0, job.stdout + job.stderr
    got = json.loads(job.stdout.strip().splitlines()[-1])
    assert got["timed_out"] and got["passed"]
    assert got["states"] == ["running", "passed", "passed"]
    h0, h1 = sorted(set(got["hosts"]))
    assert got["hosts"] == [h0, h0, h1], got["hosts"]
    assert "in test_hangs_on_rank0" in got["stacks"][0]
    assert all("in _rank_main" in s for s in got["stacks"]), got["stacks"]
    assert set(Path("/run").glob("pgascol-emu-pt*")) == before
    assert not [n for n in Path("/sys/class/net").iterdir() if n.name.startswith("pept")]   # its links
