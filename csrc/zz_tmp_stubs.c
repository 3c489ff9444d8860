/* TEMPORARY weak stubs while the collective families are written. */
#include "coll.h"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define STUB(name, ...) __attribute__((weak)) int name(__VA_ARGS__) { return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, #name " not built"); }
STUB(pgc_reduce, pgc_team *t, const void *s, void *r, size_t c, pgc_dtype d, pgc_op o, int root)
STUB(pgc_allreduce, pgc_team *t, const void *s, void *r, size_t c, pgc_dtype d, pgc_op o)
STUB(pgc_reduce_scatter, pgc_team *t, pgc_coll c, const void *s, void *r, const size_t *rc, pgc_dtype d, pgc_op o)
STUB(pgc_scan, pgc_team *t, const void *s, void *r, size_t c, pgc_dtype d, pgc_op o)
STUB(pgc_exscan, pgc_team *t, const void *s, void *r, size_t c, pgc_dtype d, pgc_op o)
STUB(pgc_gather, pgc_team *t, pgc_coll c, const void *s, size_t sb, void *r, const size_t *rb, const size_t *d, int root)
STUB(pgc_scatter, pgc_team *t, pgc_coll c, const void *s, const size_t *sb, const size_t *d, void *r, size_t rb, int root)
STUB(pgc_allgather, pgc_team *t, pgc_coll c, const void *s, size_t sb, void *r, const size_t *rb, const size_t *d)
STUB(pgc_alltoall, pgc_team *t, pgc_coll c, const void *s, const size_t *sb, const size_t *sd, void *r, const size_t *rb, const size_t *rd)
