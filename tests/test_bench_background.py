"""pgascol-bench's --background (pgascol/tools/bench_background.py): another
job on the same CPUs while a benchmark measures. A real tiny run beside each
kind of background job, what the run's meta says of it, that nothing of it
is left afterwards, and bad values refused before anything starts."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pgascol.tools.bench"]


def cli(*args, timeout=300):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def background_processes():
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or ())
        if "pgascol.tools.bench_background" in cmd or "pgascol-bench-bg-" in cmd:
            found.append((p.pid, cmd))
    return found


def leftovers():
    tmp = [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("pgascol-bench-bg-")]
    shm = [n for n in os.listdir("/dev/shm") if n.startswith("pgascol-")]
    return tmp, shm


@pytest.mark.parametrize("kind", ["busy", "mpi4py", "pgascol"])
def test_a_background_job_runs_beside_the_benchmark_and_leaves_nothing(tmp_path, kind):
    out = tmp_path / "objects.json"
    before = leftovers()
    r = cli("objects", "--np", 2, "--methods", "allreduce,barrier", "--objects", "int", "--rounds", 2,
            "--background", kind, "--background-np", 2, "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["background"] == {"kind": kind, "np": 2}
    assert {(x["op"], x["impl"]) for x in doc["results"]} == {
        (op, impl) for op in ("obj.allreduce", "obj.barrier") for impl in ("mpi4py", "pgascol")}
    if kind != "busy":
        # the launcher's command line of the background job is echoed
        assert "# background: " in r.stdout and "--impl %s" % kind in r.stdout, r.stdout
    assert background_processes() == []
    assert leftovers() == before


def test_no_background_by_default(tmp_path):
    out = tmp_path / "objects.json"
    r = cli("objects", "--np", 2, "--methods", "barrier", "--rounds", 2, "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(out.read_text())["meta"]["background"] is None
    assert "# background" not in r.stdout


@pytest.mark.parametrize("args, message", [(("--background", "spin"), "invalid choice: 'spin'"),
                                           (("--background", "mpi4py", "--background-np", 0),
                                            "--background-np must be at least 1")])
def test_bad_background_options_are_refused_before_a_job(args, message):
    r = cli("objects", "--methods", "barrier", *args, timeout=60)
    assert r.returncode == 2 and message in r.stdout + r.stderr, r.stdout + r.stderr
    assert "launching" not in r.stdout and background_processes() == []


def test_every_sweep_takes_the_option():
    for sub in ("run", "objects", "pgas", "upc", "blas", "sparse"):
        r = cli(sub, "--help", timeout=60)
        assert r.returncode == 0 and "--background {none,busy,mpi4py,pgascol}" in r.stdout, (sub, r.stdout)


@pytest.mark.parametrize("kind", ["busy", "pgascol"])
def test_a_background_job_ends_when_the_benchmark_is_killed(kind):
    """SIGKILLed, the benchmark removes nothing: its background job must
    still end (it watches the benchmark's process)."""
    import signal
    import time
    code = ("import sys, time\nfrom pgascol.tools.bench_background import background_job\n"
            "from pgascol.tools.bench_harness import find_launcher\n"
            "with background_job(%r, find_launcher()[0], 2):\n    print('up', flush=True)\n    time.sleep(600)\n" % kind)
    before = set(leftovers()[0])
    host = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        lines = [host.stdout.readline().strip()]
        while lines[-1].startswith("# background"):
            lines.append(host.stdout.readline().strip())
        assert lines[-1] == "up", lines
        assert background_processes() or kind == "busy"
        os.kill(host.pid, signal.SIGKILL)
        host.wait()
        deadline = time.monotonic() + 60
        while (background_processes() or _busy_loops()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert background_processes() == [] and _busy_loops() == []
        assert set(leftovers()[0]) <= before, leftovers()
    finally:
        if host.poll() is None:
            host.kill()


def _busy_loops():
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if "sum(range(10000))" in " ".join(p.info["cmdline"] or ())]
