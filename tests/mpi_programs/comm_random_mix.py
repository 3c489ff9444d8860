"""Long random sequences of pgascol.Comm's buffer collectives, every result
checked against a numpy reference. Run by tests/test_mpi_programs.py
under several environments (one node, small thresholds, single copy off,
virtual nodes).

A fixed-shape test calls one collective at a few sizes; a program calls
them mixed, and what one call leaves behind (sequence numbers, staging
windows, published addresses, the adaptive path choice, the inter-node
requests of the hierarchy) is what the next one starts from. Here a seeded
generator, the same on every rank, draws each call: the collective, the
communicator (the world's pgascol.Comm, a Dup of it and a Split into two
halves, used in turn: three teams), the type and a legal operator, the size
(zero to 2 MiB per rank, log-uniform, so every transfer method's threshold
is crossed), the root, in place or not, v-form counts with zeros and
displacements in rotated order with gaps, and how the buffers are given
(a bare array, [buf, type], [buf, counts, displs, type], [buf, (counts,
displs)], [buf, (counts, displs), type]).
Between them come calls of other kinds (ELSEWHERE). Before some calls
one rank sleeps a little, so ranks arrive in every order.

Each rank computes every rank's contribution locally (small integers:
every sum and product is exact), so a result is compared with numpy's,
not with another library. Receive buffers start filled with a sentinel
that must survive outside the received blocks (gaps, the unused tail).
Right after each call returns, the rank overwrites its send buffer: a
peer still reading it would receive the overwrite (MPI lets a buffer be
reused as soon as the call returns)."""
import os
import time

import numpy as np
from mpi4py import MPI

import pgascol
from tests.mpi_programs import collective_test, same

WORLD = MPI.COMM_WORLD
PG = pgascol.Comm(WORLD)
DUP = PG.Dup()
HALF = PG.Split(PG.Get_rank() % 2, PG.Get_rank())
COMMS = (PG, DUP, HALF)
# Longer or other sequences by hand: PGASCOL_TEST_SEQUENCE_CALLS=2000
# PGASCOL_TEST_SEQUENCE_SEED=5 mpiexec -n 4 python -m tests.mpi_harness comm_random_mix.py /tmp/out
CALLS = int(os.environ.get("PGASCOL_TEST_SEQUENCE_CALLS", "240"))
SEED = int(os.environ.get("PGASCOL_TEST_SEQUENCE_SEED", "20261124"))
MAX_BYTES = 2 << 20

INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
FLOATS = (np.float32, np.float64, np.longdouble)
COMPLEX = (np.complex64, np.complex128)
TYPES = INTS + FLOATS + COMPLEX + (np.bool_,)
# MPI's rules: which operator each kind of type takes
ARITH = (MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX)
LOGIC = (MPI.LAND, MPI.LOR, MPI.LXOR)
BITS = (MPI.BAND, MPI.BOR, MPI.BXOR)
FOLDS = ((MPI.SUM, np.add), (MPI.PROD, np.multiply), (MPI.MIN, np.minimum), (MPI.MAX, np.maximum),
         (MPI.LAND, np.logical_and), (MPI.LOR, np.logical_or), (MPI.LXOR, np.logical_xor),
         (MPI.BAND, np.bitwise_and), (MPI.BOR, np.bitwise_or), (MPI.BXOR, np.bitwise_xor))
REDUCTIONS = ("Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan")
MOVES = ("Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Allgather", "Allgatherv",
         "Alltoall", "Alltoallv")
# Calls of other kinds between the others: what pgascol.Comm hands to MPI
# (a nonblocking collective, a user-defined operator), a derived datatype
# (packed by MPI, moved by the engine as bytes) and the pickle-based
# methods. Whatever they leave behind must not disturb the next call.
ELSEWHERE = ("nonblocking", "user operator", "derived type", "pickled")
COLLECTIVES = ("Barrier",) + MOVES + REDUCTIONS + ELSEWHERE


def _add_float64(inbuf, inoutbuf, datatype):
    a = np.frombuffer(inbuf, np.float64)
    b = np.frombuffer(inoutbuf, np.float64)
    b += a


USER_SUM = MPI.Op.Create(_add_float64, commute=True)


def operators(dtype):
    if dtype in INTS:
        return ARITH + LOGIC + BITS
    if dtype in FLOATS:
        return ARITH
    if dtype in COMPLEX:
        return (MPI.SUM, MPI.PROD)
    return LOGIC


def contribution(rank, size, call, n, dtype, op=None, first=0):
    """Rank `rank`'s elements first .. first + n - 1 in call `call` of a
    communicator of `size` ranks: small integers, so that any fold of them
    is exact. Products: a 2 from one rank per element, 1 elsewhere."""
    k = np.arange(first, first + n, dtype=np.int64)
    if op is MPI.PROD:
        v = np.where((k + call) % size == rank, 2, 1)
    elif op in LOGIC or dtype is np.bool_:
        v = (k + rank + call) % 3 == 0
    elif op in BITS:
        v = (k * 13 + rank * 5 + call) % 128
    else:
        v = (k * 7 + rank * 3 + call) % 5 + (0 if np.dtype(dtype).kind == "u" else -2)
    if dtype in COMPLEX:
        return (v + 1j * ((k + rank) % 3 if op is not MPI.PROD else 0)).astype(dtype)
    return v.astype(dtype)


def folded(parts, op, dtype):
    fold = next(f for o, f in FOLDS if o is op)   # (MPI.Op is not hashable)
    acc = parts[0]
    for p in parts[1:]:
        acc = fold(acc, p)
    return acc.astype(dtype)


def sentinel(n, dtype):
    if dtype is np.bool_:
        return np.ones(n, dtype)   # the contributions are mostly False
    return np.full(n, 99, dtype)


def scribble(buf):
    """Overwrite a send buffer the moment the call returned."""
    if buf is not None and buf is not MPI.IN_PLACE:
        buf.view(np.uint8)[:] = 0x5A


def vspec(buf, counts, displs, dtype, how):
    """A v-form buffer specification in one of mpi4py's spellings."""
    mpitype = MPI.Datatype.fromcode(np.dtype(dtype).char)
    if how == 0:
        return [buf, counts, displs, mpitype]
    if how == 1:
        return [buf, (counts, displs)]
    return [buf, (counts, displs), mpitype]


class Draw:
    """One call's parameters, drawn alike on every rank: as many draws
    whatever the communicator (the two halves of an odd world differ in
    size), then cut to its size."""

    def __init__(self, rng, call):
        W = WORLD.Get_size()
        self.call = call
        self.coll = COLLECTIVES[rng.integers(len(COLLECTIVES))]
        self.comm = COMMS[rng.integers(len(COMMS))]
        self.dtype = TYPES[rng.integers(len(TYPES))]
        ops = operators(self.dtype)
        self.op = ops[rng.integers(len(ops))] if self.coll in REDUCTIONS else None
        size = self.comm.Get_size()
        self.root = int(rng.integers(W)) % size
        self.in_place = bool(rng.integers(3) == 0)
        self.how = int(rng.integers(3))
        item = np.dtype(self.dtype).itemsize
        self.n = self.elements(rng, item)
        # v forms: counts per rank (some zero), displacements in rotated
        # order with a gap of one element after each block
        self.counts = [self.elements(rng, item, W) for _ in range(W)][:size]
        table = [[self.elements(rng, item, W * W) for _ in range(W)] for _ in range(W)]
        if self.in_place:          # in-place Alltoallv sends with the receive layout
            table = [[table[min(a, b)][max(a, b)] for b in range(W)] for a in range(W)]
        self.table = [row[:size] for row in table[:size]]
        self.rotation = int(rng.integers(W)) % size
        self.sleeper = int(rng.integers(W)) if rng.random() < 0.15 else -1
        self.nap = float(rng.uniform(0.0002, 0.002))

    @staticmethod
    def elements(rng, item, share=1):
        if rng.random() < 0.08:
            return 0
        nbytes = int(2 ** rng.uniform(0, np.log2(MAX_BYTES))) // share
        return max(nbytes // item, 1)


def displacements(counts, rotation):
    """Blocks laid out starting with rank `rotation`, a one-element gap after each."""
    P = len(counts)
    displs, off = [0] * P, 0
    for j in [(rotation + i) % P for i in range(P)]:
        displs[j] = off
        off += counts[j] + 1
    return displs, off + 1


def run_one(d):
    comm, dt, call, coll = d.comm, d.dtype, d.call, d.coll
    P, me, root = comm.Get_size(), comm.Get_rank(), d.root
    what = (call, coll, np.dtype(dt).name, d.n, "in place" if d.in_place else "")

    def mine(n, rank=me, op=d.op):
        return contribution(rank, P, call, n, dt, op)

    if WORLD.Get_rank() == d.sleeper:
        time.sleep(d.nap)
    if coll == "Barrier":
        comm.Barrier()
        return
    if coll in ELSEWHERE:
        return run_elsewhere(d, comm, P, me, root, what)
    if coll == "Bcast":
        b = mine(d.n, root) if me == root else sentinel(d.n, dt)
        comm.Bcast(b, root=root)
        same(b, mine(d.n, root), what)
        return

    if coll in ("Gather", "Gatherv", "Allgather", "Allgatherv"):
        v = coll.endswith("v")
        counts = d.counts if v else [d.n] * P
        displs, total = displacements(counts, d.rotation) if v else ([q * d.n for q in range(P)], d.n * P)
        everyone = coll.startswith("All")
        receives = everyone or me == root
        r = sentinel(total, dt) if receives else None
        want = sentinel(total, dt)
        for q in range(P):
            want[displs[q]:displs[q] + counts[q]] = mine(counts[q], q)
        in_place = d.in_place and receives
        if in_place:
            r[displs[me]:displs[me] + counts[me]] = mine(counts[me])
            s = MPI.IN_PLACE
        else:
            s = mine(counts[me])
        rspec = r if r is None or not v else vspec(r, counts, displs, dt, d.how)
        if not v and r is not None and d.how == 2:
            rspec = [r, MPI.Datatype.fromcode(np.dtype(dt).char)]
        if everyone:
            comm.Allgatherv(s, rspec) if v else comm.Allgather(s, rspec)
        else:
            comm.Gatherv(s, rspec, root=root) if v else comm.Gather(s, rspec, root=root)
        scribble(s)
        if receives:
            same(r, want, what)
        return

    if coll in ("Scatter", "Scatterv"):
        v = coll == "Scatterv"
        counts = d.counts if v else [d.n] * P
        displs, total = displacements(counts, d.rotation) if v else ([q * d.n for q in range(P)], d.n * P)
        s = None
        if me == root:
            s = sentinel(total, dt)
            for q in range(P):
                s[displs[q]:displs[q] + counts[q]] = mine(counts[q], q)
        in_place = d.in_place and me == root
        r = MPI.IN_PLACE if in_place else sentinel(counts[me], dt)
        sspec = s if s is None or not v else vspec(s, counts, displs, dt, d.how)
        comm.Scatterv(sspec, r, root=root) if v else comm.Scatter(sspec, r, root=root)
        scribble(s)
        if not in_place:
            same(r, mine(counts[me]), what)
        return

    if coll in ("Alltoall", "Alltoallv"):
        v = coll == "Alltoallv"
        per = max(d.n // P, 0)
        sc = d.table[me] if v else [per] * P                 # what this rank sends each peer
        rc = [d.table[q][me] for q in range(P)] if v else [per] * P
        if v:
            sd, stotal = displacements(sc, d.rotation)
            rd, rtotal = displacements(rc, (d.rotation + 1) % P)
        else:
            sd, stotal = [q * per for q in range(P)], per * P
            rd, rtotal = sd, stotal

        def block(src, dst, n):   # what src sends dst
            return contribution(src * P + dst, P * P, call, n, dt)

        want = sentinel(rtotal, dt)
        for q in range(P):
            want[rd[q]:rd[q] + rc[q]] = block(q, me, rc[q])
        r = sentinel(rtotal, dt)
        if d.in_place:
            for q in range(P):   # in place: sent with the receive layout
                r[rd[q]:rd[q] + rc[q]] = block(me, q, rc[q])
            s = MPI.IN_PLACE
            sspec = s
        else:
            s = sentinel(stotal, dt)
            for q in range(P):
                s[sd[q]:sd[q] + sc[q]] = block(me, q, sc[q])
            sspec = vspec(s, sc, sd, dt, d.how) if v else s
        rspec = vspec(r, rc, rd, dt, d.how) if v else r
        comm.Alltoallv(sspec, rspec) if v else comm.Alltoall(sspec, rspec)
        scribble(s)
        same(r, want, what)
        return

    # reductions
    op = d.op
    what = what + (str(op),)
    if coll in ("Reduce", "Allreduce", "Scan", "Exscan"):
        n = d.n
        parts = [mine(n, q) for q in range(P)]
        upto = {"Scan": me + 1, "Exscan": me}.get(coll, P)
        want = folded(parts[:upto], op, dt) if upto else None
        receives = coll != "Reduce" or me == root
        r = sentinel(n, dt) if receives else (sentinel(n, dt) if d.how == 0 else None)
        in_place = d.in_place and receives
        if in_place:
            r[:] = parts[me]
            s = MPI.IN_PLACE
        else:
            s = parts[me].copy()
        if coll == "Reduce":
            comm.Reduce(s, r, op, root=root)
        else:
            getattr(comm, coll)(s, r, op)
        scribble(s)
        if coll == "Exscan" and me == 0:
            return                                   # undefined on rank 0
        if receives:
            same(r, want, what)
        elif r is not None:
            same(r, sentinel(n, dt), what + ("non-root receive buffer written",))
        return

    # Reduce_scatter(_block)
    counts = d.counts if coll == "Reduce_scatter" else [d.n] * P
    total, start = sum(counts), sum(counts[:me])
    want = folded([contribution(q, P, call, counts[me], dt, op, start) for q in range(P)], op, dt)
    if d.in_place:
        r = mine(total)
        s, view = MPI.IN_PLACE, r
    else:
        r = sentinel(counts[me] + 1, dt)
        s, view = mine(total), r[:counts[me]]    # and nothing written past it
    if coll == "Reduce_scatter":
        comm.Reduce_scatter(s, view, counts, op)
    else:
        comm.Reduce_scatter_block(s, view, op)
    scribble(s)
    same(r[:counts[me]], want, what)
    if not d.in_place:
        same(r[counts[me]:], sentinel(1, dt), what + ("past the block",))


def run_elsewhere(d, comm, P, me, root, what):
    """A call of one of the ELSEWHERE kinds."""
    n, call = d.n // 8, d.call
    parts = [contribution(q, P, call, n, np.float64) for q in range(P)]
    if d.coll == "nonblocking":
        y = sentinel(n, np.float64)
        comm.Iallreduce(parts[me], y, MPI.SUM).Wait()
        same(y, folded(parts, MPI.SUM, np.float64), what)
    elif d.coll == "user operator":
        y = sentinel(n, np.float64)
        comm.Allreduce(parts[me], y, USER_SUM)
        same(y, folded(parts, MPI.SUM, np.float64), what)
    elif d.coll == "derived type":       # every other element of the root's buffer
        strided = MPI.DOUBLE.Create_vector(n, 1, 2).Commit()
        b = np.full(2 * n, -7.0)
        if me == root:
            b[::2] = parts[root]
        comm.Bcast([b, 1 if n else 0, strided], root=root)
        strided.Free()
        same(b[::2], parts[root], what)
        same(b[1::2], np.full(n, -7.0), what + ("between the elements",))
    else:                                # a dict with an array, by pickle (large: out of band)
        obj = {"rank": me, "call": call, "data": parts[me]}
        got = comm.allgather(obj)
        for q in range(P):
            same(got[q]["data"], parts[q], what + ("allgather from", q))
            same([got[q]["rank"], got[q]["call"]], [q, call], what + ("allgather's header from", q))
        b = comm.bcast(obj if me == root else None, root=root)
        same(b["data"], parts[root], what + ("bcast",))
        total = comm.allreduce(int(parts[me].sum()) if n else me, op=MPI.SUM)
        same(total, sum(int(p.sum()) if n else q for q, p in enumerate(parts)), what + ("allreduce",))


def paths_taken():
    """{path: calls} over the three communicators and every collective."""
    seen = {}
    for c in COMMS:
        for per_op in pgascol.stats(c).values():
            for path, k in per_op.items():
                seen[path] = seen.get(path, 0) + k
    return seen


def run_sequence(seed):
    rng = np.random.default_rng(seed)
    for call in range(CALLS):
        run_one(Draw(rng, call))


@collective_test
def test_random_sequence():
    run_sequence(SEED)


@collective_test
def test_another_random_sequence():
    run_sequence(7)


def test_the_sequences_took_every_path_the_environment_allows():
    """What the sequences exercised (pgascol.stats), so that a change of
    thresholds cannot quietly leave a transfer method out of this test:
    inline and copy-in/copy-out on every multi-rank node, single copy where
    the environment makes it likely (PGASCOL_TEST_EXPECT_CMA=1: small
    thresholds) and the kernel allows it, the hierarchy on virtual nodes;
    never single copy with PGASCOL_CMA=0."""
    seen = paths_taken()
    st = PG._pg
    expect = {"inline"}
    if st.lsize > 1:
        expect.add("cico")
        if os.environ.get("PGASCOL_TEST_EXPECT_CMA") == "1" and st.core.cma_ok:
            expect.add("cma")
    if st.hier:
        expect.add("hier")
    if PG.Get_size() > 1:
        expect.add("mpi")                    # the user-defined operator (ELSEWHERE)
    missing = expect - set(seen)
    assert not missing, "paths never taken: %s (taken: %s)" % (sorted(missing), seen)
    if os.environ.get("PGASCOL_CMA") == "0":
        assert "cma" not in seen, seen
