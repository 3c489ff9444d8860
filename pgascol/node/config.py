"""Run-time parameters: defaults, PGASCOL_* environment variables, and the
thresholds that choose a transfer method by size.

Every parameter has a default taken from measurements on the development
machine (see docs/PERFORMANCE.md); each can be overridden by an environment
variable. The values of the node's first rank become the team-wide values, so
every member picks the same method for the same call."""
import os

from ..engine import _core
from ..errors import ArgumentError

KiB = 1024
MiB = 1024 * KiB

#: Single copy (process_vm_readv/writev) from this many bytes on, per
#: collective; None = never: the built-in starting point, measured on the
#: 2-core development machine (docs/PERFORMANCE.md, "Single copy by size,
#: per collective (the built-in starting point)"); the tuner (tune.pxi)
#: replaces it per size class with what the job measures. Reductions (bytes:
#: the whole vector) stay on copy-in/copy-out by size (single copy measured
#: slower than a pipelined copy through cache-resident staging) and take
#: single copy only by the measured costs (REDUCTIONS, _adaptive).
REDUCTIONS = ("Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan")
CMA_MIN_DEFAULTS = {
    **{name: None for name in REDUCTIONS},
    # Bcast pushes as well as pulls (direction control): one copy instead of
    # two with a cross-core hop; wins from 64 KiB.
    "Bcast": 64 * KiB,
    "Gather": 8 * MiB, "Gatherv": 8 * MiB,
    "Scatter": 64 * KiB, "Scatterv": 64 * KiB,
    # Allgather from 8 MiB in all, except on oversubscribed teams
    # (_oversubscribed_cma).
    "Allgather": 8 * MiB, "Allgatherv": 8 * MiB,
    "Alltoall": 4 * MiB, "Alltoallv": 4 * MiB,
}

#: name -> (default, parser, description); read by team_config and shown by `pgascol info`.
VARIABLES = {
    "PGASCOL_TIMEOUT": ("300", float, "seconds a wait may last before it fails"),
    "PGASCOL_SPIN_US": ("20", float, "busy-wait budget (us) when ranks fit the node's CPUs"),
    "PGASCOL_YIELD_US": ("1000", float, "sched_yield budget (us) before sleeping on the futex"),
    "PGASCOL_INLINE_MAX": ("8192", int, "payloads up to this many bytes travel inline"),
    # 2 MiB: reductions get 256 KiB slots at np=2 (docs/PERFORMANCE.md,
    # "Staging is 2 MiB per rank").
    "PGASCOL_STAGING_BYTES": (str(2 * MiB), int, "per-rank copy-in/copy-out staging area"),
    # 128 KiB, and 256 KiB for the exchanges below (docs/PERFORMANCE.md,
    # "Bcast chunk 128 KiB, exchange chunk 256 KiB").
    "PGASCOL_CHUNK_BYTES": (str(128 * KiB), int, "pipeline chunk of copy-in/copy-out Bcast"),
    "PGASCOL_XCHG_CHUNK_BYTES": (str(256 * KiB), int, "chunk of the copy-in/copy-out exchange ring "
                                 "(Gather, Scatter, Allgather, Alltoall and their v forms)"),
    "PGASCOL_CMA": ("1", int, "0 forces single copy off"),
    "PGASCOL_ADAPT": ("1", int, "1: Gather/Allgather/Alltoall(v) payloads and reductions staged by size go "
                      "by single copy while the team measures it cheaper (0: by size only)"),
    # Below 256 KiB the fixed cost of a single-copy call weighs in, which the
    # per-byte costs the team measures do not show (docs/PERFORMANCE.md, "The
    # path follows the measured costs").
    "PGASCOL_ADAPT_MIN": (str(256 * KiB), int, "... for payloads of this many bytes or more"),
    "PGASCOL_STREAM": ("1", int, "1: copy-in/copy-out writers fill their staging with streaming "
                       "stores while the team measures ordinary ones 3x dearer (0: never; 2: always)"),
    # auto: docs/PERFORMANCE.md, "Streaming stores into receive buffers that
    # outgrow the cache".
    "PGASCOL_RECV_STREAM_MIN": ("auto", str, "Gather, Scatter, Allgather and Alltoall (and v forms): "
                                "a member writes its receive buffer (own block, copy-outs) with streaming "
                                "stores once a block reaches this many bytes (auto: the last-level cache / "
                                "(2 x local ranks), where the op's data outgrows the cache; 0: never); "
                                "across nodes, also an Allreduce of this many bytes per rank"),
    # AVX2 measured faster (docs/PERFORMANCE.md, "Copies use an AVX2 loop,
    # not memcpy").
    "PGASCOL_SIMD": ("1", int, "1: copies and reduction kernels use AVX2 where the CPU has it "
                     "(0: the baseline SSE2 loops)"),
    "PGASCOL_HUGEPAGES": ("0", int, "1 advises transparent huge pages for the segment"),
    "PGASCOL_SEGMENT": ("memfd", str, "memfd: the node's segment never has a name in /dev/shm, nothing can "
                        "leak (falls back to named where /proc/<pid>/fd is closed); named: a /dev/shm name "
                        "removed once everyone attached"),
    # The tree is for wide nodes, where one root buffer has too many readers
    # (no wide node measured yet); oversubscribed teams count CPUs, not
    # ranks (_oversubscribed_bcast).
    "PGASCOL_BCAST_TREE_MIN": ("16", int, "Bcast goes down a pipelined k-nomial tree in node teams "
                               "of this many ranks or more (0: always flat)"),
    "PGASCOL_BCAST_RADIX": ("4", int, "k of that tree (2 to 16)"),
    "PGASCOL_NODE_SIZE": ("0", int, "k > 0: virtual nodes of k ranks (placement: PGASCOL_NODE_MAP)"),
    "PGASCOL_NODE_MAP": ("block", str, "ranks -> virtual nodes: block (consecutive) or "
                         "roundrobin (rank r -> node r % nodes)"),
    "PGASCOL_CALIBRATION": ("", str, "calibration file (default ~/.cache/pgascol/calibration-<host>.json)"),
    "PGASCOL_TUNE": ("1", int, "1: every size class above the inline size takes the path (copy-in/copy-out, "
                     "single copy, MPI's own) the job measures fastest, starting from the calibration "
                     "file; 0: the built-in thresholds only"),
    "PGASCOL_TUNE_MPI": ("1", int, "1: MPI's own collective is among the tuner's candidates (not for "
                         "Gatherv, Scatterv, Allgatherv, Alltoallv, Reduce_scatter); 0: the engine's paths only"),
    "PGASCOL_TUNE_SAVE": ("1", int, "1: what a job learned is written to the calibration file at exit"),
}


def _get(env, name):
    default, parse, _ = VARIABLES[name]
    raw = env.get(name, default)
    try:
        value = parse(raw)
    except ValueError:
        raise ArgumentError("%s=%r is not a valid %s" % (name, raw, parse.__name__)) from None
    if parse is not str and value < 0:
        raise ArgumentError("%s=%r must not be negative" % (name, raw))
    return value


def node_size(env=os.environ):
    """PGASCOL_NODE_SIZE: ranks per virtual node (0: real nodes)."""
    return _get(env, "PGASCOL_NODE_SIZE")


NODE_MAPS = ("block", "roundrobin")


def node_map(env=os.environ):
    """PGASCOL_NODE_MAP: how the ranks of a real node are dealt to virtual
    nodes of PGASCOL_NODE_SIZE (ignored without virtual nodes): 'block'
    (k consecutive ranks per node) or 'roundrobin' (ceil(n/k) nodes, rank r
    of the real node on node r % nodes)."""
    value = _get(env, "PGASCOL_NODE_MAP").strip().lower() or "block"
    if value not in NODE_MAPS:
        raise ArgumentError("PGASCOL_NODE_MAP=%r: expected one of %s"
                            % (env.get("PGASCOL_NODE_MAP"), ", ".join(NODE_MAPS)))
    return value


SEGMENT_KINDS = ("memfd", "named")


def segment_kind(env=os.environ):
    """PGASCOL_SEGMENT: how a node team's shared memory is made and found
    (csrc/base/segment.h): 'memfd' (anonymous, reached through /proc/<pid>/fd;
    nothing can be left behind) or 'named' (a /dev/shm name)."""
    value = _get(env, "PGASCOL_SEGMENT").strip().lower() or "memfd"
    if value not in SEGMENT_KINDS:
        raise ArgumentError("PGASCOL_SEGMENT=%r: expected one of %s"
                            % (env.get("PGASCOL_SEGMENT"), ", ".join(SEGMENT_KINDS)))
    return value


def cma_min(env=os.environ):
    """Per-collective single-copy thresholds: the built-in ones, then
    PGASCOL_CMA_MIN_<NAME> overrides (bytes, or 'never'). They decide the
    calls the tuner does not (pgascol/comm/tune.pxi): the v forms whose
    counts differ per rank, and a size class until it is learned."""
    out = dict(CMA_MIN_DEFAULTS)
    for name in list(out):
        raw = env.get("PGASCOL_CMA_MIN_" + name.upper())
        if raw is None:
            continue
        if raw.strip().lower() in ("never", "none", "off"):
            out[name] = None
            continue
        try:
            out[name] = int(raw)
        except ValueError:
            raise ArgumentError("PGASCOL_CMA_MIN_%s=%r: expected bytes or 'never'" % (name.upper(), raw)) from None
    return out


def _oversubscribed_bcast(cfg, env, cpus):
    """Bcast when ranks outnumber CPUs, unless PGASCOL_BCAST_TREE_MIN or
    PGASCOL_CMA_MIN_BCAST say otherwise.

    Flat, not a tree, until the CPUs alone reach the tree's threshold: no
    more readers than CPUs run at once, so the root's buffer never has more
    readers at a time, while a tree makes each member wait for its parent
    to be scheduled, copy and post.

    Payloads that fit the staging ring are staged, not single-copied: flat
    single copy makes every reader do a kernel copy of the root's buffer on
    the few CPUs, whereas staging costs the root one memcpy and lets each
    reader copy at memcpy speed whenever it runs.
    docs/PERFORMANCE.md, "Bcast is a flat pull below 16 ranks", has the runs."""
    if "PGASCOL_BCAST_TREE_MIN" not in env and cpus < cfg["bcast_tree_min"]:
        cfg["bcast_tree_min"] = 0
    bcast = cfg["cma_min"]["Bcast"]
    if "PGASCOL_CMA_MIN_BCAST" not in env and bcast is not None:
        cfg["cma_min"]["Bcast"] = max(bcast, cfg["staging_bytes"])


def _oversubscribed_cma(cfg, env):
    """Allgather(v) stays on copy-in/copy-out when ranks outnumber CPUs,
    unless PGASCOL_CMA_MIN_ALLGATHER(V) says otherwise: with every member
    pulling every block in the kernel on a few CPUs, single copy measured
    worse, while staging costs each block one copy in and lets readers copy
    at memcpy speed (docs/PERFORMANCE.md, "Single copy by size, per
    collective (the built-in starting point)")."""
    for name in ("Allgather", "Allgatherv"):
        if "PGASCOL_CMA_MIN_" + name.upper() not in env:
            cfg["cma_min"][name] = None


#: Collectives whose senders may switch from copy-in/copy-out to single copy
#: at run time (pgc_choose_member_path in csrc/coll/coll.c): their readers follow
#: each sender's announced path, so no agreement is needed. Reductions
#: (csrc/coll/coll_reduce.c): each member exposes its buffers or stages.
ADAPTIVE = ("Gather", "Gatherv", "Allgather", "Allgatherv", "Alltoall", "Alltoallv") + REDUCTIONS


def _adaptive(cfg, env):
    """The collectives whose path follows the measured costs: those of
    ADAPTIVE that may use single copy at all (the exchanges: a threshold
    that is not None; the reductions always), unless PGASCOL_ADAPT=0 or a
    PGASCOL_CMA_MIN_<NAME> fixes their path by size (tests, calibration).

    Why: in the hours when the development machine's two vCPUs stop sharing
    a cache well (bench/handoff.c tells when), copy-in/copy-out slows down
    several fold (the copy into staging, whose lines the readers hold,
    most), while single copy of an unchanged buffer keeps its speed
    (docs/PERFORMANCE.md, "The path follows the measured costs")."""
    if not _get(env, "PGASCOL_ADAPT"):
        return []
    return [name for name in ADAPTIVE
            if (cfg["cma_min"][name] is not None or name in REDUCTIONS)
            and "PGASCOL_CMA_MIN_" + name.upper() not in env]


def recv_stream_min(env=os.environ, members=0, llc=None):
    """PGASCOL_RECV_STREAM_MIN in bytes (0: never). auto: the last-level
    cache (topology.last_level_cache, or `llc`) over 2 x the team's members:
    an exchange whose blocks are that large writes, across the node, at
    least half the cache in blocks alone, besides reading as much, so the
    lines it writes cannot stay cached and ordinary stores would fetch each
    from memory first. 0 when the cache size or the team size is unknown."""
    raw = env.get("PGASCOL_RECV_STREAM_MIN", "auto").strip().lower()
    if raw in ("", "auto"):
        if llc is None:
            from .topology import last_level_cache
            llc = last_level_cache()
        return llc // (2 * members) if llc and members > 0 else 0
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ArgumentError("PGASCOL_RECV_STREAM_MIN=%r: expected a number of bytes (0: never) or auto"
                            % env["PGASCOL_RECV_STREAM_MIN"])
    return value


def team_config(oversubscribed, env=os.environ, cpus=0, members=0):
    """The parameters of a new team, as the C core takes them; cpus: how
    many CPUs its ranks may run on (0: unknown); members: its size (0:
    unknown)."""
    cfg = {
        "timeout_s": _get(env, "PGASCOL_TIMEOUT"),
        # Spinning only pays when every rank has a CPU: with more ranks than
        # CPUs the rank we wait for may need our core (docs/PERFORMANCE.md,
        # "Waits spin, then sched_yield, then sleep on a futex").
        "spin_ns": 0 if oversubscribed else int(_get(env, "PGASCOL_SPIN_US") * 1000),
        "yield_ns": int(_get(env, "PGASCOL_YIELD_US") * 1000),
        "inline_max": min(_get(env, "PGASCOL_INLINE_MAX"), _core.INLINE_SLOT_MAX),
        "staging_bytes": _get(env, "PGASCOL_STAGING_BYTES"),
        "chunk_bytes": _get(env, "PGASCOL_CHUNK_BYTES"),
        "xchg_chunk_bytes": _get(env, "PGASCOL_XCHG_CHUNK_BYTES"),
        "hugepages": 1 if _get(env, "PGASCOL_HUGEPAGES") else 0,
        "segment": segment_kind(env),
        "cma_enable": 1 if _get(env, "PGASCOL_CMA") else 0,
        "bcast_tree_min": _get(env, "PGASCOL_BCAST_TREE_MIN"),
        "bcast_radix": _get(env, "PGASCOL_BCAST_RADIX"),
        "cma_min": cma_min(env),
        # Reductions: one window instead of two when the blocks fit, where
        # every window's waits cost context switches (coll_reduce.c).
        "reduce_one_window": 1 if oversubscribed else 0,
        # Slow periods (copy.h: pgc_copy_stream; docs/PERFORMANCE.md,
        # "Streaming stores into staging while ordinary ones cost 3x more").
        "stream": _get(env, "PGASCOL_STREAM"),
        "simd": _get(env, "PGASCOL_SIMD"),
        "recv_stream_min": recv_stream_min(env, members),
    }
    if oversubscribed:
        _oversubscribed_bcast(cfg, env, cpus)
        _oversubscribed_cma(cfg, env)
    cfg["adapt"] = _adaptive(cfg, env)
    cfg["adapt_min"] = _get(env, "PGASCOL_ADAPT_MIN")
    from ..engine._core import check_config  # the one check, also made by _core.Team.create
    check_config(cfg)
    return cfg
