"""Run mpi4py's whole test suite (every test_*.py here) and record each
test's outcome on each rank: OUTDIR/rank-<N>.jsonl, one JSON line per event,
written as it happens so a run killed by a timeout still says which test it
was in. Run it plain or in zero-code mode (compare.py runs both):

    mpiexec -n 2 python tests/mpi4py_suite/outcomes.py OUTDIR
    mpiexec -n 2 python -m pgascol tests/mpi4py_suite/outcomes.py OUTDIR

A rank sent SIGUSR1 writes its threads' stacks to OUTDIR/stack-<N>.txt.
Lines: {"start": id} when a test begins, {"id": id, "outcome": o} when it
ends, o one of pass, fail, error, skip, xfail, xpass; {"done": true} last;
each event but the last with "t", the monotonic clock in seconds.
The set-up follows the suite's own main.py (no CuPy, no Numba)."""
import faulthandler
import json
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class JsonResult(unittest.TextTestResult):
    """A text result that also writes every outcome to a JSON-lines file."""

    out = None  # the rank's open file, set by main()

    def _write(self, **record):
        record["t"] = round(time.monotonic(), 3)
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def startTest(self, test):
        self._write(start=test.id())
        super().startTest(test)

    def _outcome(self, test, outcome):
        self._write(id=test.id(), outcome=outcome)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._outcome(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._outcome(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._outcome(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._outcome(test, "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._outcome(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._outcome(test, "xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:  # a failing subtest fails its test
            failed = issubclass(err[0], test.failureException)
            self._outcome(test, "fail" if failed else "error")


def main(argv):
    outdir = argv[0]
    sys.path.insert(0, HERE)
    sys.modules["cupy"] = None   # as the suite's main.py does by default
    sys.modules["numba"] = None
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    # compare.py sends SIGUSR1 to a run that outlives its timeout: every
    # rank then writes where each of its threads is (stack-<rank>.txt)
    stacks = open(os.path.join(outdir, "stack-%d.txt" % rank), "w")
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    suite = unittest.TestLoader().discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    stream = sys.stderr if rank == 0 else open(os.devnull, "w")
    with open(os.path.join(outdir, "rank-%d.jsonl" % rank), "w") as out:
        JsonResult.out = out
        unittest.TextTestRunner(stream=stream, resultclass=JsonResult, verbosity=1).run(suite)
        out.write(json.dumps({"done": True}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
