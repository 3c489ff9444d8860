/* coll_bcast.c - Bcast: the root publishes, every other member pulls.
 *
 *   inline  the payload travels in the root's inline slot (one step)
 *   cico    the root pipelines chunks through its staging ring; readers copy
 *           each chunk out as soon as it is posted and acknowledge it, which
 *           frees the slot for chunk c + slots (producer and consumers
 *           overlap). The root (and a tree's relays) writes the ring with
 *           streaming stores while the team measures ordinary ones dearer
 *           (pgc_stage_xfer, coll.c)
 *   cma     single copy with direction control (as KNEM-based collectives
 *           do): every reader exposes its buffer and pulls the head of the message
 *           straight from the root's buffer (process_vm_readv) while the root
 *           pushes the tail, 1/P of it, into each reader's buffer
 *           (process_vm_writev), so the root's core copies too; the root
 *           returns after every reader is done (its buffer may be reused)
 *
 * Those are flat: every reader takes the data from the root. From
 * cfg.bcast_tree_min members on (pgc_bcast_radix), cico and cma go down a
 * pipelined k-nomial tree instead (like the hierarchy of Open MPI's
 * coll/xhc): each member takes each chunk from its parent as soon as the
 * parent has it, so no buffer has more than k - 1 readers per level and
 * levels overlap.
 *
 * Flat steps. Root: progress = chunks staged (inline/cma: 1); cma: ack =
 * readers whose tail was pushed, in rotated order. Reader: ack = chunks
 * copied out; cma: progress 1 = buffer exposed. Tree steps: progress =
 * chunks this member holds for its children, ack = chunks taken from its
 * parent. All end with DONE. */
#include <string.h>

#include "coll/coll.h"

/* cma: how much of each reader's message the root pushes (the tail). */
static inline size_t push_share(const pgc_team *t, size_t bytes)
{
    return bytes / (size_t)t->nranks & ~(size_t)(PGC_CACHELINE - 1);
}

/* ---- flat: the root publishes, every reader takes from it ---- */

/* Root, start: the descriptor and our address, and the inline payload. */
static int bcast_root_start(pgc_team *t, const void *buf, size_t bytes, pgc_path path)
{
    int rc = pgc_wait_peers_done(t, PGC_RUNAHEAD);
    if (rc)
        return rc;
    /* Published by the first post (release): step 1 below, or chunk 0's
     * (cico, bcast_root_work). addr is read only by single-copy readers,
     * and the root returns from such a collective only after every reader
     * is done: no rotation needed. */
    pgc_desc_put(t, path, bytes);
    atomic_store_explicit(&pgc_ctl_of(t, t->rank)->addr, (uint64_t)(uintptr_t)buf, memory_order_relaxed);
    if (path == PGC_PATH_INLINE)
        memcpy(pgc_inline_of(t, t->rank, t->seq), buf, bytes);
    if (path != PGC_PATH_CICO)
        pgc_post_step(t, 1);
    return PGC_OK;
}

/* Root, work. cma: push the tail of each reader's message into its buffer
 * once it exposed it (`pushes`: the readers took the team's cma path, see
 * pgc_bcast); cico: pipeline the chunks through our staging ring. */
static int bcast_root_work(pgc_team *t, const void *buf, size_t bytes, pgc_path path, int pushes)
{
    int rc;
    switch (path) {
    case PGC_PATH_INLINE:
        return PGC_OK; /* the payload went with the start */
    case PGC_PATH_CMA: {
        size_t share = push_share(t, bytes), head = bytes - share;
        for (int i = 1; pushes && i < t->nranks; i++) {
            int r = (t->rank + i) % t->nranks;
            if ((rc = pgc_wait_step(t, r, 1))) /* reader r exposed its buffer */
                return rc;
            /* a reader of another type gets nothing, but its ack all the same
             * (also from a node's leader, which forwards: pgc_peer_takes_nothing) */
            uint64_t dst = atomic_load_explicit(&pgc_ctl_of(t, r)->addr, memory_order_relaxed);
            if (!pgc_peer_takes_nothing(t, r) && (rc = pgc_coll_cma(t, r, 1, (char *)buf + head, dst + head, share)))
                return rc;
            pgc_post_ack(t, (uint32_t)i);
        }
        return PGC_OK;
    }
    default: {
        size_t chunk = pgc_chunk_bytes(t);
        uint32_t slots = pgc_ring_slots(t);
        uint32_t nchunks = (uint32_t)((bytes + chunk - 1) / chunk);
        char *ring = pgc_staging_of(t, t->rank);
        if ((rc = pgc_wait_peers_done(t, 1)))
            return rc;
        pgc_xfer stage = pgc_stage_xfer(t);
        for (uint32_t c = 0; c < nchunks; c++) {
            /* slot c % slots is free once every reader copied chunk c - slots */
            if (c >= slots)
                for (int r = 0; r < t->nranks; r++)
                    if (r != t->rank && (rc = pgc_wait_ack(t, r, c - slots + 1)))
                        return rc;
            size_t off = (size_t)c * chunk, n = bytes - off < chunk ? bytes - off : chunk;
            pgc_timed_copy(t, stage, ring + (size_t)(c % slots) * chunk, (const char *)buf + off, n);
            pgc_post_step(t, c + 1);
        }
        return PGC_OK;
    }
    }
}

/* Root, ack. cma: the readers pull the head of the message from our buffer;
 * they are done with it once they posted DONE. */
static int bcast_root_ack(pgc_team *t, pgc_path path)
{
    return path == PGC_PATH_CMA ? pgc_wait_step_all(t, PGC_STEP_DONE) : PGC_OK;
}

/* check_root_desc's verdict on a descriptor that is not the one expected
 * (out of line: a correct call never comes here, and the check stays a few
 * inlined instructions). A root that refused (pgc_coll_refuse: its
 * descriptor says so) ends the call with PGC_EREFUSED: a tree's relay that
 * met the refusal posted DONE (root_refused, coll.c), which lets its
 * children this far, and they end the call the same way. A size mismatch
 * aborts the team: the root and the other readers would wait for data that
 * never comes. */
static __attribute__((noinline)) int root_desc_unexpected(pgc_team *t, int root, size_t bytes, uint64_t desc)
{
    if (pgc_desc_path(desc) == (pgc_path)PGC_DESC_REFUSED)
        return pgc_set_error(&t->err, PGC_EREFUSED, root, 0, "Bcast: the root (local rank %d) refused its arguments",
                             root);
    pgc_set_error(&t->err, PGC_EINVAL, root, 0,
                  "Bcast: the root (local rank %d) sends %zu bytes but this rank receives %zu",
                  root, (size_t)pgc_desc_len(desc), bytes);
    pgc_team_abort(t, PGC_EINVAL, t->err.msg);
    return PGC_EINVAL;
}

/* A reader's check of the root's descriptor, once it saw a post that
 * follows it (the root's, or in a tree its parent's: release/acquire
 * chains carry it down): our size (a refusal's length is no size,
 * PGC_DESC_REFUSAL_LEN). */
static inline int check_root_desc(pgc_team *t, int root, size_t bytes, uint64_t *desc)
{
    *desc = pgc_desc_get(t, root);
    if (PGC_LIKELY(pgc_desc_len(*desc) == bytes))
        return PGC_OK;
    return root_desc_unexpected(t, root, bytes, *desc);
}

/* Reader, start. cma: expose our buffer for the root's push (read only
 * while the root is in this collective, which it leaves only after our
 * DONE). */
static void bcast_reader_start(pgc_team *t, void *buf, pgc_path path)
{
    if (path == PGC_PATH_CMA) {
        atomic_store_explicit(&pgc_ctl_of(t, t->rank)->addr, (uint64_t)(uintptr_t)buf, memory_order_relaxed);
        pgc_post_step(t, 1);
    }
}

/* Reader, work: follow the path the root announced. A root may announce
 * cma where the team's path (ours, `path`) is another: its buffer lies in a
 * shared region, and we pull all of it, as we exposed nothing for a push.
 * A reader of another basic type than the root's (`skip`: known from its
 * first wait on the root, before anything moves) copies nothing but posts
 * every ack the root waits for; the root pushes nothing into its buffer. */
static int bcast_reader_work(pgc_team *t, void *buf, size_t bytes, int root, pgc_path path)
{
    pgc_ctl *rc_ = pgc_ctl_of(t, root);
    uint64_t desc;
    int rc = pgc_wait_step(t, root, 1);
    if (rc || (rc = check_root_desc(t, root, bytes, &desc)))
        return rc;
    int skip = pgc_peer_skipped(t, root);
    switch (pgc_desc_path(desc)) {
    case PGC_PATH_INLINE:
        if (!skip)
            memcpy(buf, pgc_inline_of(t, root, t->seq), bytes);
        return PGC_OK;
    case PGC_PATH_CMA: {
        /* We exposed our buffer (our path is cma too): the root pushes the
         * tail into it, unless it found us of another type (as we found it:
         * pgc_peer_takes_nothing), when a node's leader, which forwards
         * what it takes, pulls all of it. */
        int exposed = path == PGC_PATH_CMA, pushed = exposed && !pgc_peer_takes_nothing(t, root);
        size_t head = pushed ? bytes - push_share(t, bytes) : bytes;
        if (!skip && (rc = pgc_coll_cma(t, root, 0, buf, atomic_load_explicit(&rc_->addr, memory_order_relaxed), head)))
            return rc;
        return exposed ? pgc_wait_ack(t, root, (uint32_t)((t->rank - root + t->nranks) % t->nranks)) : PGC_OK;
    }
    default: {
        size_t chunk = pgc_chunk_bytes(t);
        uint32_t slots = pgc_ring_slots(t);
        uint32_t nchunks = (uint32_t)((bytes + chunk - 1) / chunk);
        const char *ring = pgc_staging_of(t, root);
        for (uint32_t c = 0; c < nchunks; c++) {
            if ((rc = pgc_wait_step(t, root, c + 1)))
                return rc;
            size_t off = (size_t)c * chunk, n = bytes - off < chunk ? bytes - off : chunk;
            if (!skip)
                pgc_copy(t, (char *)buf + off, ring + (size_t)(c % slots) * chunk, n);
            pgc_post_ack(t, c + 1);
        }
        return PGC_OK;
    }
    }
}

/* ---- pipelined k-nomial tree ----
 * Ranks are renumbered from the root (v = 0). A member's parent is v with
 * its lowest non-zero base-k digit cleared; its children are v + j*m for
 * every place m below that digit (below P at the root), j = 1 .. k-1. */
#define TREE_CMA_CHUNK (256 * 1024) /* single-copy pipeline chunk: a few process_vm_readv calls' worth */

typedef struct {
    int parent;     /* team rank; -1 at the root */
    int nchildren;
    int children[PGC_TREE_MAX_CHILDREN]; /* team ranks, largest subtree first (bound: pgc_bcast_radix) */
} tree_links;

static void tree_links_of(const pgc_team *t, int root, int k, tree_links *n)
{
    int P = t->nranks, v = (t->rank - root + P) % P;
    long place = 1; /* of v's lowest non-zero digit */
    while (v != 0 && (v / place) % k == 0)
        place *= k;
    n->parent = v == 0 ? -1 : (int)((v - ((v / place) % k) * place + root) % P);
    n->nchildren = 0;
    long top = v == 0 ? P : place;
    long m = 1;
    while (m * k < top)
        m *= k;
    for (; m >= 1; m /= k)
        for (int j = k - 1; j >= 1; j--)
            if (m * j < top && v + m * j < P)
                n->children[n->nchildren++] = (int)((v + m * j + root) % P);
}

/* Chunk c's ring slot of member r is free again once r's children all
 * acknowledged chunk c - slots. */
static int wait_slot_free(pgc_team *t, const tree_links *n, uint32_t c, uint32_t slots)
{
    if (c < slots)
        return PGC_OK;
    for (int i = 0; i < n->nchildren; i++) {
        int rc = pgc_wait_ack(t, n->children[i], c - slots + 1);
        if (rc)
            return rc;
    }
    return PGC_OK;
}

/* Tree, start: before writing shared state, wait until it is free. cico: our
 * staging, which the previous collective's readers must be done with. The
 * root: its descriptor word, free once everyone finished the collective
 * PGC_RUNAHEAD back (implied by the former). Then our address (cma) and the
 * root's descriptor. */
static int bcast_tree_start(pgc_team *t, const tree_links *n, void *buf, size_t bytes, pgc_path path)
{
    int cma = path == PGC_PATH_CMA, rc;
    if (n->nchildren && !cma)
        rc = pgc_wait_peers_done(t, 1);
    else if (n->parent < 0)
        rc = pgc_wait_peers_done(t, PGC_RUNAHEAD);
    else
        rc = PGC_OK;
    if (rc)
        return rc;
    /* Published by our first post (release, bcast_tree_work); children read
     * addr only while we are in this collective, which we leave after their
     * DONE (cma). */
    if (cma)
        atomic_store_explicit(&pgc_ctl_of(t, t->rank)->addr, (uint64_t)(uintptr_t)buf, memory_order_relaxed);
    if (n->parent < 0)
        pgc_desc_put(t, path, bytes);
    return PGC_OK;
}

/* Tree, work: take each chunk from our parent (the root has it all) as soon
 * as the parent has it, and hold it for our children. `stage`: how we write
 * our ring (cico with children). A member of another basic type than its
 * parent's (`skip`: known from its first wait on the parent) writes nothing
 * into its own buffer: a staged relay passes the chunks from its parent's
 * ring to its own, a leaf only acknowledges them. A single-copy relay
 * cannot: its children pull from its user buffer, so it takes the data
 * there, and only its children of another type than its own skip it. */
static int bcast_tree_work(pgc_team *t, const tree_links *n, void *buf, size_t bytes, int root, pgc_path path,
                           pgc_xfer stage)
{
    int cma = path == PGC_PATH_CMA, rc;
    size_t chunk = cma ? TREE_CMA_CHUNK : pgc_chunk_bytes(t);
    uint32_t slots = pgc_ring_slots(t);
    uint32_t nchunks = (uint32_t)((bytes + chunk - 1) / chunk);
    char *ring = pgc_staging_of(t, t->rank);

    if (n->parent < 0) { /* the root */
        if (cma)
            pgc_post_step(t, nchunks); /* all of it is in our buffer */
        else
            for (uint32_t c = 0; c < nchunks; c++) {
                if ((rc = wait_slot_free(t, n, c, slots)))
                    return rc;
                size_t off = (size_t)c * chunk, len = bytes - off < chunk ? bytes - off : chunk;
                pgc_timed_copy(t, stage, ring + (size_t)(c % slots) * chunk, (const char *)buf + off, len);
                pgc_post_step(t, c + 1);
            }
        return PGC_OK;
    }
    uint64_t desc;
    if ((rc = pgc_wait_step(t, n->parent, 1)) || (rc = check_root_desc(t, root, bytes, &desc)))
        return rc;
    int skip = pgc_peer_skipped(t, n->parent);
    pgc_ctl *parent = pgc_ctl_of(t, n->parent);
    const char *parent_ring = pgc_staging_of(t, n->parent);
    for (uint32_t c = 0; c < nchunks; c++) {
        size_t off = (size_t)c * chunk, len = bytes - off < chunk ? bytes - off : chunk;
        char *slot = ring + (size_t)(c % slots) * chunk;
        if ((rc = pgc_wait_step(t, n->parent, c + 1)))
            return rc;
        if (cma) {
            uint64_t src = atomic_load_explicit(&parent->addr, memory_order_relaxed) + off;
            if ((!skip || n->nchildren) && (rc = pgc_coll_cma(t, n->parent, 0, (char *)buf + off, src, len)))
                return rc;
            if (n->nchildren)
                pgc_post_step(t, c + 1);
            pgc_post_ack(t, c + 1);
        } else if (n->nchildren) {
            if ((rc = wait_slot_free(t, n, c, slots)))
                return rc;
            if (stage == PGC_XFER_STREAM && !skip) {
                /* ours first: streamed lines leave our cache too */
                pgc_copy(t, (char *)buf + off, parent_ring + (size_t)(c % slots) * chunk, len);
                pgc_timed_copy(t, PGC_XFER_STREAM, slot, (char *)buf + off, len);
                pgc_post_ack(t, c + 1);
                pgc_post_step(t, c + 1);
            } else {
                /* into our ring first, so our children start at once */
                pgc_copy(t, slot, parent_ring + (size_t)(c % slots) * chunk, len);
                pgc_post_ack(t, c + 1);
                pgc_post_step(t, c + 1);
                if (!skip)
                    pgc_copy(t, (char *)buf + off, slot, len);
            }
        } else {
            if (!skip)
                pgc_copy(t, (char *)buf + off, parent_ring + (size_t)(c % slots) * chunk, len);
            pgc_post_ack(t, c + 1);
        }
    }
    return PGC_OK;
}

/* Tree, ack. cma: our buffer is read until our children are done. */
static int bcast_tree_ack(pgc_team *t, const tree_links *n, pgc_path path)
{
    if (path == PGC_PATH_CMA)
        for (int i = 0; i < n->nchildren; i++) {
            int rc = pgc_wait_step(t, n->children[i], PGC_STEP_DONE);
            if (rc)
                return rc;
        }
    return PGC_OK;
}

int pgc_bcast(pgc_team *t, void *buf, size_t bytes, int root, int dtype)
{
    if (root < 0 || root >= t->nranks)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "Bcast: root %d out of range [0, %d)", root, t->nranks);
    int rc = pgc_coll_begin(t, PGC_COLL_BCAST, PGC_SIG_ROOTED(dtype, root));
    if (rc)
        return pgc_coll_end(t, rc); /* a refusal met, or PGC_ON_MPI */
    pgc_path path = pgc_choose_path(t, PGC_COLL_BCAST, bytes, 0);
    pgc_count(t, PGC_COLL_BCAST, path);
    int radix = pgc_bcast_radix(t, path);
    if (t->nranks == 1)
        ;
    else if (radix) {
        tree_links n;
        tree_links_of(t, root, radix, &n);
        pgc_xfer stage = path != PGC_PATH_CMA && n.nchildren ? pgc_stage_xfer(t) : PGC_XFER_STAGE;
        rc = bcast_tree_start(t, &n, buf, bytes, path);
        if (!rc)
            rc = bcast_tree_work(t, &n, buf, bytes, root, path, stage);
        if (!rc)
            rc = bcast_tree_ack(t, &n, path);
    } else if (t->rank == root) {
        /* A root buffer in a shared region goes by single copy whatever the
         * team's path: the readers follow what the root announces, and pull
         * all of it (they exposed nothing for a push) through their own
         * mapping, without process_vm_readv (coll.h, pgc_choose_path). */
        pgc_path announced = path == PGC_PATH_CICO && pgc_region_holds(t, buf, bytes) ? PGC_PATH_CMA : path;
        rc = bcast_root_start(t, buf, bytes, announced);
        if (!rc)
            rc = bcast_root_work(t, buf, bytes, announced, path == PGC_PATH_CMA);
        if (!rc)
            rc = bcast_root_ack(t, announced);
    } else {
        bcast_reader_start(t, buf, path);
        rc = bcast_reader_work(t, buf, bytes, root, path);
    }
    return pgc_coll_end(t, rc);
}
