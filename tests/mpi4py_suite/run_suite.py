"""Run mpi4py's test_cco_buf / test_cco_vec with COMM replaced by pgascol
communicators (see README.md). Exit status 0 only when every rank passed;
the last line of rank 0's output is a JSON summary."""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mpi4py import MPI  # noqa: E402

import pgascol  # noqa: E402
import test_cco_buf  # noqa: E402
import test_cco_vec  # noqa: E402

WORLD = MPI.COMM_WORLD
PG_WORLD = pgascol.Comm(WORLD)
_size, _rank = WORLD.Get_size(), WORLD.Get_rank()
PG_SPLIT = PG_WORLD.Split(_rank % 2 if _size > 2 else 0, _size - _rank)
assert isinstance(PG_WORLD, pgascol.Comm) and isinstance(PG_WORLD, MPI.Intracomm)
assert isinstance(PG_SPLIT, pgascol.Comm)

BASES = [test_cco_buf.BaseTestCCOBuf, test_cco_buf.BaseTestCCOBufInplace,
         test_cco_vec.BaseTestCCOVec, test_cco_vec.BaseTestCCOVecInplace]


def make_classes():
    classes = []
    for base in BASES:
        name = base.__name__.replace("Base", "")
        classes.append(type(name + "PgWorld", (base, unittest.TestCase), {"COMM": PG_WORLD}))
        classes.append(type(name + "PgSplit", (base, unittest.TestCase), {"COMM": PG_SPLIT}))

        def setUp(self):
            self.COMM = PG_WORLD.Dup()
            assert isinstance(self.COMM, pgascol.Comm)

        def tearDown(self):
            self.COMM.Free()

        classes.append(type(name + "PgDup", (base, unittest.TestCase),
                            {"setUp": setUp, "tearDown": tearDown}))
    return classes


def main(argv):
    verbosity = 2 if "-v" in argv else 1
    loader = unittest.TestLoader()
    suite = unittest.TestSuite(loader.loadTestsFromTestCase(c) for c in make_classes())
    stream = sys.stderr if _rank == 0 else open(os.devnull, "w")
    result = unittest.TextTestRunner(stream=stream, verbosity=verbosity).run(suite)
    ok = result.wasSuccessful()
    failures = [t.id() for t, _ in result.failures + result.errors]
    stats = pgascol.stats(PG_WORLD)
    all_ok = WORLD.allreduce(ok, op=MPI.LAND)
    everyone = WORLD.gather({"rank": _rank, "ok": ok, "failures": failures, "run": result.testsRun,
                             "skipped": len(result.skipped), "stats": stats}, root=0)
    if _rank == 0:
        print(json.dumps({"ok": all_ok, "ranks": everyone}))
        sys.stdout.flush()
    PG_SPLIT.Free()
    PG_WORLD.Free()
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
