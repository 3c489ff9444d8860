# Declarations of the C core (csrc/) for the Cython layer. No logic here.
from libc.stdint cimport int32_t, uint32_t, uint64_t


cdef extern from "base/common.h" nogil:
    enum:
        PGC_ON_MPI, PGC_OK, PGC_EINVAL, PGC_ENOMEM, PGC_ESYS, PGC_ETIMEDOUT, PGC_EPEERDEAD, PGC_EABORTED, PGC_ECLOSED,
        PGC_EMISMATCH, PGC_EREFUSED, PGC_EREVOKED, PGC_ETYPE, PGC_EPEERREFUSED
    ctypedef struct pgc_error:
        int code
        int peer
        int sys_errno
        char msg[320]
    ctypedef enum pgc_simd:
        PGC_SIMD_BASE, PGC_SIMD_AVX2
    pgc_simd pgc_simd_of_cpu()
    uint64_t pgc_now_ns()


cdef extern from "base/count.h" nogil:
    void pgc_count_pace_setup(int slot, int nslots, uint64_t period_ns, uint64_t start_ns)
    void pgc_count_pace()


cdef extern from "base/reduce_ops.h" nogil:
    ctypedef enum pgc_dtype:
        PGC_NDTYPES
    ctypedef enum pgc_op:
        PGC_NOPS
    size_t pgc_dtype_size(pgc_dtype t)
    const char *pgc_dtype_name(pgc_dtype t)
    const char *pgc_op_name(pgc_op op)
    int pgc_op_valid(pgc_op op, pgc_dtype t)
    void pgc_reduce_3(pgc_simd simd, pgc_op op, pgc_dtype t, void *out, const void *a, const void *b,
                      size_t count)


cdef extern from "team/team.h" nogil:
    enum: PGC_INLINE_SLOT_MAX
    uint32_t PGC_STEP_DONE
    ctypedef enum pgc_coll:
        PGC_COLL_BARRIER, PGC_COLL_BCAST, PGC_COLL_REDUCE, PGC_COLL_ALLREDUCE,
        PGC_COLL_GATHER, PGC_COLL_GATHERV, PGC_COLL_SCATTER, PGC_COLL_SCATTERV,
        PGC_COLL_ALLGATHER, PGC_COLL_ALLGATHERV, PGC_COLL_ALLTOALL, PGC_COLL_ALLTOALLV,
        PGC_COLL_REDUCE_SCATTER, PGC_COLL_REDUCE_SCATTER_BLOCK, PGC_COLL_SCAN, PGC_COLL_EXSCAN,
        PGC_COLL_UPC_BROADCAST, PGC_COLL_UPC_SCATTER, PGC_COLL_UPC_GATHER, PGC_COLL_UPC_GATHER_ALL,
        PGC_COLL_UPC_EXCHANGE, PGC_COLL_UPC_PERMUTE, PGC_COLL_UPC_REDUCE, PGC_COLL_UPC_PREFIX_REDUCE,
        PGC_NCOLL
    ctypedef enum pgc_path:
        PGC_PATH_INLINE, PGC_PATH_CICO, PGC_PATH_CMA, PGC_NPATH
    enum:
        PGC_HINT_MPI

    ctypedef struct pgc_config:
        double timeout_s
        uint64_t spin_ns
        uint64_t yield_ns
        uint64_t inline_max
        uint64_t staging_bytes
        uint64_t chunk_bytes
        uint64_t xchg_chunk_bytes
        uint64_t cma_min[24]
        uint32_t hugepages
        uint32_t named_segment
        uint32_t cma_enable
        uint32_t bcast_tree_min
        uint32_t bcast_radix
        uint32_t adapt_mask
        uint64_t adapt_min
        uint32_t reduce_one_window
        uint32_t stream
        uint32_t simd
        uint64_t recv_stream_min

    ctypedef enum pgc_xfer:
        PGC_XFER_STAGE, PGC_XFER_COPYOUT, PGC_XFER_CMA, PGC_XFER_STREAM, PGC_NXFER

    ctypedef struct pgc_costs:
        uint32_t ps_per_byte[4]
        uint64_t measured_ns[4]
        uint32_t probe_backoff

    ctypedef struct pgc_segment:
        void *base
        size_t size
        char name[96]
        int kind

    ctypedef struct pgc_header:
        int32_t abort_code
        uint64_t size
        uint64_t staging_stride
        uint64_t inline_slot
        pgc_costs costs

    cdef struct pgc_spin_gate:
        uint32_t spun, ended
        uint64_t off_until, hold_ns, offs

    ctypedef struct pgc_team:
        pgc_segment seg
        pgc_header *hdr
        int rank
        int nranks
        uint32_t seq
        pgc_config cfg
        pgc_simd simd
        uint64_t spin_iters
        pgc_spin_gate spin_gate
        int cma_ok
        char cma_reason[320]
        pgc_error err
        uint64_t stats[PGC_NCOLL][PGC_NPATH]
        uint64_t single_copies[2]
        int nregions
        int stats_paused
        int basic_seen
        int forwards
        int refusals_abort
        int path_hint
        size_t hint_bytes
        void (*before_wait)(pgc_team *t) noexcept nogil
        void *before_wait_state

    pgc_team *pgc_team_create(int rank, int nranks, const pgc_config *cfg, pgc_error *err)
    pgc_team *pgc_team_attach(int rank, int nranks, const char *name, pgc_error *err)
    int pgc_team_release(pgc_team *t)
    int pgc_team_check_attached(pgc_team *t)
    void pgc_team_destroy(pgc_team *t)
    int pgc_team_sweep_stale()
    int pgc_team_probe_cma(pgc_team *t)
    void pgc_team_set_cma(pgc_team *t, int ok, const char *reason)
    const char *pgc_coll_name(pgc_coll coll)


cdef extern from "team/region.h" nogil:
    int pgc_region_add(pgc_team *t, uint64_t id, uint64_t size, const uint64_t *bases)
    int pgc_region_remove(pgc_team *t, uint64_t id)
    void *pgc_region_find(const pgc_team *t, int r, uint64_t addr, size_t len)


cdef extern from "team/sync.h" nogil:
    void pgc_team_abort(pgc_team *t, int code, const char *msg)
    int pgc_check_peers(pgc_team *t)
    int pgc_check_aborted(pgc_team *t)
    int pgc_member_alive(const pgc_team *t, int r)
    void pgc_set_wait_progress(void (*hook)() noexcept nogil)
    int pgc_wait_step_all(pgc_team *t, uint32_t step)


cdef extern from "base/cma.h" nogil:
    int pgc_cma_read(int pid, void *local, uint64_t remote, size_t len, pgc_error *err)
    int pgc_cma_write(int pid, const void *local, uint64_t remote, size_t len, pgc_error *err)
    int pgc_cma_probe_fork(pgc_error *err)


cdef extern from "coll/coll.h" nogil:
    int pgc_coll_refuse(pgc_team *t, pgc_coll coll, const char *reason)
    int pgc_coll_to_mpi(pgc_team *t, pgc_coll coll)
    int pgc_coll_peers_refused(pgc_team *t, pgc_coll coll, int *alike)
    void pgc_costs_seed(pgc_team *t, const uint32_t *ps_per_byte)
    unsigned long long pgc_probe_interval_ns(uint32_t backoff)
    int pgc_barrier(pgc_team *t)
    int pgc_bcast(pgc_team *t, void *buf, size_t nbytes, int root, int dtype)
    int pgc_reduce(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count,
                   pgc_dtype dtype, pgc_op op, int root)
    int pgc_allreduce(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count,
                      pgc_dtype dtype, pgc_op op)
    int pgc_reduce_scatter(pgc_team *t, pgc_coll coll, const void *sendbuf, void *recvbuf,
                           const size_t *recvcounts, pgc_dtype dtype, pgc_op op)
    int pgc_scan(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count,
                 pgc_dtype dtype, pgc_op op)
    int pgc_exscan(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count,
                   pgc_dtype dtype, pgc_op op)
    int pgc_gather(pgc_team *t, pgc_coll coll, const void *sendbuf, size_t sendbytes,
                   void *recvbuf, const size_t *recvbytes, const size_t *displs, int root, int dtype)
    int pgc_scatter(pgc_team *t, pgc_coll coll, const void *sendbuf, const size_t *sendbytes,
                    const size_t *displs, void *recvbuf, size_t recvbytes, int root, int dtype)
    unsigned PGC_RECV_COLD
    int pgc_allgather(pgc_team *t, pgc_coll coll, const void *sendbuf, size_t sendbytes,
                      void *recvbuf, const size_t *recvbytes, const size_t *displs, unsigned flags)
    int pgc_alltoall(pgc_team *t, pgc_coll coll, const void *sendbuf, const size_t *sendbytes,
                     const size_t *sdispls, void *recvbuf, const size_t *recvbytes,
                     const size_t *rdispls)
