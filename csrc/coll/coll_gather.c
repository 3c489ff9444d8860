/* coll_gather.c - Gather(v), Scatter(v), Allgather(v), on the exchange
 * engine (xchg.h: protocol, descriptor, table and copy-in/copy-out rounds),
 * which Alltoall(v) (coll_alltoall.c) shares.
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
 *   Scatter(v)    the root decides one path for the collective (inline when
 *                 all blocks fit its inline slot together, else by the
 *                 largest block) and publishes where each member's block is:
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
 * hangs) and fails the detecting member with PGC_EINVAL. */
#include <inttypes.h>
#include <string.h>

#include "coll/xchg.h"

/* `coll` indexes the statistics and thresholds: refuse an id of another
 * family (a team-wide argument, like the root: no abort). */
#define CHECK_COLL(t, coll, a, b)                                                                     \
    do {                                                                                              \
        if ((coll) != (a) && (coll) != (b))                                                           \
            return pgc_set_error(&(t)->err, PGC_EINVAL, -1, 0, "%s: collective id %d is not %s",      \
                                 pgc_coll_name(a), (int)(coll), pgc_coll_name(a));                    \
    } while (0)

/* Local argument refusal. Peers may already be waiting for this member, and
 * a member that skipped a collective no longer agrees with them on sequence
 * numbers: the team is aborted (pgc_xchg_fail). A bad root, which every member sees
 * alike, is refused without abort (as in Bcast). */
#define REFUSE(t, ...) pgc_xchg_fail((t), PGC_EINVAL, -1, __VA_ARGS__)

/* ======================= Gather(v) ======================= */

/* Root, start: the table of expected blocks and our address, for the
 * senders that push (cma). Written into staging: peers must be done with
 * seq - 1. */
static int gather_root_start(pgc_team *t, char *recvbuf, const size_t *recvbytes, const size_t *displs)
{
    int rc = pgc_wait_peers_done(t, 1);
    if (rc)
        return rc;
    pgc_blk *tbl = pgc_xchg_table(t, t->rank);
    for (int q = 0; q < t->nranks; q++)
        tbl[q] = (pgc_blk){recvbytes[q], displs[q]};
    atomic_store_explicit(&pgc_ctl_of(t, t->rank)->addr, (uint64_t)(uintptr_t)recvbuf, memory_order_relaxed);
    pgc_xchg_publish(t, PGC_PATH_INLINE, 0);
    return PGC_OK;
}

/* Root, work: react to each sender's descriptor, in rotated order; the own
 * block (unless in place) is copied by the engine. The block of a sender
 * of another basic type (known from our wait on its descriptor) is not
 * taken: its ring is consumed without copying, and a pushing sender
 * pushes nothing (gather_sender_work). When our receive buffer
 * lies in a shared region (`pushed`) the senders push into it (gather_root_shared):
 * the own block is then copied first, while they push, instead of after
 * the last push. */
static int gather_root_work(pgc_team *t, const void *sendbuf, char *recvbuf, const size_t *recvbytes,
                            const size_t *displs, int pushed, const pgc_ring *g)
{
    int P = t->nranks, me = t->rank, rc;
    pgc_stream in[P];
    int nin = 0;
    if (sendbuf && pushed) {
        pgc_stream self = {me, 0, sendbuf, recvbuf + displs[me], recvbytes[me]};
        if ((rc = pgc_xchg_run(t, g, NULL, 0, NULL, 0, &self, 0)))
            return rc;
        sendbuf = NULL; /* copied */
    }
    for (int i = 1; i < P; i++) {
        int p = (me + i) % P;
        pgc_path path;
        size_t len;
        if ((rc = pgc_xchg_desc(t, p, &path, &len)))
            return rc;
        if (len != recvbytes[p])
            return pgc_xchg_fail(t, PGC_EINVAL, p, "%s: local rank %d sends %zu bytes but the root (local rank %d) expects %zu",
                                 pgc_current_coll_name(t), p, len, me, recvbytes[p]);
        char *dst = recvbuf + displs[p];
        if (path == PGC_PATH_INLINE && len) {
            if (!pgc_peer_skipped(t, p))
                memcpy(dst, pgc_inline_of(t, p, t->seq), len);
        } else if (path == PGC_PATH_CICO)
            in[nin++] = (pgc_stream){p, 0, NULL, pgc_peer_skipped(t, p) ? NULL : dst, len};
        /* cma: the sender wrote the block before posting its descriptor */
    }
    pgc_stream self = {me, 0, sendbuf, recvbuf + displs[me], sendbuf ? recvbytes[me] : 0};
    return pgc_xchg_run(t, g, NULL, 0, in, nin, &self, 0);
}

/* Sender, begin: whether our block's place in the root's receive buffer
 * lies in a shared region (the push is then a user-space copy). Known only
 * once the root published its address and table: only asked when that may
 * be so (regions registered, a block above the inline size), where waiting
 * for the root's DESC costs little (a staged block waits for the root's
 * acknowledgements anyway). */
static int gather_root_shared(pgc_team *t, int root, size_t n, int *shared)
{
    *shared = 0;
    if (!t->nregions || n <= t->cfg.inline_max)
        return PGC_OK;
    int rc = pgc_wait_step(t, root, PGC_XCHG_STEP_DESC);
    if (rc)
        return rc;
    pgc_blk b = pgc_xchg_table(t, root)[t->rank];
    uint64_t addr = atomic_load_explicit(&pgc_ctl_of(t, root)->addr, memory_order_relaxed);
    *shared = b.len == n && pgc_region_find(t, root, addr + b.off, n) != NULL;
    return PGC_OK;
}

/* Sender, start: inline, our block and its descriptor; cico, the
 * descriptor; cma, only the wait (the descriptor follows the push). */
static int gather_sender_start(pgc_team *t, pgc_path path, const void *sendbuf, size_t n)
{
    int rc = pgc_wait_peers_done(t, path == PGC_PATH_CICO ? 1 : PGC_RUNAHEAD);
    if (rc)
        return rc;
    if (path == PGC_PATH_INLINE && n)
        memcpy(pgc_inline_of(t, t->rank, t->seq), sendbuf, n);
    if (path != PGC_PATH_CMA)
        pgc_xchg_publish(t, path, n);
    return PGC_OK;
}

/* Sender, work. cma: push our block into the root's receive buffer, then
 * post the descriptor (a root of another basic type, known from our wait on
 * its descriptor, gets the descriptor alone); cico: stream it through our
 * ring. */
static int gather_sender_work(pgc_team *t, pgc_path path, const void *sendbuf, size_t n, int root,
                              const pgc_ring *g)
{
    int rc;
    switch (path) {
    case PGC_PATH_INLINE:
        return PGC_OK; /* the block went with the start */
    case PGC_PATH_CMA: {
        if ((rc = pgc_wait_step(t, root, PGC_XCHG_STEP_DESC)))
            return rc;
        /* The push writes into the root's memory: check its expectation first. */
        pgc_blk b = pgc_xchg_table(t, root)[t->rank];
        if (b.len != n)
            return pgc_xchg_fail(t, PGC_EINVAL, root, "%s: this rank sends %zu bytes but the root (local rank %d) expects %" PRIu64,
                                 pgc_current_coll_name(t), n, root, b.len);
        uint64_t addr = atomic_load_explicit(&pgc_ctl_of(t, root)->addr, memory_order_relaxed);
        if (!pgc_peer_skipped(t, root) && (rc = pgc_coll_cma(t, root, 1, (void *)sendbuf, addr + b.off, n)))
            return rc;
        /* DESC after the push: the root may return once it sees it. */
        pgc_xchg_publish(t, path, n);
        return PGC_OK;
    }
    default: {
        pgc_stream s = {root, 0, sendbuf, NULL, n};
        return pgc_xchg_run(t, g, &s, 1, NULL, 0, NULL, 0);
    }
    }
}

int pgc_gather(pgc_team *t, pgc_coll coll, const void *sendbuf, size_t sendbytes,
               void *recvbuf, const size_t *recvbytes, const size_t *displs, int root, int dtype)
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
    if (rc || (rc = pgc_coll_begin(t, coll, PGC_SIG_ROOTED(dtype, root))))
        return pgc_coll_end(t, rc);
    if (t->rank == root) {
        int pushed = pgc_xchg_holds(t, recvbuf, recvbytes, displs, root);
        pgc_count(t, coll, pgc_choose_path(t, coll, recvbytes[root], pushed));
        rc = gather_root_start(t, recvbuf, recvbytes, displs);
        if (!rc)
            rc = gather_root_work(t, sendbuf, recvbuf, recvbytes, displs, pushed, &g);
    } else {
        int shared = 0;
        rc = gather_root_shared(t, root, sendbytes, &shared);
        pgc_path path = pgc_choose_member_path(t, coll, sendbytes, shared);
        pgc_count(t, coll, path);
        if (!rc)
            rc = gather_sender_start(t, path, sendbuf, sendbytes);
        if (!rc)
            rc = gather_sender_work(t, path, sendbuf, sendbytes, root, &g);
    }
    return pgc_coll_end(t, rc);
}

/* ======================= Scatter(v) ======================= */

/* Root, begin: one path for the collective, inline when all blocks and
 * their offsets fit the inline slot together, otherwise by the largest
 * block (each receiver moves its own block); *total: the bytes for the
 * others. */
static pgc_path scatter_root_path(const pgc_team *t, pgc_coll coll, const char *sendbuf, const size_t *sendbytes,
                                  const size_t *displs, size_t *total)
{
    size_t most = 0;
    *total = 0;
    for (int q = 0; q < t->nranks; q++)
        if (q != t->rank) {
            *total += sendbytes[q];
            most = most > sendbytes[q] ? most : sendbytes[q];
        }
    pgc_path path = pgc_choose_path(t, coll, pgc_xchg_inline_bytes(t, *total), 0);
    if (path != PGC_PATH_INLINE &&
        (path = pgc_choose_path(t, coll, most, pgc_xchg_holds(t, sendbuf, sendbytes, displs, t->rank))) ==
            PGC_PATH_INLINE)
        path = PGC_PATH_CICO;
    return path;
}

/* Root, start: the blocks (inline) or the table and our address, then DESC.
 * The table and the ring are in staging: peers must be done with seq - 1. */
static int scatter_root_start(pgc_team *t, pgc_path path, size_t total, const char *sendbuf,
                              const size_t *sendbytes, const size_t *displs)
{
    int rc = pgc_wait_peers_done(t, path == PGC_PATH_INLINE ? PGC_RUNAHEAD : 1);
    if (rc)
        return rc;
    if (path == PGC_PATH_INLINE) {
        pgc_xchg_pack_inline(t, sendbuf, sendbytes, displs);
    } else {
        pgc_blk *tbl = pgc_xchg_table(t, t->rank);
        for (int q = 0; q < t->nranks; q++)
            tbl[q] = (pgc_blk){sendbytes[q], displs[q]};
        atomic_store_explicit(&pgc_ctl_of(t, t->rank)->addr, (uint64_t)(uintptr_t)sendbuf, memory_order_relaxed);
    }
    pgc_xchg_publish(t, path, total);
    return PGC_OK;
}

/* Root, work: cico streams one window per receiver; the engine also copies
 * our own block (unless in place). */
static int scatter_root_work(pgc_team *t, pgc_path path, const char *sendbuf, const size_t *sendbytes,
                             const size_t *displs, void *recvbuf, const pgc_ring *g)
{
    int P = t->nranks, me = t->rank;
    pgc_stream out[P];
    int nout = 0;
    for (int i = 1; i < P && path == PGC_PATH_CICO; i++) {
        int q = (me + i) % P;
        out[nout++] = (pgc_stream){q, pgc_xchg_win(t, me, q), sendbuf + displs[q], NULL, sendbytes[q]};
    }
    pgc_stream self = {me, 0, sendbuf + displs[me], recvbuf, recvbuf ? sendbytes[me] : 0};
    return pgc_xchg_run(t, g, out, nout, NULL, 0, &self, 0);
}

/* Root, ack. cma: the receivers read our send buffer until they post FIN. */
static int scatter_root_ack(pgc_team *t, pgc_path path)
{
    return path == PGC_PATH_CMA ? pgc_wait_ack_all(t, PGC_XCHG_STEP_FIN) : PGC_OK;
}

/* Receiver, work: our block, on the path the root announced (*path). A
 * receiver of another basic type than the root's (known from its wait on
 * the root's descriptor) takes nothing: it consumes its ring window without
 * copying, and acknowledges as the root expects. */
static int scatter_receiver_work(pgc_team *t, pgc_coll coll, void *recvbuf, size_t n, int root, const pgc_ring *g,
                                 pgc_path *path)
{
    size_t total;
    int rc = pgc_xchg_desc(t, root, path, &total);
    if (rc)
        return rc;
    pgc_count(t, coll, *path);
    const char *packed = NULL;
    pgc_blk b = pgc_xchg_block(t, root, *path, &packed);
    if (b.len != n)
        return pgc_xchg_fail(t, PGC_EINVAL, root, "%s: the root (local rank %d) sends %" PRIu64 " bytes but this rank receives %zu",
                             pgc_current_coll_name(t), root, b.len, n);
    if (pgc_peer_skipped(t, root))
        recvbuf = NULL;
    switch (*path) {
    case PGC_PATH_INLINE:
        if (n && recvbuf)
            memcpy(recvbuf, packed + b.off, n);
        return PGC_OK;
    case PGC_PATH_CMA: {
        uint64_t addr = atomic_load_explicit(&pgc_ctl_of(t, root)->addr, memory_order_relaxed);
        return recvbuf ? pgc_coll_cma(t, root, 0, recvbuf, addr + b.off, n) : PGC_OK;
    }
    default: {
        pgc_stream s = {root, pgc_xchg_win(t, root, t->rank), NULL, recvbuf, n};
        return pgc_xchg_run(t, g, NULL, 0, &s, 1, NULL, 0);
    }
    }
}

int pgc_scatter(pgc_team *t, pgc_coll coll, const void *sendbuf, const size_t *sendbytes,
                const size_t *displs, void *recvbuf, size_t recvbytes, int root, int dtype)
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
    if (rc || (rc = pgc_coll_begin(t, coll, PGC_SIG_ROOTED(dtype, root))))
        return pgc_coll_end(t, rc);
    if (t->rank == root) {
        size_t total;
        pgc_path path = scatter_root_path(t, coll, sendbuf, sendbytes, displs, &total);
        pgc_count(t, coll, path);
        rc = scatter_root_start(t, path, total, sendbuf, sendbytes, displs);
        if (!rc)
            rc = scatter_root_work(t, path, sendbuf, sendbytes, displs, recvbuf, &g);
        if (!rc)
            rc = scatter_root_ack(t, path);
    } else {
        pgc_path path;
        rc = scatter_receiver_work(t, coll, recvbuf, recvbytes, root, &g, &path);
        /* cma: tell the root we are done reading its send buffer */
        if (!rc && path == PGC_PATH_CMA)
            rc = pgc_xchg_ack(t, 0);
    }
    return pgc_coll_end(t, rc);
}

/* ======================= Allgather(v) ======================= */

/* Start: publish our block `src` of n bytes (in place: it already sits in
 * recvbuf). */
static int allgather_start(pgc_team *t, pgc_path path, const char *src, size_t n)
{
    int rc = pgc_wait_peers_done(t, path == PGC_PATH_CICO ? 1 : PGC_RUNAHEAD);
    if (rc)
        return rc;
    if (path == PGC_PATH_INLINE && n)
        memcpy(pgc_inline_of(t, t->rank, t->seq), src, n);
    if (path == PGC_PATH_CMA)
        atomic_store_explicit(&pgc_ctl_of(t, t->rank)->addr, (uint64_t)(uintptr_t)src, memory_order_relaxed);
    pgc_xchg_publish(t, path, n);
    return PGC_OK;
}

/* Work: every other block, in rotated order. Inline and cma blocks are
 * copied at once (no member ever overwrites its own block, so reading early
 * is safe); cico blocks go through the engine, which also streams our block
 * to the others and copies it into recvbuf (unless in place). */
static int allgather_work(pgc_team *t, pgc_path path, const char *src, size_t n, const void *sendbuf,
                          char *recvbuf, const size_t *recvbytes, const size_t *displs, const pgc_ring *g,
                          int recv_cold)
{
    int P = t->nranks, me = t->rank, rc;
    pgc_stream in[P];
    int nin = 0;
    for (int i = 1; i < P; i++) {
        int p = (me + i) % P;
        pgc_path pp;
        size_t len;
        if ((rc = pgc_xchg_desc(t, p, &pp, &len)))
            return rc;
        if (len != recvbytes[p])
            return pgc_xchg_fail(t, PGC_EINVAL, p, "%s: local rank %d sends %zu bytes but this rank expects %zu",
                                 pgc_current_coll_name(t), p, len, recvbytes[p]);
        char *dst = recvbuf + displs[p];
        if (pp == PGC_PATH_INLINE && len)
            memcpy(dst, pgc_inline_of(t, p, t->seq), len);
        else if (pp == PGC_PATH_CMA) {
            uint64_t addr = atomic_load_explicit(&pgc_ctl_of(t, p)->addr, memory_order_relaxed);
            if ((rc = pgc_coll_cma(t, p, 0, dst, addr, len)))
                return rc;
        } else if (pp == PGC_PATH_CICO)
            in[nin++] = (pgc_stream){p, 0, NULL, dst, len};
    }
    pgc_stream out = {-1, 0, src, NULL, path == PGC_PATH_CICO ? n : 0};
    pgc_stream self = {me, 0, sendbuf, recvbuf + displs[me], sendbuf ? n : 0};
    return pgc_xchg_run(t, g, &out, 1, in, nin, &self, recv_cold);
}

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
    size_t n = recvbytes[me];
    const char *src = sendbuf ? (const char *)sendbuf : (const char *)recvbuf + displs[me];
    pgc_path path = pgc_choose_member_path(t, coll, total, pgc_region_holds(t, src, n));
    pgc_count(t, coll, path);
    rc = allgather_start(t, path, src, n);
    if (!rc)
        rc = allgather_work(t, path, src, n, sendbuf, recvbuf, recvbytes, displs, &g, (flags & PGC_RECV_COLD) != 0);
    /* Ack: our block may be reused once every reader posted FIN. */
    if (!rc)
        rc = pgc_xchg_ack(t, path == PGC_PATH_CMA);
    return pgc_coll_end(t, rc);
}
