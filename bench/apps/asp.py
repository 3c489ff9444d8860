"""ASP: all-pairs shortest paths (Floyd-Warshall) with one row Bcast per step.

    mpiexec -n 4 python bench/apps/asp.py [--n 1024] [--density 0.1] [--seed 1]

The N x N int32 distance matrix of a random directed graph (weights 1..100,
each edge present with probability --density, INF = 2**29 where there is
none) is distributed by blocks of rows. At step k the owner of row k
broadcasts it and every rank relaxes its rows: D[i, :] = min(D[i, :],
D[i, k] + D[k, :]). N steps, N Bcasts of N * 4 bytes: a latency- and
bandwidth-mixed Bcast workload (the classic ASP of the Orca/Manta/MagPIe
papers).

Verification: every rank compares some of its rows with a Dijkstra from
that source (--verify-rows per rank), and for N <= --serial-max rank 0 runs
the serial Floyd-Warshall and compares checksums. The checksum (printed) is
a position-weighted sum of all distances modulo 2**64, independent of the
number of ranks.
"""
import sys

import common  # first: it limits BLAS threads before numpy loads
import numpy as np

NAME = "asp"
INF = 1 << 29           # "no path"; INF + INF still fits in int32
MAX_WEIGHT = 100


def add_arguments(parser):
    parser.add_argument("--n", type=int, default=1024,
                        help="number of vertices (default %(default)s)")
    parser.add_argument("--density", type=float, default=0.1,
                        help="probability of each edge (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the random graph (default %(default)s)")
    parser.add_argument("--verify-rows", type=int, default=2,
                        help="rows per rank checked against Dijkstra (default %(default)s)")
    parser.add_argument("--serial-max", type=int, default=512,
                        help="also check against serial Floyd-Warshall up to this N "
                             "(default %(default)s)")


def describe(args):
    return "N=%d density=%g seed=%d" % (args.n, args.density, args.seed)


def make_graph(n, density, seed):
    """The N x N int32 weight matrix: 0 on the diagonal, INF for no edge.
    Deterministic in (n, density, seed)."""
    rng = np.random.default_rng(seed)
    weights = rng.integers(1, MAX_WEIGHT + 1, size=(n, n), dtype=np.int32)
    weights[rng.random((n, n)) >= density] = INF
    np.fill_diagonal(weights, 0)
    return weights


def floyd_warshall_serial(weights):
    """Reference all-pairs shortest paths on one process."""
    dist = weights.copy()
    for k in range(dist.shape[0]):
        np.minimum(dist, dist[:, k, None] + dist[k], out=dist)
    return dist


def dijkstra(weights, source):
    """Shortest distances from `source` (dense O(N^2) Dijkstra), INF where
    unreachable: an independent check of single rows of the result."""
    n = weights.shape[0]
    dist = np.full(n, INF, dtype=np.int64)
    dist[source] = 0
    done = np.zeros(n, dtype=bool)
    for _ in range(n):
        u = int(np.argmin(np.where(done, np.iinfo(np.int64).max, dist)))
        if done[u] or dist[u] >= INF:
            break
        done[u] = True
        np.minimum(dist, dist[u] + weights[u], out=dist)
    return np.minimum(dist, INF)


def checksum_part(rows, first_row):
    """Position-weighted sum of a block of rows of the distance matrix,
    modulo 2**64; the parts of all blocks add up (mod 2**64) to the checksum
    of the whole matrix, whatever the blocks."""
    n = rows.shape[1]
    row_index = np.arange(first_row, first_row + rows.shape[0], dtype=np.uint64)
    index = row_index[:, None] * np.uint64(n) + np.arange(n, dtype=np.uint64)[None, :]
    position_weight = index % np.uint64(1000003) + np.uint64(1)
    return int((rows.astype(np.uint64) * position_weight).sum(dtype=np.uint64))


def checksum(dist):
    return checksum_part(dist, 0)


def setup(args, world):
    if args.n < 1:
        raise SystemExit("--n must be at least 1")
    weights = make_graph(args.n, args.density, args.seed)
    lo, hi = common.block_range(args.n, world.Get_size(), world.Get_rank())
    counts, _ = common.block_counts(args.n, world.Get_size())
    owner = np.repeat(np.arange(world.Get_size()), counts)
    return {"args": args, "weights": weights, "lo": lo, "hi": hi, "owner": owner}


def run(problem, comm):
    """Distributed Floyd-Warshall: returns this rank's rows of the result."""
    n, lo, owner = problem["args"].n, problem["lo"], problem["owner"]
    dist = problem["weights"][lo:problem["hi"]].copy()     # this rank's rows
    row_k = np.empty(n, dtype=np.int32)
    candidate = np.empty_like(dist)
    for k in range(n):
        root = int(owner[k])
        if root == comm.rank:
            row_k[:] = dist[k - lo]
        comm.Bcast(row_k, root=root)
        np.add(dist[:, k, None], row_k, out=candidate)
        np.minimum(dist, candidate, out=dist)
    return {"rows": dist}


def verify(problem, answer, world):
    args, lo, hi = problem["args"], problem["lo"], problem["hi"]
    rows, weights = answer["rows"], problem["weights"]
    ok = rows.shape == (hi - lo, args.n)
    # A few of this rank's rows against Dijkstra from the same source.
    if ok and hi > lo:
        picks = np.unique(np.linspace(lo, hi - 1, num=min(args.verify_rows, hi - lo)).astype(int))
        for source in picks:
            ok = ok and np.array_equal(rows[source - lo], dijkstra(weights, int(source)))
    total = world.allreduce(checksum_part(rows, lo)) % (1 << 64)     # Python ints: exact
    summary = {"checksum": "%016x" % total}
    if args.n <= args.serial_max:
        serial_ok = None
        if world.Get_rank() == 0:
            serial_ok = checksum(floyd_warshall_serial(weights)) == total
        serial_ok = world.bcast(serial_ok)
        summary["serial"] = "match" if serial_ok else "MISMATCH"
        ok = ok and serial_ok
    reachable = world.allreduce(int(np.count_nonzero(rows < INF)))
    summary["reachable"] = "%.3f" % (reachable / float(args.n) ** 2)
    return ok, summary


if __name__ == "__main__":
    common.main(sys.modules[__name__])
