"""Build of pgascol's C core (csrc/) through its Cython wrapper (pgascol/engine/_core.pyx)
and of the communicator layer (pgascol/comm/_comm.pyx)."""
import os
from glob import glob

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

# numpy's C API as of numpy 1.22 (pyproject.toml's floor is higher): built against numpy
# 2's headers, the extensions then import under any numpy from 1.22 on.
NUMPY_API = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"), ("NPY_TARGET_VERSION", "NPY_1_22_API_VERSION")]

# An edited header rebuilds what includes it (cythonize tracks the .pxd/.pxi).
HEADERS = sorted(glob("csrc/**/*.h", recursive=True))

core = Extension(
    "pgascol.engine._core",
    sources=["pgascol/engine/_core.pyx"] + sorted(glob("csrc/**/*.c", recursive=True)),
    depends=HEADERS,
    include_dirs=["csrc"],
    # -O3: the reduction kernels vectorise only at -O3 with gcc 12.
    extra_compile_args=["-O3", "-std=gnu11", "-Wall", "-Wno-unused-function"],
)

# The communicator layer (pgascol.Comm): pure Cython over mpi4py's Python API,
# no mpi.h, so one build serves MPICH and Open MPI alike. It calls the node
# team's hot collectives at C level (pgascol/engine/_core.pxd; csrc/ headers only).
# numpy's C API: numpy arrays are read without the buffer protocol on the hot
# path (pgascol/comm/_comm.pyx, _numpy_direct).
comm = Extension("pgascol.comm._comm", sources=["pgascol/comm/_comm.pyx"], depends=HEADERS,
                 include_dirs=["csrc", numpy.get_include()],
                 define_macros=NUMPY_API, extra_compile_args=["-O2"])

# The local kernels of pgascol.blas: SciPy's BLAS through scipy.linalg.cython_blas
# (its function pointers, resolved at import: no BLAS to link here).
kernels = Extension("pgascol.blas._kernels", sources=["pgascol/blas/_kernels.pyx"],
                    include_dirs=[numpy.get_include()],
                    define_macros=NUMPY_API, extra_compile_args=["-O2"])

# The local kernels of pgascol.sparse: plain C loops, fused over the four value
# types and int32/int64 indices, the GIL released.
sparse_kernels = Extension("pgascol.sparse._kernels", sources=["pgascol/sparse/_kernels.pyx"],
                           define_macros=NUMPY_API, extra_compile_args=["-O3"])

# The pickle-based methods' messages (pgascol/comm/msgpickle.py): plain Python,
# compiled as it is -- a third fewer instructions per call than interpreted
# (callgrind, an allgather of a 3-tuple), the cost of a small object's call
# being mostly this module's own work. The .py stays importable where no
# compiler ran.
msgpickle = Extension("pgascol.comm.msgpickle", sources=["pgascol/comm/msgpickle.py"], extra_compile_args=["-O2"])

# Every CPU: Cython translates the modules in parallel, and the compiler builds
# the extensions in parallel (a fresh install, CI's two and pgascol-bench ab's
# build of a revision among them).
CPUS = os.cpu_count() or 1

setup(ext_modules=cythonize([core, comm, msgpickle, kernels, sparse_kernels], language_level=3,
                            compiler_directives={"embedsignature": True}, nthreads=CPUS),
      options={"build_ext": {"parallel": CPUS}})
