"""The drop-in communicator: ``pgascol.Comm``, an mpi4py Intracomm whose
collectives run on the node engine and, across nodes, on MPI among the nodes.

The extension ``_comm`` is built from _comm.pyx and its includes (*.pxi), as
mpi4py builds MPI from MPI.pyx; msgpickle.py holds the pickle-based methods,
stats.py ``pgascol.stats``, tune.pxi ``pgascol.tuning`` (the path table), run.py the zero-code runner."""
from ._comm import Comm  # noqa: F401
from .stats import stats  # noqa: F401
from ._comm import tuning  # noqa: F401
