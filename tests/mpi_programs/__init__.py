"""Multi-rank test programs, run under mpiexec by tests/mpi_harness.py; what
several of them share."""


def raises(exc, fn):
    """Call fn and return the `exc` it raised; fail if it raised nothing."""
    try:
        fn()
    except exc as e:
        return e
    raise AssertionError("%s not raised" % exc.__name__)
