"""The calibration file (pgascol/node/calibration.py): read only where its
fingerprint is this machine's; a corrupt, foreign, old or unreadable file is
ignored with a reason, never an error; written atomically, merged, and not
an error where the directory cannot be written."""
import json
import os

import pytest

from pgascol.node import calibration


@pytest.fixture
def path(tmp_path):
    calibration._loaded.clear()
    yield str(tmp_path / "calibration.json")
    calibration._loaded.clear()


def _write(path, doc):
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))


def _doc(**over):
    doc = {"format": calibration.FORMAT, "fingerprint": dict(calibration.fingerprint()),
           "tables": {"1n2r": {"Allreduce": {"16": "cma"}}}}
    doc.update(over)
    return doc


def test_the_fingerprint_names_the_machine_and_the_set_up():
    fp = calibration.fingerprint()
    assert set(fp) == {"cpu", "caches", "cores", "kernel", "mpi", "pgascol"}
    assert fp["cores"] >= 1 and fp["cpu"]
    from pgascol import __version__
    assert fp["pgascol"] == __version__


def test_a_file_of_this_machine_is_used(path):
    _write(path, _doc())
    tables, status = calibration.read(path)
    assert status == "used" and tables == {"1n2r": {"Allreduce": {16: "cma"}}}


def test_no_file_is_no_error(path):
    assert calibration.read(path) == ({}, "none")


@pytest.mark.parametrize("field", ["cpu", "caches", "cores", "kernel", "mpi", "pgascol"])
def test_a_file_of_another_machine_or_set_up_is_ignored(path, field):
    doc = _doc()
    doc["fingerprint"][field] = "another"
    _write(path, doc)
    tables, status = calibration.read(path)
    assert tables == {} and status.startswith("ignored") and field in status


@pytest.mark.parametrize("content, why", [
    ('{"format": "pgascol-calib', "not valid JSON"),
    (json.dumps({"cma_min": {"Bcast": 65536}}), "not a pgascol-calibration/2 file"),
    (json.dumps({"format": calibration.FORMAT, "tables": {}}), "no fingerprint"),
    (json.dumps({"format": calibration.FORMAT, "fingerprint": None, "tables": {}}), "no fingerprint"),
    ("[1, 2]", "not a pgascol-calibration/2 file"),
])
def test_a_corrupt_or_old_file_is_ignored_with_the_reason(path, content, why):
    _write(path, content)
    tables, status = calibration.read(path)
    assert tables == {} and why in status, status


def test_malformed_tables_are_ignored(path):
    _write(path, _doc(tables={"1n2r": {"Allreduce": {"sixteen": "cma"}}}))
    tables, status = calibration.read(path)
    assert tables == {} and "malformed" in status


def test_an_unreadable_file_is_ignored(path):
    os.mkdir(path)      # (as root, permissions do not stop a read: a directory does)
    tables, status = calibration.read(path)
    assert tables == {} and status.startswith("ignored: unreadable")


def test_save_merges_and_reads_back(path):
    assert calibration.save({"1n2r": {"Bcast": {14: "cma"}}}, "learned", path) == path
    assert calibration.save({"1n2r": {"Bcast": {20: "cico"}}, "1n8ro": {"Alltoall": {17: "mpi"}}},
                            "calibrate", path) == path
    tables, status = calibration.read(path)
    assert status == "used"
    assert tables == {"1n2r": {"Bcast": {14: "cma", 20: "cico"}}, "1n8ro": {"Alltoall": {17: "mpi"}}}
    with open(path) as f:
        doc = json.load(f)
    assert doc["sources"] == {"1n2r": "calibrate", "1n8ro": "calibrate"}
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".calibration-")]


def test_save_replaces_a_foreign_file(path):
    doc = _doc()
    doc["fingerprint"]["cpu"] = "another"
    _write(path, doc)
    calibration.save({"1n2r": {"Bcast": {14: "cma"}}}, "learned", path)
    assert calibration.read(path)[0] == {"1n2r": {"Bcast": {14: "cma"}}}


def test_a_directory_that_cannot_be_written_is_no_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert calibration.save({"1n2r": {"Bcast": {14: "cma"}}}, "learned", str(blocker / "sub" / "c.json")) is None
