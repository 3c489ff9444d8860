"""pgascol vs native MPI under your own launcher: `mpiexec -n 2 python bench/engine_vs_mpi.py [--via comm] [--ops ...] [--sizes ...] [--rounds R] [--iters N] [--off-cache] [--fresh] [--json F]`; the code is pgascol/tools/bench_coll.py (worker_main), see also `pgascol-bench run`."""
import sys
from pgascol.tools.bench_coll import worker_main
sys.exit(worker_main())
