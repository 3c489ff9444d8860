"""pgascol-bench blas (pgascol/tools/bench_blas.py): a real tiny run under MPI,
every routine class and a factorization, its JSON read by `compare`."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pgascol.tools.bench"]


def cli(*args, timeout=300):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_blas_run_writes_the_schema_and_compare_reads_it(tmp_path):
    out = tmp_path / "blas.json"
    r = cli("blas", "--np", 2, "--ops", "ddot,daxpy,dgemv,dgemm,dtrsm,dpotrf,dgetrf", "--rounds", 1, "--nb", 16,
            "--n", "ddot=10000,daxpy=10000,dgemv=64,dgemm=64,dtrsm=64,dpotrf=64,dgetrf=64", "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "pgascol-bench/1" and doc["meta"]["np"] == 2
    cases = {(x["op"], x["impl"]) for x in doc["results"]}
    for op in ("ddot", "daxpy", "dgemv", "dgemm", "dtrsm", "dpotrf", "dgetrf"):
        assert (op, "pgascol") in cases and (op, "numpy") in cases, op
    for x in doc["results"]:
        assert 0 < x["t_min_us"] <= x["t_avg_us"] <= x["t_max_us"] and x["np"] == 2 and x["gflops"] > 0
        assert len(x["samples_us"]) == x["rounds"] and min(x["samples_us"]) == pytest.approx(x["t_min_us"])
    c = cli("compare", out, out)
    assert c.returncode == 0 and "no regression (7 pgascol case(s) compared)" in c.stdout, c.stdout + c.stderr


def test_panel_calibration_is_stored_read_and_overridable(tmp_path, monkeypatch):
    import os
    out = tmp_path / "blas-cal.json"
    env = dict(os.environ, PGASCOL_NODE_SIZE="1", PYTHONPATH=str(REPO))
    r = subprocess.run(["mpiexec", "-n", "2", sys.executable, "-m", "pgascol.blas.calibrate", "--out", str(out),
                        "--rounds", "2"], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    stored = json.loads(out.read_text())
    bandwidth = {int(k): v for k, v in stored["bandwidth"].items()}
    from pgascol.blas import calibrate, panel
    assert stored["panel_bytes"] == calibrate.plateau(bandwidth) and stored["panel_bytes"] in calibrate.SIZES
    monkeypatch.setenv("PGASCOL_BLAS_CALIBRATION", str(out))
    monkeypatch.delenv("PGASCOL_BLAS_PANEL_BYTES", raising=False)
    monkeypatch.setattr(panel, "_calibrated", None)
    assert panel.panel_bytes() == stored["panel_bytes"]
    monkeypatch.setenv("PGASCOL_BLAS_PANEL_BYTES", "12345")
    assert panel.panel_bytes() == 12345


def test_plateau_is_the_smallest_size_near_the_best():
    from pgascol.blas.calibrate import plateau
    assert plateau({1: 1.0, 2: 9.5, 4: 10.0, 8: 9.9}) == 2
    assert plateau({1: 10.0, 2: 5.0}) == 1
