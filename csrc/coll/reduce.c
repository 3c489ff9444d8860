/* reduce.c - the reduction engine (reduce.h: its paths and their
 * protocol): where an owner finds each member's contribution and how it
 * folds them in rank order (fold), Reduce_scatter's comparison of the
 * block bounds, and the phases of the inline path and of the partitioned
 * copy-in/copy-out pipeline. */
#include <string.h>

#include "coll/reduce.h"

/* Elements of block j in the window starting at element `wpos` of blocks. */
static inline size_t piece_len(const rplan *p, int j, size_t wpos)
{
    size_t n = block_len(p, j);
    return n > wpos ? (n - wpos < p->elems ? n - wpos : p->elems) : 0;
}

static inline int wait_member(pgc_team *t, int r, uint32_t step)
{
    return r == t->rank ? PGC_OK : pgc_wait_step(t, r, step);
}

/* ---- Reduce_scatter's recvcounts, compared exactly ---- */

/* Where member r keeps its block bounds start[1..P-1] in this collective:
 * its inline slot of this seq, after the inline path's payload (reduce_plan
 * keeps both in the slot; team.c sizes slots for P - 1 words). The
 * signature states only the total; every member splits the vector by its
 * own recvcounts, so members that pass other ones would fold garbage. */
static inline size_t *rs_bounds_of(const pgc_team *t, const rplan *p, int r)
{
    size_t off = p->path == PGC_PATH_INLINE ? PGC_ALIGN_UP(p->total * p->esz, sizeof(size_t)) : 0;
    return (size_t *)((char *)pgc_inline_of(t, r, t->seq) + off);
}

/* Before our first post (release: with it), in a slot whose readers of
 * seq - PGC_RUNAHEAD are done (both starts wait for that). */
static inline void rs_put_bounds(pgc_team *t, const rplan *p)
{
    if (p->kind != RK_RSCATTER)
        return;
    size_t *mine = rs_bounds_of(t, p, t->rank);
    for (int j = 1; j < t->nranks; j++) /* a few words: no library call */
        mine[j - 1] = p->start[j];
}

static int rs_bounds_differ(pgc_team *t, const rplan *p, int peer, const size_t *theirs)
{
    int j = 0;
    while (theirs[j] == p->start[j + 1])
        j++;
    size_t lo = j ? theirs[j - 1] : 0;
    pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                  "%s: local rank %d passed other recvcounts than this rank (local rank %d): recvcounts[%d] "
                  "is %zu there and %zu here; every rank must pass the same recvcounts",
                  pgc_coll_name(p->coll), peer, t->rank, j, theirs[j] - lo, p->start[j + 1] - p->start[j]);
    pgc_team_abort(t, PGC_EMISMATCH, t->err.msg);
    return PGC_EMISMATCH;
}

/* Once we posted step 1, before reading anybody's data: every peer's
 * bounds against ours, in full. Every member compares every peer, so any
 * two members that differ both fail before folding; where the recvcounts
 * agree (the common case) this is P - 1 waits the fold makes anyway and a
 * compare of words on the line of the peer's payload (inline) or one more
 * line (cico). */
static int rs_check_bounds(pgc_team *t, const rplan *p)
{
    const int me = t->rank, P = t->nranks;
    for (int s = 1; s < P; s++) {
        int j = (me + s) % P;
        int rc = pgc_wait_step(t, j, 1);
        if (rc)
            return rc;
        const size_t *theirs = rs_bounds_of(t, p, j);
        size_t differ = 0;
        for (int b = 1; b < P; b++)
            differ |= theirs[b - 1] ^ p->start[b];
        if (PGC_UNLIKELY(differ))
            return rs_bounds_differ(t, p, j, theirs);
    }
    return PGC_OK;
}

/* Member r exposed its buffers in this collective (after a wait on r in
 * this collective). */
static inline int exposes(const pgc_team *t, int r)
{
    return pgc_desc_path(pgc_desc_get(t, r)) == PGC_PATH_CMA;
}

/* Where a block owner finds member r's contribution to the piece of `n`
 * elements at element `pos` of the vector: *x = r's staging at byte `soff`,
 * or, when r exposed its buffers, r's send buffer itself where it lies in a
 * shared region (pgc_coll_in_place), else a copy pulled from it into
 * `*pull` (which advances past it). */
static int contribution(pgc_team *t, const rplan *p, int r, size_t soff, size_t pos, size_t n, char **pull,
                        const char **x)
{
    if (!exposes(t, r)) {
        *x = (const char *)pgc_staging_of(t, r) + soff;
        return PGC_OK;
    }
    uint64_t src = atomic_load_explicit(&pgc_ctl_of(t, r)->addr, memory_order_relaxed) + pos * p->esz;
    if ((*x = pgc_coll_in_place(t, r, src, n * p->esz)))
        return PGC_OK;
    if (!*pull) { /* cannot happen: single copy works only with a pull buffer (team.c) */
        pgc_set_error(&t->err, PGC_ENOMEM, r, 0, "%s: local rank %d exposed its buffer but this rank has no "
                      "single-copy pull buffer", pgc_coll_name(p->coll), r);
        pgc_team_abort(t, PGC_ENOMEM, t->err.msg);
        return PGC_ENOMEM;
    }
    int rc = pgc_coll_cma(t, r, 0, *pull, src, n * p->esz);
    if (rc)
        return rc;
    *x = *pull;
    *pull += n * p->esz;
    return PGC_OK;
}

/* The fold goes through the vector in blocks of this many bytes, each
 * combined over all members before the next: the partial result stays in
 * L1 across the chain instead of making P-1 passes over L2 (np=8 on 2
 * cores, 1 MiB Allreduce: 5-15% faster with 2-8 KiB blocks, in-job). */
#define FOLD_BLOCK 4096

/* dst[0, n) = x_0 op x_1 op ... op x_last, in rank order, where x_r is the n
 * elements at byte `off` of member r's shared area (`inline_`: its inline
 * slot of this collective; else its staging area, or, if r exposed its
 * buffers, its send buffer at element `pos`, pulled into t->pull_buf); our
 * own x is `self` if not NULL. Waits for every member's progress `step`
 * before reading any. dst never aliases a source: it is a receive buffer or
 * a result slot. */
static int fold(pgc_team *t, const rplan *p, char *dst, size_t n, int last, uint32_t step,
                int inline_, size_t off, size_t pos, const char *self)
{
    if (n == 0)
        return PGC_OK;
    const char *x[last + 1];
    char *pull = t->pull_buf;
    for (int r = 0; r <= last; r++) {
        int rc = wait_member(t, r, step);
        if (rc)
            return rc;
        if (r == t->rank && self)
            x[r] = self;
        else if (inline_)
            x[r] = (const char *)pgc_inline_of(t, r, t->seq) + off;
        else if ((rc = contribution(t, p, r, off, pos, n, &pull, &x[r])))
            return rc;
    }
    const size_t esz = p->esz;
    if (last == 0) {
        pgc_copy(t, dst, x[0], n * esz);
        return PGC_OK;
    }
    const size_t block = FOLD_BLOCK / esz; /* elements; esz <= 32 */
    for (size_t i = 0; i < n; i += block) {
        size_t m = n - i < block ? n - i : block, b = i * esz;
        pgc_reduce_3(t->simd, p->op, p->dt, dst + b, x[0] + b, x[1] + b, m); /* dst = x0 op x1 */
        for (int r = 2; r <= last; r++)
            pgc_reduce_into(t->simd, p->op, p->dt, dst + b, x[r] + b, m);    /* dst = dst op x_r */
    }
    return PGC_OK;
}

/* ---- inline ---- */

/* Start: our input into our inline slot, step 1. */
int pgc_reduce_inline_start(pgc_team *t, const rplan *p)
{
    /* Our inline slot was last used by seq - PGC_RUNAHEAD: its readers must
     * be done before we overwrite it. */
    int rc = pgc_wait_peers_done(t, PGC_RUNAHEAD);
    if (rc)
        return rc;
    memcpy(pgc_inline_of(t, t->rank, t->seq), p->in, p->total * p->esz);
    rs_put_bounds(t, p);
    pgc_post_step(t, 1);
    return p->kind == RK_RSCATTER ? rs_check_bounds(t, p) : PGC_OK;
}

/* Work: fold the slots of the members this member needs into its receive
 * buffer. */
int pgc_reduce_inline_work(pgc_team *t, const rplan *p)
{
    int me = t->rank, P = t->nranks;
    size_t off = 0, n = p->total; /* elements of the vector this member computes */
    int last = P - 1;             /* ... reduced over members 0..last */
    switch (p->kind) {
    case RK_REDUCE:
        if (me != p->root)
            return PGC_OK; /* non-roots only publish */
        break;
    case RK_ALLREDUCE:
        break;
    case RK_RSCATTER:
        off = p->start[me];
        n = block_len(p, me);
        break;
    case RK_SCAN:
        last = me;
        break;
    case RK_EXSCAN:
        if ((last = me - 1) < 0)
            return PGC_OK; /* member 0's recvbuf is left untouched */
        break;
    }
    /* In place our input may be (part of) recvbuf, which the fold
     * overwrites: read our contribution from the slot copy instead. */
    return fold(t, p, p->out, n, last, 1, 1, off * p->esz, off, p->inplace ? NULL : p->in + off * p->esz);
}

/* ---- partitioned copy-in/copy-out ---- */

/* A copy into our staging or out of a peer's, timed (pgc_xfer) when the
 * path choice depends on it. */
static inline void stage_copy(pgc_team *t, const rplan *p, pgc_xfer k, void *dst, const void *src, size_t n)
{
    if (p->measure)
        pgc_timed_copy(t, k, dst, src, n);
    else
        pgc_copy_as(t, k, dst, src, n);
}

/* Start: our choice (staged or exposed) in our descriptor, and the
 * addresses peers pull from if we expose. */
int pgc_reduce_cico_start(pgc_team *t, const rplan *p)
{
    /* Windows 0 and 1 write both halves: the previous collective's readers of
     * our staging must be done. */
    int rc = pgc_wait_peers_done(t, 1);
    if (rc)
        return rc;
    /* All published by our first post (release). addr is read only in
     * collectives where we expose, which we leave after every reader is
     * done. */
    if (p->expose) {
        pgc_ctl *ctl = pgc_ctl_of(t, t->rank);
        atomic_store_explicit(&ctl->addr, (uint64_t)(uintptr_t)p->in, memory_order_relaxed);
        atomic_store_explicit(&ctl->out_addr, (uint64_t)(uintptr_t)p->out, memory_order_relaxed);
    }
    pgc_desc_put(t, p->expose ? PGC_PATH_CMA : PGC_PATH_CICO, p->total);
    rs_put_bounds(t, p);
    return PGC_OK;
}

/* Work: the windows, steps a-f of reduce.h's header comment. */
int pgc_reduce_cico_work(pgc_team *t, const rplan *p)
{
    const int me = t->rank, P = t->nranks;
    const size_t esz = p->esz, slot = p->slot, half = t->hdr->staging_stride / 2;
    char *const mine = pgc_staging_of(t, me);
    const rkind k = p->kind;
    /* Which result pieces this member copies out in step e, and from where:
     * Allreduce / Reduce root: owner j's slot P+j; Scan/Exscan: owner j's
     * slot P+me (Exscan member 0 receives nothing). */
    const int receives = k == RK_ALLREDUCE || (k == RK_REDUCE && me == p->root) || k == RK_SCAN ||
                         (k == RK_EXSCAN && me > 0);
    const int recv_slot_is_mine = k == RK_SCAN || k == RK_EXSCAN;
    int rc = PGC_OK;
    /* Allreduce: an exposing owner folds into its receive buffer (peers
     * pull from there) instead of its result slot. */
    const int result_in_recvbuf = k == RK_ALLREDUCE && p->expose;

    for (uint32_t w = 0; w < p->nwin; w++) {
        const size_t wpos = (size_t)w * p->elems; /* element offset within each block */
        char *const hbase = mine + (size_t)(w & 1) * half;
        const size_t hoff = (size_t)(w & 1) * half; /* same offset in every member's area */

        /* a. Half w&1 last held window w-2: every peer acknowledged it (ack
         *    w-1) before we overwrite contributions or results there. */
        if (w >= 2 && (rc = pgc_wait_ack_all(t, w - 1)))
            return rc;

        /* b. Stage our pieces (unless we expose them). In place we stage
         *    our own block's piece too: step c (or e) may overwrite it in
         *    recvbuf before we read it. */
        if (p->contributes && !p->expose)
            for (int j = 0; j < P; j++) {
                size_t m = piece_len(p, j, wpos);
                if (m && (j != me || p->inplace))
                    stage_copy(t, p, p->stage, hbase + (size_t)j * slot,
                               p->in + (p->start[j] + wpos) * esz, m * esz);
            }
        /* release: the staged pieces are visible to whoever sees 2w+1 */
        pgc_post_step(t, 2 * w + 1);
        if (w == 0 && k == RK_RSCATTER && (rc = rs_check_bounds(t, p)))
            return rc;

        /* c. Fold our block's piece: x_r is slot `me` of member r's half. */
        const size_t m = piece_len(p, me, wpos);
        const size_t xoff = hoff + (size_t)me * slot;
        const char *self = p->inplace ? NULL : p->in + (p->start[me] + wpos) * esz;
        char *const own_out = p->out + (k == RK_RSCATTER ? wpos : p->start[me] + wpos) * esz;
        char *const own_result = hbase + (size_t)(P + me) * slot;
        const size_t pos = p->start[me] + wpos; /* the piece's first element in the vector */
        switch (k) {
        case RK_ALLREDUCE:
            /* Into our result slot (peers copy it), then into recvbuf below;
             * or, exposing, straight into recvbuf (peers pull it). */
            rc = fold(t, p, result_in_recvbuf ? own_out : own_result, m, P - 1, 2 * w + 1, 0, xoff, pos, self);
            break;
        case RK_REDUCE:
            rc = fold(t, p, me == p->root ? own_out : own_result, m, P - 1, 2 * w + 1, 0, xoff, pos, self);
            break;
        case RK_RSCATTER:
            rc = fold(t, p, own_out, m, P - 1, 2 * w + 1, 0, xoff, pos, self);
            break;
        case RK_SCAN:
        case RK_EXSCAN: {
            /* Prefix chain S_i = x_0 op ... op x_i, i = 0..P-1 (Exscan:
             * ..P-2), each computed from the previous one; S_i is the
             * result of member d = i (Exscan: i + 1): into our recvbuf if
             * d is us, else into slot P+d of our half. */
            const int shift = k == RK_EXSCAN;
            const char *prev = NULL;
            if (m == 0)
                break;
            for (int i = 0; i + shift < P; i++) {
                int d = i + shift;
                char *dst = d == me ? own_out : hbase + (size_t)(P + d) * slot;
                if ((rc = wait_member(t, i, 2 * w + 1)))
                    return rc;
                const char *x = self;
                char *pull = t->pull_buf; /* one piece at a time */
                if (!(i == me && self) && (rc = contribution(t, p, i, xoff, pos, m, &pull, &x)))
                    return rc;
                if (i == 0)
                    pgc_copy(t, dst, x, m * esz);
                else
                    pgc_reduce_3(t->simd, p->op, p->dt, dst, prev, x, m); /* dst != prev, dst != x */
                prev = dst;
            }
            break;
        }
        }
        if (rc)
            return rc;

        /* d. Our results of window w are in place. */
        pgc_post_step(t, 2 * w + 2);

        /* e. Copy out the result pieces we receive. Our own block first (no
         *    wait), then the owners after us, round robin; an Allreduce
         *    owner that exposed its buffers has its piece in its recvbuf. */
        if (k == RK_ALLREDUCE && m && !result_in_recvbuf)
            pgc_copy(t, own_out, own_result, m * esz);
        if (receives)
            for (int s = 1; s < P; s++) {
                int j = (me + s) % P;
                size_t mj = piece_len(p, j, wpos);
                if (!mj)
                    continue;
                if ((rc = pgc_wait_step(t, j, 2 * w + 2)))
                    return rc;
                char *dst = p->out + (p->start[j] + wpos) * esz;
                if (k == RK_ALLREDUCE && exposes(t, j)) {
                    uint64_t src = atomic_load_explicit(&pgc_ctl_of(t, j)->out_addr, memory_order_relaxed);
                    if ((rc = pgc_coll_cma(t, j, 0, dst, src + (p->start[j] + wpos) * esz, mj * esz)))
                        return rc;
                    continue;
                }
                const char *src = (const char *)pgc_staging_of(t, j) + hoff +
                                  (size_t)(P + (recv_slot_is_mine ? me : j)) * slot;
                stage_copy(t, p, PGC_XFER_COPYOUT, dst, src, mj * esz);
            }

        /* f. We no longer read window w anywhere: its half may be reused. */
        pgc_post_ack(t, w + 1);
    }
    return PGC_OK;
}

/* Ack. Having exposed our buffers, we return only once every member read
 * everything of ours it needs (its ack of the last window). */
int pgc_reduce_cico_ack(pgc_team *t, const rplan *p)
{
    return p->expose ? pgc_wait_ack_all(t, p->nwin) : PGC_OK;
}
