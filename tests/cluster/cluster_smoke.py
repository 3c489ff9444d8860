"""A small program to check a job across the emulated hosts (or any
cluster): where every rank runs, pgascol.Comm's Allreduce, Bcast and
Allgather of numpy arrays from 8 B to 4 MiB against numpy, and, with
--pgas, a global array spanning the hosts. Rank 0 prints one line per
check and "SMOKE OK" at the end; a failed check raises (the job aborts).

    python tests/cluster/emulated_cluster.py mpiexec --ranks-per-host 2 -- \
        python -m mpi4py tests/cluster/cluster_smoke.py [--pgas] [--kill-rank R]
"""
import faulthandler
import os
import signal
import socket
import sys
import time

import numpy as np
from mpi4py import MPI

import pgascol

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
SIZES = [8 << (2 * k) for k in range(10)] + [4 << 20]   # bytes: 8 B .. 2 MiB, 4 MiB


def say(*a):
    if ME == 0:
        print(*a, flush=True)


def placement():
    node = WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    where = WORLD.gather((socket.gethostname(), os.getpid(), node.Get_size()))
    if ME == 0:
        say("ranks:", " ".join("%d@%s(pid %d, %d on node)" % (r, h, p, s) for r, (h, p, s) in enumerate(where)))
    node.Free()


def check_collectives(pg):
    for nbytes in SIZES:
        n = nbytes // 8
        mine = np.arange(n, dtype=np.float64) + ME
        got = np.empty_like(mine)
        pg.Allreduce(mine, got, MPI.SUM)
        assert np.array_equal(got, P * np.arange(n) + P * (P - 1) / 2), ("Allreduce", nbytes)
        b = mine.copy() if ME == P - 1 else np.zeros(n)
        pg.Bcast(b, root=P - 1)
        assert np.array_equal(b, np.arange(n) + P - 1), ("Bcast", nbytes)
        all_ = np.empty(n * P)
        pg.Allgather(mine, all_)
        assert np.array_equal(all_, np.concatenate([np.arange(n) + r for r in range(P)])), ("Allgather", nbytes)
    say("collectives 8 B..4 MiB: Allreduce, Bcast, Allgather OK")


def check_pgas(pg):
    from pgascol import pgas
    n = 1000
    with pgas.zeros(pg, n, np.int64, block=3) as a:
        idx = np.arange(ME, n, P)
        a.update(idx, np.full(idx.size, ME + 1, np.int64), MPI.SUM)
        pgas.barrier(pg)   # completes the relaxed updates
        out = np.empty(n, np.int64)
        a.get(0, out)
        expect = np.array([(i % P) + 1 for i in range(n)])
        assert np.array_equal(out, expect), "pgas update/get"
        old = a.fetch_op(0, 1, MPI.SUM)
        pgas.barrier(pg)   # completes the relaxed updates
        a.get(0, out[:1])
        assert out[0] == 1 + P and 1 <= old <= P, ("fetch_op", old, out[0])
    say("pgas global array across nodes: update, get, fetch_op OK")


def main():
    faulthandler.dump_traceback_later(float(os.environ.get("SMOKE_DUMP_AFTER", "40")), exit=True)
    placement()
    pg = pgascol.Comm(WORLD)
    check_collectives(pg)
    if "--pgas" in sys.argv:
        check_pgas(pg)
    if "--kill-rank" in sys.argv:
        victim = int(sys.argv[sys.argv.index("--kill-rank") + 1])
        WORLD.Barrier()
        if ME == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        t = time.monotonic()
        while time.monotonic() - t < 60:   # the others wait in MPI: the job must end them
            pg.Allreduce(np.ones(1), np.empty(1), MPI.SUM)
            time.sleep(0.01)
        raise SystemExit("rank %d: still running 60 s after rank %d was killed" % (ME, victim))
    WORLD.Barrier()
    say("SMOKE OK")


main()
