"""What comm_datatypes_layouts.py and comm_datatypes_special_cases.py share
(one launch, the chapter test_datatypes of tests/test_mpi_programs.py):
the pgascol.Comm over COMM_WORLD they test and its native duplicate, made
once per launch when the first of them loads; the kinds of layout a rank
may describe its doubles with (derived datatypes), buffers and buffer
specifications in them, their data, and on_pgascol_test, which checks that
a test's calls ran on the engine or the hierarchy, never on MPI."""
import functools

import numpy as np
from mpi4py import MPI

import pgascol
from tests.mpi_programs import collective_test

WORLD = MPI.COMM_WORLD
NATIVE = WORLD.Dup()
PG = pgascol.Comm(WORLD)
P, ME = PG.Get_size(), PG.Get_rank()
ROOTS = sorted({0, P - 1})
# Doubles per rank or block, multiples of 6 so that every kind below holds
# them in whole elements: inline (48 B), copy-in/copy-out through staging
# (48 KB), and beyond the 2 MiB staging area (single copy or many chunks).
SMALL, MEDIUM, LARGE = 6, 6000, 300000
SIZES = (SMALL, MEDIUM, LARGE)
ACCELERATED = {"inline", "cico", "cma", "hier"}


class Kind:
    """A layout of doubles in a buffer: datatype `dt` holds `k` doubles per
    element, elements `slots` doubles apart (its extent), the element's
    doubles at slots `pos`, in type-map order (which is the order on the
    wire). Slots not in pos are gaps the collectives must not touch."""

    def __init__(self, name, dt, k, slots, pos):
        self.name, self.dt, self.k, self.slots, self.pos = name, dt, k, slots, pos
        assert dt.Get_size() == 8 * k and dt.Get_extent() == (0, 8 * slots), (name, dt.Get_extent())

    def elems(self, n):
        """Elements holding n doubles."""
        assert n % self.k == 0
        return n // self.k

    def buffer(self, n_elems, fill=-1.0):
        return np.full(n_elems * self.slots, fill)

    def put(self, buf, elem, x):
        """Store doubles x from element elem on."""
        n = self.elems(len(x))
        buf.reshape(-1, self.slots)[elem:elem + n][:, self.pos] = np.asarray(x).reshape(n, self.k)


DOUBLE = Kind("double", MPI.DOUBLE, 1, 1, [0])


KINDS = (
    DOUBLE,
    Kind("resized", MPI.DOUBLE.Create_resized(0, 16).Commit(), 1, 2, [0]),
    Kind("vector", MPI.DOUBLE.Create_vector(2, 1, 3).Commit(), 2, 4, [0, 3]),
    Kind("indexed", MPI.DOUBLE.Create_indexed([1, 2], [3, 0]).Commit(), 3, 4, [3, 0, 1]),
    Kind("struct", MPI.Datatype.Create_struct([1, 1], [16, 0], [MPI.DOUBLE, MPI.DOUBLE]).Commit(), 2, 3, [2, 0]),
)


def kind(rank, shift, recv=False):
    """The kind rank uses in variant `shift` (neighbouring ranks differ; the
    receive side of a rank differs from its send side)."""
    return KINDS[(rank + shift + (2 if recv else 0)) % len(KINDS)]


def data(rank, n, salt=0):
    """n doubles that name their origin (exact in float64)."""
    return np.arange(n, dtype=np.float64) + (rank * 1009 + salt * 7) * 1e7


def layout(kd, x_blocks, elem_displs, n_elems, fill=-1.0):
    """A buffer of n_elems elements of kind kd holding x_blocks[i] from element elem_displs[i] on."""
    buf = kd.buffer(n_elems, fill)
    for x, d in zip(x_blocks, elem_displs):
        if len(x):
            kd.put(buf, d, x)
    return buf


def on_pgascol_test(*ops, skip=False):
    """A collective_test whose calls of `ops` must all run on the engine or
    the hierarchy (pgascol.stats), and each of them at least once; with
    `skip`, the test does not apply and runs nothing."""
    def wrap(fn):
        @collective_test
        @functools.wraps(fn)
        def run():
            if skip:
                return
            before = pgascol.stats(PG)
            fn()
            now = pgascol.stats(PG)
            for op in ops:
                grown = {p for p, n in now.get(op, {}).items() if n > before.get(op, {}).get(p, 0)}
                assert grown and grown <= ACCELERATED, (op, now.get(op), before.get(op))
        return run
    return wrap


def vspec(kd, buf, counts, displs, form):
    """A vector buffer spec (counts in doubles, displs in elements of kd)."""
    c = [kd.elems(x) for x in counts]
    return [buf, c, displs, kd.dt] if form % 2 == 0 else [buf, (c, displs), kd.dt]


def gapped(kd, counts):
    """Element displacements of blocks of counts doubles with a one-element
    gap after each, and the buffer's size in elements."""
    displs, e = [], 0
    for c in counts:
        displs.append(e)
        e += kd.elems(c) + 1
    return displs, e


def _v_counts(n, salt):
    """Uneven counts (in doubles, some of them 0) of a v collective."""
    return [6 * ((r * 5 + 1 + salt) % 4) * max(1, n // 24) for r in range(P)]


def _a2a_count(n, i, j):
    """Doubles rank i sends to rank j in the Alltoallv tests (symmetric, some 0)."""
    return 6 * ((i + j) % 3) * max(1, n // (6 * P))


def _a2a_per(n):
    """Doubles per block of the Alltoall tests: the large size has more than
    2 MiB per rank in all."""
    return max(6, n // P // 6 * 6)
