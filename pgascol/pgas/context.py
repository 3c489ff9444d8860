"""The PGAS layer's side of one pgascol communicator: where every rank
lives (node, local rank), the global arrays and locks allocated on it, and
the bounded waits of the layer.

One context per communicator, made on first use (collectively: the first
allocation is collective anyway) and kept in the communicator's pgascol
state, which frees what is still allocated when the communicator is freed."""
import os
import threading
import time

import numpy as np
from mpi4py import MPI

from ..comm._comm import state_of
from ..errors import ArgumentError, PeerDeadError, PgascolTimeoutError


def of(comm):
    """The context of pgascol communicator `comm` (made on first use)."""
    st = state_of(comm)
    if st is None:
        raise ArgumentError("the PGAS layer needs a pgascol communicator (pgascol.Comm), "
                            "not %r" % (comm,))
    if st.pgas is None:
        st.pgas = Context(comm, st)
    return st.pgas


class Context:
    def __init__(self, comm, st):
        self.comm = comm
        self.state = st
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        team = st.team
        self.node_comm = team.node_comm
        self.local_rank, self.local_size = team.local_rank, team.local_size
        self.nnodes = team.num_nodes
        placement = comm.allgather((team.node_index, team.local_rank, MPI.Get_processor_name()))
        self.node_of = [p[0] for p in placement]
        self.local_of = [p[1] for p in placement]
        self.nhosts = len(set(p[2] for p in placement))   # nodes may be virtual: hosts are not
        me = self.node_of[self.rank]
        # the ranks of my node in local-rank order (the order of their parts)
        self.node_ranks = sorted((r for r in range(self.size) if self.node_of[r] == me),
                                 key=lambda r: self.local_of[r])
        self.on_node = [n == me for n in self.node_of]
        self.objects = []          # arrays and locks allocated and not yet freed
        self.on_free = []          # callables told of every array freed (pgascol.upc drops its plans)
        self.scratch = None        # pgascol.upc's scratch array (binomial scatter and gather), grown on demand
        self.split_barrier = None  # the request of a notify() not yet waited for
        self.timeout = st.timeout
        self._progress = None      # the progress thread while arrays span nodes
        self._spanning = 0         # how many of them

    # ------------------------------------------------------------ bounded waits

    def check(self, start, what, limit=None):
        """Between two polls of a wait: check_node, then raise if the wait
        has lasted `limit` seconds (default PGASCOL_TIMEOUT)."""
        self.check_node(what)
        if limit is None:
            if time.monotonic() - start > self.timeout:
                raise PgascolTimeoutError("%s did not complete within PGASCOL_TIMEOUT=%gs" % (what, self.timeout))
        elif time.monotonic() - start > limit:
            raise PgascolTimeoutError("%s did not complete within %gs" % (what, limit))

    def check_node(self, what):
        """Raise if a rank of the caller's node died (PeerDeadError naming
        it) or gave up on the node team (TeamAbortedError). A rank of
        another node that died is seen only by MPI failing or a timeout."""
        try:
            self.state.core.check_alive()
        except PeerDeadError as exc:
            raise PeerDeadError("%s: rank %d, on this node, died or exited"
                                % (what, self.node_ranks[exc.peer]), exc.peer) from exc

    def wait_request(self, req, what):
        """Complete an MPI request, bounded as the collectives' waits are."""
        start = time.monotonic()
        check = start + 0.1
        while not req.Test():
            now = time.monotonic()
            if now >= check:
                self.check(start, what)
                check = now + 0.1
            os.sched_yield()

    def yield_cpu(self):
        """Between polls of another rank's word: spin when every rank has a
        CPU, hand the CPU over when ranks outnumber CPUs."""
        if self.state.core.config["spin_ns"] == 0:
            os.sched_yield()

    def progress(self):
        """Let MPI progress one-sided operations aimed at this rank (with
        several nodes, a writer's operation on another node may need the
        target's MPI library to run)."""
        if self.nnodes > 1:
            MPI.Intracomm.Iprobe(self.comm, MPI.ANY_SOURCE, MPI.ANY_TAG)

    def barrier(self):
        """A barrier that keeps MPI progressing while it waits (an array
        spanning nodes may have another node's operations aimed at us)."""
        if self.nnodes > 1:
            self.wait_request(MPI.Intracomm.Ibarrier(self.comm), "pgascol.pgas.barrier")
        else:
            self.comm.Barrier()

    def count(self, flag):
        """A barrier that also returns how many ranks passed flag true (one
        Allreduce in place of the barrier; MPI kept progressing as barrier does)."""
        send, got = np.array([1 if flag else 0], np.int32), np.zeros(1, np.int32)
        if self.nnodes > 1:
            self.wait_request(MPI.Intracomm.Iallreduce(self.comm, send, got, MPI.SUM), "pgascol.pgas.barrier")
        else:
            self.comm.Allreduce(send, got, MPI.SUM)
        return int(got[0])

    def spans_nodes(self, on):
        """An array spanning nodes was allocated (on) or freed: run the
        progress thread while any exists."""
        self._spanning += 1 if on else -1
        if self._spanning > 0 and self._progress is None:
            self._progress = _Progress(self.comm, thread=not _thread_hangs(self.nhosts))
        elif self._spanning == 0 and self._progress is not None:
            self._progress.stop()
            self._progress = None

    # ------------------------------------------------------------ lifetime

    def free_all(self):
        """Free what is still allocated (collective: the communicator is being freed)."""
        for obj in reversed(list(self.objects)):
            obj.free()


def _thread_hangs(nhosts):
    """Whether a progress thread would hang this job: under Open MPI 5.0.x
    across hosts, ranks never return from MPI_Win_create while a thread of
    theirs or of the other ranks calls Iprobe (with a duplicate
    communicator and with the thread held off MPI during window calls alike;
    docs/EMULATED-CLUSTER.md has the reproducer). Open MPI's own TCP
    progress thread (OMPI_MCA_btl_tcp_progress_thread=1, set before MPI
    starts) then does the thread's work."""
    return nhosts > 1 and "open mpi" in MPI.Get_library_version().lower()


def bitwise_updates_lost():
    """Whether MPI may lose this job's bitwise updates (BAND, BOR, BXOR)
    between nodes: under Open MPI, unless OMPI_MCA_osc_rdma_acc_use_amo=0
    took osc/rdma's accumulates off the network's atomics, which lose
    them (see pgascol/__init__.py, _open_mpi_defaults)."""
    amo = os.environ.get("OMPI_MCA_osc_rdma_acc_use_amo", "1").strip().lower()
    return amo not in ("0", "false", "no", "off") and "open mpi" in MPI.Get_library_version().lower()


def _progress_us():
    """How often the progress thread lets MPI run (PGASCOL_PGAS_PROGRESS_US, microseconds; 0: never)."""
    text = os.environ.get("PGASCOL_PGAS_PROGRESS_US", "500")
    try:
        value = float(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 1e9:
        raise ArgumentError("PGASCOL_PGAS_PROGRESS_US must be a number of microseconds >= 0, not %r" % text)
    return value


class _Progress:
    """The layer's own asynchronous progress. Across nodes an MPI library
    without hardware RMA (MPICH's and Open MPI's shared-memory and TCP
    transports) applies a one-sided operation only when the target rank's
    library runs. So that a writer never waits for a target busy in numpy
    or in a node collective, a thread of the target calls MPI every
    PROGRESS_US microseconds while arrays span nodes (MPI initialised with
    THREAD_MULTIPLE, mpi4py's default; without it, the target's own calls
    into pgascol and MPI are the progress). It sleeps in between: it costs
    a wake-up, not a CPU.

    No thread under Open MPI across hosts (_thread_hangs): there the
    target's own calls are the progress, or Open MPI's TCP progress thread."""

    def __init__(self, comm, thread=True):
        self._stop = threading.Event()
        self._comm = MPI.Intracomm(comm)
        self._thread = None
        self._interval = _progress_us() * 1e-6
        if thread and MPI.Query_thread() == MPI.THREAD_MULTIPLE and self._interval > 0:
            self._thread = threading.Thread(target=self._run, name="pgascol-pgas-progress", daemon=True)
            self._thread.start()

    def _run(self):
        while not self._stop.wait(self._interval):
            self._comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
