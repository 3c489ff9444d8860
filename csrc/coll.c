/* coll.c - what the collectives share: method choice and op completion
 * (see coll.h). */
#include "coll.h"

pgc_path pgc_choose_path(const pgc_team *t, pgc_coll coll, size_t bytes)
{
    if (bytes <= t->cfg.inline_max && bytes <= t->hdr->inline_slot)
        return PGC_PATH_INLINE;
    if (t->cma_ok && bytes >= t->cfg.cma_min[coll])
        return PGC_PATH_CMA;
    return PGC_PATH_CICO;
}

int pgc_wait_peers_done(pgc_team *t, uint32_t back)
{
    uint64_t done = ((uint64_t)(t->op - back) << 32) | PGC_STEP_DONE;
    for (int r = 0; r < t->nranks; r++)
        if (r != t->rank) {
            int rc = pgc_wait_word(t, r, &pgc_ctl_of(t, r)->seq, done);
            if (rc)
                return rc;
        }
    return PGC_OK;
}
