"""pgascol.pgas when jobs end abnormally: a lock holder killed, ranks that
exit without freeing their arrays, raise, or are SIGKILLed mid-access.

Every function here ends its job on purpose (test_scenario_*), so none is
in the table of launches: tests/test_pgas_failures.py starts them one by
one with a result directory as sys.argv[1]. Every rank writes the address
of each segment it maps to RESULT_DIR/name-<rank>-<k> (the node team's and
every array's); survivors of a dead peer write what they raised to
RESULT_DIR/survivor-<rank>.json."""
import json
import os
import signal
import sys
import time
import traceback

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol import pgas

WORLD = MPI.COMM_WORLD
ME, P = WORLD.Get_rank(), WORLD.Get_size()
VICTIM = 1 % P


def _path(name):
    return os.path.join(sys.argv[1], name)


def _write(name, text):
    tmp = _path(name) + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, _path(name))


def _allocate(comm):
    """Several arrays of several layouts and types, and a lock, each in its
    own segment: returns them with their names recorded."""
    objects = [pgas.zeros(comm, 1000, np.int64, block=3),
               pgas.full(comm, 257, 1.5, np.float64, block="*"),
               pgas.zeros(comm, None, np.int32, counts=[r + 1 for r in range(P)]),
               pgas.matrix(comm, (5, 7), np.float64, block=1, dist="row"),
               pgas.Lock(comm)]
    segments = [comm._pg.team.core.name] + [o._seg.address for o in objects[:4]] + [objects[4]._words._seg.address]
    for k, address in enumerate(segments):
        _write("name-%d-%d" % (ME, k), address)
    return objects


def _access(objects, i):
    """One round of one-sided traffic to every rank's part."""
    a, b, c, m, _ = objects
    a[(np.arange(P) * 3 + i) % 1000] = i
    a.update(np.arange(0, 1000, 7), 1, "sum")
    assert b[(i * 13) % 257] >= 1.5
    c.put(0, np.full(min(P, len(c)), i, np.int32))
    m[i % 5, :] = np.arange(7.0)


def _verdict(fn, since):
    """Run fn, which must not return; record what it raised, and how long
    after since() (when the rank last did something that could succeed)."""
    try:
        fn()
        outcome = {"type": None, "message": "returned"}
    except pgascol.PgascolError as exc:
        outcome = {"type": type(exc).__name__, "message": str(exc)}
    outcome["seconds"] = time.monotonic() - since()
    return outcome


def _survive(comm, outcome):
    """Record a survivor's outcome, then leave once every survivor has
    (the victim's node-mates may be the targets of the others' MPI traffic,
    so they stay until everyone has a verdict), without MPI_Finalize, which
    would wait for the dead rank."""
    ctx = pgas.context.of(comm)
    outcome["victim_on_my_node"] = bool(ctx.on_node[VICTIM])
    _write("survivor-%d.json" % ME, json.dumps(outcome))
    end = time.monotonic() + 2 * ctx.timeout + 10
    while time.monotonic() < end:
        done = [f for f in os.listdir(sys.argv[1]) if f.startswith("survivor-") and f.endswith(".json")]
        if len(done) >= P - 1:
            break
        time.sleep(0.05)
    os._exit(0)


def test_scenario_lock_holder_killed():
    """VICTIM takes the lock and dies holding it; the others then want it."""
    comm = pgascol.Comm(WORLD)
    objects = _allocate(comm)
    lock = objects[-1]
    if ME == VICTIM:
        assert lock.acquire()
    pgas.barrier(comm)
    if ME == VICTIM:
        os.kill(os.getpid(), signal.SIGKILL)
    assert lock.held_by() == VICTIM

    def take():
        with lock:
            pass
    started = time.monotonic()
    _survive(comm, _verdict(take, lambda: started))


def test_scenario_sigkill_mid_access():
    """VICTIM dies in the middle of rounds of accesses and barriers."""
    comm = pgascol.Comm(WORLD)
    objects = _allocate(comm)
    started = [time.monotonic()]         # of the current round

    def rounds():
        for i in range(1 << 30):
            if i == 20 and ME == VICTIM:
                os.kill(os.getpid(), signal.SIGKILL)
            started[0] = time.monotonic()
            _access(objects, i)
            pgas.barrier(comm)
    _survive(comm, _verdict(rounds, lambda: started[0]))


def test_scenario_exception_mid_access():
    """VICTIM raises in the middle of its accesses, and its process ends
    as `python -m mpi4py` ends one: the traceback, then MPI Abort."""
    comm = pgascol.Comm(WORLD)
    objects = _allocate(comm)
    for i in range(30):
        try:
            if i == 20 and ME == VICTIM:
                objects[0][1000 + i]            # out of range: IndexOutOfRangeError
            _access(objects, i)
        except Exception as exc:
            traceback.print_exc()
            sys.stderr.flush()
            _write("error", type(exc).__name__)     # the launcher may drop stderr it had not relayed yet
            _write("aborting", str(ME))
            WORLD.Abort(1)
        pgas.barrier(comm)


def test_scenario_normal_exit():
    """Arrays spanning nodes, a lock held and given back, a split barrier:
    then the program ends without freeing anything."""
    comm = pgascol.Comm(WORLD)
    objects = _allocate(comm)
    for i in range(5):
        _access(objects, i)
        with objects[-1]:
            pass
        pgas.notify(comm)
        pgas.wait(comm)
