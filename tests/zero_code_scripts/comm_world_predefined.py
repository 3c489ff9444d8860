# An mpi4py program that checks what mpi4py's own test suite checks of
# MPI.COMM_WORLD (test_objmodel, test_comm, test_exceptions, test_p2p_obj):
# run by tests/test_zero_code.py as `mpiexec -n N python -m pgascol
# comm_world_predefined.py`, where COMM_WORLD is a pgascol.Comm, and as a
# plain mpi4py program, where it is mpi4py's constant; both must pass.
import copy
import pickle
import sys
import threading

from mpi4py import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
ZERO_CODE = sys.argv[1:] == ["zero-code"]
if ZERO_CODE:
    import pgascol
    assert isinstance(world, pgascol.Comm), type(world)


def works(comm):
    """A collective of each kind on comm gives the right answer."""
    assert comm.allreduce(rank) == size * (size - 1) // 2
    comm.Barrier()
    assert comm.bcast(rank, root=size - 1) == size - 1


# free() of the constant does nothing, as often as called
for _ in range(3):
    world.free()
    assert world
works(world)

# Free() raises MPI's error and leaves it working
try:
    world.Free()
except MPI.Exception as exc:
    assert exc.Get_error_class() in (MPI.ERR_COMM, MPI.ERR_ARG), exc
else:
    raise AssertionError("COMM_WORLD.Free() did not raise")
assert world
works(world)

# pickling by name: the very object back, in every protocol and by copy
for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
    assert pickle.loads(pickle.dumps(world, protocol)) is world
assert copy.copy(world) is world and copy.deepcopy(world) is world
plain = pickle.loads(pickle.dumps(MPI.Intracomm(world)))
assert plain is not world and plain == world and type(plain) is MPI.Intracomm
dup = world.Dup()
try:
    pickle.dumps(dup)
except ValueError:
    pass
else:
    raise AssertionError("a communicator that is not predefined was pickled")

# equality by handle, unhashable as every mpi4py communicator
assert world == MPI.Intracomm(world) and not world != MPI.Intracomm(world)
assert world != MPI.COMM_SELF and world != MPI.COMM_NULL
try:
    hash(world)
except TypeError:
    pass
else:
    raise AssertionError("COMM_WORLD is hashable")

# a new object of its type over it: free() makes that one null, not the constant
clone = type(world)(world)
works(clone)
for _ in range(3):
    clone.free()
    assert not clone
assert world
works(world)
for _ in range(3):
    dup.free()
    assert not dup

# fromhandle: the same type, an equal communicator
new = type(world).fromhandle(world.handle)
assert type(new) is type(world) and new == world and new is not world and new.handle == world.handle
works(new)

# the pickle-based collectives take mpi4py's lock of the communicator
comm = world.Dup()
table = MPI._comm_lock_table(comm)
assert isinstance(table, dict) and "bcast" not in table
comm.bcast(None, root=0)
assert isinstance(table["bcast"], type(threading.Lock())), table
comm.gather(rank, root=0)
comm.scatter(list(range(size)) if rank == 0 else None, root=0)
comm.allgather(rank)
comm.alltoall(list(range(size)))
assert {"bcast", "gather", "scatter", "allgather", "alltoall"} <= set(table), sorted(table)

# ... so threads may call one method on one communicator at the same time
errors = []


def many_bcasts(tag):
    try:
        for i in range(20):
            got = comm.bcast((tag, i) if rank == 0 else None, root=0)
            assert isinstance(got, tuple) and got[0] in ("a", "b"), got
    except BaseException as exc:    # reported below, on the main thread
        errors.append(exc)


if MPI.Query_thread() == MPI.THREAD_MULTIPLE:
    threads = [threading.Thread(target=many_bcasts, args=(tag,)) for tag in "ab"]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
works(comm)
comm.Free()
works(world)
if rank == 0:
    print("predefined: all checks passed (%s)" % type(world).__name__)
