"""python -m pgascol ...: see pgascol.tools.cli. A program to run (zero-code
mode) starts without the command-line tool's imports: they are part of every
rank's start-up."""
import sys

from .comm.run import is_program

if is_program(sys.argv[1:]):
    from .comm.run import main
    raise SystemExit(main(sys.argv[1:]))
from .tools.cli import main

raise SystemExit(main())
