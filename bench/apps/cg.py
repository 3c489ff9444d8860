"""CG: the NAS Parallel Benchmarks CG kernel (NPB 3.x) on distributed rows.

    mpiexec -n 4 python bench/apps/cg.py [--class S|W|A]

The matrix is NAS CG's own (makea/sprnvc/vecset/sparse with NAS's randlc,
ported here: same random stream, same summation order of the duplicate
entries), so zeta must match the published verification value to NAS's
relative epsilon of 1e-10. Rows are split in contiguous blocks over the
ranks; every rank builds only its rows (the random stream is generated in
full on every rank, which is cheap). Each CG iteration (25 per outer
iteration, niter outer iterations, after one untimed warm-up iteration as
in NAS) assembles the search direction p with Allgatherv and does two
one-double Allreduces (p.q and r.r): a latency-bound workload.
"""
import math
import sys

import common  # first: it limits BLAS threads before numpy loads
import numpy as np

NAME = "cg"

# class: (na, nonzer, niter, shift, zeta verification value); rcond = 0.1 for all.
CLASSES = {
    "S": (1400, 7, 15, 10.0, 8.5971775078648),
    "W": (7000, 8, 15, 12.0, 10.362595087124),
    "A": (14000, 11, 15, 20.0, 17.130235054029),
    "B": (75000, 13, 75, 60.0, 22.712745482631),
}
RCOND = 0.1
CG_ITERATIONS = 25          # inner iterations of conj_grad (cgitmax)
EPSILON = 1e-10             # NAS's relative tolerance on zeta
TRAN = 314159265            # NAS's seed
AMULT = 1220703125          # 5**13, NAS's multiplier
RANDLC_MODULUS = 1 << 46


def add_arguments(parser):
    parser.add_argument("--class", dest="npb_class", choices=sorted(CLASSES), default="S",
                        help="NAS problem class (default %(default)s)")
    parser.add_argument("--niter", type=int, default=None,
                        help="outer iterations (default: the class's; only that "
                             "number is verified)")


def describe(args):
    na, nonzer, niter, shift, _ = CLASSES[args.npb_class]
    return "class %s: na=%d nonzer=%d niter=%d shift=%g" % (
        args.npb_class, na, nonzer, args.niter or niter, shift)


# --------------------------------------------------------------- the matrix

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


def random_sparse_vectors(na, nonzer):
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


def make_matrix_rows(na, nonzer, shift, first_row, last_row, vectors=None):
    """Rows [first_row, last_row) (0-based) of the NAS CG matrix in CSR:
    (values, column indices (0-based), row pointers).

    NAS's sparse() sums, in generation order, the outer products
    size_i * v_i v_i^T (size_i = rcond**((i-1)/na), v_i from
    random_sparse_vectors) plus (rcond - shift) on the diagonal; this does
    the same in numpy (np.add.at adds duplicates in order, so every entry is
    the same floating-point sum)."""
    cols, vals, lengths = vectors if vectors is not None else random_sparse_vectors(na, nonzer)
    width = cols.shape[1]
    ratio = RCOND ** (1.0 / na)
    size = np.empty(na)
    size[0] = 1.0
    size[1:] = np.cumprod(np.full(na - 1, ratio))      # size = size * ratio, in order
    scale = size[:, None] * vals                      # scale = size * aelt(nza, i)
    va = vals[:, None, :] * scale[:, :, None]         # va = aelt(nzrow, i) * scale
    row_of = np.broadcast_to(cols[:, :, None], va.shape)   # j = acol(nza, i)
    col_of = np.broadcast_to(cols[:, None, :], va.shape)   # jcol = acol(nzrow, i)
    outer = np.arange(1, na + 1)[:, None, None]
    diagonal = (row_of == col_of) & (row_of == outer)
    va = np.where(diagonal, va + RCOND - shift, va)
    used = np.arange(width) < lengths[:, None]
    keep = (used[:, :, None] & used[:, None, :]
            & (row_of > first_row) & (row_of <= last_row))   # 1-based rows in range
    # C order of (i, nza, nzrow) is NAS's loop order.
    rows = row_of[keep] - 1 - first_row
    columns = col_of[keep] - 1
    key = rows * na + columns
    unique_keys, slot = np.unique(key, return_inverse=True)
    values = np.zeros(len(unique_keys))
    np.add.at(values, slot, va[keep])
    row_pointers = np.zeros(last_row - first_row + 1, dtype=np.int64)
    np.cumsum(np.bincount(unique_keys // na, minlength=last_row - first_row), out=row_pointers[1:])
    return values, (unique_keys % na).astype(np.int64), row_pointers


# --------------------------------------------------------------- the solver

class DistributedCG:
    """NAS's conj_grad and power iteration on this rank's rows; vectors are
    local slices, p and z are assembled in full with Allgatherv."""

    def __init__(self, problem, comm):
        self.comm = comm
        self.values, self.columns, self.row_pointers = problem["matrix"]
        self.counts, self.displs = problem["counts"], problem["displs"]
        na = problem["na"]
        n_local = len(self.row_pointers) - 1
        self.full = np.zeros(na)                        # the assembled p (or z)
        self.products = np.empty(len(self.values))
        self.row_starts = self.row_pointers[:-1]
        self.x = np.ones(n_local)
        self.z, self.r, self.p, self.q = (np.zeros(n_local) for _ in range(4))
        self.send1, self.recv1 = np.zeros(1), np.zeros(1)
        self.send2, self.recv2 = np.zeros(2), np.zeros(2)
        from mpi4py import MPI
        self.full_spec = [self.full, (self.counts, self.displs), MPI.DOUBLE]

    def sum_all(self, value):
        """Global sum of one double (Allreduce)."""
        self.send1[0] = value
        self.comm.Allreduce(self.send1, self.recv1)
        return float(self.recv1[0])

    def matvec(self, local_vector, out):
        """out = A_local . v, where v is assembled from every rank's
        local_vector with Allgatherv."""
        self.comm.Allgatherv(local_vector, self.full_spec)
        np.take(self.full, self.columns, out=self.products)
        self.products *= self.values
        if len(self.row_starts):
            np.add.reduceat(self.products, self.row_starts, out=out)

    def conj_grad(self):
        """25 CG iterations on A z = x from z = 0; returns ||x - A z||."""
        x, z, r, p, q = self.x, self.z, self.r, self.p, self.q
        z[:] = 0.0
        r[:] = x
        p[:] = r
        rho = self.sum_all(r @ r)
        for _ in range(CG_ITERATIONS):
            self.matvec(p, q)
            alpha = rho / self.sum_all(p @ q)
            rho0 = rho
            z += alpha * p
            r -= alpha * q
            rho = self.sum_all(r @ r)
            p *= rho / rho0
            p += r
        self.matvec(z, r)               # r = A z
        r -= x
        return math.sqrt(self.sum_all(r @ r))

    def power_step(self, shift):
        """One outer iteration: solve, zeta = shift + 1/(x.z), x = z/||z||."""
        rnorm = self.conj_grad()
        self.send2[0] = self.x @ self.z
        self.send2[1] = self.z @ self.z
        self.comm.Allreduce(self.send2, self.recv2)
        x_dot_z, z_dot_z = self.recv2
        np.multiply(self.z, 1.0 / math.sqrt(z_dot_z), out=self.x)
        return shift + 1.0 / x_dot_z, rnorm


def setup(args, world):
    na, nonzer, niter, shift, zeta_reference = CLASSES[args.npb_class]
    counts, displs = common.block_counts(na, world.Get_size())
    first = displs[world.Get_rank()]
    matrix = make_matrix_rows(na, nonzer, shift, first, first + counts[world.Get_rank()])
    return {"na": na, "shift": shift, "niter": args.niter or niter,
            "zeta_reference": zeta_reference, "check": args.niter in (None, niter),
            "matrix": matrix, "counts": counts, "displs": displs}


def run(problem, comm):
    cg = DistributedCG(problem, comm)
    cg.power_step(problem["shift"])     # NAS: one untimed iteration, then restart from x = 1
    cg.x[:] = 1.0
    comm.start()
    for _ in range(problem["niter"]):
        zeta, rnorm = cg.power_step(problem["shift"])
    return {"zeta": zeta, "rnorm": rnorm}


def verify(problem, answer, world):
    zeta = answer["zeta"]
    error = abs(zeta - problem["zeta_reference"]) / problem["zeta_reference"]
    summary = {"zeta": "%.13f" % zeta, "rel_err": "%.1e" % error}
    if not problem["check"]:
        summary["note"] = "non-standard niter: not verified"
        return False, summary
    return error <= EPSILON, summary


if __name__ == "__main__":
    common.main(sys.modules[__name__])
