"""Deprecated alias of pgascol.sparse.products (SpMV and SpMM), kept for
one release: importing it warns and gives the same objects."""
import warnings

from .products import SCATTERED, TRANS, mm, mv

__all__ = ["mv", "mm", "TRANS", "SCATTERED"]

warnings.warn("pgascol.sparse.ops is deprecated: import pgascol.sparse.products (or mv, mm from pgascol.sparse)",
              DeprecationWarning, stacklevel=2)
