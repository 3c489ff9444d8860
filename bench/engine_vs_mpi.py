"""pgascol vs native MPI under your own launcher: `mpiexec -n 2 python bench/engine_vs_mpi.py [--via comm] [--ops ...] [--sizes ...] [--rounds R] [--iters N] [--off-cache] [--fresh] [--json F]`; the code is pgascol/tools/bench.py (worker), see also `pgascol-bench run`."""
import sys
from pgascol.tools.bench import worker_main
sys.exit(worker_main())
