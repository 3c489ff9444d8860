/* region.h - the team's registry of shared regions: memory that every
 * member of the node maps (a global array's node segment, a buffer of
 * pgascol.empty), each member at its own address.
 *
 * Region k is known to every member by its id, its size, this member's
 * mapping and every member's base address of its own mapping. The table is
 * private to each member and changed only collectively (added at
 * allocation, removed at free, both collective on the node team), so every
 * member's table agrees at every collective boundary: a peer's buffer
 * address it published in a collective translates on every member alike.
 *
 * Translation is what single copy uses (coll.c: pgc_coll_cma): a range of
 * a peer's memory that lies inside that peer's mapping of a region is read
 * or written through this member's own mapping of it, with a user-space
 * copy, instead of process_vm_readv/writev. No kernel call, and it works
 * where the kernel's single copy is not allowed. */
#ifndef PGC_REGION_H
#define PGC_REGION_H

#include "team/team.h"

typedef struct pgc_region {
    uint64_t id;
    uint64_t size;
    char *base;         /* this member's mapping */
    uint64_t *bases;    /* every member's base address of its own mapping (nranks) */
} pgc_region;

/* Register region `id` of `size` bytes: `bases` holds every member's base
 * address (bases[t->rank] is this member's mapping). Refused (PGC_EINVAL)
 * for a zero size, an id in use, or a range that overlaps, on any member,
 * one already registered: a peer's address would translate two ways. */
int pgc_region_add(pgc_team *t, uint64_t id, uint64_t size, const uint64_t *bases);

/* Forget region `id` (PGC_EINVAL if unknown). */
int pgc_region_remove(pgc_team *t, uint64_t id);

/* Forget every region (pgc_team_destroy). */
void pgc_region_clear(pgc_team *t);

/* Where member r's bytes [addr, addr + len) are in this member's address
 * space, if they lie inside r's mapping of one registered region (a range
 * that straddles a region's end is not translated); NULL otherwise, and
 * for len 0. */
void *pgc_region_find(const pgc_team *t, int r, uint64_t addr, size_t len);

/* Whether this member's own bytes [p, p + len) lie inside a registered
 * region (len 0: whenever any region is registered), so that its peers
 * reach them by a user-space copy. Without regions, never: nothing changes. */
static inline int pgc_region_holds(const pgc_team *t, const void *p, size_t len)
{
    return t->nregions && (len == 0 || pgc_region_find(t, t->rank, (uint64_t)(uintptr_t)p, len));
}

#endif
