"""pgascol.stats(comm): which path each collective of a communicator took.

Returns ``{operation: {path: calls}}`` for the calls this process made on
``comm`` (a pgascol.Comm). Paths:

* ``inline``, ``cico``, ``cma``: the node engine ran the whole operation
  (one node), with the transfer method the C core chose by size;
* ``hier``: several nodes: engine phases on each node plus MPI among nodes;
  the engine's own counts for those phases appear as ``node:<Operation>``;
* ``mpi``: not accelerated (derived datatype, user-defined operator, MPI.BOTTOM,
  a non-buffer object, ...) or not composed hierarchically: the MPI method ran;
* ``shm``: a pickle-based method (``bcast``, ``reduce``, ``allreduce``,
  ``gather``, ``scatter``, ``allgather``, ``alltoall``; one node) moved its
  pickles and out-of-band buffers through the node's shared memory.

PGASCOL_DEBUG=1 in the environment logs every decision on stderr.
"""


def stats(comm):
    """{operation name: {path: calls}} for a pgascol.Comm ({} for others)."""
    from ._comm import _stats
    return _stats(comm)
