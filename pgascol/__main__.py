"""python -m pgascol ...: see pgascol.tools.cli."""
from .tools.cli import main

raise SystemExit(main())
