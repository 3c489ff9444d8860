/* Smoke test of the team, sync and Barrier/Bcast in forked processes. */
#include "team_fork.h"

static int body(pgc_team *t, void *arg)
{
    (void)arg;
    static char buf[3 << 20];
    size_t sizes[] = {0, 1, 8, 256, 257, 16384, 16385, 100000, 3 << 20};
    for (int it = 0; it < 50; it++)
        if (pgc_barrier(t))
            return 1;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int root = 0; root < t->nranks; root++) {
            size_t n = sizes[si];
            for (size_t i = 0; i < n; i++)
                buf[i] = t->rank == root ? (char)(i * 7 + root + si) : 0;
            if (pgc_bcast(t, buf, n, root))
                return 1;
            for (size_t i = 0; i < n; i++)
                if (buf[i] != (char)(i * 7 + root + si)) {
                    fprintf(stderr, "rank %d: bcast %zu root %d wrong at %zu\n", t->rank, n, root, i);
                    return 1;
                }
        }
    return 0;
}

int main(void)
{
    int passed = 0, failed = 0;
    for (int cma = 0; cma < 2; cma++)
        for (int P = 1; P <= 8; P++) {
            pgc_config cfg = pgc_test_config();
            if (cma)
                cfg.cma_min[PGC_COLL_BCAST] = 4096;
            int f = pgc_test_fork(P, &cfg, body, NULL);
            printf("P=%d cma=%d: %s\n", P, cma, f ? "FAIL" : "ok");
            f ? failed++ : passed++;
        }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
