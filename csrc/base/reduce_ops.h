/* reduce_ops.h - MPI-style elementwise reduction kernels (SUM, PROD, MIN, MAX,
 * logical and bitwise ops) over the numpy-compatible element types.
 *
 * Plain C, no Python, no MPI. Each call dispatches once on (simd, op, dtype)
 * to a typed loop that gcc vectorises (-O3), so large arrays reduce at
 * memory bandwidth; PGC_SIMD_AVX2 (only where pgc_simd_of_cpu() says so)
 * takes the same loops compiled for AVX2, with the same results. Callers
 * check pgc_op_valid() first; an invalid pair is a no-op. */
#ifndef PGC_REDUCE_OPS_H
#define PGC_REDUCE_OPS_H

#include <stddef.h>

#include "base/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PGC_INT8, PGC_INT16, PGC_INT32, PGC_INT64,
    PGC_UINT8, PGC_UINT16, PGC_UINT32, PGC_UINT64,
    PGC_FLOAT32, PGC_FLOAT64, PGC_LONGDOUBLE,
    PGC_COMPLEX64, PGC_COMPLEX128, PGC_CLONGDOUBLE,
    PGC_BOOL,            /* C _Bool, 1 byte, values 0/1 (numpy bool) */
    PGC_NDTYPES
} pgc_dtype;

typedef enum {
    PGC_SUM, PGC_PROD, PGC_MIN, PGC_MAX,
    PGC_LAND, PGC_LOR, PGC_LXOR,
    PGC_BAND, PGC_BOR, PGC_BXOR,
    PGC_NOPS
} pgc_op;

size_t pgc_dtype_size(pgc_dtype t);          /* 0 for an invalid t */
const char *pgc_dtype_name(pgc_dtype t);     /* "int8", ..., "float64", "longdouble", "complex64", "complex128", "clongdouble", "bool"; "?" if invalid */
const char *pgc_op_name(pgc_op op);          /* "SUM", "PROD", ... ; "?" if invalid */

/* MPI's rules (MPI 4.0 section 6.9.2): SUM, PROD: integer, floating, complex.
 * MIN, MAX: integer, floating (not complex, not bool).
 * LAND, LOR, LXOR: integer and logical (bool) (not floating, not complex).
 * BAND, BOR, BXOR: integer only (not bool, not floating, not complex).
 * Returns 1 if the pair is allowed, 0 otherwise (also 0 for out-of-range values). */
int pgc_op_valid(pgc_op op, pgc_dtype t);

/* inout[i] = inout[i] (op) in[i], i < count. inout holds the lower ranks'
 * partial result, in the higher rank's contribution. inout and in must not
 * overlap (use pgc_reduce_3 for aliased operands). */
void pgc_reduce_into(pgc_simd simd, pgc_op op, pgc_dtype t, void *restrict inout, const void *restrict in,
                     size_t count);

/* out[i] = a[i] (op) b[i]; out may equal a or b (or both) exactly (full
 * overlap), never partial overlap. */
void pgc_reduce_3(pgc_simd simd, pgc_op op, pgc_dtype t, void *out, const void *a, const void *b, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* PGC_REDUCE_OPS_H */
