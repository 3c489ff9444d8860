"""pgascol.sparse: distributed sparse matrices (UPCBLAS's SparseBLAS on
matrices distributed once and reused, as PETSc's Mat), SpMV and SpMM with
halo exchange.

    from mpi4py import MPI
    import scipy.sparse as sp
    import pgascol
    from pgascol import sparse

    comm = pgascol.Comm(MPI.COMM_WORLD)
    G = sp.random_array((1000, 1000), density=0.01, format="csr") if comm.rank == 0 else None
    with sparse.from_scipy(comm, G, root=0, format="csr") as A:    # collective, once
        x, y = A.vector("col", fill=1.0), A.vector("row")
        for _ in range(100):
            sparse.mv(A, x, y, alpha=1.0, beta=0.0)              # y = A x
        x.free(); y.free()

Formats csr, coo, bsr, lower skyline (by rows, balanced by nonzeros), csc
and upper skyline (by columns, balanced by nonzeros), dia by diagonals
dealt cyclically (the default, partial products summed by Reduce_scatter)
or, with from_scipy(..., split="rows"), by rows (each rank holds its rows'
part of every diagonal, y written in place); float32, float64, complex64,
complex128. The operands of mv and mm: global arrays / pgas matrices
laid out as the matrix's vectors, or numpy arrays replicated on every
rank."""
from .matrix import SparseMatrix, from_local_rows, from_scipy  # noqa: F401
from .level1 import dot  # noqa: F401
from .products import mm, mv  # noqa: F401
from .solvers import cg  # noqa: F401

__all__ = ["SparseMatrix", "from_scipy", "from_local_rows", "mv", "mm", "dot", "cg"]
