/* region.c - the team's registry of shared regions (see region.h). */
#include "team/region.h"

#include <stdlib.h>
#include <string.h>

/* [a, a + n) inside [base, base + size), without overflow. */
static int inside(uint64_t a, uint64_t n, uint64_t base, uint64_t size)
{
    return a >= base && n <= size && a - base <= size - n;
}

static int overlaps(uint64_t a, uint64_t n, uint64_t b, uint64_t m)
{
    return a < b + m && b < a + n;
}

int pgc_region_add(pgc_team *t, uint64_t id, uint64_t size, const uint64_t *bases)
{
    if (size == 0)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "shared region %llu: size 0", (unsigned long long)id);
    for (int r = 0; r < t->nranks; r++)
        if (bases[r] + size < bases[r])
            return pgc_set_error(&t->err, PGC_EINVAL, r, 0, "shared region %llu wraps the address space",
                                 (unsigned long long)id);
    for (int k = 0; k < t->nregions; k++) {
        const pgc_region *g = &t->regions[k];
        if (g->id == id)
            return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "shared region %llu is already registered",
                                 (unsigned long long)id);
        for (int r = 0; r < t->nranks; r++)
            if (overlaps(bases[r], size, g->bases[r], g->size))
                return pgc_set_error(&t->err, PGC_EINVAL, r, 0,
                                     "shared region %llu overlaps region %llu on local rank %d",
                                     (unsigned long long)id, (unsigned long long)g->id, r);
    }
    if (t->nregions == t->regions_cap) {
        int cap = t->regions_cap ? 2 * t->regions_cap : 8;
        pgc_region *grown = realloc(t->regions, (size_t)cap * sizeof *grown);
        if (!grown)
            return pgc_set_error(&t->err, PGC_ENOMEM, -1, 0, "no memory for the shared-region table");
        t->regions = grown;
        t->regions_cap = cap;
    }
    /* reductions pull exposed pieces into it (reduce.c), also where
     * only shared regions make single copy possible */
    if (!t->pull_buf && !(t->pull_buf = malloc(t->hdr->staging_stride / 2)))
        return pgc_set_error(&t->err, PGC_ENOMEM, -1, 0, "no memory for the %zu-byte single-copy pull buffer",
                             (size_t)(t->hdr->staging_stride / 2));
    uint64_t *copy = malloc((size_t)t->nranks * sizeof *copy);
    if (!copy)
        return pgc_set_error(&t->err, PGC_ENOMEM, -1, 0, "no memory for the shared-region table");
    memcpy(copy, bases, (size_t)t->nranks * sizeof *copy);
    t->regions[t->nregions++] = (pgc_region){id, size, (char *)(uintptr_t)bases[t->rank], copy};
    return PGC_OK;
}

int pgc_region_remove(pgc_team *t, uint64_t id)
{
    for (int k = 0; k < t->nregions; k++)
        if (t->regions[k].id == id) {
            free(t->regions[k].bases);
            t->regions[k] = t->regions[--t->nregions];
            return PGC_OK;
        }
    return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "shared region %llu is not registered",
                         (unsigned long long)id);
}

void *pgc_region_find(const pgc_team *t, int r, uint64_t addr, size_t len)
{
    if (len == 0)
        return NULL;
    for (int k = 0; k < t->nregions; k++) {
        const pgc_region *g = &t->regions[k];
        if (inside(addr, len, g->bases[r], g->size))
            return g->base + (addr - g->bases[r]);
    }
    return NULL;
}

void pgc_region_clear(pgc_team *t)
{
    for (int k = 0; k < t->nregions; k++)
        free(t->regions[k].bases);
    free(t->regions);
    t->regions = NULL;
    t->nregions = t->regions_cap = 0;
}
