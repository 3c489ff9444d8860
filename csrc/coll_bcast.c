/* coll_bcast.c - Bcast: the root publishes, every other member pulls.
 *
 *   inline  the payload travels in the root's inline slot (one step)
 *   cico    the root streams chunks through its staging ring; readers copy
 *           each chunk out as soon as it is posted and acknowledge it, which
 *           frees the slot for chunk c + slots (producer and consumers overlap)
 *   cma     single copy with direction control (seed 002, KNEM Coll): every
 *           reader exposes its buffer and pulls the head of the message
 *           straight from the root's buffer (process_vm_readv) while the root
 *           pushes the tail, 1/P of it, into each reader's buffer
 *           (process_vm_writev), so the root's core copies too; the root
 *           returns after every reader is done (its buffer may be reused)
 *
 * Root steps: seq = chunks staged (inline/cma: 1); cma: ack = readers whose
 * tail was pushed, in rotated order. Reader steps: ack = chunks copied out;
 * cma: seq 1 = buffer exposed. Both end with DONE. */
#include <string.h>

#include "cma.h"
#include "coll.h"

/* cma: how much of each reader's message the root pushes (the tail). */
static inline size_t push_share(const pgc_team *t, size_t bytes)
{
    return bytes / (size_t)t->nranks & ~(size_t)(PGC_CACHELINE - 1);
}

/* The root's descriptor: size and path, in pgc_desc_of. */
static inline uint64_t descriptor(size_t bytes, pgc_path path)
{
    return (uint64_t)bytes << 2 | (uint64_t)path;
}

static int root_start(pgc_team *t, const void *buf, size_t bytes, pgc_path path)
{
    pgc_ctl *me = pgc_ctl_of(t, t->rank);
    int rc = pgc_wait_peers_done(t, PGC_RUNAHEAD);
    if (rc)
        return rc;
    /* Published by the first post below (release). addr is read only by
     * single-copy readers, and the root returns from such an op only after
     * every reader is done: no rotation needed. */
    atomic_store_explicit(pgc_desc_of(t, t->rank), descriptor(bytes, path), memory_order_relaxed);
    atomic_store_explicit(&me->addr, (uint64_t)(uintptr_t)buf, memory_order_relaxed);
    switch (path) {
    case PGC_PATH_INLINE:
        memcpy(pgc_inline_of(t, t->rank, t->op), buf, bytes);
        pgc_post_seq(t, 1);
        return PGC_OK;
    case PGC_PATH_CMA: {
        pgc_post_seq(t, 1);
        size_t share = push_share(t, bytes), head = bytes - share;
        for (int i = 1; i < t->nranks; i++) {
            int r = (t->rank + i) % t->nranks;
            if ((rc = pgc_wait_seq(t, r, 1))) /* reader r exposed its buffer */
                return rc;
            uint64_t dst = atomic_load_explicit(&pgc_ctl_of(t, r)->addr, memory_order_relaxed);
            if ((rc = pgc_cma_write(pgc_member_of(t, r)->pid, (const char *)buf + head, dst + head,
                                    share, &t->err))) {
                pgc_team_abort(t, rc, t->err.msg); /* reader r waits for its tail */
                return rc;
            }
            pgc_post_ack(t, (uint32_t)i);
        }
        /* readers are done with our buffer once they posted DONE */
        return pgc_wait_seq_all(t, PGC_STEP_DONE);
    }
    default: {
        size_t chunk = pgc_chunk_bytes(t);
        uint32_t slots = pgc_ring_slots(t);
        uint32_t nchunks = (uint32_t)((bytes + chunk - 1) / chunk);
        char *ring = pgc_staging_of(t, t->rank);
        if ((rc = pgc_wait_peers_done(t, 1)))
            return rc;
        for (uint32_t c = 0; c < nchunks; c++) {
            /* slot c % slots is free once every reader copied chunk c - slots */
            if (c >= slots)
                for (int r = 0; r < t->nranks; r++)
                    if (r != t->rank && (rc = pgc_wait_ack(t, r, c - slots + 1)))
                        return rc;
            size_t off = (size_t)c * chunk, n = bytes - off < chunk ? bytes - off : chunk;
            memcpy(ring + (size_t)(c % slots) * chunk, (const char *)buf + off, n);
            pgc_post_seq(t, c + 1);
        }
        return PGC_OK;
    }
    }
}

static int reader_work(pgc_team *t, void *buf, size_t bytes, int root)
{
    pgc_ctl *rc_ = pgc_ctl_of(t, root);
    if (pgc_choose_path(t, PGC_COLL_BCAST, bytes) == PGC_PATH_CMA) {
        /* expose our buffer for the root's push (read only while the root
         * is in this op, which it leaves only after our DONE) */
        atomic_store_explicit(&pgc_ctl_of(t, t->rank)->addr, (uint64_t)(uintptr_t)buf, memory_order_relaxed);
        pgc_post_seq(t, 1);
    }
    int rc = pgc_wait_seq(t, root, 1);
    if (rc)
        return rc;
    uint64_t desc = atomic_load_explicit(pgc_desc_of(t, root), memory_order_relaxed);
    size_t root_bytes = (size_t)(desc >> 2);
    if (root_bytes != bytes) {
        pgc_set_error(&t->err, PGC_EINVAL, root, 0,
                      "Bcast: the root (local rank %d) sends %zu bytes but this rank receives %zu",
                      root, root_bytes, bytes);
        pgc_team_abort(t, PGC_EINVAL, t->err.msg);
        return PGC_EINVAL;
    }
    switch ((pgc_path)(desc & 3)) {
    case PGC_PATH_INLINE:
        memcpy(buf, pgc_inline_of(t, root, t->op), bytes);
        return PGC_OK;
    case PGC_PATH_CMA: {
        size_t head = bytes - push_share(t, bytes);
        if ((rc = pgc_cma_read(pgc_member_of(t, root)->pid, buf,
                               atomic_load_explicit(&rc_->addr, memory_order_relaxed), head, &t->err)))
            return rc;
        return pgc_wait_ack(t, root, (uint32_t)((t->rank - root + t->nranks) % t->nranks));
    }
    default: {
        size_t chunk = pgc_chunk_bytes(t);
        uint32_t slots = pgc_ring_slots(t);
        uint32_t nchunks = (uint32_t)((bytes + chunk - 1) / chunk);
        const char *ring = pgc_staging_of(t, root);
        for (uint32_t c = 0; c < nchunks; c++) {
            if ((rc = pgc_wait_seq(t, root, c + 1)))
                return rc;
            size_t off = (size_t)c * chunk, n = bytes - off < chunk ? bytes - off : chunk;
            memcpy((char *)buf + off, ring + (size_t)(c % slots) * chunk, n);
            pgc_post_ack(t, c + 1);
        }
        return PGC_OK;
    }
    }
}

int pgc_bcast(pgc_team *t, void *buf, size_t bytes, int root)
{
    if (root < 0 || root >= t->nranks)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "Bcast: root %d out of range [0, %d)", root, t->nranks);
    int rc = pgc_coll_begin(t, PGC_COLL_BCAST, "Bcast");
    if (rc)
        return rc;
    pgc_path path = pgc_choose_path(t, PGC_COLL_BCAST, bytes);
    pgc_count(t, PGC_COLL_BCAST, path);
    if (t->nranks > 1)
        rc = t->rank == root ? root_start(t, buf, bytes, path) : reader_work(t, buf, bytes, root);
    return pgc_coll_end(t, rc);
}
