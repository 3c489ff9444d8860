"""NodeTeam set-up under MPI (run by tests/test_mpi_programs.py through the
harness).

The test_* functions check the geometry of the node split (the hosts, each
split into virtual nodes of PGASCOL_NODE_SIZE ranks, consecutive or round
robin by PGASCOL_NODE_MAP), the leader communicator, single copy, describe(), the
team's own barrier and bcast, free(), and that the segment's name is gone as
soon as NodeTeam() returns.

The test_scenario_* functions end the job abnormally on purpose (an
exception + MPI Abort, a SIGKILLed rank, a rank dying during set-up); they are
excluded from the normal run and started one by one by
tests/test_segment_cleanup.py with a result directory as sys.argv[1]. Every
rank writes the name of its segment to RESULT_DIR/name-<rank>; survivors of
a dead peer write RESULT_DIR/survivor-<rank>.json.
"""

import json
import os
import signal
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import NodeTeam
from tests.c.team_fork import segment_reachable
from tests.mpi_programs import expected_nodes, hosts_of

DESCRIBE_KEYS = {"ranks", "nodes", "local_size", "node_index", "oversubscribed",
                 "cpus_available", "home_cpus", "segment_bytes", "segment_kind", "cma", "cma_reason", "config"}


def expected_geometry(comm, env=os.environ):
    """What the node split must be (expected_nodes: the hosts, each split
    into virtual nodes of PGASCOL_NODE_SIZE ranks, consecutive or round
    robin by PGASCOL_NODE_MAP), as this rank's team must see it. Members
    are listed in rank order."""
    nodes = expected_nodes(comm, env)
    rank = comm.Get_rank()
    index = next(i for i, m in enumerate(nodes) if rank in m)
    members = nodes[index]
    return {"local_size": len(members), "local_rank": members.index(rank), "node_index": index,
            "num_nodes": len(nodes), "members": members,
            "leaders": [m[0] for m in nodes]}


def make_team(comm, env=None):
    """NodeTeam(comm), checking that nobody else can attach any more."""
    team = NodeTeam(comm) if env is None else NodeTeam(comm, env=env)
    name = team.core.name
    # The name is removed, or the memfd closed, as soon as every member
    # attached, before NodeTeam returns.
    assert not segment_reachable(name), f"{name} still reachable after NodeTeam()"
    return team, name


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ---------------------------------------------------------------- normal tests

def test_geometry(comm):
    want = expected_geometry(comm)
    team, name = make_team(comm)
    try:
        # every collective first, so that a failed check cannot strand the others
        members = team.node_comm.allgather(comm.Get_rank())
        names = comm.allgather((team.node_index, name))
    finally:
        team.free()
    assert team.comm is comm
    assert team.local_size == want["local_size"]
    assert team.local_rank == want["local_rank"]
    assert team.node_index == want["node_index"]
    assert team.num_nodes == want["num_nodes"]
    # node_comm holds exactly the node's ranks, in rank order
    assert members == want["members"], members
    # one segment per node: same name within a node, different across nodes
    by_node = {}
    for node, n in names:
        by_node.setdefault(node, set()).add(n)
    assert all(len(v) == 1 for v in by_node.values()), by_node
    assert len(by_node) == want["num_nodes"]
    assert len({next(iter(v)) for v in by_node.values()}) == want["num_nodes"]


def test_virtual_nodes_share_the_machine_cpus(comm):
    """The layout (CPUs, oversubscription, wait policy) is the machine's,
    whatever the virtual split: 4 ranks as 2 nodes of 2 on 2 CPUs are
    oversubscribed and must not spin. Home CPUs are those the whole machine's
    layout gives each rank."""
    from pgascol.node import topology
    host = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())    # this rank's machine
    team, _ = make_team(comm)
    try:
        whole = topology.node_layout(team.topology, host.allgather(topology.rank_cpus()))
        homes = host.allgather(team.layout.home_cpus[team.local_rank])
        layouts = host.allgather((team.layout.n_cpus_available, team.layout.oversubscribed))
        spin = team.core.config["spin_ns"]
    finally:
        team.free()
        host.Free()
    # every rank of a machine sees that machine's whole layout
    assert homes == list(whole.home_cpus), (homes, whole)
    assert set(layouts) == {(whole.n_cpus_available, whole.oversubscribed)}, layouts
    assert whole.oversubscribed == (len(homes) > whole.n_cpus_available)
    assert (spin == 0) == whole.oversubscribed, spin


def test_core_matches_node(comm):
    team, _ = make_team(comm)
    try:
        assert team.core.rank == team.local_rank
        assert team.core.size == team.local_size
        assert not team.core.closed
    finally:
        team.free()


def test_leader_comm(comm):
    want = expected_geometry(comm)
    team, _ = make_team(comm)
    try:
        is_leader = team.leader_comm is not None
        leader_info = None
        if is_leader:
            leader_info = (team.leader_comm.Get_size(), team.leader_comm.Get_rank(),
                           team.leader_comm.allgather(comm.Get_rank()))
        # every rank holds a communicator of the split (the leaders', or the
        # other ranks' unused one), so no rank's context ids fall out of step
        split_members = team.split_comm.allgather(comm.Get_rank())
    finally:
        team.free()
    assert team.split_comm == MPI.COMM_NULL     # freed with the team
    assert is_leader == (team.local_rank == 0)
    others = [r for r in range(comm.Get_size()) if r not in want["leaders"]]
    assert split_members == (want["leaders"] if is_leader else others), split_members
    if is_leader:
        size, rank, leaders = leader_info
        assert size == want["num_nodes"]
        assert rank == team.node_index
        assert leaders == want["leaders"], leaders


def _check_placement(comm, env):
    """NodeTeam(comm, env) places every rank as expected_geometry(comm, env) says."""
    want = expected_geometry(comm, env)
    team, _ = make_team(comm, env=env)
    try:
        members = team.node_comm.allgather(comm.Get_rank())
        placement = comm.allgather((team.node_index, team.local_rank))
        buf = bytearray(b"%08d" % comm.Get_rank()) if team.local_rank == 0 else bytearray(8)
        team.core.bcast(buf, 8, 0)
    finally:
        team.free()
    assert (team.node_index, team.local_rank, team.local_size, team.num_nodes) == (
        want["node_index"], want["local_rank"], want["local_size"], want["num_nodes"])
    assert members == want["members"], members
    assert bytes(buf) == b"%08d" % want["members"][0]    # the node's first rank leads it
    return placement


def test_roundrobin_node_map(comm):
    """PGASCOL_NODE_MAP=roundrobin with virtual nodes of k: ceil(n/k) nodes,
    rank r on node r % nodes, local ranks in rank order (whatever this job's
    own environment says)."""
    size = comm.Get_size()
    one_host = hosts_of(comm) == 1     # across hosts each host is split: _check_placement's expectation
    for k in (1, 2, 3):
        env = {**os.environ, "PGASCOL_NODE_SIZE": str(k), "PGASCOL_NODE_MAP": "roundrobin"}
        placement = _check_placement(comm, env)
        nodes = -(-size // k)
        assert not one_host or placement == [(r % nodes, r // nodes) for r in range(size)], (k, placement)
    # block stays the default, and is what "block" names
    for env_map in ("", "block", "BLOCK"):
        env = {**os.environ, "PGASCOL_NODE_SIZE": "2", "PGASCOL_NODE_MAP": env_map}
        placement = _check_placement(comm, env)
        assert not one_host or placement == [(r // 2, r % 2) for r in range(size)], (env_map, placement)


def test_node_map_invalid(comm):
    from pgascol.node import config

    env = {**os.environ, "PGASCOL_NODE_SIZE": "2", "PGASCOL_NODE_MAP": "cyclic"}
    try:
        NodeTeam(comm, env=env)
    except pgascol.ArgumentError as exc:
        assert "PGASCOL_NODE_MAP" in str(exc) and "roundrobin" in str(exc), str(exc)
    else:
        raise AssertionError("PGASCOL_NODE_MAP=cyclic was accepted")
    assert config.node_map({}) == "block"
    assert config.node_map({"PGASCOL_NODE_MAP": " RoundRobin "}) == "roundrobin"
    assert "PGASCOL_NODE_MAP" in config.VARIABLES


def test_cma_and_describe(comm):
    want = expected_geometry(comm)
    team, _ = make_team(comm)
    try:
        assert team.cma_ok is True, team.cma_reason
        assert team.cma_reason == ""
        info = team.describe()
        assert set(info) == DESCRIBE_KEYS, sorted(info)
        assert info["ranks"] == comm.Get_size()
        assert info["nodes"] == want["num_nodes"]
        assert info["local_size"] == want["local_size"]
        assert info["node_index"] == want["node_index"]
        assert info["cma"] is True and info["cma_reason"] == ""
        assert info["segment_bytes"] == team.core.segment_bytes > 0
        assert info["config"]["timeout_s"] == float(os.environ["PGASCOL_TIMEOUT"])
        assert isinstance(info["oversubscribed"], bool)
        json.dumps(info)  # printable by `pgascol info`
    finally:
        team.free()


def _team_works(team, comm):
    """The node's first rank broadcasts its global rank through the team."""
    buf = bytearray(b"%08d" % comm.Get_rank()) if team.local_rank == 0 else bytearray(8)
    team.core.bcast(buf, 8, 0)
    team.core.barrier()
    return bytes(buf) == b"%08d" % team.node_comm.bcast(comm.Get_rank(), root=0)


def test_segment_kinds(comm):
    """A memfd by default, a /dev/shm name with PGASCOL_SEGMENT=named: every
    member of a node holds the same kind and address, the team works, and
    nobody can attach once NodeTeam returns (make_team)."""
    for kind, env in (("memfd", {}), ("memfd", {"PGASCOL_SEGMENT": "memfd"}),
                      ("named", {"PGASCOL_SEGMENT": "named"})):
        env = {k: v for k, v in os.environ.items() if k != "PGASCOL_SEGMENT"} | env
        team, name = make_team(comm, env=env)
        try:
            node = team.node_comm.allgather((team.core.segment_kind, name, team.describe()["segment_kind"]))
            creator = team.node_comm.bcast(os.getpid(), root=0)
            works = _team_works(team, comm)
        finally:
            team.free()
        assert set(node) == {(kind, name, kind)}, node
        # a memfd is reached through its creator's /proc entry
        assert name.startswith("memfd:%d:" % creator if kind == "memfd" else "/pgascol-"), name
        assert works


def test_memfd_out_of_reach_falls_back_to_a_name(comm):
    """Every node's creator closes its /proc entries to the others (not
    dumpable; the others lower CAP_SYS_PTRACE, which root has): the kernel
    refuses them the memfd, and the node makes its segment again under a
    /dev/shm name, removed as usual. Single copy from such a creator is
    refused too; the team works all the same."""
    from tests.c.team_fork import set_dumpable, set_ptrace_capability

    creator = expected_geometry(comm)["local_rank"] == 0
    had_cap = set_ptrace_capability(False)
    if creator:
        set_dumpable(False)
    try:
        team, name = make_team(comm)
    finally:
        set_dumpable(True)
        if had_cap:
            set_ptrace_capability(True)
    try:
        kinds = team.node_comm.allgather(team.core.segment_kind)
        works = _team_works(team, comm)
    finally:
        team.free()
    fell_back = team.local_size > 1     # a node of one never attaches
    assert set(kinds) == {"named" if fell_back else "memfd"}, kinds
    assert name.startswith("/pgascol-" if fell_back else "memfd:"), name
    assert works


def test_cma_disabled_by_env(comm):
    team, _ = make_team(comm, env={**os.environ, "PGASCOL_CMA": "0"})
    try:
        assert team.cma_ok is False
        assert "PGASCOL_CMA" in team.cma_reason
        assert team.describe()["cma"] is False
    finally:
        team.free()


def test_barrier_bcast_stats(comm):
    team, _ = make_team(comm)
    core = team.core
    wrong = []
    try:
        nbar = 25
        for _ in range(nbar):
            core.barrier()
        nbcast = 0
        big = 0
        expected_paths = {}
        cfg = core.config
        cma_min = cfg["cma_min"]["Bcast"]

        def path_of(n):  # what the team's thresholds choose
            if n <= cfg["inline_max"]:
                return "inline"
            return "cma" if core.cma_ok and cma_min is not None and n >= cma_min else "cico"

        for root in range(team.local_size):
            # inline, copy-in/copy-out within the ring, and (two roots only,
            # to keep it quick) more than the 1 MiB ring: slots are reused
            sizes = (8, 100 * 1024) + ((1536 * 1024 + 3,) if root in (0, team.local_size - 1) else ())
            big += len(sizes) - 2
            for n in sizes:
                expected = (np.arange(n, dtype=np.uint64) * 7 + root).astype(np.uint8)
                buf = expected.copy() if team.local_rank == root else np.zeros(n, np.uint8)
                core.bcast(buf, n, root)
                nbcast += 1
                expected_paths[path_of(n)] = expected_paths.get(path_of(n), 0) + 1
                if not np.array_equal(buf, expected):
                    wrong.append((root, n))
                # keeps back-to-back Bcasts of different sizes apart: see
                # test_bcast_back_to_back_sizes for what happens without
                core.barrier()
        stats = core.stats()
    finally:
        team.free()
    assert not wrong, wrong
    assert stats["Barrier"] == {"inline": nbar + nbcast}, stats
    assert stats["Bcast"] == expected_paths, stats
    assert sum(stats["Bcast"].values()) == nbcast == 2 * team.local_size + big


def _gate_switches_bound(seconds, shortest=0.010, longest=1.0):
    """The most times the spin gate can close in `seconds` (sync.c,
    spin_gate_count): once per hold, holds doubling from `shortest` to
    `longest` while it keeps closing."""
    switches, hold, t = 1, shortest, 0.0
    while t <= seconds:
        t += hold
        hold = min(2 * hold, longest)
        switches += 1
    return switches


def test_spin_gate_closes_while_the_waited_for_member_shares_our_cpu(comm):
    """A team made for CPUs of its own whose members are then all pinned to
    one CPU: the member waited for never runs while we spin, so the waits
    must stop spinning (a bounded number of switches off, each for a hold)
    and spin again once the hold is over. Teams that outnumber their CPUs
    never spin, and a team of one never waits."""
    team, _ = make_team(comm)
    core = team.core
    home = os.sched_getaffinity(0)
    spins = core.config["spin_iters"] > 0
    try:
        if not spins or team.local_size == 1:
            for _ in range(50):
                core.barrier()
            before, after = core.waits(), None
        else:
            before = core.waits()
            os.sched_setaffinity(0, {min(home)})
            start = time.monotonic()
            # every member makes the same calls: they agree when to stop
            while comm.allreduce(time.monotonic() - start < 0.5 or core.waits()["spinning"], op=MPI.LOR):
                for _ in range(20):
                    core.barrier()
                assert time.monotonic() - start < 20, "the spin gate never closed: %s" % core.waits()
            elapsed = time.monotonic() - start
            closed = core.waits()
            os.sched_setaffinity(0, home)
            # nothing re-measures while the hold runs: it ends by the clock
            time.sleep(closed["off_ms"] / 1e3 + 0.005)
            after = core.waits()
            core.barrier()
    finally:
        os.sched_setaffinity(0, home)
        team.free()
    if after is None:   # a team of one never waits
        assert before == {"spinning": spins, "spin_offs": 0, "off_ms": 0.0}, before
        return
    assert before == {"spinning": True, "spin_offs": 0, "off_ms": 0.0}, before
    assert not closed["spinning"] and closed["off_ms"] > 0, closed
    assert 1 <= closed["spin_offs"] <= _gate_switches_bound(elapsed), (closed, elapsed)
    assert after == {"spinning": True, "spin_offs": closed["spin_offs"], "off_ms": 0.0}, after


def test_bcast_back_to_back_sizes(comm):
    """Two Bcasts of different sizes from the same root, one reader late:
    each must deliver its own payload."""
    team, _ = make_team(comm)
    core = team.core
    try:
        small = bytearray(b"s" * 8) if team.local_rank == 0 else bytearray(8)
        big = bytearray(b"B" * 100_000) if team.local_rank == 0 else bytearray(100_000)
        if team.local_rank == team.local_size - 1 and team.local_size > 1:
            time.sleep(0.2)  # the root runs ahead into the second Bcast
        core.bcast(small, 8, 0)
        core.bcast(big, 100_000, 0)
    finally:
        team.free()
    assert bytes(small) == b"s" * 8
    assert bytes(big) == b"B" * 100_000


def test_bcast_single_copy(comm):
    env = {**os.environ, "PGASCOL_CMA_MIN_BCAST": str(64 * 1024)}
    team, _ = make_team(comm, env=env)
    core = team.core
    try:
        assert core.config["cma_min"]["Bcast"] == 64 * 1024
        n = 1024 * 1024 + 1
        root = team.local_size - 1
        expected = np.random.default_rng(99).integers(0, 256, n, dtype=np.uint8)
        buf = expected.copy() if team.local_rank == root else np.zeros(n, np.uint8)
        core.bcast(buf, n, root)
        assert np.array_equal(buf, expected)
        assert core.stats()["Bcast"] == {"cma": 1}
    finally:
        team.free()


def test_free(comm):
    team, _ = make_team(comm)
    core = team.core
    node_comm = team.node_comm
    core.barrier()
    team.free()
    assert team.core is None
    assert core.closed
    for call in (core.barrier, lambda: core.bcast(bytearray(1), 1, 0), core.stats):
        try:
            call()
        except pgascol.TeamClosedError:
            pass
        else:
            raise AssertionError("a freed team still works")
    assert node_comm == MPI.COMM_NULL
    team.free()  # idempotent
    comm.Barrier()


def test_subcommunicator(comm):
    """A team over a split of the world: even and odd ranks."""
    sub = comm.Split(comm.Get_rank() % 2, comm.Get_rank())
    try:
        team, _ = make_team(sub)
        try:
            assert team.local_size <= sub.Get_size()
            buf = bytearray(b"%08d" % sub.Get_rank()) if team.local_rank == 0 else bytearray(8)
            team.core.bcast(buf, 8, 0)
            first = team.node_comm.bcast(sub.Get_rank(), root=0)
            assert bytes(buf) == b"%08d" % first
        finally:
            team.free()
    finally:
        sub.Free()


def test_bad_communicator():
    for bad in (MPI.COMM_NULL, "COMM_WORLD", None):
        try:
            NodeTeam(bad)
        except pgascol.ArgumentError:
            pass
        else:
            raise AssertionError(f"NodeTeam({bad!r}) was accepted")


# ---------------------------------------------------------------- abnormal endings

def _result_dir():
    return sys.argv[1]


def _record_name(team, comm):
    _write(os.path.join(_result_dir(), f"name-{comm.Get_rank()}"), team.core.name)


def _survive(team, comm, victim):
    """Wait in the team barrier for a member that will not come; record how
    it ended and leave at once (the harness's MPI barrier could never finish)."""
    try:
        team.core.barrier()
        outcome = {"type": None, "message": "barrier returned"}
    except pgascol.PgascolError as exc:
        outcome = {"type": type(exc).__name__, "message": str(exc), "peer": exc.peer,
                   "error_class": exc.Get_error_class(), "ERR_PROC_FAILED": MPI.ERR_PROC_FAILED,
                   "is_mpi_exception": isinstance(exc, MPI.Exception)}
    outcome["victim_local_rank"] = victim
    _write(os.path.join(_result_dir(), f"survivor-{comm.Get_rank()}.json"), json.dumps(outcome))
    # Leave together: a rank that ends early (without MPI_Finalize) may make
    # the launcher kill those still deciding.
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        done = [f for f in os.listdir(_result_dir()) if f.startswith("survivor-") and f.endswith(".json")]
        if len(done) >= comm.Get_size() - 1:
            break
        time.sleep(0.02)
    os._exit(0)


def test_scenario_normal_exit(comm):
    team, _ = make_team(comm)
    _record_name(team, comm)
    team.core.barrier()
    # no free(): the process ends with the segment mapped


def test_scenario_raise_and_abort(comm):
    team, _ = make_team(comm)
    _record_name(team, comm)
    if comm.Get_rank() == 1:
        try:
            raise RuntimeError("deliberate failure after team creation")
        except RuntimeError:
            _write(os.path.join(_result_dir(), "aborting"), "1")
            comm.Abort(1)
            while True:  # MPICH's MPI_Abort may return before the launcher kills us
                time.sleep(1)
    _survive(team, comm, 1 if team.node_comm.Get_size() > 1 else -1)


def test_scenario_sigkill(comm):
    team, _ = make_team(comm)
    _record_name(team, comm)
    victim = 1 % comm.Get_size()
    comm.Barrier()  # everyone is past the MPI part of the set-up
    if comm.Get_rank() == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    _survive(team, comm, victim)


def test_scenario_killed_during_setup(comm):
    """Rank 1 dies after rank 0 created the segment, before attaching."""
    import pgascol.node.team as team_module

    class DieOnAttach:
        """Stands in for pgascol.engine._core in pgascol.node.team on rank 1."""
        class Team:
            @staticmethod
            def attach(*args):
                os.kill(os.getpid(), signal.SIGKILL)

    if comm.Get_rank() == 1:
        team_module._core = DieOnAttach
    team, _ = make_team(comm)
    _record_name(team, comm)
    team.core.barrier()
