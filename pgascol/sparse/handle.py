"""Deprecated alias of pgascol.sparse.matrix (SparseMatrix and its
constructors), kept for one release: importing it warns and gives the same
objects."""
import warnings

from .matrix import SparseMatrix, from_local_rows, from_scipy

__all__ = ["SparseMatrix", "from_scipy", "from_local_rows"]

warnings.warn("pgascol.sparse.handle is deprecated: import pgascol.sparse.matrix (or the names from pgascol.sparse)",
              DeprecationWarning, stacklevel=2)
