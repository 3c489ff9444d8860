"""pgascol-bench objects (pgascol/tools/bench_objects.py): a real tiny run
under MPI of every pickle-based method beside mpi4py's, its JSON read by
`compare`; bad options refused before a job starts."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pgascol.tools.bench"]
METHODS = ("bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "barrier")


def cli(*args, timeout=300):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_objects_run_writes_the_schema_and_compare_reads_it(tmp_path):
    out = tmp_path / "objects.json"
    r = cli("objects", "--np", 2, "--objects", "int,dict,1K", "--rounds", 2, "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "pgascol-bench/1" and doc["meta"]["np"] == 2
    cases = {(x["op"], x["object"], x["impl"]) for x in doc["results"]}
    for m in METHODS:
        kinds = ("none",) if m == "barrier" else ("int", "1K") if "reduce" in m else ("int", "dict", "1K")
        for kind in kinds:
            assert ("obj." + m, kind, "pgascol") in cases and ("obj." + m, kind, "mpi4py") in cases, (m, kind)
    assert len(cases) == 2 * (1 + 2 * 2 + 5 * 3)
    for x in doc["results"]:
        assert 0 < x["t_min_us"] <= x["t_avg_us"] <= x["t_max_us"] and x["np"] == 2 and x["iters"] >= 1
        assert len(x["samples_us"]) == x["rounds"] == 2 and min(x["samples_us"]) == pytest.approx(x["t_min_us"])
        assert (x["bytes"] == 0) == (x["op"] == "obj.barrier")
    c = cli("compare", out, out)
    assert c.returncode == 0 and "no regression (20 pgascol case(s) compared)" in c.stdout, c.stdout + c.stderr


@pytest.mark.parametrize("args, message", [(("--methods", "bcast,send"), "--methods: unknown 'send'"),
                                           (("--objects", "int,huge"), "huge")])
def test_bad_options_are_refused_before_a_job(args, message):
    r = cli("objects", *args, timeout=60)
    assert r.returncode == 2 and message in r.stdout + r.stderr and "launching" not in r.stdout, r.stdout + r.stderr
