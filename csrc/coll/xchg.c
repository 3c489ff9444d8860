/* xchg.c - the exchange engine (see xchg.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "coll/xchg.h"

static inline size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* The table: one pgc_blk per member at the tail of a member's staging, so
 * that the ring starts page-aligned (memcpy into slots at a page offset
 * measured slower: docs/PERFORMANCE.md, "Staging is 2 MiB per rank"). */
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
 * the sequence number and carries its own table, so the sender writes it after
 * pgc_wait_peers_done(t, PGC_RUNAHEAD), not 1 as for the table in staging:
 * a root of back-to-back small Scatters runs ahead of its readers as a
 * Bcast root does (docs/PERFORMANCE.md, "Senders run up to 64 calls ahead"). */
_Static_assert(PGC_INLINE_SLOT_MAX <= UINT16_MAX, "inline block offsets are uint16_t");

size_t pgc_xchg_inline_bytes(const pgc_team *t, size_t packed)
{
    return (size_t)t->nranks * sizeof(uint16_t) + packed;
}

void pgc_xchg_pack_inline(pgc_team *t, const char *src, const size_t *len, const size_t *displs)
{
    uint16_t *end = pgc_inline_of(t, t->rank, t->seq);
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
    const uint16_t *end = pgc_inline_of(t, sender, t->seq);
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

/* Ring geometry for `nwin` windows before the table (phase plan). Depends on
 * team-wide values only, so every member computes the same; computed before
 * the collective begins, so a failure leaves the sequence numbers in step. A
 * window keeps at least two slots (double buffering): with many windows the
 * chunk shrinks. */
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
     * ring out of cache (docs/PERFORMANCE.md, "Staging is 2 MiB per rank"). */
    if (g->slots > PGC_XCHG_MAX_SLOTS)
        g->slots = PGC_XCHG_MAX_SLOTS;
    g->win_bytes = (size_t)g->slots * chunk;
    return PGC_OK;
}

/* Start: publish this member's descriptor with step DESC (release: also
 * publishes the inline payload, table and address written before). Call
 * after pgc_wait_peers_done(t, 1 or PGC_RUNAHEAD): the word was last read in
 * seq - PGC_RUNAHEAD. */
void pgc_xchg_publish(pgc_team *t, pgc_path path, size_t len)
{
    pgc_desc_put(t, path, len);
    pgc_post_step(t, PGC_XCHG_STEP_DESC);
}

/* Work: wait for `peer`'s descriptor of this collective and read it. */
int pgc_xchg_desc(pgc_team *t, int peer, pgc_path *path, size_t *len)
{
    int rc = pgc_wait_step(t, peer, PGC_XCHG_STEP_DESC);
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

/* Work: the copy-in/copy-out engine (see xchg.h). `out`: the streams
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
        return pgc_xchg_fail(t, PGC_EINVAL, -1, "%s: %zu chunks exceed the step counter", pgc_current_coll_name(t),
                             rounds);

    const pgc_xfer stage = nout ? pgc_stage_xfer(t) : PGC_XFER_STAGE;
    /* Writes into the receive buffer (own block, copy-outs) go to memory
     * with streaming stores once a block reaches cfg.recv_stream_min: across
     * the node the collective then writes more than the cache holds, so an ordinary
     * store would first fetch each line it overwrites (docs/PERFORMANCE.md,
     * "Streaming stores into receive buffers that outgrow the cache").
     * Streamed copy-outs are not timed: the team's costs stay those of
     * ordinary ones. */
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
            pgc_post_step(t, PGC_XCHG_STEP_ROUND + k);
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
            if ((rc = pgc_wait_step(t, s->peer, PGC_XCHG_STEP_ROUND + k)))
                return rc;
            if (PGC_UNLIKELY(!s->dst))
                continue; /* a producer of another basic type: consumed, not copied */
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

/* Ack: post FIN (done with every peer's memory); an owner whose buffer was
 * exposed (cma) then waits until every other member posted FIN. */
int pgc_xchg_ack(pgc_team *t, int owner)
{
    pgc_post_ack(t, PGC_XCHG_STEP_FIN);
    return owner ? pgc_wait_ack_all(t, PGC_XCHG_STEP_FIN) : PGC_OK;
}

int pgc_xchg_holds(const pgc_team *t, const char *base, const size_t *len, const size_t *displs, int skip)
{
    if (!t->nregions)
        return 0;
    for (int q = 0; q < t->nranks; q++)
        if (q != skip && !pgc_region_holds(t, base + displs[q], len[q]))
            return 0;
    return 1;
}
