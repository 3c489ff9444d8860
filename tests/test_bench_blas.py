"""pgascol-bench blas (pgascol/tools/bench_blas.py): a real tiny run under MPI,
every routine class and a factorization, its JSON read by `compare`."""
import json
import subprocess
import sys
from pathlib import Path

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
    c = cli("compare", out, out)
    assert c.returncode == 0 and "no regression (7 pgascol case(s) compared)" in c.stdout, c.stdout + c.stderr
