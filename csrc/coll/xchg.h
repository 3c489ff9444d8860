/* xchg.h - the exchange engine shared by Gather(v), Scatter(v),
 * Allgather(v) (coll_gather.c) and Alltoall(v) (coll_alltoall.c):
 * descriptors, per-member (length, offset) tables (at the tail of staging;
 * on the inline path, end offsets in the inline slot), and ONE chunked-ring
 * mechanism (pgc_xchg_run).
 *
 * Protocol. Every member that publishes data posts, in this order:
 *   progress DESC (1)      its descriptor (path and length), plus whatever
 *                          the path needs before anyone reads: inline
 *                          payload, buffer address (ctl addr), per-member
 *                          table (tail of staging)                  [start]
 *   progress ROUND + k     copy-in/copy-out: chunk k of every stream it
 *                          produces is staged                       [work]
 *   ack      k + 1         copy-in/copy-out: chunk k of every stream it
 *                          consumes has been copied out             [work]
 *   ack      FIN           it no longer touches any peer's memory in this
 *                          collective; a member that exposed its buffer
 *                          (cma) waits for the FIN of its readers before
 *                          returning (pgc_xchg_ack)                 [ack]
 *   progress DONE          pgc_coll_end                             [end]
 *
 * Copy-in/copy-out engine (pgc_xchg_run): ONE chunked-ring mechanism for all
 * these collectives. A member's staging area is [ring | table]; the ring is
 * split into `nwin` windows of `slots` chunks. A stream is the bytes one
 * producer sends through one of its windows; its consumer is one member (or
 * every other member). Everyone runs rounds k = 0, 1, ...: stage chunk k of
 * each own stream (slot k % slots, reusable once the consumers acknowledged
 * chunk k - slots), post progress ROUND + k, copy chunk k of the member's
 * own block (src -> dst: useful work while the peers stage chunk k, and the
 * source is still in cache), copy out chunk k of each incoming stream, post
 * ack k + 1; both copies into the receive buffer with streaming stores when
 * it is cold (a block of cfg.recv_stream_min bytes, or PGC_RECV_COLD).
 * Producing round k depends only on rounds <= k - slots and consuming it
 * only on round k being produced, so no cycle can form however many streams
 * cross (proof: the smallest round anyone is stuck in would have to wait for
 * an earlier one).
 *
 * Safety across collectives of the published words:
 *   - the descriptor (path << 56 | length) lives in pgc_desc_of (coll.h):
 *     rotating with the sequence number like the inline slots, because
 *     publishers on the inline and cico paths return without waiting for
 *     their readers; it is written only after pgc_wait_peers_done(t, 1 or
 *     PGC_RUNAHEAD);
 *   - ctl addr is read only on the cma path, whose owner waits for its
 *     readers (FIN, or the pushers' DESC for Gather) before returning;
 *   - the table and the ring (staging) are written only after
 *     pgc_wait_peers_done(t, 1). */
#ifndef PGC_XCHG_H
#define PGC_XCHG_H

#include "coll/coll.h"

#define PGC_XCHG_STEP_DESC 1u
#define PGC_XCHG_STEP_ROUND 2u
#define PGC_XCHG_STEP_FIN 0xfffffff0u
#define PGC_XCHG_MAX_SLOTS 16u /* ring depth per window (see pgc_xchg_ring) */

typedef struct pgc_blk {
    uint64_t len, off; /* a member's block: length and offset (slot, buffer) */
} pgc_blk;

typedef struct pgc_ring {
    size_t off;        /* ring start within a staging area */
    size_t chunk;      /* bytes per slot */
    size_t win_bytes;  /* bytes per window: slots * chunk */
    uint32_t slots;    /* chunks per window */
} pgc_ring;

typedef struct pgc_stream {
    int peer;          /* outgoing: consumer (-1: every other member); incoming: producer */
    uint32_t win;      /* window in the producer's ring */
    const char *src;   /* outgoing and own block: the data */
    char *dst;         /* incoming and own block: where it goes (incoming NULL: consumed, not
                        * copied: a producer of another basic type, coll_gather.c) */
    size_t len;
} pgc_stream;

/* Where the blocks are: a member's table of (length, offset) per member at
 * the tail of its staging, the packed inline slot of a member sending to
 * each member, the block a member gets from a sender, a producer's window
 * for a consumer. */
size_t pgc_xchg_table_bytes(const pgc_team *t);
pgc_blk *pgc_xchg_table(const pgc_team *t, int r);
size_t pgc_xchg_inline_bytes(const pgc_team *t, size_t packed);
void pgc_xchg_pack_inline(pgc_team *t, const char *src, const size_t *len, const size_t *displs);
pgc_blk pgc_xchg_block(const pgc_team *t, int sender, pgc_path path, const char **packed);
uint32_t pgc_xchg_win(const pgc_team *t, int producer, int consumer);
/* Whether every non-empty block but `skip` of the layout (len, displs)
 * over `base` lies in a shared region (region.h): what a publisher checks
 * before it passes shared = 1 to the path choice. */
int pgc_xchg_holds(const pgc_team *t, const char *base, const size_t *len, const size_t *displs, int skip);
/* Fail this member and abort the team (printf-style message). */
int pgc_xchg_fail(pgc_team *t, int code, int peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The phases (coll.h), in order. */
int pgc_xchg_ring(pgc_team *t, pgc_ring *g, uint32_t nwin, const char *name);      /* plan */
void pgc_xchg_publish(pgc_team *t, pgc_path path, size_t len);                      /* start */
int pgc_xchg_desc(pgc_team *t, int peer, pgc_path *path, size_t *len);              /* work */
int pgc_xchg_run(pgc_team *t, const pgc_ring *g, const pgc_stream *out, int nout,   /* work */
                 const pgc_stream *in, int nin, const pgc_stream *self, int recv_cold);
int pgc_xchg_ack(pgc_team *t, int owner);                                           /* ack */

#endif
