# The pickle-based methods on one node: msgpickle.py over the engine's byte collectives.

# Pickle protocol 5, out-of-band buffers moved by the engine's byte
# collectives: plain Python (compiled by Cython as it is), see msgpickle.py.
from . import msgpickle as _pickle


# mpi4py's per-communicator lock each method takes (MPI._comm_lock, keyed
# by name: its msgpickle.pxi), so that threads calling one method on one
# communicator take turns, as with mpi4py. reduce and allreduce gather the
# objects (msgpickle.py): mpi4py's keys of that form (rc.fast_reduce off).
# Indexed by coll - COLL_OBJ_BCAST.
cdef tuple _LOCK_KEYS = ("bcast", "gather", "allgather", "gather", "scatter", "allgather", "alltoall")
cdef object _comm_lock = MPI._comm_lock


cdef object _shm_call(_State st, int coll, object fn, tuple args):
    """fn(st.core, *args) under mpi4py's lock of the method, counted as
    `coll` on path shm; the engine calls it makes are not counted."""
    key = _LOCK_KEYS[coll - COLL_OBJ_BCAST]
    lock = st.locks.get(key)
    if lock is None:    # the same object as long as the communicator lives
        lock = st.locks[key] = _comm_lock(st.team.comm, key)
    core = st.core
    with lock:
        core.stats_paused = True
        try:
            return fn(core, *args)
        finally:
            core.stats_paused = False
            st.count(coll, P_SHM)
