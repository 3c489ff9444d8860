"""Exceptions raised by pgascol. Every C-level error becomes one of these."""


class PgascolError(RuntimeError):
    """Base class of pgascol's errors.

    ``peer`` is the local rank the error concerns (or -1), ``errno`` the
    error number of a failed system call (or 0)."""

    def __init__(self, message, peer=-1, errno=0):
        super().__init__(message)
        self.peer = peer
        self.errno = errno


class ArgumentError(PgascolError, ValueError):
    """Bad input, refused before any data moved; the team stays usable."""


class RootRefusedError(ArgumentError):
    """The root of a Gather(v) or Scatter(v) refused its arguments (it
    raised ArgumentError, whose message this one repeats) before any data
    moved: the collective failed on the ranks that needed the root, and the
    communicator stays usable."""


class PeerDeadError(PgascolError):
    """A member of the node team died or exited in the middle of an operation."""


class TeamAbortedError(PgascolError):
    """Another member gave up on the team (timeout, dead peer, mismatched call)."""


class CollectiveMismatchError(PgascolError):
    """The ranks are not in the same collective: a peer refused its arguments
    to this one, or the ranks' calls went out of step (a rank skipped a
    collective the others entered). The node team is aborted."""


class OperationFailedError(PgascolError):
    """A collective operation failed on some rank after its data began to
    move (an exception in that rank's local work). That rank still took its
    part in the operation's communication, with placeholder data, so every
    rank raises this error at the operation's end, naming the failed ranks
    and their causes. The output operands are undefined; the communicator,
    the handles and the other operands stay usable."""


class PgascolTimeoutError(PgascolError, TimeoutError):
    """A wait exceeded PGASCOL_TIMEOUT seconds."""


class TeamClosedError(PgascolError):
    """The team was freed."""


class IndexOutOfRangeError(ArgumentError, IndexError):
    """An index outside a global array, refused before any data moved."""


class FreedError(PgascolError):
    """A global array or lock used after its collective free."""
