/* coll_barrier.c - Barrier: fan-in to member 0, fan-out from it.
 *
 * Each member posts "arrived" (step 1) on its own line; member 0 waits for
 * all of them and posts DONE, which releases the others. Two line transfers
 * deep, one word per member, no counter to reset. */
#include "coll.h"

int pgc_barrier(pgc_team *t)
{
    int rc = pgc_coll_begin(t, PGC_COLL_BARRIER, "Barrier");
    if (rc)
        return rc;
    pgc_count(t, PGC_COLL_BARRIER, PGC_PATH_INLINE);
    if (t->rank == 0)
        rc = pgc_wait_seq_all(t, 1);
    else {
        pgc_post_seq(t, 1);
        rc = pgc_wait_seq(t, 0, PGC_STEP_DONE);
    }
    return pgc_coll_end(t, rc);
}
