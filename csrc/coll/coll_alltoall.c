/* coll_alltoall.c - Alltoall(v), on the exchange engine (xchg.h: protocol,
 * descriptor, table and copy-in/copy-out rounds).
 *
 * Each member decides the path of everything it sends from its own total
 * send size and the team's measured costs (pgc_choose_member_path), publishes
 * it in its descriptor, and each receiver follows the sender's path (for
 * Alltoallv a member cannot know what the others send; for Alltoall the
 * run-time choice may differ between members during a probe). At DESC a
 * member's staging table holds (length, offset) of its block for every
 * member (on the inline path, the end offsets in its inline slot), which the
 * receiver checks against its own count:
 *   inline  all blocks for the others packed in the sender's inline slot,
 *           after their end offsets; the sender runs ahead (see
 *           pgc_xchg_pack_inline)
 *   cico    one window per receiver in the sender's ring; all pairs
 *           exchange chunk k in round k of the engine
 *   cma     the sender publishes its send buffer; each receiver r pulls its
 *           block from every q in rotated order r+1, r+2, ... (at each step
 *           every sender is read by one receiver); the sender waits for FIN
 * The own block is copied locally (by the engine, chunk by chunk, between
 * staging and copying out).
 *
 * MPI_IN_PLACE (sendbuf == NULL): the data to send is taken from recvbuf with
 * the receive layout and replaced by the data received. Every outgoing block
 * is captured before its region is overwritten:
 *   inline  packed into the inline slot at the start;
 *   cma     packed into a malloc'd temporary at the start, published instead
 *           of recvbuf (peers read it until FIN, freed after);
 *   cico    chunk k of the block for p is staged in round k before chunk k
 *           from p is written over it (same region, same chunk geometry);
 *           blocks from inline/cma senders are copied only after the engine.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "coll/xchg.h"

/* Start: table, payload and descriptor. `src`/`sb`/`sd`: the send layout
 * (the receive layout in place). On the cma path in place, *tmp receives the
 * temporary the caller frees after FIN. */
static int alltoall_start(pgc_team *t, pgc_path path, size_t total, const char *src, const size_t *sb,
                          const size_t *sd, int in_place, char **tmp)
{
    int P = t->nranks, me = t->rank;
    /* inline: the blocks and their offsets go into the collective's inline
     * slot, which rotates (runs ahead like Bcast); otherwise the table goes
     * into staging: peers must be done with seq - 1 */
    int rc = pgc_wait_peers_done(t, path == PGC_PATH_INLINE ? PGC_RUNAHEAD : 1);
    if (rc)
        return rc;
    if (path == PGC_PATH_INLINE) {
        pgc_xchg_pack_inline(t, src, sb, sd);
        pgc_xchg_publish(t, path, total);
        return PGC_OK;
    }
    pgc_blk *tbl = pgc_xchg_table(t, me);
    const char *base = src; /* what ctl addr publishes (cma) */
    char *pack = NULL;      /* cma in place: the blocks for the others, packed */
    if (path == PGC_PATH_CMA && in_place && total > sb[me]) {
        if (!(pack = *tmp = malloc(total - sb[me])))
            return pgc_xchg_fail(t, PGC_ENOMEM, -1, "%s: out of memory for a %zu-byte in-place copy",
                                 pgc_current_coll_name(t), total - sb[me]);
        base = pack;
    }
    size_t off = 0;
    for (int q = 0; q < P; q++) {
        tbl[q] = (pgc_blk){sb[q], sd[q]};
        if (pack && q != me) {
            tbl[q].off = off;
            if (sb[q])
                memcpy(pack + off, src + sd[q], sb[q]);
            off += sb[q];
        }
    }
    atomic_store_explicit(&pgc_ctl_of(t, me)->addr, (uint64_t)(uintptr_t)base, memory_order_relaxed);
    pgc_xchg_publish(t, path, total);
    return PGC_OK;
}

/* Work: read every peer's descriptor and table entry (rotated order), run
 * the engine for the cico senders, our own cico blocks and our own block
 * (unless in place), then copy the blocks of inline and cma senders. */
static int alltoall_work(pgc_team *t, pgc_path path, const char *src, const size_t *sb, const size_t *sd,
                         int in_place, char *recvbuf, const size_t *recvbytes, const size_t *rdispls,
                         const pgc_ring *g)
{
    int P = t->nranks, me = t->rank, rc;
    pgc_stream in[P], out[P];
    int nin = 0, nout = 0;
    for (int i = 1; i < P; i++) {
        int p = (me + i) % P;
        pgc_path pp;
        size_t total;
        if ((rc = pgc_xchg_desc(t, p, &pp, &total)))
            return rc;
        const char *packed;
        uint64_t len = pgc_xchg_block(t, p, pp, &packed).len;
        if (len != recvbytes[p])
            return pgc_xchg_fail(t, PGC_EINVAL, p, "%s: local rank %d sends %" PRIu64 " bytes to this rank, which expects %zu",
                                 pgc_current_coll_name(t), p, len, recvbytes[p]);
        if (pp == PGC_PATH_CICO)
            in[nin++] = (pgc_stream){p, pgc_xchg_win(t, p, me), NULL, recvbuf + rdispls[p], len};
        if (path == PGC_PATH_CICO)
            out[nout++] = (pgc_stream){p, pgc_xchg_win(t, me, p), src + sd[p], NULL, sb[p]};
    }
    pgc_stream self = {me, 0, src + sd[me], recvbuf + rdispls[me], in_place ? 0 : sb[me]};
    if ((rc = pgc_xchg_run(t, g, out, nout, in, nin, &self, 0)))
        return rc;

    /* After the engine: in place, our cico blocks are staged by now. */
    for (int i = 1; i < P; i++) {
        int p = (me + i) % P;
        pgc_path pp;
        size_t total;
        if ((rc = pgc_xchg_desc(t, p, &pp, &total))) /* already posted: no wait */
            return rc;
        const char *packed;
        pgc_blk b = pgc_xchg_block(t, p, pp, &packed);
        char *dst = recvbuf + rdispls[p];
        if (pp == PGC_PATH_INLINE && b.len)
            memcpy(dst, packed + b.off, b.len);
        else if (pp == PGC_PATH_CMA) {
            uint64_t addr = atomic_load_explicit(&pgc_ctl_of(t, p)->addr, memory_order_relaxed);
            if ((rc = pgc_coll_cma(t, p, 0, dst, addr + b.off, b.len)))
                return rc;
        }
    }
    return PGC_OK;
}

int pgc_alltoall(pgc_team *t, pgc_coll coll, const void *sendbuf, const size_t *sendbytes,
                 const size_t *sdispls, void *recvbuf, const size_t *recvbytes,
                 const size_t *rdispls)
{
    const char *name = pgc_coll_name(coll);
    int P = t->nranks, me = t->rank, rc;
    /* `coll` indexes the statistics and thresholds (team-wide: no abort) */
    if (coll != PGC_COLL_ALLTOALL && coll != PGC_COLL_ALLTOALLV)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "Alltoall: collective id %d is not Alltoall", (int)coll);
    int in_place = sendbuf == NULL;
    if (!recvbytes || !rdispls || (!in_place && (!sendbytes || !sdispls)))
        return pgc_xchg_fail(t, PGC_EINVAL, -1, "%s: counts and displacements are needed on every rank", name);
    /* in place: send with the receive layout, from recvbuf */
    const size_t *sb = in_place ? recvbytes : sendbytes, *sd = in_place ? rdispls : sdispls;
    const char *src = in_place ? recvbuf : sendbuf;
    size_t total = 0, rtotal = 0;
    for (int q = 0; q < P; q++) {
        total += sb[q];
        rtotal += recvbytes[q];
    }
    if (sb[me] != recvbytes[me])
        return pgc_xchg_fail(t, PGC_EINVAL, -1, "%s: this rank sends %zu bytes to itself but receives %zu",
                             name, sb[me], recvbytes[me]);
    if ((!recvbuf && rtotal) || (!src && total))
        return pgc_xchg_fail(t, PGC_EINVAL, -1, "%s: missing buffer", name);

    pgc_ring g;
    if ((rc = pgc_xchg_ring(t, &g, P > 1 ? (uint32_t)P - 1 : 1, name)) ||
        (rc = pgc_coll_begin(t, coll, 0)))
        return pgc_coll_end(t, rc);
    /* inline when the blocks for the others and their offsets fit the inline
     * slot; otherwise by the total */
    pgc_path path = pgc_choose_path(t, coll, pgc_xchg_inline_bytes(t, total - sb[me]), 0);
    /* in place, the cma path publishes a private copy (alltoall_start) */
    int shared = !in_place && pgc_xchg_holds(t, src, sb, sd, me);
    if (path != PGC_PATH_INLINE && (path = pgc_choose_member_path(t, coll, total, shared)) == PGC_PATH_INLINE)
        path = PGC_PATH_CICO;
    pgc_count(t, coll, path);

    char *tmp = NULL;
    rc = alltoall_start(t, path, total, src, sb, sd, in_place, &tmp);
    if (!rc)
        rc = alltoall_work(t, path, src, sb, sd, in_place, recvbuf, recvbytes, rdispls, &g);
    /* Ack: our send buffer (or the temporary) may be reused once every
     * reader posted FIN. */
    if (!rc)
        rc = pgc_xchg_ack(t, path == PGC_PATH_CMA);
    /* On an error the team is aborted; a reader still copying the temporary
     * would only get bytes of a collective that fails anyway. */
    free(tmp);
    return pgc_coll_end(t, rc);
}
