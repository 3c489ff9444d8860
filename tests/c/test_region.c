/* The team's shared regions (csrc/team/region.h): translation edges, the
 * refusals of registration, and collectives on buffers in a region with the
 * kernel's single copy disabled: Allgather, Alltoall and Gather take single
 * copy (stats), every copy goes through the region (single_copies), none
 * through process_vm_readv, and the results are right. Each member maps
 * the region at an address of its own (a second mapping of a shared
 * anonymous mapping, mremap with old size 0), as separate processes do. */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "check.h"
#include "team_fork.h"

#define MAXP 8
#define BLOCK (64u << 10) /* above the test config's inline size */

/* The shared mapping made before the fork: every member's base address of
 * its alias, then the data. */
typedef struct {
    _Atomic uint64_t base[MAXP];
    char data[];
} area;
static area *shared_area;
static size_t area_bytes;

static void edges(pgc_team *t)
{
    /* member r's mapping of region 7 at 0x10000 * (r + 1), 0x1000 bytes */
    uint64_t bases[MAXP];
    for (int r = 0; r < t->nranks; r++)
        bases[r] = 0x10000ull * (uint64_t)(r + 1);
    CHECK_MEMBER(t, pgc_region_add(t, 7, 0x1000, bases) == PGC_OK, "add: %s", t->err.msg);
    int r = t->nranks - 1;
    uint64_t b = bases[r];
    char *mine = (char *)(uintptr_t)bases[t->rank];
    CHECK_MEMBER(t, pgc_region_find(t, r, b, 0x1000) == mine, "the whole region");
    CHECK_MEMBER(t, pgc_region_find(t, r, b + 0xff0, 0x10) == mine + 0xff0, "a range ending at its end");
    CHECK_MEMBER(t, pgc_region_find(t, r, b + 0xff0, 0x11) == NULL, "a range straddling its end");
    CHECK_MEMBER(t, pgc_region_find(t, r, b - 1, 2) == NULL, "a range straddling its start");
    CHECK_MEMBER(t, pgc_region_find(t, r, b + 0x1000, 1) == NULL, "just past it");
    CHECK_MEMBER(t, pgc_region_find(t, r, b, 0) == NULL, "length 0");
    CHECK_MEMBER(t, pgc_region_find(t, r, b + 8, SIZE_MAX) == NULL, "a length that wraps");
    CHECK_MEMBER(t, pgc_region_find(t, r, UINT64_MAX, 2) == NULL, "an address that wraps");
    if (t->nranks > 1) /* member r's address means nothing in member 0's table entry */
        CHECK_MEMBER(t, pgc_region_find(t, 0, b + 0x10, 0x10) == NULL, "another member's address");
    CHECK_MEMBER(t, pgc_region_holds(t, mine + 0x10, 0x100) && !pgc_region_holds(t, mine + 0x10, 0x1000),
                 "pgc_region_holds");
    /* refusals: a used id, an overlap on any member, size 0, a wrapping range */
    CHECK_MEMBER(t, pgc_region_add(t, 7, 0x10, bases) == PGC_EINVAL, "a used id");
    uint64_t over[MAXP];
    for (int q = 0; q < t->nranks; q++)
        over[q] = 0x900000ull * (uint64_t)(q + 1);
    over[r] = b + 0xfff;
    CHECK_MEMBER(t, pgc_region_add(t, 8, 0x10, over) == PGC_EINVAL && strstr(t->err.msg, "overlaps"),
                 "an overlap on one member: %s", t->err.msg);
    over[r] = UINT64_MAX - 4;
    CHECK_MEMBER(t, pgc_region_add(t, 8, 0x10, over) == PGC_EINVAL, "a range that wraps");
    CHECK_MEMBER(t, pgc_region_add(t, 8, 0, bases) == PGC_EINVAL, "size 0");
    over[r] = b + 0x1000; /* adjacent: fine */
    CHECK_MEMBER(t, pgc_region_add(t, 8, 0x10, over) == PGC_OK, "an adjacent region: %s", t->err.msg);
    CHECK_MEMBER(t, pgc_region_find(t, r, b + 0xff8, 0x10) == NULL, "a range across two regions");
    CHECK_MEMBER(t, pgc_region_remove(t, 7) == PGC_OK && pgc_region_remove(t, 8) == PGC_OK, "remove");
    CHECK_MEMBER(t, pgc_region_remove(t, 7) == PGC_EINVAL, "remove twice");
    CHECK_MEMBER(t, t->nregions == 0 && pgc_region_find(t, r, b, 1) == NULL, "removed: not translated");
}

static int collectives(pgc_team *t, void *arg)
{
    (void)arg;
    int P = t->nranks, me = t->rank, rc;
    edges(t);
    /* our own mapping of the shared area, at an address of our own */
    area *a = mremap(shared_area, 0, area_bytes, MREMAP_MAYMOVE);
    if (a == MAP_FAILED)
        return 1;
    atomic_store(&shared_area->base[me], (uint64_t)(uintptr_t)a);
    if ((rc = pgc_barrier(t)))
        return rc;
    uint64_t bases[MAXP];
    for (int r = 0; r < P; r++)
        bases[r] = atomic_load(&shared_area->base[r]);
    if ((rc = pgc_region_add(t, 1, area_bytes, bases)))
        return rc;
    /* member r's send buffer and receive buffer, in the area */
    size_t per = (size_t)(P + 1) * BLOCK;
    char *send = a->data + (size_t)me * per, *recv = send + BLOCK;
    size_t counts[MAXP], displs[MAXP];
    for (int r = 0; r < P; r++)
        counts[r] = BLOCK, displs[r] = (size_t)r * BLOCK;
    uint64_t kernel = t->single_copies[PGC_COPY_KERNEL];
    for (size_t i = 0; i < BLOCK; i++)
        send[i] = (char)(i * 3 + me);
    if ((rc = pgc_allgather(t, PGC_COLL_ALLGATHER, send, BLOCK, recv, counts, displs, 0)))
        return rc;
    int bad = 0;
    for (int r = 0; r < P; r++)
        for (size_t i = 0; i < BLOCK; i++)
            bad += recv[displs[r] + i] != (char)(i * 3 + r);
    CHECK_MEMBER(t, !bad, "Allgather: %d wrong bytes", bad);
    /* Alltoall: block for q is q's rank, from us */
    size_t each = BLOCK / MAXP * MAXP / (size_t)P & ~(size_t)63, ac[MAXP], ad[MAXP];
    for (int q = 0; q < P; q++) {
        ac[q] = each, ad[q] = (size_t)q * each;
        memset(send + ad[q], 16 * me + q, each);
    }
    if ((rc = pgc_alltoall(t, PGC_COLL_ALLTOALL, send, ac, ad, recv, ac, ad)))
        return rc;
    bad = 0;
    for (int q = 0; q < P; q++)
        for (size_t i = 0; i < each; i++)
            bad += recv[ad[q] + i] != (char)(16 * q + me);
    CHECK_MEMBER(t, !bad, "Alltoall: %d wrong bytes", bad);
    /* Gather to the last member: pushes into its receive buffer */
    memset(send, 'a' + me, BLOCK);
    if ((rc = pgc_gather(t, PGC_COLL_GATHER, send, BLOCK, recv, counts, displs, P - 1, -1)))
        return rc;
    if (me == P - 1) {
        bad = 0;
        for (int r = 0; r < P; r++)
            for (size_t i = 0; i < BLOCK; i++)
                bad += recv[displs[r] + i] != (char)('a' + r);
        CHECK_MEMBER(t, !bad, "Gather: %d wrong bytes", bad);
    }
    if (P > 1) {
        CHECK_MEMBER(t, t->stats[PGC_COLL_ALLGATHER][PGC_PATH_CMA] == 1 && t->stats[PGC_COLL_ALLTOALL][PGC_PATH_CMA] == 1,
                     "single copy without process_vm_readv");
        CHECK_MEMBER(t, me == P - 1 || t->stats[PGC_COLL_GATHER][PGC_PATH_CMA] == 1, "Gather pushes");
        CHECK_MEMBER(t, t->single_copies[PGC_COPY_SHARED] > 0 && t->single_copies[PGC_COPY_KERNEL] == kernel,
                     "copies through the region: %llu shared, %llu kernel",
                     (unsigned long long)t->single_copies[PGC_COPY_SHARED],
                     (unsigned long long)t->single_copies[PGC_COPY_KERNEL]);
    }
    /* unregistered: the same buffers are private again, staged (no kernel
     * single copy here) */
    if ((rc = pgc_region_remove(t, 1)))
        return rc;
    if ((rc = pgc_allgather(t, PGC_COLL_ALLGATHER, send, BLOCK, recv, counts, displs, 0)))
        return rc;
    CHECK_MEMBER(t, P == 1 || t->stats[PGC_COLL_ALLGATHER][PGC_PATH_CICO] == 1, "staged once unregistered");
    return pgc_barrier(t);
}

int main(void)
{
    check_share();
    static const int sizes[] = {1, 2, 3, 4, 8};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int P = sizes[k];
        area_bytes = sizeof(area) + (size_t)P * (P + 1) * BLOCK;
        shared_area = mmap(NULL, area_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared_area == MAP_FAILED)
            return 1;
        pgc_config cfg = pgc_test_config();
        cfg.cma_enable = 0;
        int f = pgc_test_fork(P, &cfg, collectives, NULL);
        CHECK(f == 0, "P=%d: %d members failed", P, f);
        munmap(shared_area, area_bytes);
    }
    return check_summary();
}
