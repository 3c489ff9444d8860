/* test_coll_reduce.c - Reduce, Allreduce, Reduce_scatter(_block), Scan and
 * Exscan (csrc/coll/coll_reduce.c) on teams of 1..8 forked processes: every
 * kind against a scalar reference, over dtype/operator combinations, counts
 * around every boundary of the algorithm, in place or not, every root, and
 * many windows. The special checks (misuse refused, the refusal question,
 * aliased buffers, a slow root, back-to-back calls, determinism, the
 * statistics): test_coll_reduce_checks.c.
 *
 *   gcc -O3 -std=gnu11 -Wall -Wextra -Werror -Icsrc $(find csrc -name '*.c') \
 *       tests/c/test_coll_reduce.c -o /tmp/test_coll_reduce -lm
 *
 * Inputs are a function of (case seed, rank, index); the expected results
 * are computed with a scalar reference written here (not the kernels), in
 * rank order, each member computing a slice into a shared page. Inputs are
 * chosen so that the exact value is known: integers (wrapping as MPI/numpy
 * do), floats and complex numbers that are small integers.
 *
 * Checks are counted in a MAP_SHARED page created before fork. Prints
 * "N passed, M failed"; exits 1 on any failure. */
#include <complex.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"
#include "reduce_windows.h"
#include "team_fork.h"

enum { K_REDUCE, K_ALLREDUCE, K_RS, K_RSB, K_SCAN, K_EXSCAN, K_N };
static const char *const kname[K_N] = {"Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block",
                                       "Scan", "Exscan"};

#define GUARD 64
#define SENTINEL 0xA5

/* The expected results, computed cooperatively (each member a slice, all
 * prefixes): prefix k of element i, S_k[i] = x_0[i] op ... op x_k[i], at
 * ref_of(k)[i]. Shared (created before fork), so the reference costs
 * P * count element generations per case instead of P^2 * count. */
#define REF_BYTES ((size_t)96 << 20)
static unsigned char *refbuf;

/* ---- inputs and the scalar reference ---- */

/* A cheap 32-bit hash of (case, member, index): vectorises. */
static inline uint32_t elem_hash(uint64_t seed, int r, size_t i)
{
    uint32_t h = (uint32_t)i * 0x9e3779b1u + (uint32_t)r * 0x85ebca77u + (uint32_t)seed * 0xc2b2ae3du;
    h ^= h >> 15;
    h *= 0x2c1b3c6du;
    h ^= h >> 12;
    h *= 0x297a2d39u;
    return h ^ (h >> 15);
}

/* Member r's input elements [first, first + n) of a case. Integers: any
 * value, and some zeros so that logical ops are not trivial; bool: mostly
 * true; float64: integers in [-4, 3]; complex128: integer parts in [-3, 4]
 * (products of 8 stay exact). */
static void gen_array(pgc_dtype dt, uint64_t seed, int r, size_t first, size_t n, void *dst)
{
#define GEN_LOOP(T, EXPR)                                        \
    for (size_t k = 0; k < n; k++) {                             \
        uint32_t h = elem_hash(seed, r, first + k);              \
        int zero = (h & 7) == 0;                                 \
        (void)zero;                                              \
        ((T *)dst)[k] = (EXPR);                                  \
    }                                                            \
    return;
    switch (dt) {
    case PGC_INT32: GEN_LOOP(int32_t, zero ? 0 : (int32_t)h)
    case PGC_INT64: GEN_LOOP(int64_t, zero ? 0 : (int64_t)(((uint64_t)h << 31) ^ (h * 0x9e3779b1u)))
    case PGC_UINT8: GEN_LOOP(uint8_t, zero ? 0 : (uint8_t)(h >> 24))
    case PGC_BOOL: GEN_LOOP(uint8_t, !zero)
    case PGC_FLOAT64: GEN_LOOP(double, (double)((int)((h >> 8) & 7) - 4))
    case PGC_COMPLEX128:
        GEN_LOOP(double _Complex, CMPLX((double)((int)((h >> 8) & 7) - 3), (double)((int)((h >> 20) & 7) - 3)))
    default: abort();
    }
#undef GEN_LOOP
}

/* The scalar reference, independent of the kernels: acc[k] = acc[k] op x[k].
 * Integer SUM/PROD wrap (computed unsigned). */
static void ref_fold(pgc_op op, pgc_dtype dt, void *acc_, const void *x_, size_t n)
{
#define INT_LOOP(T, U)                                                          \
    {                                                                           \
        T *acc = acc_;                                                          \
        const T *x = x_;                                                        \
        for (size_t k = 0; k < n; k++) {                                        \
            T a = acc[k], b = x[k], r;                                          \
            switch (op) {                                                       \
            case PGC_SUM: r = (T)((U)a + (U)b); break;                          \
            case PGC_PROD: r = (T)((U)a * (U)b); break;                         \
            case PGC_MIN: r = a < b ? a : b; break;                             \
            case PGC_MAX: r = a > b ? a : b; break;                             \
            case PGC_LAND: r = (T)((a != 0) && (b != 0)); break;                \
            case PGC_LOR: r = (T)((a != 0) || (b != 0)); break;                 \
            case PGC_LXOR: r = (T)((a != 0) != (b != 0)); break;                \
            case PGC_BAND: r = a & b; break;                                    \
            case PGC_BOR: r = a | b; break;                                     \
            case PGC_BXOR: r = a ^ b; break;                                    \
            default: abort();                                                   \
            }                                                                   \
            acc[k] = r;                                                         \
        }                                                                       \
        return;                                                                 \
    }
    switch (dt) {
    case PGC_INT32: INT_LOOP(int32_t, uint32_t)
    case PGC_INT64: INT_LOOP(int64_t, uint64_t)
    case PGC_UINT8: INT_LOOP(uint8_t, unsigned)
    case PGC_BOOL: INT_LOOP(uint8_t, unsigned)
    case PGC_FLOAT64: {
        double *acc = acc_;
        const double *x = x_;
        for (size_t k = 0; k < n; k++) {
            double a = acc[k], b = x[k];
            switch (op) {
            case PGC_SUM: acc[k] = a + b; break;
            case PGC_PROD: acc[k] = a * b; break;
            case PGC_MIN: acc[k] = a < b ? a : b; break;
            case PGC_MAX: acc[k] = a > b ? a : b; break;
            default: abort();
            }
        }
        return;
    }
    case PGC_COMPLEX128: {
        double *acc = acc_;
        const double *x = x_;
        for (size_t k = 0; k < n; k++) {
            double ar = acc[2 * k], ai = acc[2 * k + 1], br = x[2 * k], bi = x[2 * k + 1];
            if (op == PGC_SUM) {
                acc[2 * k] = ar + br;
                acc[2 * k + 1] = ai + bi;
            } else if (op == PGC_PROD) {
                acc[2 * k] = ar * br - ai * bi;
                acc[2 * k + 1] = ar * bi + ai * br;
            } else
                abort();
        }
        return;
    }
    default: abort();
    }
#undef INT_LOOP
}

/* First element where a and b differ: by value for floating types
 * (0.0 == -0.0), bytes otherwise; SIZE_MAX if none. */
static size_t first_diff(pgc_dtype dt, const void *a_, const void *b_, size_t n)
{
    if (dt == PGC_FLOAT64 || dt == PGC_COMPLEX128) {
        const double *a = a_, *b = b_;
        size_t m = dt == PGC_FLOAT64 ? n : 2 * n;
        for (size_t k = 0; k < m; k++)
            if (a[k] != b[k])
                return dt == PGC_FLOAT64 ? k : k / 2;
        return SIZE_MAX;
    }
    size_t esz = pgc_dtype_size(dt);
    if (!memcmp(a_, b_, n * esz))
        return SIZE_MAX;
    for (size_t k = 0;; k++)
        if (memcmp((const char *)a_ + k * esz, (const char *)b_ + k * esz, esz))
            return k;
}

typedef struct { pgc_dtype dt; pgc_op op; } combo;

static const combo all_combos[] = {
    {PGC_INT32, PGC_SUM}, {PGC_INT32, PGC_PROD}, {PGC_INT32, PGC_MAX}, {PGC_INT32, PGC_MIN},
    {PGC_INT32, PGC_BXOR}, {PGC_INT32, PGC_LAND},
    {PGC_INT64, PGC_SUM}, {PGC_INT64, PGC_PROD}, {PGC_INT64, PGC_BOR},
    {PGC_FLOAT64, PGC_SUM}, {PGC_FLOAT64, PGC_PROD}, {PGC_FLOAT64, PGC_MAX}, {PGC_FLOAT64, PGC_MIN},
    {PGC_UINT8, PGC_SUM}, {PGC_UINT8, PGC_BAND}, {PGC_UINT8, PGC_LXOR}, {PGC_UINT8, PGC_MAX},
    {PGC_BOOL, PGC_LAND}, {PGC_BOOL, PGC_LOR}, {PGC_BOOL, PGC_LXOR},
    {PGC_COMPLEX128, PGC_SUM}, {PGC_COMPLEX128, PGC_PROD},
};
#define NCOMBOS (sizeof all_combos / sizeof *all_combos)
/* one per dtype, for the operations tested with fewer combinations */
static const combo few_combos[] = {
    {PGC_INT32, PGC_SUM}, {PGC_FLOAT64, PGC_PROD}, {PGC_UINT8, PGC_BXOR},
    {PGC_BOOL, PGC_LXOR}, {PGC_COMPLEX128, PGC_PROD}, {PGC_INT64, PGC_MAX},
};
#define NFEW (sizeof few_combos / sizeof *few_combos)

/* ---- one case ---- */

typedef struct {
    int kind, inplace, root;
    pgc_dtype dt;
    pgc_op op;
    size_t count;     /* elements; Reduce_scatter: the base of recvcounts */
    uint64_t seed;
} tcase;

static void recvcounts_of(const tcase *c, int P, size_t *rc)
{
    for (int j = 0; j < P; j++)
        rc[j] = c->kind == K_RSB ? c->count
              : j % 3 == 0       ? c->count
              : j % 3 == 1       ? c->count / 3   /* 0 for small counts: empty blocks */
                                 : c->count + 2 * (size_t)j;
}

static void run_case(pgc_team *t, const tcase *c)
{
    const int P = t->nranks, me = t->rank;
    const size_t esz = pgc_dtype_size(c->dt);
    size_t rcounts[MAXP], start[MAXP + 1];
    size_t total = c->count;
    if (c->kind == K_RS || c->kind == K_RSB) {
        recvcounts_of(c, P, rcounts);
        start[0] = 0;
        for (int j = 0; j < P; j++)
            start[j + 1] = start[j] + rcounts[j];
        total = start[P];
    }
    /* elements of recvbuf: the result, or the whole input in place */
    size_t rlen = (c->kind == K_RS || c->kind == K_RSB) && !c->inplace ? rcounts[me] : total;
    /* Reduce in place is only meaningful at the root */
    int inplace = c->inplace && !(c->kind == K_REDUCE && me != c->root);

    unsigned char *send = malloc(total * esz + 1), *recv = malloc(rlen * esz + GUARD);
    unsigned char *before = malloc(rlen * esz + GUARD);
    memset(recv, SENTINEL, rlen * esz + GUARD);
    unsigned char *in = inplace ? recv : send;
    gen_array(c->dt, c->seed, me, 0, total, in);
    memcpy(before, recv, rlen * esz + GUARD);
    const void *sb = inplace ? NULL : send;

    /* The reference: everybody is done reading the previous case's (A),
     * then each member computes its slice of every prefix, and waits until
     * the others computed theirs (B). */
    if (total * esz * (size_t)P > REF_BYTES) {
        fprintf(stderr, "test bug: reference buffer too small\n");
        abort();
    }
    int rc = pgc_barrier(t);
    CHECK_MEMBER(t, rc == 0, "barrier A: %s", t->err.msg);
    size_t lo = total * (size_t)me / (size_t)P, hi = total * (size_t)(me + 1) / (size_t)P;
    unsigned char *x = malloc((hi - lo) * esz + 1);
    gen_array(c->dt, c->seed, 0, lo, hi - lo, refbuf + lo * esz);
    for (int r = 1; r < P; r++) {
        unsigned char *prev = refbuf + ((size_t)(r - 1) * total + lo) * esz, *cur = prev + total * esz;
        memcpy(cur, prev, (hi - lo) * esz);
        gen_array(c->dt, c->seed, r, lo, hi - lo, x);
        ref_fold(c->op, c->dt, cur, x, hi - lo);
    }
    free(x);
    rc = pgc_barrier(t);
    CHECK_MEMBER(t, rc == 0, "barrier B: %s", t->err.msg);

    switch (c->kind) {
    case K_REDUCE: rc = pgc_reduce(t, sb, recv, c->count, c->dt, c->op, c->root); break;
    case K_ALLREDUCE: rc = pgc_allreduce(t, sb, recv, c->count, c->dt, c->op); break;
    case K_RS: rc = pgc_reduce_scatter(t, PGC_COLL_REDUCE_SCATTER, sb, recv, rcounts, c->dt, c->op); break;
    case K_RSB: rc = pgc_reduce_scatter(t, PGC_COLL_REDUCE_SCATTER_BLOCK, sb, recv, rcounts, c->dt, c->op); break;
    case K_SCAN: rc = pgc_scan(t, sb, recv, c->count, c->dt, c->op); break;
    default: rc = pgc_exscan(t, sb, recv, c->count, c->dt, c->op); break;
    }
    CHECK_MEMBER(t, rc == 0, "%s %s %s count %zu inplace %d root %d: rc %d (%s)", kname[c->kind],
                 pgc_dtype_name(c->dt), pgc_op_name(c->op), c->count, inplace, c->root, rc, t->err.msg);

    /* What this member must hold: elements [off, off + n) of the vector
     * reduced over members 0..last, at the start of recvbuf. */
    int has = 1, last = P - 1;
    size_t off = 0, n = total;
    if (c->kind == K_REDUCE && me != c->root)
        has = 0;
    if (c->kind == K_RS || c->kind == K_RSB) {
        off = start[me];
        n = rcounts[me];
    }
    if (c->kind == K_SCAN)
        last = me;
    if (c->kind == K_EXSCAN && (last = me - 1) < 0)
        has = 0;

    size_t bad = SIZE_MAX;
    if (has) {
        bad = first_diff(c->dt, refbuf + ((size_t)last * total + off) * esz, recv, n);
        /* beyond the result: untouched (in-place Reduce_scatter: the rest
         * of the input is unspecified, only the guard counts) */
        size_t keep_from = (c->kind == K_RS || c->kind == K_RSB) && c->inplace ? rlen : n;
        if (bad == SIZE_MAX && memcmp(recv + keep_from * esz, before + keep_from * esz,
                                      (rlen - keep_from) * esz + GUARD))
            bad = keep_from;
    } else if (memcmp(recv, before, rlen * esz + GUARD))
        bad = 0; /* no result here: recvbuf untouched */
    CHECK_MEMBER(t, bad == SIZE_MAX, "%s %s %s count %zu inplace %d root %d: wrong result at element %zu",
                 kname[c->kind], pgc_dtype_name(c->dt), pgc_op_name(c->op), c->count, inplace, c->root, bad);
    free(send);
    free(recv);
    free(before);
}

/* Counts around every boundary of the algorithm for this team and dtype
 * (E: elements per block and window): empty, tiny, around the inline
 * threshold, around one window of one block (E) and of all blocks (P*E),
 * 3 windows (the halves are reused), not divisible by P. Reduce_scatter
 * counts are per block (the base of recvcounts), so the block-relative
 * boundaries are used directly. `core` picks a subset for the long list of
 * combinations. */
static int counts_for(const pgc_team *t, int kind, size_t esz, int core, size_t *cnt)
{
    size_t P = (size_t)t->nranks, E = window_elems(t, esz, 0), inl = t->cfg.inline_max / esz;
    int n;
    if (kind == K_RS || kind == K_RSB) {
        size_t v[] = {0, 1, 7, inl / P - 1, inl / P, inl / P + 1, E - 1, E, E + 1, 2 * E + 5};
        memcpy(cnt, v, sizeof v);
        n = (int)(sizeof v / sizeof *v);
    } else if (core) {
        size_t few[] = {0, 1, 7, inl + 1, P * E + 1};
        memcpy(cnt, few, sizeof few);
        n = (int)(sizeof few / sizeof *few);
    } else {
        size_t full[] = {0, 1, 7, inl - 1, inl, inl + 1, E - 1, E, E + 1, P * E - 1, P * E, P * E + 1,
                         2 * P * E + 5, 100 * P + 3};
        memcpy(cnt, full, sizeof full);
        n = (int)(sizeof full / sizeof *full);
    }
    if (t->cfg.reduce_one_window) {
        /* around the largest block of a single window (E1), above which
         * the vector takes two windows of E */
        size_t E1 = window_elems(t, esz, 1), B = kind == K_RS || kind == K_RSB ? 1 : P;
        cnt[n++] = B * E1 - 1;
        cnt[n++] = B * E1;
        cnt[n++] = B * E1 + 1;
    }
    return n;
}

static uint64_t case_seed;

/* Every combination x count x (in place or not). Reduce: every root for the
 * first two combinations, a rotating root for the others. */
static void run_matrix(pgc_team *t, int kind, const combo *combos, size_t ncombos, int core)
{
    size_t cnt[32];
    int P = t->nranks;
    for (size_t ci = 0; ci < ncombos; ci++) {
        int nc = counts_for(t, kind, pgc_dtype_size(combos[ci].dt), core, cnt);
        for (int k = 0; k < nc; k++)
            for (int inplace = 0; inplace < 2; inplace++)
                for (int root = 0; root < (kind == K_REDUCE ? P : 1); root++) {
                    if (kind == K_REDUCE && ci >= 2 && root != (int)((ci + (size_t)k + (size_t)inplace) % (size_t)P))
                        continue;
                    tcase c = {kind, inplace, root, combos[ci].dt, combos[ci].op, cnt[k], ++case_seed};
                    run_case(t, &c);
                }
    }
}

/* Many windows: run with a tiny staging area (E of a few elements). */
static void run_many_windows(pgc_team *t)
{
    int P = t->nranks;
    for (int kind = 0; kind < K_N; kind++)
        for (size_t ci = 0; ci < 3; ci++) {
            size_t E = window_elems(t, pgc_dtype_size(few_combos[ci].dt), 0);
            size_t cnt[2] = {40 * (size_t)P * E + 3, 17 * E + 1};
            for (int k = 0; k < 2; k++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    tcase c = {kind, inplace, (k + inplace) % P, few_combos[ci].dt, few_combos[ci].op, cnt[k],
                               ++case_seed};
                    run_case(t, &c);
                }
        }
}

/* ---- bodies ---- */

static int body_full(pgc_team *t, void *arg)
{
    (void)arg;
    run_matrix(t, K_ALLREDUCE, all_combos, NCOMBOS, 1);
    for (int k = 0; k < K_N; k++)
        run_matrix(t, k, few_combos, NFEW, 0);
    /* one ~3 Mi-element float64 case (24 MiB per buffer, 3 buffers per
     * member: on two team sizes only, to stay fast) */
    if (t->nranks == 2 || t->nranks == 3) {
        tcase big = {K_ALLREDUCE, 0, 0, PGC_FLOAT64, PGC_SUM, (3u << 20) + 5, ++case_seed};
        run_case(t, &big);
    }
    return 0; /* failures are counted in the shared page */
}

static int body_windows(pgc_team *t, void *arg)
{
    (void)arg;
    run_many_windows(t);
    return 0;
}

/* Oversubscribed teams' single window (cfg.reduce_one_window): every
 * kind around its boundaries. */
static int body_one_window(pgc_team *t, void *arg)
{
    (void)arg;
    for (int k = 0; k < K_N; k++)
        run_matrix(t, k, few_combos, NFEW, 1);
    return 0;
}

/* Another configuration: single copy "preferred" for reductions (must run
 * copy-in/copy-out) and inline_max above the inline slot cap. */
static int body_cfg2(pgc_team *t, void *arg)
{
    (void)arg;
    run_matrix(t, K_ALLREDUCE, few_combos, NFEW, 1);
    run_matrix(t, K_SCAN, few_combos, 2, 1);
    tcase c = {K_ALLREDUCE, 0, 0, PGC_INT64, PGC_SUM, 1500 /* 12000 bytes <= inline_max, > slot */, ++case_seed};
    run_case(t, &c);
    return 0;
}

/* Run `body` (if any) on a team of P members with cfg, then body_windows
 * with 4 KiB of staging (E of 2..128 elements: many windows); print the
 * outcome and check that no member failed. */
static void run_team(const char *what, int P, pgc_config cfg, int (*body)(pgc_team *, void *))
{
    int f0 = atomic_load(&check_n->fail);
    int f = body ? pgc_test_fork(P, &cfg, body, NULL) : 0;
    cfg.staging_bytes = 4096;
    f += pgc_test_fork(P, &cfg, body_windows, NULL);
    printf("P=%d %s: %s\n", P, what, f || atomic_load(&check_n->fail) != f0 ? "FAIL" : "ok");
    CHECK(f == 0, "P=%d %s: %d members failed", P, what, f);
}

int main(void)
{
    refbuf = mmap(NULL, REF_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (refbuf == MAP_FAILED || check_share()) {
        perror("mmap");
        return 2;
    }
    for (int P = 1; P <= MAXP; P++) {
        pgc_config cfg = pgc_test_config();
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int f0 = atomic_load(&check_n->fail);
        int f = pgc_test_fork(P, &cfg, body_full, NULL);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("P=%d: %s (%.2f s)\n", P, f || atomic_load(&check_n->fail) != f0 ? "FAIL" : "ok",
               (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
        CHECK(f == 0, "P=%d: %d members failed", P, f);
    }
    for (int P = 1; P <= MAXP; P++) {
        pgc_config cfg = pgc_test_config();
        run_team("tiny staging", P, cfg, NULL);
        cfg.reduce_one_window = 1;
        run_team("one window when it fits", P, cfg, body_one_window);
    }
    /* Every case with single copy by size: members not in place expose
     * their buffers, in-place ones (a Reduce root among them) stage. */
    for (int P = 2; P <= MAXP; P++) {
        pgc_config cfg = pgc_test_config();
        for (int i = 0; i < PGC_NCOLL; i++)
            cfg.cma_min[i] = 0;
        run_team("single copy", P, cfg, body_full);
    }
    for (int P = 2; P <= 3; P++) {
        pgc_config cfg = pgc_test_config();
        cfg.inline_max = 4 * PGC_INLINE_SLOT_MAX;
        for (int i = 0; i < PGC_NCOLL; i++)
            cfg.cma_min[i] = 4096;
        int f0 = atomic_load(&check_n->fail);
        int f = pgc_test_fork(P, &cfg, body_cfg2, NULL);
        printf("P=%d cma/inline config: %s\n", P, f || atomic_load(&check_n->fail) != f0 ? "FAIL" : "ok");
        CHECK(f == 0, "P=%d cma/inline config: %d members failed", P, f);
    }
    return check_summary();
}
