"""Machine topology as seen from Linux sysfs, for distance-aware trees.

A tiny, pure-Python cousin of hwloc: logical CPUs with their core, socket,
NUMA node and shared caches, and a small integer distance between two CPUs.
This module imports nothing else from pgascol.

The ``PGASCOL_TOPOLOGY`` environment variable overrides discovery (see
:func:`load`), so trees for machines we do not have can be built and tested.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

ENV_VAR = "PGASCOL_TOPOLOGY"

# Distance scale returned by Topology.distance: how far apart two CPUs are in
# the memory hierarchy (same CPU, same core, same cache, same NUMA node, ...).
SAME_CPU = 0
SAME_CORE = 1
SHARED_L2 = 2
SHARED_L3 = 3
SAME_NUMA = 4
SAME_SOCKET = 5
OTHER_SOCKET = 6

_L3_SCOPES = ("per-numa", "per-socket", "per-core")

Cache = tuple[str, int]


@dataclass(frozen=True)
class CPU:
    """One logical CPU (hardware thread)."""

    id: int  # OS cpu number
    core: int  # physical core, unique machine-wide
    socket: int  # physical_package_id
    numa: int  # NUMA node id (0 when the kernel shows none)
    # Shared data/unified caches from L1 outwards, e.g. (("L1d", 0), ("L2", 0),
    # ("L3", 0)); the int is the smallest CPU sharing that cache instance.
    caches: tuple[Cache, ...] = ()


def _cache_level(name: str) -> int:
    """Cache level from its name: "L1d" -> 1, "L3" -> 3."""
    return int(name[1:].rstrip("di"))


@dataclass(frozen=True)
class Topology:
    """All logical CPUs of one machine, sorted by id."""

    cpus: tuple[CPU, ...]
    source: str  # "sysfs", "override:<where>" or "fallback"

    @cached_property
    def _by_id(self) -> dict[int, CPU]:
        return {c.id: c for c in self.cpus}

    def cpu(self, cpu_id: int) -> CPU:
        """The CPU with OS number ``cpu_id``; ValueError if unknown."""
        try:
            return self._by_id[cpu_id]
        except KeyError:
            raise ValueError(f"CPU {cpu_id} is not in the topology ({self.summary()})") from None

    def distance(self, a: int, b: int) -> int:
        """Distance between CPUs ``a`` and ``b``, the nearest level that applies:

        0 same CPU, 1 same core (SMT siblings), 2 share an L1/L2 cache,
        3 share an L3 or further (last-level) cache, 4 same NUMA node,
        5 same socket, 6 different socket. Sockets are checked before NUMA
        nodes, so a NUMA node spanning sockets still gives 6.
        """
        ca, cb = self.cpu(a), self.cpu(b)
        if ca.id == cb.id:
            return SAME_CPU
        if ca.core == cb.core:
            return SAME_CORE
        shared = set(ca.caches) & set(cb.caches)
        if shared:
            return SHARED_L2 if min(_cache_level(n) for n, _ in shared) <= 2 else SHARED_L3
        if ca.socket != cb.socket:
            return OTHER_SOCKET
        return SAME_NUMA if ca.numa == cb.numa else SAME_SOCKET

    @property
    def n_sockets(self) -> int:
        return len({c.socket for c in self.cpus})

    @property
    def n_numa(self) -> int:
        return len({c.numa for c in self.cpus})

    @property
    def n_cores(self) -> int:
        return len({c.core for c in self.cpus})

    @property
    def n_cpus(self) -> int:
        return len(self.cpus)

    def summary(self) -> str:
        """One human line, e.g. "1 socket, 1 NUMA node, 2 cores, 2 CPUs, L3 shared by 2"."""
        parts = [
            _plural(self.n_sockets, "socket"),
            _plural(self.n_numa, "NUMA node"),
            _plural(self.n_cores, "core"),
            _plural(self.n_cpus, "CPU"),
        ]
        instances = Counter(cache for c in self.cpus for cache in c.caches)
        if instances:
            last = max((name for name, _ in instances), key=lambda n: (_cache_level(n), n))
            sizes = sorted({n for (name, _), n in instances.items() if name == last})
            shared_by = str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
            parts.append(f"{last} shared by {shared_by}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form, read back by :meth:`from_dict`."""
        return {
            "source": self.source,
            "cpus": [
                {
                    "id": c.id,
                    "core": c.core,
                    "socket": c.socket,
                    "numa": c.numa,
                    "caches": [[name, k] for name, k in c.caches],
                }
                for c in self.cpus
            ],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Topology:
        """Inverse of :meth:`to_dict`; ValueError on malformed input."""
        try:
            cpus = tuple(
                sorted(
                    (
                        CPU(
                            id=int(c["id"]),
                            core=int(c["core"]),
                            socket=int(c["socket"]),
                            numa=int(c.get("numa", 0)),
                            caches=tuple((str(name), int(k)) for name, k in c.get("caches", ())),
                        )
                        for c in d["cpus"]
                    ),
                    key=lambda c: c.id,
                )
            )
            source = str(d.get("source", "dict"))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"malformed topology dict: {e!r}") from e
        if not cpus:
            raise ValueError("topology has no CPUs")
        if len({c.id for c in cpus}) != len(cpus):
            raise ValueError("topology lists a CPU id twice")
        return cls(cpus, source)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def parse_cpulist(s: str) -> list[int]:
    """Parse a kernel cpulist: "0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11]; "" -> []."""
    cpus: set[int] = set()
    for item in s.split(","):
        item = item.strip()
        if not item:
            continue
        lo, sep, hi = item.partition("-")
        try:
            first, last = int(lo), int(hi if sep else lo)
        except ValueError:
            raise ValueError(f"bad cpulist item {item!r} in {s!r}") from None
        if first < 0 or last < first:
            raise ValueError(f"bad cpulist range {item!r} in {s!r}")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def rank_cpus(pid: int = 0) -> tuple[int, ...]:
    """CPUs process ``pid`` (0: this one) may run on, sorted."""
    return tuple(sorted(os.sched_getaffinity(pid)))


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _numbered_dirs(parent: Path, prefix: str) -> dict[int, Path]:
    """{n: parent/<prefix>n} for the existing directories."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)")
    try:
        entries = list(parent.iterdir())
    except OSError:
        return {}
    return {int(m.group(1)): p for p in entries if (m := pattern.fullmatch(p.name)) and p.is_dir()}


def _cpu_caches(cpu_dir: Path, cpu_id: int) -> tuple[Cache, ...]:
    """Data and unified caches of one CPU, L1 outwards; instruction caches are skipped."""
    caches = []
    for index in _numbered_dirs(cpu_dir / "cache", "index").values():
        level = _read_int(index / "level")
        kind = _read(index / "type")
        if level is None or kind not in ("Data", "Unified"):
            continue
        sharing = parse_cpulist(_read(index / "shared_cpu_list") or "")
        name = f"L{level}d" if kind == "Data" else f"L{level}"
        caches.append((name, min(sharing, default=cpu_id)))
    return tuple(sorted(set(caches), key=lambda c: (_cache_level(c[0]), c[0])))


_CACHE_SIZE = re.compile(r"\s*(\d+)\s*([KMG]?)\s*")


def last_level_cache(cache_dir: str | os.PathLike[str] = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """Bytes of cpu0's last-level cache: its level-3 data or unified cache in
    sysfs, else its highest level; 0 when sysfs does not say."""
    found: dict[int, int] = {}
    for index in _numbered_dirs(Path(cache_dir), "index").values():
        level, kind = _read_int(index / "level"), _read(index / "type")
        m = _CACHE_SIZE.fullmatch((_read(index / "size") or "").upper())
        if level is None or m is None or kind == "Instruction":
            continue
        size = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]
        found[level] = max(size, found.get(level, 0))
    if not found:
        return 0
    return found.get(3) or found[max(found)]


def discover(sysfs_root: str | os.PathLike[str] = "/sys") -> Topology:
    """Read the topology of this machine from sysfs.

    Missing NUMA or cache information just leaves those out (NUMA node 0, no
    caches). If the CPU list or any CPU's package/core id cannot be read (as
    in some containers) the result has source "fallback": one socket, each
    CPU its own core.
    """
    cpu_root = Path(sysfs_root) / "devices/system/cpu"
    fallback = False
    try:
        ids = parse_cpulist(_read(cpu_root / "online") or "")
    except ValueError:
        ids = []
    if not ids:
        ids = sorted(_numbered_dirs(cpu_root, "cpu"))
    if not ids:
        ids = list(range(os.cpu_count() or 1))
        fallback = True

    numa_of: dict[int, int] = {}
    for node, node_dir in sorted(_numbered_dirs(Path(sysfs_root) / "devices/system/node", "node").items()):
        try:
            members = parse_cpulist(_read(node_dir / "cpulist") or "")
        except ValueError:
            continue
        for cpu in members:
            numa_of.setdefault(cpu, node)

    places: dict[int, tuple[int, int]] = {}
    for cpu in ids:
        package = _read_int(cpu_root / f"cpu{cpu}/topology/physical_package_id")
        core_id = _read_int(cpu_root / f"cpu{cpu}/topology/core_id")
        if package is None or core_id is None:
            fallback = True
            break
        # Some ARM kernels report package -1 when there is no package information.
        places[cpu] = (max(package, 0), core_id)
    if fallback:
        places = {cpu: (0, cpu) for cpu in ids}
    # core_id is only unique within a package: number (package, core_id) pairs densely.
    core_index = {place: i for i, place in enumerate(sorted(set(places.values())))}

    cpus = tuple(
        CPU(
            id=cpu,
            core=core_index[places[cpu]],
            socket=places[cpu][0],
            numa=numa_of.get(cpu, 0),
            caches=_cpu_caches(cpu_root / f"cpu{cpu}", cpu),
        )
        for cpu in ids
    )
    return Topology(cpus, "fallback" if fallback else "sysfs")


def from_spec(spec: str) -> Topology:
    """Build a synthetic topology from "sockets=2,numa=4,cores=24,smt=2,l3=per-numa".

    ``cores`` is required; defaults are sockets=1, numa=<sockets>, smt=1,
    l3=per-socket. numa is the total number of NUMA nodes, split evenly over
    sockets; cores is the total number of physical cores, split evenly over
    NUMA nodes; smt is threads per core; l3 is per-numa, per-socket or
    per-core; L1d and L2 are per core.

    Numbering, as Linux usually does on x86: core c (0..cores-1) lies in NUMA
    node c // (cores/numa) and socket node // (numa/sockets); its hardware
    thread t is CPU t * cores + c, so CPUs 0..cores-1 are the first thread of
    every core and CPU c + cores is the SMT sibling of CPU c.
    """
    fields: dict[str, str] = {}
    for item in spec.split(","):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key:
            raise ValueError(f"topology spec item {item.strip()!r} is not key=value")
        if key in fields:
            raise ValueError(f"topology spec repeats {key!r}")
        fields[key] = value
    unknown = set(fields) - {"sockets", "numa", "cores", "smt", "l3"}
    if unknown:
        raise ValueError(f"unknown topology spec keys {sorted(unknown)}; use sockets, numa, cores, smt, l3")
    if "cores" not in fields:
        raise ValueError("topology spec needs cores=<total physical cores>")

    def count(key: str, default: int) -> int:
        try:
            n = int(fields.get(key, default))
        except ValueError:
            raise ValueError(f"topology spec {key}={fields[key]!r} is not an integer") from None
        if n < 1:
            raise ValueError(f"topology spec {key}={n} must be at least 1")
        return n

    sockets = count("sockets", 1)
    numa = count("numa", sockets)
    cores = count("cores", 1)
    smt = count("smt", 1)
    l3 = fields.get("l3", "per-socket")
    if l3 not in _L3_SCOPES:
        raise ValueError(f"topology spec l3={l3!r} must be one of {', '.join(_L3_SCOPES)}")
    if numa % sockets:
        raise ValueError(f"topology spec numa={numa} is not a multiple of sockets={sockets}")
    if cores % numa:
        raise ValueError(f"topology spec cores={cores} is not a multiple of numa={numa}")

    cores_per_numa = cores // numa
    numa_per_socket = numa // sockets
    cpus = []
    for t in range(smt):
        for c in range(cores):
            node = c // cores_per_numa
            socket = node // numa_per_socket
            l3_first = {
                "per-core": c,
                "per-numa": node * cores_per_numa,
                "per-socket": socket * numa_per_socket * cores_per_numa,
            }[l3]
            cpus.append(
                CPU(
                    id=t * cores + c,
                    core=c,
                    socket=socket,
                    numa=node,
                    caches=(("L1d", c), ("L2", c), ("L3", l3_first)),
                )
            )
    return Topology(tuple(cpus), f"override:{spec}")


def load(env: Mapping[str, str] = os.environ) -> Topology:
    """The topology to use: the ``PGASCOL_TOPOLOGY`` override if set, else :func:`discover`.

    The override is either a path to a JSON file in :meth:`Topology.to_dict`
    format or a spec string for :func:`from_spec`. An invalid override raises
    ValueError naming ``PGASCOL_TOPOLOGY``.
    """
    value = env.get(ENV_VAR, "").strip()
    if not value:
        return discover()
    try:
        if os.path.isfile(value):
            with open(value) as f:
                topology = Topology.from_dict(json.load(f))
        elif "=" in value:
            topology = from_spec(value)
        else:
            raise ValueError("neither an existing JSON file nor a spec like 'sockets=2,cores=8,smt=2'")
    except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"invalid {ENV_VAR}={value!r}: {e}") from e
    return replace(topology, source=f"override:{value}")


@dataclass(frozen=True)
class NodeLayout:
    """Where the ranks of one node live."""

    home_cpus: tuple[int, ...]  # one CPU per local rank
    n_cpus_available: int  # distinct CPUs in the union of the ranks' affinities
    oversubscribed: bool  # more local ranks than available CPUs


def _spread(topology: Topology, cpus: Iterable[int]) -> list[int]:
    """``cpus`` ordered one per core first (cores by socket, NUMA node, id), then second threads, ..."""
    threads: dict[tuple[int, int, int], list[int]] = {}
    for cpu in sorted(cpus):
        c = topology.cpu(cpu)
        threads.setdefault((c.socket, c.numa, c.core), []).append(cpu)
    per_core = [threads[key] for key in sorted(threads)]
    depth = max(len(t) for t in per_core)
    return [t[i] for i in range(depth) for t in per_core if i < len(t)]


def node_layout(topology: Topology, affinities: Sequence[Iterable[int]]) -> NodeLayout:
    """Home CPU of each local rank, given the CPUs each rank may run on.

    A bound rank's home is the lowest CPU of its affinity. A rank is unbound
    when its affinity has several CPUs and covers every CPU any local rank may
    use (the whole machine, or the whole cgroup cpuset of a container or batch
    job). Unbound ranks get homes round-robin by local rank over the cores of
    that set (first threads of all cores, then second threads, ...), so
    consecutive ranks land on nearby but distinct cores.
    """
    sets = [frozenset(a) for a in affinities]
    if not sets or any(not s for s in sets):
        raise ValueError("node_layout needs at least one rank, each with a non-empty CPU affinity")
    available = frozenset().union(*sets)
    spread = _spread(topology, available)
    homes = tuple(
        spread[rank % len(spread)] if len(s) > 1 and s == available else min(s)
        for rank, s in enumerate(sets)
    )
    return NodeLayout(homes, len(available), len(sets) > len(available))
