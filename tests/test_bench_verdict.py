"""pgascol-bench verdict (pgascol/tools/bench_verdict.py, bench_stats.py,
bench_fingerprint.py) on stored documents: every verdict path and its exit
status, the reports, the fingerprint; and the legacy `compare` on an
instruction count."""
import contextlib
import copy
import io
import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pgascol.tools import bench, bench_fingerprint, bench_harness, bench_stats, bench_verdict



class Ran:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def cli(*args):
    """pgascol-bench in this process (its exit status and output): the
    subcommands read files only, and a process per call is slow."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = bench.main([str(a) for a in args])
    return Ran(rc, out.getvalue(), err.getvalue())


def noisy(median, spread, n, rng):
    """n samples around median, each up to `spread` slower (rounds are
    only ever disturbed upwards), one in five a burst of 3x."""
    return [median * (3.0 if rng.random() < 0.2 else 1 + spread * rng.random()) for _ in range(n)]


def fingerprint(**machine):
    fp = {"machine": {"cpu_model": "Test CPU", "caches": {"L1d": 32768}, "cores": {"logical": 2},
                      "kernel": "6.1", "governor": None, "mpi_library": "MPICH 4", "simd": "avx2",
                      "env": {}, "calibration_digest": None, "ranks_per_core": 1.0},
          "build": {"pgascol": "0"}, "conditions": {}}
    fp["machine"].update(machine)
    return fp


def doc(cases, fp=None, measure=None):
    """cases: {(op, bytes): samples or (samples, path)}"""
    rows = []
    for (op, nbytes), got in cases.items():
        samples, path = got if isinstance(got, tuple) else (got, "staged")
        key = "samples_instr" if measure == "instructions" else "samples_us"
        row = {"op": op, "bytes": nbytes, "np": 2, "impl": "pgascol", "path": path, key: samples}
        if measure == "instructions":
            row.update(instr_min=min(samples), instr_max=max(samples))
        else:
            row.update(t_min_us=min(samples), t_max_us=max(samples), t_avg_us=sum(samples) / len(samples))
        rows.append(row)
    meta = {"fingerprint": fp or fingerprint()}
    if measure:
        meta["measure"] = measure
    return {"schema": bench_harness.SCHEMA, "meta": meta, "results": rows}


SIZES = [8, 1024, 65536, 1 << 20]
OPS = ["bcast", "allreduce", "gather", "alltoall", "scan"]


def sweep(rng, n=24, spread=0.05, slow=None, factor=1.0):
    return {(op, b): noisy(10.0 * (1 + b / 4096), spread, n, rng) if (op, b) != slow else
            [x * factor for x in noisy(10.0 * (1 + b / 4096), spread, n, rng)]
            for op in OPS for b in SIZES}


def test_holm_and_hodges_lehmann():
    assert bench_stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert bench_stats.hodges_lehmann_ratio([1, 1, 1], [1.1, 1.1, 1.1]) == pytest.approx(1.1)


def test_no_regression_between_two_noisy_runs_of_one_build():
    for seed in range(3):
        rng = random.Random(seed)
        v = bench_verdict.judge(doc(sweep(rng)), doc(sweep(rng)))
        assert v["status"] == 0, bench_verdict.text_report(v)


def test_a_ten_percent_slowdown_of_one_case_is_the_regression():
    rng = random.Random(1)
    v = bench_verdict.judge(doc(sweep(rng)), doc(sweep(rng, slow=("gather", 1024), factor=1.10)))
    assert v["status"] == 1
    assert [r["case"] for r in v["cases"] if r["verdict"] == "regression"] == ["gather 1K np=2"]


def test_noise_too_high_is_inconclusive_not_a_regression():
    rng = random.Random(2)
    base = sweep(rng)
    new = sweep(rng)
    base[("scan", 8)] = [10.0, 30.0, 12.0, 25.0, 11.0, 28.0]    # rounds varying 3x:
    new[("scan", 8)] = [12.0, 29.0, 10.0, 27.0, 13.0, 26.0]     # cannot rule out 10%
    v = bench_verdict.judge(doc(base), doc(new))
    assert v["status"] == 3
    r = next(r for r in v["cases"] if r["case"] == "scan 8 np=2")
    assert r["verdict"] == "inconclusive" and "noise too high" in r["reason"]


def test_an_interleaved_run_is_decided_on_one_sample_per_job():
    """An A/B document's block_samples_us (each job's best round) are the
    samples, not its rounds. Here each job runs at its own level (where its
    ranks were scheduled) and its three rounds agree to 0.02%: the new
    side's jobs are 7% slower than the base's, well inside the jobs' own
    spread of 14%. Eight jobs a side cannot tell that from noise; the 24
    rounds, taken as independent, would call it a regression."""
    base_levels = [1 + 0.02 * i for i in range(8)]
    new_levels = [x + 0.07 for x in base_levels]

    def ab_doc(levels):
        d = doc(sweep(random.Random(4)))
        for row in d["results"]:
            m = row["samples_us"][0]
            jobs = [[m * x * (1 + 1e-4 * k) for k in range(3)] for x in levels]
            row["samples_us"] = [t for job in jobs for t in job]
            row["block_samples_us"] = [min(job) for job in jobs]
        return d
    base, new = ab_doc(base_levels), ab_doc(new_levels)
    assert bench_stats.samples_of(new["results"][0], "time") == new["results"][0]["block_samples_us"]
    v = bench_verdict.judge(base, new)
    assert not [r for r in v["cases"] if r["verdict"] == "regression"], bench_verdict.text_report(v)
    for d in (base, new):
        for row in d["results"]:
            del row["block_samples_us"]
    v = bench_verdict.judge(base, new)
    assert all(r["verdict"] == "regression" for r in v["cases"]), bench_verdict.text_report(v)


def test_a_run_without_raw_samples_is_inconclusive():
    rng = random.Random(3)
    base = doc(sweep(rng))
    for row in base["results"]:
        del row["samples_us"]
    v = bench_verdict.judge(base, doc(sweep(rng)))
    assert v["status"] == 3 and "no raw samples" in v["cases"][0]["reason"]


def test_different_fingerprints_note_and_strict(tmp_path):
    rng = random.Random(4)
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_text(json.dumps(doc(sweep(rng))))
    new.write_text(json.dumps(doc(sweep(rng), fp=fingerprint(cpu_model="Other CPU"))))
    r = cli("verdict", base, new)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "note: fingerprint differs in cpu_model" in r.stdout
    r = cli("verdict", base, new, "--strict")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "--strict: no verdict" in r.stdout and "not judged" in r.stdout


def test_missing_cases_and_path_changes(tmp_path):
    rng = random.Random(5)
    b, n = sweep(rng), sweep(rng)
    del n[("bcast", 8)]
    n[("alltoall", 1 << 20)] = (n[("alltoall", 1 << 20)], "single-copy")
    v = bench_verdict.judge(doc(b), doc(n))
    assert v["status"] == 0
    assert ("new", "bcast 8 np=2") in [tuple(m) for m in v["missing"]]
    assert v["path_changes"] == ["alltoall 1M np=2"]
    text = bench_verdict.text_report(v)
    assert "missing case (not in new): bcast 8 np=2" in text
    assert "path changed: alltoall 1M np=2: staged -> single-copy" in text
    assert bench_verdict.judge(doc(b), doc(n), strict=True)["status"] == 3


def test_exit_codes_and_reports_through_the_command_line(tmp_path):
    rng = random.Random(6)
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_text(json.dumps(doc(sweep(rng))))
    new.write_text(json.dumps(doc(sweep(rng, slow=("allreduce", 65536), factor=1.25))))
    md, xml, vj = tmp_path / "s.md", tmp_path / "j.xml", tmp_path / "v.json"
    r = cli("verdict", base, new, "--markdown", md, "--junit", xml, "--verdict-json", vj)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "\nREGRESSION: 1 regression, 19 ok (time" in r.stdout
    assert md.read_text().startswith("## pgascol-bench verdict")
    assert "| allreduce 64K np=2 |" in md.read_text().splitlines()[6]    # regressions first
    suite = ET.parse(xml).getroot()
    assert suite.get("tests") == "20" and suite.get("failures") == "1"
    failed = [c.get("name") for c in suite if c.find("failure") is not None]
    assert failed == ["allreduce 64K np=2"]
    assert json.loads(vj.read_text())["status"] == 1
    assert cli("verdict", new, base).returncode == 0           # faster is never a failure
    assert cli("verdict", base, tmp_path / "nothing.json").returncode == 2


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    rng = random.Random(7)
    v = bench_verdict.judge(doc(sweep(rng)), doc(sweep(rng, slow=("scan", 8), factor=1.5)))
    path = bench_verdict.plot_verdict(v, str(tmp_path / "v.png"))
    assert Path(path).read_bytes()[:4] == b"\x89PNG"


def counts(n_rounds=3, base=10000.0, jitter=0.0002):
    return [base * (1 + jitter * k) for k in range(n_rounds)]


def test_instruction_counts():
    cases = {(op, b): counts(base=1000.0 + b) for op in OPS for b in SIZES}
    same = bench_verdict.judge(doc(cases, measure="instructions"), doc(cases, measure="instructions"))
    assert same["status"] == 0
    more = dict(cases)
    more[("bcast", 65536)] = [x * 1.01 for x in cases[("bcast", 65536)]]
    v = bench_verdict.judge(doc(cases, measure="instructions"), doc(more, measure="instructions"))
    assert v["status"] == 1
    assert [r["case"] for r in v["cases"] if r["verdict"] == "regression"] == ["bcast 64K np=2"]
    shaky = dict(cases)
    shaky[("scan", 8)] = [1000.0, 1010.0, 1020.0]
    v = bench_verdict.judge(doc(cases, measure="instructions"), doc(shaky, measure="instructions"))
    assert v["status"] == 3
    with pytest.raises(bench_harness.BenchError, match="measure different things"):
        bench_verdict.judge(doc(cases, measure="instructions"), doc(sweep(random.Random(0))))


def test_legacy_compare_reads_an_instruction_count(tmp_path):
    cases = {(op, b): counts(base=1000.0 + b) for op in OPS for b in SIZES}
    more = dict(cases)
    more[("gather", 8)] = [2000.0, 2000.0, 2000.0]
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_text(json.dumps(doc(cases, measure="instructions")))
    new.write_text(json.dumps(doc(more, measure="instructions")))
    r = cli("compare", base, new)
    assert r.returncode == 1 and r.stdout.strip().splitlines()[-1] == "1 regression(s): gather 8 np=2"


def test_fingerprint_of_this_machine():
    fp = bench_fingerprint.fingerprint(2, "MPICH test")
    m = fp["machine"]
    assert m["mpi_library"] == "MPICH test" and m["cores"]["logical"]
    assert set(bench_fingerprint.MACHINE_KEYS) <= set(m)
    assert all(k.startswith("PGASCOL_") for k in m["env"])
    probe = bench_fingerprint.LoadProbe().start()
    sum(range(10 ** 5))
    got = probe.stop()
    assert set(got) == {"load_before", "load_after", "busy", "steal"}
    other = copy.deepcopy(fp)
    other["machine"]["simd"] = "none"
    assert bench_fingerprint.differences({"fingerprint": fp}, {"fingerprint": other}) == [
        ("simd", m["simd"], "none")]
    assert bench_fingerprint.differences({}, {"fingerprint": fp})[0][0] == "fingerprint"
