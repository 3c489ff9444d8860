"""What a node team measures as it works (Team.costs, picoseconds per byte:
copy into one's own staging, cross-core copy out of a peer's staging, single
copy) and which paths its calls took, round by round, for one exchange
collective on the engine.

    mpiexec -n 2 python bench/path_costs.py alltoall 1M
    PGASCOL_ADAPT=0 mpiexec -n 2 python bench/path_costs.py allgather 1M

Six rounds of 200 calls; rank 0 prints the time per call, the costs and the
calls per path so far."""
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.tools.bench_harness import parse_size


def main():
    op = sys.argv[1] if len(sys.argv) > 1 else "alltoall"
    nbytes = parse_size(sys.argv[2] if len(sys.argv) > 2 else "1M")
    comm = MPI.COMM_WORLD
    team = pgascol.NodeTeam(comm)
    t, P = team.core, team.core.size
    if op == "alltoall":
        blk = max(nbytes // P, 1)
        send, recv = np.ones(blk * P, np.uint8), np.zeros(blk * P, np.uint8)
        call = lambda: t.alltoall(send, [blk] * P, None, recv, [blk] * P, None)  # noqa: E731
    elif op == "allgather":
        send, recv = np.ones(nbytes, np.uint8), np.zeros(nbytes * P, np.uint8)
        call = lambda: t.allgather(send, nbytes, recv, [nbytes] * P, None)  # noqa: E731
    elif op == "gather":
        send, recv = np.ones(nbytes, np.uint8), np.zeros(nbytes * P, np.uint8)
        call = lambda: t.gather(send, nbytes, recv, [nbytes] * P, None, 0)  # noqa: E731
    else:
        sys.exit("usage: path_costs.py alltoall|allgather|gather [SIZE]")
    name = op.capitalize()
    for rnd in range(6):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(200):
            call()
        us = (time.perf_counter() - t0) / 200 * 1e6
        if comm.rank == 0:
            print("round %d: %8.1f us/call  costs %s  paths %s"
                  % (rnd, us, t.costs, t.stats().get(name, {})), flush=True)
    team.free()


if __name__ == "__main__":
    main()
