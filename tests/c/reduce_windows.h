/* reduce_windows.h - what the C tests of the reductions (test_coll_reduce.c,
 * test_coll_reduce_checks.c) share: the largest team they fork, and the
 * elements per block and window that csrc/coll/coll_reduce.c computes for a
 * team, around which their counts are chosen. Header-only. */
#ifndef PGC_REDUCE_WINDOWS_H
#define PGC_REDUCE_WINDOWS_H

#include "team_fork.h"

#define MAXP 8

/* E, the elements per block and window of two windows, as coll_reduce.c
 * computes it (`one`: of a single window over the whole area, which
 * cfg.reduce_one_window teams take when the blocks fit). */
static inline size_t window_elems(const pgc_team *t, size_t esz, int one)
{
    size_t slot = t->hdr->staging_stride / ((one ? 2 : 4) * (size_t)t->nranks);
    size_t unit = esz <= 64 ? 64 : esz;
    return slot / unit * unit / esz;
}

#endif
