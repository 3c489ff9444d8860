"""pgascol.blas: distributed dense BLAS on pgascol's global arrays.

    from mpi4py import MPI
    import pgascol
    from pgascol import blas, pgas

    comm = pgascol.Comm(MPI.COMM_WORLD)
    a = pgas.matrix(comm, (n, n), "float64", block=64, dist="row")
    x = pgas.zeros(comm, n, "float64", block="*")
    y = blas.gemv(1.0, a, x)            # y lies like a's rows
    c = blas.gemm(1.0, a, a)            # c by rows; the second a moves panel by panel
    print(blas.nrm2(y))                 # on every rank

Names and argument order are scipy.linalg.blas's, with global arrays (the
dtype gives s, d, c or z) in place of numpy arrays; the operands' layouts
choose the algorithm (docs/ARCHITECTURE.md, "Distributed BLAS").
blas.submatrix(a, i, j, m, n) and blas.subvector(x, start, n) are operands
that start at a block boundary of their array (UPC's phase 0). Every
routine is collective. A misuse raises ArgumentError on every rank before
any data moves. Local compute is SciPy's BLAS (scipy.linalg.cython_blas)
with the GIL released, one BLAS thread per rank unless
PGASCOL_BLAS_THREADS or set_threads() says otherwise (pgascol.blas.threads).
UPCBLAS's interface: pgascol.blas.upcblas."""
from .level1 import asum, axpy, copy, dot, dotc, dotu, nrm2, scal, swap  # noqa: F401
from .level2 import gemv, ger, gerc, geru, trsv  # noqa: F401
from .level3 import gemm, syrk, trsm  # noqa: F401
from .threads import set_threads, threads  # noqa: F401
from .views import submatrix, subvector  # noqa: F401

__all__ = ["copy", "swap", "scal", "axpy", "dot", "dotu", "dotc", "nrm2", "asum", "gemv", "ger", "geru",
           "gerc", "trsv", "gemm", "syrk", "trsm", "set_threads", "threads", "submatrix", "subvector"]
