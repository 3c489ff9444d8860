"""pgascol: shared-memory collectives for mpi4py programs.

    from mpi4py import MPI
    import pgascol
    team = pgascol.NodeTeam(MPI.COMM_WORLD)   # the node-level engine

See README.md and docs/ARCHITECTURE.md."""
__version__ = "0.1.0"

from .errors import (ArgumentError, PeerDeadError, PgascolError, PgascolTimeoutError,  # noqa: F401
                     TeamAbortedError, TeamClosedError)
from .team import NodeTeam  # noqa: F401
from ._comm import Comm  # noqa: F401,E402
from .stats import stats  # noqa: F401,E402
