"""The panel size of pgascol.blas's replicated matrices across nodes, from
the measured bandwidth plateau of one-sided gets.

    PGASCOL_NODE_SIZE=1 mpiexec -n 2 python -m pgascol.blas.calibrate [--out FILE]

(ranks 0 and 1 on different nodes; on one machine, virtual nodes). Rank 0
reads panels of 64 KiB to 32 MiB from rank 1's part of a global matrix
with Rget, as gemm's panels move; the panel size is the smallest whose
bandwidth is within 10% of the best. Stored in the file
PGASCOL_BLAS_CALIBRATION names, by default
~/.cache/pgascol/blas-<host>.json ({"panel_bytes": N, "bandwidth": {...}});
read by every later job (panel.panel_bytes); PGASCOL_BLAS_PANEL_BYTES
overrides it."""
import argparse
import json
import os
import sys
import time

from .operands import Mat
from .panel import default_path

SIZES = [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 32 << 20]
PLATEAU = 0.9


def plateau(bandwidth):
    """The smallest size whose bandwidth is within 1 - PLATEAU of the best."""
    best = max(bandwidth.values())
    return min(size for size, bw in bandwidth.items() if bw >= PLATEAU * best)


def measure(comm, rounds=5):
    """{panel bytes: best bandwidth in bytes/s} of rank 0 reading rank 1 (collective)."""
    import numpy as np
    from .. import pgas
    ctx = pgas.context.of(comm)
    if ctx.size < 2:
        raise SystemExit("calibrate needs 2 ranks (on different nodes: PGASCOL_NODE_SIZE=1 on one machine)")
    cols = 1024                                     # rows of 8 KiB
    rows_per_rank = max(SIZES) // (cols * 8)
    with pgas.matrix(comm, (rows_per_rank * ctx.size, cols), np.float64, block=rows_per_rank, dist="row") as a:
        view = Mat("a", a, 0, a.rows, a.cols, a.ld, "row", a.bsize)
        a.local()[:] = ctx.rank
        pgas.barrier(comm)
        result = {}
        for size in SIZES:
            best = float("inf")
            if ctx.rank == 0:
                h = size // (cols * 8)
                for _ in range(rounds):
                    t = time.perf_counter()
                    if ctx.on_node[1]:
                        buf = np.array(view.part(1)[:h])
                    else:
                        buf, req = view.fetch(1, 0, h)
                        ctx.wait_request(req, "a calibration get")
                    best = min(best, time.perf_counter() - t)
                    assert buf[0, 0] == 1
                result[size] = size / best
        pgas.barrier(comm)
    return comm.bcast(result, root=0)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m pgascol.blas.calibrate")
    ap.add_argument("--out", default=None, help="the file to write (default %s)" % default_path())
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    from mpi4py import MPI
    import pgascol
    comm = pgascol.Comm(MPI.COMM_WORLD)
    bandwidth = measure(comm, args.rounds)
    panel = plateau(bandwidth)
    if comm.Get_rank() == 0:
        path = args.out or default_path()
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"panel_bytes": panel, "bandwidth": {str(k): v for k, v in bandwidth.items()}}, f, indent=1)
        for size, bw in sorted(bandwidth.items()):
            print("%9d bytes: %8.2f GB/s" % (size, bw / 1e9))
        print("panel size %d bytes (within %d%% of the best), written to %s" % (panel, 100 - PLATEAU * 100, path))
    comm.Free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
