# cython: boundscheck=False, wraparound=False
"""Thin typed layer over the C core (csrc/): a node team and its collectives.

Buffers are anything with the buffer protocol (numpy arrays, bytearray,
memoryview), contiguous. Sizes are checked here against the real buffers,
before the C core moves any data; the C core releases the GIL while it works.
Counts and displacements of the byte-moving collectives are in bytes; the
reductions take an element count, a dtype code and an op code (see DTYPES,
OPS). A sendbuf of None means MPI_IN_PLACE.
"""
cimport cython
from cpython.buffer cimport (PyBUF_ANY_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE,
                             PyBuffer_Release, PyObject_GetBuffer)
from libc.stdint cimport uint32_t, uint64_t, UINT64_MAX
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from .ccore cimport *
from ..errors import (ArgumentError, CollectiveMismatchError, DatatypeMismatchError, PeerDeadError, PeerRefusedError,
                     PgascolError, RevokedError, RootRefusedError, PgascolTimeoutError, TeamAbortedError,
                     TeamClosedError)

include "codes.pxi"
include "runtime.pxi"
include "errors.pxi"
include "gil.pxi"
include "buffers.pxi"
include "team.pxi"

# The PGAS layer
include "segment.pxi"
include "rma.pxi"
include "upc.pxi"
