/* upc_run.c - the program of a member's share of a UPC collective inside a
 * node (upc.h). Phases as in coll.h: check (the program), begin
 * (pgc_coll_begin), start (POST ENTERED), work (WAITs, COPYs, chunk POSTs),
 * end (pgc_coll_end, posting DONE) and the OUT waits after it. */
#include "upc/upc.h"

#include "coll/coll.h"

static int check_program(pgc_team *t, pgc_coll coll, const pgc_upc_step *prog, size_t n)
{
    if (coll < PGC_COLL_UPC_BROADCAST || coll > PGC_COLL_UPC_PREFIX_REDUCE)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "pgc_upc_run: collective %d is not a UPC one", (int)coll);
    for (size_t i = 0; i < n; i++) {
        const pgc_upc_step *s = &prog[i];
        int ok = s->kind == PGC_UPC_COPY || s->kind == PGC_UPC_END ||
                 (s->kind == PGC_UPC_POST && s->a >= PGC_UPC_ENTERED && s->a < PGC_STEP_DONE) ||
                 (s->kind == PGC_UPC_WAIT && (s->a == PGC_UPC_ALL || (s->a < (uint64_t)t->nranks &&
                                                                    s->a != (uint64_t)t->rank)) &&
                  s->b >= PGC_UPC_ENTERED && s->b <= PGC_STEP_DONE);
        if (!ok)
            return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: step %zu of the program is invalid "
                                 "(kind %llu, %llu, %llu)", pgc_coll_name(coll), i,
                                 (unsigned long long)s->kind, (unsigned long long)s->a,
                                 (unsigned long long)s->b);
    }
    return PGC_OK;
}

static int wait_step(pgc_team *t, uint64_t peer, uint32_t step)
{
    if (peer == PGC_UPC_ALL)
        return pgc_wait_step_all(t, step);
    return pgc_wait_step(t, (int)peer, step);
}

int pgc_upc_run(pgc_team *t, pgc_coll coll, uint32_t arg, const pgc_upc_step *prog, size_t n)
{
    int rc = check_program(t, coll, prog, n);
    if (rc)
        return rc;
    if ((rc = pgc_coll_begin(t, coll, arg)))
        return rc;
    int ended = 0;
    for (size_t i = 0; i < n && rc == PGC_OK; i++) {
        const pgc_upc_step *s = &prog[i];
        switch (s->kind) {
        case PGC_UPC_WAIT:
            /* acquire (pgc_wait_word): what the peer wrote into the parts
             * before its post is visible to the copies after this wait */
            rc = wait_step(t, s->a, (uint32_t)s->b);
            break;
        case PGC_UPC_COPY:
            pgc_copy(t, (void *)(uintptr_t)s->a, (const void *)(uintptr_t)s->b, (size_t)s->c);
            break;
        case PGC_UPC_POST:
            /* release (pgc_publish): the copies before it are visible to a
             * peer that sees the step */
            pgc_post_step(t, (uint32_t)s->a);
            break;
        case PGC_UPC_END:
            /* DONE, released after every copy of ours: a peer's OUT wait
             * that sees it may reuse what we read or wrote */
            rc = pgc_coll_end(t, rc);
            ended = 1;
            break;
        }
    }
    return ended ? rc : pgc_coll_end(t, rc);
}
