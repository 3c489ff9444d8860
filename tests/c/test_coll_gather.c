/* test_coll_gather.c - Gather(v), Scatter(v), Allgather(v), Alltoall(v) on
 * teams of 1..8 forked processes (no MPI, no Python).
 *
 *   gcc -O3 -std=gnu11 -Wall -Wextra -Werror -Icsrc $(find csrc -name '*.c') \
 *       tests/c/test_coll_gather.c -o /tmp/test_coll_gather -lm
 *
 * For every team size and each forced path family (cico: cma_min = never;
 * cma: cma_min = 0 for these collectives; mixed: single copy from the odd
 * members only), every operation runs in its fixed
 * form, its v-form (uneven counts, zero counts, displacements in reverse rank
 * order with gaps that must keep their sentinel) and in place, for block
 * sizes 0, 1, around inline_max, around the chunk, and over the ring size,
 * for every root; also cico through a tiny staging area. Then 200
 * back-to-back calls of alternating sizes that scribble over their send
 * buffers right after return. Separately, a count
 * mismatch must fail the member that detects it with PGC_EINVAL, the others
 * with PGC_EABORTED (or success if they were already done), without a hang;
 * so must a member refusing its arguments (the root passing no counts).
 * Then back-to-back small Scatterv and Alltoallv with a slow member, whose
 * inline senders run ahead (run_ahead_body). Then Gather(v) and Scatter(v)
 * where the last member states int32 and the others float64 at the same
 * byte count (types_body): no bytes move between members of different
 * types, the members that see it end with PGC_ETYPE, the next call works.
 * PGC_TEST_STATS=1 prints the paths taken per collective.
 * Prints "N passed, M failed"; exits 1 on failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "check.h"
#include "team_fork.h"

#define MAXP 8
#define SENT 0xA5
#define SCRIBBLE 0x5A
#define CAP (8u << 20) /* per buffer: Alltoallv of 8 x 450 KB blocks fits */

typedef struct {
    int rc[MAXP];       /* mismatch test: each member's result */
    double secs[MAXP];  /* mismatch test: each member's time in the op */
} shared_t;
static shared_t *sh;

/* byte i of the block `from` sends to `to` */
static inline uint8_t pat(unsigned seed, int from, int to, size_t i)
{
    return (uint8_t)(seed * 131u + (unsigned)from * 29u + (unsigned)to * 17u + i * 7u + (i >> 9) * 3u + 1u);
}

static void fill_block(uint8_t *p, size_t n, unsigned seed, int from, int to)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pat(seed, from, to, i);
}

/* v-form count of the pair (a, b), symmetric in a and b (needed in place
 * for Alltoallv); zero for about one pair in five. */
static size_t vcount(size_t B, int a, int b, unsigned seed)
{
    unsigned h = (unsigned)(a + b) * 7u + (unsigned)(a * b) * 3u + seed;
    if (B == 0 || h % 5 == 2)
        return 0;
    return B / 2 + (size_t)(h * 977u) % (B + 1);
}

/* Displacements: fixed form contiguous in rank order; v-form in reverse
 * rank order with a gap before every block. Returns the span. */
static size_t layout(int P, const size_t *cnt, size_t *dsp, int v, unsigned seed)
{
    size_t off = 0;
    for (int k = 0; k < P; k++) {
        int q = v ? P - 1 - k : k;
        if (v)
            off += 16 + 8 * (((unsigned)q * 3u + seed) % 5);
        dsp[q] = off;
        off += cnt[q];
    }
    return off + (v ? 16 : 0);
}

typedef struct {
    pgc_team *t;
    uint8_t *send, *recv, *exp;
} ctx_t;

/* compare `got` with `exp` over n bytes, report the first difference */
static int same(ctx_t *c, const uint8_t *got, size_t n, const char *what)
{
    if (memcmp(got, c->exp, n) == 0)
        return 1;
    size_t i = 0;
    while (got[i] == c->exp[i])
        i++;
    fprintf(stderr, "  rank %d: %s: byte %zu of %zu is 0x%02x, expected 0x%02x\n",
            c->t->rank, what, i, n, got[i], c->exp[i]);
    return 0;
}

enum { FIXED, VFORM, INPLACE };
static const char *vname[] = {"fixed", "v", "in-place"};

static void run_gather(ctx_t *c, size_t B, int var, int root, unsigned seed)
{
    pgc_team *t = c->t;
    int P = t->nranks, me = t->rank;
    size_t cnt[MAXP] = {0}, dsp[MAXP] = {0};
    for (int q = 0; q < P; q++)
        cnt[q] = var == FIXED ? B : vcount(B, q, 0, seed);
    size_t span = layout(P, cnt, dsp, var != FIXED, seed);
    fill_block(c->send, cnt[me], seed, me, root);
    memset(c->recv, SENT, span);
    const void *sb = c->send;
    if (var == INPLACE && me == root) {
        memcpy(c->recv + dsp[me], c->send, cnt[me]);
        sb = NULL;
    }
    int isroot = me == root;
    int rc = pgc_gather(t, var == FIXED ? PGC_COLL_GATHER : PGC_COLL_GATHERV, sb, cnt[me],
                        isroot ? c->recv : NULL, isroot ? cnt : NULL, isroot ? dsp : NULL, root, -1);
    memset(c->send, SCRIBBLE, cnt[me]); /* reuse at once */
    CHECK_MEMBER(t, rc == 0, "Gather %s B=%zu root=%d: rc %d: %s", vname[var], B, root, rc, t->err.msg);
    if (isroot) {
        memset(c->exp, SENT, span);
        for (int q = 0; q < P; q++)
            fill_block(c->exp + dsp[q], cnt[q], seed, q, root);
        CHECK_MEMBER(t, same(c, c->recv, span, "gather"), "Gather %s B=%zu root=%d: wrong data",
                     vname[var], B, root);
    }
}

static void run_scatter(ctx_t *c, size_t B, int var, int root, unsigned seed)
{
    pgc_team *t = c->t;
    int P = t->nranks, me = t->rank, isroot = me == root;
    size_t cnt[MAXP] = {0}, dsp[MAXP] = {0};
    for (int q = 0; q < P; q++)
        cnt[q] = var == FIXED ? B : vcount(B, q, 0, seed);
    size_t span = layout(P, cnt, dsp, var != FIXED, seed);
    if (isroot) {
        memset(c->send, SENT, span);
        for (int q = 0; q < P; q++)
            fill_block(c->send + dsp[q], cnt[q], seed, root, q);
    }
    memset(c->recv, SENT, cnt[me] + 64);
    void *rb = var == INPLACE && isroot ? NULL : c->recv;
    int rc = pgc_scatter(t, var == FIXED ? PGC_COLL_SCATTER : PGC_COLL_SCATTERV, isroot ? c->send : NULL,
                         isroot ? cnt : NULL, isroot ? dsp : NULL, rb, cnt[me], root, -1);
    if (isroot)
        memset(c->send, SCRIBBLE, span);
    CHECK_MEMBER(t, rc == 0, "Scatter %s B=%zu root=%d: rc %d: %s", vname[var], B, root, rc, t->err.msg);
    memset(c->exp, SENT, cnt[me] + 64);
    if (rb)
        fill_block(c->exp, cnt[me], seed, root, me);
    CHECK_MEMBER(t, same(c, c->recv, cnt[me] + 64, "scatter"), "Scatter %s B=%zu root=%d: wrong data",
                 vname[var], B, root);
}

static void run_allgather(ctx_t *c, size_t B, int var, unsigned seed)
{
    pgc_team *t = c->t;
    int P = t->nranks, me = t->rank;
    size_t cnt[MAXP] = {0}, dsp[MAXP] = {0};
    for (int q = 0; q < P; q++)
        cnt[q] = var == FIXED ? B : vcount(B, q, 0, seed);
    size_t span = layout(P, cnt, dsp, var != FIXED, seed);
    fill_block(c->send, cnt[me], seed, me, -1);
    memset(c->recv, SENT, span);
    const void *sb = c->send;
    if (var == INPLACE) {
        memcpy(c->recv + dsp[me], c->send, cnt[me]);
        sb = NULL;
    }
    /* every other case declares the receive buffer cold: streamed writes */
    unsigned flags = seed & 1 ? PGC_RECV_COLD : 0;
    int rc = pgc_allgather(t, var == FIXED ? PGC_COLL_ALLGATHER : PGC_COLL_ALLGATHERV, sb, cnt[me],
                           c->recv, cnt, dsp, flags);
    memset(c->send, SCRIBBLE, cnt[me]);
    CHECK_MEMBER(t, rc == 0, "Allgather %s B=%zu flags=%u: rc %d: %s", vname[var], B, flags, rc, t->err.msg);
    memset(c->exp, SENT, span);
    for (int q = 0; q < P; q++)
        fill_block(c->exp + dsp[q], cnt[q], seed, q, -1);
    CHECK_MEMBER(t, same(c, c->recv, span, "allgather"), "Allgather %s B=%zu flags=%u: wrong data", vname[var],
                 B, flags);
    if (var == INPLACE)
        memset(c->recv, SCRIBBLE, span);
}

static void run_alltoall(ctx_t *c, size_t B, int var, unsigned seed)
{
    pgc_team *t = c->t;
    int P = t->nranks, me = t->rank;
    size_t scnt[MAXP] = {0}, sdsp[MAXP] = {0}, rcnt[MAXP] = {0}, rdsp[MAXP] = {0};
    for (int q = 0; q < P; q++) {
        /* v-form not in place: asymmetric counts (a different seed per direction) */
        scnt[q] = var == FIXED ? B : vcount(B, me, q, var == INPLACE ? seed : seed + (unsigned)me);
        rcnt[q] = var == FIXED ? B : vcount(B, q, me, var == INPLACE ? seed : seed + (unsigned)q);
    }
    size_t sspan = layout(P, scnt, sdsp, var != FIXED, seed + 1);
    size_t rspan = layout(P, rcnt, rdsp, var != FIXED, seed);
    memset(c->recv, SENT, rspan);
    int rc;
    if (var == INPLACE) {
        for (int q = 0; q < P; q++) /* symmetric counts: scnt == rcnt */
            fill_block(c->recv + rdsp[q], rcnt[q], seed, me, q);
        rc = pgc_alltoall(t, PGC_COLL_ALLTOALLV, NULL, NULL, NULL, c->recv, rcnt, rdsp);
    } else {
        memset(c->send, SENT, sspan);
        for (int q = 0; q < P; q++)
            fill_block(c->send + sdsp[q], scnt[q], seed, me, q);
        rc = pgc_alltoall(t, var == FIXED ? PGC_COLL_ALLTOALL : PGC_COLL_ALLTOALLV, c->send, scnt, sdsp,
                          c->recv, rcnt, rdsp);
        memset(c->send, SCRIBBLE, sspan);
    }
    CHECK_MEMBER(t, rc == 0, "Alltoall %s B=%zu: rc %d: %s", vname[var], B, rc, t->err.msg);
    memset(c->exp, SENT, rspan);
    for (int p = 0; p < P; p++)
        fill_block(c->exp + rdsp[p], rcnt[p], seed, p, me);
    CHECK_MEMBER(t, same(c, c->recv, rspan, "alltoall"), "Alltoall %s B=%zu: wrong data", vname[var], B);
    if (var == INPLACE)
        memset(c->recv, SCRIBBLE, rspan);
}

static int body(pgc_team *t, void *arg)
{
    int mode = *(int *)arg;
    int P = t->nranks;
    /* mixed: odd members send by single copy, even ones stage (a member's
     * own copy of the thresholds; readers follow each sender's path) */
    if (mode == 3 && t->rank % 2)
        for (int i = PGC_COLL_GATHER; i <= PGC_COLL_ALLTOALLV; i++)
            t->cfg.cma_min[i] = 0;
    int cma_mode = mode == 1 || (mode == 3 && t->rank % 2);
    ctx_t c = {t, malloc(CAP), malloc(CAP), malloc(CAP)};
    if (!c.send || !c.recv || !c.exp)
        return 1;
    int fail0 = atomic_load(&check_n->fail);
    /* arguments every member sees alike are refused without breaking the team */
    size_t one[MAXP] = {0}, zero[MAXP] = {0};
    CHECK_MEMBER(t, pgc_gather(t, PGC_COLL_GATHER, c.send, 0, c.recv, one, zero, P, -1) == PGC_EINVAL,
                 "bad root accepted");
    CHECK_MEMBER(t, pgc_scatter(t, PGC_COLL_SCATTER, c.send, one, zero, c.recv, 0, -1, -1) == PGC_EINVAL,
                 "bad root accepted");
    CHECK_MEMBER(t, pgc_allgather(t, PGC_COLL_BCAST, c.send, 0, c.recv, one, zero, 0) == PGC_EINVAL,
                 "bad coll accepted");
    CHECK_MEMBER(t, pgc_alltoall(t, PGC_NCOLL, c.send, one, zero, c.recv, one, zero) == PGC_EINVAL,
                 "bad coll accepted");
    /* 0, 1, around inline_max (256), around the chunk (16 KiB), and 19
     * chunks: more than a whole ring (15 slots besides the table) */
    const size_t sizes[] = {0, 1, 255, 256, 257, 16383, 16384, 16385, 300000};
    const int nsizes = (int)(sizeof sizes / sizeof *sizes);
    unsigned seed = 1;
    for (int si = 0; si < nsizes; si++)
        for (int var = FIXED; var <= INPLACE; var++) {
            size_t B = sizes[si];
            for (int root = 0; root < P; root++) {
                run_gather(&c, B, var, root, seed++);
                run_scatter(&c, B, var, root, seed++);
            }
            run_allgather(&c, B, var, seed++);
            run_alltoall(&c, B, var, seed++);
        }
    /* 200 back-to-back calls of alternating sizes and operations on the
     * same buffers, scribbled right after each return */
    const size_t b2b[] = {100, 40000, 3, 70000, 0, 20000};
    for (int i = 0; i < 200; i++) {
        size_t B = b2b[i % 6];
        int var = (i / 6) % 3;
        switch ((i / 2) % 4) {
        case 0: run_gather(&c, B, var, i % P, seed++); break;
        case 1: run_scatter(&c, B, var, (i * 3) % P, seed++); break;
        case 2: run_allgather(&c, B, var, seed++); break;
        default: run_alltoall(&c, B, var, seed++); break;
        }
    }
    if (getenv("PGC_TEST_STATS") && t->rank == 1)
        for (int coll = PGC_COLL_GATHER; coll <= PGC_COLL_ALLTOALLV; coll++)
            fprintf(stderr, "  P=%d mode %d coll %d: inline %lu cico %lu cma %lu\n", P, cma_mode, coll,
                    (unsigned long)t->stats[coll][0], (unsigned long)t->stats[coll][1], (unsigned long)t->stats[coll][2]);
    /* the forced path was taken */
    uint64_t n[PGC_NPATH] = {0};
    for (int coll = PGC_COLL_GATHER; coll <= PGC_COLL_ALLTOALLV; coll++)
        for (int p = 0; p < PGC_NPATH; p++)
            n[p] += t->stats[coll][p];
    if (P > 1) {
        CHECK_MEMBER(t, n[PGC_PATH_INLINE] > 0 && (cma_mode || n[PGC_PATH_CICO] > 0),
                     "paths not exercised: inline %lu cico %lu",
                     (unsigned long)n[PGC_PATH_INLINE], (unsigned long)n[PGC_PATH_CICO]);
        if (cma_mode && t->cma_ok)
            CHECK_MEMBER(t, n[PGC_PATH_CMA] > 0, "cma forced but never used");
        if (mode == 0 || mode == 2) /* (mixed: Scatter counts the root's path) */
            CHECK_MEMBER(t, n[PGC_PATH_CMA] == 0, "cma used %lu times while disabled",
                         (unsigned long)n[PGC_PATH_CMA]);
        if (cma_mode && !t->cma_ok && t->rank == 0)
            printf("  note: single copy unavailable: %s\n", t->cma_reason);
    }
    free(c.send);
    free(c.recv);
    free(c.exp);
    int ok = pgc_barrier(t) == 0;
    return !ok || atomic_load(&check_n->fail) != fail0;
}

/* ---- inline senders run ahead ----
 * Back-to-back small Scatterv and Alltoallv with a slow member: the root and
 * the senders that publish inline return without waiting for their readers
 * and run up to PGC_RUNAHEAD ops ahead (pgc_xchg_pack_inline). A slot must
 * not be overwritten while the slow member still reads an earlier op, and
 * every 37th call, too large for the slot (the table in staging), must wait
 * for it. Blocks change size every call (offsets move in the slot); send
 * buffers are scribbled at once. */
static int run_ahead_body(pgc_team *t, void *arg)
{
    (void)arg;
    int P = t->nranks, me = t->rank, root = 0, slow = P - 1, bad = 0;
    int fail0 = atomic_load(&check_n->fail);
    uint8_t send[MAXP * 320], recv[MAXP * 320];
    size_t cnt[MAXP], dsp[MAXP], rcnt[MAXP], rdsp[MAXP];
    uint64_t paths[PGC_NPATH] = {0};
    for (int it = 0; it < 400 && !bad; it++) {
        unsigned seed = (unsigned)it * 11u + 5u;
        size_t off = 0;
        for (int q = 0; q < P; q++) {
            cnt[q] = it % 37 == 36 ? 300 + (size_t)q : (size_t)((it + q) % 5) * 3;
            dsp[q] = off;
            off += cnt[q];
        }
        if (me == slow && P > 1 && it % 7 == 0)
            usleep(300);
        /* Scatterv from member 0 */
        for (int q = 0; q < P && me == root; q++)
            fill_block(send + dsp[q], cnt[q], seed, root, q);
        memset(recv, SENT, sizeof recv);
        int rc = pgc_scatter(t, PGC_COLL_SCATTERV, send, me == root ? cnt : NULL, me == root ? dsp : NULL,
                             recv, cnt[me], root, -1);
        memset(send, SCRIBBLE, sizeof send);
        for (size_t i = 0; i < cnt[me] && !rc; i++)
            bad |= recv[i] != pat(seed, root, me, i);
        bad |= rc != 0 || recv[cnt[me]] != SENT;
        CHECK_MEMBER(t, !bad, "run-ahead Scatterv %d: rc %d %s", it, rc, t->err.msg);
        /* Alltoallv: member p sends cnt[q] bytes to q */
        for (int q = 0; q < P; q++) {
            fill_block(send + dsp[q], cnt[q], seed + 1, me, q);
            rcnt[q] = cnt[me];
            rdsp[q] = (size_t)q * cnt[me];
        }
        memset(recv, SENT, sizeof recv);
        rc = pgc_alltoall(t, PGC_COLL_ALLTOALLV, send, cnt, dsp, recv, rcnt, rdsp);
        memset(send, SCRIBBLE, sizeof send);
        for (int p = 0; p < P && !rc; p++)
            for (size_t i = 0; i < cnt[me]; i++)
                bad |= recv[rdsp[p] + i] != pat(seed + 1, p, me, i);
        bad |= rc != 0 || recv[(size_t)P * cnt[me]] != SENT;
        CHECK_MEMBER(t, !bad, "run-ahead Alltoallv %d: rc %d %s", it, rc, t->err.msg);
    }
    for (int p = 0; p < PGC_NPATH; p++)
        paths[p] = t->stats[PGC_COLL_SCATTERV][p] + t->stats[PGC_COLL_ALLTOALLV][p];
    if (P > 1)
        CHECK_MEMBER(t, paths[PGC_PATH_INLINE] > 0 && paths[PGC_PATH_CICO] > 0,
                     "run-ahead: paths inline %lu cico %lu", (unsigned long)paths[PGC_PATH_INLINE],
                     (unsigned long)paths[PGC_PATH_CICO]);
    int ok = pgc_barrier(t) == 0;
    return !ok || atomic_load(&check_n->fail) != fail0;
}

/* ---- basic types that differ at the same byte count ----
 * The last member states int32, the others float64. Gather(v): the root
 * holds the blocks of the senders of its own type, the others' places keep
 * their sentinel, and it ends with PGC_ETYPE. Scatter(v): a receiver of
 * another type than the root's finds its buffer untouched and ends with
 * PGC_ETYPE, the others have their block. Inline, staged (the ring wraps)
 * and single copy, every root; then a correct call on every member. */
static int types_body(pgc_team *t, void *arg)
{
    int mode = *(int *)arg, P = t->nranks, me = t->rank, odd = P - 1;
    if (mode == 3 && me % 2)
        for (int i = PGC_COLL_GATHER; i <= PGC_COLL_ALLTOALLV; i++)
            t->cfg.cma_min[i] = 0;
    ctx_t c = {t, malloc(CAP), malloc(CAP), malloc(CAP)};
    const size_t sizes[] = {8, 200, 40000, 300000};
    unsigned seed = 500;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int var = FIXED; var <= VFORM; var++)
            for (int root = 0; root < P; root++, seed++) {
                size_t B = sizes[si], cnt[MAXP] = {0}, dsp[MAXP] = {0};
                for (int q = 0; q < P; q++)
                    cnt[q] = var == FIXED ? B : vcount(B, q, 0, seed) + 8;
                size_t span = layout(P, cnt, dsp, var == VFORM, seed);
                int isroot = me == root, mine = me == odd ? PGC_INT32 : PGC_FLOAT64;
                int differs = (me == odd) != (root == odd);
                /* Gather(v) */
                fill_block(c.send, cnt[me], seed, me, root);
                memset(c.recv, SENT, span);
                int rc = pgc_gather(t, var == FIXED ? PGC_COLL_GATHER : PGC_COLL_GATHERV, c.send, cnt[me],
                                    isroot ? c.recv : NULL, isroot ? cnt : NULL, isroot ? dsp : NULL, root, mine);
                CHECK_MEMBER(t, isroot ? rc == PGC_ETYPE : rc == PGC_OK || rc == PGC_ETYPE,
                             "types differ: Gather %s B=%zu root=%d: rc %d: %s", vname[var], B, root, rc,
                             t->err.msg);
                if (isroot) {
                    memset(c.exp, SENT, span);
                    for (int q = 0; q < P; q++)
                        if (q == root || (q == odd) == (root == odd))
                            fill_block(c.exp + dsp[q], cnt[q], seed, q, root);
                    CHECK_MEMBER(t, same(&c, c.recv, span, "gather"),
                                 "types differ: Gather %s B=%zu root=%d: a block of another type taken or one "
                                 "of the root's type missing", vname[var], B, root);
                }
                /* Scatter(v) */
                if (isroot) {
                    memset(c.send, SENT, span);
                    for (int q = 0; q < P; q++)
                        fill_block(c.send + dsp[q], cnt[q], seed, root, q);
                }
                memset(c.recv, SENT, cnt[me] + 64);
                rc = pgc_scatter(t, var == FIXED ? PGC_COLL_SCATTER : PGC_COLL_SCATTERV, isroot ? c.send : NULL,
                                 isroot ? cnt : NULL, isroot ? dsp : NULL, c.recv, cnt[me], root, mine);
                CHECK_MEMBER(t, differs ? rc == PGC_ETYPE : rc == PGC_OK || (isroot && rc == PGC_ETYPE),
                             "types differ: Scatter %s B=%zu root=%d: rc %d: %s", vname[var], B, root, rc,
                             t->err.msg);
                memset(c.exp, SENT, cnt[me] + 64);
                if (!differs)
                    fill_block(c.exp, cnt[me], seed, root, me);
                CHECK_MEMBER(t, same(&c, c.recv, cnt[me] + 64, "scatter"), "types differ: Scatter %s B=%zu "
                             "root=%d: %s", vname[var], B, root, differs ? "buffer written" : "wrong data");
                /* the same types again: everyone completes (the barrier first:
                 * inline publishers wait for nobody, see types_differ in
                 * test_coll_bcast.c) */
                CHECK_MEMBER(t, pgc_barrier(t) == PGC_OK, "barrier: %s", t->err.msg);
                rc = pgc_scatter(t, PGC_COLL_SCATTERV, isroot ? c.send : NULL, isroot ? cnt : NULL,
                                 isroot ? dsp : NULL, c.recv, cnt[me], root, PGC_FLOAT64);
                fill_block(c.exp, cnt[me], seed, root, me);
                CHECK_MEMBER(t, rc == PGC_OK && same(&c, c.recv, cnt[me], "scatter"),
                             "next Scatterv B=%zu root=%d: rc %d: %s", B, root, rc, t->err.msg);
            }
    free(c.send);
    free(c.recv);
    free(c.exp);
    return pgc_barrier(t) != PGC_OK;
}

/* ---- count mismatch: the detecting member fails, nobody hangs ---- */

typedef struct {
    int op;     /* 0 Scatterv, 1 Gatherv, 2 Allgatherv, 3 Alltoallv, 4 Gatherv refused at the root */
    size_t B;
} mm_arg;

static int mismatch_body(pgc_team *t, void *arg)
{
    const mm_arg *a = arg;
    int P = t->nranks, me = t->rank, odd = P - 1, rc = 0;
    size_t cnt[MAXP] = {0}, dsp[MAXP] = {0}, rcnt[MAXP] = {0};
    for (int q = 0; q < P; q++)
        cnt[q] = a->B;
    size_t span = layout(P, cnt, dsp, 0, 0);
    uint8_t *s = calloc(1, span + 64), *r = calloc(1, span + 64);
    memcpy(rcnt, cnt, sizeof cnt);
    uint64_t t0 = pgc_now_ns();
    switch (a->op) {
    case 0: /* the last member expects one byte more than the root sends */
        rc = pgc_scatter(t, PGC_COLL_SCATTERV, s, cnt, dsp, r, a->B + (me == odd), 0, -1);
        break;
    case 1: /* the last member sends one byte more than the root expects */
        rc = pgc_gather(t, PGC_COLL_GATHERV, s, a->B + (me == odd), r, cnt, dsp, 0, -1);
        break;
    case 2: /* member 0 expects one byte more from the last member */
        rcnt[odd] += me == 0;
        rc = pgc_allgather(t, PGC_COLL_ALLGATHERV, s, rcnt[me], r, rcnt, dsp, 0);
        break;
    case 3:
        rcnt[odd] += me == 0;
        rc = pgc_alltoall(t, PGC_COLL_ALLTOALLV, s, cnt, dsp, r, rcnt, dsp);
        break;
    default: /* a local refusal (no counts at the root) must not hang the others */
        rc = pgc_gather(t, PGC_COLL_GATHERV, s, a->B, r, me == 0 ? NULL : cnt, dsp, 0, -1);
        break;
    }
    sh->rc[me] = rc;
    sh->secs[me] = (double)(pgc_now_ns() - t0) * 1e-9;
    int brc = pgc_barrier(t); /* the team is aborted: must fail at once */
    free(s);
    free(r);
    return brc == 0;
}

static const char *opnames[] = {"Scatterv", "Gatherv", "Allgatherv", "Alltoallv", "Gatherv-refused"};

static void run_mismatch(int P, int cma_mode, int op, size_t B)
{
    pgc_config cfg = pgc_test_config();
    if (cma_mode)
        for (int i = PGC_COLL_GATHER; i <= PGC_COLL_ALLTOALLV; i++)
            cfg.cma_min[i] = 0;
    memset(sh->rc, 0x7f, sizeof sh->rc);
    mm_arg a = {op, B};
    uint64_t t0 = pgc_now_ns();
    int f = pgc_test_fork(P, &cfg, mismatch_body, &a);
    double secs = (double)(pgc_now_ns() - t0) * 1e-9;
    int einval = 0, bad = 0;
    for (int r = 0; r < P; r++) {
        if (sh->rc[r] == PGC_EINVAL)
            einval++;
        else if (sh->rc[r] != PGC_OK && sh->rc[r] != PGC_EABORTED)
            bad++;
    }
    /* Scatterv: the receiver detects it; refusal: the root; otherwise
     * whoever reads first */
    int ok = f == 0 && einval == 1 && bad == 0 && secs < 5.0 && (op != 0 || sh->rc[P - 1] == PGC_EINVAL) &&
             (op != 4 || sh->rc[0] == PGC_EINVAL);
    char rcs[MAXP * 12] = "";
    for (int r = 0, len = 0; r < P; r++)
        len += snprintf(rcs + len, sizeof rcs - (size_t)len, " %d", sh->rc[r]);
    CHECK(ok, "mismatch %s P=%d cma=%d B=%zu: %.2f s, children failed %d, rc:%s", opnames[op], P, cma_mode, B,
          secs, f, rcs);
}

/* Watchdog, armed in every forked member before the harness's attach loop:
 * a member stuck for any reason (e.g. the harness waiting for a member whose
 * fork() failed) dies after WATCHDOG_S and counts as failed instead of
 * hanging the test; members also die with the test process. */
#define WATCHDOG_S 120
static void child_watchdog(void)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(WATCHDOG_S);
}

int main(void)
{
    pthread_atfork(NULL, NULL, child_watchdog);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || check_share()) {
        perror("mmap");
        return 2;
    }
    uint64_t t_all = pgc_now_ns();
    /* mode 0: cico; 1: cma; 2: cico through a tiny staging area (16 KiB:
     * windows shrink their chunk, hundreds of ring wraps); 3: odd members
     * single copy, even members cico (as the run-time choice may leave
     * them: pgc_choose_member_path) */
    static const char *modes[] = {"cico", "cma ", "cico 16 KiB staging", "mixed"};
    for (int mode = 0; mode < 4; mode++)
        for (int P = 1; P <= MAXP; P++) {
            pgc_config cfg = pgc_test_config();
            if (mode == 1)
                for (int i = PGC_COLL_GATHER; i <= PGC_COLL_ALLTOALLV; i++)
                    cfg.cma_min[i] = 0;
            if (mode == 2) {
                cfg.staging_bytes = 16384;
                cfg.xchg_chunk_bytes = 4096;
            }
            int f0 = atomic_load(&check_n->fail), p0 = atomic_load(&check_n->pass);
            uint64_t t0 = pgc_now_ns();
            int f = pgc_test_fork(P, &cfg, body, &mode);
            printf("P=%d %s: %s (%d checks, %.2f s)\n", P, modes[mode], f ? "FAIL" : "ok",
                   atomic_load(&check_n->pass) + atomic_load(&check_n->fail) - p0 - f0,
                   (double)(pgc_now_ns() - t0) * 1e-9);
            CHECK(f == 0, "P=%d %s: %d members failed", P, modes[mode], f);
        }
    for (int P = 1; P <= MAXP; P++) {
        pgc_config cfg = pgc_test_config();
        int f = pgc_test_fork(P, &cfg, run_ahead_body, NULL);
        printf("P=%d inline run-ahead: %s\n", P, f ? "FAIL" : "ok");
        CHECK(f == 0, "P=%d inline run-ahead: %d members failed", P, f);
    }
    for (int mode = 0; mode < 4; mode += mode == 1 ? 2 : 1) /* cico, cma, mixed */
        for (int P = 2; P <= MAXP; P *= 2) {
            pgc_config cfg = pgc_test_config();
            if (mode == 1)
                for (int i = PGC_COLL_GATHER; i <= PGC_COLL_ALLTOALLV; i++)
                    cfg.cma_min[i] = 0;
            int f = pgc_test_fork(P, &cfg, types_body, &mode);
            printf("P=%d %s types differ: %s\n", P, modes[mode], f ? "FAIL" : "ok");
            CHECK(f == 0, "P=%d %s types differ: %d members failed", P, modes[mode], f);
        }
    int mp = atomic_load(&check_n->pass), mf = atomic_load(&check_n->fail);
    for (int cma_mode = 0; cma_mode < 2; cma_mode++)
        for (int P = 2; P <= MAXP; P += 2)
            for (int op = 0; op < 5; op++) {
                run_mismatch(P, cma_mode, op, 100);     /* inline (or cico) */
                run_mismatch(P, cma_mode, op, 100000);  /* cico / cma, ring wraps */
            }
    mp = atomic_load(&check_n->pass) - mp;
    mf = atomic_load(&check_n->fail) - mf;
    printf("mismatch: %d ok, %d failed\n", mp, mf);
    printf("total %.2f s\n", (double)(pgc_now_ns() - t_all) * 1e-9);
    return check_summary();
}
