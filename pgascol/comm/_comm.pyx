# cython: boundscheck=False, wraparound=False, cdivision=True
"""pgascol.Comm: a drop-in mpi4py intracommunicator whose buffer collectives
run on the node engine (one node) or on the engine plus MPI among nodes
(several nodes, real or virtual).

The class is a Python-level subclass of mpi4py.MPI.Intracomm defined here so
its methods compile to fast cyfunctions; nothing here includes mpi.h or
cimports mpi4py (MPICH and Open MPI have different ABIs). Buffer specifications
are parsed in cdef code following mpi4py's own rules (msgbuffer.pxi of mpi4py
4.x); anything not accelerated goes to the MPI method of the base class.

The pgascol state of a communicator (node team, inter-node communicators,
rank <-> (node, local rank) map, counters) lives in a _State object in the
`_pg` attribute. It is created eagerly (collectively) by Comm(comm) and by the
communicator constructors (Dup, Split, ...), and released by Free().
"""
import copyreg
import os
import sys
import threading
from time import monotonic as _monotonic, sleep as _sleep

cimport cython
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from cpython.buffer cimport (PyBUF_ANY_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE,
                             PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer)
from cpython.list cimport PyList_Check
from cpython.number cimport PyNumber_Index
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.sequence cimport PySequence_Check
from cpython.tuple cimport PyTuple_Check

from mpi4py import MPI

from ..engine import _core
from ..engine._core cimport Team
from ..engine.ccore cimport (
    PGC_COLL_BARRIER, PGC_COLL_BCAST, PGC_COLL_REDUCE, PGC_COLL_ALLREDUCE, PGC_COLL_GATHER,
    PGC_COLL_GATHERV, PGC_COLL_SCATTER, PGC_COLL_SCATTERV, PGC_COLL_ALLGATHER, PGC_COLL_ALLGATHERV,
    PGC_COLL_ALLTOALL, PGC_COLL_ALLTOALLV, PGC_COLL_REDUCE_SCATTER, PGC_COLL_REDUCE_SCATTER_BLOCK,
    PGC_COLL_SCAN, PGC_COLL_EXSCAN, PGC_NCOLL, PGC_HINT_MPI, pgc_team)
from ..errors import (ArgumentBufferError, ArgumentError, ArgumentTypeError, CollectiveMismatchError,
                      DatatypeMismatchError, PeerRefusedError, PgascolError, PgascolTimeoutError, RevokedError,
                      RootRefusedError, TeamAbortedError)
from ..node.team import NodeTeam

include "numpy_lazy.pxi"
include "datatypes.pxi"
include "mpi_operators.pxi"
include "msgbuffer.pxi"
include "state.pxi"
include "mpi_wait.pxi"
include "failure.pxi"
include "refusal.pxi"
include "tune.pxi"
include "coll_barrier.pxi"
include "coll_bcast.pxi"
include "coll_reduce.pxi"
include "coll_gather.pxi"
include "coll_alltoall.pxi"
include "msgpickle.pxi"


# ----------------------------------------------------------------- the communicator

cdef object _base = MPI.Intracomm


def _wrap(newcomm):
    """A pgascol.Comm over a new MPI communicator (collective over it)."""
    if newcomm == MPI.COMM_NULL:
        c = Comm.__new__(Comm, newcomm)
        return c
    if not isinstance(newcomm, MPI.Intracomm):
        return newcomm      # intercommunicators stay plain mpi4py objects
    c = Comm.__new__(Comm, newcomm)
    c.__init__(newcomm)
    return c


# What parsing a buffer specification raises besides ArgumentError (MPI's
# own errors, MPI.Exception, are RuntimeErrors: never a parsing refusal).
_ARGUMENT_ERRORS = (TypeError, ValueError, KeyError, IndexError, BufferError, AttributeError,
                    OverflowError)


# ----------------------------------------------------------------- MPI progress in long waits

cdef object _PROGRESS_COMM = MPI.Intracomm(MPI.COMM_WORLD)   # a plain object, never pgascol's


def _mpi_progress():
    """Enter MPI once (an Iprobe that matches nothing needed): the engine calls
    this between the sleeps of a long wait (_core.set_wait_progress). Under
    MPICH a peer's MPI call, e.g. an RMA Flush, may need this process to
    progress before the peer can reach the collective this rank waits in.
    Only where this thread may call MPI (not after MPI_Finalize, not outside
    the main thread under MPI_THREAD_FUNNELED)."""
    if MPI.Is_initialized() and not MPI.Is_finalized() and (
            MPI.Query_thread() != MPI.THREAD_FUNNELED or MPI.Is_thread_main()):
        _PROGRESS_COMM.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)


_core.set_wait_progress(_mpi_progress)


cdef int _ANY_SOURCE = MPI.ANY_SOURCE, _ANY_TAG = MPI.ANY_TAG


cdef inline int _poke_mpi() except -1:
    """Enter MPI once at the end of a Barrier (called by a user on a live
    communicator, so MPI may be called here). MPI's Barrier progresses MPI
    while it waits: a program that completes an RMA epoch (Win.Complete,
    Win.Unlock, ...) or sends a message before a Barrier and tests for it
    after the Barrier finds it done. The node engine's Barrier never enters
    MPI, so without this a Win.Test after it sees nothing under MPICH."""
    _PROGRESS_COMM.Iprobe(_ANY_SOURCE, _ANY_TAG)
    return 0


cdef int _engine(object comm, int coll, object sendbuf, object recvbuf, object op, object recvcounts,
                 int root) except -1:
    """Run buffer collective `coll` through pgascol: 1 if it ran, 0 if MPI must
    (then counted as such). Bcast's buffer is `sendbuf`. An ArgumentError of
    this rank, or any other refusal of its arguments, marks the collective
    refused on the node team (`_refused`) before it propagates."""
    cdef _State st = _st(comm)
    if st is None:
        return 0
    st.call_number += 1     # this call's number, the same on every rank (refusals name it)
    st.coll, st.root = coll, root   # what a refusal met in its waits is weighed against (_needs_node)
    cdef _Tuner tn = <_Tuner>st.tuner
    if st.call_number == tn.next_exchange:
        tn.exchange()   # agreed call numbers: every rank, before this call's work
    cdef int done
    try:
        done = _dispatch(st, coll, sendbuf, recvbuf, op, recvcounts, root)
        if done == _ON_MPI:
            _run_on_mpi(st, comm, coll, sendbuf, recvbuf, op, recvcounts, root)
    except BaseException:
        tn.abandon()
        raise
    if done:
        if tn.cur >= 0 or st.core.t.path_hint:
            tn.finish()
        return done
    # every rank of the node, and of every node, must go to MPI too: fail at
    # once if not (pgc_coll_to_mpi: a member that refused its arguments, or
    # went into the engine, is found here, not left blocked in MPI)
    if st.core is not None:
        try:
            st.core.c_to_mpi(coll)
            if st.hier:
                _to_mpi_across(st, coll)
        except PgascolError as exc:
            tn.abandon()
            if not st.hier and isinstance(exc, (ArgumentError, PeerRefusedError)):
                # on one node a peer in the engine took this rank for a
                # refuser (or one refused): the call ends, the team usable
                raise
            _abort_across(st, exc, root if _root_refusal_ends_call(coll) else -1)
            raise
    _fallback(st, coll)
    return 0


cdef int _run_on_mpi(_State st, object comm, int coll, object sendbuf, object recvbuf, object op,
                     object recvcounts, int root) except -1:
    """A call the tuner gave to MPI, which every rank of the node agreed on
    (pgc_coll_agree_mpi: nobody refused, counts and types alike): MPI's own
    collective on comm's handle, counted as MPI's."""
    if coll == PGC_COLL_BCAST:
        _base.Bcast(comm, sendbuf, root)
    elif coll == PGC_COLL_ALLREDUCE:
        _base.Allreduce(comm, sendbuf, recvbuf, op)
    elif coll == PGC_COLL_REDUCE:
        _base.Reduce(comm, sendbuf, recvbuf, op, root)
    elif coll == PGC_COLL_GATHER:
        _base.Gather(comm, sendbuf, recvbuf, root)
    elif coll == PGC_COLL_SCATTER:
        _base.Scatter(comm, sendbuf, recvbuf, root)
    elif coll == PGC_COLL_ALLGATHER:
        _base.Allgather(comm, sendbuf, recvbuf)
    elif coll == PGC_COLL_ALLTOALL:
        _base.Alltoall(comm, sendbuf, recvbuf)
    elif coll == PGC_COLL_REDUCE_SCATTER_BLOCK:
        _base.Reduce_scatter_block(comm, sendbuf, recvbuf, op)
    elif coll == PGC_COLL_SCAN:
        _base.Scan(comm, sendbuf, recvbuf, op)
    elif coll == PGC_COLL_EXSCAN:
        _base.Exscan(comm, sendbuf, recvbuf, op)
    else:   # (the tuner offers MPI to these only: _MPI_CANDIDATES, tune.pxi)
        raise PgascolError("internal: %s has no MPI path" % _COLL_NAMES[coll])
    st.count(coll, P_MPI)
    return 0


cdef int _dispatch(_State st, int coll, object sendbuf, object recvbuf, object op, object recvcounts,
                   int root) except -1:
    """_engine's body: the collective's own function, its errors turned into
    refusals and alerts as each needs."""
    cdef int done
    try:
        if coll == PGC_COLL_BARRIER:
            done = _barrier(st)
        elif coll == PGC_COLL_BCAST:
            done = _bcast(st, sendbuf, root)
        elif coll == PGC_COLL_ALLREDUCE:
            done = _allreduce(st, sendbuf, recvbuf, op)
        elif coll == PGC_COLL_REDUCE:
            done = _reduce(st, sendbuf, recvbuf, op, root)
        elif coll == PGC_COLL_GATHER or coll == PGC_COLL_GATHERV:
            done = _gather(st, sendbuf, recvbuf, root, coll == PGC_COLL_GATHERV)
        elif coll == PGC_COLL_SCATTER or coll == PGC_COLL_SCATTERV:
            done = _scatter(st, sendbuf, recvbuf, root, coll == PGC_COLL_SCATTERV)
        elif coll == PGC_COLL_ALLGATHER or coll == PGC_COLL_ALLGATHERV:
            done = _allgather(st, sendbuf, recvbuf, coll == PGC_COLL_ALLGATHERV)
        elif coll == PGC_COLL_ALLTOALL or coll == PGC_COLL_ALLTOALLV:
            done = _alltoall(st, sendbuf, recvbuf, coll == PGC_COLL_ALLTOALLV)
        elif coll == PGC_COLL_REDUCE_SCATTER or coll == PGC_COLL_REDUCE_SCATTER_BLOCK:
            done = _reduce_scatter(st, sendbuf, recvbuf, recvcounts, op,
                                   coll == PGC_COLL_REDUCE_SCATTER_BLOCK)
        else:
            done = _scan(st, sendbuf, recvbuf, op, coll == PGC_COLL_EXSCAN)
    except (PeerRefusedError, DatatypeMismatchError):
        raise       # the root or a rank this one waits for refused, or the types differed: the call is over
    except ArgumentError as exc:
        _refused(st, coll, exc, root, sendbuf, recvbuf, op)
        raise
    except RevokedError:
        _revoke(st, None)
        raise       # a rank revoked the communicator: pass it on (ULFM)
    except PgascolError as exc:
        _abort_across(st, exc, root if _root_refusal_ends_call(coll) else -1)
        raise       # the engine's own (the collective began, or the team is aborted)
    except MPI.Exception as exc:
        if _ULFM and exc.Get_error_class() == MPI.ERR_REVOKED:
            # an inter-node leg met a communicator another node revoked
            _revoke(st, "%s: the communicator was revoked (on another node)" % _COLL_NAMES[coll])
            raise RevokedError("%s: the communicator was revoked (on another node): MPI's %s"
                               % (_COLL_NAMES[coll], exc.Get_error_string())) from exc
        raise
    except _ARGUMENT_ERRORS as exc:
        # mpi4py's and Python's refusals of a buffer specification (not a
        # buffer, a dtype MPI cannot map, a count it cannot infer, ...): raised
        # before the engine, so refused like an ArgumentError, or the peers
        # would pair this rank's next call with this one
        _refused(st, coll, exc, root, sendbuf, recvbuf, op)
        raise
    return done


class Comm(MPI.Intracomm):
    """An mpi4py intracommunicator whose collectives run through pgascol.

    ``Comm(comm)`` is collective over ``comm``: it builds the node team
    (shared segment) and, with several nodes, the inter-node communicators.
    The new object shares ``comm``'s MPI handle: point-to-point messages,
    attributes and every method not overridden behave exactly as on comm.
    Free() releases pgascol's resources and frees the handle."""

    # A slot, not an instance dict: reading it is a descriptor call, several
    # times cheaper on every collective (and, like mpi4py's own
    # communicators, a Comm takes no other attributes).
    __slots__ = ("_pg",)

    def __init__(self, comm=None):
        if comm is None or comm == MPI.COMM_NULL:
            return
        if not isinstance(comm, MPI.Intracomm):
            raise ArgumentError("pgascol.Comm needs an intracommunicator, not %r" % (comm,))
        # The state talks MPI through a plain intracommunicator over the same
        # handle (our overridden constructors would recurse).
        self._pg = _State(MPI.Intracomm(self))

    # --------------------------------------------------- constructors

    def Dup(self, info=None):
        return _wrap(_base.Dup(self, info) if info is not None else _base.Dup(self))

    def Dup_with_info(self, info):
        return _wrap(_base.Dup_with_info(self, info))

    def Clone(self):
        return _wrap(_base.Clone(self))

    def Split(self, int color=0, int key=0):
        return _wrap(_base.Split(self, color, key))

    def Split_type(self, int split_type, int key=0, info=MPI.INFO_NULL):
        return _wrap(_base.Split_type(self, split_type, key, info))

    def Create(self, group):
        return _wrap(_base.Create(self, group))

    def Create_group(self, group, int tag=0):
        return _wrap(_base.Create_group(self, group, tag))

    # --------------------------------------------------- destructors, pickling, handles
    # The Comm that stands in for a predefined communicator (zero-code mode
    # puts one at mpi4py.MPI.COMM_WORLD) behaves as mpi4py's constant: free()
    # does nothing, Free() raises MPI's error, pickling gives it back. Any
    # other Comm, also one made over COMM_WORLD's handle, behaves as an
    # mpi4py object made from the constant (MPI.Intracomm(MPI.COMM_WORLD)).

    def Free(self):
        if _constant_name(self) is not None:
            _base.Free(MPI.Intracomm(self))     # MPI's error (ERR_COMM): a predefined communicator
            return
        _release(self)
        if self == MPI.COMM_WORLD or self == MPI.COMM_SELF:
            return      # a wrapper of a predefined communicator: only pgascol's part goes
        _base.Free(self)

    def free(self):
        """Call Free if not null or predefined (mpi4py's free); a wrapper of a
        predefined communicator releases pgascol's part and becomes null."""
        if _constant_name(self) is not None:
            return
        _release(self)
        _base.free(self)

    def __reduce__(self):
        name = _constant_name(self)
        if name is not None:
            return (_predefined, (name,))
        return _base.__reduce__(self)

    # --------------------------------------------------- fault tolerance (ULFM)

    def Revoke(self):
        """MPI's Revoke, which also reaches pgascol's paths: every rank's
        current or next collective on this communicator raises RevokedError
        (error class MPI.ERR_REVOKED), ranks waiting in a node collective at
        once. Where the MPI has no ULFM, MPI's NotImplementedError (as
        mpi4py raises it), and nothing is revoked."""
        _base.Revoke(self)
        st = _st(self)
        if st is not None:
            _revoke(st, "Revoke: rank %d revoked the communicator" % st.rank)

    @classmethod
    def fromhandle(cls, handle):
        """A Comm over an MPI handle (mpi4py's fromhandle), without pgascol's
        state: its collectives are MPI's. Other kinds of communicators come
        back as mpi4py makes them."""
        comm = _base.fromhandle(handle)
        return cls.__new__(cls, comm) if type(comm) is _base else comm

    # --------------------------------------------------- buffer collectives

    def Barrier(self):
        if not _engine(self, PGC_COLL_BARRIER, None, None, None, None, 0):
            _base.Barrier(self)

    def Bcast(self, buf, int root=0):
        if not _engine(self, PGC_COLL_BCAST, buf, None, None, None, root):
            _base.Bcast(self, buf, root)

    def Reduce(self, sendbuf, recvbuf, op=_SUM, int root=0):
        if not _engine(self, PGC_COLL_REDUCE, sendbuf, recvbuf, op, None, root):
            _base.Reduce(self, sendbuf, recvbuf, op, root)

    def Allreduce(self, sendbuf, recvbuf, op=_SUM):
        if not _engine(self, PGC_COLL_ALLREDUCE, sendbuf, recvbuf, op, None, 0):
            _base.Allreduce(self, sendbuf, recvbuf, op)

    def Gather(self, sendbuf, recvbuf, int root=0):
        if not _engine(self, PGC_COLL_GATHER, sendbuf, recvbuf, None, None, root):
            _base.Gather(self, sendbuf, recvbuf, root)

    def Gatherv(self, sendbuf, recvbuf, int root=0):
        if not _engine(self, PGC_COLL_GATHERV, sendbuf, recvbuf, None, None, root):
            _base.Gatherv(self, sendbuf, recvbuf, root)

    def Scatter(self, sendbuf, recvbuf, int root=0):
        if not _engine(self, PGC_COLL_SCATTER, sendbuf, recvbuf, None, None, root):
            _base.Scatter(self, sendbuf, recvbuf, root)

    def Scatterv(self, sendbuf, recvbuf, int root=0):
        if not _engine(self, PGC_COLL_SCATTERV, sendbuf, recvbuf, None, None, root):
            _base.Scatterv(self, sendbuf, recvbuf, root)

    def Allgather(self, sendbuf, recvbuf):
        if not _engine(self, PGC_COLL_ALLGATHER, sendbuf, recvbuf, None, None, 0):
            _base.Allgather(self, sendbuf, recvbuf)

    def Allgatherv(self, sendbuf, recvbuf):
        if not _engine(self, PGC_COLL_ALLGATHERV, sendbuf, recvbuf, None, None, 0):
            _base.Allgatherv(self, sendbuf, recvbuf)

    def Alltoall(self, sendbuf, recvbuf):
        if not _engine(self, PGC_COLL_ALLTOALL, sendbuf, recvbuf, None, None, 0):
            _base.Alltoall(self, sendbuf, recvbuf)

    def Alltoallv(self, sendbuf, recvbuf):
        if not _engine(self, PGC_COLL_ALLTOALLV, sendbuf, recvbuf, None, None, 0):
            _base.Alltoallv(self, sendbuf, recvbuf)

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=_SUM):
        if not _engine(self, PGC_COLL_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, op, None, 0):
            _base.Reduce_scatter_block(self, sendbuf, recvbuf, op)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=_SUM):
        if not _engine(self, PGC_COLL_REDUCE_SCATTER, sendbuf, recvbuf, op, recvcounts, 0):
            _base.Reduce_scatter(self, sendbuf, recvbuf, recvcounts, op)

    def Scan(self, sendbuf, recvbuf, op=_SUM):
        if not _engine(self, PGC_COLL_SCAN, sendbuf, recvbuf, op, None, 0):
            _base.Scan(self, sendbuf, recvbuf, op)

    def Exscan(self, sendbuf, recvbuf, op=_SUM):
        if not _engine(self, PGC_COLL_EXSCAN, sendbuf, recvbuf, op, None, 0):
            _base.Exscan(self, sendbuf, recvbuf, op)

    # --------------------------------------------------- pickle-based methods

    def barrier(self):
        st = _st(self)
        if st is None:
            return _base.barrier(self)
        _barrier(st)
        st.count(COLL_OBJ_BARRIER, P_HIER if st.hier else P_SHM)

    # bcast, reduce, allreduce, gather, scatter, allgather, alltoall keep
    # mpi4py's semantics. On one node the pickles (protocol 5, large buffers
    # out of band) move through the node's shared memory: pgascol/comm/msgpickle.py,
    # path "shm" in pgascol.stats. With several nodes (real, or virtual with
    # PGASCOL_NODE_SIZE) they are mpi4py's own methods over MPI (path "mpi").

    def bcast(self, obj, int root=0):
        """Broadcast (mpi4py's bcast; shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier or not 0 <= root < st.size:    # (a bad root: MPI's error)
            _fallback(st, COLL_OBJ_BCAST)
            return _base.bcast(self, obj, root)
        return _obj_call(st, COLL_OBJ_BCAST, obj, None, root)

    def reduce(self, sendobj, op=_SUM, int root=0):
        """Reduce to root (mpi4py's reduce: op(a, b) in mpi4py's order, None on the
        other ranks; shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier or not 0 <= root < st.size:    # (a bad root: MPI's error)
            _fallback(st, COLL_OBJ_REDUCE)
            return _base.reduce(self, sendobj, op, root)
        return _obj_call(st, COLL_OBJ_REDUCE, sendobj, op, root)

    def allreduce(self, sendobj, op=_SUM):
        """Reduce to all (mpi4py's allreduce; shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier:
            _fallback(st, COLL_OBJ_ALLREDUCE)
            return _base.allreduce(self, sendobj, op)
        return _obj_call(st, COLL_OBJ_ALLREDUCE, sendobj, op, 0)

    def gather(self, sendobj, int root=0):
        """Gather (mpi4py's gather: a list at root, None elsewhere; shared memory on
        one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier or not 0 <= root < st.size:    # (a bad root: MPI's error)
            _fallback(st, COLL_OBJ_GATHER)
            return _base.gather(self, sendobj, root)
        return _obj_call(st, COLL_OBJ_GATHER, sendobj, None, root)

    def scatter(self, sendobj, int root=0):
        """Scatter (mpi4py's scatter: root's sequence of size items, or None;
        shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier or not 0 <= root < st.size:    # (a bad root: MPI's error)
            _fallback(st, COLL_OBJ_SCATTER)
            return _base.scatter(self, sendobj, root)
        return _obj_call(st, COLL_OBJ_SCATTER, sendobj, None, root)

    def allgather(self, sendobj):
        """Gather to all (mpi4py's allgather; shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier:
            _fallback(st, COLL_OBJ_ALLGATHER)
            return _base.allgather(self, sendobj)
        return _obj_call(st, COLL_OBJ_ALLGATHER, sendobj, None, 0)

    def alltoall(self, sendobj):
        """All to all (mpi4py's alltoall: a sequence of size items, or None;
        shared memory on one node, MPI across nodes)."""
        st = _st(self)
        if st is None or st.hier:
            _fallback(st, COLL_OBJ_ALLTOALL)
            return _base.alltoall(self, sendobj)
        return _obj_call(st, COLL_OBJ_ALLTOALL, sendobj, None, 0)

    # --------------------------------------------------- pgascol extras

    def pgascol_stats(self):
        """{operation: {path: calls}} (see pgascol.stats)."""
        return _stats(self)


# The predefined communicators a Comm may stand in for, by their name in mpi4py.MPI.
_PREDEFINED = ("COMM_WORLD", "COMM_SELF")


cdef object _constant_name(object comm):
    """The name under which comm is one of mpi4py.MPI's predefined
    communicators (a Comm is one in zero-code mode), or None."""
    for name in _PREDEFINED:
        if getattr(MPI, name) is comm:
            return name
    return None


def _predefined(name):
    """Unpickle a predefined communicator: the object mpi4py.MPI holds under
    that name (mpi4py's constant, or the Comm standing in for it), as
    mpi4py pickles its constants by name."""
    if name not in _PREDEFINED:
        raise ValueError("not a predefined communicator: %r" % (name,))
    return getattr(MPI, name)


# mpi4py's constants a Comm stands in for, by name.
cdef dict _REPLACED = {}


def _stand_in(name):
    """Put a Comm over mpi4py.MPI.<name> (a predefined communicator) in its
    place, and return it (collective; zero-code mode: pgascol.comm.run).
    mpi4py pickles its constant by name, a lookup in mpi4py.MPI that now
    finds the Comm: its pickling is taken over (copyreg), to give the
    object that stands under that name."""
    constant = getattr(MPI, name)
    if isinstance(constant, Comm):
        return constant
    comm = Comm(constant)
    _REPLACED[name] = constant
    copyreg.pickle(_base, _reduce_intracomm)
    setattr(MPI, name, comm)
    return comm


def _reduce_intracomm(comm):
    """Pickle an mpi4py Intracomm: as mpi4py does, except the constants
    pgascol stands in for (_stand_in)."""
    for name, constant in _REPLACED.items():
        if comm is constant:
            return (_predefined, (name,))
    return comm.__reduce__()


cdef int _release(object comm) except -1:
    """Release pgascol's state of comm (collective), if it has one."""
    st = getattr(comm, "_pg", None)
    if st is not None:
        if st.core is not None:
            st.core.check_idle()
        comm._pg = None
        st.free()
    return 0


cdef int _locate_slot() except -1:
    """Find the _pg slot after mpi4py's object, and prove it on a probe
    object before _st relies on it."""
    global _PG_OFFSET, _COMM_TYPE
    cdef Py_ssize_t off = _base.__basicsize__
    if Comm.__basicsize__ != off + <Py_ssize_t>sizeof(PyObject *):
        return 0
    probe = Comm.__new__(Comm)          # COMM_NULL, no MPI call
    marker = object()
    probe._pg = marker
    if (<PyObject **>(<char *><PyObject *>probe + off))[0] == <PyObject *>marker:
        _PG_OFFSET = off
        _COMM_TYPE = <PyTypeObject *>Comm
    return 0


_locate_slot()
