"""pgascol.upc smoke tests (the implementation's own; the full GWU-style
suite is upc_*.py): every collective and algorithm once, on one node and
across nodes (hosts or virtual nodes), against numpy on the gathered data."""
import os

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas, upc
from pgascol.errors import ArgumentError
from tests.mpi_programs import detected_nodes, expected_nodes
from tests.mpi_programs import raises as _raises

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)
MULTI = detected_nodes(COMM)[1]     # several nodes: hosts, or virtual nodes of them
# nodes not of consecutive ranks (dealt round robin)
SCATTERED = MULTI and [r for m in expected_nodes(WORLD) for r in m] != list(range(P))
FLAGS = (0, upc.UPC_IN_MYSYNC | upc.UPC_OUT_MYSYNC, upc.UPC_IN_NOSYNC | upc.UPC_OUT_NOSYNC,
         upc.UPC_IN_ALLSYNC | upc.UPC_OUT_MYSYNC)


def algorithms(coll):
    """Every algorithm of coll this communicator runs (across nodes, the hier* ones)."""
    names = upc.ALGORITHMS[coll]
    return tuple(a for a in names if a.startswith("hier")) if MULTI else names


def _sync(flags):
    """A barrier before reading others' parts (after a NOSYNC/MYSYNC call
    their owners may still be busy)."""
    pgas.barrier(COMM)


def _fresh():
    """A barrier before resetting one's parts (others may still read them)."""
    pgas.barrier(COMM)


def test_broadcast():
    nb = 12
    with pgas.zeros(COMM, 8 * P, np.int32, block=8) as dst, pgas.zeros(COMM, 6 * P, np.int32, block=6) as src:
        for root in range(P):
            src.local()[:] = np.arange(6) + 100 * ME
            for alg in algorithms("broadcast"):
                for flags in FLAGS:
                    _fresh()
                    dst.local()[:] = -1
                    pgas.barrier(COMM)
                    upc.all_broadcast(dst, (src, root * 6), nb, flags, algorithm=alg)
                    _sync(flags)
                    got = dst[:].reshape(P, 8)
                    assert (got[:, :3] == np.arange(3) + 100 * root).all(), (alg, flags, got)
                    assert (got[:, 3:] == -1).all()


def test_broadcast_fragmented_tree():
    nb = 100_003
    os.environ["PGASCOL_UPC_CHUNK"] = "8192"
    try:
        with pgas.zeros(COMM, nb * P, np.uint8, block=nb) as dst, pgas.zeros(COMM, nb, np.uint8, block=0) as src:
            if ME == 0:
                src.local()[:] = np.arange(nb) % 251
            for alg in algorithms("broadcast"):
                _fresh()
                dst.local()[:] = 0
                pgas.barrier(COMM)
                upc.all_broadcast(dst, src, nb, algorithm=alg)
                assert (dst.local() == np.arange(nb) % 251).all(), alg
    finally:
        del os.environ["PGASCOL_UPC_CHUNK"]


def test_broadcast_numa_regions_as_a_level():
    """The 'numa' broadcast: the root, one leader per other NUMA region, the
    regions' members. This machine has one region (a flat pull); under
    PGASCOL_TOPOLOGY=numa=2,... the members alternate between two."""
    from pgascol.upc.move import numa_regions
    if MULTI:
        return
    regions = numa_regions(pgas.context.of(COMM))
    if "numa=2" in os.environ.get("PGASCOL_TOPOLOGY", "") and P > 1:
        assert sorted(set(regions)) == [0, 1], regions
    nb = 100_003
    with pgas.zeros(COMM, nb * P, np.uint8, block=nb) as dst, pgas.zeros(COMM, nb * P, np.uint8, block=nb) as src:
        src.local()[:] = (np.arange(nb) + ME) % 251
        for root in range(P):
            for flags in FLAGS:
                _fresh()
                dst.local()[:] = 0
                pgas.barrier(COMM)
                upc.all_broadcast(dst, (src, root * nb), nb, flags, algorithm="numa")
                _sync(flags)
                assert (dst.local() == (np.arange(nb) + root) % 251).all(), (root, flags, regions)


def test_scatter_gather():
    nb = 8
    with pgas.zeros(COMM, 2 * P * P, np.float32, block=2 * P) as big, pgas.zeros(COMM, 2 * P, np.float32, block=2) as small:
        for root in range(P):
            for alg_s, alg_g in zip(algorithms("scatter"), algorithms("gather")):     # equally many
                for flags in FLAGS:
                    _fresh()
                    big.local()[:] = np.arange(2 * P) + 1000 * ME
                    small.local()[:] = -1
                    pgas.barrier(COMM)
                    upc.all_scatter(small, (big, root * 2 * P), nb, flags, algorithm=alg_s)
                    _sync(flags)
                    assert (small.local() == np.arange(2 * ME, 2 * ME + 2) + 1000 * root).all()
                    _fresh()
                    small.local()[:] += 0.5
                    big.local()[:] = 0
                    pgas.barrier(COMM)
                    upc.all_gather((big, root * 2 * P), small, nb, flags, algorithm=alg_g)
                    _sync(flags)
                    if ME == root:
                        assert (big.local() == np.arange(2 * P) + 1000 * root + 0.5).all()


def test_gather_all_exchange():
    with pgas.zeros(COMM, P, np.int64, block=1) as src, pgas.zeros(COMM, P * P, np.int64, block=P) as dst, \
            pgas.zeros(COMM, P * P, np.int64, block=P) as xs:
        for alg, alg_x in zip(algorithms("gather_all"), algorithms("exchange") + ("pull",)):
            for flags in FLAGS:
                _fresh()
                src.local()[:] = 7 * ME + 1
                xs.local()[:] = 100 * ME + np.arange(P)
                dst.local()[:] = 0
                pgas.barrier(COMM)
                upc.all_gather_all(dst, src, 8, flags, algorithm=alg)
                _sync(flags)
                assert (dst.local() == 7 * np.arange(P) + 1).all()
                _fresh()
                upc.all_exchange(dst, xs, 8, flags, algorithm=alg_x)
                _sync(flags)
                assert (dst.local() == 100 * np.arange(P) + ME).all()


def test_permute_and_refusals():
    with pgas.zeros(COMM, 3 * P, np.int16, block=3) as src, pgas.zeros(COMM, 3 * P, np.int16, block=3) as dst, \
            pgas.zeros(COMM, P, np.int32, block=1) as perm:
        for alg in algorithms("permute"):
            for flags in FLAGS:
                _fresh()
                perm.local()[:] = (ME + 1) % P
                src.local()[:] = ME
                dst.local()[:] = -1
                pgas.barrier(COMM)
                upc.all_permute(dst, src, perm, 6, flags, algorithm=alg)
                _sync(flags)
                assert (dst.local() == (ME - 1) % P).all()
        if P > 1:
            perm.local()[:] = 0
            pgas.barrier(COMM)
            e = _raises(ArgumentError, lambda: upc.all_permute(dst, src, perm, 6))
            assert "not a permutation" in str(e)
        _raises(ArgumentError, lambda: upc.all_broadcast(dst, src, 7))           # does not fit a block of 6 bytes
        _raises(ArgumentError, lambda: upc.all_broadcast(dst, src, 4, flags=upc.UPC_IN_NOSYNC | upc.UPC_IN_MYSYNC))
        _raises(ArgumentError, lambda: upc.all_broadcast((dst, 1), src, 2))       # phase 1
        _raises(ArgumentError, lambda: upc.all_broadcast(dst, src, 2, algorithm="nonsense"))
        upc.all_broadcast(dst, src, 2)          # still usable
        COMM.Barrier()


def test_reduce_and_prefix():
    def matmul(a, b):     # 2x2 integer matrices [[x, y], [0, 1]] packed as x*1000+y (mod 1000): affine maps
        ax, ay, bx, by = a // 1000, a % 1000, b // 1000, b % 1000
        return ((ax * bx) % 1000) * 1000 + (ax * by + ay) % 1000
    for block, n in ((1, 17), (3, 20), ("*", 23), (0, 9)):
        with pgas.zeros(COMM, n, np.int64, block=block) as src, pgas.zeros(COMM, n, np.int64, block=block) as dst, \
                pgas.zeros(COMM, P, np.int64, block=1) as out:
            vals = (np.arange(n) * 7 + 3) % 11 + 1
            for lo, hi in src.owned():
                src.local()[src.local_index(np.arange(lo, hi))] = vals[lo:hi]
            pgas.barrier(COMM)
            for op, want in ((upc.ADD, vals.sum()), (upc.MAX, vals.max()), (upc.XOR, np.bitwise_xor.reduce(vals))):
                for root in range(P):
                    upc.all_reduce((out, root), src, op, n, block)
                    assert out[root] == want, (op, block, out[root], want)
            exscans = sum(pgascol.stats(COMM).get("Exscan", {}).values())
            upc.all_prefix_reduce(dst, src, upc.ADD, n, block)
            assert (dst[:] == np.cumsum(vals)).all()
            # across nodes, with one run per rank in rank order, the default is hier: one Exscan
            hier = MULTI and (block in ("*", 0) or n <= block * P)
            assert sum(pgascol.stats(COMM).get("Exscan", {}).values()) - exscans == int(hier), (block, hier)
            mats = (vals % 5 + 1) * 1000 + vals
            _fresh()
            for lo, hi in src.owned():
                src.local()[src.local_index(np.arange(lo, hi))] = mats[lo:hi]
            pgas.barrier(COMM)
            want = mats[0]
            wants = [want]
            for m in mats[1:]:
                want = matmul(want, m)
                wants.append(want)
            upc.all_reduce((out, P - 1), src, upc.NONCOMM_FUNC, n, block, func=matmul)
            assert out[P - 1] == want
            for alg in upc.ALGORITHMS["prefix_reduce"] if block == "*" else ("auto",):
                if alg == "three-phase" and SCATTERED:
                    _raises(ArgumentError, lambda: upc.all_prefix_reduce(dst, src, upc.ADD, n, block, algorithm=alg))
                    continue
                _fresh()
                dst.local()[:] = 0
                upc.all_prefix_reduce(dst, src, upc.NONCOMM_FUNC, n, block, func=matmul, algorithm=alg)
                assert (dst[:] == wants).all(), alg
            if block == 1 and P > 1:
                _raises(ArgumentError, lambda: upc.all_prefix_reduce(dst, src, upc.ADD, n, 1, algorithm="three-phase"))
            _raises(ArgumentError, lambda: upc.all_reduce((out, 0), src, upc.ADD, n, 5 if block != 5 else 6))
    with pgas.zeros(COMM, 5, np.float64, block=1) as f:
        _raises(ArgumentError, lambda: upc.all_reduce((f, 0), f, upc.AND, 5, 1))


def test_sync_flags_decide_who_waits():
    """A root that only sends leaves a NOSYNC broadcast without waiting for
    a slow reader; under OUT_MYSYNC (its src is read) and ALLSYNC it waits."""
    if P < 2 or MULTI:
        return
    import time
    with pgas.zeros(COMM, 4 * P, np.int32, block=4) as dst, pgas.zeros(COMM, 4, np.int32, block=0) as src:
        for flags, waits in ((upc.UPC_IN_NOSYNC | upc.UPC_OUT_NOSYNC, False),
                             (upc.UPC_IN_NOSYNC | upc.UPC_OUT_MYSYNC, True), (0, True)):
            pgas.barrier(COMM)
            if ME == 1:
                time.sleep(0.3)
            t0 = time.monotonic()
            upc.all_broadcast(dst, src, 16, flags, algorithm="pull")
            took = time.monotonic() - t0
            if ME == 0:
                assert (took > 0.2) == waits, (flags, took)
        pgas.barrier(COMM)


def test_misuse_everywhere_nothing_written():
    with pgas.zeros(COMM, 4 * P, np.int32, block=4) as dst, pgas.zeros(COMM, 4, np.int32, block=0) as src, \
            pgas.zeros(COMM, 4 * P, np.float64, block=4) as f:
        dst.local()[:] = 5
        pgas.barrier(COMM)
        for bad in (lambda: upc.all_broadcast(dst, src, 0), lambda: upc.all_broadcast(dst, src, 20),
                    lambda: upc.all_scatter(dst, (src, 2), 12), lambda: upc.all_broadcast(dst, src, 4, flags=64),
                    lambda: upc.all_broadcast(dst, src, 4, algorithm="ring-pull"),
                    lambda: upc.all_reduce((dst, 0), f, upc.ADD, 4 * P, 4),
                    lambda: upc.all_reduce((f, 0), f, upc.XOR, 4 * P, 4),
                    lambda: upc.all_reduce((f, 0), f, upc.FUNC, 4 * P, 4),
                    lambda: upc.all_prefix_reduce(f, f, upc.ADD, 4 * P + 1, 4)):
            _raises(ArgumentError, bad)   # noqa: B023
        assert (dst.local() == 5).all()
        upc.all_broadcast(dst, src, 16)
        assert (dst.local() == 0).all()
        COMM.Barrier()


def test_ranks_that_disagree_fail_everywhere():
    """Ranks of a node passing different nbytes: every rank raises at its
    first wait on a peer (the call's signature), before anything is copied;
    the node team of that communicator is then aborted (another one is not)."""
    if P < 2 or MULTI:
        return
    from pgascol.errors import CollectiveMismatchError, TeamAbortedError
    sub = pgascol.Comm(WORLD.Dup())
    dst = pgas.zeros(sub, 8 * P, np.int32, block=8)
    src = pgas.zeros(sub, 8, np.int32, block=0)
    src.local()[:] = 9
    pgas.barrier(sub)
    e = _raises((CollectiveMismatchError, TeamAbortedError),
                lambda: upc.all_broadcast(dst, src, 8 if ME == 0 else 16))
    assert "other arguments" in str(e) or "aborted" in str(e), e
    assert (dst.local() == 0).all()
    COMM.Barrier()      # the other communicator is unaffected


if __name__ == "__main__":
    for name, fn in sorted(globals().items()):
        if name.startswith("test_"):
            fn()
            if ME == 0:
                print("ok", name, flush=True)
