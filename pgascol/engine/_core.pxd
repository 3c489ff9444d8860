# The node team as other Cython modules see it (pgascol/comm/_comm.pyx calls the
# hot collectives through these C-level methods, without a Python call).
from .ccore cimport pgc_team


cdef class Team:
    cdef pgc_team *t
    cdef int busy
    # Set by a collective of several engine calls (the legs of a hierarchical
    # Bcast, Gather(v), Scatter(v)): a leg's PGC_ETYPE (its bytes moved, the
    # team in step) is held, not raised, so that every later leg still runs
    # and no peer waits for this rank; the caller raises it once the
    # collective completed (take_held). Meanwhile the node's leader (member
    # 0) forwards what its legs bring it to the other nodes, so it takes
    # bytes from members of another basic type too (pgc_team.forwards, set
    # by c_bcast and c_gather).
    cdef public bint holding
    cdef object held

    cdef int hold(self, object exc) except -1
    cdef object take_held(self)

    cdef pgc_team *_use(self) except NULL
    cdef int _check(self, int rc) except -1
    cdef pgc_team *_begin(self, size_t nbytes) except NULL
    cdef int _end(self, int rc) except -1
    cdef int _root(self, int root) except -1
    cdef size_t _checked_vector_bytes(self, size_t count, int dtype, int op) except? 0
    cdef int c_fold(self, char *out, const char *a, const char *b, size_t count, int dtype, int op) except -1
    cdef int c_barrier(self) except -1
    cdef void c_refuse(self, int coll, const char *reason) noexcept
    cdef bint c_wait_all_refused(self) noexcept
    cdef bint c_peers_refused(self, int coll) except -1
    cdef int c_check_aborted(self) except -1
    cdef int c_to_mpi(self, int coll) except -1
    # The caller has checked the buffers (size, writable) and holds them.
    cdef int c_bcast(self, char *buf, size_t nbytes, int root, int dtype=*) except -1
    cdef int c_elementwise(self, int coll, const char *sendbuf, char *recvbuf, size_t count,
                           int dtype, int op) except -1
    cdef int c_reduce(self, const char *sendbuf, char *recvbuf, size_t count, int dtype, int op,
                      int root) except -1
    cdef int c_reduce_scatter(self, bint block, const char *sendbuf, char *recvbuf,
                              const size_t *recvcounts, int dtype, int op) except -1
    cdef int c_gather(self, bint v, const char *sendbuf, size_t sendbytes, char *recvbuf,
                      const size_t *recvbytes, const size_t *displs, int root, int dtype=*) except -1
    cdef int c_scatter(self, bint v, const char *sendbuf, const size_t *sendbytes,
                       const size_t *displs, char *recvbuf, size_t recvbytes, int root, int dtype=*) except -1
    cdef int c_allgather(self, bint v, const char *sendbuf, size_t sendbytes, char *recvbuf,
                         const size_t *recvbytes, const size_t *displs, bint recv_cold) except -1
    cdef int c_alltoall(self, bint v, const char *sendbuf, const size_t *sendbytes,
                        const size_t *sdispls, char *recvbuf, const size_t *recvbytes,
                        const size_t *rdispls) except -1
    cdef int _elementwise_obj(self, int which, sendbuf, recvbuf, size_t count, int dtype, int op) except -1
