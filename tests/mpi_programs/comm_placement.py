"""pgascol.Comm's collectives keep rank order whatever the placement of
ranks on nodes: hosts, or virtual nodes of PGASCOL_NODE_SIZE ranks of
them, consecutive (PGASCOL_NODE_MAP=block) or dealt round robin (rank r on
node r % nodes, nodes interleaved in rank order, unequal nodes included).
Run by tests/test_mpi_programs.py.

Every result is checked against a numpy reference computed locally in rank
order (not against MPI), on data of small integers so that every sum is
exact; and pgascol.stats says which path each collective took: 'hier' for
Alltoall(v) on any placement, for Scan/Exscan only on consecutive nodes in
rank order ('mpi' otherwise)."""

import numpy as np
from mpi4py import MPI

import pgascol
from tests.mpi_programs import collective_test, data, expected_nodes, same

WORLD = MPI.COMM_WORLD
PG = pgascol.Comm(WORLD)
P, ME = PG.Get_size(), PG.Get_rank()


def placement(comm):
    """node_of, local_of and members (rank order) of comm's ranks (expected_nodes)."""
    members = expected_nodes(comm)
    node_of, local_of = [0] * comm.Get_size(), [0] * comm.Get_size()
    for n, m in enumerate(members):
        for i, r in enumerate(m):
            node_of[r], local_of[r] = n, i
    return node_of, local_of, members


NODE_OF, LOCAL_OF, MEMBERS = placement(WORLD)
HIER = len(MEMBERS) > 1
# Consecutive nodes in rank order: the hierarchical Scan/Exscan applies.
BLOCK = [r for m in MEMBERS for r in m] == list(range(P))

ENGINE_PATHS = {"inline", "cico", "cma"}


def expect_path(comm, op, before, path):
    """op ran through `path` ('hier', 'mpi' or 'engine') since `before`."""
    now = pgascol.stats(comm).get(op, {})
    grown = {p for p, n in now.items() if n > before.get(op, {}).get(p, 0)}
    if path == "engine":
        assert grown and grown <= ENGINE_PATHS, (op, path, now, before.get(op))
    else:
        assert grown == {path}, (op, path, now, before.get(op))


# ------------------------------------------------------------------ placement

def test_placement_matches_node_map():
    st = PG._pg
    assert (st.nidx, st.lrank) == (NODE_OF[ME], LOCAL_OF[ME])
    assert st.nnodes == len(MEMBERS)
    assert st.lsize == len(MEMBERS[NODE_OF[ME]])
    if HIER:
        assert st.node_of == NODE_OF and st.local_of == LOCAL_OF
        assert st.members == MEMBERS


# ------------------------------------------------------------------ rooted and reductions

@collective_test
def test_bcast_every_root():
    for n in (0, 1, 100, 150001):       # 150001 doubles: beyond the hierarchy's 1 MiB segment
        for root in range(P):
            b = data(root, n) if ME == root else np.full(n, -1.0)
            PG.Bcast(b, root=root)
            same(b, data(root, n), ("Bcast", n, root))


def reductions():
    """(dtype, op, n, this rank's input, the reduction over every rank) of
    the Reduce and Allreduce tests."""
    for dtype, op, fold in ((np.int64, MPI.SUM, np.add), (np.float64, MPI.SUM, np.add),
                            (np.int32, MPI.MAX, np.maximum), (np.float32, MPI.MIN, np.minimum),
                            (np.int64, MPI.PROD, np.multiply)):
        for n in (0, 1, 1000, 40001):
            want = data(0, n, dtype)
            for q in range(1, P):
                want = fold(want, data(q, n, dtype))
            yield dtype, op, n, data(ME, n, dtype), want


@collective_test
def test_allreduce():
    for dtype, op, n, x, want in reductions():
        y = np.full(n, -1, dtype)
        PG.Allreduce(x, y, op)
        same(y, want, ("Allreduce", dtype, op, n))
        ip = x.copy()
        PG.Allreduce(MPI.IN_PLACE, ip, op)
        same(ip, want, ("Allreduce in place", dtype, op, n))


@collective_test
def test_reduce_every_root():
    for dtype, op, n, x, want in reductions():
        for root in range(P):
            z = np.full(n, -1, dtype)
            PG.Reduce(x, z if ME == root else None, op, root=root)
            if ME == root:
                same(z, want, ("Reduce", dtype, op, n, root))
            w = x.copy()
            PG.Reduce(MPI.IN_PLACE if ME == root else w, w if ME == root else None, op, root=root)
            if ME == root:
                same(w, want, ("Reduce in place", dtype, op, n, root))


@collective_test
def test_allreduce_into_a_cold_receive_buffer():
    """The hierarchical Allreduce writes a receive buffer larger than the
    cache with streaming stores (_State.cold_min; here from 1 byte, so
    every call): the same results, in place too, across segments."""
    comm = PG.Dup()
    comm._pg.cold_min = 1
    try:
        for dtype in (np.float64, np.int32, np.uint8):
            for n in (1, 1001, 150001):     # 150001 doubles: beyond the hierarchy's 1 MiB segment
                want = data(0, n, dtype)
                for q in range(1, P):
                    want = want + data(q, n, dtype)
                y = np.full(n, 99, dtype)
                comm.Allreduce(data(ME, n, dtype), y, MPI.SUM)
                same(y, want, ("Allreduce cold", dtype, n))
                ip = data(ME, n, dtype)
                comm.Allreduce(MPI.IN_PLACE, ip, MPI.SUM)
                same(ip, want, ("Allreduce cold in place", dtype, n))
    finally:
        comm.Free()


@collective_test
def test_reduce_scatter():
    for per in (0, 1, 33, 5000):
        counts = [per + (r * 5) % 3 for r in range(P)]
        total = sum(counts)
        want = sum(data(q, total, np.int64) for q in range(P))
        start = sum(counts[:ME])
        x = data(ME, total, np.int64)
        y = np.full(counts[ME], -1, np.int64)
        PG.Reduce_scatter(x, y, counts, MPI.SUM)
        same(y, want[start:start + counts[ME]], ("Reduce_scatter", per))
        ip = x.copy()
        PG.Reduce_scatter(MPI.IN_PLACE, ip, counts, MPI.SUM)
        same(ip[:counts[ME]], want[start:start + counts[ME]], ("Reduce_scatter in place", per))


@collective_test
def test_reduce_scatter_block():
    for per in (0, 1, 33, 5000):
        xb = data(ME, per * P, np.int32)
        wantb = np.max([data(q, per * P, np.int32) for q in range(P)], axis=0) if per else np.zeros(0, np.int32)
        b = np.full(per, -1, np.int32)
        PG.Reduce_scatter_block(xb, b, MPI.MAX)
        same(b, wantb[ME * per:(ME + 1) * per], ("Reduce_scatter_block", per))


# ------------------------------------------------------------------ gather / scatter family

def every_rows():
    """(n, every rank's n values, one row a rank) of the Gather and Scatter tests."""
    for n in (0, 1, 100, 70001):
        yield n, np.stack([data(q, n) for q in range(P)]) if n else np.zeros((P, 0))


@collective_test
def test_gather_every_root():
    for n, allrows in every_rows():
        for root in range(P):
            r = np.full((P, n), -1.0)
            PG.Gather(data(ME, n), r if ME == root else None, root=root)
            if ME == root:
                same(r, allrows, ("Gather", n, root))
                ip = np.full((P, n), -1.0)
                ip[ME] = data(ME, n)
                PG.Gather(MPI.IN_PLACE, ip, root=root)
                same(ip, allrows, ("Gather in place", n, root))
            else:
                PG.Gather(data(ME, n), None, root=root)


@collective_test
def test_scatter_every_root():
    for n, allrows in every_rows():
        for root in range(P):
            out = np.full(n, -1.0)
            PG.Scatter(allrows if ME == root else None, out, root=root)
            same(out, data(ME, n), ("Scatter", n, root))
            if ME == root:
                PG.Scatter(allrows, MPI.IN_PLACE, root=root)
            else:
                PG.Scatter(None, out, root=root)
                same(out, data(ME, n), ("Scatter (root in place)", n, root))


def uneven_with_gaps():
    """(scale, counts, displs, extent) of the Gatherv and Scatterv tests:
    counts with zeros, blocks in reversed order with gaps."""
    for scale in (1, 1000):
        counts = [((r * 7) % 4) * scale for r in range(P)]
        displs = [sum(counts[r + 1:]) + 3 * (P - 1 - r) for r in range(P)]
        yield scale, counts, displs, max(d + c for d, c in zip(displs, counts))


@collective_test
def test_gatherv_uneven_with_gaps():
    for scale, counts, displs, extent in uneven_with_gaps():
        for root in range(P):
            r = np.full(extent, -1.0)
            PG.Gatherv(data(ME, counts[ME]), [r, (counts, displs), MPI.DOUBLE] if ME == root else None,
                       root=root)
            if ME == root:
                want = np.full(extent, -1.0)
                for q in range(P):
                    want[displs[q]:displs[q] + counts[q]] = data(q, counts[q])
                same(r, want, ("Gatherv", scale, root))


@collective_test
def test_scatterv_uneven_with_gaps():
    for scale, counts, displs, extent in uneven_with_gaps():
        for root in range(P):
            src = np.zeros(extent)
            for q in range(P):
                src[displs[q]:displs[q] + counts[q]] = data(q, counts[q], salt=1)
            out = np.full(counts[ME], -1.0)
            PG.Scatterv([src, (counts, displs), MPI.DOUBLE] if ME == root else None, out, root=root)
            same(out, data(ME, counts[ME], salt=1), ("Scatterv", scale, root))


@collective_test
def test_allgather():
    for n in (0, 1, 100, 70001):
        allrows = np.stack([data(q, n, np.uint8) for q in range(P)]) if n else np.zeros((P, 0), np.uint8)
        r = np.full((P, n), 255, np.uint8)
        PG.Allgather(data(ME, n, np.uint8), r)
        same(r, allrows, ("Allgather", n))
        ip = np.full((P, n), 255, np.uint8)
        ip[ME] = data(ME, n, np.uint8)
        PG.Allgather(MPI.IN_PLACE, ip)
        same(ip, allrows, ("Allgather in place", n))


@collective_test
def test_allgatherv():
    counts = [(r % 3) * 11 for r in range(P)]          # rank 0 (and every third) sends nothing
    displs = [sum(counts[r + 1:]) + 2 * (P - 1 - r) for r in range(P)]   # reversed order, gaps
    extent = max(d + c for d, c in zip(displs, counts)) + 1
    want = np.full(extent, -1.0)
    for q in range(P):
        want[displs[q]:displs[q] + counts[q]] = data(q, counts[q])
    r = np.full(extent, -1.0)
    PG.Allgatherv(data(ME, counts[ME]), [r, (counts, displs), MPI.DOUBLE])
    same(r, want, "Allgatherv")
    ip = np.full(extent, -1.0)
    ip[displs[ME]:displs[ME] + counts[ME]] = data(ME, counts[ME])
    PG.Allgatherv(MPI.IN_PLACE, [ip, (counts, displs), MPI.DOUBLE])
    same(ip, want, "Allgatherv in place")


# ------------------------------------------------------------------ alltoall(v)

def block(src, dst, n, dtype=np.uint8):
    """What rank src sends to rank dst: n elements."""
    return data(src * P + dst, n, dtype)


@collective_test
def test_alltoall():
    before = pgascol.stats(PG)
    for dtype in (np.uint8, np.float64):
        for n in (0, 1, 100, 70001):
            sendbuf = np.stack([block(ME, j, n, dtype) for j in range(P)]) if n else np.zeros((P, 0), dtype)
            want = np.stack([block(j, ME, n, dtype) for j in range(P)]) if n else np.zeros((P, 0), dtype)
            r = np.full((P, n), 7, dtype)
            PG.Alltoall(sendbuf, r)
            same(r, want, ("Alltoall", dtype, n))
            ip = sendbuf.copy()
            PG.Alltoall(MPI.IN_PLACE, ip)
            same(ip, want, ("Alltoall in place", dtype, n))
            # explicit [buf, count, type] on flat buffers
            flat = np.full(P * n, 7, dtype)
            PG.Alltoall([sendbuf.ravel(), n, MPI._typedict[np.dtype(dtype).char]],
                        [flat, n, MPI._typedict[np.dtype(dtype).char]])
            same(flat, want.ravel(), ("Alltoall [buf, count, type]", dtype, n))
    expect_path(PG, "Alltoall", before, "hier" if HIER else "engine")


def _v_layout(me, scale):
    """Alltoallv layouts of rank `me`: counts to/from every rank (zeros
    included, unequal), displacements with gaps and out of rank order."""
    sc = [((me + 2 * j) % 4) * scale for j in range(P)]
    rc = [((j + 2 * me) % 4) * scale for j in range(P)]    # = what j sends to me
    sd, off = [0] * P, 1
    for j in reversed(range(P)):
        sd[j] = off
        off += sc[j] + 2
    rd, off = [0] * P, 3
    for j in range(P):
        rd[j] = off
        off += rc[j] + 1
    return sc, sd, rc, rd


@collective_test
def test_alltoallv_uneven_zeros_gaps():
    before = pgascol.stats(PG)
    for scale in (0, 1, 5, 20000):
        sc, sd, rc, rd = _v_layout(ME, scale)
        sbuf = np.full(max(d + c for d, c in zip(sd, sc)) + 1, -5.0)
        for j in range(P):
            sbuf[sd[j]:sd[j] + sc[j]] = block(ME, j, sc[j], np.float64)
        rlen = max(d + c for d, c in zip(rd, rc)) + 2
        want = np.full(rlen, -1.0)
        for j in range(P):
            want[rd[j]:rd[j] + rc[j]] = block(j, ME, rc[j], np.float64)
        r = np.full(rlen, -1.0)
        PG.Alltoallv([sbuf, (sc, sd), MPI.DOUBLE], [r, (rc, rd), MPI.DOUBLE])
        same(r, want, ("Alltoallv", scale))
    expect_path(PG, "Alltoallv", before, "hier" if HIER else "engine")


def _inplace_block(src, dst, n):
    """What rank src sends to dst in the in-place test."""
    return data(src * 1000 + dst, n)


@collective_test
def test_alltoallv_in_place_symmetric():
    """In-place Alltoallv with counts symmetric in (i, j), as MPI requires."""
    for scale in (0, 1, 3000):
        cnt = [((ME + j) % 3) * scale for j in range(P)]     # symmetric: c(i, j) = c(j, i)
        d, off = [0] * P, 2
        for j in (list(range(ME, P)) + list(range(ME))):      # rotated order: not rank order
            d[j] = off
            off += cnt[j] + 1
        buf = np.full(off + 1, -1.0)
        for j in range(P):
            buf[d[j]:d[j] + cnt[j]] = _inplace_block(ME, j, cnt[j])
        PG.Alltoallv(MPI.IN_PLACE, [buf, (cnt, d), MPI.DOUBLE])
        want = np.full(off + 1, -1.0)
        for j in range(P):
            want[d[j]:d[j] + cnt[j]] = _inplace_block(j, ME, cnt[j])
        same(buf, want, ("Alltoallv in place symmetric", scale))


@collective_test
def test_alltoallv_back_to_back_varying():
    """Many Alltoallv calls in a row with sizes changing every call: the
    inter-node messages of consecutive calls must not mix."""
    rng = np.random.default_rng(1234)                 # same on every rank
    table = rng.integers(0, 40, size=(25, P, P))       # table[i][a][b]: a sends b at call i
    for i in range(25):
        sc = [int(x) for x in table[i][ME]]
        rc = [int(table[i][j][ME]) for j in range(P)]
        sbuf = np.concatenate([data(ME * P + j, sc[j], np.int32, salt=i) for j in range(P)])
        r = np.full(sum(rc), -1, np.int32)
        PG.Alltoallv([sbuf, sc], [r, rc])
        want = np.concatenate([data(j * P + ME, rc[j], np.int32, salt=i) for j in range(P)])
        same(r, want, ("Alltoallv call", i))
        if i % 5 == 4:
            x = np.full((P, 3), ME, np.int16)
            y = np.empty((P, 3), np.int16)
            PG.Alltoall(x, y)
            same(y, np.repeat(np.arange(P, dtype=np.int16), 3).reshape(P, 3), ("Alltoall between", i))


@collective_test
def test_alltoall_self_count_mismatch_raises():
    sc = [1] * P
    rc = [1] * P
    rc[ME] = 2
    try:
        PG.Alltoallv([np.zeros(P), (sc, None), MPI.DOUBLE], [np.zeros(P + 1), (rc, None), MPI.DOUBLE])
    except ValueError:
        pass
    else:
        raise AssertionError("a self count mismatch was accepted")
    z = np.full(2, ME + 1.0)                  # still usable
    PG.Allreduce(MPI.IN_PLACE, z)
    same(z, np.full(2, P * (P + 1) / 2))


# ------------------------------------------------------------------ scan / exscan

def _prefix(fold, parts):
    acc = parts[0]
    for p in parts[1:]:
        acc = fold(acc, p)
    return acc


def scans():
    """(dtype, op, fold, n, every rank's input) of the Scan and Exscan tests."""
    for dtype, op, fold in ((np.int64, MPI.SUM, np.add), (np.float64, MPI.SUM, np.add),
                            (np.int32, MPI.MAX, np.maximum), (np.float32, MPI.MIN, np.minimum),
                            (np.int64, MPI.PROD, np.multiply), (np.uint8, MPI.BXOR, np.bitwise_xor)):
        for n in (0, 1, 100, 50001):
            yield dtype, op, fold, n, [data(q, n, dtype, salt=q % 3) for q in range(P)]


# The hierarchical Scan and Exscan take consecutive nodes in rank order
# only; with interleaved ones the calls are MPI's.
SCAN_PATH = ("hier" if BLOCK else "mpi") if HIER else "engine"


@collective_test
def test_scan():
    before = pgascol.stats(PG)
    for dtype, op, fold, n, parts in scans():
        x = parts[ME].copy()
        y = np.full(n, 9, dtype)
        PG.Scan(x, y, op)
        same(y, _prefix(fold, parts[:ME + 1]), ("Scan", dtype, op, n))
        same(x, parts[ME], "Scan changed its send buffer")
        ip = x.copy()
        PG.Scan(MPI.IN_PLACE, ip, op)
        same(ip, _prefix(fold, parts[:ME + 1]), ("Scan in place", dtype, op, n))
    expect_path(PG, "Scan", before, SCAN_PATH)


@collective_test
def test_exscan():
    before = pgascol.stats(PG)
    for dtype, op, fold, n, parts in scans():
        x = parts[ME].copy()
        e = np.full(n, 9, dtype)
        PG.Exscan(x, e, op)
        if ME > 0:
            same(e, _prefix(fold, parts[:ME]), ("Exscan", dtype, op, n))
        eip = x.copy()
        PG.Exscan(MPI.IN_PLACE, eip, op)
        if ME > 0:
            same(eip, _prefix(fold, parts[:ME]), ("Exscan in place", dtype, op, n))
        elif HIER and BLOCK:
            # pgascol's hierarchy leaves rank 0's buffer as it was (MPI: undefined)
            same(e, np.full(n, 9, dtype), "Exscan rank 0")
            same(eip, parts[0], "Exscan in place rank 0")
    expect_path(PG, "Exscan", before, SCAN_PATH)


@collective_test
def test_scan_explicit_types_and_displacement():
    n = 10
    x = data(ME, n, np.float64)
    y = np.full(n + 4, -1.0)
    PG.Scan([x, n, MPI.DOUBLE], [y, (n, 4), MPI.DOUBLE], MPI.SUM)    # result at element 4
    same(y[4:], sum(data(q, n) for q in range(ME + 1)), "Scan [buf, (count, displ), type]")
    same(y[:4], np.full(4, -1.0), "Scan wrote before its displacement")


# ------------------------------------------------------------------ sub-communicators

@collective_test
def test_split_reversed_and_halves():
    """Sub-communicators get placements of their own: a reversed split (every
    node's ranks reversed) and the halves of the world."""
    for color, key in ((0, -ME), (ME % 2, ME)):
        sub = PG.Split(color, key)
        try:
            n, me = sub.Get_size(), sub.Get_rank()
            sc = [(me + j) % 3 + 1 for j in range(n)]
            rc = [(j + me) % 3 + 1 for j in range(n)]
            sbuf = np.concatenate([data(me * n + j, sc[j]) for j in range(n)])
            r = np.full(sum(rc), -1.0)
            sub.Alltoallv([sbuf, sc], [r, rc])
            same(r, np.concatenate([data(j * n + me, rc[j]) for j in range(n)]), ("sub Alltoallv", color, key))
            x = data(me, 50)
            y = np.zeros(50)
            sub.Scan(x, y)
            same(y, sum(data(q, 50) for q in range(me + 1)), ("sub Scan", color, key))
            e = np.zeros(50)
            sub.Exscan(x, e)
            if me:
                same(e, sum(data(q, 50) for q in range(me)), ("sub Exscan", color, key))
            g = np.full((n, 4), -1.0)
            sub.Allgather(data(me, 4), g)
            same(g, np.stack([data(q, 4) for q in range(n)]), ("sub Allgather", color, key))
        finally:
            sub.Free()


# ------------------------------------------------------------------ paths

def test_stats_paths():
    s = pgascol.stats(PG)
    if HIER:
        for op in ("Bcast", "Reduce", "Allreduce", "Gather", "Gatherv", "Scatter", "Scatterv",
                   "Allgather", "Allgatherv", "Alltoall", "Alltoallv", "Reduce_scatter",
                   "Reduce_scatter_block"):
            assert set(s[op]) == {"hier"}, (op, s[op])
        for op in ("Scan", "Exscan"):
            assert set(s[op]) == ({"hier"} if BLOCK else {"mpi"}), (op, s[op], BLOCK)
        assert "node:Alltoall" in s and "node:Alltoallv" in s, s
    else:
        for op in ("Alltoall", "Alltoallv", "Scan", "Exscan"):
            assert set(s[op]) <= ENGINE_PATHS, (op, s[op])
