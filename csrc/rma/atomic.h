/* atomic.h - one-sided updates of a global array's part in node shared memory.
 *
 * The PGAS layer (pgascol/pgas) resolves every access to an owner and a
 * local index; an owner on the caller's node is reached here, through the
 * shared mapping of its part, with no action by the owner. Remote updates
 * (UPC's relaxed update, OpenSHMEM's atomics) are C11 atomics on the target
 * word, so concurrent updaters on one node never lose an update; reads and
 * writes of whole elements are plain loads and stores done by numpy.
 *
 * Element types and operators are the reduction kernels' codes
 * (base/reduce_ops.h). Defined pairs: SUM, BAND, BOR, BXOR, MIN, MAX on
 * int32, int64, uint32, uint64; SUM, MIN, MAX on float64 (a compare-and-swap
 * loop on the word's bits). pgc_rma_update_valid says which. */
#ifndef PGC_RMA_ATOMIC_H
#define PGC_RMA_ATOMIC_H

#include <stddef.h>
#include <stdint.h>

#include "base/reduce_ops.h"

/* 1 if pgc_rma_update and pgc_rma_fetch_op define (op, t). */
int pgc_rma_update_valid(pgc_op op, pgc_dtype t);

/* base[idx[k]] = base[idx[k]] (op) values[k] for k < n, each atomically and
 * in order (duplicates in idx each apply). Relaxed: no ordering with other
 * accesses beyond the atomicity of each word; pgc_rma_fence orders. */
void pgc_rma_update(void *base, pgc_dtype t, pgc_op op, const int64_t *idx, const void *values, size_t n);

/* A global array's block-cyclic layout over the parts of one node: element
 * i lives on rank (i / block) % nranks at local index
 * (i / (block * nranks)) * block + i % block, and rank r's part starts at
 * byte offsets[r] of the node's segment `base` (every rank's part is on the
 * node: the array does not span nodes). */
typedef struct {
    char *base;
    const int64_t *offsets;
    int64_t n, block, nranks;
} pgc_rma_cyclic;

/* pgc_rma_update on global indices: element idx[k] of the array `a` (op)=
 * values[k] for k < count, each atomically, in order. Refuses before it
 * applies any: returns the position of the first index outside [0, n), or
 * -1 once every update is applied. */
int64_t pgc_rma_update_cyclic(const pgc_rma_cyclic *a, pgc_dtype t, pgc_op op, const int64_t *idx,
                              const void *values, size_t count);

/* Atomically *word = *word (op) *value; *old receives the previous value.
 * Sequentially consistent (the strict form). */
void pgc_rma_fetch_op(void *word, pgc_dtype t, pgc_op op, const void *value, void *old);

/* Atomically: if *word == *expected then *word = *value; *old receives the
 * previous value either way. Compares bits (float64 too). Sequentially
 * consistent. */
void pgc_rma_compare_swap(void *word, pgc_dtype t, const void *expected, const void *value, void *old);

/* Orders every load and store (streaming stores included) of the caller
 * before it against every one after it (a full barrier, mfence on x86). */
void pgc_rma_fence(void);

typedef enum { PGC_CMP_EQ, PGC_CMP_NE, PGC_CMP_LT, PGC_CMP_LE, PGC_CMP_GT, PGC_CMP_GE, PGC_NCMP } pgc_cmp;

/* Waits until (*word cmp *value) holds or `budget_ns` has passed: 1 if it
 * holds, 0 if not yet. Spins `spin` polls with a pause, then yields the CPU
 * between polls (the writer may need this core when ranks outnumber CPUs),
 * so the caller can check its peers' liveness and the timeout between
 * calls. Loads are acquire: what the writer stored before the word (and
 * fenced) is visible once the condition holds. */
int pgc_rma_wait_until(const void *word, pgc_dtype t, pgc_cmp cmp, const void *value, uint32_t spin,
                       uint64_t budget_ns);

#endif
