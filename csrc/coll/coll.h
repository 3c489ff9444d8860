/* coll.h - the intra-node collectives and what they share.
 *
 * One file per family: coll_barrier.c, coll_bcast.c, coll_reduce.c (Reduce,
 * Allreduce, Reduce_scatter(_block), Scan, Exscan, over the reduction engine
 * of reduce.h), coll_gather.c (Gather(v), Scatter(v), Allgather(v)) and
 * coll_alltoall.c; the last two share the exchange engine (xchg.h). This file and coll.c hold what they all use.
 *
 * Phases. Every collective runs the same phases, in this order:
 *   check  refuse bad arguments (pgc_<collective> itself), before anything
 *          moves
 *   plan   what every member computes alike from team-wide values: an
 *          exchange's ring geometry (pgc_xchg_ring), a reduction's blocks and
 *          windows (reduce_plan). Before begin, so that a failure leaves the
 *          sequence numbers in step
 *   begin  pgc_coll_begin: the next sequence number (t->seq) and its
 *          signature; fails if the team was aborted. Then the path: the
 *          team-wide one (pgc_choose_path), or a member's own
 *          (pgc_choose_member_path: after begin, since a probe counts
 *          sequence numbers), counted once (pgc_count)
 *   start  wait until the shared areas this member writes are free
 *          (pgc_wait_peers_done), then publish what its peers need first:
 *          descriptor (pgc_desc_put), inline payload, buffer address, table
 *   work   move the data (inline / copy-in/copy-out / single copy); readers
 *          follow the path their publisher announced
 *   ack    a member whose own buffers its peers read (single copy) waits
 *          until they say they are done (the exchanges' ack FIN, pgc_xchg_ack;
 *          elsewhere their DONE or their last ack): a buffer may be reused the
 *          moment the call returns. Members that only staged or copied out of
 *          shared memory have nothing to wait for
 *   end    pgc_coll_end: fold what the collective measured into the team's
 *          costs, and post DONE for this seq (on success)
 * A helper that runs one phase of one member's part is named after it:
 * <family>_<role or path>_<phase> (bcast_root_start, bcast_tree_work,
 * gather_sender_start, scatter_root_ack, pgc_reduce_cico_work), or
 * <family>_<phase> where every member plays the same part (alltoall_start,
 * allgather_work). The exchange engine's steps are pgc_xchg_ring (plan),
 * pgc_xchg_publish (start), pgc_xchg_desc and pgc_xchg_run (work) and
 * pgc_xchg_ack (ack). One exception to the order: a single-copy pusher (a
 * Gather sender) publishes its descriptor after its work, since the post
 * tells the root that the block arrived.
 *
 * Byte counts and displacements are in bytes; reductions take element counts
 * and a (dtype, op) pair, op being the reduction operator. A NULL send
 * buffer means MPI_IN_PLACE. Arguments are validated by the caller
 * (pgascol/engine/_core.pyx) against the real buffer sizes; the checks here
 * are the last line: they refuse what would corrupt memory, before any data
 * moves. */
#ifndef PGC_COLL_H
#define PGC_COLL_H

#include <string.h>

#include "base/copy.h"
#include "base/reduce_ops.h"
#include "team/region.h"
#include "team/sync.h"

/* ---- begin ---- */

/* Wait until every peer is done with the collective `back` sequence numbers
 * before this one (back = 1: the previous one). The start of a collective
 * that overwrites a shared area peers may still read: staging (back = 1),
 * an inline slot or a descriptor (back = PGC_RUNAHEAD). */
int pgc_wait_peers_done(pgc_team *t, uint32_t back);

/* Begin a collective: the next sequence number, and its signature (team.h)
 * in our hot line, where every peer checks it at its first wait on us in
 * this collective. `arg` is what must agree besides the collective: the root
 * of a rooted collective, PGC_SIG_REDUCTION(dtype, op, shape) for the
 * reductions, 0 otherwise. No wait is needed before the store: a peer that
 * still reads an older slot finds another seq byte and skips its check.
 * The seq byte tells collectives apart because no member gets PGC_RUNAHEAD
 * or more sequence numbers ahead of a peer: every PGC_RUNAHEAD / 2 of them a
 * member waits until its peers are done with the collective PGC_RUNAHEAD / 2
 * back. Most collectives bound that drift anyway; those that wait for nobody
 * (zero counts, refusals) would not. */
static inline int pgc_coll_sign(pgc_team *t, uint32_t kind, uint64_t arg)
{
    t->seq++;
    t->sig = pgc_sig_make(t->seq, kind, arg);
    /* relaxed: ordered before this collective's first publish (release) */
    atomic_store_explicit(&pgc_ctl_of(t, t->rank)->sig[t->seq & (PGC_SIG_RING - 1)], t->sig,
                          memory_order_relaxed);
    if (PGC_UNLIKELY((t->seq & (PGC_RUNAHEAD / 2 - 1)) == 0))
        return pgc_wait_peers_done(t, PGC_RUNAHEAD / 2);
    return PGC_OK;
}
/* Begin a call the tuner gave to MPI (t->path_hint PGC_HINT_MPI): the
 * engine's signature of the call, with its size class (pgc_sig_class_bits),
 * DONE at once, and a wait until every peer is done too, whose signature
 * checks meet a refusal, another basic type or another collective exactly
 * as the engine's paths would; then the peers' byte counts are compared.
 * Returns PGC_ON_MPI where every member agreed: no data moved, and the
 * caller runs the call on MPI, every member alike. Otherwise the error for
 * pgc_coll_end, as if the engine had run the call: PGC_EREFUSED (the root
 * refused), PGC_EPEERREFUSED (another member refused: every member gives
 * the call up, since none may enter MPI without it), PGC_ETYPE (another
 * basic type: nothing moved), or PGC_EMISMATCH, the team aborted (another
 * size, another collective). In coll.c. */
int pgc_coll_agree_mpi(pgc_team *t, pgc_coll coll, uint64_t arg);

static inline int pgc_coll_begin(pgc_team *t, pgc_coll coll, uint64_t arg)
{
    if (PGC_UNLIKELY(t->path_hint == PGC_HINT_MPI))
        return pgc_coll_agree_mpi(t, coll, arg);
    int rc = pgc_coll_sign(t, coll, arg);
    return rc ? rc : pgc_check_aborted(t);
}

/* This member refused its arguments to `coll` (the caller raised an error
 * before entering it) while its peers may have entered it: take the
 * sequence number and mark it refused, done at once. A peer that waits on us
 * in this collective fails at once with a message naming us, instead of
 * timing out; a peer that did not need us completes; either way the
 * sequence numbers stay in step. `reason` (or NULL) is what the caller
 * raised: our descriptor says "refused" and its length, the text is in our
 * staging, for the members that end the call with it (pgc_coll_end). Nothing
 * to do once the team was aborted. */
int pgc_coll_refuse(pgc_team *t, pgc_coll coll, const char *reason);
/* The descriptor's path byte of a refusal, and the longest reason kept. Its
 * length is the reason's plus PGC_DESC_REFUSAL_LEN, more bytes than any
 * message holds: a reader's size check (one compare) fails on it. */
#define PGC_DESC_REFUSED 0xffu
#define PGC_DESC_REFUSAL_LEN (1ull << 55)
#define PGC_REFUSAL_MAX 256u
/* End a collective that failed with `rc` (pgc_coll_end). A refusal met
 * keeps the team usable: the root's (PGC_EREFUSED, team.h:
 * pgc_root_refusal_ends_call) adds its reason and ends our part as done
 * (root_refused, coll.c); another member's, or a member that gave
 * the call up (PGC_EPEERREFUSED, t->err.peer the refuser), makes us give
 * it up too (give_up, coll.c: the refuser's reason, our gave_up
 * mark, which ends the waits of the members waiting for our next step,
 * a wait until every member ended the collective, then DONE). Returns rc,
 * or the error that ended that wait. Any other error: rc as it is. */
int pgc_coll_end_failed(pgc_team *t, int rc);

/* Before this member signs its next collective, `coll`: wait until every
 * peer has signed it (pgc_wait_signed) and tell whether every one refused
 * it (pgc_coll_refuse; 0 on a team of one). A peer already PGC_SIG_RING
 * collectives further, whose signature is gone, counts as in it. The root
 * of a Reduce that refused its arguments asks, to choose between refusing
 * too and running its part on scratch buffers (_reduce_on_scratch in
 * pgascol/comm/coll_reduce.pxi). */
int pgc_coll_peers_refused(pgc_team *t, pgc_coll coll, int *alike);

/* This member runs `coll` on MPI instead (arguments pgascol does not
 * accelerate: a user-defined operator, an object without the buffer
 * protocol, ...). Takes the sequence number, marked "to MPI", done at once,
 * then waits until every peer is done with this collective: a peer that went
 * to MPI too agrees, a peer that entered the engine (or refused) is a
 * mismatch, which fails both sides at once instead of leaving one waiting in
 * the engine and the other in MPI, forever. PGC_OK: go to MPI. */
int pgc_coll_to_mpi(pgc_team *t, pgc_coll coll);

/* ---- measured costs and the copies of the data paths ---- */

/* Measured costs (team.h: pgc_costs). Copies of at least
 * PGC_XFER_TIMED_MIN bytes are timed (shorter ones would mostly measure the
 * clock); a collective keeps its best (lowest) picoseconds per byte per
 * transfer, which a preempted copy does not spoil, and pgc_coll_end folds it
 * into the team's estimate. */
#define PGC_XFER_TIMED_MIN (16u << 10)
static inline void pgc_xfer_note(pgc_team *t, pgc_xfer k, size_t bytes, uint64_t ns)
{
    uint64_t ps = ns * 1000 / bytes;
    uint32_t s = ps == 0 ? 1 : ps > UINT32_MAX ? UINT32_MAX : (uint32_t)ps;
    if (t->xfer_best[k] == 0 || s < t->xfer_best[k])
        t->xfer_best[k] = s;
    t->end_pending |= PGC_END_FOLD;
}
/* The copy of the copy-in/copy-out paths (staging, copy-out, own block,
 * reduction pipeline, Bcast rings), with the loops of the team's pgc_simd
 * (copy.h). */
static inline void pgc_copy(const pgc_team *t, void *restrict dst, const void *restrict src, size_t n)
{
    pgc_copy_with(t->simd, dst, src, n);
}

/* How this member writes its staging in its next copy-in/copy-out
 * collective (a Bcast root or relay, an exchange producer, a reduction
 * member): PGC_XFER_STAGE (ordinary stores) or PGC_XFER_STREAM (streaming
 * stores), by cfg.stream and the measured costs (coll.c). */
pgc_xfer pgc_stage_xfer(pgc_team *t);

/* A copy of kind k (pgc_xfer): with streaming stores for PGC_XFER_STREAM,
 * pgc_copy otherwise. */
static inline void pgc_copy_as(const pgc_team *t, pgc_xfer k, void *restrict dst, const void *restrict src,
                               size_t n)
{
    if (k == PGC_XFER_STREAM)
        pgc_copy_stream(dst, src, n);
    else
        pgc_copy(t, dst, src, n);
}

/* The same, timed when long enough to tell. */
static inline void pgc_timed_copy(pgc_team *t, pgc_xfer k, void *dst, const void *src, size_t n)
{
    uint64_t t0 = n >= PGC_XFER_TIMED_MIN ? pgc_now_ns() : 0;
    pgc_copy_as(t, k, dst, src, n);
    if (t0)
        pgc_xfer_note(t, k, n, pgc_now_ns() - t0);
}
/* Fold the collective's measurements into the team's costs (discarded if it
 * failed). */
void pgc_costs_fold(pgc_team *t, int rc);
/* Set the team's costs as if just measured (0: leave one as it is), and end
 * any probe: a warm start from known figures, and the tests' lever. */
void pgc_costs_seed(pgc_team *t, const uint32_t ps_per_byte[PGC_NXFER]);

/* ---- end ---- */

/* End a collective with its result `rc`: on success post DONE for this
 * seq; a failure goes to pgc_coll_end_failed. Returns rc. What else is
 * pending (t->end_pending) goes to pgc_coll_end_pending, in coll.c. */
int pgc_coll_end_pending(pgc_team *t, int rc);
static inline int pgc_coll_end(pgc_team *t, int rc)
{
    if (PGC_UNLIKELY(t->end_pending))
        return pgc_coll_end_pending(t, rc);
    if (rc == PGC_OK)
        pgc_post_step(t, PGC_STEP_DONE);
    else
        rc = pgc_coll_end_failed(t, rc);
    return rc;
}

/* ---- descriptors (start) ---- */

/* The word where member r publishes its descriptor for the collective in
 * progress (size, path: whatever readers must check before they read).
 * Descriptors rotate with the sequence number, shared by every family, so a
 * slow reader of an earlier collective still finds its own: write it only
 * after pgc_wait_peers_done(t, PGC_RUNAHEAD), when every reader of the
 * previous user of the word is done. */
static inline _Atomic uint64_t *pgc_desc_of(const pgc_team *t, int r)
{
    return &pgc_desc_line_of(t, r)->word[t->seq & (PGC_RUNAHEAD - 1)];
}
/* A descriptor is path << 56 | length. Written relaxed: the writer's next
 * post (release) publishes it, and readers read it after a wait on the
 * writer (acquire) in the same collective. */
#define PGC_DESC_LEN_MASK ((1ull << 56) - 1)
static inline void pgc_desc_put(pgc_team *t, pgc_path path, uint64_t len)
{
    atomic_store_explicit(pgc_desc_of(t, t->rank), (uint64_t)path << 56 | (len & PGC_DESC_LEN_MASK),
                          memory_order_relaxed);
}
static inline uint64_t pgc_desc_get(const pgc_team *t, int r)
{
    return atomic_load_explicit(pgc_desc_of(t, r), memory_order_relaxed);
}
static inline pgc_path pgc_desc_path(uint64_t desc)
{
    return (pgc_path)(desc >> 56);
}
static inline uint64_t pgc_desc_len(uint64_t desc)
{
    return desc & PGC_DESC_LEN_MASK;
}

/* ---- path choice (begin) ---- */

/* A reduction whose members would fold more than this many bytes out of the
 * inline slots (Allreduce, Scan: P x the vector) takes the partitioned path,
 * where each folds 1/P: inline folding grows with the team, the partitioned
 * path's synchronisation does not (coll_reduce.c). */
#define PGC_INLINE_FOLD_MAX (64u << 10)

/* The one place where the transfer method is chosen: by size, the team's
 * thresholds, whether single copy works, and `shared`: whether every byte
 * the peers would reach by single copy lies in registered shared regions
 * (region.h), where single copy is one user-space copy through the peers'
 * own mappings (pgc_coll_cma). Such buffers take single copy above the
 * inline size, whether or not the kernel's process_vm_readv is allowed
 * (t->cma_ok): one copy instead of staging's two, no kernel call. A member
 * that passes shared = 1 must have checked it for every range a peer will
 * reach (pgc_region_holds, pgc_xchg_holds), so that no reader ever falls
 * back to process_vm_readv on memory it cannot read. Every member must pass
 * values that agree across the team (e.g. the total size of a Bcast, which
 * passes shared = 0: no member knows the others' buffers). */
pgc_path pgc_choose_path(const pgc_team *t, pgc_coll coll, size_t bytes, int shared);

/* The same for a member's own outgoing data in Gather(v), Allgather(v) and
 * Alltoall(v), and its input in a reduction (coll_reduce.c: staged, or its
 * buffers exposed), whose readers follow the path each member announces, so
 * members need not agree (`shared` as above: single copy through shared
 * regions is never re-measured against staging). For the collectives in cfg.adapt_mask, payloads
 * of cfg.adapt_min bytes or more that the thresholds put on copy-in/copy-out
 * go by single copy while the team's measured costs say it is clearly
 * cheaper: copy-in/copy-out pays a copy into staging (whose lines the
 * readers hold) and a cross-core copy out, both of which slow down several
 * fold when the cores stop sharing a cache well, while single copy of a
 * buffer the owner did not change keeps its speed.
 * The path not taken is re-measured when nobody has for the probe interval:
 * the member that notices calls a probe, the PGC_PROBE_LEN collectives from
 * its current one, in which every member takes that path, so that it is
 * measured in steady state, not as one collective among collectives of the
 * other path. The interval is
 * PGC_PROBE_FIRST_NS << costs.probe_backoff. A probe that confirms the path
 * taken doubles it, up to 0.8 s (PGC_PROBE_BACKOFF_MAX); one that changes
 * the path brings it back to PGC_PROBE_NS (PGC_PROBE_BACKOFF_RESET) if it
 * was longer, and seeded costs set it to that.
 * A new team starts at 12.5 ms: its first costs are measured on cold
 * staging and freshly faulted pages, and a path chosen on them held for
 * 100 ms. A probe runs the dearer path: in a slow period staging costs
 * several times single copy, hence no shorter interval after the start
 * (docs/PERFORMANCE.md, "Probes start at 12.5 ms and back off to 800 ms").
 * Only a change in favour of the path not taken waits for a probe (the path
 * taken is measured by every collective), so the cap bounds how long a team stays
 * on single copy after a slow period. */
#define PGC_PROBE_NS (100ull * 1000 * 1000)
#define PGC_PROBE_FIRST_NS (PGC_PROBE_NS >> 3)
#define PGC_PROBE_BACKOFF_RESET 3u
#define PGC_PROBE_BACKOFF_MAX 6u
#define PGC_PROBE_LEN 4u
static inline uint64_t pgc_probe_interval_ns(uint32_t backoff)
{
    return PGC_PROBE_FIRST_NS << backoff;
}
pgc_path pgc_choose_member_path(pgc_team *t, pgc_coll coll, size_t bytes, int shared);
/* Whether that run-time choice applies to `coll` at `bytes` (and so whether
 * its copies are worth timing). */
static inline int pgc_adapts(const pgc_team *t, pgc_coll coll, size_t bytes)
{
    return t->cma_ok && bytes >= t->cfg.adapt_min && (t->cfg.adapt_mask >> coll & 1u);
}

/* Bcast's shape, chosen with the path: 0 for a flat pull from the root, or
 * the radix k of a pipelined k-nomial tree (teams of at least
 * cfg.bcast_tree_min members, copy-in/copy-out and single copy; inline
 * payloads always go flat: one cache line). Same on every member. */
int pgc_bcast_radix(const pgc_team *t, pgc_path path);
#define PGC_TREE_MAX_CHILDREN 64

/* ---- single copy and statistics ---- */

/* Single copy with `peer` (write: push local to remote): through this
 * member's own mapping when [remote, remote + len) lies in the peer's
 * mapping of a shared region (region.h: a user-space copy, counted in
 * t->single_copies[PGC_COPY_SHARED]), else process_vm_readv/writev
 * (PGC_COPY_KERNEL); failing cleanly:
 * nothing moves once the team is aborted; a failure after the peer gave up
 * reports the abort, the cause; any other failure aborts the team, since the
 * peer would wait for us until the timeout. */
int pgc_coll_cma(pgc_team *t, int peer, int write, void *local, uint64_t remote, size_t len);

/* Member `peer`'s bytes [remote, remote + len) where this member reads
 * them in place, through its own mapping of a shared region (region.h), or
 * NULL: what a reader that needs no copy (a reduction's fold) takes instead
 * of a single copy into a buffer of its own. Counted as a single copy
 * through a region. */
static inline const char *pgc_coll_in_place(pgc_team *t, int peer, uint64_t remote, size_t len)
{
    const char *p = t->nregions ? pgc_region_find(t, peer, remote, len) : NULL;
    if (p && !t->stats_paused)
        t->single_copies[PGC_COPY_SHARED]++;
    return p;
}

static inline void pgc_count(pgc_team *t, pgc_coll coll, pgc_path path)
{
    if (!t->stats_paused)
        t->stats[coll][path]++;
}

/* Bcast's copy-in/copy-out chunking: a member's staging area is a ring of
 * `slots` chunks of `chunk` bytes. (The exchange ring has its own chunk,
 * cfg.xchg_chunk_bytes: pgc_xchg_ring.) */
static inline size_t pgc_chunk_bytes(const pgc_team *t)
{
    return t->cfg.chunk_bytes;
}
static inline uint32_t pgc_ring_slots(const pgc_team *t)
{
    return (uint32_t)(t->hdr->staging_stride / t->cfg.chunk_bytes);
}

/* ---- the collectives (0 or PGC_E*, details in t->err) ---- */
int pgc_barrier(pgc_team *t);
/* dtype: the basic type of this member's elements (a pgc_dtype), or -1 where
 * the caller states none; every member must state the same (team.h:
 * PGC_SIG_ROOTED), as for Gather(v) and Scatter(v). */
int pgc_bcast(pgc_team *t, void *buf, size_t bytes, int root, int dtype);

int pgc_reduce(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count,
               pgc_dtype dtype, pgc_op op, int root);
int pgc_allreduce(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count,
                  pgc_dtype dtype, pgc_op op);
/* recvcounts: elements each member receives; coll is REDUCE_SCATTER or
 * REDUCE_SCATTER_BLOCK (statistics only). */
int pgc_reduce_scatter(pgc_team *t, pgc_coll coll, const void *sendbuf, void *recvbuf,
                       const size_t *recvcounts, pgc_dtype dtype, pgc_op op);
int pgc_scan(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count,
             pgc_dtype dtype, pgc_op op);
int pgc_exscan(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count,
               pgc_dtype dtype, pgc_op op);

/* v-forms in bytes; the fixed-size forms pass equal counts and coll tells
 * which one it is (statistics). counts/displs are significant where MPI says
 * so (at the root for Gatherv/Scatterv). */
int pgc_gather(pgc_team *t, pgc_coll coll, const void *sendbuf, size_t sendbytes,
               void *recvbuf, const size_t *recvbytes, const size_t *displs, int root, int dtype);
int pgc_scatter(pgc_team *t, pgc_coll coll, const void *sendbuf, const size_t *sendbytes,
                const size_t *displs, void *recvbuf, size_t recvbytes, int root, int dtype);
/* pgc_allgather's flags. PGC_RECV_COLD: the caller's receive buffer leaves
 * the cache before anyone reads it (a hierarchical Allreduce larger than
 * the cache, gathered segment by segment): the member writes it with
 * streaming stores, instead of fetching each line only to overwrite it. */
#define PGC_RECV_COLD 1u
int pgc_allgather(pgc_team *t, pgc_coll coll, const void *sendbuf, size_t sendbytes,
                  void *recvbuf, const size_t *recvbytes, const size_t *displs, unsigned flags);
int pgc_alltoall(pgc_team *t, pgc_coll coll, const void *sendbuf, const size_t *sendbytes,
                 const size_t *sdispls, void *recvbuf, const size_t *recvbytes,
                 const size_t *rdispls);

#endif
