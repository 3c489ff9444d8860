"""Multi-rank test programs, run under mpiexec by tests/mpi_harness.py; what
several of them share."""
import functools

import numpy as np


def raises(exc, fn):
    """Call fn and return the `exc` it raised; fail if it raised nothing."""
    try:
        fn()
    except exc as e:
        return e
    raise AssertionError("%s not raised" % exc.__name__)


_FAILED = []


def same(got, want, what=""):
    """Record a mismatch; raised at the end of the test (collective_test),
    so that a wrong result on one rank cannot strand the others in the
    collectives that follow."""
    got, want = np.asarray(got), np.asarray(want)
    if not (got.shape == want.shape and np.array_equal(got, want)):
        bad = np.flatnonzero(got.ravel() != want.ravel())[:6] if got.shape == want.shape else None
        _FAILED.append((what, "at", bad, "got", got.ravel()[:8], "want", want.ravel()[:8]))


def collective_test(fn):
    """Run a test that records mismatches with `same`; fail after it ran."""
    @functools.wraps(fn)
    def run():
        del _FAILED[:]
        fn()
        if _FAILED:
            raise AssertionError("%d wrong result(s), the first ones: %r" % (len(_FAILED), _FAILED[:4]))
    return run
