"""pgascol.upc's default algorithms: rules per collective, team shape and
size (pgascol/upc/defaults.py), from the built-in table or the file
`pgascol calibrate --upc` writes, a PGASCOL_UPC_<COLLECTIVE> variable winning
over both (plan.default). The measuring run itself: tests/test_zero_code.py."""
import json

import pytest

from pgascol.upc import ALGORITHMS, defaults, plan


@pytest.fixture
def calibration(tmp_path, monkeypatch):
    path = tmp_path / "upc.json"
    monkeypatch.setenv("PGASCOL_UPC_CALIBRATION", str(path))
    for coll in ALGORITHMS:
        monkeypatch.delenv("PGASCOL_UPC_" + coll.upper(), raising=False)
    defaults._loaded.clear()
    yield path
    defaults._loaded.clear()


def test_builtin_rules_pick_by_size_and_shape(calibration):
    assert plan.default("broadcast", 4, 1, 8) == "last"
    assert plan.default("broadcast", defaults.LAST, 1, 8) == "last"
    assert plan.default("broadcast", defaults.LAST + 1, 1, 8) == "push"
    assert plan.default("broadcast", defaults.SMALL, 1, 8) == "push"
    assert plan.default("broadcast", defaults.SMALL + 1, 1, 8) == "pull"
    assert plan.default("gather", 4, 1, 8) == "last" and plan.default("gather", defaults.SMALL, 1, 8) == "pull"
    assert plan.default("gather", 1 << 20, 1, 8) == "push"
    assert plan.default("exchange", defaults.LAST_ALL, 1, 8) == "last"
    assert plan.default("exchange", defaults.LAST_ALL + 1, 1, 8) == "pull"
    assert plan.default("exchange", 1 << 20, 2, 8) == "hier" and plan.default("broadcast", 4, 2, 8) == "hier-flat"
    # MYSYNC or NOSYNC on one node: each member copies its own blocks (the first name)
    assert plan.default("broadcast", 4, 1, 8, allsync=False) == "pull"
    assert plan.default("gather", 4, 1, 8, allsync=False) == "push"
    assert plan.default("exchange", 1 << 20, 2, 8, allsync=False) == "hier"
    # across nodes only the hier* algorithms run, whatever a rule says
    assert plan.default("broadcast", 4, 3, 8).startswith("hier")
    for coll in ALGORITHMS:
        for shape in ("node", "nodes"):
            for nbytes in (1, 1 << 30):
                assert plan.default(coll, nbytes, 1 if shape == "node" else 2, 4) in ALGORITHMS[coll]


def test_the_file_wins_for_its_shape_and_team_size_the_variable_over_both(calibration, monkeypatch):
    defaults.save({"broadcast": {"node:4": [[100, "binomial-pull"], [None, "push"]]},
                   "gather": {"node": [[None, "ring-push"]]}}, str(calibration), host="h")
    assert plan.default("broadcast", 100, 1, 4) == "binomial-pull"
    assert plan.default("broadcast", 101, 1, 4) == "push"
    assert plan.default("broadcast", 100, 1, 5) == "last"          # another team size: built in
    assert plan.default("gather", 1 << 20, 1, 5) == "ring-push"     # the file's rules for any size of team
    assert plan.default("scatter", 4, 1, 4) == "last"               # not in the file: built in
    # a later save keeps the other collectives' rules (a reduction's crossovers, say)
    defaults.save({"scatter": {"node:4": [[None, "ring-pull"]]}}, str(calibration))
    stored = json.loads(calibration.read_text())["rules"]
    assert set(stored) == {"broadcast", "gather", "scatter"}
    assert plan.default("scatter", 4, 1, 4) == "ring-pull" and plan.default("broadcast", 100, 1, 4) == "binomial-pull"
    monkeypatch.setenv("PGASCOL_UPC_BROADCAST", "pull")
    assert plan.default("broadcast", 100, 1, 4) == "pull"
    assert plan.defaults(1, 4)["broadcast"] == "pull (PGASCOL_UPC_BROADCAST)"


def test_an_unreadable_file_leaves_the_builtin_rules(calibration):
    calibration.write_text("{not json")
    assert defaults.load() == {} and plan.default("broadcast", 4, 1, 2) == "last"


def test_measurements_become_rules_ties_keep_the_smaller_sizes_winner():
    measured = [(4, {"push": 1.0, "pull": 1.05}), (64, {"push": 1.0, "pull": 0.95}), (1024, {"push": 2.0, "pull": 1.0}),
                (4096, {"push": 3.0, "pull": 1.0})]
    won = defaults.winners(measured)
    assert won == [(4, "push"), (64, "push"), (1024, "pull"), (4096, "pull")]
    assert defaults.compress(won) == [[64, "push"], [None, "pull"]]
    assert defaults.compress([(4, "a")]) == [[None, "a"]]
    rules = [[64, "push"], [None, "pull"]]
    assert [defaults.choose("x", n, "node", None, ("push", "pull")) for n in (1, 64, 65)] == [None] * 3
    defaults.BUILTIN["x"] = {"node": rules}
    try:
        assert [defaults.choose("x", n, "node", None, ("push", "pull")) for n in (1, 64, 65)] == ["push", "push", "pull"]
        assert defaults.choose("x", 1, "node", None, ("pull",)) == "pull"     # a rule naming what cannot run: skipped
    finally:
        del defaults.BUILTIN["x"]
