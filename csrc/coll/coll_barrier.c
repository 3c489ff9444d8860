/* coll_barrier.c - Barrier: every member posts "arrived" (step 1) on its own
 * line and waits until every other member has arrived. One line transfer
 * deep, one word per member, no counter to reset: nobody waits for a relay,
 * which matters when ranks outnumber cores (the relay would have to be
 * scheduled once more before anyone could leave). */
#include "coll/coll.h"

int pgc_barrier(pgc_team *t)
{
    int rc = pgc_coll_begin(t, PGC_COLL_BARRIER, 0);
    if (rc)
        return rc;
    pgc_count(t, PGC_COLL_BARRIER, PGC_PATH_INLINE);
    pgc_post_step(t, 1);          /* start: arrived */
    rc = pgc_wait_step_all(t, 1); /* work: everyone arrived */
    return pgc_coll_end(t, rc);
}
