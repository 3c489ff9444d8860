"""Zero-code-change mode: ``mpiexec -n 4 python -m pgascol script.py [args]``.

Runs an unmodified mpi4py program (a script, ``-m module``, ``-c command`` or
``-`` for standard input, as ``python -m mpi4py`` does) with
``MPI.COMM_WORLD`` replaced by a pgascol.Comm over the same communicator; an
uncaught exception aborts the whole job (``MPI.COMM_WORLD.Abort``) instead of
leaving the other ranks waiting."""
import sys


def is_program(args):
    """Whether a `pgascol` command line names a program to run (a script,
    -m module, -c command, - for stdin) rather than one of its commands."""
    import os
    return bool(args) and (args[0] in ("-m", "-c", "-") or args[0].endswith(".py") or os.path.isfile(args[0]))


def install():
    """Replace mpi4py.MPI.COMM_WORLD by a pgascol communicator (collective),
    which behaves as the predefined constant (free(), Free(), pickling)."""
    from ._comm import _stand_in
    return _stand_in("COMM_WORLD")


def main(args):
    """Run `args` ([pyfile | -m mod | -c cmd | -] [arg] ...) under pgascol."""
    from mpi4py.run import run_command_line, set_abort_status
    if not args:
        sys.stderr.write("usage: python -m pgascol [info | pyfile | -m mod | -c cmd | -] [arg] ...\n")
        return 2
    try:
        install()
        run_command_line(list(args))
    except SystemExit as exc:
        set_abort_status(exc)
        raise
    except KeyboardInterrupt as exc:
        set_abort_status(exc)
        raise
    except BaseException:
        set_abort_status(1)
        raise
    return 0
