/* coll.c - what the collectives share: method choice and op completion
 * (see coll.h). */
#include "cma.h"
#include "coll.h"

pgc_path pgc_choose_path(const pgc_team *t, pgc_coll coll, size_t bytes)
{
    if (bytes <= t->cfg.inline_max && bytes <= t->hdr->inline_slot)
        return PGC_PATH_INLINE;
    if (t->cma_ok && bytes >= t->cfg.cma_min[coll])
        return PGC_PATH_CMA;
    return PGC_PATH_CICO;
}

int pgc_bcast_radix(const pgc_team *t, pgc_path path)
{
    /* A member has at most (k-1) * ceil(log_k P) children: radix 2..16 and
     * P <= 65536 keep that within PGC_TREE_MAX_CHILDREN. */
    if (path == PGC_PATH_INLINE || t->cfg.bcast_tree_min == 0 ||
        (uint32_t)t->nranks < t->cfg.bcast_tree_min || t->nranks > 65536)
        return 0;
    uint32_t k = t->cfg.bcast_radix;
    return k < 2 ? 2 : k > 16 ? 16 : (int)k;
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

int pgc_coll_cma(pgc_team *t, int peer, int write, void *local, uint64_t remote, size_t len)
{
    int rc = pgc_check_aborted(t);
    if (rc || len == 0)
        return rc;
    pid_t pid = pgc_member_of(t, peer)->pid;
    rc = write ? pgc_cma_write(pid, local, remote, len, &t->err)
               : pgc_cma_read(pid, local, remote, len, &t->err);
    if (rc) {
        int arc = pgc_check_aborted(t);
        if (arc)
            return arc;
        t->err.peer = peer;
        pgc_team_abort(t, rc, t->err.msg);
    }
    return rc;
}
