"""Global arrays when jobs end abnormally (the scenarios of
tests/mpi_programs/pgas_failures.py): a lock holder SIGKILLed while others
want the lock, a rank SIGKILLed or raising mid-access, ranks that exit
without freeing. On one node and on virtual nodes of 2 (PGASCOL_NODE_SIZE),
where the victim is on some survivors' node and not on others'."""
import pytest

import tests.mpi_harness as harness
from tests.test_segment_cleanup import Scenario

PROGRAM = "pgas_failures.py"
TIMEOUT = 3         # PGASCOL_TIMEOUT: how long a rank off the victim's node waits
VNODES = {"PGASCOL_NODE_SIZE": "2"}
# (np, setting): one node, then virtual nodes {0,1} {2} / {0,1} {2,3} / 4 x 2;
# the victim is rank 1.
PLACEMENTS = [(2, "one_node"), (3, "one_node"), (4, "one_node"), (8, "one_node"),
              (3, "vnodes_of_2"), (4, "vnodes_of_2"), (8, "vnodes_of_2")]


def scenario(name, np, setting, auto_cleanup=True):
    env = {"PGASCOL_TIMEOUT": str(TIMEOUT), **(VNODES if setting == "vnodes_of_2" else {})}
    s = Scenario(name, np=np, env=env, auto_cleanup=auto_cleanup, program=PROGRAM)
    assert not s.result.timed_out, s.result.exit_report()
    # the node team's segment and the five arrays', one per node
    assert len(s.names) == 6 * (1 if setting == "one_node" else (np + 1) // 2), s.names
    return s


def check_survivors(s, np, error_on_node, error_off_node):
    """Every rank but the victim raised: on the victim's node at once (its
    death is seen), elsewhere `error_off_node` within PGASCOL_TIMEOUT plus
    a margin for the loaded machine."""
    __tracebackhide__ = True
    assert sorted(s.survivors) == [r for r in range(np) if r != 1], (s.survivors, s.result.exit_report())
    for rank, outcome in s.survivors.items():
        on_node = outcome["victim_on_my_node"]
        assert outcome["type"] == (error_on_node if on_node else error_off_node), (rank, outcome)
        assert "rank 1" in outcome["message"], (rank, outcome)
        assert outcome["seconds"] < (TIMEOUT * 0.8 if on_node else TIMEOUT + 5), (rank, outcome)


# Survivors of a killed rank: only MPICH's hydra can be told to leave them running.
keeps_survivors = pytest.mark.skipif(harness.find_launcher()[1] != "mpich", reason="run_mpi's keep_survivors")


@keeps_survivors
@pytest.mark.parametrize(("np", "setting"), PLACEMENTS)
def test_killed_lock_holder_is_named_by_every_waiter(np, setting):
    """Rank 1 dies holding the lock. Its node-mates raise PeerDeadError
    naming it as soon as they look (liveness); ranks of other nodes cannot
    see it die and raise PgascolTimeoutError naming the holder after
    PGASCOL_TIMEOUT. No rank hangs; nothing is left behind."""
    s = scenario("test_scenario_lock_holder_killed", np, setting, auto_cleanup=False)
    check_survivors(s, np, "PeerDeadError", "PgascolTimeoutError")
    for outcome in s.survivors.values():
        assert "holder of the lock, rank 1" in outcome["message"], outcome
    s.assert_no_leak()


@keeps_survivors
@pytest.mark.parametrize(("np", "setting"), [(2, "one_node"), (4, "one_node"), (8, "one_node"),
                                             (4, "vnodes_of_2"), (8, "vnodes_of_2")])
def test_rank_killed_mid_access(np, setting):
    """Rank 1 dies in the middle of rounds of accesses and barriers: every
    other rank raises (its node-mates PeerDeadError at once, the others
    PgascolTimeoutError); no rank hangs; nothing is left behind."""
    s = scenario("test_scenario_sigkill_mid_access", np, setting, auto_cleanup=False)
    assert sorted(s.survivors) == [r for r in range(np) if r != 1], s.result.exit_report()
    for rank, outcome in s.survivors.items():
        on_node = outcome["victim_on_my_node"]
        assert outcome["type"] in (("PeerDeadError", "TeamAbortedError") if on_node else ("PgascolTimeoutError",)), \
            (rank, outcome)
        assert outcome["seconds"] < (TIMEOUT * 0.8 if on_node else TIMEOUT + 5), (rank, outcome)
    s.assert_no_leak()


@pytest.mark.parametrize(("np", "setting"), PLACEMENTS)
def test_rank_killed_mid_access_with_the_launchers_cleanup(np, setting):
    """The same with the launcher's default: it kills every rank when one dies."""
    s = scenario("test_scenario_sigkill_mid_access", np, setting)
    assert s.result.returncode != 0
    s.assert_no_leak()


@pytest.mark.parametrize(("np", "setting"), PLACEMENTS)
def test_exception_mid_access_leaves_nothing(np, setting):
    """Rank 1 raises mid-access; its process ends the job through MPI Abort."""
    s = scenario("test_scenario_exception_mid_access", np, setting)
    assert s.result.returncode != 0 and s.files.get("aborting") == "1"
    assert s.files.get("error") == "IndexOutOfRangeError"
    s.assert_no_leak()


@pytest.mark.parametrize(("np", "setting"), [(1, "one_node")] + PLACEMENTS)
def test_exit_without_freeing_leaves_nothing(np, setting):
    """Arrays, a matrix and a lock left allocated (spanning nodes: windows
    locked, the progress thread running) at a normal exit."""
    s = scenario("test_scenario_normal_exit", np, setting)
    s.result.check()
    s.assert_no_leak()
