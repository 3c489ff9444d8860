/* Smoke test of the team, sync and Barrier/Bcast in forked processes; a
 * single copy with a member that died is reported as a dead peer. */
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
            if (pgc_bcast(t, buf, n, root, -1))
                return 1;
            for (size_t i = 0; i < n; i++)
                if (buf[i] != (char)(i * 7 + root + si)) {
                    fprintf(stderr, "rank %d: bcast %zu root %d wrong at %zu\n", t->rank, n, root, i);
                    return 1;
                }
        }
    return 0;
}

/* Member 1 leaves at once; member 0 then reads from it by single copy:
 * PGC_EPEERDEAD naming it (as a wait would), not a bare system error. */
static int dead_peer_body(pgc_team *t, void *arg)
{
    (void)arg;
    if (t->rank == 1)
        return 0;
    for (int i = 0; i < 10000 && pgc_member_alive(t, 1); i++)
        usleep(1000);
    char b[64];
    int rc = pgc_coll_cma(t, 1, 0, b, (uint64_t)(uintptr_t)b, sizeof b);
    if (rc != PGC_EPEERDEAD || t->err.peer != 1 || !strstr(t->err.msg, "local rank 1") ||
        !strstr(t->err.msg, "died")) {
        fprintf(stderr, "single copy from a dead member: rc %d, peer %d: %s\n", rc, t->err.peer, t->err.msg);
        return 1;
    }
    return 0;
}

int main(void)
{
    int passed = 0, failed = 0;
    {
        pgc_config cfg = pgc_test_config();
        int f = pgc_test_fork(2, &cfg, dead_peer_body, NULL);
        printf("single copy from a dead member: %s\n", f ? "FAIL" : "ok");
        f ? failed++ : passed++;
    }
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
