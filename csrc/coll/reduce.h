/* reduce.h - the reduction engine shared by Reduce, Allreduce,
 * Reduce_scatter(_block), Scan and Exscan (coll_reduce.c: their checks,
 * plan and run): the plan of one call (rplan) and the phases of the two
 * paths, inline and cico with single copy inside it (reduce.c).
 *
 * The paths:
 *   inline  (whole vector <= inline_max and fits an inline slot, and no
 *           member folds more than PGC_INLINE_FOLD_MAX bytes) every member
 *           copies its input into its inline slot of this collective
 *           and posts step 1; each member that has a result waits for the
 *           members it needs and folds their slots in rank order into its
 *           receive buffer (Reduce: only the root; Reduce_scatter: its own
 *           block; Scan: members 0..rank; Exscan: 0..rank-1).
 *           Reduce_scatter's members also compare their block bounds
 *           first, on both paths (rs_check_bounds).
 *   cico    (everything larger) partitioned copy-in/copy-out. The vector is
 *           split into P blocks (Reduce_scatter: the recvcounts blocks;
 *           otherwise near-equal blocks with 64-byte aligned boundaries) and
 *           member j owns block j: it combines everybody's contribution to
 *           it, so every member reduces 1/P of the bytes. The blocks are
 *           processed in windows of E elements through the staging areas.
 *           Each member's staging area is two halves (window parity: double
 *           buffering; on oversubscribed teams a vector whose blocks fit
 *           one window of the whole area takes that single window, the
 *           whole area being its "half"); a half is 2P slots of `slot` bytes:
 *             [0, P)   slot j: this member's piece of block j for the window
 *             [P, 2P)  results: Allreduce/Reduce slot P+j holds owner j's
 *                      reduced piece (the Reduce root folds its own block
 *                      straight into recvbuf; Reduce_scatter owners always
 *                      do); Scan/Exscan: owner j leaves member i's prefix
 *                      of block j in slot P+i of its own half.
 *           Per window w, member q:
 *             a. before overwriting half w&1: wait every peer's ack >= w-1
 *                (they are done with window w-2); once at the start,
 *                wait until every peer is done with the previous collective
 *             b. stage its pieces into slots [0, P); post progress 2w+1
 *             c. wait for the members' progress 2w+1 and fold block q's
 *                piece in rank order into its destination
 *             d. post progress 2w+2
 *             e. wait for the owners' progress 2w+2 and copy the result
 *                pieces it receives into its receive buffer
 *             f. post ack w+1: it no longer reads window w of anybody.
 *           Both progress steps of a window and the ack are steps of this
 *           collective's seq (team.h), so nothing is ever reset.
 *   cma     single copy, a member's own choice per collective, within the
 *           cico pipeline (same blocks, windows and steps). A member that is
 *           not in place may expose its buffers instead of staging: owners
 *           pull its pieces of their blocks from its send buffer
 *           (process_vm_readv into their private pull buffer, then fold),
 *           and in Allreduce it folds its own block straight into its
 *           receive buffer, from which the others pull it. It publishes
 *           its choice in its descriptor (pgc_desc_put) and the two
 *           addresses before its first post; readers follow each member's
 *           choice, so members need not agree. An exposing member returns
 *           only after every member acknowledged the last window: nobody
 *           reads its buffers any more. The choice is pgc_choose_member_path's
 *           (coll.h): by size from cfg.cma_min[coll] (never by default: on a
 *           quiet machine staging wins, its copies stay in cache), and for
 *           the collectives in cfg.adapt_mask
 *           while the team's measured costs say single copy is clearly
 *           cheaper: when the cores stop sharing a cache well the stores
 *           into staging, whose lines the readers hold, slow down several
 *           fold, while single copy of a buffer its owner did not change
 *           keeps its speed.
 *
 * Copies in the pipeline use pgc_copy (coll.h, copy.h), not memcpy; copies
 * and kernels take the team's vector loops (t->simd). Non-temporal stores
 * into the receive buffer measured slower still. A member writes its
 * staging with streaming stores only while the team measures them much
 * cheaper than ordinary ones (pgc_stage_xfer: slow periods; on a quiet
 * machine the owners would then read from memory: bench/handoff.c tells
 * the two apart).
 *
 * MPI_IN_PLACE (sendbuf == NULL): the input is in recvbuf. Every member then
 * reads its own contribution from its shared copy (inline slot, staging slot)
 * and never from recvbuf once it may have been overwritten; it never
 * exposes its buffers. Without in place, a member reads its own
 * contribution straight from sendbuf (it does not stage the piece of its
 * own block, saving a copy).
 *
 * A member returns as soon as its own result is complete: peers read only
 * shared memory (never our private buffers, unless we exposed them: then we
 * return after every member's ack of the last window), and the shared areas
 * are protected by the next collective's wait for the peers' DONE of this
 * one (staging: previous seq; inline slots: seq - PGC_RUNAHEAD, their
 * previous user). */
#ifndef PGC_REDUCE_H
#define PGC_REDUCE_H

#include "coll/coll.h"

typedef enum { RK_REDUCE, RK_ALLREDUCE, RK_RSCATTER, RK_SCAN, RK_EXSCAN } rkind;

/* Everything one reduction needs; identical on all members except the
 * buffers. */
typedef struct {
    rkind kind;
    pgc_coll coll;       /* statistics and messages */
    pgc_op op;
    pgc_dtype dt;
    size_t esz;          /* element size */
    int root;            /* Reduce */
    int inplace;         /* sendbuf == NULL */
    int contributes;     /* someone reads our input (not so for the last member of an Exscan) */
    const char *in;      /* this member's input vector (sendbuf, or recvbuf in place) */
    char *out;           /* recvbuf */
    size_t total;        /* elements of the whole vector */
    const size_t *start; /* [P + 1]: block j is elements [start[j], start[j+1]) */
    pgc_path path;       /* INLINE or CICO (team-wide) */
    int expose;          /* cico: this member exposes its buffers (single copy) */
    int measure;         /* cico: time the staging and copy-out (the choice depends on them) */
    pgc_xfer stage;      /* cico, measured: how we write our staging (pgc_stage_xfer) */
    size_t slot;         /* cico: slot bytes */
    size_t elems;        /* cico: E, elements of a block per window */
    uint32_t nwin;       /* cico: windows */
} rplan;

static inline size_t block_len(const rplan *p, int j)
{
    return p->start[j + 1] - p->start[j];
}

/* The phases (coll.h) of each path, in order, between pgc_coll_begin and
 * pgc_coll_end (reduce_run, coll_reduce.c), on a team of several members
 * and a non-empty vector. */
int pgc_reduce_inline_start(pgc_team *t, const rplan *p); /* start */
int pgc_reduce_inline_work(pgc_team *t, const rplan *p);  /* work */
int pgc_reduce_cico_start(pgc_team *t, const rplan *p);   /* start */
int pgc_reduce_cico_work(pgc_team *t, const rplan *p);    /* work */
int pgc_reduce_cico_ack(pgc_team *t, const rplan *p);     /* ack */

#endif
