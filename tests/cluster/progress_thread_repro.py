"""Plain-mpi4py reproducer of Open MPI 5.0.11's hang across hosts
(docs/EMULATED-CLUSTER.md): a window created, then a thread calling
Iprobe every 500 us while the main thread polls an Ibarrier.
Under Open MPI 5.0.x across 2 hosts x 2 ranks the second host's ranks never
return from Win.Create. Prints "REPRO OK" (rank 0) when every step ends.

    --thread-comm same|dup   what the thread probes (default same: the
                             communicator the window is made on)
    --lock                   hold the thread off MPI while the main thread
                             is inside Win.Create/Free and the barrier
    --lock-win               hold it off only inside Win.Create/Free
    --lock-all               an access epoch (Win.Lock_all) on every window
    --steps N                windows made and freed (default 4)
    --no-thread              no progress thread at all
"""
import faulthandler
import sys
import threading
import time

import numpy as np
from mpi4py import MPI

faulthandler.dump_traceback_later(30, exit=True)   # a hang dumps the stacks and ends the rank
WORLD = MPI.COMM_WORLD
ARGS = sys.argv[1:]
lock = threading.Lock()
stop = threading.Event()


def progress(comm):
    while not stop.wait(500e-6):
        if "--lock" in ARGS or "--lock-win" in ARGS:
            with lock:
                comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)
        else:
            comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)


STEPS = int(ARGS[ARGS.index("--steps") + 1]) if "--steps" in ARGS else 4


def guarded(f, *a, win=False):
    if "--lock" in ARGS or (win and "--lock-win" in ARGS):
        with lock:
            return f(*a)
    return f(*a)


def main():
    comm = WORLD.Dup()
    probe = comm.Dup() if "dup" in ARGS else comm
    t = None
    for step in range(STEPS):
        buf = np.zeros(1000)
        win = guarded(MPI.Win.Create, buf, 8, MPI.INFO_NULL, comm, win=True)
        if "--lock-all" in ARGS:
            guarded(win.Lock_all, MPI.MODE_NOCHECK, win=True)
        if t is None and "--no-thread" not in ARGS:
            t = threading.Thread(target=progress, args=(probe,), daemon=True)
            t.start()
        req = comm.Ibarrier()
        while not guarded(req.Test):
            time.sleep(0)
        if "--lock-all" in ARGS:
            guarded(win.Unlock_all, win=True)
        guarded(win.Free, win=True)
    stop.set()
    if t is not None:
        t.join(5)
    comm.Barrier()
    if WORLD.Get_rank() == 0:
        print("REPRO OK: %s, %d ranks" % (" ".join(ARGS) or "same comm, thread", WORLD.Get_size()), flush=True)


main()
