"""The folds of pgascol.upc's reductions in C (csrc/upc/upc_fold.c, through
_core.upc_fold and upc_scan) against numpy's (pgascol/upc/operators.py), for every
built-in operator on every UPC type, run lengths around the eight-lane loop,
and the refusals of pairs UPC does not define. One process: the folds need
no team."""
import numpy as np
import pytest

from pgascol.engine import _core
from pgascol.errors import ArgumentError
from pgascol.upc.operators import TYPES, Operator

U8 = np.uint8
LENGTHS = (1, 2, 7, 15, 16, 17, 33, 1000)


def _values(rng, name, dtype, n):
    """Values whose floating folds are exact in any order (small integers; MULT: 1, 2, -1)."""
    if name == "MULT":
        x = rng.choice([1, 2, -1] if dtype.kind != "u" else [1, 2, 3], n)
    else:
        x = rng.integers(0, 100, n)
    x = x.astype(dtype)
    if name.startswith("LOG"):
        x[rng.integers(0, n, max(n // 3, 1))] = 0
    return x


def _pairs():
    for dtype, _ in TYPES:
        for name in _core.UPC_OPS:
            yield dtype, name


@pytest.mark.parametrize("dtype,name", list(_pairs()), ids=lambda v: str(v))
@pytest.mark.filterwarnings("ignore:overflow encountered")      # integers wrap, in C as in numpy
def test_fold_and_scan_match_numpy(dtype, name):
    try:
        oper = Operator(name, dtype, None, "test")
    except ArgumentError:
        assert not _core.upc_op_valid(_core.UPC_OPS[name], _dtype_code(dtype))
        return
    rng = np.random.default_rng([len(name), dtype.itemsize, dtype.kind.encode()[0]])
    for n in LENGTHS:
        x = _values(rng, name, dtype, n)
        out = np.zeros(1, dtype)
        _core.upc_fold(oper.code, oper.dtype_code, out.view(U8), x.view(U8))
        assert out[0] == _numpy_fold(oper, x), (n, out[0])
        scan = np.zeros(n, dtype)
        _core.upc_scan(oper.code, oper.dtype_code, scan.view(U8), x.view(U8))
        want = _numpy_scan(oper, x)
        assert np.array_equal(scan, want), n
        carry = np.array([3], dtype)
        _core.upc_scan(oper.code, oper.dtype_code, scan.view(U8), x.view(U8), carry.view(U8))
        assert np.array_equal(scan, _numpy_combine(oper, carry[0], want)), n


def _numpy_fold(oper, x):
    if oper.name in ("LOGAND", "LOGOR"):     # one element is itself; then 0 or 1
        return x[0] if len(x) == 1 else oper.dtype.type(_LOGICAL[oper.name].reduce(x != 0))
    return oper.ufunc.reduce(x, dtype=oper.dtype)


def _numpy_scan(oper, x):
    if oper.name in ("LOGAND", "LOGOR"):
        out = _LOGICAL[oper.name].accumulate(x != 0).astype(oper.dtype)
        out[:1] = x[:1]
        return out
    return oper.ufunc.accumulate(x, dtype=oper.dtype)


def _numpy_combine(oper, carry, x):
    if oper.name in ("LOGAND", "LOGOR"):
        return _LOGICAL[oper.name](carry != 0, x != 0).astype(oper.dtype)
    return oper.ufunc(np.full(len(x), carry, oper.dtype), x, dtype=oper.dtype)


_LOGICAL = {"LOGAND": np.logical_and, "LOGOR": np.logical_or}


def _dtype_code(dtype):
    return _core.DTYPES["longdouble" if dtype == np.longdouble else dtype.name]


@pytest.mark.parametrize("name", ["MIN", "MAX"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.longdouble])
def test_min_max_propagate_nan_as_numpy(name, dtype):
    oper = Operator(name, dtype, None, "test")
    for at in (0, 5, 31):
        x = np.arange(32, dtype=dtype)
        x[at] = np.nan
        out = np.zeros(1, dtype)
        _core.upc_fold(oper.code, oper.dtype_code, out.view(U8), x.view(U8))
        assert np.isnan(out[0]), at
        scan = np.zeros(32, dtype)
        _core.upc_scan(oper.code, oper.dtype_code, scan.view(U8), x.view(U8))
        assert np.isnan(scan[at:]).all() and not np.isnan(scan[:at]).any(), at


def test_undefined_pairs_and_bad_buffers_are_refused():
    x, out = np.ones(4), np.zeros(1)
    with pytest.raises(ArgumentError):          # XOR on float64
        _core.upc_fold(_core.UPC_OPS["XOR"], _dtype_code(np.dtype(np.float64)), out.view(U8), x.view(U8))
    with pytest.raises(ArgumentError):          # not one element out
        _core.upc_fold(_core.UPC_OPS["ADD"], _dtype_code(np.dtype(np.float64)), np.zeros(2).view(U8), x.view(U8))
    with pytest.raises(ArgumentError):          # dst and src of different sizes
        _core.upc_scan(_core.UPC_OPS["ADD"], _dtype_code(np.dtype(np.float64)), np.zeros(3).view(U8), x.view(U8))
    assert not _core.upc_op_valid(len(_core.UPC_OPS), 0)
