"""The cases of the UPC collective tests (tests/mpi_programs/upc_*.py), and
their expected results computed with numpy. No MPI here.

A case is everything one call needs; the generators list the full
combinatorial product (the GWU UPC test suite's loops: collective x type x
operator x flags x source affinity x sizes x block size), and `sample`
keeps all of it or a fixed random part of it (PGASCOL_UPC_TEST_SAMPLE:
"all", or a fraction such as "0.1"; the seed is PGASCOL_UPC_TEST_SEED,
default SEED, printed by rank 0). The data movement is the whole product;
the reductions cover every pair of dimensions, and their whole product
with PGASCOL_UPC_TEST_PRODUCT=full (reduce_cases)."""
import os
import random

import numpy as np

SEED = 20261126

# UPC's eleven reduction types (signed and unsigned char, short, int, long;
# float, double, long double) as numpy dtypes.
REDUCE_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                "float32", "float64", "longdouble")
INTEGER_TYPES = REDUCE_TYPES[:8]
# UPC's operators; AND, OR and XOR are defined on the integer types only.
OPS = ("ADD", "MULT", "LOGAND", "LOGOR", "AND", "OR", "XOR", "MIN", "MAX")
BITWISE = ("AND", "OR", "XOR")
USER_OPS = ("FUNC", "NONCOMM_FUNC")
BLOCKS = (1, 3, "*", 0)
# Element counts of the reductions: one element, and counts that are no
# power of two and leave the last block of the last rank partial.
NELEMS = (1, 37)
# Types of the data-movement collectives' arrays (nbytes counts bytes; one
# byte type lets nbytes be any count).
MOVE_TYPES = ("uint8", "int32", "float64")
# Elements per block of the data-movement collectives (nbytes = block x itemsize).
MOVE_BLOCKS = (1, 3, 130)

DATA_COLLECTIVES = ("broadcast", "scatter", "gather", "gather_all", "exchange", "permute")
ROOTED = ("broadcast", "scatter", "gather")


def flag_combinations(upc):
    """0 (UPC's default: IN_ALLSYNC | OUT_ALLSYNC) and the nine IN x OUT pairs."""
    ins = (upc.UPC_IN_ALLSYNC, upc.UPC_IN_MYSYNC, upc.UPC_IN_NOSYNC)
    outs = (upc.UPC_OUT_ALLSYNC, upc.UPC_OUT_MYSYNC, upc.UPC_OUT_NOSYNC)
    return [0] + [i | o for i in ins for o in outs]


def flag_name(upc, flags):
    if flags == 0:
        return "0"
    names = [n for n in ("UPC_IN_ALLSYNC", "UPC_IN_MYSYNC", "UPC_IN_NOSYNC", "UPC_OUT_ALLSYNC",
                         "UPC_OUT_MYSYNC", "UPC_OUT_NOSYNC") if getattr(upc, n) & flags]
    return "|".join(names) or str(flags)


def seed():
    return int(os.environ.get("PGASCOL_UPC_TEST_SEED", SEED))


def sample(cases, salt):
    """All the cases, or the fixed random part PGASCOL_UPC_TEST_SAMPLE asks
    for (at least one), identical on every rank."""
    spec = os.environ.get("PGASCOL_UPC_TEST_SAMPLE", "all")
    if spec == "all":
        return list(cases)
    rng = random.Random("%d-%s" % (seed(), salt))
    keep = [c for c in cases if rng.random() < float(spec)]
    return keep or [rng.choice(list(cases))]


def op_defined(op, dtype):
    return not (op in BITWISE and np.dtype(dtype).kind == "f")


# ---------------------------------------------------------------- values

def values(n, dtype, salt, op=None):
    """n values of dtype, deterministic in (n, dtype, salt): small enough
    that sums and products of floats are exact in any order (MULT: factors
    of +-1, 2 and 0.5; integers wrap identically in any order)."""
    rng = np.random.default_rng([seed(), n, salt, sum(map(ord, str(dtype))), sum(map(ord, str(op)))])
    dt = np.dtype(dtype)
    if op == "MULT":
        factors = [1, -1, 2, 0.5, 1, -2, 1, 1] if dt.kind == "f" else [1, 3, 5, 7, 2, 1, 255, -1]
        return np.array(factors)[rng.integers(0, len(factors), n)].astype(np.int64 if dt.kind != "f" else dt) \
            .astype(dt)
    if op == "NONCOMM_FUNC" and dt.kind in "iu":     # invertible 2x2 matrices (compose_2x2)
        return invertible_2x2(rng, n, dt)
    if op in ("LOGAND", "LOGOR"):   # zeros are what these operators are about
        return (rng.random(n) < (0.95 if op == "LOGAND" else 0.05)).astype(dt) * \
            rng.integers(1, 100, n).astype(dt)
    if dt.kind == "f":
        return (rng.integers(-1000, 1000, n)).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


def bytes_of(n, salt):
    """n deterministic bytes."""
    return np.random.default_rng([seed(), n, salt, 7]).integers(0, 256, n, dtype=np.uint8)


# ---------------------------------------------------------------- reductions

def compose_2x2(a, b):
    """The 2x2 matrix product a @ b, elementwise over arrays of integers each
    holding a 2x2 matrix as four fields of a quarter of its bits (row-major;
    uint64: 16-bit fields, arithmetic mod 2**16): associative, not
    commutative. Vectorised; the result has a's type."""
    a, b = np.asarray(a), np.asarray(b)
    dt = a.dtype
    u = np.dtype("u%d" % dt.itemsize)
    w = dt.itemsize * 2
    m = (1 << w) - 1
    a, b = a.view(u).astype(np.uint64), b.view(u).astype(np.uint64)

    def field(x, k):
        return (x >> np.uint64(w * (3 - k))) & np.uint64(m)
    a0, a1, a2, a3 = (field(a, k) for k in range(4))
    b0, b1, b2, b3 = (field(b, k) for k in range(4))
    c = [(x & np.uint64(m)) << np.uint64(w * (3 - k)) for k, x in enumerate(
        (a0 * b0 + a1 * b2, a0 * b1 + a1 * b3, a2 * b0 + a3 * b2, a2 * b1 + a3 * b3))]
    return (c[0] | c[1] | c[2] | c[3]).astype(u).view(dt)


def invertible_2x2(rng, n, dtype):
    """n 2x2 matrices packed as compose_2x2 reads them, each with odd
    diagonal and even off-diagonal fields: an odd determinant, so they are
    invertible modulo 2**w and their products never collapse to zero (as
    products of many arbitrary matrices modulo a power of two do)."""
    dt = np.dtype(dtype)
    w = dt.itemsize * 2
    f = rng.integers(0, 1 << w, (n, 4), dtype=np.uint64)
    f[:, 0] |= np.uint64(1)
    f[:, 3] |= np.uint64(1)
    f[:, 1] &= ~np.uint64(1)
    f[:, 2] &= ~np.uint64(1)
    packed = (f[:, 0] << np.uint64(3 * w)) | (f[:, 1] << np.uint64(2 * w)) | (f[:, 2] << np.uint64(w)) | f[:, 3]
    return packed.astype(np.dtype("u%d" % dt.itemsize)).view(dt)


def first_of(a, b):
    """x op y = x: associative, not commutative."""
    return np.array(a, copy=True)


def last_of(a, b):
    """x op y = y: associative, not commutative."""
    return np.array(b, copy=True)


def noncomm_func(dtype):
    """A non-commutative, associative function for dtype: the 2x2 matrix
    product for the integer types, a projection for the floating ones."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return compose_2x2
    return first_of if dt == np.float32 or dt == np.longdouble else last_of


def comm_func(dtype):
    """A commutative user function: numpy's add as a ufunc, or a callable."""
    k = [np.dtype(t) for t in REDUCE_TYPES].index(np.dtype(dtype))
    return np.add if k % 2 else (lambda a, b: np.maximum(a, b))


def ufunc_of(op):
    return {"ADD": np.add, "MULT": np.multiply, "AND": np.bitwise_and, "OR": np.bitwise_or,
            "XOR": np.bitwise_xor, "MIN": np.minimum, "MAX": np.maximum,
            "LOGAND": np.logical_and, "LOGOR": np.logical_or}[op]


def fold(op, x, func=None):
    """op over x in index order, in x's type (numpy; user functions folded
    one element at a time, strictly left to right)."""
    dt = x.dtype
    if func is not None:
        acc = x[:1].copy()
        for k in range(1, len(x)):
            acc = np.asarray(func(acc, x[k:k + 1])).astype(dt)
        return acc[0]
    if op in ("LOGAND", "LOGOR"):      # C's && and ||: 0 or 1; one element is itself
        return x[0] if len(x) == 1 else dt.type(ufunc_of(op).reduce(x != 0))
    return ufunc_of(op).reduce(x, dtype=dt)


def prefix(op, x, func=None):
    """dst[i] = op over x[0..i], in x's type."""
    dt = x.dtype
    if func is not None:
        out = x.copy()
        for k in range(1, len(x)):
            out[k] = np.asarray(func(out[k - 1:k], x[k:k + 1])).astype(dt)[0]
        return out
    if op in ("LOGAND", "LOGOR"):      # dst[0] = src[0] as it is, then 0 or 1
        out = ufunc_of(op).accumulate(x != 0).astype(dt)
        out[:1] = x[:1]
        return out
    return ufunc_of(op).accumulate(x, dtype=dt)


def reduce_cases(upc, P):
    """(collective, dtype, op, flags, blk, nelems, root). Every type x
    operator x block size x element count, the flags and the root turning
    over the cases; and every flags x block size x element count x root, the
    (type, operator) pair turning over them: each pair of dimensions meets
    in every combination. PGASCOL_UPC_TEST_PRODUCT=full gives the whole
    product instead (every type x operator x flags x block size x element
    count, the root turning over: 8960 cases per collective)."""
    flagsets = flag_combinations(upc)
    pairs = [(d, op) for d in REDUCE_TYPES for op in OPS + USER_OPS if op_defined(op, d)]
    full = os.environ.get("PGASCOL_UPC_TEST_PRODUCT") == "full"
    out = []
    for coll in ("reduce", "prefix_reduce"):
        k = 0
        for dtype, op in pairs:
            for flags in (flagsets if full else [None]):
                for blk in BLOCKS:
                    for nelems in NELEMS:
                        out.append((coll, dtype, op, flagsets[k % len(flagsets)] if flags is None else flags,
                                    blk, nelems, k % P))
                        k += 1
        if not full:
            for flags in flagsets:
                for blk in BLOCKS:
                    for nelems in NELEMS:
                        for root in range(P):
                            dtype, op = pairs[k % len(pairs)]
                            out.append((coll, dtype, op, flags, blk, nelems, root))
                            k += 1
    return out


# ---------------------------------------------------------------- data movement

def move_cases(upc, P):
    """(collective, dtype, elements per block, flags, root, variant): every
    collective x type x block x flags, every root for the rooted ones, two
    permutations for permute."""
    out = []
    for coll in DATA_COLLECTIVES:
        for dtype in MOVE_TYPES:
            for blk in MOVE_BLOCKS:
                for flags in flag_combinations(upc):
                    if coll in ROOTED:
                        out += [(coll, dtype, blk, flags, root, 0) for root in range(P)]
                    elif coll == "permute":
                        out += [(coll, dtype, blk, flags, 0, v) for v in (0, 1)]
                    else:
                        out.append((coll, dtype, blk, flags, 0, 0))
    return out


def permutation(P, variant):
    """variant 0: reversal; 1: a fixed random permutation."""
    if variant == 0:
        return np.arange(P)[::-1].copy()
    return np.random.default_rng([seed(), P]).permutation(P)


def expected_move(coll, src, P, B, root, perm=None):
    """The destination array's content (numpy, by global index) after the
    collective, from the source's content `src` (by global index), with
    blocks of B elements (nbytes = B x itemsize), source and destination at
    element offset 0 except the rooted side (offset root x its block)."""
    if coll == "broadcast":          # src: block B at rank root; dst: block B per rank
        return np.tile(src[root * B:(root + 1) * B], P)
    if coll == "scatter":            # src: P blocks on root (block P*B); dst: block B per rank
        return src[root * P * B:(root + 1) * P * B].copy()
    if coll == "gather":             # src: block B per rank; dst: P blocks on root (block P*B)
        return src[:P * B].copy()
    if coll == "gather_all":         # src: block B per rank; dst: P*B per rank
        return np.tile(src[:P * B], P)
    if coll == "exchange":           # block i of rank j's src -> block j of rank i's dst
        blocks = src[:P * P * B].reshape(P, P, B)
        return blocks.transpose(1, 0, 2).reshape(-1).copy()
    if coll == "permute":            # rank i's block -> rank perm[i]'s block
        out = np.empty(P * B, src.dtype)
        for i in range(P):
            out[perm[i] * B:(perm[i] + 1) * B] = src[i * B:(i + 1) * B]
        return out
    raise ValueError(coll)
