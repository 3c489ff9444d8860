"""python -m pgascol ...: see pgascol.cli."""
from .cli import main

raise SystemExit(main())
