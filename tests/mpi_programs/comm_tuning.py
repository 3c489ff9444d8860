"""The tuner (pgascol/comm/tune.pxi): path choices learned from the job's
own calls, the same on every rank, right results on every path, following
a change of cost without flapping, and kept in the calibration file.

Every test makes a pgascol.Comm of its own (a fresh table) over COMM_WORLD.
A rank's view of what ran is the node team's statistics (copy-in/copy-out
or single copy, per collective) and the tuner's decision log; the log must
be the same on every rank. The tuner chooses on one node only, between the
engine's paths and MPI's own collective (after an agreement on the node
team that meets refusals, other types and other counts as the engine
does); across nodes (virtual nodes here) it is off."""
import contextlib
import json
import os
import time

import numpy as np
from mpi4py import MPI

import pgascol
from pgascol.comm._comm import tuner_of
from pgascol.node import calibration
from tests.mpi_programs import collective_test, data, same

WORLD = MPI.COMM_WORLD
NATIVE = WORLD.Dup()
ME, P = WORLD.Get_rank(), WORLD.Get_size()
# A few classes: two that travel inline (not tuned) and two the tuner measures.
INLINE_SIZES, TUNED_SIZES = (8, 3000), (24 << 10, 100 << 10)
KINDS = ("Bcast", "Reduce", "Allreduce", "Gather", "Scatter", "Allgather", "Allgatherv", "Alltoall",
         "Reduce_scatter_block", "Reduce_scatter", "Scan", "Exscan", "Gatherv", "Alltoallv")
# Calls of each (kind, size) in the fuzz: a tuned class needs ACTIVATE calls and then
# SAMPLES_SMALL + 1 on each of its three candidates, which the call numbers' blocks
# hand out at random: 60 gives most classes a decision.
INLINE_REPEAT, TUNED_REPEAT = 15, 60


def _one(comm, kind, n, rng_root, salt):
    """Make call `kind` of n doubles per block on comm; the result."""
    x = data(ME, n, salt=salt)
    root = rng_root % P
    if kind == "Bcast":
        buf = x.copy() if ME == root else np.zeros(n)
        comm.Bcast(buf, root)
        return buf
    if kind in ("Allreduce", "Scan", "Exscan"):
        y = np.full(n, -1.0)
        getattr(comm, kind)(x, y, MPI.SUM)
        return y if (kind != "Exscan" or ME > 0) else np.zeros(0)
    if kind == "Reduce":
        y = np.full(n, -1.0)
        comm.Reduce(x, y, MPI.SUM, root)
        return y if ME == root else np.zeros(0)
    big = np.concatenate([data(r, n, salt=salt) for r in range(P)])
    if kind in ("Reduce_scatter_block", "Reduce_scatter"):
        y = np.full(n, -1.0)
        if kind == "Reduce_scatter_block":
            comm.Reduce_scatter_block(big * (ME + 1), y, MPI.SUM)
        else:
            comm.Reduce_scatter(big * (ME + 1), y, [n] * P, MPI.SUM)
        return y
    out = np.full(n * P, -1.0)
    if kind in ("Gather", "Gatherv"):
        if kind == "Gather":
            comm.Gather(x, out if ME == root else None, root)
        else:
            comm.Gatherv(x, [out, [n] * P] if ME == root else None, root)
        return out if ME == root else np.zeros(0)
    if kind == "Scatter":
        y = np.full(n, -1.0)
        comm.Scatter(big if ME == root else None, y, root)
        return y
    if kind == "Allgather":
        comm.Allgather(x, out)
        return out
    if kind == "Allgatherv":
        comm.Allgatherv(x, [out, [n] * P])
        return out
    if kind in ("Alltoall", "Alltoallv"):
        if kind == "Alltoall":
            comm.Alltoall(big + ME, out)
        else:
            comm.Alltoallv([big + ME, [n] * P], [out, [n] * P])
        return out
    raise ValueError(kind)


def _same_everywhere(value, what):
    """value (picklable) is the same on every rank."""
    got = WORLD.allgather(value)
    assert all(g == got[0] for g in got), (what, got)


@collective_test
def test_learning_fuzz_gives_mpis_results_and_every_rank_takes_the_same_path():
    """Random collectives of a few size classes in a random order (the same
    on every rank): each class is measured on every candidate, decided and
    re-measured while the calls go on; every result equals plain MPI's,
    only the collectives MPI may run went to MPI's own, and every rank made
    the same decisions."""
    comm = pgascol.Comm(WORLD)
    tuner = _tuned(comm)
    try:
        rng = np.random.default_rng(20261201)
        calls = [(kind, size) for kind in KINDS for size in INLINE_SIZES for _ in range(INLINE_REPEAT)]
        calls += [(kind, size) for kind in KINDS for size in TUNED_SIZES for _ in range(TUNED_REPEAT)]
        for i in rng.permutation(len(calls)):
            kind, size = calls[i]
            n = size // 8
            root = int(rng.integers(1 << 20))
            got = _one(comm, kind, n, root, i)
            want = _one(NATIVE, kind, n, root, i)
            same(got, want, "%s n=%d call %d" % (kind, n, i))
        stats = pgascol.stats(comm)
        on_mpi = {k for k, v in stats.items() if "mpi" in v}
        if tuner is None:
            assert not on_mpi, stats
            return
        assert on_mpi <= set(ON_MPI), stats
        _same_everywhere([e[:5] for e in tuner.log], "the decisions")
        table = pgascol.tuning(comm)
        _same_everywhere({c: {k: v["path"] for k, v in cl.items()} for c, cl in table.items()}, "the table")
        decided = {(e[1], e[2]) for e in tuner.log}
        tuned = {(kind, tuner.class_of(kind, size)) for kind in KINDS for size in TUNED_SIZES}
        assert len(decided) >= len(tuned) // 4, ("%d of %d classes decided in %d calls" %
                                                 (len(decided), len(tuned), len(calls)), tuner.log)
        assert all(set(e[5]) == set(tuner.candidates(e[1], 1 << e[2])) == _candidates(e[1])
                   for e in tuner.log), tuner.log
    finally:
        comm.Free()


def _loop(comm, n, calls):
    x, y = data(ME, n), np.zeros(n)
    for _ in range(calls):
        comm.Allreduce(x, y, MPI.SUM)
    assert y[0] == sum(data(r, n)[0] for r in range(P))


# The collectives MPI's own may run (the others' counts are vectors).
ON_MPI = ("Bcast", "Reduce", "Allreduce", "Gather", "Scatter", "Allgather", "Alltoall", "Reduce_scatter_block",
          "Scan", "Exscan")


def _candidates(coll, comm=None):
    """What the tuner chooses between for coll above the inline sizes."""
    cma = (comm or _CMA_PROBE)._pg.core.cma_ok
    return {"cico"} | ({"cma"} if cma else set()) | ({"mpi"} if coll in ON_MPI else set())


def _tuned(comm):
    """comm's tuner, or None where it is off: one rank, several nodes."""
    global _CMA_PROBE
    _CMA_PROBE = comm
    tuner = tuner_of(comm)
    if P == 1 or tuner.hier:
        assert not tuner.enabled and tuner.candidates() == [] and tuner.exchanges == 0, tuner.candidates()
        assert pgascol.tuning(comm) == {}
        return None
    assert tuner.enabled and tuner.candidates() == ["cico"] + (["cma"] if comm._pg.core.cma_ok else []) + ["mpi"]
    assert tuner.candidates("Gatherv") == (["cico", "cma"] if comm._pg.core.cma_ok else [])
    return tuner


_CMA_PROBE = None


N40K = (40 << 10) // 8      # an Allreduce of class 15 (32-64 KiB)


@contextlib.contextmanager
def _allreduce_learned(path=None):
    """A fresh Comm whose 40 KiB Allreduce class is learned: (comm, tuner),
    or None where the tuner is off (_tuned); freed at the end. path: the
    one the class learns (the others made 2 ms slower while it learns)."""
    comm = pgascol.Comm(WORLD)
    tuner = _tuned(comm)
    try:
        if tuner is not None:
            if path:
                tuner.slow = {c: 2e-3 for c in tuner.candidates() if c != path}
            _loop(comm, N40K, 200)
            tuner.slow = None
            assert path is None or _class15(comm)["path"] == path, _class15(comm)
        yield None if tuner is None else (comm, tuner)
    finally:
        comm.Free()


def _class15(comm):
    return pgascol.tuning(comm)["Allreduce"][15]


def test_the_choice_follows_a_slowdown_and_stops_switching_once_costs_settle():
    """An Allreduce class learns a path; then every path but another one
    is made slower by 2 ms in each timed call (a test's load on the
    tuner's measurements, the same on every rank): the next measuring round
    moves the class to that one; with the costs steady from there, thousands
    more calls make no further switch."""
    with _allreduce_learned() as learned:
        if learned is None:
            return
        comm, tuner = learned
        first = _class15(comm)
        assert first["source"] == "learned in this job", first
        target = [c for c in tuner.candidates() if c != first["path"]][-1]
        tuner.slow = {c: 2e-3 for c in tuner.candidates() if c != target}
        _loop(comm, N40K, 700)     # INTERVAL_MIN calls to the next round, and the round
        second = _class15(comm)
        assert second["path"] == target and second["switches"] == 1, (first, second)
        _loop(comm, N40K, 4000)
        third = _class15(comm)
        assert third["path"] == second["path"] and third["switches"] == 1, (second, third)
        rounds = [e for e in tuner.log if e[1] == "Allreduce" and e[2] == 15]
        assert len(rounds) >= 3, rounds      # re-measured while steady, without switching
        _same_everywhere([e[:5] for e in rounds], "the decisions")


def test_costs_that_keep_changing_make_few_switches():
    """Costs that change at every measuring round (whatever path the class
    runs is made slow) are followed, but each switch doubles the calls to
    the next round: within 6000 calls, log2(6000 / INTERVAL_MIN) + 1
    switches at the most."""
    with _allreduce_learned() as learned:
        if learned is None:
            return
        comm, tuner = learned
        for _ in range(30):
            tuner.slow = {_class15(comm)["path"]: 5e-4}
            _loop(comm, N40K, 200)
        switches = _class15(comm)["switches"]
        assert 1 <= switches <= 6, (switches, tuner.log[-8:])
        _same_everywhere(switches, "switches")


def _refusals_in_learned_classes(path):
    """A class the tuner decided (on `path`: the engine's, or MPI's own after
    the node's agreement) checks every rank's arguments before data moves:
    a rank that refuses its Allreduce (a read-only receive buffer) makes
    every other rank raise PeerRefusedError at once; a Bcast root that
    refuses (a buffer shorter than its count) makes every reader raise
    RootRefusedError; the next calls of both classes are right on every
    rank."""
    with _allreduce_learned(path) as learned:
        if learned is None:
            return
        comm, tuner = learned
        buf = np.zeros(N40K)
        if path:
            tuner.slow = {c: 2e-3 for c in tuner.candidates("Bcast") if c != path}
        for _ in range(3000):   # (the table changes at exchanges only: every rank leaves at the same call)
            comm.Bcast(buf, 0)
            entry = pgascol.tuning(comm).get("Bcast", {}).get(15)
            if entry and not entry["measuring"]:
                break
        tuner.slow = None
        assert entry["source"] == "learned in this job" and not entry["measuring"], entry
        assert path is None or entry["path"] == path, entry
        ro = np.zeros(N40K)
        ro.flags.writeable = False
        for bad in sorted({0, P - 1}):
            calls = {"Allreduce": lambda: comm.Allreduce(data(ME, N40K), ro if ME == bad else np.zeros(N40K)),
                     "Bcast": lambda: comm.Bcast([np.zeros(N40K - 1), N40K, MPI.DOUBLE] if ME == bad
                                                 else np.zeros(N40K), bad)}
            for name, call in calls.items():
                start = time.monotonic()
                try:
                    call()
                except pgascol.PeerRefusedError as exc:
                    assert ME != bad and str(exc).startswith(name) and "refused its arguments" in str(exc), str(exc)
                    assert isinstance(exc, pgascol.RootRefusedError) == (name == "Bcast"), repr(exc)
                except pgascol.ArgumentError:
                    assert ME == bad, (ME, name)
                else:
                    raise AssertionError("rank %d: %s raised nothing" % (ME, name))
                assert time.monotonic() - start < 2.5, (ME, name)
                _loop(comm, N40K, 20)
                b = np.full(N40K, float(ME))
                comm.Bcast(b, bad)
                assert np.all(b == bad), (ME, name, b[0])
        if path == "mpi":   # (the measuring rounds ran every candidate)
            stats = pgascol.stats(comm)
            assert stats["Allreduce"]["mpi"] > stats["Allreduce"].get("cico", 0), stats


def test_a_refusal_in_a_learned_class_leaves_the_communicator_usable():
    _refusals_in_learned_classes("cico")


def test_a_refusal_in_a_class_learned_on_mpi_leaves_the_communicator_usable():
    _refusals_in_learned_classes("mpi")


def test_on_mpi_other_types_or_counts_are_found_before_mpi_is_entered():
    """A Gather class learned on MPI: a rank that states another basic type
    at the same bytes makes every rank raise DatatypeMismatchError, nothing
    entered MPI and the communicator usable; a rank that passes one element
    more (the same size class) makes every rank raise
    CollectiveMismatchError at once (the node team aborted) instead of
    meeting MPI's undefined behaviour."""
    n = (100 << 10) // 8
    comm = pgascol.Comm(WORLD)
    try:
        tuner = _tuned(comm)
        if tuner is None:
            return
        x, out = data(ME, n + 1), np.zeros((n + 1) * P)
        tuner.slow = {c: 2e-3 for c in tuner.candidates("Gather") if c != "mpi"}
        for _ in range(200):
            comm.Gather(x[:n], out[:n * P] if ME == 0 else None, 0)
        tuner.slow = None
        assert pgascol.tuning(comm)["Gather"][16]["path"] == "mpi", pgascol.tuning(comm)["Gather"]
        mpi_calls = pgascol.stats(comm)["Gather"]["mpi"]
        bad = P - 1
        with _raises(pgascol.DatatypeMismatchError, "int64"):
            comm.Gather(x[:n].view(np.int64) if ME == bad else x[:n], out[:n * P] if ME == 0 else None, 0)
        assert pgascol.stats(comm)["Gather"]["mpi"] == mpi_calls
        comm.Gather(x[:n], out[:n * P] if ME == 0 else None, 0)
        if ME == 0:
            same(out[:n * P], np.concatenate([data(r, n + 1)[:n] for r in range(P)]), "after the types")
        m = n + (ME == bad)
        start = time.monotonic()
        with _raises((pgascol.CollectiveMismatchError, pgascol.TeamAbortedError), "same count"):
            comm.Gather(x[:m], out[:m * P] if ME == 0 else None, 0)
        assert time.monotonic() - start < 2.5
    finally:
        comm.Free()


@contextlib.contextmanager
def _raises(kinds, text):
    try:
        yield
    except kinds as exc:
        assert text in str(exc), str(exc)
    else:
        raise AssertionError("rank %d raised nothing" % ME)


def _calibration_file(path, tables):
    doc = {"format": calibration.FORMAT, "fingerprint": calibration.fingerprint(), "tables": tables}
    with open(path, "w") as f:
        json.dump(doc, f)


def test_the_calibration_file_seeds_the_table_agreed_between_ranks():
    """A table in the calibration file takes effect from the first exchange:
    the class it names runs its path (here single copy for a 24 KiB Bcast,
    which the built-in thresholds give to copy-in/copy-out), marked as
    coming from the file. Where ranks read different files (each rank its
    own here), all take the same one."""
    probe = pgascol.Comm(WORLD)
    shape = tuner_of(probe).shape
    off = _tuned(probe) is None or not probe._pg.core.cma_ok    # (the file names single copy)
    probe.Free()
    if off:
        return
    path = os.path.join(os.path.dirname(os.environ["PGASCOL_CALIBRATION"]), "seeded-%d.json" % ME)
    mine = "cma" if ME == 0 else "cico"
    _calibration_file(path, {shape: {"Bcast": {"14": mine}}})
    old = os.environ["PGASCOL_CALIBRATION"]
    os.environ["PGASCOL_CALIBRATION"] = path
    try:
        comm = pgascol.Comm(WORLD)
    finally:
        os.environ["PGASCOL_CALIBRATION"] = old
    try:
        buf = np.zeros((24 << 10) // 8)
        for _ in range(40):
            comm.Bcast(buf, 0)
        entry = pgascol.tuning(comm)["Bcast"][14]
        assert entry["source"] == "calibration file", entry
        _same_everywhere(entry["path"], "the seeded path")
        # MAX over the candidates' indices: cma (the last) wins, and runs
        assert entry["path"] == "cma", entry
        assert comm._pg.core.stats()["Bcast"].get("cma", 0) >= 20, comm._pg.core.stats()
    finally:
        comm.Free()


def test_what_a_job_learned_is_written_back_with_the_fingerprint():
    """The learned table is written (merged, atomically) to the calibration
    file at exit by one rank per node; here the writer is called at once."""
    with _allreduce_learned() as learned:
        if learned is None:
            return
        comm, tuner = learned
        chosen, shape = _class15(comm)["path"], tuner.shape
    path = os.path.join(os.path.dirname(os.environ["PGASCOL_CALIBRATION"]), "written-%d.json" % ME)
    from pgascol.comm import _comm
    old = os.environ["PGASCOL_CALIBRATION"]
    os.environ["PGASCOL_CALIBRATION"] = path
    try:
        _comm._save_learned()
    finally:
        os.environ["PGASCOL_CALIBRATION"] = old
    node_leader = pgascol.NodeTeam(WORLD)
    leads = node_leader.local_rank == 0
    node_leader.free()
    if not leads:
        assert not os.path.exists(path)
        return
    with open(path) as f:
        doc = json.load(f)
    assert doc["fingerprint"] == calibration.fingerprint()
    assert doc["tables"][shape]["Allreduce"]["15"] == chosen, doc
    tables, status = calibration.read(path)
    assert status == "used" and tables[shape]["Allreduce"][15] == chosen


def test_tuning_off_keeps_the_built_in_thresholds():
    """PGASCOL_TUNE=0: no exchange, no decision, nothing to MPI."""
    os.environ["PGASCOL_TUNE"] = "0"
    try:
        comm = pgascol.Comm(WORLD)
    finally:
        del os.environ["PGASCOL_TUNE"]
    try:
        _loop(comm, N40K, 300)
        assert pgascol.tuning(comm) == {} and tuner_of(comm).exchanges == 0
        assert "mpi" not in pgascol.stats(comm).get("Allreduce", {})
    finally:
        comm.Free()
