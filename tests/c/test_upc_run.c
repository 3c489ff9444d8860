/* pgc_upc_run (csrc/upc/): members' programs of waits, copies and posts on
 * forked teams, the "parts" being a shared mapping made before the fork
 * (the same address in every member): a flat pull broadcast under ALLSYNC,
 * a binomial pull tree in chunks under NOSYNC (chunk steps alone order the
 * copies), the last arrival making every copy under ALLSYNC (calls enough
 * to reuse every arrival word, between other collectives), a program
 * refused before its call begins, members that disagree on the call's
 * argument (in a last-arrival program: nobody copies). */
#include <sys/mman.h>

#include "check.h"
#include "team_fork.h"
#include "upc/upc.h"

#define BLOCK 4096
#define CALLS 40
static char *parts; /* member r's block at parts + r * BLOCK; the root's src after the last block */

static pgc_upc_step step(uint64_t kind, uint64_t a, uint64_t b, uint64_t c)
{
    pgc_upc_step s = {kind, a, b, c};
    return s;
}

static char *block(int r)
{
    return parts + (size_t)r * BLOCK;
}

static int flat_pull(pgc_team *t, void *arg)
{
    char *src = (char *)arg;
    for (int k = 0; k < CALLS; k++) {
        int root = k % t->nranks;
        if (t->rank == root)
            memset(src, 'a' + k % 26, BLOCK);   /* before the call: IN_ALLSYNC orders it before every copy */
        pgc_upc_step prog[] = {step(PGC_UPC_POST, PGC_UPC_ENTERED, 0, 0), step(PGC_UPC_WAIT, PGC_UPC_ALL, PGC_UPC_ENTERED, 0),
                               step(PGC_UPC_COPY, (uint64_t)(uintptr_t)block(t->rank), (uint64_t)(uintptr_t)src, BLOCK),
                               step(PGC_UPC_END, 0, 0, 0), step(PGC_UPC_WAIT, PGC_UPC_ALL, PGC_STEP_DONE, 0)};
        int rc = pgc_upc_run(t, PGC_COLL_UPC_BROADCAST, 7, prog, sizeof prog / sizeof *prog);
        CHECK_MEMBER(t, rc == PGC_OK, "flat pull call %d: rc %d: %s", k, rc, t->err.msg);
        if (rc)
            return 1;
        for (int r = 0; r < t->nranks; r++)     /* OUT_ALLSYNC: every block is complete */
            CHECK_MEMBER(t, block(r)[0] == 'a' + k % 26 && block(r)[BLOCK - 1] == 'a' + k % 26,
                         "flat pull call %d: block of rank %d holds %c", k, r, block(r)[0]);
        if (pgc_barrier(t))     /* nobody writes src again before everyone checked */
            return 1;
    }
    return 0;
}

static int tree_pull(pgc_team *t, void *arg)
{
    char *src = (char *)arg;
    const int chunks = 4, size = BLOCK / 4;
    int v = t->rank; /* root 0 */
    int parent = v ? v & ~(1 << (31 - __builtin_clz((unsigned)v))) : -1;
    for (int k = 0; k < CALLS; k++) {
        if (v == 0)
            memset(src, 'A' + k % 26, BLOCK);
        pgc_upc_step prog[3 * 4 + 1];
        size_t n = 0;
        for (int c = 0; c < chunks; c++) {
            uint64_t from = (uint64_t)(uintptr_t)(parent < 0 ? src : block(parent)) + (uint64_t)c * size;
            if (parent >= 0)
                prog[n++] = step(PGC_UPC_WAIT, (uint64_t)parent, PGC_UPC_STEP0 + c, 0);
            prog[n++] = step(PGC_UPC_COPY, (uint64_t)(uintptr_t)block(v) + (uint64_t)c * size, from, size);
            prog[n++] = step(PGC_UPC_POST, PGC_UPC_STEP0 + c, 0, 0);
        }
        prog[n++] = step(PGC_UPC_END, 0, 0, 0);
        int rc = pgc_upc_run(t, PGC_COLL_UPC_BROADCAST, 8, prog, n);
        CHECK_MEMBER(t, rc == PGC_OK, "tree call %d: rc %d: %s", k, rc, t->err.msg);
        if (rc)
            return 1;
        CHECK_MEMBER(t, block(v)[0] == 'A' + k % 26 && block(v)[BLOCK - 1] == 'A' + k % 26,
                     "tree call %d: my block holds %c", k, block(v)[0]);
        if (pgc_barrier(t))
            return 1;
    }
    return 0;
}

/* The last-arrival program (upc.h): ARRIVE, a copy of src into every
 * member's block, END, WAIT ALL DONE. */
static size_t last_arrival_program(pgc_team *t, pgc_upc_step *prog, const char *src)
{
    size_t n = 0;
    prog[n++] = step(PGC_UPC_ARRIVE, (uint64_t)t->nranks, 0, 0);
    for (int r = 0; r < t->nranks; r++)
        prog[n++] = step(PGC_UPC_COPY, (uint64_t)(uintptr_t)block(r), (uint64_t)(uintptr_t)src, BLOCK);
    prog[n++] = step(PGC_UPC_END, 0, 0, 0);
    prog[n++] = step(PGC_UPC_WAIT, PGC_UPC_ALL, PGC_STEP_DONE, 0);
    return n;
}

static int last_arrival(pgc_team *t, void *arg)
{
    char *src = (char *)arg;
    pgc_upc_step prog[8 + 3];
    for (int k = 0; k < 3 * PGC_RUNAHEAD; k++) {
        int root = k % t->nranks;
        if (t->rank == root)
            memset(src, 'a' + k % 26, BLOCK);   /* before the call: the arrival orders it before the copies */
        int rc = pgc_upc_run(t, PGC_COLL_UPC_BROADCAST, 5, prog, last_arrival_program(t, prog, src));
        CHECK_MEMBER(t, rc == PGC_OK, "last arrival call %d: rc %d: %s", k, rc, t->err.msg);
        if (rc)
            return 1;
        for (int r = 0; r < t->nranks; r++)     /* OUT_ALLSYNC: every block is complete */
            CHECK_MEMBER(t, block(r)[0] == 'a' + k % 26 && block(r)[BLOCK - 1] == 'a' + k % 26,
                         "last arrival call %d: block of rank %d holds %c", k, r, block(r)[0]);
        if (k % 3 == 0 && pgc_barrier(t))       /* other seqs between: their arrival words stay unused */
            return 1;
        if (pgc_barrier(t))     /* nobody writes src again before everyone checked */
            return 1;
    }
    return 0;
}

static int refusals(pgc_team *t, void *arg)
{
    (void)arg;
    uint32_t seq = t->seq;
    pgc_upc_step self_wait[] = {step(PGC_UPC_WAIT, (uint64_t)t->rank, PGC_UPC_ENTERED, 0)};
    pgc_upc_step bad_kind[] = {step(99, 0, 0, 0)};
    pgc_upc_step far_skip[] = {step(PGC_UPC_ARRIVE, 1, 0, 0)};
    CHECK_MEMBER(t, pgc_upc_run(t, PGC_COLL_UPC_BROADCAST, 0, self_wait, 1) == PGC_EINVAL, "a wait on oneself");
    CHECK_MEMBER(t, pgc_upc_run(t, PGC_COLL_UPC_BROADCAST, 0, bad_kind, 1) == PGC_EINVAL, "an unknown step");
    CHECK_MEMBER(t, pgc_upc_run(t, PGC_COLL_UPC_BROADCAST, 0, far_skip, 1) == PGC_EINVAL,
                 "an arrival that skips past the end");
    CHECK_MEMBER(t, pgc_upc_run(t, PGC_COLL_BCAST, 0, NULL, 0) == PGC_EINVAL, "a collective that is not UPC's");
    CHECK_MEMBER(t, t->seq == seq, "refused programs took sequence numbers");
    /* the team is usable: a barrier of everyone */
    CHECK_MEMBER(t, pgc_barrier(t) == PGC_OK, "barrier after refusals: %s", t->err.msg);
    /* members that disagree on the argument fail at their first wait on each other */
    pgc_upc_step sync[] = {step(PGC_UPC_POST, PGC_UPC_ENTERED, 0, 0), step(PGC_UPC_WAIT, PGC_UPC_ALL, PGC_UPC_ENTERED, 0)};
    int rc = pgc_upc_run(t, PGC_COLL_UPC_SCATTER, (uint32_t)t->rank, sync, 2);
    CHECK_MEMBER(t, rc == PGC_EMISMATCH || rc == PGC_EABORTED, "disagreeing members: rc %d", rc);
    CHECK_MEMBER(t, rc != PGC_EMISMATCH || strstr(t->err.msg, "other arguments"), "message: %s", t->err.msg);
    return 0;
}

/* Members that disagree in a last-arrival program: the arrival word counts
 * none but the first one's call, nobody is last, nobody copies, and every
 * member fails at its OUT wait. */
static int disagreeing_arrivals(pgc_team *t, void *arg)
{
    char *src = (char *)arg;
    memset(block(t->rank), '-', BLOCK);
    if (t->rank == 0)
        memset(src, 'z', BLOCK);
    if (pgc_barrier(t))
        return 1;
    pgc_upc_step prog[8 + 3];
    int rc = pgc_upc_run(t, PGC_COLL_UPC_BROADCAST, (uint32_t)t->rank, prog, last_arrival_program(t, prog, src));
    CHECK_MEMBER(t, rc == PGC_EMISMATCH || rc == PGC_EABORTED, "disagreeing arrivals: rc %d", rc);
    for (int r = 0; r < t->nranks; r++)
        CHECK_MEMBER(t, block(r)[0] == '-' && block(r)[BLOCK - 1] == '-', "disagreeing arrivals: block of %d "
                     "written", r);
    return 0;
}

int main(void)
{
    check_share();
    parts = mmap(NULL, 9 * BLOCK, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (parts == MAP_FAILED)
        return 1;
    char *src = parts + 8 * BLOCK;
    for (int P = 1; P <= 8; P++) {
        pgc_config cfg = pgc_test_config();
        CHECK(pgc_test_fork(P, &cfg, flat_pull, src) == 0, "flat pull, %d members", P);
        CHECK(pgc_test_fork(P, &cfg, tree_pull, src) == 0, "binomial pull in chunks, %d members", P);
        CHECK(pgc_test_fork(P, &cfg, last_arrival, src) == 0, "last arrival, %d members", P);
    }
    pgc_config cfg = pgc_test_config();
    CHECK(pgc_test_fork(3, &cfg, refusals, NULL) == 0, "refusals");
    CHECK(pgc_test_fork(3, &cfg, disagreeing_arrivals, src) == 0, "disagreeing arrivals");
    return check_summary();
}
