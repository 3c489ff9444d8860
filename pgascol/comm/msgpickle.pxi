# The pickle-based methods on one node: msgpickle.py over the engine's byte collectives.

# Pickle protocol 5, out-of-band buffers moved by the engine's byte
# collectives: pure Python, see msgpickle.py.
from . import msgpickle as _pickle


cdef object _shm_call(_State st, int coll, object fn, tuple args):
    """fn(st.core, *args) counted as `coll` on path shm; the engine calls it
    makes are not counted."""
    core = st.core
    core.stats_paused = True
    try:
        return fn(core, *args)
    finally:
        core.stats_paused = False
        st.count(coll, P_SHM)
