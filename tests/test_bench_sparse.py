"""pgascol-bench sparse (pgascol/tools/bench_sparse.py): a real tiny run under
MPI, every format on the band matrix (and the reasons a format is skipped
on NAS's), SpMV and SpMM, scipy and UPCBLAS's path beside pgascol, on one
node and on virtual nodes of one rank; its JSON read by `compare`."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pgascol.tools.bench"]
FORMATS = ("csr", "coo", "bsr", "csc", "dia", "dia-rows", "sky")


def cli(*args, timeout=300):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.mark.parametrize("vns", [None, 1])
def test_sparse_run_writes_the_schema_and_compare_reads_it(tmp_path, vns):
    out = tmp_path / "sparse.json"
    r = cli("sparse", "--np", 2, "--quick", "--matrices", "band,nas-a", "--cols", "1,3", "--rounds", 1,
            "--upcblas-formats", "csr,sky", "--json", out, *(["--virtual-node-size", vns] if vns else []))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    meta = doc["meta"]
    assert doc["schema"] == "pgascol-bench/1" and meta["np"] == 2 and meta["triad_gbs"] > 0
    assert meta["petsc"] or "petsc4py" in meta["petsc_missing"]
    if meta["petsc_missing"]:
        assert "PETSc's MatMult not measured" in r.stdout
    cases = {(x["op"], x["impl"]) for x in doc["results"]}
    for fmt in FORMATS:                         # every format on the band matrix
        for kind in ("spmv", "spmm3"):
            assert ("%s/band-20000/%s" % (kind, fmt), "pgascol") in cases, fmt
            assert ("%s/band-20000/%s" % (kind, fmt), "scipy") in cases, fmt
    for op in ("spmv/band-20000/csr", "spmv/band-20000/sky", "spmv/nas-s/csr"):
        assert (op, "upcblas") in cases, op
    assert ("spmm3/band-20000/csr", "upcblas") not in cases
    skipped = {(s["matrix"], s["format"]) for s in meta["skipped"]}
    assert skipped == {("nas-s", "dia"), ("nas-s", "dia-rows"), ("nas-s", "sky")}, meta["skipped"]
    for x in doc["results"]:
        assert 0 < x["t_min_us"] <= x["t_avg_us"] <= x["t_max_us"], x
        assert len(x["samples_us"]) == x["rounds"] and min(x["samples_us"]) == pytest.approx(x["t_min_us"])
        assert x["np"] == (1 if x["impl"] == "scipy" else 2) and x["gflops"] > 0 and x["gbs"] > 0
        assert x["nnz"] > 0 and x["bytes"] > x["nnz"] * 8
    c = cli("compare", out, out)
    n_ours = sum(1 for x in doc["results"] if x["impl"] == "pgascol")
    assert c.returncode == 0 and "no regression (%d pgascol case(s) compared)" % n_ours in c.stdout, \
        c.stdout + c.stderr


def test_sparse_refuses_unknown_names_before_launching():
    for option, name, what in (("--matrices", "nosuch", "matrix"), ("--formats", "ell", "format"),
                               ("--upcblas-formats", "ell", "format"), ("--upcblas-formats", "dia-rows", "format")):
        r = cli("sparse", "--np", 2, "--quick", option, name)
        assert r.returncode == 2 and "unknown %s %r" % (what, name) in r.stderr, r.stdout + r.stderr
        assert "launching" not in r.stdout
