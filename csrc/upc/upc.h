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
 *   PGC_UPC_ARRIVE n         count this member's arrival in the call's
 *                            arrival word; unless it is the last member to
 *                            arrive, skip the next n steps
 *   PGC_UPC_OPTYPE op dtype  the reduction of the FOLD, SCAN and LEFT steps
 *                            after it: a pgc_upc_op on a pgc_dtype
 *   PGC_UPC_FOLD dst src n   *dst = the fold of the n elements at src; with
 *                            PGC_UPC_INTO in n, *dst = *dst op that fold
 *   PGC_UPC_SCAN dst src n   dst[i] = src[0] op ... op src[i], i < n
 *   PGC_UPC_LEFT dst carry n dst[i] = *carry op dst[i], i < n
 *
 * The same steps express every algorithm: a flat pull (wait for the
 * owner's ENTERED, copy out of its part), a flat push (copy into the
 * readers' parts, post), trees (wait for the parent's chunk step, copy,
 * post our own), fragmentation (one step per chunk), and the
 * reductions (fold each member's run into a partial, then the partials
 * along a flat or binomial tree, chunk by chunk when fragmented), the
 * synchronisation flags (IN_ALLSYNC: WAIT ALL ENTERED before any copy;
 * IN_MYSYNC: WAIT only the members whose parts the copies touch;
 * OUT_ALLSYNC: END then WAIT ALL DONE; OUT_MYSYNC: END then WAIT the
 * members that touch our parts; the last arrival below). Steps of a call: PGC_UPC_ENTERED, then
 * PGC_UPC_STEP0 + k for a chunk k, then DONE.
 *
 * The last arrival ("last"): ARRIVE n, the n copies of every block, END,
 * WAIT ALL DONE. Both ALLSYNCs in one round: the member that arrives last
 * knows every member entered (IN), makes every copy, and its DONE tells the
 * others, who posted theirs on arrival, that all is done (OUT). Nobody waits
 * for a given member to be scheduled before the copies (a root's fan-in then
 * fan-out would make the root one more hop), which matters when ranks
 * outnumber cores. The arrival word is (seq & 0xffffff) << 40 | a 24-bit
 * hash of the call's signature << 16 | the count: a member whose call's
 * signature differs is not counted (the OUT wait then finds the mismatch
 * by the signatures, before anything moved), a word of another seq or
 * complete is this call's first arrival.
 *
 * An address operand with PGC_UPC_SLOT set names a byte in a member's
 * partial-result area instead: PGC_UPC_SLOT | member << 32 | offset is
 * `offset` bytes into that member's inline slot of this call's seq
 * (pgc_inline_of), where the reductions keep their partials: no buffer to
 * allocate, and free, since pgc_coll_begin keeps every member within
 * PGC_RUNAHEAD calls of its slowest peer, so the slot's previous user (seq
 * - PGC_RUNAHEAD) is done with it. */
#ifndef PGC_UPC_H
#define PGC_UPC_H

#include <stdint.h>

#include "team/team.h"

enum { PGC_UPC_WAIT = 1, PGC_UPC_COPY = 2, PGC_UPC_POST = 3, PGC_UPC_END = 4 };
#define PGC_UPC_ALL UINT64_MAX      /* WAIT's peer: every other member */
#define PGC_UPC_ENTERED 1u          /* "this member entered the call" */
#define PGC_UPC_STEP0 2u            /* the first chunk step of a tree */
enum { PGC_UPC_OPTYPE = 5, PGC_UPC_FOLD = 6, PGC_UPC_SCAN = 7, PGC_UPC_LEFT = 8, PGC_UPC_ARRIVE = 9 };
#define PGC_UPC_SLOT (1ull << 63)   /* an address operand in a member's partial-result area */
#define PGC_UPC_INTO (1ull << 63)   /* FOLD's n: combine into *dst rather than overwrite it */

/* UPC's built-in reduction operators (upc_op_t), in pgascol.upc's order. */
typedef enum {
    PGC_UPC_ADD, PGC_UPC_MULT, PGC_UPC_LOGAND, PGC_UPC_LOGOR, PGC_UPC_AND, PGC_UPC_OR, PGC_UPC_XOR,
    PGC_UPC_MIN, PGC_UPC_MAX, PGC_UPC_NOPS
} pgc_upc_op;

/* One step of a member's program: kind, then up to three operands. */
typedef struct pgc_upc_step {
    uint64_t kind, a, b, c;
} pgc_upc_step;

/* Run this member's program for UPC collective `coll` (a PGC_COLL_UPC_*),
 * whose signature argument `arg` hashes what the members must agree on.
 * Checks the program before anything moves (PGC_EINVAL: a peer or a step
 * out of range). 0 or PGC_E*, details in t->err. */
int pgc_upc_run(pgc_team *t, pgc_coll coll, uint32_t arg, const pgc_upc_step *prog, size_t n);

/* Whether UPC defines op on type t (one of its eleven reduce types:
 * pgc_dtype int8 ... longdouble; AND, OR, XOR on the integer ones only). */
int pgc_upc_op_valid(pgc_upc_op op, pgc_dtype t);

/* The folds (upc_fold.c), in index order; an invalid pair does nothing.
 * fold: *out = src[0] op ... op src[n-1] (n > 0). scan: dst[i] = src[0] op
 * ... op src[i] (dst may be src). left: dst[i] = *carry op dst[i]. */
void pgc_upc_fold(pgc_upc_op op, pgc_dtype t, void *out, const void *src, size_t n);
void pgc_upc_scan(pgc_upc_op op, pgc_dtype t, void *dst, const void *src, size_t n);
void pgc_upc_left(pgc_upc_op op, pgc_dtype t, void *dst, const void *carry, size_t n);

#endif
