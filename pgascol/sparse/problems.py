"""Test and benchmark matrices as scipy.sparse CSR: NAS CG's (makea), the
2-D 5-point and 3-D 7-point Laplacians (Poisson's equation with Dirichlet
boundaries on a unit-spaced grid, scipy.sparse.kron style) and a random
power-law matrix. Each can be built whole or as one row range
[first_row, last_row), so every rank builds only its own rows.

    from pgascol.sparse import problems
    A = problems.nas_cg_matrix("S")                 # 1400 x 1400, NAS class S
    part = problems.poisson2d(2000, rows=(lo, hi))  # rows lo..hi-1 of the 4M x 4M Laplacian

The NAS CG matrix is NAS's own (makea/sprnvc/vecset/sparse with NAS's
randlc, ported: same random stream, same summation order of the duplicate
entries), so a CG power iteration on it reproduces NAS's zeta to NAS's
relative epsilon of 1e-10 (NAS_CG_CLASSES gives the verification values)."""
import numpy as np
import scipy.sparse as sp

#: class: (na, nonzer, niter, shift, zeta verification value); rcond = 0.1 for all.
NAS_CG_CLASSES = {
    "S": (1400, 7, 15, 10.0, 8.5971775078648),
    "W": (7000, 8, 15, 12.0, 10.362595087124),
    "A": (14000, 11, 15, 20.0, 17.130235054029),
    "B": (75000, 13, 75, 60.0, 22.712745482631),
}
NAS_RCOND = 0.1
NAS_CG_ITERATIONS = 25      # inner iterations of NAS's conj_grad (cgitmax)
NAS_EPSILON = 1e-10         # NAS's relative tolerance on zeta
TRAN = 314159265            # NAS's seed
AMULT = 1220703125          # 5**13, NAS's multiplier
RANDLC_MODULUS = 1 << 46


def _row_range(n, rows):
    lo, hi = (0, n) if rows is None else (int(rows[0]), int(rows[1]))
    if not 0 <= lo <= hi <= n:
        raise ValueError("rows %r out of [0, %d]" % (rows, n))
    return lo, hi


# --------------------------------------------------------------- NAS CG

class Randlc:
    """NAS's randlc: x <- a * x mod 2**46, returns x / 2**46. NAS computes
    it exactly in double precision; integers give the same numbers."""

    def __init__(self, seed=TRAN, multiplier=AMULT):
        self.x = seed
        self.multiplier = multiplier

    def next_int(self):
        """The next state, an integer in [1, 2**46)."""
        self.x = (self.multiplier * self.x) % RANDLC_MODULUS
        return self.x

    def __call__(self):
        return self.next_int() / RANDLC_MODULUS


def nas_random_vectors(na, nonzer):
    """makea's generation loop (sprnvc + vecset for each row): for every
    outer-product index i (1-based) the column indices (1-based) and values
    of a sparse vector with nonzer random entries plus 0.5 at position i.
    Returns (cols, vals, lengths) as (na, nonzer + 1) arrays padded with 0."""
    rng = Randlc()
    rng()                               # cg's main draws zeta = randlc(tran, amult) first
    nn1 = 2                             # smallest power of two >= na (at least 2)
    while nn1 < na:
        nn1 *= 2
    width = nonzer + 1
    cols = np.zeros((na, width), dtype=np.int64)
    vals = np.zeros((na, width), dtype=np.float64)
    lengths = np.empty(na, dtype=np.int64)
    to_position = 46 - (nn1.bit_length() - 1)   # icnvrt(x, nn1) = int(nn1 * x) = state >> this
    for row in range(na):
        # sprnvc: nonzer distinct random positions in 1..na, with random values
        positions, values = [], []
        while len(positions) < nonzer:
            value = rng()
            position = (rng.next_int() >> to_position) + 1
            if position > na or position in positions:
                continue
            positions.append(position)
            values.append(value)
        # vecset: element `row + 1` is set to 0.5 (appended when absent)
        if row + 1 in positions:
            values[positions.index(row + 1)] = 0.5
        else:
            positions.append(row + 1)
            values.append(0.5)
        lengths[row] = len(positions)
        cols[row, :len(positions)] = positions
        vals[row, :len(positions)] = values
    return cols, vals, lengths


def nas_matrix_rows(na, nonzer, shift, first_row, last_row, vectors=None):
    """Rows [first_row, last_row) (0-based) of the NAS CG matrix in CSR
    arrays: (values, column indices (0-based), row pointers).

    NAS's sparse() sums, in generation order, the outer products
    size_i * v_i v_i^T (size_i = rcond**((i-1)/na), v_i from
    nas_random_vectors) plus (rcond - shift) on the diagonal; this does the
    same in numpy (np.add.at adds duplicates in order, so every entry is the
    same floating-point sum). The outer products are formed in chunks of
    generation indices, in order, so memory stays bounded for class B."""
    cols, vals, lengths = vectors if vectors is not None else nas_random_vectors(na, nonzer)
    width = cols.shape[1]
    ratio = NAS_RCOND ** (1.0 / na)
    size = np.empty(na)
    size[0] = 1.0
    size[1:] = np.cumprod(np.full(na - 1, ratio))      # size = size * ratio, in order
    used = np.arange(width) < lengths[:, None]
    rows_out, cols_out, vals_out = [], [], []
    chunk = 8192
    for i0 in range(0, na, chunk):
        i1 = min(i0 + chunk, na)
        c, v = cols[i0:i1], vals[i0:i1]
        scale = size[i0:i1, None] * v                  # scale = size * aelt(nza, i)
        va = v[:, None, :] * scale[:, :, None]         # va = aelt(nzrow, i) * scale
        row_of = np.broadcast_to(c[:, :, None], va.shape)   # j = acol(nza, i)
        col_of = np.broadcast_to(c[:, None, :], va.shape)   # jcol = acol(nzrow, i)
        outer = np.arange(i0 + 1, i1 + 1)[:, None, None]
        diagonal = (row_of == col_of) & (row_of == outer)
        va = np.where(diagonal, va + NAS_RCOND - shift, va)
        u = used[i0:i1]
        keep = (u[:, :, None] & u[:, None, :]
                & (row_of > first_row) & (row_of <= last_row))   # 1-based rows in range
        # C order of (i, nza, nzrow) is NAS's loop order.
        rows_out.append(row_of[keep] - 1 - first_row)
        cols_out.append(col_of[keep] - 1)
        vals_out.append(va[keep])
    key = np.concatenate(rows_out) * na + np.concatenate(cols_out)
    unique_keys, slot = np.unique(key, return_inverse=True)
    values = np.zeros(len(unique_keys))
    np.add.at(values, slot, np.concatenate(vals_out))
    row_pointers = np.zeros(last_row - first_row + 1, dtype=np.int64)
    np.cumsum(np.bincount(unique_keys // na, minlength=last_row - first_row), out=row_pointers[1:])
    return values, (unique_keys % na).astype(np.int64), row_pointers


def nas_cg_matrix(klass, rows=None, vectors=None):
    """NAS CG's matrix of class `klass` ("S", "W", "A", "B") as scipy CSR:
    whole (na x na), or rows [lo, hi) when rows=(lo, hi) ((hi-lo) x na).
    vectors: nas_random_vectors(na, nonzer), when the caller already has them."""
    na, nonzer, _, shift, _ = NAS_CG_CLASSES[klass]
    lo, hi = _row_range(na, rows)
    values, columns, pointers = nas_matrix_rows(na, nonzer, shift, lo, hi, vectors)
    return sp.csr_matrix((values, columns, pointers), shape=(hi - lo, na))


# --------------------------------------------------------------- Poisson

def _laplacian_1d(n, dtype):
    """The n x n second-difference matrix tridiag(-1, 2, -1)."""
    return sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1],
                    shape=(n, n), format="csr", dtype=dtype)


def _kron_sum(dims, rows, dtype):
    """sum over axes of I x .. x T_axis x .. x I for a grid of `dims`
    (first axis slowest), rows [lo, hi) of it, in CSR with sorted indices.
    Built one slab of the slowest axis at a time, so a row range costs
    memory in proportion to its rows."""
    n = int(np.prod(dims))
    lo, hi = _row_range(n, rows)
    if len(dims) == 1:
        out = _laplacian_1d(dims[0], dtype)[lo:hi]
        out.sort_indices()
        return out
    inner = int(np.prod(dims[1:]))
    inner_op = _kron_sum(dims[1:], None, dtype)         # the slab's own Laplacian
    slab0, slab1 = lo // inner, -(-hi // inner)
    parts = []
    for s in range(slab0, slab1):
        a, b = max(lo, s * inner) - s * inner, min(hi, (s + 1) * inner) - s * inner
        block = inner_op[a:b]
        eye = sp.identity(inner, dtype=dtype, format="csr")[a:b]
        pieces = [(s * inner, block + 2 * eye)]
        if s > 0:
            pieces.append(((s - 1) * inner, -eye))
        if s + 1 < dims[0]:
            pieces.append(((s + 1) * inner, -eye))
        coo = [sp.coo_matrix(p) for _, p in pieces]
        parts.append(sp.csr_matrix((np.concatenate([c.data for c in coo]),
                                    (np.concatenate([c.row for c in coo]),
                                     np.concatenate([c.col + off for (off, _), c in zip(pieces, coo)]))),
                                   shape=(b - a, n)))
    out = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, n), dtype=dtype)
    out.sum_duplicates()
    out.sort_indices()
    return out


def poisson2d(nx, ny=None, rows=None, dtype=np.float64):
    """The 5-point Laplacian on an nx x ny grid (ny = nx by default),
    Dirichlet boundaries: kron(I, T_nx) + kron(T_ny, I), 4 on the diagonal,
    -1 to each grid neighbour; symmetric positive definite. nx*ny rows,
    about 5 nonzeros each. rows=(lo, hi): those rows only."""
    return _kron_sum((ny or nx, nx), rows, dtype)


def poisson3d(nx, ny=None, nz=None, rows=None, dtype=np.float64):
    """The 7-point Laplacian on an nx x ny x nz grid (cubic by default),
    6 on the diagonal, -1 to each grid neighbour; SPD."""
    return _kron_sum((nz or nx, ny or nx, nx), rows, dtype)


# --------------------------------------------------------------- power law

def power_law(n, mean_row_nnz=8, exponent=2.0, seed=1, rows=None, dtype=np.float64):
    """A random n x n matrix whose row lengths follow a power law (Pareto of
    index exponent - 1, scaled to mean_row_nnz on average, at most n) and
    whose column indices are drawn with the same skew (a few columns very
    popular), plus a unit diagonal; values uniform in [-1, 1). Deterministic
    in seed; rows=(lo, hi) draws the whole stream's row lengths (cheap) and
    only those rows' entries (a generator per row block of 4096 rows, so a
    row range gives the same rows as the whole)."""
    lo, hi = _row_range(n, rows)
    rng = np.random.default_rng(seed)
    lengths = rng.pareto(exponent - 1.0, n) + 1.0
    lengths = np.minimum(np.rint(lengths * (mean_row_nnz / lengths.mean())).astype(np.int64), n)
    weights = 1.0 / np.arange(1, n + 1) ** (1.0 / exponent)        # column popularity by rank
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    perm = np.random.default_rng(seed + 1).permutation(n)           # popular columns anywhere
    blocks = []
    step = 4096
    for b0 in range(lo - lo % step, hi, step):
        brng = np.random.default_rng([seed, b0])
        b1 = min(b0 + step, n)
        count = int(lengths[b0:b1].sum())
        cols = perm[np.minimum(np.searchsorted(cdf, brng.random(count)), n - 1)]
        vals = brng.uniform(-1.0, 1.0, count)
        rix = np.repeat(np.arange(b0, b1), lengths[b0:b1])
        keep = (rix >= lo) & (rix < hi)
        blocks.append((rix[keep] - lo, cols[keep], vals[keep]))
    r = np.concatenate([b[0] for b in blocks] + [np.arange(hi - lo)])
    c = np.concatenate([b[1] for b in blocks] + [np.arange(lo, hi)])
    v = np.concatenate([b[2] for b in blocks] + [np.ones(hi - lo)])
    out = sp.csr_matrix((v.astype(dtype), (r, c)), shape=(hi - lo, n))
    out.sum_duplicates()
    out.sort_indices()
    return out


# --------------------------------------------------------------- banded

def banded(n, half_bandwidth=4, seed=1, rows=None, dtype=np.float64):
    """A random n x n band matrix: every entry within half_bandwidth of the
    diagonal, values uniform in [-1, 1) plus 2 * half_bandwidth + 1 on the
    diagonal (so diagonally dominant); the matrix DIA and skyline store
    without padding beyond the band's corners. rows=(lo, hi): those rows."""
    lo, hi = _row_range(n, rows)
    offsets = np.arange(-half_bandwidth, half_bandwidth + 1)
    rng = np.random.default_rng(seed)
    data = rng.uniform(-1.0, 1.0, (len(offsets), n))       # data[d, j]: the entry in column j
    data[half_bandwidth] += len(offsets)
    whole = sp.dia_matrix((data.astype(dtype), offsets), shape=(n, n)).tocsr()
    out = whole[lo:hi] if rows is not None else whole
    out.sort_indices()
    return out
