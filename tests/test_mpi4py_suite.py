"""mpi4py's own collective tests (test_cco_buf.py, test_cco_vec.py from the
mpi4py 4.1.2 sdist, vendored in tests/mpi4py_suite/) with COMM replaced by a
pgascol.Comm over COMM_WORLD, a Dup and a Split; 1 to 4 ranks, one node and
virtual nodes."""
import json
import os
import shlex
import subprocess
import sys

import pytest

from tests.mpi_harness import REPO_ROOT, cleaned_mpi_shm, find_launcher

RUNNER = REPO_ROOT / "tests" / "mpi4py_suite" / "run_suite.py"
CASES = [(1, 0), (2, 0), (3, 0), (4, 0), (2, 1), (3, 1), (3, 2), (4, 2), (4, 3)]


@pytest.mark.parametrize(("np_", "node_size"), CASES,
                         ids=["np%d-%s" % (n, "vnodes%d" % k if k else "node") for n, k in CASES])
def test_mpi4py_cco_suite(np_, node_size):
    _run_suite(np_, node_size, "block")


def test_mpi4py_cco_suite_roundrobin():
    """Virtual nodes of 2 dealt round robin (nodes {0, 2} and {1, 3}; the
    suite's Split reverses and halves them): non-consecutive placement."""
    _run_suite(4, 2, "roundrobin")


def _run_suite(np_, node_size, node_map):
    launcher, _ = find_launcher()
    env = {**os.environ, "PGASCOL_TIMEOUT": "30", "PGASCOL_NODE_SIZE": str(node_size),
           "PGASCOL_NODE_MAP": node_map,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with cleaned_mpi_shm():  # a failing run may end before MPI_Finalize
        proc = subprocess.run([*launcher, "-n", str(np_), sys.executable, str(RUNNER)], env=env,
                              capture_output=True, text=True, timeout=400, cwd=REPO_ROOT)
    tail = (proc.stdout[-3000:] + "\n" + proc.stderr[-5000:])
    assert proc.returncode == 0, tail
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["ok"], tail
    for rank in summary["ranks"]:
        assert rank["run"] == 117 and not rank["failures"], rank
        stats = rank["stats"]
        # the collectives really ran through pgascol (the fake-GPU array
        # backends of the suite go to MPI by design: they are not buffers)
        accelerated = {"inline", "cico", "cma", "hier"}
        for op in ("Barrier", "Bcast", "Reduce", "Allreduce", "Gather", "Gatherv", "Scatter",
                   "Scatterv", "Allgather", "Allgatherv", "Reduce_scatter", "Reduce_scatter_block"):
            assert accelerated & set(stats.get(op, {})), (op, stats)
        for op in ("Alltoall", "Alltoallv"):      # hierarchical on any placement
            assert accelerated & set(stats.get(op, {})), (op, stats)
        hier = node_size and node_size < np_
        for op in ("Scan", "Exscan"):
            # hierarchical on consecutive nodes only; MPI's own with interleaved ones
            if hier and node_map == "roundrobin" and node_size > 1:
                assert set(stats.get(op, {})) == {"mpi"}, (op, stats)
            else:
                assert accelerated & set(stats.get(op, {})), (op, stats)


COMPARE = REPO_ROOT / "tests" / "mpi4py_suite" / "compare.py"
# Rank counts of the whole-suite comparison per MPI (CI runs this file under
# both): each costs two runs of the suite (np=3 under MPICH about 9 minutes
# of CI's 60, left out; its collectives run at np 3 in test_mpi4py_cco_suite).
# compare.py takes any count by hand.
WHOLE_SUITE_NP = {"mpich": (2,), "openmpi": (2,)}


@pytest.mark.parametrize("np_", sorted({n for counts in WHOLE_SUITE_NP.values() for n in counts}))
def test_mpi4py_whole_suite_same_outcomes(np_):
    """mpi4py's whole test suite (vendored, tests/mpi4py_suite/) run plain and
    in zero-code mode (`python -m pgascol`): every test has the same outcome
    on every rank (compare.py; only its documented ACCEPTED tests may differ)."""
    launcher, impl = find_launcher()
    if np_ not in WHOLE_SUITE_NP.get(impl, (2,)):
        pytest.skip("np=%d is compared under %s" % (np_, ", ".join(
            "%s (np %s)" % (k, ", ".join(map(str, v))) for k, v in WHOLE_SUITE_NP.items())))
    env = {**os.environ, "PGASCOL_TIMEOUT": "30",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    for name in ("PGASCOL_NODE_SIZE", "PGASCOL_NODE_MAP"):
        env.pop(name, None)
    with cleaned_mpi_shm():
        proc = subprocess.run([sys.executable, str(COMPARE), "--np", str(np_), "--timeout", "1200",
                               "--launcher", shlex.join(launcher)],
                              env=env, capture_output=True, text=True, timeout=2500, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " 0 not accepted" in proc.stdout, proc.stdout


def test_a_run_past_its_timeout_says_where_each_rank_was(tmp_path):
    """compare.py's run() cut short by its timeout (the suite takes longer
    than 8 s) returns "timeout" with each rank's Python stacks, which the
    comparison prints: a hang in CI says where every rank waits."""
    sys.path.insert(0, str(COMPARE.parent))
    try:
        import compare
    finally:
        sys.path.pop(0)
    launcher, _ = find_launcher()
    with cleaned_mpi_shm():
        status, text = compare.run("plain", 2, launcher, 8, str(tmp_path))
    assert status == "timeout", (status, text)
    for rank in (0, 1):
        assert "rank %d, where it was when the run timed out" % rank in text, text
    assert "outcomes.py" in text and "most recent call first" in text, text
