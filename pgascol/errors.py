"""Exceptions raised by pgascol. Every C-level error becomes one of these.

Each has an MPI error class, ``Get_error_class()`` as mpi4py's
``MPI.Exception`` has: ``MPI.ERR_ARG`` for bad input, ``MPI.ERR_PROC_FAILED``
for a dead peer (also on the members told by an abort of the team it
caused), ``MPI.ERR_REVOKED`` on a revoked communicator, ``MPI.ERR_OTHER``
otherwise. Where the MPI has no ULFM, mpi4py gives ``ERR_PROC_FAILED`` and
``ERR_REVOKED`` the value of ``MPI.ERR_UNKNOWN`` (MPICH's default build):
the comparison with mpi4py's constant still holds.

This module does not import mpi4py's MPI (importing pgascol must not
initialise MPI: the launchers and the CLI use it), so the classes are
RuntimeErrors; once MPI is loaded every error made is also an
``MPI.Exception``: ``in_mpi(cls)`` is cls's twin that derives from both
(same name, caught by ``except cls`` and by ``except MPI.Exception``,
pickled as cls). ``str()`` is pgascol's message."""
import copyreg
import sys


class PgascolError(RuntimeError):
    """Base class of pgascol's errors.

    ``peer`` is the local rank the error concerns (or -1), ``errno`` the
    error number of a failed system call (or 0), ``error_class`` (argument)
    the MPI error class when it is not the class's own (``ERROR_CLASS``, the
    name of mpi4py's constant)."""

    ERROR_CLASS = "ERR_OTHER"

    def __new__(cls, *args, **kwargs):
        # Wherever it is raised, once mpi4py's MPI is loaded an error is also
        # an MPI.Exception (its twin, in_mpi), as mpi4py's own errors are:
        # `except MPI.Exception` around a drop-in call catches it.
        # (Made by the __new__ of its built-in layout, without the arguments:
        # OSError's, for a TimeoutError, would parse them; __init__ takes them.)
        twin = in_mpi(cls)
        return _layout_base(twin).__new__(twin)

    def __init__(self, message, peer=-1, errno=0, error_class=None):
        RuntimeError.__init__(self, message)    # (MPI.Exception's would take a code)
        self.peer = peer
        self.errno = errno
        self._error_class = error_class

    def Get_error_class(self):
        """The MPI error class (mpi4py's MPI.Exception.Get_error_class)."""
        if self._error_class is not None:
            return self._error_class
        from mpi4py import MPI
        return getattr(MPI, self.ERROR_CLASS)

    def Get_error_code(self):
        return self.Get_error_class()

    error_class = property(Get_error_class)
    error_code = property(Get_error_code)


def _layout_base(cls):
    """The built-in class whose instance layout cls has (OSError for a
    TimeoutError's subclass): the one whose __new__ may make a cls."""
    while cls.__module__ != "builtins":
        cls = cls.__base__
    return cls


def _mpi_members(cls):
    """What the MPI.Exception twin of cls overrides: mpi4py's exception
    reads its code through int() and compares and hashes by it, takes its
    message from MPI; an exception object here is itself, with its message."""
    def __reduce__(self):
        state = dict(self.__dict__, errno=self.errno)   # (OSError's errno is no __dict__ entry)
        return (cls, self.args, state)
    return {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
            "__int__": PgascolError.Get_error_class, "__str__": RuntimeError.__str__,
            "__repr__": lambda self: "%s(%r)" % (cls.__name__, str(self)),
            "__eq__": object.__eq__, "__ne__": object.__ne__, "__hash__": object.__hash__,
            "__bool__": lambda self: True, "__reduce__": __reduce__,
            "Get_error_class": PgascolError.Get_error_class, "Get_error_code": PgascolError.Get_error_code,
            "error_class": PgascolError.error_class, "error_code": PgascolError.error_code}


class _Twin(type):
    """The class of the MPI.Exception twins. A twin has its public class's
    name, so pickle cannot find it by name (``comm.bcast(type(error))``):
    copyreg pickles it as ``in_mpi(public class)`` instead."""


def _reduce_twin(twin):
    return (in_mpi, (twin.__bases__[0],))


copyreg.pickle(_Twin, _reduce_twin)

_TWINS = {}


def in_mpi(cls):
    """cls, or once mpi4py's MPI module is loaded, its twin that is also an
    MPI.Exception (what the engine and the collectives raise)."""
    twin = _TWINS.get(cls)
    if twin is None:
        MPI = sys.modules.get("mpi4py.MPI")
        if MPI is None or issubclass(cls, MPI.Exception):
            return cls
        twin = _TWINS[cls] = _Twin(cls.__name__, (cls, MPI.Exception), _mpi_members(cls))
    return twin


class ArgumentError(PgascolError, ValueError):
    """Bad input, refused before any data moved; the team stays usable."""

    ERROR_CLASS = "ERR_ARG"


class PeerRefusedError(ArgumentError):
    """Another rank refused its arguments to this collective (it raised
    ArgumentError, whose message this one repeats), so this rank's call
    cannot complete: it ends at once instead of waiting for that rank."""


class RootRefusedError(PeerRefusedError):
    """The root of a Bcast, Gather(v) or Scatter(v) refused its arguments
    (it raised ArgumentError, whose message this one repeats) before any
    data moved: the collective failed on the ranks that needed the root,
    and the communicator stays usable."""


class DatatypeMismatchError(ArgumentError):
    """Ranks of a Bcast, Gather(v) or Scatter(v) passed other basic types at
    the same byte count (the root 8 MPI.INT, a receiver 4 MPI.DOUBLE): MPI
    calls the program erroneous. No bytes move between ranks of different
    types (a receiver's buffer stays untouched); the call completes among
    the others, and the ranks that saw the difference raise this once it
    completed; the communicator stays usable."""

    ERROR_CLASS = "ERR_TYPE"


class PeerDeadError(PgascolError):
    """A member of the node team died or exited in the middle of an operation."""

    ERROR_CLASS = "ERR_PROC_FAILED"


class TeamAbortedError(PgascolError):
    """Another member gave up on the team (timeout, dead peer, mismatched call).
    Its error class is that of the cause when MPI has one: ERR_PROC_FAILED
    after a death."""


class RevokedError(TeamAbortedError):
    """The communicator was revoked (``Comm.Revoke``, MPI's ULFM) by some
    rank: every collective on it, on every rank, raises this, error class
    ``MPI.ERR_REVOKED``, as MPI does."""

    ERROR_CLASS = "ERR_REVOKED"


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
    the sparse matrices and the other operands stay usable."""


class PgascolTimeoutError(PgascolError, TimeoutError):
    """A wait exceeded PGASCOL_TIMEOUT seconds."""


class TeamClosedError(PgascolError):
    """The team was freed."""


class ArgumentTypeError(ArgumentError, TypeError):
    """A buffer specification mpi4py refuses with a TypeError (an object
    that is no buffer, a count that is no integer): an ArgumentError, and
    the TypeError a drop-in's callers may catch."""


class ArgumentBufferError(ArgumentError, BufferError):
    """A buffer mpi4py refuses with a BufferError (not contiguous): an
    ArgumentError, and the BufferError a drop-in's callers may catch."""


class IndexOutOfRangeError(ArgumentError, IndexError):
    """An index outside a global array, refused before any data moved."""


class FreedError(PgascolError):
    """A global array or lock used after its collective free."""
