"""pgascol-bench (pgascol/tools/bench.py; the sweep in bench_coll.py): a real tiny sweep
under MPI (with plots, fixed --iters, --off-cache, --fresh), compare, plot, bad arguments."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pgascol.tools import bench_coll, bench_harness

REPO = Path(__file__).resolve().parent.parent
# The console script `pgascol-bench` is pgascol.tools.bench:main; `python -m
# pgascol.tools.bench` is the same entry point and needs no reinstall.
CLI = [sys.executable, "-m", "pgascol.tools.bench"]


def cli(*args, timeout=120):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path):
    assert path.is_file(), path
    assert path.read_bytes()[:8] == PNG_SIGNATURE, path


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "tiny.json"
    r = cli("run", "--np", 2, "--ops", "bcast,allreduce", "--sizes", "8,1K",
            "--rounds", 2, "--json", out, "--plot", out.with_suffix(".png"))
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
    assert meta["off_cache"] is False and meta["llc_bytes"] > 0
    assert meta["fresh"] is False and "fresh" not in stdout
    assert all(r["store_us"] is None for r in doc["results"])
    assert meta["iters"] is None and meta["target_ms"] > 0
    cases = {(r["op"], r["bytes"], r["np"], r["impl"]): r for r in doc["results"]}
    for op in ("bcast", "allreduce"):
        for nbytes in (8, 1024):
            for impl in ("pgascol", "mpi"):
                r = cases[(op, nbytes, 2, impl)]
                assert 0 < r["t_min_us"] <= r["t_avg_us"] <= r["t_max_us"]
                assert r["memcpy_us"] > 0
                assert r["iters"] >= 1 and r["buffer_sets"] == 1
            assert cases[(op, nbytes, 2, "pgascol")]["path"] in ("inline", "cico", "cma")
    assert len(doc["results"]) == 8
    # progress lines and the final table, which says what the times are
    assert "[4/4]" in stdout
    assert "slowest rank's mean per call" in stdout
    assert "ratio" in stdout and "memcpy" in stdout
    assert "in cache (same buffers every call" in stdout


def test_run_plots_one_png_per_op(tiny_run):
    path, stdout = tiny_run
    for op in ("bcast", "allreduce"):
        png = path.parent / ("tiny-%s.png" % op)
        assert_png(png)
        assert "# wrote %s" % png in stdout


def test_plot_subcommand_into_a_directory(tiny_run, tmp_path):
    path, _ = tiny_run
    r = cli("plot", path, "--plot", str(tmp_path / "plots") + "/")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["allreduce.png", "bcast.png"]
    for p in (tmp_path / "plots").iterdir():
        assert_png(p)


def test_plot_without_matplotlib_says_what_to_install(tiny_run, tmp_path):
    path, _ = tiny_run
    code = ("import sys; sys.modules['matplotlib'] = None; from pgascol.tools.bench import main; "
            "sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "plot", str(path), "--plot",
                        str(tmp_path / "x.png")], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert 'pip install "pgascol[plot]"' in r.stderr
    assert not list(tmp_path.glob("*.png"))


def test_fixed_iters(tmp_path):
    out = tmp_path / "iters.json"
    r = cli("run", "--np", 2, "--ops", "bcast", "--sizes", "8,1K", "--rounds", 2,
            "--iters", 7, "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["iters"] == 7 and doc["meta"]["target_ms"] is None
    assert len(doc["results"]) == 4
    assert all(row["iters"] == 7 for row in doc["results"])
    assert "7 calls per round" in r.stdout


def test_off_cache(tmp_path):
    out = tmp_path / "cold.json"
    r = cli("run", "--np", 2, "--ops", "allreduce", "--sizes", "8,64K", "--rounds", 2,
            "--iters", 20, "--off-cache", "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    meta = doc["meta"]
    assert meta["off_cache"] is True and meta["llc_bytes"] > 0
    assert "off-cache" in r.stdout
    for row in doc["results"]:
        assert 0 < row["t_min_us"] <= row["t_max_us"] and row["memcpy_us"] > 0
        footprint = bench_coll.case_bytes("allreduce", row["bytes"], 2)
        assert row["buffer_sets"] == bench_coll.buffer_sets(footprint, meta["llc_bytes"]) > 1
        if row["buffer_sets"] < bench_coll.MAX_BUFFER_SETS:  # the sets cover 2 x the LLC
            assert row["buffer_sets"] * footprint >= 2 * meta["llc_bytes"]


def test_fresh(tmp_path):
    out = tmp_path / "fresh.json"
    r = cli("run", "--np", 2, "--ops", "barrier,bcast,alltoall", "--sizes", "8,64K",
            "--rounds", 2, "--iters", 10, "--fresh", "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["fresh"] is True
    assert "fresh input" in r.stdout and "stores alone" in r.stdout
    header = [line for line in r.stdout.splitlines() if line.startswith("op ")]
    assert header and header[-1].rstrip().endswith("stores"), r.stdout
    for row in doc["results"]:
        if row["op"] == "barrier":      # no input to store into
            assert row["store_us"] is None
        else:
            assert 0 < row["store_us"] < row["t_min_us"], row


def test_shared_buffers(tmp_path):
    """--buffers shared: a third side on pgascol.empty buffers, the floor of
    each operation (P x the payload for Allgather), and compare reads it."""
    out = tmp_path / "shared.json"
    r = cli("run", "--np", 2, "--ops", "allgather,alltoall,gather", "--sizes", "64K",
            "--rounds", 2, "--iters", 5, "--buffers", "shared", "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["buffers"] == "shared"
    rows = {(row["op"], row["impl"]): row for row in doc["results"]}
    assert len(doc["results"]) == 9
    for op in ("allgather", "alltoall", "gather"):
        shared, private = rows[(op, "pgascol-shared")], rows[(op, "pgascol")]
        assert shared["buffers"] == "shared" and private["buffers"] == "private"
        assert shared["floor_bytes"] == (2 if op == "allgather" else 1) * 65536 == private["floor_bytes"]
        assert shared["floor_us"] > 0 and 0 < shared["t_min_us"] <= shared["t_max_us"]
        # single copy through the shared regions, unless the tuner measured MPI's own faster
        assert shared["path"] in ("cma", "mpi"), shared
    header = [line for line in r.stdout.splitlines() if line.startswith("op ")]
    assert header and "shared min" in header[-1] and "/floor" in header[-1], r.stdout
    c = cli("compare", out, out)
    assert c.returncode == 0 and "pgascol-shared" in c.stdout, c.stdout + c.stderr


def test_fresh_calls_store_into_every_line_first():
    import numpy as np
    buf, other = np.zeros(1000), np.zeros(3)    # 8000 and 24 bytes
    seen = []
    ours, theirs = bench_coll._sides(lambda: seen.append(("ours", buf.copy())),
                                     lambda: seen.append(("theirs", buf.copy())), [buf, other], True)
    ours()
    theirs()
    assert [name for name, _ in seen] == ["ours", "theirs"]
    lines = np.zeros(8000, np.uint8)
    lines[::bench_harness.CACHE_LINE] = 1
    for _, data in seen:    # stored before the call: every line has its byte
        assert (data.view(np.uint8) == lines).all()
    assert other.view(np.uint8)[0] == 1 and not other.view(np.uint8)[1:].any()
    assert ours.store is theirs.store
    plain = (lambda: None, lambda: None)
    assert bench_coll._sides(*plain, [buf], False) == plain


def test_llc_size_from_sysfs(tmp_path):
    def cache(name, level, ctype, size):
        d = tmp_path / name
        d.mkdir()
        (d / "level").write_text("%d\n" % level)
        (d / "type").write_text(ctype + "\n")
        (d / "size").write_text(size + "\n")
    assert bench_harness.llc_size(str(tmp_path)) == (bench_harness.LLC_FALLBACK, "fallback")
    cache("index0", 1, "Data", "32K")
    cache("index1", 1, "Instruction", "64K")
    cache("index2", 2, "Unified", "1024K")
    assert bench_harness.llc_size(str(tmp_path)) == (1 << 20, "sysfs")      # no L3: the highest level
    cache("index3", 3, "Unified", "32768K")
    cache("index4", 4, "Unified", "128M")
    assert bench_harness.llc_size(str(tmp_path)) == (32 << 20, "sysfs")     # L3 preferred
    assert bench_harness.llc_size()[0] > 0


def test_plot_names():
    assert bench_harness.plot_destination("out.png")("bcast") == "out-bcast.png"
    assert bench_harness.plot_destination("out")("bcast") == "out-bcast.png"


def test_compare_with_itself_passes(tiny_run):
    path, _ = tiny_run
    r = cli("compare", path, path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no regression" in r.stdout


def test_compare_detects_slower_pgascol(tiny_run, tmp_path):
    path, _ = tiny_run
    doc = json.loads(path.read_text())
    ours = [r for r in doc["results"] if r["impl"] == "pgascol"]
    # Slow pgascol down by 50%, or more when a loaded machine made every case
    # of the 2-round base run vary by more than that: at least one case must
    # then leave the base run's own spread.
    factor = max(1.5, 1.01 * min(r["t_max_us"] / r["t_min_us"] for r in ours))
    slow = copy.deepcopy(doc)
    for r in slow["results"]:
        if r["impl"] == "pgascol":
            for k in ("t_min_us", "t_avg_us", "t_max_us"):
                r[k] *= factor
    new = tmp_path / "slow.json"
    new.write_text(json.dumps(slow))
    # Which cases the documented rule flags (a case whose own base run spread
    # exceeds the slowdown is noise, not a regression).
    expected = [r for r in ours if r["t_min_us"] * factor > r["t_max_us"]]
    assert expected
    r = cli("compare", path, new)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "REGRESSION" in r.stdout
    summary = r.stdout.strip().splitlines()[-1]
    for case in expected:
        assert "%s %s np=2" % (case["op"], bench_harness.human(case["bytes"])) in summary
    # faster is never a failure
    r = cli("compare", new, path)
    assert r.returncode == 0, r.stdout + r.stderr


def _doc(rows):
    return {"schema": bench_harness.SCHEMA, "meta": {}, "results": [
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
    (("run", "--iters", "0"), "--iters must be >= 1"),
    (("run", "--iters", "-5"), "--iters must be >= 1"),
    (("run", "--iters", "many"), "argument --iters: invalid int value"),
    (("run", "--plot", "/nonexistent/dir/out.png"), "directory /nonexistent/dir does not exist"),
    (("plot", "/nonexistent/a.json", "--plot", "/tmp/x.png"), "cannot read"),
    (("plot", "/nonexistent/a.json"), "required: --plot"),
    (("run", "--ops", ""), "--ops is empty"),
    (("compare", "/nonexistent/a.json", "/nonexistent/b.json"), "cannot read"),
])
def test_bad_arguments(args, message):
    r = cli(*args, timeout=60)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_sizes_and_entry_point():
    assert bench_harness.parse_sizes("8,1K,1M") == [8, 1024, 1 << 20]
    assert bench_harness.parse_sizes("8:128") == [8, 32, 128]
    assert bench_harness.parse_sizes("1K:8K:2") == [1024, 2048, 4096, 8192]
    text = (REPO / "pyproject.toml").read_text()
    assert 'pgascol-bench = "pgascol.tools.bench:main"' in text


# ---------------------------------------------------------------------------
# pgascol-bench pgas: the PGAS layer's benchmarks
# ---------------------------------------------------------------------------

PGAS_TINY = ("--table-log2", 10, "--element-table-log2", 16, "--stream-n", 6000, "--stream-block", 1000,
             "--latency-iters", 50, "--rounds", 2)
RA_OPS = ["pgas.randomaccess." + v for v in ("strict", "update", "batched", "rma", "alltoallv")]


def pgas_cases(doc):
    return {(r["op"], r["bytes"], r["np"], r["impl"]): r for r in doc["results"]}


def check_pgas_records(doc, nps, variants=RA_OPS):
    """Every benchmark's records at every rank count, verified, in the schema."""
    cases = pgas_cases(doc)
    for P in nps:
        for op in variants:
            impl = "mpi" if op.endswith(("rma", "alltoallv")) else "pgascol"
            # the per-element variants: a table large enough that strict's races stay
            # under 1% (their number per pass does not grow with the table)
            log2 = 16 if op.endswith(("strict", "update")) else 10
            r = cases[(op, 8 << log2, P, impl)]
            assert r["unit"] == "GUPS" and r["rate"] > 0 and r["table_log2"] == log2
            assert r["iters"] == 4 << log2              # HPCC: 4 x the table's updates
            # 0 errors; the strict variant's get-modify-put is not atomic: HPCC's 1%
            # per two passes (2 rounds here: two passes)
            assert r["errors"] <= ((1 << log2) // 100 if op.endswith("strict") else 0), r
        for impl in ("pgascol", "numpy"):
            r = cases[("pgas.stream.local", 24 * 6000, P, impl)]
            assert r["unit"] == "GB/s" and r["rate"] > 0 and r["errors"] == 0
        assert cases[("pgas.stream.slicing", 24 * 6000, P, "pgascol")]["errors"] == 0
    for r in doc["results"]:
        bulk = r["op"].startswith("pgas.latency.") and r["bytes"] > 8    # short rounds, 5 x as many
        assert 0 < r["t_min_us"] <= r["t_avg_us"] <= r["t_max_us"] and r["rounds"] == (10 if bulk else 2), r


@pytest.fixture(scope="module")
def pgas_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pgas") / "pgas.json"
    r = cli("pgas", "--np", "1,2", *PGAS_TINY, "--json", out, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return out, r.stdout


# ---------------------------------------------------------------------------
# pgascol-bench upc: the UPC collectives, UOMS-style
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def upc_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench_upc") / "upc.json"
    r = cli("upc", "--np", 2, "--colls", "broadcast,exchange,reduce", "--sizes", "4,1K",
            "--algorithms", "default,push", "--flags", "ALLSYNC,NOSYNC", "--rounds", 2, "--iters", 20,
            "--json", out, "--plot", str(out.parent) + "/", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return out, r.stdout


def test_pgas_writes_every_benchmark_verified(pgas_run):
    path, stdout = pgas_run
    doc = json.loads(path.read_text())
    assert doc["schema"] == "pgascol-bench/1"
    assert doc["meta"]["nps"] == [1, 2] and doc["meta"]["np"] is None
    assert doc["meta"]["params"]["table_log2"] == 10
    check_pgas_records(doc, (1, 2))
    cases = pgas_cases(doc)
    # latency: from rank 1 on the same node, against MPI, the bulk get against a memcpy
    for nbytes in (8, 1 << 20):
        ours, mpi = cases[("pgas.latency.node", nbytes, 2, "pgascol")], cases[("pgas.latency.node", nbytes, 2, "mpi")]
        assert ours["path"] == "node" and ours["unit"] == "us" and mpi["t_min_us"] > 0
        assert (ours["memcpy_us"] > 0) == (nbytes > 8)
    assert not any(k[0].startswith("pgas.latency.") and k[2] == 1 for k in cases)    # needs 2 ranks
    assert cases[("pgas.randomaccess.batched", 8 << 10, 2, "pgascol")]["path"] == "node"
    # the efficiency from one rank, also measured in the np=2 job itself (rank 0 alone, in turns)
    alone = cases[("pgas.randomaccess.batched.one_rank", 8 << 10, 2, "pgascol")]
    assert alone["rate"] > 0 and alone["errors"] == 0 and alone["iters"] == 4 << 10
    assert not any(k[0].endswith("one_rank") and k[2] == 1 for k in cases)
    for text in ("batched  np=2", "the better MPI way", "efficiency from the np=1 job",
                 "from one rank in the same job", "x numpy processes",
                 "x local()", "a memcpy"):
        assert text in stdout, text
    assert "VERIFICATION FAILED" not in stdout


def test_pgas_on_virtual_nodes(tmp_path):
    """Virtual nodes of 2 over 3 ranks: rank 0 reads from a node peer and from
    another node, the arrays go through MPI across nodes, all verified."""
    out = tmp_path / "vn.json"
    # per element across nodes is one MPI Accumulate per update: not strict and update here
    r = cli("pgas", "--np", 3, "--virtual-node-size", 2, *PGAS_TINY, "--variants", "batched,rma,alltoallv",
            "--json", out, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["virtual_node_size"] == 2 and doc["meta"]["np"] == 3
    check_pgas_records(doc, (3,), RA_OPS[2:])
    cases = pgas_cases(doc)
    assert cases[("pgas.randomaccess.batched", 8 << 10, 3, "pgascol")]["path"] == "internode"
    assert not any(k[0].endswith("one_rank") for k in cases)        # one node only
    assert cases[("pgas.latency.node", 8, 3, "pgascol")]["target"] == 1
    assert cases[("pgas.latency.internode", 8, 3, "pgascol")]["target"] == 2
    assert cases[("pgas.latency.internode", 1 << 20, 3, "mpi")]["t_min_us"] > 0


def test_pgas_compare_flags_a_slowdown(pgas_run, tmp_path):
    path, _ = pgas_run
    r = cli("compare", path, path)
    assert r.returncode == 0 and "no regression" in r.stdout, r.stdout
    doc = json.loads(path.read_text())
    slow = copy.deepcopy(doc)
    for row in slow["results"]:
        if row["op"] == "pgas.randomaccess.batched" and row["np"] == 2:
            factor = 1.01 * max(2.0, row["t_max_us"] / row["t_min_us"])    # beyond the base's spread
            for k in ("t_min_us", "t_avg_us", "t_max_us"):
                row[k] *= factor
    new = tmp_path / "slow.json"
    new.write_text(json.dumps(slow))
    r = cli("compare", path, new)
    assert r.returncode == 1, r.stdout
    assert r.stdout.strip().splitlines()[-1] == "1 regression(s): pgas.randomaccess.batched 8K np=2"


def test_hpcc_generator_is_exact():
    from pgascol.tools import hpcc
    seq = [1]
    for _ in range(4000):
        seq.append(hpcc.step(seq[-1]))
    assert seq[1:4] == [2, 4, 8] and seq[64] == hpcc.POLY     # x^64 = x^2 + x + 1
    for n in (0, 1, 2, 63, 64, 65, 1000, 2999):
        assert hpcc.starts(n) == seq[n]
    assert hpcc.starts(hpcc.PERIOD) == 1 and hpcc.starts(-1) == hpcc.starts(hpcc.PERIOD - 1)
    n = 123456789012345
    assert hpcc.starts(n + 40) == hpcc.jump_int(hpcc.starts(n), 40)
    # group after group of consecutive values, whatever the chunk size, group and start
    for first, count, size, group in ((0, 2900, 128, 64), (17, 1000, 320, 64), (5, 64, 64, 64),
                                      (3, 2999, 2048, 1024), (0, 2048, 2048, 1024)):
        stream, got = hpcc.Stream(first, count, size, group), []
        while True:
            chunk = stream.chunk()
            if not len(chunk):
                break
            got += chunk.tolist()
        assert len(got) == count
        for g in range(0, count, group):
            want = seq[first + 1 + g:first + 1 + min(g + group, count)]
            assert sorted(got[g:g + group]) == sorted(want), (first, count, size, group, g)
    far = hpcc.Stream(n, 1 << 17)
    first_group = far.chunk()[:1024]
    assert sorted(first_group.tolist()) == sorted(hpcc.starts(n + k) for k in range(1, 1025))
    assert hpcc.starts(n + (1 << 16) + 1) in far.chunk()[:1024].tolist()


@pytest.mark.parametrize("args, message", [
    (("pgas", "--np", "0"), "bad --np '0'"),
    (("pgas", "--np", "two"), "bad --np 'two'"),
    (("pgas", "--benchmarks", "stream,linpack"), "bad --benchmarks 'stream,linpack'"),
    (("pgas", "--variants", "atomic"), "bad --variants 'atomic'"),
    (("pgas", "--table-log2", "0"), "--table-log2 must be between 1 and 40"),
    (("pgas", "--rounds", "0"), "--rounds must be between 1 and 10000"),
    (("pgas", "--virtual-node-size", "0"), "--virtual-node-size must be >= 1"),
])
def test_pgas_bad_arguments(args, message):
    r = cli(*args, timeout=60)
    assert r.returncode == 2
    assert message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "launching" not in r.stdout
def test_upc_writes_the_run_schema_with_uoms_statistics(upc_run):
    path, stdout = upc_run
    doc = json.loads(path.read_text())
    assert doc["schema"] == "pgascol-bench/1" and doc["meta"]["np"] == 2
    assert doc["meta"]["benchmark"].startswith("upc") and doc["meta"]["root"] == 0
    rows = {(r["op"], r["bytes"], r["impl"]): r for r in doc["results"]}
    for nbytes in (4, 1024):
        for op in ("upc_broadcast", "upc_broadcast:push", "upc_broadcast@NOSYNC", "upc_broadcast:push@NOSYNC",
                   "upc_exchange", "upc_exchange:push", "upc_reduce", "upc_reduce@NOSYNC"):
            r = rows[(op, nbytes, "pgascol")]
            assert 0 < r["t_min_us"] <= r["t_avg_us"] <= r["t_max_us"], r
            assert r["iters"] == 20 and r["rounds"] == 2
            assert len(r["samples_us"]) == 2 and r["t_min_us"] <= min(r["samples_us"])   # for `verdict`
        for coll in ("broadcast", "exchange", "reduce"):
            for impl in ("pgascol_comm", "mpi"):
                assert rows[("upc_" + coll, nbytes, impl)]["t_min_us"] > 0
        # UOMS's aggregate bandwidth from t_min: P (broadcast) or P*P (exchange) x nbytes, MB = 10**6 B
        b = rows[("upc_broadcast", nbytes, "pgascol")]
        assert b["bandwidth_mbs"] == pytest.approx(2 * nbytes / b["t_min_us"])
        e = rows[("upc_exchange", nbytes, "pgascol")]
        assert e["bandwidth_mbs"] == pytest.approx(4 * nbytes / e["t_min_us"])
        assert rows[("upc_reduce", nbytes, "pgascol")]["bandwidth_mbs"] is None
    assert ("upc_reduce:push", 4, "pgascol") in rows              # the reduce's push variant
    assert "t_avg" in stdout and "/comm" in stdout and "/mpi" in stdout


def test_upc_json_is_read_by_compare_and_plot(upc_run, tmp_path):
    path, stdout = upc_run
    for coll in ("broadcast", "exchange", "reduce"):
        assert_png(path.parent / ("upc_%s.png" % coll))
    r = cli("compare", path, path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no regression (24 pgascol case(s) compared)" in r.stdout     # 3 collectives x 2 algorithms x 2 flags x 2 sizes
    slower = json.loads(path.read_text())
    for row in slower["results"]:
        if row["op"] == "upc_broadcast" and row["impl"] == "pgascol":
            row["t_min_us"] = row["t_max_us"] * 3 + 1
    new = tmp_path / "slower.json"
    new.write_text(json.dumps(slower))
    r = cli("compare", path, new)
    assert r.returncode == 1 and "upc_broadcast 4 np=2" in r.stdout, r.stdout
    r = cli("plot", path, "--plot", str(tmp_path) + "/")
    assert r.returncode == 0, r.stderr
    assert_png(tmp_path / "upc_broadcast.png")


@pytest.mark.parametrize("args, message", [
    (("--root", 2), "--root 2 is not a rank of 2"),
    (("--flags", "SOMETIMES"), "bad --flags entry"),
    (("--colls", "bcast"), "unknown collective"),
    (("--op", "XOR"), "--op must be"),
])
def test_upc_bad_arguments(args, message):
    r = cli("upc", "--np", 2, *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
