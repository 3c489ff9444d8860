"""The application benchmarks of bench/apps/ under MPI (np 1, 2, 4), each run
with both communicators (native MPI, then pgascol.Comm) in one job, on small
problems (cg.py also with its third implementation, pgascol.sparse.cg on a
matrix handle): ASP against a serial Floyd-Warshall computed here, NAS CG class S
against the published zeta, data-parallel training for identical parameters
on every rank and a falling loss."""
import functools
import importlib
import json
import os
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest

from tests.mpi_harness import REPO_ROOT, cleaned_mpi_shm, find_launcher

APPS_DIR = REPO_ROOT / "bench" / "apps"
NPROCS = (1, 2, 4)
ASP_N = 90                  # not a multiple of 4: uneven row blocks
ASP_DENSITY = 0.03          # sparse enough to leave some pairs unreachable
CG_S_ZETA = 8.5971775078648
TRAIN_ARGS = ("--layers", "48,64,32,10", "--steps", "12", "--batch", "60",
              "--samples", "600", "--lr", "0.1")


def run_app(app, np_, *args, tmp_path, timeout=90):
    """Launch bench/apps/<app>.py on np_ ranks with --json; returns the
    finished process and the parsed JSON (None if none was written)."""
    launcher, _ = find_launcher()
    out = tmp_path / ("%s-np%d.json" % (app, np_))
    python_path = [str(REPO_ROOT), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "PGASCOL_TIMEOUT": "20",
           "PYTHONPATH": os.pathsep.join(filter(None, python_path))}
    command = [*launcher, "-n", str(np_), sys.executable, str(APPS_DIR / (app + ".py")),
               "--json", str(out), *args]
    with cleaned_mpi_shm():     # a failed job may leave MPI's segments behind
        proc = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=timeout, cwd=REPO_ROOT)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def import_app(name):
    """An application module, imported into this process (its module
    `common` sets BLAS thread variables on import: kept out of our
    environment)."""
    with mock.patch.dict(os.environ), mock.patch.object(sys, "path", [str(APPS_DIR), *sys.path]):
        return importlib.import_module(name)


def results_by_impl(proc, report, impls=("mpi", "pgascol")):
    """The results by implementation; each verified, and the time in
    collectives within the total (cg's "sparse" communicates inside its
    handle and BLAS calls, not through the timed communicator: none)."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report is not None and report["schema"] == "pgascol-apps/1", proc.stdout
    by_impl = {r["impl"]: r for r in report["results"]}
    assert sorted(by_impl) == sorted(impls)
    for r in by_impl.values():
        assert r["verified"], (r, proc.stdout)
        if r["impl"] == "sparse":
            assert r["collectives"] == {} and r["total_s"] > 0, r
        else:
            assert 0 < r["collective_avg_s"] <= r["collective_max_s"] <= r["total_s"], r
    assert proc.stdout.count("PASSED") == len(impls) and "FAILED" not in proc.stdout, proc.stdout
    return by_impl


@functools.lru_cache(maxsize=None)
def asp_reference_checksum():
    asp = import_app("asp")
    weights = asp.make_graph(ASP_N, ASP_DENSITY, 1)
    dist = asp.floyd_warshall_serial(weights)
    assert not np.array_equal(dist, weights)          # paths do shorten some distances
    assert (dist == asp.INF).any()                    # and some pairs stay unreachable
    return "%016x" % asp.checksum(dist)


@pytest.mark.parametrize("np_", NPROCS)
def test_asp_matches_serial_floyd_warshall(np_, tmp_path):
    proc, report = run_app("asp", np_, "--n", str(ASP_N), "--density", str(ASP_DENSITY),
                           "--seed", "1", tmp_path=tmp_path)
    by_impl = results_by_impl(proc, report)
    for r in by_impl.values():
        assert r["answer"]["checksum"] == asp_reference_checksum(), r
        assert r["answer"]["serial"] == "match"
        assert r["collectives"]["Bcast"]["calls"] == ASP_N       # one row Bcast per step
    assert by_impl["pgascol"]["pgascol_paths"]["Bcast"]


@pytest.mark.parametrize("np_", NPROCS)
def test_cg_class_s_verifies(np_, tmp_path):
    proc, report = run_app("cg", np_, "--class", "S", tmp_path=tmp_path)
    by_impl = results_by_impl(proc, report, ("mpi", "pgascol", "sparse"))
    for r in by_impl.values():
        zeta = float(r["answer"]["zeta"])
        assert abs(zeta - CG_S_ZETA) / CG_S_ZETA <= 1e-10, r
        if r["impl"] == "sparse":       # pgascol.sparse.cg on a handle
            continue
        # 15 outer iterations of 25 CG steps: 26 Allgatherv and 53 Allreduce each.
        assert r["collectives"]["Allgatherv"]["calls"] == 15 * 26, r
        assert r["collectives"]["Allreduce"]["calls"] == 15 * 53, r


def test_cg_failed_verification_exits_nonzero(tmp_path):
    proc, report = run_app("cg", 2, "--class", "S", "--niter", "2", "--impl", "pgascol",
                           tmp_path=tmp_path)
    assert proc.returncode != 0
    assert "FAILED" in proc.stdout, proc.stdout + proc.stderr
    assert [r["verified"] for r in report["results"]] == [False]


@pytest.fixture(scope="module")
def train_losses_on_one_rank(tmp_path_factory):
    """The per-step losses of the same training on a single rank."""
    proc, report = run_app("train", 1, *TRAIN_ARGS, "--impl", "mpi",
                           tmp_path=tmp_path_factory.mktemp("train-np1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return report["results"][0]["answer"]["losses"]


@pytest.mark.parametrize("np_", NPROCS)
def test_training_keeps_ranks_identical_and_learns(np_, tmp_path, train_losses_on_one_rank):
    proc, report = run_app("train", np_, *TRAIN_ARGS, tmp_path=tmp_path)
    by_impl = results_by_impl(proc, report)
    for r in by_impl.values():
        answer = r["answer"]
        assert answer["identical"] == "yes", answer
        losses = answer["losses"]
        assert len(losses) == 12 and np.mean(losses[-3:]) < 0.9 * np.mean(losses[:3]), losses
        # Summing shard gradients over ranks is the full-batch gradient:
        # the same training as on one rank, up to rounding.
        np.testing.assert_allclose(losses, train_losses_on_one_rank, rtol=1e-3)
        assert r["collectives"]["Allreduce"]["calls"] == 12
