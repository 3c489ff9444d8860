"""pgascol.tools.perf_tables: the markdown tables of docs/PERFORMANCE.md, from
a small pgascol-bench/1 file written here (no MPI job)."""
import json
import subprocess
import sys
from pathlib import Path

from pgascol.tools import perf_tables

REPO = Path(__file__).resolve().parent.parent


def case(op, nbytes, impl, t_min, path=None):
    return {"op": op, "bytes": nbytes, "np": 2, "impl": impl, "t_min_us": t_min,
            "t_avg_us": t_min * 1.1, "t_max_us": t_min * 1.2, "path": path, "memcpy_us": 0.5,
            "iters": 100, "rounds": 5, "buffer_sets": 1, "store_us": None}


def write_run(path):
    doc = {"schema": "pgascol-bench/1",
           "meta": {"machine": "host", "cpu_model": "Test CPU", "cores": {"logical": 2, "physical": 1},
                    "mpi_library": "MPICH Version:      5.0.2\nMPICH Release date: unreleased",
                    "command": "pgascol-bench run --np 2 --json mpich-np2.json", "np": 2,
                    "virtual_node_size": None, "rounds": 5, "via": "comm", "iters": None,
                    "target_ms": 20.0, "off_cache": False, "fresh": False,
                    "git_revision": "0123456789abcdef0123456789abcdef01234567"},
           "results": [case("allreduce", 8, "pgascol", 1.0, "inline"), case("allreduce", 8, "mpi", 4.0),
                       case("allreduce", 1 << 24, "pgascol", 3000.0, "cico"),
                       case("allreduce", 1 << 24, "mpi", 6000.0),
                       case("barrier", 0, "pgascol", 0.25, "inline"), case("barrier", 0, "mpi", 2.5)]}
    path.write_text(json.dumps(doc))
    return path


EXPECTED = [
    "MPICH 5.0.2, np=2, 2 logical CPUs (Test CPU), best of 5 rounds, in cache, "
    "pgascol at 0123456789; `pgascol-bench run --np 2 --json mpich-np2.json`",
    "",
    "| collective | - | 8 B | 16 MiB |",
    "|---|---|---|---|",
    "| Barrier | 0.10 (0.25 us, inline) |  |  |",
    "| Allreduce |  | 0.25 (1.00 us, inline) | 0.50 (3.00 ms, cico) |",
]


def test_prints_one_table_per_run(tmp_path, capsys):
    run = write_run(tmp_path / "run.json")
    assert perf_tables.main([str(run)]) == 0
    assert capsys.readouterr().out.splitlines() == EXPECTED


def test_update_regenerates_the_marked_block(tmp_path):
    run = write_run(tmp_path / "run.json")
    doc = tmp_path / "PERF.md"
    doc.write_text("# Figures\n\n<!-- perf_tables %s -->\nold figures\n<!-- end perf_tables -->\n\nafter\n"
                   % run)
    r = subprocess.run([sys.executable, "-m", "pgascol.tools.perf_tables", "--update", str(doc)],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert doc.read_text().splitlines() == (
        ["# Figures", "", "<!-- perf_tables %s -->" % run, ""] + EXPECTED
        + ["", "<!-- end perf_tables -->", "", "after"])


def test_rejects_a_file_of_another_schema(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "other/1", "results": []}))
    assert perf_tables.main([str(bad)]) == 2
    assert "not a pgascol-bench/1 file" in capsys.readouterr().err
