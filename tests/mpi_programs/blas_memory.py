"""UPCBLAS's +1 (an allocation failure) on a real failure: an address-space
limit (RLIMIT_AS) on the ranks of a fresh job, whose heap holds little
free memory that an allocation could reuse without a new mapping (so it
runs in a launch of its own, first). No BLAS call runs under the limit:
the private buffer is refused while the arguments are checked."""
import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas
from pgascol.blas import upcblas as U
from tests.mpi_programs.blas_upcblas import free, read, shared

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
COMM = pgascol.Comm(WORLD)


def _address_space_limit(extra):
    """Limit this process's address space (RLIMIT_AS, soft) to what it maps now
    plus `extra` bytes; returns the limits to restore."""
    import resource
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    old = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra, old[1]))
    return old


def test_memory_error_returns_plus_one():
    """A replicated B read whole (ldb a multiple of sec_block_size only) needs a
    private k x n copy: 64 MiB here (above glibc's largest mmap threshold, so
    it is always a fresh mapping), under an address-space limit of what the
    rank maps plus 16 MiB. UPCBLAS's +1, before any data moves: on every rank
    when every rank is limited, and with check_all=True when one rank is.
    With one rank B would be by columns (ldb a multiple of sec*P), read in
    place: no copy to refuse, nothing to test."""
    import resource
    m, k, n, b, sec = 2 * P, 2048, 4093, 2, 2
    ldb = n + 1                 # 2 x odd: a multiple of sec, of no sec*P but P = 1
    a, bb, c = shared(np.ones(m * k), b * k), shared(np.ones(k * ldb), sec), shared(np.full(m * n, 7.0), b * n)
    pgas.barrier(COMM)
    if P == 1:
        return free(a, bb, c)
    for limited, check_all in (((range(P)), False), ((P - 1,), True)):
        old = _address_space_limit(16 << 20) if ME in limited else None
        try:
            rc = U.upc_blas_dgemm(U.upc_pblas_rowDist, b, sec, 0, 0, m, n, k, 1.0, (a, 0), k, (bb, 0), ldb, 0.0,
                                  (c, 0), n, check_all=check_all)
        finally:
            if old is not None:
                resource.setrlimit(resource.RLIMIT_AS, old)
        assert rc == 1, (rc, limited, check_all)
        assert WORLD.allreduce(1) == P                   # nobody was left in a collective
        assert np.all(read(c) == 7.0)                    # nothing written
    rc = U.upc_blas_dgemm(U.upc_pblas_rowDist, b, sec, 0, 0, m, n, k, 1.0, (a, 0), k, (bb, 0), ldb, 0.0, (c, 0), n)
    assert rc == 0 and np.all(read(c) == k)             # unlimited, the same call works
    free(a, bb, c)
