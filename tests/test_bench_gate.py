"""The two measuring modes of the CI gate, run for real and kept short:
`pgascol-bench ab` (bench_ab.py, an A/A of this install) and `pgascol-bench
instructions` (bench_callgrind.py, under valgrind where it is installed).
They assert what the runs write, never how fast anything was."""
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pgascol.tools.bench"]


def cli(*args, timeout=300, env=None):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env=env)


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
    assert ra["block_samples_us"] == [min(ra["samples_us"])]      # decided on each job's best round
    assert a["meta"]["fingerprint"]["machine"]["env"]["PGASCOL_TUNE"] == "0"     # pinned
    assert a["meta"]["fingerprint"]["conditions"]["busy"] is not None
    v = json.loads(verdict.read_text())
    assert v["status"] == r.returncode and v["cases"][0]["case"] == "allreduce 1K np=2"


@pytest.mark.skipif(not (REPO / ".git").exists() or shutil.which("cc") is None,
                    reason="builds a git revision: needs a git checkout and a C compiler")
def test_ab_builds_a_git_revision_as_a_side(tmp_path):
    """A side given as a git revision is checked out into a temporary
    worktree, built there and run from it; the worktree is gone after."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    base = tmp_path / "a.json"
    r = cli("ab", "--base", "HEAD", "--new", sys.executable, "--ops", "bcast", "--sizes", "8",
            "--blocks", 2, "--rounds", 1, "--no-remeasure", "--json-base", base, timeout=1200)
    assert r.returncode in (0, 3), r.stdout + r.stderr
    assert "# building HEAD in " in r.stdout
    doc = json.loads(base.read_text())
    assert doc["meta"]["ab_spec"] == "HEAD"
    assert doc["meta"]["fingerprint"]["build"]["git_revision"].startswith(head[:12])
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=REPO, capture_output=True, text=True).stdout
    assert "pgascol-ab-" not in worktrees


def test_ab_refuses_what_is_not_an_install():
    r = cli("ab", "--base", "no-such-revision-xyz", "--new", sys.executable, "--ops", "bcast", "--sizes", "8")
    assert r.returncode == 2
    assert "neither a Python interpreter, a virtual environment nor a git revision" in r.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_short_instruction_count(tmp_path):
    out = tmp_path / "cg.json"
    dumps = tmp_path / "dumps"
    r = cli("instructions", "--ops", "allreduce", "--sizes", "8", "--iters", 20, "--rounds", 3, "--json", out,
            "--keep-dumps", dumps, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    kept = sorted(p.name for p in dumps.iterdir())     # rounds -1 (warm, not kept in the JSON) to 2
    assert kept == sorted("allreduce-8.round%d.rank%d.callgrind" % (k, r) for k in range(-1, 3) for r in (0, 1))
    assert "case=allreduce:8 round=1 rank=0" in (dumps / "allreduce-8.round1.rank0.callgrind").read_text()
    doc = json.loads(out.read_text())
    assert doc["meta"]["measure"] == "instructions"
    (row,) = doc["results"]
    assert row["op"] == "allreduce" and len(row["samples_instr"]) == 3 and row["instructions"] > 0
    assert len(row["instr_by_rank"]) == 2
    # the gate on itself: never a regression (3 where the rounds' counts vary by 0.5% or more)
    r = cli("verdict", out, out)
    assert r.returncode in (0, 3), r.stdout


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_instruction_counts_repeat_and_catch_one_percent(tmp_path):
    """Two jobs of the same build count the same (waits left out whole, not
    one case ok by luck: four), and a 1% slowdown the harness injects into
    one case is flagged as the only regression, measured as 1%."""
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    common = ("instructions", "--ops", "bcast,allreduce", "--sizes", "8,64K", "--rounds", 3)
    r = cli(*common, "--json", base, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(*common, "--inject-slowdown", "allreduce:65536:0.01", "--json", new, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = tmp_path / "v.json"
    r = cli("verdict", base, new, "--verdict-json", verdict)
    assert r.returncode == 1, r.stdout
    cases = {c["case"]: c for c in json.loads(verdict.read_text())["cases"]}
    assert [k for k, c in cases.items() if c["verdict"] == "regression"] == ["allreduce 64K np=2"]
    assert 1.008 < cases["allreduce 64K np=2"]["ratio"] < 1.012
    for k in ("bcast 8 np=2", "bcast 64K np=2", "allreduce 8 np=2"):
        assert cases[k]["verdict"] == "ok" and abs(cases[k]["ratio"] - 1) < 0.002, cases[k]


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_count_does_not_depend_on_where_the_heap_put_things(tmp_path):
    """A few small objects allocated at start-up (a sitecustomize on the
    ranks' path) move every later object: before the interpreter's type
    lookups and glibc's bins were left out (TYPE_LOOKUP, ALLOCATOR), a
    fetch_op of 8 bytes counted up to 1.9% more on one of four such
    layouts, and the pickling root of comm.scatter 0.6%; before the case's
    tuple was kept out of its string's slot in pickle's memo table (indexed
    by the objects' addresses), that root still moved 0.17%. The receiving
    rank's bound is wider: whether a wait found its peer ready (a call more
    or less, ~5 instructions) follows the schedule, not the layout."""
    (tmp_path / "sitecustomize.py").write_text(
        "import os, sys\n"
        "_k = int(os.environ.get('PGASCOL_TEST_PAD', '0'))\n"
        "_keep = [bytearray(24 + 16 * (i % 5)) for i in range(_k)]\n"
        "_names = [sys.intern('padname_%d' % i) for i in range(_k)]\n")
    counts = []
    for pad in (0, 3, 7, 13):
        out = tmp_path / ("pad%d.json" % pad)
        env = dict(os.environ, PGASCOL_TEST_PAD=str(pad),
                   PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
        r = cli("instructions", "--ops", "pgas.fetch_op,comm.scatter", "--iters", 200, "--rounds", 1,
                "--json", out, env=env, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        counts.append({row["op"]: [v[0] for v in row["instr_by_rank"]]
                       for row in json.loads(out.read_text())["results"]})
    for op, rank, bound in (("pgas.fetch_op", 0, 1.001), ("pgas.fetch_op", 1, 1.001),
                            ("comm.scatter", 0, 1.001), ("comm.scatter", 1, 1.003)):
        seen = [c[op][rank] for c in counts]
        assert max(seen) / min(seen) < bound, (op, rank, seen)


def test_the_pickled_case_keeps_its_tuple_out_of_its_strings_memo_slot():
    """pickle's memo table has 8 slots, chosen by (address >> 3) & 7: the case's
    tuple must not share one with the string it holds, on any of many tries
    (each a fresh heap position, the earlier ones kept alive)."""
    from pgascol.tools.bench_layer_cases import _memo_apart
    held = []
    for i in range(64):
        obj = _memo_apart(lambda: (i, "x", 1.5))
        held.append(obj)
        assert (id(obj) >> 3) & 7 != (id(obj[1]) >> 3) & 7
        assert obj == (i, "x", 1.5)


def test_the_waits_callgrind_leaves_out_are_functions_of_the_core():
    """bench_callgrind.UNCOUNTED names functions callgrind must find by name:
    each is an exported symbol of the core (PGC_NOINLINE keeps it a call)."""
    import ctypes
    from pgascol.engine import _core
    from pgascol.tools.bench_callgrind import UNCOUNTED
    lib = ctypes.CDLL(_core.__file__)
    for name in UNCOUNTED:
        assert hasattr(lib, name), name


def test_a_paced_call_starts_at_its_own_time_and_a_late_one_catches_up():
    """count_pace (csrc/base/count.h): call k of slot 1 of 2 returns no
    earlier than start + k periods + half a period; one that is due
    already returns at once, so the next is due at its own time again
    rather than a period later."""
    import time
    from pgascol.engine import _core
    period = 10_000_000
    start = time.monotonic_ns() + 2_000_000
    _core.count_pace_setup(1, 2, period, start)
    for k in range(3):
        _core.count_pace()
        assert time.monotonic_ns() >= start + k * period + period // 2
    time.sleep(8 * period / 1e9)                # calls 3 .. 7 are due already
    before = time.monotonic_ns()
    for _ in range(5):
        _core.count_pace()
    assert time.monotonic_ns() - before < 4 * period    # no sleep of a period each
    _core.count_pace()
    assert time.monotonic_ns() >= start + 8 * period + period // 2


def test_an_injected_slowdown_doubles_one_call_in_every_period():
    from pgascol.tools.bench_coll import injected
    made = []
    fns = [lambda k=k: made.append(k) for k in range(3)]
    calls = injected(fns, "allreduce:8:0.1", "allreduce", 8)
    for fn in itertools.islice(calls, 60):
        fn()
    assert len(made) == 66                          # one extra call in every 10
    assert made[:12] == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 0, 1]    # the 10th call, made twice
    plain = injected(fns, "allreduce:8:0.1", "bcast", 8)      # another case: untouched
    made.clear()
    for fn in itertools.islice(plain, 60):
        fn()
    assert made == [0, 1, 2] * 20


def test_the_stored_baseline_is_a_quick_instruction_count_of_every_case():
    """bench/baseline-ci.json, which the CI recipe compares against: an
    instruction count of the quick sweep, every collective and layer case,
    with the fingerprint `verdict --strict` compares."""
    from pgascol.tools.bench_callgrind import ALL_OPS, case_sizes
    from pgascol.tools.bench_coll import QUICK_SIZES
    from pgascol.tools.bench_harness import parse_sizes
    path = REPO / "bench" / "baseline-ci.json"
    assert "bench/baseline-ci.json" in (REPO / "examples" / "ci" / "pgascol-bench-gate.yml").read_text()
    doc = json.loads(path.read_text())
    assert doc["meta"]["measure"] == "instructions" and doc["meta"]["fingerprint"]["machine"]["cpu_model"]
    got = {(r["op"], r["bytes"]) for r in doc["results"]}
    assert got == {(op, b) for op in ALL_OPS for b in case_sizes(op, parse_sizes(QUICK_SIZES))}
    assert all(len(r["samples_instr"]) == 3 and r["instructions"] > 0 for r in doc["results"])
    r = cli("verdict", path, path, "--strict")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_ci_recipe_is_a_workflow_github_reads():
    """examples/ci/pgascol-bench-gate.yml parses as YAML (a step name with
    ": " in it once made the whole file invalid), the instruction-count
    verdict is the step that fails the build, the walltime job never does,
    and every pgascol-bench command in it is one the tool accepts."""
    yaml = pytest.importorskip("yaml")
    recipe = yaml.safe_load((REPO / "examples" / "ci" / "pgascol-bench-gate.yml").read_text())
    jobs = recipe["jobs"]
    assert set(jobs) == {"instructions", "walltime"} and jobs["walltime"]["continue-on-error"] is True
    steps = {s.get("name"): s for s in jobs["instructions"]["steps"]}
    gate = steps["verdict (fails the build on a regression)"]
    assert "pgascol-bench verdict base.json new.json" in gate["run"] and "continue-on-error" not in gate
    for job in jobs.values():
        for step in job["steps"]:
            for line in step.get("run", "").replace("\\\n", " ").splitlines():
                if "pgascol-bench " in line:
                    words = line.split("pgascol-bench ", 1)[1].split("||")[0].split()
                    mode = words[0]
                    r = cli(mode, "--help")
                    assert r.returncode == 0, line
                    for opt in (w for w in words if w.startswith("--")):
                        assert opt in r.stdout, (opt, line)


def test_instructions_without_valgrind_says_how_to_install_it():
    r = cli("instructions", "--valgrind", "/nonexistent/valgrind", "--ops", "bcast", "--sizes", "8")
    assert r.returncode == 2
    assert "apt-get install valgrind" in r.stderr
