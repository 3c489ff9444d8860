/* xchg.h - the copy-in/copy-out exchange engine shared by Gather(v),
 * Scatter(v), Allgather(v) (coll_gather.c) and Alltoall(v) (coll_alltoall.c):
 * descriptors, per-member (length, offset) tables (at the tail of staging;
 * on the inline path, end offsets in the inline slot), and ONE chunked-ring
 * mechanism (pgc_xchg_run). The protocol is described at the top of
 * coll_gather.c. */
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
    char *dst;         /* incoming and own block: where it goes */
    size_t len;
} pgc_stream;

size_t pgc_xchg_table_bytes(const pgc_team *t);
pgc_blk *pgc_xchg_table(const pgc_team *t, int r);
size_t pgc_xchg_inline_bytes(const pgc_team *t, size_t packed);
void pgc_xchg_pack_inline(pgc_team *t, const char *src, const size_t *len, const size_t *displs);
pgc_blk pgc_xchg_block(const pgc_team *t, int sender, pgc_path path, const char **packed);
uint32_t pgc_xchg_win(const pgc_team *t, int producer, int consumer);
int pgc_xchg_fail(pgc_team *t, int code, int peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int pgc_xchg_ring(pgc_team *t, pgc_ring *g, uint32_t nwin, const char *name);
void pgc_xchg_publish(pgc_team *t, pgc_path path, size_t len);
int pgc_xchg_desc(pgc_team *t, int peer, pgc_path *path, size_t *len);
int pgc_xchg_run(pgc_team *t, const pgc_ring *g, const pgc_stream *out, int nout,
                 const pgc_stream *in, int nin, const pgc_stream *self, int recv_cold);
int pgc_xchg_finish(pgc_team *t, int owner);

#endif
