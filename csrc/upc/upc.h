/* upc.h - UPC's collectives on global arrays inside a node (pgascol.upc).
 *
 * Every part of a global array on this node is mapped by every member, so a
 * UPC collective's data movement inside a node is plain copies between
 * parts, and its synchronisation is posts and waits on the team's progress
 * words (sync.h). pgascol/upc computes, per call (cached per arrays and
 * arguments), this member's share of the collective as a short program of
 * steps over addresses in its own address space, and pgc_upc_run runs it:
 *
 *   PGC_UPC_WAIT peer step   wait until member `peer` (or every other
 *                            member: PGC_UPC_ALL) posted `step` of this call
 *   PGC_UPC_COPY dst src len copy len bytes (pgc_copy)
 *   PGC_UPC_POST step        post `step` of this call on our progress word
 *   PGC_UPC_END              end the call (pgc_coll_end: DONE is posted);
 *                            the WAITs after it are the OUT synchronisation
 *
 * The same steps express every algorithm: a flat pull (wait for the
 * owner's ENTERED, copy out of its part), a flat push (copy into the
 * readers' parts, post), trees (wait for the parent's chunk step, copy,
 * post our own), fragmentation (one step per chunk), and the
 * synchronisation flags (IN_ALLSYNC: WAIT ALL ENTERED before any copy;
 * IN_MYSYNC: WAIT only the members whose parts the copies touch;
 * OUT_ALLSYNC: END then WAIT ALL DONE; OUT_MYSYNC: END then WAIT the
 * members that touch our parts). Steps of a call: PGC_UPC_ENTERED, then
 * PGC_UPC_STEP0 + k for a chunk k, then DONE. */
#ifndef PGC_UPC_H
#define PGC_UPC_H

#include <stdint.h>

#include "team/team.h"

enum { PGC_UPC_WAIT = 1, PGC_UPC_COPY = 2, PGC_UPC_POST = 3, PGC_UPC_END = 4 };
#define PGC_UPC_ALL UINT64_MAX      /* WAIT's peer: every other member */
#define PGC_UPC_ENTERED 1u          /* "this member entered the call" */
#define PGC_UPC_STEP0 2u            /* the first chunk step of a tree */

/* One step of a member's program: kind, then up to three operands. */
typedef struct pgc_upc_step {
    uint64_t kind, a, b, c;
} pgc_upc_step;

/* Run this member's program for UPC collective `coll` (a PGC_COLL_UPC_*),
 * whose signature argument `arg` hashes what the members must agree on.
 * Checks the program before anything moves (PGC_EINVAL: a peer or a step
 * out of range). 0 or PGC_E*, details in t->err. */
int pgc_upc_run(pgc_team *t, pgc_coll coll, uint32_t arg, const pgc_upc_step *prog, size_t n);

#endif
