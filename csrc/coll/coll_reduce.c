/* coll_reduce.c - Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan.
 *
 * Deterministic: every element is combined in rank order,
 *     acc = x0; acc = acc op x1; ...; acc = acc op x(P-1)
 * (prefixes stop early for Scan/Exscan), by exactly one member, whatever the
 * timing. Allreduce results are therefore bit-identical on all members and
 * across runs, even for floating point.
 *
 *   inline  (whole vector <= inline_max and fits an inline slot, and no
 *           member folds more than PGC_INLINE_FOLD_MAX bytes) every member
 *           copies its input into its inline slot of this collective
 *           and posts step 1; each member that has a result waits for the
 *           members it needs and folds their slots in rank order into its
 *           receive buffer (Reduce: only the root; Reduce_scatter: its own
 *           block; Scan: members 0..rank; Exscan: 0..rank-1).
 *           Reduce_scatter's members also compare their block bounds
 *           first, on both paths (rs_check_bounds).
 *   cico    (everything larger) partitioned copy-in/copy-out. The vector is
 *           split into P blocks (Reduce_scatter: the recvcounts blocks;
 *           otherwise near-equal blocks with 64-byte aligned boundaries) and
 *           member j owns block j: it combines everybody's contribution to
 *           it, so every member reduces 1/P of the bytes. The blocks are
 *           processed in windows of E elements through the staging areas.
 *           Each member's staging area is two halves (window parity: double
 *           buffering; on oversubscribed teams a vector whose blocks fit
 *           one window of the whole area takes that single window, the
 *           whole area being its "half"); a half is 2P slots of `slot` bytes:
 *             [0, P)   slot j: this member's piece of block j for the window
 *             [P, 2P)  results: Allreduce/Reduce slot P+j holds owner j's
 *                      reduced piece (the Reduce root folds its own block
 *                      straight into recvbuf; Reduce_scatter owners always
 *                      do); Scan/Exscan: owner j leaves member i's prefix
 *                      of block j in slot P+i of its own half.
 *           Per window w, member q:
 *             a. before overwriting half w&1: wait every peer's ack >= w-1
 *                (they are done with window w-2); once at the start,
 *                wait until every peer is done with the previous collective
 *             b. stage its pieces into slots [0, P); post progress 2w+1
 *             c. wait for the members' progress 2w+1 and fold block q's
 *                piece in rank order into its destination
 *             d. post progress 2w+2
 *             e. wait for the owners' progress 2w+2 and copy the result
 *                pieces it receives into its receive buffer
 *             f. post ack w+1: it no longer reads window w of anybody.
 *           Both progress steps of a window and the ack are steps of this
 *           collective's seq (team.h), so nothing is ever reset.
 *   cma     single copy, a member's own choice per collective, within the
 *           cico pipeline (same blocks, windows and steps). A member that is
 *           not in place may expose its buffers instead of staging: owners
 *           pull its pieces of their blocks from its send buffer
 *           (process_vm_readv into their private pull buffer, then fold),
 *           and in Allreduce it folds its own block straight into its
 *           receive buffer, from which the others pull it. It publishes
 *           its choice in its descriptor (pgc_desc_put) and the two
 *           addresses before its first post; readers follow each member's
 *           choice, so members need not agree. An exposing member returns
 *           only after every member acknowledged the last window: nobody
 *           reads its buffers any more. The choice is pgc_choose_member_path's
 *           (coll.h): by size from cfg.cma_min[coll] (never by default: on a
 *           quiet machine staging wins, its copies stay in cache), and for
 *           the collectives in cfg.adapt_mask
 *           while the team's measured costs say single copy is clearly
 *           cheaper: when the cores stop sharing a cache well the stores
 *           into staging, whose lines the readers hold, slow down several
 *           fold, while single copy of a buffer its owner did not change
 *           keeps its speed.
 *
 * Copies in the pipeline use pgc_copy (coll.h, copy.h), not memcpy; copies
 * and kernels take the team's vector loops (t->simd). Non-temporal stores
 * into the receive buffer measured slower still. A member writes its
 * staging with streaming stores only while the team measures them much
 * cheaper than ordinary ones (pgc_stage_xfer: slow periods; on a quiet
 * machine the owners would then read from memory: bench/handoff.c tells
 * the two apart).
 *
 * MPI_IN_PLACE (sendbuf == NULL): the input is in recvbuf. Every member then
 * reads its own contribution from its shared copy (inline slot, staging slot)
 * and never from recvbuf once it may have been overwritten; it never
 * exposes its buffers. Without in place, a member reads its own
 * contribution straight from sendbuf (it does not stage the piece of its
 * own block, saving a copy).
 *
 * A member returns as soon as its own result is complete: peers read only
 * shared memory (never our private buffers, unless we exposed them: then we
 * return after every member's ack of the last window), and the shared areas
 * are protected by the next collective's wait for the peers' DONE of this
 * one (staging: previous seq; inline slots: seq - PGC_RUNAHEAD, their
 * previous user). */
#include <string.h>

#include "coll/coll.h"

typedef enum { RK_REDUCE, RK_ALLREDUCE, RK_RSCATTER, RK_SCAN, RK_EXSCAN } rkind;

/* Everything one reduction needs; identical on all members except the
 * buffers. */
typedef struct {
    rkind kind;
    pgc_coll coll;       /* statistics and messages */
    pgc_op op;
    pgc_dtype dt;
    size_t esz;          /* element size */
    int root;            /* Reduce */
    int inplace;         /* sendbuf == NULL */
    int contributes;     /* someone reads our input (not so for the last member of an Exscan) */
    const char *in;      /* this member's input vector (sendbuf, or recvbuf in place) */
    char *out;           /* recvbuf */
    size_t total;        /* elements of the whole vector */
    const size_t *start; /* [P + 1]: block j is elements [start[j], start[j+1]) */
    pgc_path path;       /* INLINE or CICO (team-wide) */
    int expose;          /* cico: this member exposes its buffers (single copy) */
    int measure;         /* cico: time the staging and copy-out (the choice depends on them) */
    pgc_xfer stage;      /* cico, measured: how we write our staging (pgc_stage_xfer) */
    size_t slot;         /* cico: slot bytes */
    size_t elems;        /* cico: E, elements of a block per window */
    uint32_t nwin;       /* cico: windows */
} rplan;

static inline size_t block_len(const rplan *p, int j)
{
    return p->start[j + 1] - p->start[j];
}

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
static int reduce_inline_start(pgc_team *t, const rplan *p)
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
static int reduce_inline_work(pgc_team *t, const rplan *p)
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
static int reduce_cico_start(pgc_team *t, const rplan *p)
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

/* Work: the windows, steps a-f of the header comment. */
static int reduce_cico_work(pgc_team *t, const rplan *p)
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
static int reduce_cico_ack(pgc_team *t, const rplan *p)
{
    return p->expose ? pgc_wait_ack_all(t, p->nwin) : PGC_OK;
}

/* ---- check and plan (before the collective begins or data moves) ---- */

static size_t gcd(size_t a, size_t b)
{
    while (b) {
        size_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Check the (op, dtype) pair and the element size; *esz on success. */
static int reduce_check_type(pgc_team *t, pgc_coll coll, pgc_op op, pgc_dtype dt, size_t *esz)
{
    const char *name = pgc_coll_name(coll);
    if (!(*esz = pgc_dtype_size(dt)))
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: invalid dtype %d", name, (int)dt);
    if (!pgc_op_valid(op, dt))
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: op %s (%d) is not defined for dtype %s", name,
                             pgc_op_name(op), (int)op, pgc_dtype_name(dt));
    return PGC_OK;
}

static int reduce_check_count(pgc_team *t, pgc_coll coll, size_t count, size_t esz, pgc_dtype dt)
{
    if (count > SIZE_MAX / esz)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: %zu elements of %s overflow the address space",
                             pgc_coll_name(coll), count, pgc_dtype_name(dt));
    return PGC_OK;
}

/* Near-equal blocks for everything but Reduce_scatter, boundaries rounded
 * down to 64-byte multiples when the element size divides 64. */
static void even_blocks(size_t *start, int P, size_t count, size_t esz)
{
    size_t align = PGC_CACHELINE % esz == 0 ? PGC_CACHELINE / esz : 1;
    for (int j = 0; j < P; j++)
        start[j] = (size_t)((unsigned __int128)count * (unsigned)j / (unsigned)P) / align * align;
    start[P] = count;
}

/* Plan: path, slot and window count; identical on every member. */
static int reduce_plan(pgc_team *t, rplan *p)
{
    int P = t->nranks;
    size_t bytes = p->total * p->esz;
    p->path = pgc_choose_path(t, p->coll, bytes, 0);
    /* inline, a member folds P inputs (Reduce_scatter: of its block only) */
    size_t folded = p->kind == RK_RSCATTER ? bytes : bytes * (size_t)P;
    if (p->path == PGC_PATH_INLINE && folded > PGC_INLINE_FOLD_MAX)
        p->path = PGC_PATH_CICO;
    /* Reduce_scatter's block bounds follow the payload in the inline slot */
    if (p->path == PGC_PATH_INLINE && p->kind == RK_RSCATTER &&
        PGC_ALIGN_UP(bytes, sizeof(size_t)) + (size_t)(P - 1) * sizeof(size_t) > t->hdr->inline_slot)
        p->path = PGC_PATH_CICO;
    if (p->path == PGC_PATH_CMA)
        p->path = PGC_PATH_CICO; /* the pipeline, each member exposing or not (run) */
    if (p->path != PGC_PATH_CICO || P == 1)
        return PGC_OK;

    size_t unit = PGC_CACHELINE / gcd(PGC_CACHELINE, p->esz) * p->esz; /* lcm(64, esz) */
    size_t maxblock = 0;
    for (int j = 0; j < P; j++)
        if (block_len(p, j) > maxblock)
            maxblock = block_len(p, j);
    /* The largest slot the staging area allows (2 windows x 2P slots): on
     * the development machine 128 KiB slots (P = 2, 1 MiB staging) beat
     * 64 KiB ones by a quarter for a 16 MiB Allreduce, and 256 KiB slots
     * (2 MiB staging) beat 128 KiB ones for Reduce_scatter_block of 1-4 MiB
     * (fewer windows, fewer synchronisations). Oversubscribed teams
     * (cfg.reduce_one_window) take a single window over the whole area
     * (2P slots, no double buffering) when the blocks fit it: each window
     * costs every member two waits for all the others, paid there in
     * context switches (np=8 on 2 cores, 1 MiB Allreduce: 6-10% faster with
     * one window than two). With a CPU each, the second window's overlap
     * wins (np=2, 1 MiB Reduce_scatter_block: 15-25% slower with one). */
    size_t slot = t->hdr->staging_stride / (2 * (size_t)P) / unit * unit;
    if (!t->cfg.reduce_one_window || maxblock * p->esz > slot)
        slot = t->hdr->staging_stride / (4 * (size_t)P) / unit * unit;
    if (slot < p->esz)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0,
                             "%s: the staging area (%zu bytes per member) is too small "
                             "for %d members and %s elements (PGASCOL_STAGING_BYTES)",
                             pgc_coll_name(p->coll), (size_t)t->hdr->staging_stride, P,
                             pgc_dtype_name(p->dt));
    p->slot = slot;
    p->elems = slot / p->esz;
    size_t nwin = (maxblock + p->elems - 1) / p->elems;
    /* progress steps go up to 2 * nwin; DONE must stay above them */
    if (nwin >= (PGC_STEP_DONE - 2) / 2)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: %zu elements need too many pipeline windows",
                             pgc_coll_name(p->coll), p->total);
    p->nwin = (uint32_t)nwin;
    return PGC_OK;
}

/* Begin the collective, choose whether to expose our buffers (after begin: a
 * probe of the other path counts sequence numbers), count the path, then
 * start, work, ack and end. */
static int reduce_run(pgc_team *t, rplan *p)
{
    /* the shape: the count and the root of a Reduce (Reduce_scatter's
     * block bounds: rs_check_bounds) */
    uint64_t shape = pgc_sig_shape(p->total, p->kind == RK_REDUCE ? (uint64_t)p->root : 0, (uint64_t)t->nranks);
    t->sig_elems = p->total;
    int rc = pgc_coll_begin(t, p->coll, PGC_SIG_REDUCTION(p->dt, p->op, shape));
    if (rc)
        return rc;
    p->contributes = !(p->kind == RK_EXSCAN && t->rank == t->nranks - 1);
    size_t bytes = p->total * p->esz;
    /* what the peers would read: our input, and an Allreduce's result */
    int shared = pgc_region_holds(t, p->in, bytes) && (p->kind != RK_ALLREDUCE || pgc_region_holds(t, p->out, bytes));
    p->expose = p->path == PGC_PATH_CICO && t->nranks > 1 && p->total && !p->inplace && p->contributes &&
                pgc_choose_member_path(t, p->coll, bytes, shared) == PGC_PATH_CMA;
    p->measure = pgc_adapts(t, p->coll, bytes);
    /* The measured choice of stores (cfg.stream 1) only where they are
     * measured; a fixed one (0, 2) everywhere. */
    p->stage = p->contributes && !p->expose && (p->measure || t->cfg.stream != 1) ? pgc_stage_xfer(t)
                                                                                  : PGC_XFER_STAGE;
    pgc_count(t, p->coll, p->expose ? PGC_PATH_CMA : p->path);
    if (p->total == 0)
        ; /* nothing to move */
    else if (t->nranks == 1) {
        /* Reduce_scatter's single block is the whole vector, at the start of
         * recvbuf; Exscan leaves member 0's recvbuf alone. */
        if (!p->inplace && p->kind != RK_EXSCAN)
            memcpy(p->out, p->in, p->total * p->esz);
    } else if (p->path == PGC_PATH_INLINE) {
        rc = reduce_inline_start(t, p);
        if (!rc)
            rc = reduce_inline_work(t, p);
    } else {
        rc = reduce_cico_start(t, p);
        if (!rc)
            rc = reduce_cico_work(t, p);
        if (!rc)
            rc = reduce_cico_ack(t, p);
    }
    return pgc_coll_end(t, rc);
}

/* Check and plan the collectives with one count (all but Reduce_scatter),
 * then run them (reduce_run). */
static int reduce_common(pgc_team *t, rkind k, pgc_coll coll, const void *sendbuf, void *recvbuf, size_t count,
                         pgc_dtype dt, pgc_op op, int root)
{
    int P = t->nranks;
    size_t esz;
    if (k == RK_REDUCE && (root < 0 || root >= P))
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "Reduce: root %d out of range [0, %d)", root, P);
    int rc = reduce_check_type(t, coll, op, dt, &esz);
    if (!rc)
        rc = reduce_check_count(t, coll, count, esz, dt);
    if (rc)
        return rc;
    /* The same buffer for both is MPI_IN_PLACE in effect: taken as such,
     * so the kernels never see aliased operands. */
    if (sendbuf == recvbuf)
        sendbuf = NULL;
    const char *in = sendbuf ? (const char *)sendbuf : (const char *)recvbuf;
    /* recvbuf is only significant at the root of a Reduce */
    int writes = !(k == RK_REDUCE && t->rank != root) && !(k == RK_EXSCAN && t->rank == 0);
    if (count && (!in || (writes && !recvbuf)))
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: NULL %s buffer for %zu elements", pgc_coll_name(coll),
                             in ? "receive" : "send", count);

    size_t start[P + 1];
    even_blocks(start, P, count, esz);
    rplan p = {.kind = k, .coll = coll, .op = op, .dt = dt, .esz = esz, .root = root, .inplace = sendbuf == NULL,
               .in = in, .out = recvbuf, .total = count, .start = start};
    if ((rc = reduce_plan(t, &p)))
        return rc;
    return reduce_run(t, &p);
}

/* ---- the collectives ---- */

int pgc_reduce(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count, pgc_dtype dtype, pgc_op op, int root)
{
    return reduce_common(t, RK_REDUCE, PGC_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root);
}

int pgc_allreduce(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count, pgc_dtype dtype, pgc_op op)
{
    return reduce_common(t, RK_ALLREDUCE, PGC_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0);
}

int pgc_scan(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count, pgc_dtype dtype, pgc_op op)
{
    return reduce_common(t, RK_SCAN, PGC_COLL_SCAN, sendbuf, recvbuf, count, dtype, op, 0);
}

int pgc_exscan(pgc_team *t, const void *sendbuf, void *recvbuf, size_t count, pgc_dtype dtype, pgc_op op)
{
    return reduce_common(t, RK_EXSCAN, PGC_COLL_EXSCAN, sendbuf, recvbuf, count, dtype, op, 0);
}

int pgc_reduce_scatter(pgc_team *t, pgc_coll coll, const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                       pgc_dtype dtype, pgc_op op)
{
    int P = t->nranks;
    size_t esz;
    if (coll != PGC_COLL_REDUCE_SCATTER && coll != PGC_COLL_REDUCE_SCATTER_BLOCK)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "Reduce_scatter: bad collective id %d", (int)coll);
    const char *name = pgc_coll_name(coll);
    int rc = reduce_check_type(t, coll, op, dtype, &esz);
    if (rc)
        return rc;
    if (!recvcounts)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: NULL recvcounts", name);
    size_t start[P + 1];
    start[0] = 0;
    for (int j = 0; j < P; j++) {
        if (recvcounts[j] > SIZE_MAX - start[j])
            return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: the recvcounts overflow", name);
        start[j + 1] = start[j] + recvcounts[j];
    }
    size_t total = start[P];
    if ((rc = reduce_check_count(t, coll, total, esz, dtype)))
        return rc;
    /* The same buffer for both is MPI_IN_PLACE in effect: taken as such,
     * so the kernels never see aliased operands. */
    if (sendbuf == recvbuf)
        sendbuf = NULL;
    const char *in = sendbuf ? (const char *)sendbuf : (const char *)recvbuf;
    if (total && !in)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: NULL send buffer for %zu elements", name, total);
    if (recvcounts[t->rank] && !recvbuf)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: NULL receive buffer for %zu elements", name,
                             recvcounts[t->rank]);
    rplan p = {.kind = RK_RSCATTER, .coll = coll, .op = op, .dt = dtype, .esz = esz, .root = 0,
               .inplace = sendbuf == NULL, .in = in, .out = recvbuf, .total = total, .start = start};
    if ((rc = reduce_plan(t, &p)))
        return rc;
    return reduce_run(t, &p);
}
