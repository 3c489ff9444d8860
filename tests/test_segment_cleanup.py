"""What is left in /dev/shm when MPI jobs end, normally or abnormally: the
scenarios of tests/mpi_programs/node_team.py (an exception and MPI Abort, a
SIGKILLed rank, a rank dying during set-up) and a rank of pgascol.Comm killed
mid-collective."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import tests.mpi_harness as harness
from tests.c.team_fork import segment_reachable
from tests.mpi_harness import REPO_ROOT, cleaned_mpi_shm, find_launcher, run_mpi

PROGRAM = "node_team.py"


# ---------------------------------------------------------------- leaks

def pgascol_entries() -> set[str]:
    """pgascol segments in /dev/shm (MPICH's own mpich_shm_* are not ours)."""
    return {n for n in os.listdir("/dev/shm") if n.startswith("pgascol-")}


def maps_mentioning(text: str):
    """The lines of every live process's /proc/<pid>/maps that contain text."""
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/maps") as f:
                    yield from [line for line in f if text in line]
            except OSError:  # gone, or a kernel thread
                pass


def _mapped(prefix: str) -> set[str]:
    """The names following `prefix` in the live processes' mappings."""
    return {line[line.find(prefix) + len(prefix):].split()[0] for line in maps_mentioning(prefix)}


def mapped_segments() -> set[str]:
    """pgascol segment files some live process has mapped (still named)."""
    return {"pgascol-" + n for n in _mapped("/dev/shm/pgascol-")}


def mapped_memfds() -> set[str]:
    """The names (pgascol-<hex>) of the pgascol memfd segments some live
    process maps: a memfd has no file to leave behind, only mappings."""
    return {"pgascol-" + n for n in _mapped("/memfd:pgascol-")}


def new_entries(before: set[str], rounds: int = 4) -> set[str]:
    """Entries that appeared since `before` and that nobody uses: a leak.

    Other jobs on the machine (other test runs) may hold pgascol segments of
    their own right now; those are mapped by their live processes, or lose
    their names within moments. An entry left by a job that has ended is
    mapped by nobody. Checked several times, so that a segment caught between
    its creation and its mapping is not taken for a leak."""
    suspects = pgascol_entries() - before
    for _ in range(rounds):
        if not suspects:
            break
        time.sleep(0.1)
        suspects &= pgascol_entries() - mapped_segments()
    return suspects


class Scenario:
    """One abnormal-ending job of `program` (node_team.py unless given) and
    what it left behind. The program writes each segment's address to
    RESULT_DIR/name-*, survivors their outcome to survivor-<rank>.json."""

    def __init__(self, name, np=4, env=None, auto_cleanup=True, kind="memfd", program=PROGRAM):
        before = pgascol_entries()
        mpi_before = harness.mpi_shm_entries()
        with tempfile.TemporaryDirectory(prefix="pgascol-leak-") as tmp:
            # MPICH's hydra kills every rank when one dies; without that
            # (keep_survivors), the survivors must see the death themselves.
            self.result = run_mpi(program, np, args=[tmp], select=[name],
                                  env={"PGASCOL_TIMEOUT": "10", "PGASCOL_SEGMENT": kind, **(env or {})},
                                  timeout=60, keep_survivors=not auto_cleanup)
            files = {p.name: p.read_text() for p in Path(tmp).iterdir() if p.suffix != ".tmp"}
        self.names = {files[f] for f in files if f.startswith("name-")}
        self.survivors = {int(f[len("survivor-"):-len(".json")]): json.loads(text)
                          for f, text in files.items() if f.startswith("survivor-")}
        self.files = files
        self.leaked = new_entries(before)
        # MPICH's own segments (mpich_shm_*): a killed job leaves them, run_mpi removes them.
        # Survivors the launcher left running (keep_survivors) may still map them then: once
        # they are gone, removed again (MPICH makes them for a communicator once MPI's own
        # collectives ran on it a few times, as the tuner's MPI candidate does)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(
                r.pid is not None and _running(r.pid) for r in self.result.ranks):
            time.sleep(0.1)
        harness.remove_orphaned_mpi_segments(mpi_before)
        mapped = "".join(maps_mentioning("/dev/shm/"))
        self.mpi_leftovers = {p for p in harness.mpi_shm_entries() - mpi_before if str(p) not in mapped}
        # the kind asked for is the kind made (a memfd never has a name)
        assert all(n.startswith("memfd:" if kind == "memfd" else "/pgascol-") for n in self.names), self.names

    def assert_no_leak(self):
        """Nothing in /dev/shm, no segment reachable or mapped, no process
        of the job alive, MPICH's segments removed."""
        __tracebackhide__ = True
        assert not self.leaked, f"left in /dev/shm: {sorted(self.leaked)}"
        for name in self.names:
            assert not segment_reachable(name), name
        alive = [r.pid for r in self.result.ranks if r.pid is not None and _running(r.pid)]
        assert not alive, f"ranks of the job still alive: {alive}"
        memfds = {n.rsplit("/", 1)[-1] for n in self.names if n.startswith("memfd:")}
        assert not memfds & mapped_memfds(), f"still mapped: {sorted(memfds & mapped_memfds())}"
        assert not self.mpi_leftovers, f"MPICH's segments left: {sorted(self.mpi_leftovers)}"


def _running(pid):
    """pid is a live process (orphaned zombies may never be reaped in containers)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False



KINDS = ["memfd", "named"]


@pytest.mark.parametrize("kind", KINDS)
def test_no_leak_after_normal_exit(kind):
    s = Scenario("test_scenario_normal_exit", kind=kind)
    s.result.check()
    assert len(s.names) == 1 and len([f for f in s.files if f.startswith("name-")]) == 4
    s.assert_no_leak()


@pytest.mark.parametrize("kind", KINDS)
def test_no_leak_after_exception_and_abort(kind):
    s = Scenario("test_scenario_raise_and_abort", kind=kind)
    assert not s.result.timed_out
    assert s.result.returncode != 0
    assert "aborting" in s.files  # rank 1 did raise and call Abort
    assert 1 not in s.survivors
    s.assert_no_leak()
    # Survivors were usually killed by the launcher; if one got to its
    # verdict, it is a pgascol error, not a barrier that went through.
    for rank, outcome in s.survivors.items():
        assert outcome["type"] in ("PeerDeadError", "TeamAbortedError", "PgascolTimeoutError"), outcome


def _check_survivors(s, every=False):
    """Those that got to a verdict saw rank 1 die; with every, all did."""
    victim = 1
    assert victim not in s.survivors
    if every:
        assert sorted(s.survivors) == [r for r in range(s.result.np) if r != victim], s.survivors
    for rank, outcome in s.survivors.items():
        assert outcome["type"] in ("PeerDeadError", "TeamAbortedError"), (rank, outcome)
        assert f"local rank {victim} " in outcome["message"], (rank, outcome)
        assert "died or exited" in outcome["message"], (rank, outcome)
        if outcome["type"] == "PeerDeadError":
            assert outcome["peer"] == victim
        # ULFM's class for a dead peer, on the one who saw it and on those its abort told
        assert outcome["error_class"] == outcome["ERR_PROC_FAILED"], (rank, outcome)
        assert outcome["is_mpi_exception"], (rank, outcome)


LAUNCH_MODES = ["auto-cleanup", pytest.param("no-auto-cleanup", marks=pytest.mark.skipif(
    harness.find_launcher()[1] != "mpich", reason="hydra's -disable-auto-cleanup"))]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", LAUNCH_MODES)
@pytest.mark.parametrize("np", [2, 4])
def test_no_leak_after_sigkill(np, mode, kind):
    """Rank 1 SIGKILLs itself while the others wait in the team barrier
    (PGASCOL_TIMEOUT=10). The launcher kills the survivors at once by
    default; with run_mpi's keep_survivors they live, and must see the dead
    peer, well before the timeout. Nothing may be left in /dev/shm either way."""
    start = time.monotonic()
    s = Scenario("test_scenario_sigkill", np=np, auto_cleanup=(mode == "auto-cleanup"), kind=kind)
    assert not s.result.timed_out
    assert time.monotonic() - start < 9, "survivors waited for the timeout"
    assert s.result.returncode != 0
    assert len(s.names) == 1
    s.assert_no_leak()
    _check_survivors(s, every=(mode != "auto-cleanup"))


def test_killed_during_setup_leaves_nothing_with_a_memfd():
    """Rank 1 dies after rank 0 created the segment but before it attached
    (rank 0 is then killed by the launcher in the set-up exchange): a memfd
    has no name, so there is nothing to leave behind."""
    s = Scenario("test_scenario_killed_during_setup", kind="memfd")
    assert not s.result.timed_out
    assert s.result.returncode != 0
    s.assert_no_leak()


def test_killed_during_setup_leaves_only_a_stale_segment_when_named():
    """The same with PGASCOL_SEGMENT=named: the name cannot be removed by the
    team. What is left must be recognisably stale: the sweep run by the next
    NodeTeam on the node removes it."""
    from pgascol.engine import _core

    before = pgascol_entries()
    s = Scenario("test_scenario_killed_during_setup", kind="named")
    try:
        assert not s.result.timed_out
        assert s.result.returncode != 0
        if s.leaked:
            _core.sweep_stale_segments()
            assert not (pgascol_entries() - before) & s.leaked, "the sweep kept a dead team's segment"
    finally:
        for name in s.leaked:  # never leave garbage behind, whatever happened
            try:
                os.unlink("/dev/shm/" + name)
            except FileNotFoundError:
                pass


KILLER = """
import os, signal, numpy as np
from mpi4py import MPI
import pgascol
c = pgascol.Comm(MPI.COMM_WORLD)
x = np.ones(1 << 16)
for i in range(200):
    if i == 50 and c.Get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    c.Allreduce(MPI.IN_PLACE, x)
"""


def test_killed_rank_leaves_no_segment_and_no_spinner():
    before = set(glob.glob("/dev/shm/pgascol-*"))
    launcher, _ = find_launcher()
    env = {**os.environ, "PGASCOL_TIMEOUT": "10",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    start = time.monotonic()
    with cleaned_mpi_shm():  # MPICH's own segment, left by the killed rank
        proc = subprocess.run([*launcher, "-n", "3", sys.executable, "-c", KILLER], env=env,
                              capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert proc.returncode != 0
    assert time.monotonic() - start < 60
    assert set(glob.glob("/dev/shm/pgascol-*")) <= before
