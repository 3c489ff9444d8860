/* coll_gather.c - Gather(v), Scatter(v), Allgather(v), and the exchange
 * machinery they share with Alltoall(v) (coll_alltoall.c).
 *
 * Protocol (this file and coll_alltoall.c). Every member that publishes data
 * posts, in this order:
 *   seq  DESC (1)      its descriptor (path and length), plus whatever the path
 *                      needs before anyone reads: inline payload, buffer
 *                      address (ctl addr), per-member table (tail of staging)
 *   seq  ROUND + k     copy-in/copy-out: chunk k of every stream it produces
 *                      is staged
 *   ack  k + 1         copy-in/copy-out: chunk k of every stream it consumes
 *                      has been copied out
 *   ack  FIN           it no longer touches any peer's memory in this op;
 *                      a member that exposed its buffer (cma) waits for the
 *                      FIN of its readers before returning
 *   seq  DONE          pgc_coll_end
 *
 * Paths:
 *   Gather(v)     each sender decides by its own block (pgc_choose_member_path)
 *                 and publishes it; the root reacts per sender:
 *                   inline  block in the sender's inline slot, root copies it
 *                   cico    block streamed through the sender's staging ring
 *                   cma     push: the sender writes its block straight into
 *                           the root's receive buffer at the displacement the
 *                           root published in its table, then posts DESC; the
 *                           root returns once every sender posted DESC
 *   Scatter(v)    the root decides one path for the op (inline when all
 *                 blocks fit its inline slot together, else by the largest
 *                 block) and publishes where each member's block is:
 *                   inline  blocks packed in the root's inline slot, after
 *                           their end offsets (the root runs ahead)
 *                   cico/cma (length, offset) per member in the root's table
 *                   cico    one ring window per receiver in the root's staging
 *                   cma     pull: each receiver reads its block from the
 *                           root's send buffer; the root waits for FIN
 *   Allgather(v)  each member's path from the total (every member knows all
 *                 counts; the run-time choice, pgc_choose_member_path, may
 *                 still send some members one way and others the other):
 *                   inline  each block in its owner's inline slot
 *                   cico    each member streams its block through its ring,
 *                           every other member consumes the ring
 *                   cma     each member publishes its block's address, the
 *                           others pull it in rotated order (r reads r+1,
 *                           r+2, ...); owners wait for FIN
 * Readers always follow the path the publisher announced and check the
 * length against what they expect: a mismatch aborts the team (so nobody
 * hangs) and fails the detecting member with PGC_EINVAL.
 *
 * Copy-in/copy-out engine (pgc_xchg_run): ONE chunked-ring mechanism for all
 * these operations. A member's staging area is [ring | table]; the ring is
 * split into `nwin` windows of `slots` chunks. A stream is the bytes one
 * producer sends through one of its windows; its consumer is one member (or
 * every other member). Everyone runs rounds k = 0, 1, ...: stage chunk k of
 * each own stream (slot k % slots, reusable once the consumers acknowledged
 * chunk k - slots), post seq ROUND + k, copy chunk k of the member's own
 * block (src -> dst: useful work while the peers stage chunk k, and the
 * source is still in cache), copy out chunk k of each incoming stream, post
 * ack k + 1; both copies into the receive buffer with streaming stores when
 * it is cold (a block of cfg.recv_stream_min bytes, or PGC_RECV_COLD).
 * Producing round k depends only on rounds <= k - slots
 * and consuming it only on round k being produced, so no cycle can form
 * however many streams cross (proof: the smallest round anyone is stuck in
 * would have to wait for an earlier one).
 *
 * Cross-op safety of the published words:
 *   - the descriptor (path << 56 | length) lives in pgc_desc_of (coll.h):
 *     rotating with the op number like the inline slots, because publishers
 *     on the inline and cico paths return without waiting for their readers;
 *     it is written only after pgc_wait_peers_done(t, 1 or PGC_RUNAHEAD);
 *   - ctl addr is read only on the cma path, whose owner waits for its
 *     readers (FIN, or the pushers' DESC for Gather) before returning;
 *   - the table and the ring (staging) are written only after
 *     pgc_wait_peers_done(t, 1). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/cma.h"
#include "coll/xchg.h"


static inline size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* The table: one pgc_blk per member at the tail of a member's staging, so
 * that the ring starts page-aligned (memcpy into slots at a page offset of
 * 64 measured ~30% slower than into page-aligned ones). */
size_t pgc_xchg_table_bytes(const pgc_team *t)
{
    return PGC_ALIGN_UP((size_t)t->nranks * sizeof(pgc_blk), PGC_CACHELINE);
}

pgc_blk *pgc_xchg_table(const pgc_team *t, int r)
{
    return (pgc_blk *)((char *)pgc_staging_of(t, r) + t->hdr->staging_stride - pgc_xchg_table_bytes(t));
}

/* The inline slot of a member sending a block to each member (Scatter's
 * root, Alltoall): the end offset of each member's block within the packed
 * data (uint16_t: a slot holds at most PGC_INLINE_SLOT_MAX bytes), then the
 * blocks in member order, the sender's own left out. The slot rotates with
 * the op and carries its own table, so the sender writes it after
 * pgc_wait_peers_done(t, PGC_RUNAHEAD), not 1 as for the table in staging:
 * a root of back-to-back small Scatters runs ahead of its readers as a
 * Bcast root does (np=4 on 2 cores, 8 B: 8-14 us a call before, 1.6-2.8 after). */
_Static_assert(PGC_INLINE_SLOT_MAX <= UINT16_MAX, "inline block offsets are uint16_t");

size_t pgc_xchg_inline_bytes(const pgc_team *t, size_t packed)
{
    return (size_t)t->nranks * sizeof(uint16_t) + packed;
}

void pgc_xchg_pack_inline(pgc_team *t, const char *src, const size_t *len, const size_t *displs)
{
    uint16_t *end = pgc_inline_of(t, t->rank, t->op);
    char *data = (char *)end + pgc_xchg_inline_bytes(t, 0);
    size_t packed = 0;
    for (int q = 0; q < t->nranks; q++) {
        if (q != t->rank && len[q]) {
            memcpy(data + packed, src + displs[q], len[q]);
            packed += len[q];
        }
        end[q] = (uint16_t)packed;
    }
}

/* This member's block from `sender`, which published on `path`: (length,
 * offset) in its inline slot (the packed data starts at *packed) or in its
 * table (offset into its send buffer). */
pgc_blk pgc_xchg_block(const pgc_team *t, int sender, pgc_path path, const char **packed)
{
    const uint16_t *end = pgc_inline_of(t, sender, t->op);
    *packed = (const char *)end + pgc_xchg_inline_bytes(t, 0);
    if (path != PGC_PATH_INLINE)
        return pgc_xchg_table(t, sender)[t->rank];
    uint64_t start = t->rank ? end[t->rank - 1] : 0;
    return (pgc_blk){end[t->rank] - start, start};
}

/* Producer p's window for consumer q when each consumer has its own window
 * (Scatter, Alltoall): q's distance after p, 0 .. P-2. */
uint32_t pgc_xchg_win(const pgc_team *t, int producer, int consumer)
{
    return (uint32_t)((consumer - producer - 1 + t->nranks) % t->nranks);
}

/* Fail this member and abort the team: peers blocked on us get PGC_EABORTED
 * instead of waiting for the timeout. */
int pgc_xchg_fail(pgc_team *t, int code, int peer, const char *fmt, ...)
{
    char msg[sizeof t->err.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pgc_set_error(&t->err, code, peer, 0, "%s", msg);
    if (t->nranks > 1)
        pgc_team_abort(t, code, t->err.msg);
    return code;
}

/* Ring geometry for `nwin` windows before the table. Depends on team-wide
 * values only, so every member computes the same; computed before the op
 * begins, so a failure leaves the op numbers in step. A window keeps at
 * least two slots (double buffering): with many windows the chunk shrinks. */
int pgc_xchg_ring(pgc_team *t, pgc_ring *g, uint32_t nwin, const char *name)
{
    size_t stride = t->hdr->staging_stride, table = pgc_xchg_table_bytes(t);
    size_t win = table < stride ? (stride - table) / (nwin ? nwin : 1) : 0;
    size_t chunk = t->cfg.xchg_chunk_bytes;
    if (win < 2 * chunk)
        chunk = win / 2 / PGC_CACHELINE * PGC_CACHELINE;
    if (chunk == 0) {
        /* team-wide: every member fails the same way, no abort needed */
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0,
                             "%s: staging area of %zu bytes too small for %d members",
                             name, (size_t)stride, t->nranks);
    }
    g->off = 0;
    g->chunk = chunk;
    g->slots = (uint32_t)(win / chunk);
    /* A deeper ring only lets the producer run further ahead and push the
     * ring out of cache: with 2 MiB staging, 32 slots of 64 KiB made 1 MiB
     * Alltoall 1.06-1.16 of MPICH, 16 slots 0.76-0.87. */
    if (g->slots > PGC_XCHG_MAX_SLOTS)
        g->slots = PGC_XCHG_MAX_SLOTS;
    g->win_bytes = (size_t)g->slots * chunk;
    return PGC_OK;
}

/* Publish this member's descriptor with seq DESC (release: also publishes
 * the inline payload, table and address written before). Call after
 * pgc_wait_peers_done(t, 1 or PGC_RUNAHEAD): the word was last read in
 * op - PGC_RUNAHEAD. */
void pgc_xchg_publish(pgc_team *t, pgc_path path, size_t len)
{
    pgc_desc_put(t, path, len);
    pgc_post_seq(t, PGC_XCHG_STEP_DESC);
}

/* Wait for `peer`'s descriptor of this op and read it. */
int pgc_xchg_desc(pgc_team *t, int peer, pgc_path *path, size_t *len)
{
    int rc = pgc_wait_seq(t, peer, PGC_XCHG_STEP_DESC);
    if (rc)
        return rc;
    uint64_t d = pgc_desc_get(t, peer);
    *path = pgc_desc_path(d);
    *len = (size_t)pgc_desc_len(d);
    return PGC_OK;
}

static inline char *slot_of(const pgc_team *t, const pgc_ring *g, int r, uint32_t win, uint32_t k)
{
    return (char *)pgc_staging_of(t, r) + g->off + (size_t)win * g->win_bytes +
           (size_t)(k % g->slots) * g->chunk;
}

static inline size_t max_chunks(size_t rounds, const pgc_stream *s, int n, size_t chunk)
{
    for (int i = 0; i < n; i++)
        if ((s[i].len + chunk - 1) / chunk > rounds)
            rounds = (s[i].len + chunk - 1) / chunk;
    return rounds;
}

/* The copy-in/copy-out engine (see the header comment). `out`: the streams
 * this member produces (its staging must be free: pgc_wait_peers_done(t, 1)
 * and its descriptor posted); `in`: the streams it consumes, in the order to
 * read them (rotated by the caller); `self` (or NULL): the own block, copied
 * locally alongside. Zero-length streams may be listed; with no stream at
 * all, this is a chunked local copy. recv_cold: the caller knows the
 * receive buffer is cold (PGC_RECV_COLD). */
int pgc_xchg_run(pgc_team *t, const pgc_ring *g, const pgc_stream *out, int nout,
                 const pgc_stream *in, int nin, const pgc_stream *self, int recv_cold)
{
    size_t chunk = g->chunk;
    size_t rounds = max_chunks(max_chunks(self ? max_chunks(0, self, 1, chunk) : 0, out, nout, chunk),
                               in, nin, chunk);
    if (rounds >= PGC_XCHG_STEP_FIN - PGC_XCHG_STEP_ROUND)
        return pgc_xchg_fail(t, PGC_EINVAL, -1, "%s: %zu chunks exceed the step counter", pgc_opname(t), rounds);

    const pgc_xfer stage = nout ? pgc_stage_xfer(t) : PGC_XFER_STAGE;
    /* Writes into the receive buffer (own block, copy-outs) go to memory
     * with streaming stores once a block reaches cfg.recv_stream_min: across
     * the node the op then writes more than the cache holds, so an ordinary
     * store would first fetch each line it overwrites (np=2, 16 MiB
     * Alltoall 0.76-0.83 of MPICH against 0.96-1.01; np=8, Allgather of
     * 2 / 4 MiB per rank 0.52-0.61 / 0.55-0.59 against 0.64-0.85 /
     * 0.64-0.77). Streamed copy-outs are not timed: the team's costs stay
     * those of ordinary ones. */
    size_t largest = self ? self->len : 0;
    for (int i = 0; i < nin; i++)
        largest = in[i].len > largest ? in[i].len : largest;
    const int cold = recv_cold || (t->cfg.recv_stream_min && largest >= t->cfg.recv_stream_min);
    for (uint32_t k = 0; k < rounds; k++) {
        size_t off = (size_t)k * chunk;
        int rc, staged = 0;
        for (int i = 0; i < nout; i++) {
            const pgc_stream *s = &out[i];
            if (off >= s->len)
                continue;
            /* The slot still holds chunk k - slots until the consumer(s) of
             * this window acknowledged it. */
            if (k >= g->slots) {
                uint32_t need = k - g->slots + 1;
                rc = s->peer >= 0 ? pgc_wait_ack(t, s->peer, need) : pgc_wait_ack_all(t, need);
                if (rc)
                    return rc;
            }
            pgc_timed_copy(t, stage, slot_of(t, g, t->rank, s->win, k), s->src + off,
                           min_size(chunk, s->len - off));
            staged = 1;
        }
        if (staged)
            pgc_post_seq(t, PGC_XCHG_STEP_ROUND + k);
        if (self && off < self->len) {
            size_t n = min_size(chunk, self->len - off);
            if (cold)
                pgc_copy_stream(self->dst + off, self->src + off, n);
            else
                pgc_copy(t, self->dst + off, self->src + off, n);
        }
        for (int i = 0; i < nin; i++) {
            const pgc_stream *s = &in[i];
            if (off >= s->len)
                continue;
            if ((rc = pgc_wait_seq(t, s->peer, PGC_XCHG_STEP_ROUND + k)))
                return rc;
            const char *slot = slot_of(t, g, s->peer, s->win, k);
            if (cold)
                pgc_copy_stream(s->dst + off, slot, min_size(chunk, s->len - off));
            else
                pgc_timed_copy(t, PGC_XFER_COPYOUT, s->dst + off, slot, min_size(chunk, s->len - off));
        }
        /* Posted every round while consuming anything (even when this round
         * brought nothing): producers wait for ack >= k + 1 on any stream
         * that had a chunk k. */
        if (nin)
            pgc_post_ack(t, k + 1);
    }
    return PGC_OK;
}

/* Post FIN (done with every peer's memory); an owner whose buffer was
 * exposed (cma) then waits until every other member posted FIN. */
int pgc_xchg_finish(pgc_team *t, int owner)
{
    pgc_post_ack(t, PGC_XCHG_STEP_FIN);
    return owner ? pgc_wait_ack_all(t, PGC_XCHG_STEP_FIN) : PGC_OK;
}

/* `coll` indexes the statistics and thresholds: refuse an id of another
 * family (a team-wide argument, like the root: no abort). */
#define CHECK_COLL(t, coll, a, b)                                                                     \
    do {                                                                                              \
        if ((coll) != (a) && (coll) != (b))                                                           \
            return pgc_set_error(&(t)->err, PGC_EINVAL, -1, 0, "%s: collective id %d is not %s",      \
                                 pgc_coll_name(a), (int)(coll), pgc_coll_name(a));                    \
    } while (0)

/* Local argument refusal. Peers may already be waiting for this member, and
 * a member that skipped an op no longer agrees with them on op numbers: the
 * team is aborted (pgc_xchg_fail). A bad root, which every member sees
 * alike, is refused without abort (as in Bcast). */
#define REFUSE(t, ...) pgc_xchg_fail((t), PGC_EINVAL, -1, __VA_ARGS__)

/* ======================= Gather(v) ======================= */

static int gather_root(pgc_team *t, pgc_coll coll, const void *sendbuf, char *recvbuf,
                       const size_t *recvbytes, const size_t *displs, const pgc_ring *g)
{
    int P = t->nranks, me = t->rank, rc;
    pgc_count(t, coll, pgc_choose_path(t, coll, recvbytes[me]));
    /* Start: the table of expected blocks and our address, for the senders
     * that push (cma). Written into staging: peers must be done with op - 1. */
    if ((rc = pgc_wait_peers_done(t, 1)))
        return rc;
    pgc_blk *tbl = pgc_xchg_table(t, me);
    for (int q = 0; q < P; q++)
        tbl[q] = (pgc_blk){recvbytes[q], displs[q]};
    atomic_store_explicit(&pgc_ctl_of(t, me)->addr, (uint64_t)(uintptr_t)recvbuf, memory_order_relaxed);
    pgc_xchg_publish(t, PGC_PATH_INLINE, 0);

    /* Work: react to each sender's descriptor, in rotated order; the own
     * block (unless in place) is copied by the engine. */
    pgc_stream in[P];
    int nin = 0;
    for (int i = 1; i < P; i++) {
        int p = (me + i) % P;
        pgc_path path;
        size_t len;
        if ((rc = pgc_xchg_desc(t, p, &path, &len)))
            return rc;
        if (len != recvbytes[p])
            return pgc_xchg_fail(t, PGC_EINVAL, p, "%s: local rank %d sends %zu bytes but the root (local rank %d) expects %zu",
                                 pgc_opname(t), p, len, me, recvbytes[p]);
        char *dst = recvbuf + displs[p];
        if (path == PGC_PATH_INLINE && len)
            memcpy(dst, pgc_inline_of(t, p, t->op), len);
        else if (path == PGC_PATH_CICO)
            in[nin++] = (pgc_stream){p, 0, NULL, dst, len};
        /* cma: the sender wrote the block before posting its descriptor */
    }
    pgc_stream self = {me, 0, sendbuf, recvbuf + displs[me], sendbuf ? recvbytes[me] : 0};
    return pgc_xchg_run(t, g, NULL, 0, in, nin, &self, 0);
}

static int gather_send(pgc_team *t, pgc_coll coll, const void *sendbuf, size_t n, int root,
                       const pgc_ring *g)
{
    int rc;
    pgc_path path = pgc_choose_member_path(t, coll, n);
    pgc_count(t, coll, path);
    switch (path) {
    case PGC_PATH_INLINE:
        if ((rc = pgc_wait_peers_done(t, PGC_RUNAHEAD)))
            return rc;
        if (n)
            memcpy(pgc_inline_of(t, t->rank, t->op), sendbuf, n);
        pgc_xchg_publish(t, path, n);
        return PGC_OK;
    case PGC_PATH_CMA: {
        if ((rc = pgc_wait_peers_done(t, PGC_RUNAHEAD)) || (rc = pgc_wait_seq(t, root, PGC_XCHG_STEP_DESC)))
            return rc;
        /* The push writes into the root's memory: check its expectation first. */
        pgc_blk b = pgc_xchg_table(t, root)[t->rank];
        if (b.len != n)
            return pgc_xchg_fail(t, PGC_EINVAL, root, "%s: this rank sends %zu bytes but the root (local rank %d) expects %" PRIu64,
                                 pgc_opname(t), n, root, b.len);
        uint64_t addr = atomic_load_explicit(&pgc_ctl_of(t, root)->addr, memory_order_relaxed);
        if ((rc = pgc_coll_cma(t, root, 1, (void *)sendbuf, addr + b.off, n)))
            return rc;
        /* DESC after the push: the root may return once it sees it. */
        pgc_xchg_publish(t, path, n);
        return PGC_OK;
    }
    default: {
        if ((rc = pgc_wait_peers_done(t, 1)))
            return rc;
        pgc_xchg_publish(t, path, n);
        pgc_stream s = {root, 0, sendbuf, NULL, n};
        return pgc_xchg_run(t, g, &s, 1, NULL, 0, NULL, 0);
    }
    }
}

int pgc_gather(pgc_team *t, pgc_coll coll, const void *sendbuf, size_t sendbytes,
               void *recvbuf, const size_t *recvbytes, const size_t *displs, int root)
{
    const char *name = pgc_coll_name(coll);
    CHECK_COLL(t, coll, PGC_COLL_GATHER, PGC_COLL_GATHERV);
    if (root < 0 || root >= t->nranks)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: root %d out of range [0, %d)", name, root, t->nranks);
    if (t->rank == root) {
        if (!recvbytes || !displs)
            return REFUSE(t, "%s: the root needs recvcounts and displacements", name);
        if (sendbuf && sendbytes != recvbytes[root])
            return REFUSE(t, "%s: the root sends %zu bytes but expects %zu from itself", name, sendbytes, recvbytes[root]);
        if (!recvbuf)
            for (int q = 0; q < t->nranks; q++)
                if (recvbytes[q])
                    return REFUSE(t, "%s: no receive buffer at the root", name);
    } else if (!sendbuf && sendbytes) {
        return REFUSE(t, "%s: no send buffer (MPI_IN_PLACE is for the root only)", name);
    }
    pgc_ring g;
    int rc = pgc_xchg_ring(t, &g, 1, name);
    if (rc || (rc = pgc_coll_begin(t, coll, (uint32_t)root)))
        return pgc_coll_end(t, rc);
    rc = t->rank == root ? gather_root(t, coll, sendbuf, recvbuf, recvbytes, displs, &g)
                         : gather_send(t, coll, sendbuf, sendbytes, root, &g);
    return pgc_coll_end(t, rc);
}

/* ======================= Scatter(v) ======================= */

static int scatter_root(pgc_team *t, pgc_coll coll, const char *sendbuf, const size_t *sendbytes,
                        const size_t *displs, void *recvbuf, const pgc_ring *g)
{
    int P = t->nranks, me = t->rank, rc;
    size_t total = 0, most = 0;
    for (int q = 0; q < P; q++)
        if (q != me) {
            total += sendbytes[q];
            most = most > sendbytes[q] ? most : sendbytes[q];
        }
    /* inline when all blocks and their offsets fit the inline slot together;
     * otherwise by the largest block (each receiver moves its own block) */
    pgc_path path = pgc_choose_path(t, coll, pgc_xchg_inline_bytes(t, total));
    if (path != PGC_PATH_INLINE && (path = pgc_choose_path(t, coll, most)) == PGC_PATH_INLINE)
        path = PGC_PATH_CICO;
    pgc_count(t, coll, path);

    /* Start: the blocks (inline) or the table and our address, then DESC.
     * The table and the ring are in staging: peers must be done with op - 1. */
    if ((rc = pgc_wait_peers_done(t, path == PGC_PATH_INLINE ? PGC_RUNAHEAD : 1)))
        return rc;
    if (path == PGC_PATH_INLINE) {
        pgc_xchg_pack_inline(t, sendbuf, sendbytes, displs);
    } else {
        pgc_blk *tbl = pgc_xchg_table(t, me);
        for (int q = 0; q < P; q++)
            tbl[q] = (pgc_blk){sendbytes[q], displs[q]};
        atomic_store_explicit(&pgc_ctl_of(t, me)->addr, (uint64_t)(uintptr_t)sendbuf, memory_order_relaxed);
    }
    pgc_xchg_publish(t, path, total);

    /* Work: cico streams one window per receiver; the engine also copies
     * our own block (unless in place). */
    pgc_stream out[P];
    int nout = 0;
    for (int i = 1; i < P && path == PGC_PATH_CICO; i++) {
        int q = (me + i) % P;
        out[nout++] = (pgc_stream){q, pgc_xchg_win(t, me, q), sendbuf + displs[q], NULL, sendbytes[q]};
    }
    pgc_stream self = {me, 0, sendbuf + displs[me], recvbuf, recvbuf ? sendbytes[me] : 0};
    if ((rc = pgc_xchg_run(t, g, out, nout, NULL, 0, &self, 0)))
        return rc;
    /* cma: the receivers read our send buffer until they post FIN */
    return path == PGC_PATH_CMA ? pgc_wait_ack_all(t, PGC_XCHG_STEP_FIN) : PGC_OK;
}

static int scatter_recv(pgc_team *t, pgc_coll coll, void *recvbuf, size_t n, int root, const pgc_ring *g)
{
    pgc_path path;
    size_t total;
    int rc = pgc_xchg_desc(t, root, &path, &total);
    if (rc)
        return rc;
    pgc_count(t, coll, path);
    const char *packed = NULL;
    pgc_blk b = pgc_xchg_block(t, root, path, &packed);
    if (b.len != n)
        return pgc_xchg_fail(t, PGC_EINVAL, root, "%s: the root (local rank %d) sends %" PRIu64 " bytes but this rank receives %zu",
                             pgc_opname(t), root, b.len, n);
    switch (path) {
    case PGC_PATH_INLINE:
        if (n)
            memcpy(recvbuf, packed + b.off, n);
        return PGC_OK;
    case PGC_PATH_CMA: {
        uint64_t addr = atomic_load_explicit(&pgc_ctl_of(t, root)->addr, memory_order_relaxed);
        if ((rc = pgc_coll_cma(t, root, 0, recvbuf, addr + b.off, n)))
            return rc;
        return pgc_xchg_finish(t, 0);
    }
    default: {
        pgc_stream s = {root, pgc_xchg_win(t, root, t->rank), NULL, recvbuf, n};
        return pgc_xchg_run(t, g, NULL, 0, &s, 1, NULL, 0);
    }
    }
}

int pgc_scatter(pgc_team *t, pgc_coll coll, const void *sendbuf, const size_t *sendbytes,
                const size_t *displs, void *recvbuf, size_t recvbytes, int root)
{
    const char *name = pgc_coll_name(coll);
    CHECK_COLL(t, coll, PGC_COLL_SCATTER, PGC_COLL_SCATTERV);
    if (root < 0 || root >= t->nranks)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: root %d out of range [0, %d)", name, root, t->nranks);
    if (t->rank == root) {
        if (!sendbytes || !displs)
            return REFUSE(t, "%s: the root needs sendcounts and displacements", name);
        if (recvbuf && recvbytes != sendbytes[root])
            return REFUSE(t, "%s: the root sends %zu bytes to itself but receives %zu", name, sendbytes[root], recvbytes);
        if (!sendbuf)
            for (int q = 0; q < t->nranks; q++)
                if (sendbytes[q])
                    return REFUSE(t, "%s: no send buffer at the root", name);
    } else if (!recvbuf && recvbytes) {
        return REFUSE(t, "%s: no receive buffer (MPI_IN_PLACE is for the root only)", name);
    }
    pgc_ring g;
    int rc = pgc_xchg_ring(t, &g, t->nranks > 1 ? (uint32_t)t->nranks - 1 : 1, name);
    if (rc || (rc = pgc_coll_begin(t, coll, (uint32_t)root)))
        return pgc_coll_end(t, rc);
    rc = t->rank == root ? scatter_root(t, coll, sendbuf, sendbytes, displs, recvbuf, &g)
                         : scatter_recv(t, coll, recvbuf, recvbytes, root, &g);
    return pgc_coll_end(t, rc);
}

/* ======================= Allgather(v) ======================= */

int pgc_allgather(pgc_team *t, pgc_coll coll, const void *sendbuf, size_t sendbytes,
                  void *recvbuf, const size_t *recvbytes, const size_t *displs, unsigned flags)
{
    const char *name = pgc_coll_name(coll);
    CHECK_COLL(t, coll, PGC_COLL_ALLGATHER, PGC_COLL_ALLGATHERV);
    int P = t->nranks, me = t->rank, rc;
    if (!recvbytes || !displs)
        return REFUSE(t, "%s: recvcounts and displacements are needed on every rank", name);
    size_t total = 0;
    for (int q = 0; q < P; q++)
        total += recvbytes[q];
    if (sendbuf && sendbytes != recvbytes[me])
        return REFUSE(t, "%s: this rank sends %zu bytes but expects %zu from itself", name, sendbytes, recvbytes[me]);
    if (!recvbuf && total)
        return REFUSE(t, "%s: no receive buffer", name);
    pgc_ring g;
    if ((rc = pgc_xchg_ring(t, &g, 1, name)) || (rc = pgc_coll_begin(t, coll, 0)))
        return pgc_coll_end(t, rc);

    /* Start: publish our block (in place: it already sits in recvbuf). */
    pgc_path path = pgc_choose_member_path(t, coll, total);
    pgc_count(t, coll, path);
    size_t n = recvbytes[me];
    const char *src = sendbuf ? (const char *)sendbuf : (const char *)recvbuf + displs[me];
    if ((rc = pgc_wait_peers_done(t, path == PGC_PATH_CICO ? 1 : PGC_RUNAHEAD)))
        return pgc_coll_end(t, rc);
    if (path == PGC_PATH_INLINE && n)
        memcpy(pgc_inline_of(t, me, t->op), src, n);
    if (path == PGC_PATH_CMA)
        atomic_store_explicit(&pgc_ctl_of(t, me)->addr, (uint64_t)(uintptr_t)src, memory_order_relaxed);
    pgc_xchg_publish(t, path, n);

    /* Work: every other block, in rotated order. Inline and cma blocks are
     * copied at once (no member ever overwrites its own block, so reading
     * early is safe); cico blocks go through the engine, which also copies
     * our own block (unless in place). */
    pgc_stream in[P];
    int nin = 0;
    for (int i = 1; i < P && !rc; i++) {
        int p = (me + i) % P;
        pgc_path pp;
        size_t len;
        if ((rc = pgc_xchg_desc(t, p, &pp, &len)))
            break;
        if (len != recvbytes[p]) {
            rc = pgc_xchg_fail(t, PGC_EINVAL, p, "%s: local rank %d sends %zu bytes but this rank expects %zu",
                               pgc_opname(t), p, len, recvbytes[p]);
            break;
        }
        char *dst = (char *)recvbuf + displs[p];
        if (pp == PGC_PATH_INLINE && len)
            memcpy(dst, pgc_inline_of(t, p, t->op), len);
        else if (pp == PGC_PATH_CMA)
            rc = pgc_coll_cma(t, p, 0, dst, atomic_load_explicit(&pgc_ctl_of(t, p)->addr, memory_order_relaxed), len);
        else if (pp == PGC_PATH_CICO)
            in[nin++] = (pgc_stream){p, 0, NULL, dst, len};
    }
    if (!rc) {
        pgc_stream out = {-1, 0, src, NULL, path == PGC_PATH_CICO ? n : 0};
        pgc_stream self = {me, 0, sendbuf, (char *)recvbuf + displs[me], sendbuf ? n : 0};
        rc = pgc_xchg_run(t, &g, &out, 1, in, nin, &self, (flags & PGC_RECV_COLD) != 0);
    }
    /* Ack: our block may be reused once every reader posted FIN. */
    if (!rc)
        rc = pgc_xchg_finish(t, path == PGC_PATH_CMA);
    return pgc_coll_end(t, rc);
}
