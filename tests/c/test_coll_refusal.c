/* A member that refuses its arguments (pgc_coll_refuse) while the others
 * are in the collective: every member that needs it ends the call with
 * PGC_EPEERREFUSED, naming it and its reason, and so does every member
 * that needs one of those (give_up, csrc/coll/coll.c); the others complete with the
 * right data, a Bcast's or Scatter's root among them (it skips the
 * refuser); nobody aborts, and the next calls are right on every member.
 * Every collective that moves data, every member as the refuser (as a
 * rooted collective's member that is not the root, and as its root), two
 * refusers at once, a refuser that comes late (the others asleep in their
 * waits), 8 bytes and 100000 (inline, staged or single copy, a Bcast
 * tree), teams of 2 to 5 and 8 members. */
#include "check.h"
#include "team_fork.h"

enum { N = 100000 / 8, MAXP = 8 };

typedef struct {
    size_t bytes;   /* per member */
    int late;       /* the refuser sleeps before it refuses */
    int two;        /* member P-1 refuses too */
} refusal_case;

static const pgc_coll COLLS[] = {PGC_COLL_BCAST, PGC_COLL_REDUCE, PGC_COLL_ALLREDUCE, PGC_COLL_SCAN,
                                 PGC_COLL_EXSCAN, PGC_COLL_REDUCE_SCATTER_BLOCK, PGC_COLL_GATHER,
                                 PGC_COLL_SCATTER, PGC_COLL_ALLGATHER, PGC_COLL_ALLTOALL};

/* Whether member `me` needs member `r`'s data in coll (rooted at root):
 * such a member cannot complete and must end with PGC_EPEERREFUSED. */
static int needs(pgc_coll coll, int me, int r, int root)
{
    switch (coll) {
    case PGC_COLL_BCAST: case PGC_COLL_SCATTER:
        return 0;   /* a tree's member below r does, a flat reader not: either */
    case PGC_COLL_REDUCE: case PGC_COLL_GATHER:
        return me == root;
    case PGC_COLL_SCAN: case PGC_COLL_EXSCAN:
        return me > r;
    default:
        return 1;
    }
}

static int call(pgc_team *t, pgc_coll coll, size_t bytes, int root, double *s, double *r, size_t *counts,
                size_t *displs)
{
    size_t n = bytes / 8;
    int P = t->nranks;
    for (int q = 0; q < P; q++) {
        counts[q] = bytes;
        displs[q] = bytes * (size_t)q;
    }
    switch (coll) {
    case PGC_COLL_BCAST:
        return pgc_bcast(t, t->rank == root ? s : r, bytes, root, PGC_FLOAT64);
    case PGC_COLL_REDUCE:
        return pgc_reduce(t, s, r, n, PGC_FLOAT64, PGC_SUM, root);
    case PGC_COLL_ALLREDUCE:
        return pgc_allreduce(t, s, r, n, PGC_FLOAT64, PGC_SUM);
    case PGC_COLL_SCAN:
        return pgc_scan(t, s, r, n, PGC_FLOAT64, PGC_SUM);
    case PGC_COLL_EXSCAN:
        return pgc_exscan(t, s, r, n, PGC_FLOAT64, PGC_SUM);
    case PGC_COLL_REDUCE_SCATTER_BLOCK: {
        size_t elems[MAXP];
        for (int q = 0; q < P; q++)
            elems[q] = n;
        return pgc_reduce_scatter(t, coll, s, r, elems, PGC_FLOAT64, PGC_SUM);
    }
    case PGC_COLL_GATHER:
        return pgc_gather(t, coll, s, bytes, r, counts, displs, root, PGC_FLOAT64);
    case PGC_COLL_SCATTER:
        return pgc_scatter(t, coll, s, counts, displs, r, bytes, root, PGC_FLOAT64);
    case PGC_COLL_ALLGATHER:
        return pgc_allgather(t, coll, s, bytes, r, counts, displs, 0);
    default:
        return pgc_alltoall(t, coll, s, counts, displs, r, counts, displs);
    }
}

/* What a member that completed must hold, where it is easy to tell: a
 * Bcast's data, a Scan's prefix (each member contributes rank + 1). */
static int right(pgc_team *t, pgc_coll coll, size_t bytes, int root, const double *r)
{
    size_t n = bytes / 8;
    int me = t->rank;
    if (coll == PGC_COLL_BCAST && me != root)
        return r[0] == root + 1 && r[n - 1] == root + 1;
    if (coll == PGC_COLL_SCAN)
        return r[0] == (me + 1) * (me + 2) / 2.0 && r[n - 1] == r[0];
    return 1;
}

static int body(pgc_team *t, void *arg)
{
    const refusal_case *c = arg;
    int P = t->nranks, me = t->rank, rc;
    double *s = malloc(N * MAXP * sizeof *s), *r = malloc(N * MAXP * sizeof *r);
    size_t counts[MAXP], displs[MAXP];
    for (size_t i = 0; i < N * MAXP; i++)
        s[i] = me + 1;
    for (size_t k = 0; k < sizeof COLLS / sizeof *COLLS; k++)
        for (int ref = 0; ref < P; ref++)
            for (int as_root = 0; as_root < 2; as_root++) {
                pgc_coll coll = COLLS[k];
                int rooted = coll == PGC_COLL_BCAST || coll == PGC_COLL_REDUCE || coll == PGC_COLL_GATHER ||
                             coll == PGC_COLL_SCATTER;
                if (as_root && !rooted)
                    continue;
                int root = as_root ? ref : (ref + 1) % P;
                int refuses = me == ref || (c->two && me == P - 1 && (!rooted || root != P - 1));
                memset(r, 0, N * MAXP * sizeof *r);
                if (refuses) {
                    if (c->late)
                        usleep(20000);
                    rc = pgc_coll_refuse(t, coll, "bad count");
                    CHECK_MEMBER(t, rc == 0, "%s refused: rc %d", pgc_coll_name(coll), rc);
                } else {
                    rc = call(t, coll, c->bytes, root, s, r, counts, displs);
                    const char *name = pgc_coll_name(coll);
                    if ((coll == PGC_COLL_BCAST || coll == PGC_COLL_SCATTER) && me == root)
                        CHECK_MEMBER(t, rc == 0, "%s root with a refusing reader (%zu B, refuser %d): rc %d %s", name,
                                     c->bytes, ref, rc, rc ? t->err.msg : "");
                    if (rc == PGC_EPEERREFUSED)
                        CHECK_MEMBER(t, (t->err.peer == ref || (c->two && t->err.peer == P - 1)) &&
                                            strstr(t->err.msg, "refused its arguments: bad count"),
                                     "%s %zu B refuser %d root %d: %s", name, c->bytes, ref, root, t->err.msg);
                    else if (rc == PGC_EREFUSED)     /* the root refused: its own way (no abort either) */
                        CHECK_MEMBER(t, as_root || (c->two && root == P - 1), "%s: root refused? %s", name,
                                     t->err.msg);
                    else
                        CHECK_MEMBER(t, rc == 0 && !needs(coll, me, ref, root) &&
                                            !(c->two && needs(coll, me, P - 1, root)) &&
                                            right(t, coll, c->bytes, root, r),
                                     "%s %zu B refuser %d root %d: rc %d (%s)", name, c->bytes, ref, root, rc,
                                     rc ? t->err.msg : "completed where it needs the refuser, or wrong");
                }
                CHECK_MEMBER(t, pgc_check_aborted(t) == 0, "%s: the team was aborted: %s", pgc_coll_name(coll),
                             t->err.msg);
                /* the next calls are right: an Allreduce, a Bcast from the refuser */
                rc = pgc_allreduce(t, s, r, 8, PGC_FLOAT64, PGC_SUM);
                CHECK_MEMBER(t, rc == 0 && r[7] == P * (P + 1) / 2.0, "Allreduce after %s: rc %d %s",
                             pgc_coll_name(coll), rc, rc ? t->err.msg : "");
                rc = pgc_bcast(t, me == ref ? s : r, c->bytes, ref, PGC_FLOAT64);
                CHECK_MEMBER(t, rc == 0 && (me == ref || r[c->bytes / 8 - 1] == ref + 1),
                             "Bcast after %s: rc %d %s", pgc_coll_name(coll), rc, rc ? t->err.msg : "");
                if (pgc_check_aborted(t)) {
                    free(s);
                    free(r);
                    return 1;
                }
            }
    free(s);
    free(r);
    return 0;
}

static void run(const char *what, int P, pgc_config cfg, refusal_case c)
{
    int f0 = atomic_load(&check_n->fail);
    int f = pgc_test_fork(P, &cfg, body, &c);
    printf("P=%d %s, %zu B%s%s: %s\n", P, what, c.bytes, c.late ? ", late" : "", c.two ? ", two refusers" : "",
           f || atomic_load(&check_n->fail) != f0 ? "FAIL" : "ok");
    CHECK(f == 0, "P=%d %s: %d members failed", P, what, f);
}

int main(void)
{
    if (check_share()) {
        perror("mmap");
        return 2;
    }
    static const int teams[] = {2, 3, 4, 5, 8};
    for (size_t i = 0; i < sizeof teams / sizeof *teams; i++) {
        int P = teams[i];
        pgc_config staged = pgc_test_config(), cma = staged, tree = staged;
        for (int k = 0; k < PGC_NCOLL; k++)
            cma.cma_min[k] = 4096;
        tree.bcast_tree_min = 2;
        tree.bcast_radix = 2;
        for (int big = 0; big < 2; big++) {
            refusal_case c = {big ? N * 8 : 8, 0, 0};
            run("staged", P, staged, c);
            if (P > 2)
                run("Bcast tree", P, tree, c);
            if (big)
                run("single copy", P, cma, c);
        }
        if (P <= 4) {
            run("staged", P, staged, (refusal_case){N * 8, 1, 0});
            if (P > 2)
                run("single copy", P, cma, (refusal_case){N * 8, 0, 1});
            run("staged", P, staged, (refusal_case){8, 1, 1});
        }
    }
    return check_summary();
}
