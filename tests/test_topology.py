"""Tests for pgascol.node.topology: sysfs discovery, overrides, distances, node layout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pgascol.node import topology
from pgascol.node.topology import CPU, Topology, discover, from_spec, load, node_layout, parse_cpulist


def cpulist(cpus: list[int]) -> str:
    return ",".join(map(str, cpus))


def make_sysfs(
    root: Path,
    places: dict[int, tuple[int, int]],
    caches: list[tuple[int, str, list[list[int]]]],
    nodes: dict[int, list[int]],
) -> Path:
    """Fake /sys: places is cpu -> (package, core_id); caches is (level, type, groups of CPUs sharing one instance)."""
    cpu_root = root / "devices/system/cpu"
    cpu_root.mkdir(parents=True)
    (cpu_root / "online").write_text(cpulist(sorted(places)) + "\n")
    for cpu, (package, core_id) in places.items():
        topo = cpu_root / f"cpu{cpu}/topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(f"{package}\n")
        (topo / "core_id").write_text(f"{core_id}\n")
        for index, (level, kind, groups) in enumerate(caches):
            cache = cpu_root / f"cpu{cpu}/cache/index{index}"
            cache.mkdir(parents=True)
            (cache / "level").write_text(f"{level}\n")
            (cache / "type").write_text(f"{kind}\n")
            (cache / "shared_cpu_list").write_text(cpulist(next(g for g in groups if cpu in g)) + "\n")
    for node, members in nodes.items():
        node_dir = root / f"devices/system/node/node{node}"
        node_dir.mkdir(parents=True)
        (node_dir / "cpulist").write_text(cpulist(members) + "\n")
    return root


@pytest.fixture
def two_socket_sysfs(tmp_path: Path) -> Path:
    """2 sockets = 2 NUMA nodes, 4 cores, SMT2; L1/L2 per core, L3 per socket.

    Linux-style numbering: CPU t*4 + c is thread t of core c; cores 0-1 are on
    socket 0 and cores 2-3 on socket 1, with core_id 0, 1 in each package.
    """
    places = {t * 4 + c: (c // 2, c % 2) for t in range(2) for c in range(4)}
    per_core = [[c, c + 4] for c in range(4)]
    per_socket = [[0, 1, 4, 5], [2, 3, 6, 7]]
    caches = [(1, "Data", per_core), (1, "Instruction", per_core), (2, "Unified", per_core), (3, "Unified", per_socket)]
    return make_sysfs(tmp_path, places, caches, {0: per_socket[0], 1: per_socket[1]})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]),
        ("5", [5]),
        ("", []),
        ("   \n", []),
        (" 0-1 , 4\n", [0, 1, 4]),
        ("3,1-2,2", [1, 2, 3]),
    ],
)
def test_parse_cpulist(text: str, expected: list[int]) -> None:
    assert parse_cpulist(text) == expected


@pytest.mark.parametrize("text", ["a", "3-1", "1-", "-2"])
def test_parse_cpulist_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpulist(text)


def test_discover_real_machine() -> None:
    topo = discover()
    assert topo.n_cpus == os.cpu_count()
    assert topo.source in ("sysfs", "fallback")
    assert [c.id for c in topo.cpus] == sorted(c.id for c in topo.cpus)
    for c in topo.cpus:
        assert c.socket >= 0 and c.core >= 0
        assert topo.distance(c.id, c.id) == 0
    assert 1 <= topo.n_sockets <= topo.n_cores <= topo.n_cpus
    assert set(topology.rank_cpus()) <= {c.id for c in topo.cpus}
    assert "CPU" in topo.summary()


def test_discover_fake_two_socket(two_socket_sysfs: Path) -> None:
    topo = discover(two_socket_sysfs)
    assert topo.source == "sysfs"
    assert (topo.n_sockets, topo.n_numa, topo.n_cores, topo.n_cpus) == (2, 2, 4, 8)
    # core_id repeats across packages, cores must not.
    assert topo.cpu(0).core != topo.cpu(2).core
    assert topo.cpu(0).core == topo.cpu(4).core
    assert topo.cpu(6) == CPU(id=6, core=2, socket=1, numa=1, caches=(("L1d", 2), ("L2", 2), ("L3", 2)))
    assert topo.distance(0, 0) == 0
    assert topo.distance(0, 4) == 1  # SMT siblings
    assert topo.distance(0, 1) == 3  # other core, same L3
    assert topo.distance(1, 4) == 3
    assert topo.distance(0, 2) == 6  # other socket
    assert topo.distance(5, 7) == topo.distance(7, 5) == 6
    assert topo.summary() == "2 sockets, 2 NUMA nodes, 4 cores, 8 CPUs, L3 shared by 4"


def test_discover_fake_shared_l2_and_numa(tmp_path: Path) -> None:
    """1 socket, 2 NUMA nodes of 4 cores, L2 shared by core pairs, no L3."""
    places = {c: (0, c) for c in range(8)}
    pairs = [[0, 1], [2, 3], [4, 5], [6, 7]]
    caches = [(1, "Data", [[c] for c in range(8)]), (2, "Unified", pairs)]
    topo = discover(make_sysfs(tmp_path, places, caches, {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))
    assert topo.distance(0, 1) == 2  # shared L2
    assert topo.distance(0, 2) == 4  # same NUMA node
    assert topo.distance(0, 4) == 5  # same socket
    assert topo.summary().endswith("L2 shared by 2")


def test_discover_without_numa_directory(two_socket_sysfs: Path) -> None:
    for node in (two_socket_sysfs / "devices/system/node").iterdir():
        (node / "cpulist").unlink()
    topo = discover(two_socket_sysfs)
    assert topo.source == "sysfs"
    assert {c.numa for c in topo.cpus} == {0}
    assert topo.n_sockets == 2


def test_discover_fallback_without_topology_files(two_socket_sysfs: Path) -> None:
    (two_socket_sysfs / "devices/system/cpu/cpu3/topology/core_id").unlink()
    topo = discover(two_socket_sysfs)
    assert topo.source == "fallback"
    assert topo.n_cpus == 8
    assert (topo.n_sockets, topo.n_cores) == (1, 8)


def test_discover_fallback_on_empty_sysfs(tmp_path: Path) -> None:
    topo = discover(tmp_path)
    assert topo.source == "fallback"
    assert topo.n_cpus == os.cpu_count()
    assert (topo.n_sockets, topo.n_numa, topo.n_cores) == (1, 1, topo.n_cpus)


def test_spec_override_large_machine() -> None:
    spec = "sockets=2,numa=4,cores=24,smt=2,l3=per-numa"
    topo = load({"PGASCOL_TOPOLOGY": spec})
    assert topo.source == f"override:{spec}"
    assert (topo.n_sockets, topo.n_numa, topo.n_cores, topo.n_cpus) == (2, 4, 24, 48)
    assert [c.id for c in topo.cpus] == list(range(48))
    assert topo.distance(0, 24) == 1  # CPU c + cores is the sibling of c
    assert topo.distance(0, 5) == 3  # cores 0-5 share NUMA node 0's L3
    assert topo.distance(0, 6) == 5  # NUMA node 1, same socket
    assert topo.distance(0, 12) == 6
    assert topo.distance(6, 35) == 3  # CPU 35 is thread 1 of core 11; cores 6-11 are NUMA node 1
    assert topo.cpu(35).core == 11 and topo.cpu(35).socket == 0
    assert topo.summary() == "2 sockets, 4 NUMA nodes, 24 cores, 48 CPUs, L3 shared by 12"


def test_spec_l3_scopes() -> None:
    assert from_spec("cores=4,l3=per-core").distance(0, 1) == 4
    assert from_spec("cores=4,numa=2,l3=per-socket").distance(0, 3) == 3
    assert from_spec("cores=4,numa=2,l3=per-numa").distance(0, 3) == 5
    defaults = from_spec("cores=8")
    assert (defaults.n_sockets, defaults.n_numa, defaults.n_cpus) == (1, 1, 8)


def test_json_round_trip_via_env(tmp_path: Path) -> None:
    original = from_spec("sockets=2,numa=2,cores=4,smt=2,l3=per-socket")
    assert Topology.from_dict(original.to_dict()) == original
    path = tmp_path / "topo.json"
    path.write_text(json.dumps(original.to_dict()))
    loaded = load({"PGASCOL_TOPOLOGY": str(path)})
    assert loaded.cpus == original.cpus
    assert loaded.source == f"override:{path}"


def test_load_without_override_discovers() -> None:
    assert load({}).cpus == discover().cpus


@pytest.mark.parametrize(
    "value",
    [
        "not-a-file-or-spec",
        "sockets=2,numa=3,cores=6",  # numa not a multiple of sockets
        "numa=2,cores=5",  # cores not a multiple of numa
        "cores=x",
        "cores=0",
        "sockets=2",  # cores missing
        "cores=4,l3=per-die",
        "cores=4,gpus=2",
        "cores=4,cores=8",
    ],
)
def test_invalid_override_raises(value: str) -> None:
    with pytest.raises(ValueError, match="PGASCOL_TOPOLOGY"):
        load({"PGASCOL_TOPOLOGY": value})


def test_invalid_json_override_raises(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    no_cpus = tmp_path / "no_cpus.json"
    no_cpus.write_text(json.dumps({"source": "x", "cpus": []}))
    for path in (broken, no_cpus):
        with pytest.raises(ValueError, match="PGASCOL_TOPOLOGY"):
            load({"PGASCOL_TOPOLOGY": str(path)})


def test_node_layout_oversubscribed() -> None:
    topo = from_spec("cores=2")
    layout = node_layout(topo, [(0, 1)] * 8)
    assert layout.oversubscribed is True
    assert layout.n_cpus_available == 2
    assert len(layout.home_cpus) == 8


def test_node_layout_bound_ranks() -> None:
    layout = node_layout(from_spec("cores=2"), [(0,), (1,)])
    assert layout.oversubscribed is False
    assert layout.n_cpus_available == 2
    assert layout.home_cpus == (0, 1)


def test_node_layout_bound_to_sets_uses_lowest_cpu() -> None:
    topo = from_spec("sockets=2,cores=4,smt=2")
    layout = node_layout(topo, [(0, 1, 4, 5), (2, 3, 6, 7)])
    assert layout.home_cpus == (0, 2)
    assert layout.n_cpus_available == 8


def test_node_layout_unbound_ranks_round_robin_over_cores() -> None:
    topo = from_spec("sockets=2,cores=4,smt=2")
    everything = tuple(range(8))
    layout = node_layout(topo, [everything] * 9)
    # first threads of cores 0..3 (socket 0 first), then their siblings, then wrap
    assert layout.home_cpus == (0, 1, 2, 3, 4, 5, 6, 7, 0)
    assert len({topo.cpu(h).core for h in layout.home_cpus[:4]}) == 4
    assert layout.oversubscribed is True


def test_node_layout_unbound_within_cpuset() -> None:
    """Ranks sharing a container/job cpuset smaller than the machine are spread over it."""
    topo = from_spec("cores=8")
    layout = node_layout(topo, [(4, 5, 6, 7)] * 3)
    assert layout.home_cpus == (4, 5, 6)
    assert layout.oversubscribed is False
