/* test_coll_reduce_checks.c - the special checks of the reductions
 * (csrc/coll/coll_reduce.c) on teams of 1..8 forked processes: misuse
 * refused with the team still in step, a Reduce root's question whether
 * every other member refused, sendbuf == recvbuf, a slow Reduce root,
 * back-to-back calls whose buffers are rewritten at once, determinism (the
 * rank-order sum of random floats bit for bit on every member and
 * repetition) and the statistics of the paths taken; on the default
 * configuration, single copy by size, the single window of oversubscribed
 * teams and single copy "preferred" with a large inline_max. The results
 * of every kind against a scalar reference: test_coll_reduce.c.
 *
 *   gcc -O3 -std=gnu11 -Wall -Wextra -Werror -Icsrc $(find csrc -name '*.c') \
 *       tests/c/test_coll_reduce_checks.c -o /tmp/test_coll_reduce_checks -lm
 *
 * Checks are counted in a MAP_SHARED page created before fork. Prints
 * "N passed, M failed"; exits 1 on any failure. */
#include <stdint.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "check.h"
#include "reduce_windows.h"
#include "team_fork.h"

typedef struct {
    uint64_t hash[MAXP][4];  /* determinism: per member, per repetition */
} shared_t;

static shared_t *sh;

static inline uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* ---- special checks ---- */

static void test_invalid(pgc_team *t)
{
    double buf[8], send[8];
    for (int i = 0; i < 8; i++)
        buf[i] = 100 + i, send[i] = i;
    int rc = pgc_allreduce(t, send, buf, 8, PGC_FLOAT64, PGC_BXOR);
    CHECK_MEMBER(t, rc == PGC_EINVAL && strstr(t->err.msg, "BXOR") && strstr(t->err.msg, "float64"),
                 "Allreduce float64 BXOR: rc %d msg '%s'", rc, t->err.msg);
    int untouched = 1;
    for (int i = 0; i < 8; i++)
        untouched &= buf[i] == 100 + i;
    CHECK_MEMBER(t, untouched, "invalid Allreduce wrote recvbuf");
    uint8_t b[4] = {1, 0, 1, 1}, bs[4] = {0, 0, 0, 0};
    rc = pgc_scan(t, bs, b, 4, PGC_BOOL, PGC_SUM);
    CHECK_MEMBER(t, rc == PGC_EINVAL && strstr(t->err.msg, "SUM") && strstr(t->err.msg, "bool") &&
                 b[0] == 1 && b[1] == 0, "Scan bool SUM: rc %d msg '%s'", rc, t->err.msg);
    double _Complex z[2] = {1, 2};
    rc = pgc_exscan(t, NULL, z, 2, PGC_COMPLEX128, PGC_MAX);
    CHECK_MEMBER(t, rc == PGC_EINVAL && z[0] == 1 && z[1] == 2, "Exscan complex128 MAX: rc %d", rc);
    size_t rcounts[MAXP];
    for (int j = 0; j < t->nranks; j++)
        rcounts[j] = 1;
    rc = pgc_reduce_scatter(t, PGC_COLL_REDUCE_SCATTER, send, buf, rcounts, PGC_FLOAT64, PGC_LAND);
    CHECK_MEMBER(t, rc == PGC_EINVAL && buf[0] == 100, "Reduce_scatter float64 LAND: rc %d", rc);
    rc = pgc_reduce_scatter(t, PGC_COLL_BCAST, send, buf, rcounts, PGC_FLOAT64, PGC_SUM);
    CHECK_MEMBER(t, rc == PGC_EINVAL && buf[0] == 100, "Reduce_scatter with a bad collective id: rc %d", rc);
    rc = pgc_reduce(t, send, buf, 8, PGC_FLOAT64, PGC_SUM, t->nranks);
    CHECK_MEMBER(t, rc == PGC_EINVAL && buf[0] == 100, "Reduce root out of range: rc %d", rc);
    rc = pgc_reduce(t, send, buf, 8, PGC_FLOAT64, PGC_SUM, -1);
    CHECK_MEMBER(t, rc == PGC_EINVAL, "Reduce root -1: rc %d", rc);
    rc = pgc_allreduce(t, send, buf, SIZE_MAX / 4, PGC_FLOAT64, PGC_SUM);
    CHECK_MEMBER(t, rc == PGC_EINVAL && buf[0] == 100, "Allreduce count overflow: rc %d", rc);
    rc = pgc_allreduce(t, send, buf, 8, (pgc_dtype)99, PGC_SUM);
    CHECK_MEMBER(t, rc == PGC_EINVAL, "Allreduce bad dtype: rc %d", rc);
    /* the team is still in step: a valid op works */
    rc = pgc_allreduce(t, send, buf, 8, PGC_FLOAT64, PGC_SUM);
    int ok = rc == 0;
    for (int i = 0; i < 8; i++)
        ok &= buf[i] == (double)i * t->nranks;
    CHECK_MEMBER(t, ok, "Allreduce after refused calls: rc %d", rc);
}

/* The root of a Reduce asks, before it enters, whether every other member
 * refused the call (pgc_coll_peers_refused): yes where they did (it then
 * refuses too), no where they are in it, even waiting for the root (1 and
 * 100000 elements: inline, and staged or single copy); the call and the
 * next ones complete either way. */
static void test_peers_refused(pgc_team *t)
{
    enum { N = 100000 };
    double *s = malloc(N * sizeof *s), *r = malloc(N * sizeof *r);
    int P = t->nranks, alike = -1, rc;
    for (size_t i = 0; i < N; i++)
        s[i] = t->rank + 1;
    if (t->rank == 0) {
        rc = pgc_coll_peers_refused(t, PGC_COLL_REDUCE, &alike);
        CHECK_MEMBER(t, rc == 0 && alike == (P > 1), "peers refused alike: rc %d alike %d", rc, alike);
    }
    pgc_coll_refuse(t, PGC_COLL_REDUCE, "refused alike");
    size_t counts[2] = {1, N};
    for (int k = 0; k < 2; k++) {
        if (t->rank == 0) {
            rc = pgc_coll_peers_refused(t, PGC_COLL_REDUCE, &alike);
            CHECK_MEMBER(t, rc == 0 && alike == 0, "peers in the call (%zu): rc %d alike %d", counts[k], rc, alike);
        }
        rc = pgc_reduce(t, s, r, counts[k], PGC_FLOAT64, PGC_SUM, 0);
        CHECK_MEMBER(t, rc == 0 && (t->rank || (r[0] == P * (P + 1) / 2.0 && r[counts[k] - 1] == r[0])),
                     "Reduce after the question (%zu): rc %d %s", counts[k], rc, t->err.msg);
    }
    rc = pgc_allreduce(t, s, r, 8, PGC_FLOAT64, PGC_SUM);
    CHECK_MEMBER(t, rc == 0 && r[7] == P * (P + 1) / 2.0, "Allreduce after the questions: rc %d", rc);
    free(s);
    free(r);
}

/* 200 back-to-back Allreduce calls of alternating sizes and paths, buffers
 * reused and rewritten right after each return. */
static void test_back_to_back(pgc_team *t)
{
    static const size_t sizes[] = {3, 20000, 40, 70001, 1, 5000, 32};
    enum { MAXN = 70001 };
    int64_t *s = malloc(MAXN * 8), *r = malloc(MAXN * 8);
    int P = t->nranks, bad = 0;
    /* A wrong result does not stop the loop (the members must make the same
     * calls); an error does: the team is aborted then. */
    for (int it = 0; it < 200; it++) {
        size_t n = sizes[it % 7];
        int inplace = it % 3 == 2;
        int64_t *in = inplace ? r : s;
        for (size_t i = 0; i < n; i++)
            in[i] = (int64_t)(i * 31 + (size_t)it * 1000003) * (t->rank + 1);
        int rc = pgc_allreduce(t, inplace ? NULL : s, r, n, PGC_INT64, PGC_SUM);
        if (rc) {
            CHECK_MEMBER(t, 0, "back-to-back %d: rc %d %s", it, rc, t->err.msg);
            bad = 1;
            break;
        }
        for (size_t i = 0; i < n; i++)
            if (r[i] != (int64_t)(i * 31 + (size_t)it * 1000003) * (P * (P + 1) / 2)) {
                if (!bad)
                    CHECK_MEMBER(t, 0, "back-to-back %d (n %zu): wrong at %zu", it, n, i);
                bad = 1;
                break;
            }
        /* scribble on both buffers at once: the op must be really over */
        memset(s, 0x5a, n * 8);
        memset(r, 0x3c, n * 8);
    }
    CHECK_MEMBER(t, !bad, "back-to-back");
    free(s);
    free(r);
}

/* Back-to-back Reduce calls with a slow root: the other members only
 * publish and return, so they run ahead; a member must not overwrite an
 * inline slot or its staging while the root still reads an earlier op. */
static void test_slow_root(pgc_team *t)
{
    static const size_t sizes[] = {8, 3000};
    int64_t s[3000], r[3000];
    int P = t->nranks, bad = 0, failed = 0;
    for (int si = 0; si < 2 && !failed; si++)
        for (int it = 0; it < 60 && !failed; it++) {
            size_t n = sizes[si];
            for (size_t i = 0; i < n; i++)
                s[i] = (int64_t)(i + (size_t)it * 7) * (t->rank + 1);
            if (t->rank == 0 && it % 3 == 0)
                usleep(300); /* let the others race ahead */
            int rc = pgc_reduce(t, s, r, n, PGC_INT64, PGC_SUM, 0);
            if (rc)
                bad = failed = 1; /* the team is aborted: stop */
            for (size_t i = 0; i < n && t->rank == 0 && !bad; i++)
                if (r[i] != (int64_t)(i + (size_t)it * 7) * (P * (P + 1) / 2))
                    bad = 1;
        }
    CHECK_MEMBER(t, !bad, "Reduce with a slow root");
}

/* sendbuf == recvbuf (not MPI_IN_PLACE, but the same buffer) acts as in
 * place. */
static void test_aliased(pgc_team *t)
{
    int P = t->nranks;
    size_t sizes[2] = {5, 5000};
    int64_t *b = malloc(5000 * 8);
    for (int si = 0; si < 2; si++)
        for (int scan = 0; scan < 2; scan++) {
            size_t n = sizes[si];
            for (size_t i = 0; i < n; i++)
                b[i] = (int64_t)i + t->rank;
            int rc = scan ? pgc_scan(t, b, b, n, PGC_INT64, PGC_SUM) : pgc_allreduce(t, b, b, n, PGC_INT64, PGC_SUM);
            int ok = rc == 0, m = scan ? t->rank + 1 : P;
            for (size_t i = 0; i < n; i++)
                ok &= b[i] == (int64_t)i * m + (int64_t)m * (m - 1) / 2;
            CHECK_MEMBER(t, ok, "%s with sendbuf == recvbuf, n %zu: rc %d", scan ? "Scan" : "Allreduce", n,
                         rc);
        }
    free(b);
}

/* Member q's element i for the determinism check: random sign, mantissa
 * and magnitude (2^-20 .. 2^20), so the summation order shows in the bits. */
static double random_double(int q, size_t i)
{
    uint64_t h = mix(((uint64_t)q << 40) ^ i ^ 0xabcdefull);
    return ((double)(h >> 11) / 9007199254740992.0 - 0.5) * __builtin_ldexp(1.0, (int)(h % 41) - 20);
}

/* Random float64 data: the Allreduce result is the rank-order sum bit for
 * bit, identical on every member and on every repetition. */
static void test_determinism(pgc_team *t)
{
    int P = t->nranks;
    size_t n = 6 * (size_t)P * window_elems(t, 8, 0) + 13;
    size_t sizes[2] = {20, n};
    double *s = malloc(n * 8), *r = malloc(n * 8);
    for (int si = 0; si < 2; si++) {
        size_t m = sizes[si];
        for (int rep = 0; rep < 3; rep++) {
            for (size_t i = 0; i < m; i++)
                s[i] = random_double(t->rank, i);
            int rc = pgc_allreduce(t, rep == 2 ? NULL : s, rep == 2 ? s : r, m, PGC_FLOAT64, PGC_SUM);
            double *res = rep == 2 ? s : r;
            CHECK_MEMBER(t, rc == 0, "determinism: rc %d %s", rc, t->err.msg);
            size_t bad = SIZE_MAX;
            uint64_t hash = 1469598103934665603ull;
            for (size_t i = 0; i < m; i++) {
                double acc = 0;
                for (int q = 0; q < P; q++)
                    acc = q == 0 ? random_double(q, i) : acc + random_double(q, i); /* rank order */
                if (memcmp(&acc, &res[i], 8) && bad == SIZE_MAX)
                    bad = i;
                uint64_t bits;
                memcpy(&bits, &res[i], 8);
                hash = (hash ^ bits) * 1099511628211ull;
            }
            CHECK_MEMBER(t, bad == SIZE_MAX, "determinism n=%zu rep %d: not the rank-order sum at %zu",
                         m, rep, bad);
            sh->hash[t->rank][rep] = hash;
            if (pgc_barrier(t))
                CHECK_MEMBER(t, 0, "barrier: %s", t->err.msg);
            int same_all = 1;
            for (int q = 0; q < P; q++)
                same_all &= sh->hash[q][rep] == hash && sh->hash[q][0] == hash;
            CHECK_MEMBER(t, same_all, "determinism n=%zu rep %d: members or repetitions differ", m, rep);
            if (pgc_barrier(t))
                CHECK_MEMBER(t, 0, "barrier: %s", t->err.msg);
        }
    }
    free(s);
    free(r);
}

/* Statistics: a member counts the path it took: inline, cico, or cma when
 * it exposed its buffers (never in place; here by size, cfg.cma_min). */
static void test_stats(pgc_team *t, size_t big)
{
    const uint64_t *st = t->stats[PGC_COLL_ALLREDUCE];
    uint64_t inl = st[PGC_PATH_INLINE], cico = st[PGC_PATH_CICO], cma = st[PGC_PATH_CMA];
    int64_t *b = calloc(big, 8), *s = calloc(big, 8);
    int rc = pgc_allreduce(t, NULL, b, 4, PGC_INT64, PGC_SUM);
    rc |= pgc_allreduce(t, NULL, b, big, PGC_INT64, PGC_SUM);
    rc |= pgc_allreduce(t, s, b, big, PGC_INT64, PGC_SUM);
    uint64_t exposed = t->nranks > 1 && t->cma_ok && big * 8 >= t->cfg.cma_min[PGC_COLL_ALLREDUCE];
    CHECK_MEMBER(t, rc == 0 && st[PGC_PATH_INLINE] == inl + 1 && st[PGC_PATH_CICO] == cico + 2 - exposed &&
                 st[PGC_PATH_CMA] == cma + exposed, "statistics (%s)", t->err.msg);
    free(b);
    free(s);
}

/* ---- bodies ---- */

static int body_checks(pgc_team *t, void *arg)
{
    (void)arg;
    test_invalid(t);
    test_peers_refused(t);
    test_aliased(t);
    test_slow_root(t);
    test_back_to_back(t);
    test_determinism(t);
    test_stats(t, 100000);
    return 0; /* failures are counted in the shared page */
}

/* Oversubscribed teams' single window (cfg.reduce_one_window). */
static int body_determinism(pgc_team *t, void *arg)
{
    (void)arg;
    test_determinism(t);
    return 0;
}

/* Single copy "preferred" for reductions (must run copy-in/copy-out) and
 * inline_max above the inline slot cap. */
static int body_stats(pgc_team *t, void *arg)
{
    (void)arg;
    test_stats(t, 100000);
    return 0;
}

/* Run `body` on a team of P members with cfg; print the outcome and check
 * that no member failed. */
static void run_team(const char *what, int P, pgc_config cfg, int (*body)(pgc_team *, void *))
{
    int f0 = atomic_load(&check_n->fail);
    int f = pgc_test_fork(P, &cfg, body, NULL);
    printf("P=%d %s: %s\n", P, what, f || atomic_load(&check_n->fail) != f0 ? "FAIL" : "ok");
    CHECK(f == 0, "P=%d %s: %d members failed", P, what, f);
}

int main(void)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || check_share()) {
        perror("mmap");
        return 2;
    }
    for (int P = 1; P <= MAXP; P++) {
        pgc_config cfg = pgc_test_config();
        run_team("default", P, cfg, body_checks);
        cfg.reduce_one_window = 1;
        run_team("one window when it fits", P, cfg, body_determinism);
    }
    /* Single copy by size: members not in place expose their buffers,
     * in-place ones (a Reduce root among them) stage. */
    for (int P = 2; P <= MAXP; P++) {
        pgc_config cfg = pgc_test_config();
        for (int i = 0; i < PGC_NCOLL; i++)
            cfg.cma_min[i] = 0;
        run_team("single copy", P, cfg, body_checks);
    }
    for (int P = 2; P <= 3; P++) {
        pgc_config cfg = pgc_test_config();
        cfg.inline_max = 4 * PGC_INLINE_SLOT_MAX;
        for (int i = 0; i < PGC_NCOLL; i++)
            cfg.cma_min[i] = 4096;
        run_team("cma/inline config", P, cfg, body_stats);
    }
    return check_summary();
}
