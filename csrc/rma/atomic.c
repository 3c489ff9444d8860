/* atomic.c - see atomic.h. */
#include "rma/atomic.h"

#include <sched.h>
#include <string.h>
#include <time.h>

#include "base/common.h"

int pgc_rma_update_valid(pgc_op op, pgc_dtype t)
{
    switch (t) {
    case PGC_INT32: case PGC_INT64: case PGC_UINT32: case PGC_UINT64:
        return op == PGC_SUM || op == PGC_BAND || op == PGC_BOR || op == PGC_BXOR || op == PGC_MIN ||
               op == PGC_MAX;
    case PGC_FLOAT64:
        return op == PGC_SUM || op == PGC_MIN || op == PGC_MAX;
    default:
        return 0;
    }
}

/* One atomic read-modify-write of an integer word, returning the old value.
 * SUM and the bitwise ops are single instructions (lock xadd, lock and/or/
 * xor or a cmpxchg loop the compiler emits); MIN and MAX are a CAS loop
 * that stops early once the word already wins. */
#define INT_RMW(T)                                                                   \
    static inline T rmw_##T(T *w, pgc_op op, T v, int order)                         \
    {                                                                                \
        switch (op) {                                                                \
        case PGC_SUM: return __atomic_fetch_add(w, v, order);                        \
        case PGC_BAND: return __atomic_fetch_and(w, v, order);                       \
        case PGC_BOR: return __atomic_fetch_or(w, v, order);                         \
        case PGC_BXOR: return __atomic_fetch_xor(w, v, order);                       \
        default: break;                                                              \
        }                                                                            \
        T old = __atomic_load_n(w, __ATOMIC_RELAXED);                                \
        for (;;) {                                                                   \
            T next = (op == PGC_MIN) ? (v < old ? v : old) : (v > old ? v : old);    \
            if (next == old)                                                         \
                return old;                                                          \
            if (__atomic_compare_exchange_n(w, &old, next, 1, order, __ATOMIC_RELAXED)) \
                return old;                                                          \
        }                                                                            \
    }
INT_RMW(int32_t)
INT_RMW(int64_t)
INT_RMW(uint32_t)
INT_RMW(uint64_t)

/* float64 has no atomic arithmetic: a CAS loop on the word's bits. A NaN
 * operand of MIN/MAX leaves the word as it is (numpy's fmin/fmax rule). */
static inline double rmw_double(double *w, pgc_op op, double v, int order)
{
    uint64_t *bits = (uint64_t *)w;
    uint64_t old = __atomic_load_n(bits, __ATOMIC_RELAXED);
    for (;;) {
        double cur, next;
        memcpy(&cur, &old, sizeof cur);
        if (op == PGC_SUM)
            next = cur + v;
        else if (op == PGC_MIN)
            next = (v < cur) ? v : cur;
        else
            next = (v > cur) ? v : cur;
        uint64_t nb;
        memcpy(&nb, &next, sizeof nb);
        if (op != PGC_SUM && nb == old)
            return cur;
        if (__atomic_compare_exchange_n(bits, &old, nb, 1, order, __ATOMIC_RELAXED))
            return cur;
    }
}

/* Runs LOOP(T, rmw_T) for element type t: the types pgc_rma_update_valid
 * accepts (others are refused by the caller). */
#define FOR_TYPE(t, LOOP)                                                            \
    switch (t) {                                                                     \
    case PGC_INT32: LOOP(int32_t, rmw_int32_t); break;                               \
    case PGC_INT64: LOOP(int64_t, rmw_int64_t); break;                               \
    case PGC_UINT32: LOOP(uint32_t, rmw_uint32_t); break;                            \
    case PGC_UINT64: LOOP(uint64_t, rmw_uint64_t); break;                            \
    case PGC_FLOAT64: LOOP(double, rmw_double); break;                               \
    default: break;                                                                  \
    }

#define UPDATE_LOOP(T, fn)                                                           \
    do {                                                                             \
        T *b = (T *)base;                                                            \
        const T *v = (const T *)values;                                              \
        for (size_t k = 0; k < n; k++)                                               \
            (void)fn(&b[idx[k]], op, v[k], __ATOMIC_RELAXED);                        \
    } while (0)

void pgc_rma_update(void *base, pgc_dtype t, pgc_op op, const int64_t *idx, const void *values, size_t n)
{
    FOR_TYPE(t, UPDATE_LOOP)
}

/* The byte offset of element i in the node's segment. Block and rank count
 * that are powers of two (the blocked layout of 2^k elements over 2^j
 * ranks, the cyclic one over 2^j ranks) take shifts and masks instead of
 * divisions, which cost more than the atomic update itself. */
static inline int64_t cyclic_offset(const pgc_rma_cyclic *a, int64_t i, size_t size, int bshift, int pshift)
{
    int64_t q, r, cycle, local;
    if (bshift >= 0 && pshift >= 0) {
        q = i >> bshift;
        r = q & (a->nranks - 1);
        cycle = q >> pshift;
        local = (cycle << bshift) | (i & (a->block - 1));
    } else {
        q = i / a->block;
        r = q % a->nranks;
        cycle = q / a->nranks;
        local = cycle * a->block + (i - q * a->block);
    }
    return a->offsets[r] + local * (int64_t)size;
}

static int log2_exact(int64_t v)
{
    return (v > 0 && (v & (v - 1)) == 0) ? __builtin_ctzll((unsigned long long)v) : -1;
}

#define UPDATE_CYCLIC_LOOP(T, fn)                                                    \
    do {                                                                             \
        const T *v = (const T *)values;                                              \
        for (size_t k = 0; k < count; k++)                                           \
            (void)fn((T *)(a->base + cyclic_offset(a, idx[k], sizeof(T), bs, ps)), op, v[k], \
                     __ATOMIC_RELAXED);                                              \
    } while (0)

int64_t pgc_rma_update_cyclic(const pgc_rma_cyclic *a, pgc_dtype t, pgc_op op, const int64_t *idx,
                              const void *values, size_t count)
{
    for (size_t k = 0; k < count; k++)
        if (idx[k] < 0 || idx[k] >= a->n)
            return (int64_t)k;
    int bs = log2_exact(a->block), ps = log2_exact(a->nranks);
    FOR_TYPE(t, UPDATE_CYCLIC_LOOP)
    return -1;
}

void pgc_rma_fetch_op(void *word, pgc_dtype t, pgc_op op, const void *value, void *old)
{
#define FETCH(T, fn)                                                                 \
    do {                                                                             \
        T v, o;                                                                      \
        memcpy(&v, value, sizeof v);                                                 \
        o = fn((T *)word, op, v, __ATOMIC_SEQ_CST);                                  \
        memcpy(old, &o, sizeof o);                                                   \
    } while (0)
    FOR_TYPE(t, FETCH)
#undef FETCH
}

void pgc_rma_compare_swap(void *word, pgc_dtype t, const void *expected, const void *value, void *old)
{
    if (pgc_dtype_size(t) == 4) {
        uint32_t e, v;
        memcpy(&e, expected, 4);
        memcpy(&v, value, 4);
        __atomic_compare_exchange_n((uint32_t *)word, &e, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        memcpy(old, &e, 4);     /* e holds the word's value either way */
    } else {
        uint64_t e, v;
        memcpy(&e, expected, 8);
        memcpy(&v, value, 8);
        __atomic_compare_exchange_n((uint64_t *)word, &e, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        memcpy(old, &e, 8);
    }
}

void pgc_rma_fence(void)
{
    /* A full barrier: orders the caller's earlier stores (numpy's copies
     * may use streaming stores for large blocks, which only a full fence
     * orders) before its later loads and stores. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

#define HOLDS(a, b, cmp)                                                             \
    ((cmp) == PGC_CMP_EQ ? (a) == (b) : (cmp) == PGC_CMP_NE ? (a) != (b) :           \
     (cmp) == PGC_CMP_LT ? (a) < (b) : (cmp) == PGC_CMP_LE ? (a) <= (b) :            \
     (cmp) == PGC_CMP_GT ? (a) > (b) : (a) >= (b))

static int holds(const void *word, pgc_dtype t, pgc_cmp cmp, const void *value)
{
#define TEST(T)                                                                      \
    do {                                                                             \
        T a, b;                                                                      \
        /* acquire: pairs with the writer's fence or release before the word */    \
        __atomic_load((const T *)word, &a, __ATOMIC_ACQUIRE);                        \
        memcpy(&b, value, sizeof b);                                                 \
        return HOLDS(a, b, cmp);                                                     \
    } while (0)
    switch (t) {
    case PGC_INT32: TEST(int32_t);
    case PGC_INT64: TEST(int64_t);
    case PGC_UINT32: TEST(uint32_t);
    case PGC_UINT64: TEST(uint64_t);
    case PGC_FLOAT64: TEST(double);
    default: return 1;
    }
#undef TEST
}

/* Left out of an instruction count, callees included (count.h). */
PGC_NOINLINE int pgc_rma_wait_until(const void *word, pgc_dtype t, pgc_cmp cmp, const void *value,
                                    uint32_t spin, uint64_t budget_ns)
{
    for (uint32_t i = 0; i < spin; i++) {
        if (holds(word, t, cmp, value))
            return 1;
        pgc_cpu_relax();
    }
    uint64_t end = pgc_now_ns() + budget_ns;
    for (;;) {
        if (holds(word, t, cmp, value))
            return 1;
        if (pgc_now_ns() >= end)
            return 0;
        sched_yield();
    }
}

