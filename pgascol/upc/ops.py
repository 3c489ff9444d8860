"""Deprecated alias of pgascol.upc.operators (UPC's reduction operators),
kept for one release: importing it warns and gives the same objects."""
import warnings

from .operators import (ADD, AND, FUNC, LOGAND, LOGOR, MAX, MIN, MULT, NONCOMM_FUNC, OPERATORS, OR,
                        TYPES, XOR, Operator)

__all__ = ["ADD", "MULT", "LOGAND", "LOGOR", "AND", "OR", "XOR", "MIN", "MAX", "FUNC", "NONCOMM_FUNC", "OPERATORS",
           "TYPES", "Operator"]

warnings.warn("pgascol.upc.ops is deprecated: import pgascol.upc.operators (or the names from pgascol.upc)",
              DeprecationWarning, stacklevel=2)
