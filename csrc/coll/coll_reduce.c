/* coll_reduce.c - Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan.
 *
 * Deterministic: every element is combined in rank order,
 *     acc = x0; acc = acc op x1; ...; acc = acc op x(P-1)
 * (prefixes stop early for Scan/Exscan), by exactly one member, whatever the
 * timing. Allreduce results are therefore bit-identical on all members and
 * across runs, even for floating point.
 *
 * This file checks each collective's arguments, plans it (its blocks,
 * path and windows, alike on every member: reduce_plan) and runs it
 * (reduce_run: begin, the path's start, work and ack, end). The paths,
 * inline and partitioned copy-in/copy-out (cico) with single copy (cma)
 * inside it, are the reduction engine: reduce.h tells how each works,
 * reduce.c holds them. */
#include <string.h>

#include "coll/reduce.h"

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
        return pgc_coll_end(t, rc); /* a refusal met, or PGC_ON_MPI */
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
        rc = pgc_reduce_inline_start(t, p);
        if (!rc)
            rc = pgc_reduce_inline_work(t, p);
    } else {
        rc = pgc_reduce_cico_start(t, p);
        if (!rc)
            rc = pgc_reduce_cico_work(t, p);
        if (!rc)
            rc = pgc_reduce_cico_ack(t, p);
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
