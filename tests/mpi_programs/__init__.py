"""Multi-rank test programs, run under mpiexec by tests/mpi_harness.py (the
table of launches is tests/test_mpi_programs.py); what several of them share."""
import functools
import os

import numpy as np


def raises(exc, fn):
    """Call fn and return the `exc` it raised; fail if it raised nothing."""
    try:
        fn()
    except exc as e:
        return e
    raise AssertionError("%s not raised" % exc.__name__)


def data(rank, n, dtype=np.float64, salt=0):
    """Rank `rank`'s n values: small integers (1 to 5), so that sums are
    exact in every type and results bitwise comparable."""
    return ((np.arange(n, dtype=np.int64) * 7 + rank * 3 + salt) % 5 + 1).astype(dtype)


@functools.lru_cache(maxsize=None)
def world_comms():
    """(NATIVE, PG): a plain duplicate of COMM_WORLD and a pgascol.Comm over
    COMM_WORLD, made by the first call (collective) and shared by the
    programs of one launch, so that their calls meet one communicator's
    state as the calls of one program would."""
    from mpi4py import MPI

    import pgascol
    native = MPI.COMM_WORLD.Dup()
    return native, pgascol.Comm(MPI.COMM_WORLD)


def detected_nodes(pg):
    """(number of nodes, hierarchical) as pgascol found them for the
    pgascol.Comm pg: the hosts the ranks run on, each split into virtual
    nodes where PGASCOL_NODE_SIZE says so. What a test expects follows from
    this (or from expected_nodes), never from the variables alone: across
    real or emulated hosts there are nodes without any."""
    from pgascol.comm._comm import state_of
    st = state_of(pg)
    return st.nnodes, st.hier


def expected_nodes(comm, env=os.environ):
    """The nodes pgascol must find, worked out without it: the ranks of
    each host (MPI's processor name), split into virtual nodes of
    k = PGASCOL_NODE_SIZE ranks, k consecutive ones at a time
    (PGASCOL_NODE_MAP=block, the default) or ceil(n/k) nodes dealt round
    robin (roundrobin). Each node a list of its ranks in rank order; the
    nodes in the order of their first ranks (pgascol's node index)."""
    from mpi4py import MPI
    hosts = {}
    for r, name in enumerate(comm.allgather(MPI.Get_processor_name())):
        hosts.setdefault(name, []).append(r)
    k = int(env.get("PGASCOL_NODE_SIZE", "0") or 0)
    roundrobin = (env.get("PGASCOL_NODE_MAP", "") or "block").strip().lower() == "roundrobin"
    nodes = []
    for ranks in hosts.values():
        if k <= 0:
            nodes.append(ranks)
        elif roundrobin:
            count = -(-len(ranks) // k)
            nodes.extend(ranks[c::count] for c in range(count))
        else:
            nodes.extend(ranks[i:i + k] for i in range(0, len(ranks), k))
    return sorted(nodes)


def hosts_of(comm):
    """How many hosts the ranks of comm run on (MPI's processor names)."""
    from mpi4py import MPI
    return len(set(comm.allgather(MPI.Get_processor_name())))


def both(fn):
    """fn(comm) on the pgascol.Comm and on the native duplicate of
    world_comms(); returns both results (pgascol's first)."""
    native, pg = world_comms()
    return fn(pg), fn(native)


def assert_same(a, b, what=""):
    """Arrays a and b are equal in shape and every element."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.array_equal(a, b), (what, a[:8], b[:8])


_FAILED = []


def same(got, want, what=""):
    """Record a mismatch; raised at the end of the test (collective_test),
    so that a wrong result on one rank cannot strand the others in the
    collectives that follow."""
    got, want = np.asarray(got), np.asarray(want)
    if not (got.shape == want.shape and np.array_equal(got, want)):
        bad = np.flatnonzero(got.ravel() != want.ravel())[:6] if got.shape == want.shape else None
        _FAILED.append((what, "at", bad, "got", got.ravel()[:8], "want", want.ravel()[:8]))


def collective_test(fn):
    """Run a test that records mismatches with `same`; fail after it ran."""
    @functools.wraps(fn)
    def run():
        del _FAILED[:]
        fn()
        if _FAILED:
            raise AssertionError("%d wrong result(s), the first ones: %r" % (len(_FAILED), _FAILED[:4]))
    return run
