"""--background: another job on the same CPUs while a benchmark measures,
as on a shared node or a CI runner that runs two test jobs at once.

    pgascol-bench run|objects|... --background KIND [--background-np N]

KIND is one of
- ``none`` (the default);
- ``busy``: N processes that spin in a Python loop (a compiler, a test that
  computes);
- ``mpi4py``: an MPI job of N ranks (default 2) that runs collectives in a
  loop through plain mpi4py, whose waits poll the CPU as the MPI's own do;
- ``pgascol``: the same job through pgascol.Comm.

The background job's collectives are a mix of what programs call most: an
allreduce of a Python int, an Allreduce of 1 KiB, a Bcast of 64 KiB, a
pickled allgather of a tuple and a Barrier, round after round. It starts
before the measured job (and has made a round of calls when the measured job
is launched) and is stopped after it: its ranks leave when a file they poll
is removed (so pgascol's background frees its communicator as a program
does), and the whole process group is killed if they have not left within 10
s. Nothing of it outlives the benchmark: killed, the benchmark removes
nothing, so the background's processes also watch that it still runs.

This module imports neither MPI nor the C extension on the host side."""
import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import time

KINDS = ("none", "busy", "mpi4py", "pgascol")
STARTED_WITHIN_S = 60.0      # the background job's first round of calls, or BenchError
STOP_WITHIN_S = 10.0         # its ranks' orderly exit, then SIGKILL


def add_arguments(parser):
    parser.add_argument("--background", choices=KINDS, default="none",
                        help="another job on the same CPUs while measuring: busy processes, or an MPI "
                             "job of collectives through plain mpi4py or pgascol (docs/PERFORMANCE.md, "
                             "\"A machine shared with another job\")")
    parser.add_argument("--background-np", type=int, default=2, metavar="N",
                        help="processes or ranks of the background job (default 2)")


@contextlib.contextmanager
def background_job(kind, prefix, nprocs=2, env=None):
    """Run the background job `kind` (KINDS) of nprocs processes while the
    block runs; prefix: the launcher's command line for the MPI kinds.
    Yields a description of it (None for "none") for the run's meta."""
    from .bench_harness import BenchError
    if kind in (None, "none"):
        yield None
        return
    if nprocs < 1:
        raise BenchError("--background-np must be at least 1 (got %d)" % nprocs)
    env = dict(os.environ if env is None else env)
    env.pop("PGASCOL_NODE_SIZE", None)      # the background job is a plain one-node job
    with tempfile.TemporaryDirectory(prefix="pgascol-bench-bg-") as tmp:
        running = os.path.join(tmp, "running")
        started = os.path.join(tmp, "started")
        open(running, "w").close()
        if kind == "busy":
            # they stop with the file, or when this process is gone (reparented:
            # killed, it removes nothing, so they remove its directory)
            command = [sys.executable, "-c", "import os, shutil\nwhile os.path.exists(%r) and os.getppid() == %d: "
                       "sum(range(10000))\nif os.path.exists(%r): shutil.rmtree(%r, ignore_errors=True)"
                       % (running, os.getpid(), running, tmp)]
            procs = [subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)
                     for _ in range(nprocs)]
            open(started, "w").close()
        else:
            command = [*prefix, "-n", str(nprocs), sys.executable, "-m", "pgascol.tools.bench_background",
                       "worker", "--impl", kind, "--running", running, "--started", started,
                       "--host-pid", str(os.getpid())]
            print("# background: %s" % shlex.join(command), flush=True)
            procs = [subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      start_new_session=True)]
        try:
            _wait_started(procs, started)
            yield {"kind": kind, "np": nprocs}
        finally:
            os.unlink(running)
            _stop(procs)
        if kind != "busy" and any(p.returncode not in (0, None) for p in procs):
            print("# background job ended with exit status %s" % procs[0].returncode, flush=True)


def _wait_started(procs, started):
    from .bench_harness import BenchError
    deadline = time.monotonic() + STARTED_WITHIN_S
    while not os.path.exists(started):
        if any(p.poll() is not None for p in procs):
            raise BenchError("the background job exited before it started (exit status %s)"
                             % procs[0].returncode)
        if time.monotonic() > deadline:
            raise BenchError("the background job made no call within %.0f s" % STARTED_WITHIN_S)
        time.sleep(0.02)


def _stop(procs):
    import signal
    deadline = time.monotonic() + STOP_WITHIN_S
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _calls(comm):
    """One round of the background's collectives on comm (mpi4py's or
    pgascol's Comm, the same methods)."""
    import numpy as np
    from mpi4py import MPI
    me = comm.Get_rank()
    small, block = np.ones(128), np.zeros(8192)

    def round_():
        comm.allreduce(me, op=MPI.SUM)
        comm.Allreduce(MPI.IN_PLACE, small, op=MPI.SUM)
        comm.Bcast(block, root=0)
        comm.allgather((me, "x", 1.5))
        comm.Barrier()
    return round_


def _host_wants_us(args):
    """Whether the benchmark still runs and has not asked us to stop."""
    if not os.path.exists(args.running):
        return False
    try:
        os.kill(args.host_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="pgascol.tools.bench_background worker")
    ap.add_argument("--impl", choices=("mpi4py", "pgascol"), required=True)
    ap.add_argument("--running", required=True)
    ap.add_argument("--started", required=True)
    ap.add_argument("--host-pid", type=int, required=True)
    args = ap.parse_args(argv)
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    if args.impl == "pgascol":
        import pgascol
        comm = pgascol.Comm(world.Dup())
    else:
        comm = world.Dup()
    one_round = _calls(comm)
    one_round()
    if world.Get_rank() == 0:
        open(args.started, "w").close()
    # Every rank decides to stop in the same round: rank 0 looks at the file
    # and at the benchmark's process (killed, it removes nothing) and tells
    # the others in the round's first collective.
    going = True
    while going:
        going = comm.bcast(_host_wants_us(args) if world.Get_rank() == 0 else None, root=0)
        for _ in range(50):
            one_round()
    comm.Free()
    if world.Get_rank() == 0 and os.path.exists(args.running):
        import shutil       # the benchmark was killed: its directory is ours to remove
        shutil.rmtree(os.path.dirname(args.running), ignore_errors=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker_main(sys.argv[2:]))
    sys.exit("usage: pgascol-bench ... --background mpi4py|pgascol (this module's worker runs under mpiexec)")
