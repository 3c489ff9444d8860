"""The two measuring modes of the CI gate, run for real and kept short:
`pgascol-bench ab` (bench_ab.py, an A/A of this install) and `pgascol-bench
instructions` (bench_callgrind.py, under valgrind where it is installed).
They assert what the runs write, never how fast anything was."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pgascol.tools.bench"]


def cli(*args, timeout=300):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def test_a_short_interleaved_a_b_run(tmp_path):
    base, new, verdict = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "v.json"
    r = cli("ab", "--base", sys.executable, "--new", sys.executable, "--ops", "allreduce", "--sizes", "1K",
            "--blocks", 2, "--rounds", 3, "--quick", "--inject-slowdown", "allreduce:1024:0.1",
            "--json-base", base, "--json-new", new, "--verdict-json", verdict, "--junit", tmp_path / "j.xml")
    assert r.returncode in (0, 1, 3), r.stdout + r.stderr       # 2: an error
    a, b = json.loads(base.read_text()), json.loads(new.read_text())
    (ra,), (rb,) = a["results"], b["results"]
    assert ra["iters"] == rb["iters"]                # the same calls per round on both sides
    assert len(ra["samples_us"]) == len(rb["samples_us"]) == 3   # one block each, 3 rounds
    assert a["meta"]["fingerprint"]["machine"]["env"]["PGASCOL_TUNE"] == "0"     # pinned
    assert a["meta"]["fingerprint"]["conditions"]["busy"] is not None
    v = json.loads(verdict.read_text())
    assert v["status"] == r.returncode and v["cases"][0]["case"] == "allreduce 1K np=2"


def test_ab_refuses_what_is_not_an_install():
    r = cli("ab", "--base", "no-such-revision-xyz", "--new", sys.executable, "--ops", "bcast", "--sizes", "8")
    assert r.returncode == 2
    assert "neither a Python interpreter, a virtual environment nor a git revision" in r.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_short_instruction_count(tmp_path):
    out = tmp_path / "cg.json"
    r = cli("instructions", "--ops", "allreduce", "--sizes", "8", "--iters", 20, "--rounds", 3, "--json", out,
            timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["measure"] == "instructions"
    (row,) = doc["results"]
    assert row["op"] == "allreduce" and len(row["samples_instr"]) == 3 and row["instructions"] > 0
    assert len(row["instr_by_rank"]) == 2
    # the gate on itself: never a regression (3 where the rounds' counts vary by 0.5% or more)
    r = cli("verdict", out, out)
    assert r.returncode in (0, 3), r.stdout


def test_instructions_without_valgrind_says_how_to_install_it():
    r = cli("instructions", "--valgrind", "/nonexistent/valgrind", "--ops", "bcast", "--sizes", "8")
    assert r.returncode == 2
    assert "apt-get install valgrind" in r.stderr
