"""Zero-code-change mode: `mpiexec -n N python -m pgascol script.py [args]`
runs an unmodified mpi4py script with MPI.COMM_WORLD replaced by a
pgascol.Comm; an uncaught exception aborts the job; `python -m pgascol info`
still works."""
import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from tests.mpi_harness import REPO_ROOT, cleaned_mpi_shm, find_launcher

# Whole scripts, launched as `mpiexec python -m pgascol SCRIPT` rather than
# through tests/mpi_harness.py: that command is what is tested (COMM_WORLD
# replaced before the script runs, its arguments, an uncaught exception
# aborting the job), and comm_world_predefined.py also runs under plain
# mpi4py. Under the harness, its runner would be the main program and would
# catch the exception.
SCRIPTS = REPO_ROOT / "tests" / "zero_code_scripts"
SCRIPT = SCRIPTS / "plain_mpi4py.py"


def _run(np_, *args, timeout=120, env=None, cpus=None):
    """`cpus`: run the job on these CPUs only (the launcher's affinity,
    which its ranks inherit)."""
    launcher, _ = find_launcher()
    full_env = {**os.environ, "PGASCOL_TIMEOUT": "20", **(env or {}),
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with cleaned_mpi_shm():  # a script that fails aborts the job before MPI_Finalize
        return subprocess.run([*launcher, "-n", str(np_), sys.executable, "-m", "pgascol", *args],
                              env=full_env, capture_output=True, text=True, timeout=timeout,
                              cwd=REPO_ROOT, preexec_fn=cpus and (lambda: os.sched_setaffinity(0, cpus)))


def _info(**env):
    """`python -m pgascol info` without a launcher (an MPI singleton; Open
    MPI 5 leaves its segment behind then, hence the cleanup)."""
    with cleaned_mpi_shm():
        return subprocess.run([sys.executable, "-m", "pgascol", "info"], capture_output=True, text=True,
                              cwd=REPO_ROOT, timeout=60, env={**os.environ, **env})


@pytest.mark.parametrize("np_", [1, 2, 4])
def test_unmodified_script_runs_on_pgascol(np_):
    proc = _run(np_, str(SCRIPT), "hello")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "COMM_WORLD is pgascol.comm._comm.Comm; argv=['hello']" in proc.stdout
    assert "'Allreduce': {'inline'" in proc.stdout or "'Allreduce': {'cico'" in proc.stdout, proc.stdout


@pytest.mark.parametrize("np_", [1, 2])
def test_a_job_starts_without_numpy_or_the_command_line_tool(np_):
    # a rank's start-up is its imports: numpy (about 80 ms) waits for the
    # first call that needs it, and a program runs without pgascol.tools
    code = ("import sys; from mpi4py import MPI; w = MPI.COMM_WORLD; w.Barrier(); w.bcast(1); "
            "w.allgather((1, 'x')); w.Allreduce(bytearray(8), bytearray(8)); "
            "loaded = sorted({m.split('.')[0] for m in sys.modules if m.startswith(('numpy', 'pgascol.tools'))}); "
            "import numpy; a = numpy.ones(4); b = numpy.empty(4); w.Allreduce(a, b); "
            "sys.stdout.write('loaded %s %s sum %s\\n' % (loaded, type(w).__module__, b.tolist()))")
    proc = _run(np_, "-c", code)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = "loaded [] pgascol.comm._comm sum %s" % ([float(np_)] * 4)
    assert proc.stdout.count(expected) == np_, proc.stdout


def test_virtual_nodes_through_zero_code_mode():
    proc = _run(4, str(SCRIPT), env={"PGASCOL_NODE_SIZE": "2"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "'Allreduce': {'hier': 1}" in proc.stdout, proc.stdout


PREDEFINED = SCRIPTS / "comm_world_predefined.py"


@pytest.mark.parametrize("np_, node_size", [(1, None), (2, None), (3, None), (4, None), (3, "2"), (4, "1")])
def test_comm_world_behaves_as_the_predefined_constant(np_, node_size):
    """free() a no-op, Free() MPI's error, pickled by name, equality,
    fromhandle, mpi4py's per-communicator lock of the pickle-based methods
    (threads calling bcast on one communicator at once)."""
    proc = _run(np_, str(PREDEFINED), "zero-code", env=node_size and {"PGASCOL_NODE_SIZE": node_size})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "predefined: all checks passed (Comm)" in proc.stdout, proc.stdout


def test_the_predefined_checks_hold_for_plain_mpi4py():
    """The same script without pgascol: what it checks is mpi4py's behaviour."""
    launcher, _ = find_launcher()
    with cleaned_mpi_shm():
        proc = subprocess.run([*launcher, "-n", "2", sys.executable, str(PREDEFINED)], capture_output=True,
                              text=True, timeout=120, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "predefined: all checks passed (Intracomm)" in proc.stdout, proc.stdout


def test_uncaught_exception_aborts_the_job():
    start = time.monotonic()
    proc = _run(3, str(SCRIPT), "fail", timeout=60)
    assert proc.returncode != 0
    assert "deliberate failure on the last rank" in proc.stderr
    assert time.monotonic() - start < 30     # aborted, not a timeout


def test_command_and_info_still_work():
    proc = _run(2, "-c", "from mpi4py import MPI; import pgascol; "
                "assert isinstance(MPI.COMM_WORLD, pgascol.Comm); MPI.COMM_WORLD.Barrier()")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    info = _info()
    assert info.returncode == 0 and "pgascol" in info.stdout, info.stdout + info.stderr


def test_info_shows_the_bcast_shape():
    def info(**env):
        return _info(**env).stdout
    assert "flat pull below 16 ranks, pipelined 4-nomial tree from 16 (this team: flat)" in info()
    assert "flat pull at every team size" in info(PGASCOL_BCAST_TREE_MIN="0")
    assert "pipelined 2-nomial tree from 1 (this team: tree)" in info(PGASCOL_BCAST_TREE_MIN="1",
                                                                       PGASCOL_BCAST_RADIX="2")


def test_info_shows_the_reduction_windows():
    """Oversubscribed teams run reductions whose blocks fit in one window."""
    proc = _run(2, "info", cpus={min(os.sched_getaffinity(0))})  # 2 ranks on 1 CPU
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("reductions:")]
    assert lines and all("whole in one window up to" in line for line in lines), proc.stdout
    one = _info().stdout
    assert "reductions: partitioned copy-in/copy-out" in one and "one window" not in one, one


def test_info_shows_the_run_time_path_choice():
    def info(**env):
        return _info(**env).stdout
    assert "no run-time switch to single copy (PGASCOL_ADAPT)" in info(PGASCOL_ADAPT="0")
    assert "no run-time switch to single copy (PGASCOL_ADAPT)" in info(PGASCOL_CMA="0")
    assert "paths:      learned per collective and size class" in info()
    assert "the built-in thresholds only (PGASCOL_TUNE=0)" in info(PGASCOL_TUNE="0")
    out = info(PGASCOL_ADAPT_MIN="65536", PGASCOL_CMA_MIN_GATHER="0")
    if "UNAVAILABLE" not in out and "disabled for teams" not in out:
        # the team's order (COLLECTIVES); Gather fixed by its threshold
        assert ("... and Reduce, Allreduce, Gatherv, Allgather, Allgatherv, Alltoall, Alltoallv, "
                "Reduce_scatter, Reduce_scatter_block, Scan, Exscan from 64 KiB") in out, out


def test_info_shows_the_staging_stores_and_refuses_bad_variables():
    assert "streaming stores while measured 3x cheaper" in _info().stdout
    assert "streaming stores never (PGASCOL_STREAM)" in _info(PGASCOL_STREAM="0").stdout
    assert "streaming stores always (PGASCOL_STREAM)" in _info(PGASCOL_STREAM="2").stdout
    bad = _info(PGASCOL_STREAM="3")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert bad.stderr.strip() == "pgascol info: stream (PGASCOL_STREAM) must be 0, 1 or 2 (got 3)"


def test_info_shows_the_vector_loops():
    from pgascol.engine import _core
    cpu = "AVX2" if _core.cpu_simd() == "avx2" else "no AVX2"
    used = "AVX2" if cpu == "AVX2" else "the baseline loops"
    assert "vectors:    copies and reduction kernels use %s (PGASCOL_SIMD=1; this CPU: %s)" % (used, cpu) \
        in _info().stdout
    assert "use the baseline loops (PGASCOL_SIMD=0; this CPU: %s)" % cpu in _info(PGASCOL_SIMD="0").stdout
    bad = _info(PGASCOL_SIMD="2")
    assert bad.returncode == 2 and bad.stderr.strip() == "pgascol info: simd (PGASCOL_SIMD) must be 0 or 1 (got 2)"


@pytest.mark.parametrize("value", ["abc", "inf", "nan", "-1"])
def test_a_bad_variable_is_one_clear_line_on_every_rank(value):
    """Only the node's first rank reads the configuration (it creates the
    segment): the others must still say why, without a traceback; and a
    timeout that is not a finite positive number is refused (an infinite
    one would overflow the nanosecond deadline into an immediate timeout)."""
    proc = _run(2, "info", env={"PGASCOL_TIMEOUT": value})
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "PGASCOL_TIMEOUT" in line]
    assert len(lines) == 2, proc.stderr
    assert all(line.startswith("pgascol info: ") for line in lines), lines


def test_calibrate_learns_the_table_that_info_shows_and_jobs_start_from(tmp_path):
    """`pgascol calibrate` at np=2 decides every tuned collective at every
    size class asked for, writes them under the job's shape with this
    machine's fingerprint; `pgascol info` shows them as the file's."""
    out = tmp_path / "cal.json"
    start = time.monotonic()
    proc = _run(2, "calibrate", "--output", str(out), "--max-size", "64K", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if "single copy is not allowed here" in proc.stdout:
        pytest.skip("the kernel refuses single copy here: one path, nothing to learn")
    assert time.monotonic() - start < 60
    doc = json.loads(out.read_text())
    from pgascol.comm._comm import TUNED
    from pgascol.node import calibration
    assert doc["fingerprint"] == calibration.fingerprint()
    table = doc["tables"]["1n2r"]
    assert set(table) == set(TUNED), table
    for coll, classes in table.items():
        assert set(classes) == {"14", "15", "16"}, (coll, classes)
        assert set(classes.values()) <= {"cico", "cma"}, (coll, classes)
    info = _info(PGASCOL_CALIBRATION=str(out)).stdout
    assert "calibration file %s: used" % out in info, info
    assert "1 node, 2 ranks:" in info and "Allreduce" in info, info


def test_calibrate_across_nodes_says_there_is_nothing_to_learn(tmp_path):
    """3 + 1 ranks as virtual nodes: every call runs the hierarchy, so there
    is no path to choose; calibrate says so, every rank ends, no file is written."""
    out = tmp_path / "cal.json"
    proc = _run(4, "calibrate", "--output", str(out), "--max-size", "32K", timeout=120,
                env={"PGASCOL_NODE_SIZE": "3"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("nothing to calibrate: across nodes") == 1, proc.stdout
    assert not out.exists()


def test_a_bad_option_is_one_clear_line_on_every_rank():
    proc = _run(2, "calibrate", "--max-size", "bogus", timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("pgascol calibrate: bad size 'bogus'") == 2, proc.stderr


def test_calibrate_on_one_rank_says_why():
    proc = _run(1, "calibrate", "--output", "/nonexistent/cal.json", timeout=60)
    assert proc.returncode != 0 and "calibration needs >= 2 ranks" in proc.stderr + proc.stdout


def test_info_shows_the_upc_algorithms(tmp_path):
    out = _info(PGASCOL_UPC_CALIBRATION=str(tmp_path / "none.json")).stdout
    assert "default algorithm by size [built in" in out, out
    assert ("one node: broadcast last <= 4096 B, push <= 16384 B, pull above; "
            "scatter last <= 4096 B, push <= 16384 B") in out, out
    assert "across nodes: broadcast hier-flat;" in out and "exchange hier;" in out, out
    out = _info(PGASCOL_UPC_BROADCAST="binomial-pull-static").stdout
    assert "broadcast binomial-pull-static (PGASCOL_UPC_BROADCAST)" in out, out
    assert "PGASCOL_UPC_BROADCAST=binomial-pull-static" in out, out


def test_calibrate_upc_stores_defaults_that_info_and_calls_use(tmp_path):
    """`pgascol calibrate --upc-only` at np=2 writes rules for teams of 2
    ranks on one node; info shows them, and they decide the algorithm of a
    call without algorithm= on 2 ranks (not on 3, where the built-in rules stay)."""
    out = tmp_path / "upc.json"
    proc = _run(2, "calibrate", "--upc-only", "--upc-output", str(out), "--upc-sizes", "4,64K", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stored = json.loads(out.read_text())
    assert set(stored["rules"]) == {"broadcast", "scatter", "gather", "gather_all", "exchange", "reduce",
                                    "prefix_reduce"}
    from pgascol.upc import ALGORITHMS
    for coll, shapes in stored["rules"].items():
        rules = shapes["node:2"]
        assert rules[-1][0] is None and all(alg in ALGORITHMS[coll] for _, alg in rules), (coll, rules)
    assert "2 ranks on one node: broadcast %s" % rules_text(stored["rules"]["broadcast"]["node:2"]) in \
        _info(PGASCOL_UPC_CALIBRATION=str(out)).stdout
    from pgascol.upc import defaults, plan
    old = os.environ.get("PGASCOL_UPC_CALIBRATION")
    os.environ["PGASCOL_UPC_CALIBRATION"] = str(out)
    try:
        for coll in defaults.BUILTIN:
            for nbytes in (4, 1 << 16):
                assert plan.default(coll, nbytes, 1, 2) == defaults.choose(coll, nbytes, "node", "node:2",
                                                                           ALGORITHMS[coll])
            assert plan.default(coll, 4, 1, 3) == defaults.BUILTIN[coll]["node"][0][1]
        # a reduction's 'auto' with a built-in operator runs the measured winner (three-phase and hier
        # where the layout allows them, else allgather), on 2 ranks; on 3 the built-in choice
        from pgascol.upc import reduce
        from pgascol.upc.operators import ADD, Operator
        add = Operator(ADD, np.dtype(np.float64), None, "test")
        for coll in ("reduce", "prefix_reduce"):
            for nbytes in (4, 1 << 16):
                want = defaults.choose(coll, nbytes, "node", "node:2", ALGORITHMS[coll])
                got = reduce._algorithm(coll, None, SimpleNamespace(nnodes=1, size=2), add, nbytes)
                assert got == want, (coll, nbytes, got, want)
            assert reduce._algorithm(coll, None, SimpleNamespace(nnodes=1, size=3), add, 4) == \
                plan.reduction_default(coll, 3, 1, 4, "ADD")
    finally:
        os.environ.pop("PGASCOL_UPC_CALIBRATION") if old is None else os.environ.__setitem__(
            "PGASCOL_UPC_CALIBRATION", old)


def rules_text(rules):
    return ", ".join(alg if lim is None and len(rules) == 1 else "%s %s" % (alg, "above" if lim is None else
                                                                            "<= %d B" % lim) for lim, alg in rules)
