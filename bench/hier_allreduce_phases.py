"""Where the time of a hierarchical Allreduce goes: native MPI, pgascol.Comm,
the same with the node allgather's ordinary stores (a second pgascol.Comm
whose receive buffer never counts as cold: _State.cold_min = 0), and each
phase alone (the node reduce-scatter on the engine, the inter-node
Allreduce of one local rank's block, the node allgather as pgascol.Comm
runs it), in one job.

    PGASCOL_NODE_SIZE=2 mpiexec -n 4 python bench/hier_allreduce_phases.py 16M

Equal nodes only (every node the same size). Best of 7 rounds of the slowest
rank's mean per call."""
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.engine import _core
from pgascol.tools.bench_harness import parse_size

WORLD = MPI.COMM_WORLD


def main():
    nbytes = parse_size(sys.argv[1] if len(sys.argv) > 1 else "16M")
    comm = pgascol.Comm(WORLD)
    ordinary = pgascol.Comm(WORLD)
    ordinary._pg.cold_min = 0
    st = comm._pg
    if not st.hier or not st.equal:
        sys.exit("needs several nodes of equal size (e.g. PGASCOL_NODE_SIZE=2 with 4 ranks)")
    count, L = nbytes // 8, st.lsize
    x, y = np.ones(count), np.empty(count)
    counts = [count // L + (1 if count % L > i else 0) for i in range(L)]
    block, block2 = np.empty(counts[st.lrank]), np.empty(counts[st.lrank])
    f64, add = _core.DTYPES["float64"], _core.OPS["SUM"]
    cold = 0 < st.cold_min <= nbytes          # as pgascol.Comm's Allreduce decides
    phases = [
        ("native", lambda: WORLD.Allreduce(x, y)),
        ("pgascol", lambda: comm.Allreduce(x, y)),
        ("pgascol (ordinary stores)", lambda: ordinary.Allreduce(x, y)),
        ("node reduce-scatter", lambda: st.core.reduce_scatter(x, block, counts, f64, add)),
        ("inter-node allreduce", lambda: st.internode_comm.Allreduce(MPI.IN_PLACE, block2)),
        ("node allgather", lambda: st.core.allgather(block, block.nbytes, y, [c * 8 for c in counts],
                                                     None, True, cold)),
    ]
    best = {name: float("inf") for name, _ in phases}
    for _ in range(7):
        for name, call in phases:
            WORLD.Barrier()
            t0 = time.perf_counter()
            for _ in range(5):
                call()
            best[name] = min(best[name], WORLD.allreduce((time.perf_counter() - t0) / 5, op=MPI.MAX))
    if WORLD.rank == 0:
        print("np=%d, nodes of %d, %d bytes: " % (WORLD.size, L, nbytes) +
              ", ".join("%s %.2f ms" % (k, v * 1e3) for k, v in best.items()))
    comm.Free()
    ordinary.Free()


if __name__ == "__main__":
    main()
