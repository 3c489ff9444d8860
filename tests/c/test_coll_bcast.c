/* test_coll_bcast.c - Bcast, flat and as a pipelined k-nomial tree, on teams
 * of 1..8 forked processes (no MPI, no Python).
 *
 * For every team size, shape (flat; tree of radix 2, 3, 4) and path family
 * (cico: cma_min = never; cma: cma_min = 0), every root broadcasts sizes 0,
 * 1, around inline_max, around the chunk, over the staging ring and around
 * the tree's single-copy chunk; every reader checks every byte and that the
 * bytes after the message keep their sentinel. Then 100 back-to-back calls
 * with rotating roots and sizes, the root scribbling over its buffer right
 * after return (a late reader would see it). Then a size mismatch: the
 * member that sees it fails with EINVAL, the others fail or finish, and
 * nobody hangs. Then basic types that differ at the same byte count: no
 * bytes move between members of different types: a member whose source
 * (the root, or in a tree its parent) states another type fails with
 * PGC_ETYPE and finds its buffer untouched (but a single-copy tree's
 * relay, whose children read its buffer), every other member has the data
 * and completes or fails so, and the next calls succeed on every member
 * (no abort, none at the next call either). Then a root that
 * refuses its arguments (pgc_coll_refuse), with a reason and without: every
 * other member, flat or below a tree's relays, ends the call with
 * PGC_EREFUSED naming the root, its buffer untouched, and the next calls
 * succeed on every member. Prints "N passed, M
 * failed"; exits 1 on failure. */
#include "check.h"
#include "team_fork.h"

#define MAXP 8
#define CAP (3u << 20)
#define SENT 0xA5

static inline uint8_t pat(unsigned seed, int root, size_t i)
{
    return (uint8_t)(seed * 131u + (unsigned)root * 29u + i * 7u + (i >> 11) * 5u + 1u);
}

static const size_t SIZES[] = {0, 1, 255, 256, 257, 16383, 16384, 16385, 100000,
                               256 * 1024 - 1, 256 * 1024 + 1, 1000000, 2u << 20};
#define NSIZES (sizeof SIZES / sizeof SIZES[0])

/* Every size from every root, checked byte for byte. */
static int sweep(pgc_team *t, void *arg)
{
    (void)arg;
    uint8_t *buf = malloc(CAP + 64);
    unsigned seed = 1;
    for (int root = 0; root < t->nranks; root++)
        for (size_t s = 0; s < NSIZES; s++, seed++) {
            size_t n = SIZES[s];
            memset(buf, SENT, CAP + 64);
            if (t->rank == root)
                for (size_t i = 0; i < n; i++)
                    buf[i] = pat(seed, root, i);
            int rc = pgc_bcast(t, buf, n, root, -1);
            CHECK_MEMBER(t, rc == 0, "bcast %zu bytes from %d: %d %s", n, root, rc, t->err.msg);
            if (rc)
                return 1;
            size_t bad = n;
            for (size_t i = 0; i < n && bad == n; i++)
                if (buf[i] != pat(seed, root, i))
                    bad = i;
            CHECK_MEMBER(t, bad == n, "bcast %zu bytes from %d: byte %zu wrong", n, root, bad);
            CHECK_MEMBER(t, buf[n] == SENT && buf[n + 63] == SENT, "bcast %zu bytes: wrote past the end", n);
        }
    free(buf);
    return 0;
}

/* Back-to-back calls; the root overwrites its buffer as soon as it returns. */
static int back_to_back(pgc_team *t, void *arg)
{
    (void)arg;
    uint8_t *buf = malloc(CAP);
    for (unsigned k = 0; k < 100; k++) {
        int root = (int)(k % (unsigned)t->nranks);
        size_t n = SIZES[(k * 7) % NSIZES];
        if (n > 300000)
            n = 300000;
        if (t->rank == root)
            for (size_t i = 0; i < n; i++)
                buf[i] = pat(k, root, i);
        int rc = pgc_bcast(t, buf, n, root, -1);
        CHECK_MEMBER(t, rc == 0, "call %u: %d %s", k, rc, t->err.msg);
        if (rc)
            return 1;
        if (t->rank == root)
            memset(buf, 0x5A, n);
        else {
            size_t bad = n;
            for (size_t i = 0; i < n && bad == n; i++)
                if (buf[i] != pat(k, root, i))
                    bad = i;
            CHECK_MEMBER(t, bad == n, "call %u (%zu bytes from %d): byte %zu wrong", k, n, root, bad);
        }
    }
    free(buf);
    return 0;
}

/* The last member expects more bytes than the root sends. */
static int mismatch(pgc_team *t, void *arg)
{
    (void)arg;
    uint8_t *buf = calloc(1, 200000);
    size_t n = t->rank == t->nranks - 1 ? 200000 : 100000;
    int rc = pgc_bcast(t, buf, n, 0, -1);
    /* members that got all of the root's bytes before the abort may succeed */
    if (t->rank == t->nranks - 1)
        CHECK_MEMBER(t, rc == PGC_EINVAL, "mismatch returned %d (%s)", rc, t->err.msg);
    else
        CHECK_MEMBER(t, rc == PGC_OK || rc == PGC_EINVAL || rc == PGC_EABORTED, "mismatch returned %d (%s)",
                     rc, t->err.msg);
    free(buf);
    return 0;
}

/* A member's parent in the k-nomial tree from `root` (coll_bcast.c,
 * tree_links_of), -1 at the root, and whether it has children. */
static int tree_parent(int P, int rank, int root, int k, int *has_children)
{
    int v = (rank - root + P) % P;
    long place = 1;
    while (v != 0 && (v / place) % k == 0)
        place *= k;
    *has_children = v == 0 ? P > 1 : v + 1 < P && place > 1;
    return v == 0 ? -1 : (int)((v - ((v / place) % k) * place + root) % P);
}

/* The last member states int32 where the others state float64, at every
 * size of the sweep's kind (inline, staged over the ring, single copy). A
 * member whose source states the other type takes nothing from it; the
 * others have the root's bytes. */
static int types_differ(pgc_team *t, void *arg)
{
    (void)arg;
    static const size_t sizes[] = {8, 200, 40000, 600000};
    uint8_t *buf = malloc(600000);
    int odd = t->nranks - 1;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int root = 0; root < t->nranks; root += t->nranks > 1 ? t->nranks - 1 : 1) {
            size_t n = sizes[s];
            for (size_t i = 0; i < n; i++)
                buf[i] = t->rank == root ? pat(7, root, i) : SENT;
            pgc_path path = pgc_choose_path(t, PGC_COLL_BCAST, n, 0);
            int radix = pgc_bcast_radix(t, path), relay = 0;
            int source = radix ? tree_parent(t->nranks, t->rank, root, radix, &relay) : t->rank == root ? -1 : root;
            int skip = source >= 0 && (t->rank == odd) != (source == odd);
            int untouched = skip && !(radix && path == PGC_PATH_CMA && relay);
            int rc = pgc_bcast(t, buf, n, root, t->rank == odd ? PGC_INT32 : PGC_FLOAT64);
            CHECK_MEMBER(t, skip ? rc == PGC_ETYPE : rc == PGC_OK || rc == PGC_ETYPE,
                         "types differ, %zu bytes, root %d: returned %d (%s)", n, root, rc, t->err.msg);
            if (rc == PGC_ETYPE) {
                CHECK_MEMBER(t, strstr(t->err.msg, "int32") && strstr(t->err.msg, "float64"), "message: %s",
                             t->err.msg);
                /* the peer's type, as a hierarchical Bcast's root node's leader reads it */
                CHECK_MEMBER(t, t->basic_seen == (t->rank == odd ? PGC_FLOAT64 : PGC_INT32),
                             "basic_seen %d after: %s", t->basic_seen, t->err.msg);
            }
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += buf[i] != (untouched ? SENT : pat(7, root, i));
            CHECK_MEMBER(t, bad == 0, "types differ, %zu bytes, root %d, radix %d, path %d: %zu bytes %s", n, root,
                         radix, (int)path, bad, untouched ? "written" : "wrong");
            /* the same types: every member completes, now and at the next
             * call; the barrier first, as the root of an inline Bcast waits
             * for nobody: PGC_SIG_RING calls ahead it would reuse the slot
             * of the signature a slow reader has yet to see */
            CHECK_MEMBER(t, pgc_barrier(t) == PGC_OK, "barrier: %s", t->err.msg);
            for (int k = 0; k < 2; k++) {
                for (size_t i = 0; i < n; i++)
                    buf[i] = t->rank == root ? pat(8 + k, root, i) : SENT;
                rc = pgc_bcast(t, buf, n, root, PGC_FLOAT64);
                bad = 0;
                for (size_t i = 0; i < n; i++)
                    bad += buf[i] != pat(8 + k, root, i);
                CHECK_MEMBER(t, rc == PGC_OK && bad == 0, "next call %d: returned %d (%s), %zu bytes wrong", k, rc,
                             t->err.msg, bad);
            }
        }
    free(buf);
    return 0;
}

/* Every root in turn refuses its arguments at every size of the sweep's
 * kind; every other member waits for it (or for a relay that met the
 * refusal) and must end the call with PGC_EREFUSED, write nothing, and
 * complete the next call. */
static int root_refuses(pgc_team *t, void *arg)
{
    (void)arg;
    static const size_t sizes[] = {8, 200, 40000, 600000};
    uint8_t *buf = malloc(600000);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int root = 0; root < t->nranks; root++) {
            size_t n = sizes[s];
            memset(buf, SENT, n);
            int rc;
            const char *reason = s % 2 ? NULL : "ArgumentError: buffer holds 8 bytes but the call needs 16";
            if (t->rank == root) {
                rc = pgc_coll_refuse(t, PGC_COLL_BCAST, reason);
                CHECK_MEMBER(t, rc == PGC_OK, "refuse returned %d (%s)", rc, t->err.msg);
            } else {
                rc = pgc_bcast(t, buf, n, root, PGC_FLOAT64);
                CHECK_MEMBER(t, rc == PGC_EREFUSED, "%zu bytes, root %d refused: returned %d (%s)", n, root, rc,
                             t->err.msg);
                CHECK_MEMBER(t, strstr(t->err.msg, "the root (local rank") != NULL &&
                                    (!reason || strstr(t->err.msg, reason) != NULL), "message: %s", t->err.msg);
                size_t bad = 0;
                for (size_t i = 0; i < n; i++)
                    bad += buf[i] != SENT;
                CHECK_MEMBER(t, bad == 0, "%zu bytes, root %d refused: %zu bytes written", n, root, bad);
            }
            for (size_t i = 0; i < n; i++)
                buf[i] = t->rank == root ? pat(3, root, i) : 0;
            rc = pgc_bcast(t, buf, n, root, PGC_FLOAT64);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += buf[i] != pat(3, root, i);
            CHECK_MEMBER(t, rc == PGC_OK && bad == 0, "next call, %zu bytes, root %d: returned %d (%s), %zu wrong",
                         n, root, rc, t->err.msg, bad);
        }
    free(buf);
    return 0;
}

int main(void)
{
    if (check_share()) {
        perror("mmap");
        return 2;
    }
    static const int radices[] = {0, 2, 3, 4};
    for (int P = 1; P <= MAXP; P++)
        for (int ri = 0; ri < 4; ri++)
            for (int cma = 0; cma < 3; cma++) { /* 2: staged, the ring written with streaming stores */
                pgc_config cfg = pgc_test_config();
                cfg.bcast_tree_min = radices[ri] ? 2 : 0;
                cfg.bcast_radix = (uint32_t)(radices[ri] ? radices[ri] : 4);
                cfg.cma_min[PGC_COLL_BCAST] = cma == 1 ? 0 : UINT64_MAX;
                cfg.stream = cma == 2 ? 2 : 0;
                int f = pgc_test_fork(P, &cfg, sweep, NULL) + pgc_test_fork(P, &cfg, back_to_back, NULL);
                CHECK(f == 0, "P=%d radix=%d cma=%d: %d members failed", P, radices[ri], cma, f);
                if (P > 1 && (P == 3 || P == 8)) {
                    cfg.timeout_s = 10;
                    f = pgc_test_fork(P, &cfg, mismatch, NULL);
                    CHECK(f == 0, "P=%d radix=%d cma=%d mismatch: %d members failed", P, radices[ri], cma, f);
                }
                f = pgc_test_fork(P, &cfg, types_differ, NULL);
                CHECK(f == 0, "P=%d radix=%d cma=%d types differ: %d members failed", P, radices[ri], cma, f);
                f = pgc_test_fork(P, &cfg, root_refuses, NULL);
                CHECK(f == 0, "P=%d radix=%d cma=%d root refuses: %d members failed", P, radices[ri], cma, f);
            }
    return check_summary();
}
