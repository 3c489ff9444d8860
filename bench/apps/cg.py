"""CG: the NAS Parallel Benchmarks CG kernel (NPB 3.x) on distributed rows.

    mpiexec -n 4 python bench/apps/cg.py [--class S|W|A]

The matrix is NAS CG's own (pgascol.sparse.problems: makea/sprnvc/vecset/
sparse with NAS's randlc, ported: same random stream, same summation order
of the duplicate entries), so zeta must match the published verification value to NAS's
relative epsilon of 1e-10. Rows are split in contiguous blocks over the
ranks; every rank builds only its rows (the random stream is generated in
full on every rank, which is cheap). Each CG iteration (25 per outer
iteration, niter outer iterations, after one untimed warm-up iteration as
in NAS) assembles the search direction p with Allgatherv and does two
one-double Allreduces (p.q and r.r): a latency-bound workload.

Implementations (--impl, all three by default, same matrix rows): "mpi"
and "pgascol" run the code above on MPI.COMM_WORLD and on pgascol.Comm;
"sparse" runs pgascol.sparse.cg on a sparse matrix made once from the same
rows (sparse.from_local_rows): its products exchange only the entries of p
each rank's rows touch (read in place inside a node), and its vector
operations are pgascol.blas's on global arrays. Its communication happens
inside the matrix and the BLAS calls, so its "coll" columns read 0.
"""
import math
import sys

import common  # first: it limits BLAS threads before numpy loads
import numpy as np
import scipy.sparse as sp

from pgascol import blas, sparse
from pgascol.sparse.problems import (NAS_CG_CLASSES as CLASSES, NAS_CG_ITERATIONS as CG_ITERATIONS,
                                     NAS_EPSILON as EPSILON, nas_matrix_rows)
from pgascol.sparse import cg as sparse_cg

NAME = "cg"
IMPLS = ("mpi", "pgascol", "sparse")


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


class SparseMatrixCG:
    """The same power iteration with pgascol.sparse.cg on a sparse matrix;
    the vectors are global arrays laid out like the matrix's rows."""

    def __init__(self, problem, comm):
        values, columns, row_pointers = problem["matrix"]
        rows = sp.csr_matrix((values, columns, row_pointers), shape=(len(row_pointers) - 1, problem["na"]))
        self.A = sparse.from_local_rows(comm, rows)
        self.x = self.A.vector("row", fill=1.0)
        self.z, self.r = self.A.vector("row"), self.A.vector("row")

    def power_step(self, shift):
        A, x, z, r = self.A, self.x, self.z, self.r
        z.local()[:] = 0.0
        sparse_cg(A, x, x0=z, tol=0.0, maxiter=CG_ITERATIONS)      # z: 25 iterations on A z = x from 0
        sparse.mv(A, z, r, alpha=1.0, beta=0.0)             # r = A z
        blas.axpy(x, r, a=-1.0)
        rnorm = math.sqrt(blas.dot(r, r))
        x_dot_z, z_dot_z = blas.dot(x, z), blas.dot(z, z)
        blas.copy(z, x)
        blas.scal(1.0 / math.sqrt(z_dot_z), x)
        return shift + 1.0 / x_dot_z, rnorm

    def free(self):
        for obj in (self.x, self.z, self.r, self.A):
            obj.free()


def setup(args, world):
    na, nonzer, niter, shift, zeta_reference = CLASSES[args.npb_class]
    counts, displs = common.block_counts(na, world.Get_size())
    first = displs[world.Get_rank()]
    matrix = nas_matrix_rows(na, nonzer, shift, first, first + counts[world.Get_rank()])
    return {"na": na, "shift": shift, "niter": args.niter or niter,
            "zeta_reference": zeta_reference, "check": args.niter in (None, niter),
            "matrix": matrix, "counts": counts, "displs": displs}


def run(problem, comm):
    if comm.impl == "sparse":
        cg = SparseMatrixCG(problem, comm.comm)
    else:
        cg = DistributedCG(problem, comm)
    cg.power_step(problem["shift"])     # NAS: one untimed iteration, then restart from x = 1
    (cg.x.local() if comm.impl == "sparse" else cg.x)[:] = 1.0
    comm.start()
    for _ in range(problem["niter"]):
        zeta, rnorm = cg.power_step(problem["shift"])
    comm.stop()                         # the matrix's release is not timed
    if comm.impl == "sparse":
        cg.free()
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
