"""Helpers of the blas_*.py test programs (not a program itself)."""
import numpy as np


def rand(shape, dt, seed):
    """Standard normal numbers of dtype dt (complex: both parts), the same on every rank."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def expect(exc_type, fn, *args, **kw):
    """fn(*args, **kw) raises exc_type: the exception."""
    try:
        fn(*args, **kw)
    except exc_type as exc:
        return exc
    raise AssertionError("%s did not raise %s" % (getattr(fn, "__name__", fn), exc_type.__name__))
