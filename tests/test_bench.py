"""pgascol-bench (pgascol/bench.py): a real tiny sweep under MPI, compare, bad arguments."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pgascol import bench

REPO = Path(__file__).resolve().parent.parent
# The console script `pgascol-bench` is pgascol.bench:main; `python -m
# pgascol.bench` is the same entry point and needs no reinstall.
CLI = [sys.executable, "-m", "pgascol.bench"]


def cli(*args, timeout=120):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "tiny.json"
    r = cli("run", "--np", 2, "--ops", "bcast,allreduce", "--sizes", "8,1K",
            "--rounds", 2, "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    return out, r.stdout


def test_run_writes_valid_json(tiny_run):
    path, stdout = tiny_run
    doc = json.loads(path.read_text())
    assert doc["schema"] == "pgascol-bench/1"
    meta = doc["meta"]
    for key in ("machine", "cpu_model", "cores", "mpi_library", "mpi4py", "pgascol",
                "git_revision", "python", "numpy", "date", "command", "np",
                "virtual_node_size"):
        assert key in meta, key
    assert meta["np"] == 2 and meta["virtual_node_size"] is None
    assert meta["cores"]["logical"] >= 1
    cases = {(r["op"], r["bytes"], r["np"], r["impl"]): r for r in doc["results"]}
    for op in ("bcast", "allreduce"):
        for nbytes in (8, 1024):
            for impl in ("pgascol", "mpi"):
                r = cases[(op, nbytes, 2, impl)]
                assert 0 < r["t_min_us"] <= r["t_avg_us"] <= r["t_max_us"]
                assert r["memcpy_us"] > 0
            assert cases[(op, nbytes, 2, "pgascol")]["path"] in ("inline", "cico", "cma")
    assert len(doc["results"]) == 8
    # progress lines and the final table, which says what the times are
    assert "[4/4]" in stdout
    assert "slowest rank's mean per call" in stdout
    assert "ratio" in stdout and "memcpy" in stdout


def test_compare_with_itself_passes(tiny_run):
    path, _ = tiny_run
    r = cli("compare", path, path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no regression" in r.stdout


def test_compare_detects_slower_pgascol(tiny_run, tmp_path):
    path, _ = tiny_run
    doc = json.loads(path.read_text())
    slow = copy.deepcopy(doc)
    for r in slow["results"]:
        if r["impl"] == "pgascol":
            for k in ("t_min_us", "t_avg_us", "t_max_us"):
                r[k] *= 1.5
    new = tmp_path / "slow.json"
    new.write_text(json.dumps(slow))
    # Which cases the documented rule flags (a case whose own base run spread
    # exceeds 50% is noise, not a regression).
    expected = [r for r in doc["results"] if r["impl"] == "pgascol"
                and r["t_min_us"] * 1.5 > r["t_max_us"]]
    assert expected, "every case of the base run varied by more than 50%"
    r = cli("compare", path, new)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSION" in r.stdout
    summary = r.stdout.strip().splitlines()[-1]
    for case in expected:
        assert "%s %s np=2" % (case["op"], bench.human(case["bytes"])) in summary
    # faster is never a failure
    r = cli("compare", new, path)
    assert r.returncode == 0, r.stdout + r.stderr


def _doc(rows):
    return {"schema": bench.SCHEMA, "meta": {}, "results": [
        {"op": op, "bytes": b, "np": 2, "impl": impl, "t_min_us": lo, "t_avg_us": (lo + hi) / 2,
         "t_max_us": hi, "path": None, "memcpy_us": 1.0} for op, b, impl, lo, hi in rows]}


def test_compare_rule_and_missing_cases(tmp_path):
    base = tmp_path / "base.json"
    new = tmp_path / "new.json"
    base.write_text(json.dumps(_doc([("bcast", 8, "pgascol", 10.0, 11.0),
                                     ("bcast", 1024, "pgascol", 10.0, 20.0),
                                     ("bcast", 8, "mpi", 10.0, 11.0),
                                     ("gather", 8, "pgascol", 1.0, 1.0)])))
    # 8 B: +15% and beyond the base's max -> regression at 0.10, not at 0.20;
    # 1K: +50% but within the base's own spread -> noise; the native side
    # never fails; gather only in base, scan only in new: reported.
    new.write_text(json.dumps(_doc([("bcast", 8, "pgascol", 11.5, 12.0),
                                    ("bcast", 1024, "pgascol", 15.0, 16.0),
                                    ("bcast", 8, "mpi", 30.0, 31.0),
                                    ("scan", 8, "pgascol", 1.0, 1.0)])))
    r = cli("compare", base, new)
    assert r.returncode == 1, r.stdout
    assert r.stdout.strip().splitlines()[-1] == "1 regression(s): bcast 8 np=2"
    assert "missing case (only in base): gather" in r.stdout
    assert "missing case (only in new): scan" in r.stdout
    r = cli("compare", base, new, "--threshold", "0.2")
    assert r.returncode == 0, r.stdout


@pytest.mark.parametrize("args, message", [
    (("run", "--ops", "bcast,nosuchop"), "unknown op(s) nosuchop"),
    (("run", "--sizes", "8,12Q"), "bad size '12Q'"),
    (("run", "--sizes", "1M:8"), "bad size range"),
    (("run", "--rounds", "0"), "--rounds must be >= 1"),
    (("run", "--np", "0"), "--np must be >= 1"),
    (("run", "--ops", ""), "--ops is empty"),
    (("compare", "/nonexistent/a.json", "/nonexistent/b.json"), "cannot read"),
])
def test_bad_arguments(args, message):
    r = cli(*args, timeout=60)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_sizes_and_entry_point():
    assert bench.parse_sizes("8,1K,1M") == [8, 1024, 1 << 20]
    assert bench.parse_sizes("8:128") == [8, 32, 128]
    assert bench.parse_sizes("1K:8K:2") == [1024, 2048, 4096, 8192]
    text = (REPO / "pyproject.toml").read_text()
    assert 'pgascol-bench = "pgascol.bench:main"' in text
