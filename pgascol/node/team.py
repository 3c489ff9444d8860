"""Node teams: the ranks of an mpi4py communicator that share a node.

A NodeTeam splits a communicator into its nodes (MPI COMM_TYPE_SHARED, or
virtual nodes of PGASCOL_NODE_SIZE ranks: consecutive ones, or dealt round
robin with PGASCOL_NODE_MAP=roundrobin), builds the leader
communicator (local rank 0 of every node), creates the node's shared segment
and probes single copy. Setting up is collective over the communicator; MPI
carries only the set-up messages (segment name, affinities, probe results)."""
import os

from mpi4py import MPI

from ..engine import _core
from . import config, topology
from ..errors import ArgumentError, PgascolError

PAGE = 4096


class NodeTeam:
    """The node-level view of a communicator.

    Attributes: comm (the parent), node_comm, leader_comm (None on
    non-leaders; split_comm holds the communicator of the split that made it
    on every rank), local_rank, local_size, node_index, num_nodes, layout
    (topology.NodeLayout), core (the C-level _core.Team)."""

    def __init__(self, comm, env=os.environ):
        if not isinstance(comm, MPI.Intracomm) or comm == MPI.COMM_NULL:
            raise ArgumentError("a node team needs an mpi4py intracommunicator, not %r" % (comm,))
        self.comm = comm
        self.topology = topology.load(env)
        self.node_comm, self.layout = self._split_nodes(comm, config.node_size(env), config.node_map(env),
                                                        self.topology)
        self.local_rank = self.node_comm.Get_rank()
        self.local_size = self.node_comm.Get_size()
        # Every rank keeps a communicator from this split, the non-leaders
        # theirs unused (split_comm): a split that gives some ranks
        # COMM_NULL leaves the ranks' context-id tables out of step, after
        # which Open MPI 5.0.11's context-id agreement of a later Dup of comm
        # was seen to hang, ~1 job in 25 (README, "Tests").
        self.split_comm = comm.Split(0 if self.local_rank == 0 else 1, comm.Get_rank())
        self.leader_comm = self.split_comm if self.local_rank == 0 else None
        first = (self.leader_comm.Get_rank(), self.leader_comm.Get_size()) if self.leader_comm else None
        self.node_index, self.num_nodes = self.node_comm.bcast(first, root=0)
        self.core = None
        self.regions = {}   # shared regions registered: id -> this member's Segment
        try:
            self.core = self._create_segment(env)
        except BaseException:
            self.node_comm.Free()
            self.split_comm.Free()
            raise

    @staticmethod
    def _split_nodes(comm, virtual_size, node_map, topo):
        """(node communicator, layout) of this rank: its real node, or a
        virtual node of it. Members keep the order of their ranks in comm.
        The layout (CPUs, oversubscription) is the real node's, restricted
        to the node's members: virtual nodes share the machine's CPUs, so
        4 ranks as 2 nodes of 2 on 2 cores are oversubscribed (they must
        not spin)."""
        node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
        whole = topology.node_layout(topo, node.allgather(topology.rank_cpus()))
        if virtual_size <= 0:
            return node, whole
        r, n = node.Get_rank(), node.Get_size()
        if node_map == "roundrobin":
            # ceil(n/k) virtual nodes; the real node's rank r goes to node r % nodes
            color = r % -(-n // virtual_size)
        else:
            # consecutive ranks of the real node, k at a time
            color = r // virtual_size
        vnode = node.Split(color, r)
        members = vnode.allgather(r)
        node.Free()
        return vnode, topology.NodeLayout(tuple(whole.home_cpus[m] for m in members),
                                          whole.n_cpus_available, whole.oversubscribed)

    def _create_segment(self, env):
        """Collective over node_comm: the first member creates, the others
        attach, then nobody else may (csrc/base/segment.h). A memfd segment the
        others cannot open (/proc/<pid>/fd closed to them) is made again
        under a /dev/shm name."""
        cfg = error = None
        if self.local_rank == 0:
            try:
                cfg = config.team_config(self.layout.oversubscribed, env, self.layout.n_cpus_available,
                                         len(self.layout.home_cpus))
            except Exception as exc:  # every member must learn of it, or they would wait forever
                error = exc
        core, failed, memfd = self._attach_all(cfg, error)
        if failed and memfd:  # every member knows both: the same choice everywhere
            if core is not None:
                core.destroy()
            core, failed, _ = self._attach_all(dict(cfg, segment="named") if cfg else None, None)
        if failed:
            if core is not None:
                core.destroy()
            raise failed[0]
        core.check_attached()
        ok, reason = core.probe_cma()
        verdicts = self.node_comm.allgather((ok, reason))
        reasons = [r for good, r in verdicts if not good]
        core.set_cma(not reasons, reasons[0] if reasons else "")
        return core

    def _attach_all(self, cfg, error):
        """One attempt: the first member creates a segment with cfg (or
        reports `error`), the others attach, and everyone releases. Returns
        (this member's team or None, [the exception to raise] if any member
        failed, whether a memfd was made: the same failure and verdict on
        every member)."""
        nc, me, n = self.node_comm, self.local_rank, self.local_size
        core = None
        if me == 0 and error is None:
            try:
                _core.sweep_stale_segments()
                core = _core.Team.create(0, n, cfg)
            except Exception as exc:
                error = exc
        # the address, or why there is none: every member raises the same error
        address = nc.bcast(core.name if core is not None else (type(error), str(error)), root=0)
        if not isinstance(address, str):
            if error is not None:
                return None, [error], False
            cls, text = address
            if not issubclass(cls, PgascolError):
                cls = PgascolError
            return None, [cls("the first rank of the node could not create the shared segment: " + text)], False
        if me != 0:
            try:
                core = _core.Team.attach(me, n, address)
            except Exception as exc:
                error = exc
        errors = nc.allgather(None if error is None else "local rank %d: %s" % (me, error))
        # Everyone attached (or failed): nobody else may, so nothing can
        # outlive the job, whatever happens to the processes later.
        if core is not None:
            core.release()
        failed = [e for e in errors if e]
        memfd = address.startswith("memfd:")
        if not failed:
            return core, [], memfd
        return core, [error if error is not None else
                      PgascolError("could not set up the node's shared segment: " + "; ".join(failed))], memfd

    # ------------------------------------------------------------ shared memory

    def shared_segment(self, sizes, what):
        """Collective over node_comm: one segment that every member maps
        (csrc/base/segment.h: a memfd, 0600, never named in /dev/shm),
        holding local rank i's part of sizes[i] bytes at offsets[i], each
        part starting on a page. Returns (Segment, offsets). The first
        member creates it, the others attach, then nobody else may: nothing
        outlives the job."""
        offsets, total = [], 0
        for n in sizes:
            offsets.append(total)
            total += -(-n // PAGE) * PAGE
        total = max(total, PAGE)
        nc = self.node_comm
        seg = error = None
        if self.local_rank == 0:
            try:
                seg = _core.Segment.create(total)
            except PgascolError as exc:
                error = exc
        address = nc.bcast(seg.address if seg is not None else None, root=0)
        if address is not None and self.local_rank != 0:
            try:
                seg = _core.Segment.attach(address, total)
            except PgascolError as exc:
                error = exc
        errors = nc.allgather(None if error is None else str(error))
        if seg is not None:
            seg.release()               # everyone attached: nobody else may
        failed = [e for e in errors if e]
        if address is None or failed:
            raise PgascolError("%s: could not set up the node's shared memory: %s"
                               % (what, "; ".join(failed) or "the node's first rank failed"))
        return seg, offsets

    def register(self, seg):
        """Collective over node_comm: make `seg` (every member's mapping of
        one shared segment) a shared region of the node team
        (csrc/team/region.h), so that the collectives read and write
        buffers inside it through the members' own mappings. Keeps this
        member's mapping alive until unregister. Returns the region's id."""
        bases = self.node_comm.allgather(seg.base)
        region, error = bases[0], None
        try:
            self.core.region_add(region, seg.size, bases)
        except PgascolError as exc:
            error = "local rank %d: %s" % (self.local_rank, exc)
        errors = [e for e in self.node_comm.allgather(error) if e]
        if errors:
            if error is None:
                self.core.region_remove(region)
            raise PgascolError("could not register a shared region: " + "; ".join(errors))
        self.regions[region] = seg
        return region

    def unregister(self, region):
        """Collective in effect (every member calls it between the same two
        collectives, no message): forget shared region `region`. Buffers in
        it become ordinary memory to the collectives; the mapping lasts as
        long as views of it do."""
        if self.core is not None:
            self.core.region_remove(region)
        del self.regions[region]

    def region_of(self, address):
        """The id of the registered region holding `address` in this
        process, or None."""
        for region, seg in self.regions.items():
            if seg.base <= address < seg.base + seg.size:
                return region
        return None

    @property
    def cma_ok(self):
        return self.core.cma_ok

    @property
    def cma_reason(self):
        return self.core.cma_reason

    def free(self):
        """Release the segment and the communicators (idempotent)."""
        if self.core is not None:
            self.core.destroy()        # forgets the regions too
            self.core = None
            self.regions.clear()
            self.node_comm.Free()
            self.split_comm.Free()

    def describe(self):
        """A dict describing the team, for `pgascol info` and logs."""
        return {
            "ranks": self.comm.Get_size(),
            "nodes": self.num_nodes,
            "local_size": self.local_size,
            "node_index": self.node_index,
            "oversubscribed": self.layout.oversubscribed,
            "cpus_available": self.layout.n_cpus_available,
            "home_cpus": list(self.layout.home_cpus),
            "segment_bytes": self.core.segment_bytes,
            "segment_kind": self.core.segment_kind,
            "cma": self.cma_ok,
            "cma_reason": self.cma_reason,
            "config": self.core.config,
        }
