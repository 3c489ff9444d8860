"""UPC's reduction operators and types, over numpy.

The eleven types of upc_all_reduce<<T>> (signed and unsigned char, short,
int, long, float, double, long double) are numpy's int8 ... uint64,
float32, float64 and longdouble. ADD, MULT, MIN, MAX, LOGAND and LOGOR are
defined on all of them, AND, OR and XOR on the integer ones (UPC 1.3);
FUNC (commutative) and NONCOMM_FUNC (applied strictly in index order) take
a Python callable that combines two numpy arrays elementwise (or a numpy
ufunc): it is called on arrays, never per element, and must be associative.

The nine built-in operators fold in compiled code (csrc/upc/upc_fold.c,
`code` and `dtype_code` name them there); the methods below are numpy's
folds, for FUNC and NONCOMM_FUNC and for the records of the general
prefix reduce.

Every fold here keeps index order: the left operand always holds earlier
elements, so NONCOMM_FUNC is exact and the built-in operators give the same
values on every rank."""
import numpy as np

from ..engine import _core
from ..errors import ArgumentError

ADD, MULT, LOGAND, LOGOR, AND, OR, XOR, MIN, MAX, FUNC, NONCOMM_FUNC = (
    "ADD", "MULT", "LOGAND", "LOGOR", "AND", "OR", "XOR", "MIN", "MAX", "FUNC", "NONCOMM_FUNC")
OPERATORS = (ADD, MULT, LOGAND, LOGOR, AND, OR, XOR, MIN, MAX, FUNC, NONCOMM_FUNC)

#: UPC's reduce types: (numpy dtype, UPC suffix).
TYPES = tuple((np.dtype(t), s) for t, s in (
    ("int8", "C"), ("uint8", "UC"), ("int16", "S"), ("uint16", "US"), ("int32", "I"), ("uint32", "UI"),
    ("int64", "L"), ("uint64", "UL"), ("float32", "F"), ("float64", "D"), ("longdouble", "LD")))
_TYPES = {t for t, _ in TYPES}
_BITWISE = {AND: np.bitwise_and, OR: np.bitwise_or, XOR: np.bitwise_xor}
_ARITH = {ADD: np.add, MULT: np.multiply, MIN: np.minimum, MAX: np.maximum}


def _logical(ufunc):
    def fold(a, b):
        return ufunc(a, b).astype(a.dtype)
    return fold


_LOGICAL = {LOGAND: np.logical_and, LOGOR: np.logical_or}


class Operator:
    """An (op, dtype) pair checked against UPC's definitions: `combine(a, b)`
    elementwise (a earlier in index order), `commutative`, and `ufunc` when
    numpy's reduce/accumulate apply as they are."""

    def __init__(self, op, dtype, func, what):
        name = op.upper() if isinstance(op, str) else op
        if name not in OPERATORS:
            raise ArgumentError("%s: op must be one of upc.%s, not %r" % (what, ", upc.".join(OPERATORS), op))
        dtype = np.dtype(dtype)
        if dtype not in _TYPES:
            raise ArgumentError("%s: %s is not one of UPC's reduce types (%s)"
                                % (what, dtype, ", ".join(str(t) for t, _ in TYPES)))
        if name in _BITWISE and dtype.kind not in "iu":
            raise ArgumentError("%s: UPC defines %s on integer types only, not on %s" % (what, name, dtype))
        if name in (FUNC, NONCOMM_FUNC):
            if not callable(func):
                raise ArgumentError("%s: op %s needs func, a callable combining two numpy arrays "
                                    "elementwise (or a numpy ufunc), not %r" % (what, name, func))
        elif func is not None:
            raise ArgumentError("%s: func is for upc.FUNC and upc.NONCOMM_FUNC only (op is %s)" % (what, name))
        self.name, self.dtype, self.func = name, dtype, func
        self.code = _core.UPC_OPS.get(name)          # None: a callable, folded by numpy
        self.dtype_code = _core.DTYPES["longdouble" if dtype == np.longdouble else dtype.name]
        self.commutative = name != NONCOMM_FUNC
        self.ufunc = (_ARITH.get(name) or _BITWISE.get(name) or
                      (func if isinstance(func, np.ufunc) and func.nin == 2 else None))
        if name in _LOGICAL:
            self.combine = _logical(_LOGICAL[name])
        elif self.ufunc is not None:
            ufunc = self.ufunc
            self.combine = lambda a, b: ufunc(a, b, dtype=dtype) if name in _ARITH else ufunc(a, b)
        else:
            self.combine = self._user

    def _user(self, a, b):
        out = np.asarray(self.func(a, b))
        if out.shape != np.broadcast(a, b).shape:
            raise ArgumentError("func returned shape %s for operands of shape %s: it must combine "
                                "two arrays elementwise" % (out.shape, a.shape))
        return out.astype(self.dtype, copy=False)

    def reduce(self, x):
        """The fold of the 1-D array x (non-empty) in index order; x[0] itself if it has one element."""
        if len(x) == 1:
            return x[0]
        if self.ufunc is not None and self.name in _ARITH:
            return self.ufunc.reduce(x, dtype=self.dtype)
        while len(x) > 1:                       # pairwise, order kept: log2(n) vectorised calls
            m = len(x) & ~1
            head = self.combine(x[0:m:2], x[1:m:2])
            x = np.concatenate((head, x[m:])) if m < len(x) else head
        return x[0]

    def fold(self, x):
        """reduce(x), in C for the built-in operators (no GIL)."""
        if self.code is None or len(x) == 1:
            return self.reduce(x)
        x, out = np.ascontiguousarray(x, self.dtype), np.empty(1, self.dtype)
        _core.upc_fold(self.code, self.dtype_code, out.view(np.uint8), x.view(np.uint8))
        return out[0]

    def scan(self, x, starts=None):
        """Inclusive scan of x in index order, restarting at every index in
        `starts` (the first element of each block; None: one block). Hillis
        and Steele's doubling for callables and the logical operators
        (log2(block) vectorised calls), numpy's accumulate for the others."""
        x = np.array(x, dtype=self.dtype)
        n = len(x)
        if n == 0:
            return x
        if starts is None:
            starts = np.zeros(1, np.int64)
        if self.code is not None and len(starts) == 1:         # in C
            _core.upc_scan(self.code, self.dtype_code, x.view(np.uint8), x.view(np.uint8))
            return x
        if self.ufunc is not None and self.name in _ARITH and len(starts) == 1:
            return self.ufunc.accumulate(x, dtype=self.dtype)
        head = np.zeros(n, np.int64)            # for each element, the start of its block
        head[starts] = starts
        head = np.maximum.accumulate(head)
        pos = np.arange(n) - head
        k = 1
        while k < n and (pos >= k).any():
            take = np.flatnonzero(pos[k:] >= k) + k
            x[take] = self.combine(x[take - k], x[take])
            k *= 2
        return x
