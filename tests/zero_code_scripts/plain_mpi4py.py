# An unmodified mpi4py program (no pgascol import): run by
# tests/test_zero_code.py as `mpiexec -n N python -m pgascol plain_mpi4py.py ARG`.
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
x = np.arange(1000, dtype=np.float64) * (rank + 1)
y = np.empty_like(x)
comm.Allreduce(x, y, op=MPI.SUM)
assert np.array_equal(y, np.arange(1000) * size * (size + 1) / 2)
b = np.arange(10, dtype="i") if rank == 0 else np.zeros(10, "i")
comm.Bcast(b, root=0)
assert np.array_equal(b, np.arange(10))
g = comm.allgather(rank)
assert g == list(range(size))
sub = comm.Split(rank % 2, rank)
sub.Barrier()
sub.Free()
if sys.argv[1:] == ["fail"] and rank == size - 1:
    raise RuntimeError("deliberate failure on the last rank")
if sys.argv[1:] == ["fail"]:
    comm.Barrier()       # the others wait here until the job is aborted
if rank == 0:
    import pgascol
    print("COMM_WORLD is %s.%s; argv=%s; stats=%s" % (
        type(comm).__module__, type(comm).__name__, sys.argv[1:], pgascol.stats(comm)))
