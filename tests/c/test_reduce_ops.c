/* test_reduce_ops.c - standalone test of csrc/base/reduce_ops.c.
 *
 * Checks names, sizes and pgc_op_valid against MPI's rules, then every valid
 * (op, dtype) kernel, through pgc_reduce_into and every aliasing form of
 * pgc_reduce_3, against a per-element switch reference, for many lengths and
 * misaligned offsets, with the baseline loops and, where the CPU has AVX2,
 * the AVX2 ones, which must give the same bytes; invalid pairs must leave
 * memory untouched.
 *   gcc -O3 -std=gnu11 -Wall -Wextra -Werror csrc/base/reduce_ops.c csrc/base/common.c \
 *       tests/c/test_reduce_ops.c -Icsrc -o /tmp/test_reduce_ops -lm
 * Prints "N passed, 0 failed"; exits 1 on any failure. */
#include "base/reduce_ops.h"

#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"


static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return rng_state = x;
}

enum { K_SINT, K_UINT, K_FLT, K_CPX, K_BOOL };
static int kind(pgc_dtype t)
{
    if (t <= PGC_INT64) return K_SINT;
    if (t <= PGC_UINT64) return K_UINT;
    if (t <= PGC_LONGDOUBLE) return K_FLT;
    if (t <= PGC_CLONGDOUBLE) return K_CPX;
    return K_BOOL;
}

/* MPI 4.0 section 6.9.2, written out independently of the library's table. */
static int ref_valid(pgc_op op, pgc_dtype t)
{
    int k = kind(t), integer = k == K_SINT || k == K_UINT;
    switch (op) {
    case PGC_SUM: case PGC_PROD: return integer || k == K_FLT || k == K_CPX;
    case PGC_MIN: case PGC_MAX: return integer || k == K_FLT;
    case PGC_LAND: case PGC_LOR: case PGC_LXOR: return integer || k == K_BOOL;
    case PGC_BAND: case PGC_BOR: case PGC_BXOR: return integer;
    default: return 0;
    }
}

/* ---- integer / bool element access: values as 64-bit patterns ---------- */
static uint64_t get_u(pgc_dtype t, const void *p, size_t i)
{
    switch (t) {
    case PGC_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case PGC_INT16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
    case PGC_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case PGC_INT64: return (uint64_t)((const int64_t *)p)[i];
    case PGC_UINT8: case PGC_BOOL: return ((const uint8_t *)p)[i];
    case PGC_UINT16: return ((const uint16_t *)p)[i];
    case PGC_UINT32: return ((const uint32_t *)p)[i];
    case PGC_UINT64: return ((const uint64_t *)p)[i];
    default: abort();
    }
}
static void put_u(pgc_dtype t, void *p, size_t i, uint64_t v)
{
    switch (t) {
    case PGC_INT8: case PGC_UINT8: case PGC_BOOL: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case PGC_INT16: case PGC_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case PGC_INT32: case PGC_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case PGC_INT64: case PGC_UINT64: ((uint64_t *)p)[i] = v; break;
    default: abort();
    }
}

/* Reference for integers and bool: wrap in 64 bits, truncate on store. */
static uint64_t ref_int(pgc_op op, int is_signed, uint64_t x, uint64_t y)
{
    int lt = is_signed ? (int64_t)x < (int64_t)y : x < y;
    switch (op) {
    case PGC_SUM: return x + y;
    case PGC_PROD: return x * y;
    case PGC_MIN: return lt ? x : y;
    case PGC_MAX: return lt ? y : x;
    case PGC_LAND: return x && y;
    case PGC_LOR: return x || y;
    case PGC_LXOR: return !x != !y;
    case PGC_BAND: return x & y;
    case PGC_BOR: return x | y;
    case PGC_BXOR: return x ^ y;
    default: abort();
    }
}

/* Reference for real floats; MIN/MAX as documented: y on NaN or on equality
 * (which covers +0.0 vs -0.0). */
#define REF_FLT(T) do {                                                      \
    T x = ((const T *)a)[i], y = ((const T *)b)[i], r;                       \
    switch (op) {                                                            \
    case PGC_SUM: r = x + y; break;                                          \
    case PGC_PROD: r = x * y; break;                                         \
    case PGC_MIN: r = (isnan(x) || isnan(y) || x == y) ? y : x < y ? x : y; break; \
    case PGC_MAX: r = (isnan(x) || isnan(y) || x == y) ? y : x > y ? x : y; break; \
    default: abort();                                                        \
    }                                                                        \
    ((T *)o)[i] = r;                                                         \
} while (0)
/* Reference for complex: SUM part by part, PROD with the C operator. */
#define REF_CPX(T) do {                                                      \
    T x = ((const T *)a)[i], y = ((const T *)b)[i], r;                       \
    if (op == PGC_SUM) { __real__ r = __real__ x + __real__ y; __imag__ r = __imag__ x + __imag__ y; } \
    else r = x * y;                                                          \
    ((T *)o)[i] = r;                                                         \
} while (0)

static void reference(pgc_op op, pgc_dtype t, void *o, const void *a, const void *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case PGC_FLOAT32: REF_FLT(float); break;
        case PGC_FLOAT64: REF_FLT(double); break;
        case PGC_LONGDOUBLE: REF_FLT(long double); break;
        case PGC_COMPLEX64: REF_CPX(float _Complex); break;
        case PGC_COMPLEX128: REF_CPX(double _Complex); break;
        case PGC_CLONGDOUBLE: REF_CPX(long double _Complex); break;
        default:
            put_u(t, o, i, ref_int(op, kind(t) == K_SINT, get_u(t, a, i), get_u(t, b, i)));
        }
    }
}

/* ---- comparison ---------------------------------------------------------- */
static long double get_part(pgc_dtype t, const void *p, size_t i, int part)
{
    switch (t) {
    case PGC_FLOAT32: return ((const float *)p)[i];
    case PGC_FLOAT64: return ((const double *)p)[i];
    case PGC_LONGDOUBLE: return ((const long double *)p)[i];
    case PGC_COMPLEX64: return ((const float *)p)[2 * i + part];
    case PGC_COMPLEX128: return ((const double *)p)[2 * i + part];
    case PGC_CLONGDOUBLE: return ((const long double *)p)[2 * i + part];
    default: abort();
    }
}
static int same_ld(long double x, long double y)
{
    return (isnan(x) && isnan(y)) || (x == y && !signbit(x) == !signbit(y));
}
static long double eps_of(pgc_dtype t)
{
    return t == PGC_COMPLEX64 ? FLT_EPSILON : t == PGC_COMPLEX128 ? DBL_EPSILON : LDBL_EPSILON;
}

/* Index of the first mismatch between got and want (n if none). Complex PROD
 * allows a few ulps of |a||b| (FMA contraction may differ between loops). */
static size_t mismatch(pgc_op op, pgc_dtype t, const void *got, const void *want,
                       const void *a, const void *b, size_t n)
{
    int k = kind(t);
    size_t sz = pgc_dtype_size(t);
    for (size_t i = 0; i < n; i++) {
        if (k == K_FLT) {
            if (!same_ld(get_part(t, got, i, 0), get_part(t, want, i, 0))) return i;
        } else if (k == K_CPX && op == PGC_SUM) {
            for (int p = 0; p < 2; p++)
                if (!same_ld(get_part(t, got, i, p), get_part(t, want, i, p))) return i;
        } else if (k == K_CPX) {
            long double ax = hypotl(get_part(t, a, i, 0), get_part(t, a, i, 1));
            long double bx = hypotl(get_part(t, b, i, 0), get_part(t, b, i, 1));
            long double tol = 8 * eps_of(t) * ax * bx + LDBL_MIN;
            for (int p = 0; p < 2; p++)
                if (!(fabsl(get_part(t, got, i, p) - get_part(t, want, i, p)) <= tol)) return i;
        } else if (memcmp((const char *)got + i * sz, (const char *)want + i * sz, sz)) {
            return i;
        }
    }
    return n;
}

/* The same values, bit for bit (NaNs included), leaving out the padding of
 * long double types. */
static int same_values(pgc_dtype t, const void *x, const void *y, size_t n)
{
    if (t != PGC_LONGDOUBLE && t != PGC_CLONGDOUBLE)
        return !memcmp(x, y, n * pgc_dtype_size(t));
    size_t parts = t == PGC_CLONGDOUBLE ? 2 : 1;
    for (size_t i = 0; i < n * parts; i++)
        if (memcmp((const long double *)x + i, (const long double *)y + i, 10))
            return 0;
    return 1;
}

/* ---- input generation ---------------------------------------------------- */
static long double rnd_real(int specials)
{
    uint64_t r = rnd(), c = r % 64;
    if (c < 6) return (c & 1) ? -0.0L : 0.0L;
    if (specials && c == 6) return NAN;
    if (specials && c == 7) return (r & 64) ? INFINITY : -INFINITY;
    if (c < 24) return (long double)((int)(r >> 8 & 7) - 4);     /* small ints: ties */
    long double m = (long double)(r >> 11) / 9007199254740992.0L - 0.5L;
    return ldexpl(m, (int)(r >> 40 & 31) - 12);
}

static void fill(pgc_dtype t, void *p, size_t n)
{
    unsigned bits = (unsigned)(8 * pgc_dtype_size(t));
    for (size_t i = 0; i < n; i++) {
        switch (kind(t)) {
        case K_SINT: case K_UINT: {
            uint64_t r = rnd(), c = r % 16, v;
            if (c < 4) v = 0;
            else if (c < 7) v = (uint64_t)((int64_t)(r >> 8 & 7) - 3);
            else if (c == 7) v = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
            else if (c == 8) v = UINT64_C(1) << (bits - 1);           /* signed min */
            else if (c == 9) v = (UINT64_C(1) << (bits - 1)) - 1;     /* signed max */
            else v = rnd();
            put_u(t, p, i, v);
            break;
        }
        case K_BOOL: {
            uint64_t c = rnd() % 16;
            put_u(t, p, i, c < 7 ? 0 : c < 14 ? 1 : c == 14 ? 2 : 255);  /* also stray bytes */
            break;
        }
        case K_FLT:
            if (t == PGC_FLOAT32) ((float *)p)[i] = (float)rnd_real(1);
            else if (t == PGC_FLOAT64) ((double *)p)[i] = (double)rnd_real(1);
            else ((long double *)p)[i] = rnd_real(1);
            break;
        case K_CPX: {
            long double re = rnd_real(0), im = rnd_real(0);
            if (t == PGC_COMPLEX64) { float *f = (float *)p + 2 * i; f[0] = (float)re; f[1] = (float)im; }
            else if (t == PGC_COMPLEX128) { double *d = (double *)p + 2 * i; d[0] = (double)re; d[1] = (double)im; }
            else { long double *l = (long double *)p + 2 * i; l[0] = re; l[1] = im; }
            break;
        }
        }
    }
}

/* Exactly sized allocations at an element offset, so ASan sees overruns. */
typedef struct { unsigned char *base, *p; } buf;
static buf balloc(size_t sz, size_t off, size_t n)
{
    buf b;
    b.base = malloc((off + n) * sz + 1);
    if (!b.base) { perror("malloc"); exit(2); }
    b.p = b.base + off * sz;
    return b;
}

static void test_kernel(pgc_simd simd, pgc_op op, pgc_dtype t, size_t n, size_t offs)
{
    size_t sz = pgc_dtype_size(t);
    const char *on = pgc_op_name(op), *tn = pgc_dtype_name(t);
    buf a = balloc(sz, offs & 1, n), b = balloc(sz, offs >> 1 & 1, n);
    buf w = balloc(sz, 0, n), w2 = balloc(sz, 0, n), o = balloc(sz, offs >> 2 & 1, n);
    size_t bad;
    fill(t, a.p, n);
    fill(t, b.p, n);
    reference(op, t, w.p, a.p, b.p, n);

    memcpy(o.p, a.p, n * sz);
    pgc_reduce_into(simd, op, t, o.p, b.p, n);
    bad = mismatch(op, t, o.p, w.p, a.p, b.p, n);
    CHECK(bad == n, "reduce_into %s %s n=%zu offs=%zu at %zu", on, tn, n, offs, bad);

    memset(o.p, 0x5a, n * sz);
    pgc_reduce_3(simd, op, t, o.p, a.p, b.p, n);
    bad = mismatch(op, t, o.p, w.p, a.p, b.p, n);
    CHECK(bad == n, "reduce_3 %s %s n=%zu offs=%zu at %zu", on, tn, n, offs, bad);

    memcpy(o.p, a.p, n * sz);                       /* out == a */
    pgc_reduce_3(simd, op, t, o.p, o.p, b.p, n);
    bad = mismatch(op, t, o.p, w.p, a.p, b.p, n);
    CHECK(bad == n, "reduce_3 out==a %s %s n=%zu offs=%zu at %zu", on, tn, n, offs, bad);

    memcpy(o.p, b.p, n * sz);                       /* out == b */
    pgc_reduce_3(simd, op, t, o.p, a.p, o.p, n);
    bad = mismatch(op, t, o.p, w.p, a.p, b.p, n);
    CHECK(bad == n, "reduce_3 out==b %s %s n=%zu offs=%zu at %zu", on, tn, n, offs, bad);

    reference(op, t, w2.p, a.p, a.p, n);            /* out == a == b */
    memcpy(o.p, a.p, n * sz);
    pgc_reduce_3(simd, op, t, o.p, o.p, o.p, n);
    bad = mismatch(op, t, o.p, w2.p, a.p, a.p, n);
    CHECK(bad == n, "reduce_3 out==a==b %s %s n=%zu offs=%zu at %zu", on, tn, n, offs, bad);

    memset(o.p, 0x5a, n * sz);                      /* a == b, out distinct */
    pgc_reduce_3(simd, op, t, o.p, a.p, a.p, n);
    bad = mismatch(op, t, o.p, w2.p, a.p, a.p, n);
    CHECK(bad == n, "reduce_3 a==b %s %s n=%zu offs=%zu at %zu", on, tn, n, offs, bad);

    if (simd != PGC_SIMD_BASE) {                    /* the same bytes as the baseline's */
        pgc_reduce_3(PGC_SIMD_BASE, op, t, w.p, a.p, b.p, n);
        pgc_reduce_3(simd, op, t, o.p, a.p, b.p, n);
        CHECK(same_values(t, o.p, w.p, n), "reduce_3 simd %d differs from the baseline %s %s n=%zu offs=%zu",
              (int)simd, on, tn, n, offs);
    }

    free(a.base); free(b.base); free(w.base); free(w2.base); free(o.base);
}

/* Invalid pairs (and out-of-range enums) must be accepted and do nothing. */
static void test_noop(pgc_op op, pgc_dtype t)
{
    unsigned char x[64], y[64], z[64], x0[64];
    memset(x, 0x11, sizeof x); memset(y, 0x22, sizeof y); memset(z, 0x33, sizeof z);
    memcpy(x0, x, sizeof x);
    for (int simd = PGC_SIMD_BASE; simd <= PGC_SIMD_AVX2; simd++) {
        pgc_reduce_into((pgc_simd)simd, op, t, x, y, 2);
        pgc_reduce_3((pgc_simd)simd, op, t, z, x, y, 2);
        pgc_reduce_3((pgc_simd)simd, op, t, x, x, x, 2);
    }
    int ok = !memcmp(x, x0, sizeof x);
    for (size_t i = 0; i < sizeof z; i++) ok &= z[i] == 0x33 && y[i] == 0x22;
    CHECK(ok, "invalid pair op=%d t=%d modified memory", (int)op, (int)t);
}

int main(void)
{
    static const char *const tnames[PGC_NDTYPES] = {
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float32", "float64", "longdouble", "complex64", "complex128", "clongdouble", "bool" };
    static const size_t tsizes[PGC_NDTYPES] = { 1, 2, 4, 8, 1, 2, 4, 8, 4, 8,
        sizeof(long double), 8, 16, 2 * sizeof(long double), 1 };
    static const char *const onames[PGC_NOPS] = {
        "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR" };
    static const size_t counts[] = { 0, 1, 2, 3, 5, 8, 15, 16, 17, 31, 33, 64, 100,
                                     1023, 1025, 5000 };

    for (int t = 0; t < PGC_NDTYPES; t++) {
        CHECK(!strcmp(pgc_dtype_name((pgc_dtype)t), tnames[t]), "name of dtype %d", t);
        CHECK(pgc_dtype_size((pgc_dtype)t) == tsizes[t], "size of dtype %d", t);
    }
    for (int op = 0; op < PGC_NOPS; op++)
        CHECK(!strcmp(pgc_op_name((pgc_op)op), onames[op]), "name of op %d", op);
    CHECK(!strcmp(pgc_dtype_name(PGC_NDTYPES), "?") && !strcmp(pgc_dtype_name((pgc_dtype)-1), "?"),
          "invalid dtype name");
    CHECK(!strcmp(pgc_op_name(PGC_NOPS), "?") && !strcmp(pgc_op_name((pgc_op)-1), "?"), "invalid op name");
    CHECK(pgc_dtype_size(PGC_NDTYPES) == 0 && pgc_dtype_size((pgc_dtype)-1) == 0, "invalid dtype size");

    for (int op = -1; op <= PGC_NOPS; op++) {
        for (int t = -1; t <= PGC_NDTYPES; t++) {
            int inrange = op >= 0 && op < PGC_NOPS && t >= 0 && t < PGC_NDTYPES;
            int want = inrange && ref_valid((pgc_op)op, (pgc_dtype)t);
            CHECK(pgc_op_valid((pgc_op)op, (pgc_dtype)t) == want, "pgc_op_valid(%d, %d)", op, t);
            if (!want) { test_noop((pgc_op)op, (pgc_dtype)t); continue; }
            for (int simd = PGC_SIMD_BASE; simd <= (int)pgc_simd_of_cpu(); simd++)
                for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                    for (size_t offs = 0; offs < 8; offs += (counts[c] > 100 ? 3 : 1))
                        test_kernel((pgc_simd)simd, (pgc_op)op, (pgc_dtype)t, counts[c], offs);
        }
    }

    /* A few hand-checked values for the documented semantics. */
    {
        int32_t a[4] = { INT32_MAX, -5, 7, 0 }, b[4] = { 1, 3, 0, 0 }, o[4];
        pgc_reduce_3(PGC_SIMD_BASE, PGC_SUM, PGC_INT32, o, a, b, 4);
        CHECK(o[0] == INT32_MIN && o[1] == -2, "int32 SUM wraps");
        pgc_reduce_3(PGC_SIMD_BASE, PGC_LAND, PGC_INT32, o, a, b, 4);
        CHECK(o[0] == 1 && o[1] == 1 && o[2] == 0 && o[3] == 0, "int32 LAND is 0/1");
        pgc_reduce_3(PGC_SIMD_BASE, PGC_LXOR, PGC_INT32, o, a, b, 4);
        CHECK(o[0] == 0 && o[1] == 0 && o[2] == 1 && o[3] == 0, "int32 LXOR");
        uint16_t p[1] = { 65535 }, q[1] = { 65535 };
        pgc_reduce_into(PGC_SIMD_BASE, PGC_PROD, PGC_UINT16, p, q, 1);
        CHECK(p[0] == 1, "uint16 PROD wraps without UB");
        double x[3] = { NAN, 1.0, -0.0 }, y[3] = { 2.0, NAN, 0.0 };
        pgc_reduce_into(PGC_SIMD_BASE, PGC_MIN, PGC_FLOAT64, x, y, 3);
        CHECK(x[0] == 2.0 && isnan(x[1]) && x[2] == 0.0 && !signbit(x[2]), "float64 MIN NaN/zero rule");
        _Bool u[2] = { 1, 0 }, v[2] = { 1, 1 };
        pgc_reduce_into(PGC_SIMD_BASE, PGC_LXOR, PGC_BOOL, u, v, 2);
        CHECK(u[0] == 0 && u[1] == 1, "bool LXOR");
        double _Complex c[1] = { 1.0 + 2.0 * I }, d[1] = { 3.0 - 1.0 * I };
        pgc_reduce_into(PGC_SIMD_BASE, PGC_PROD, PGC_COMPLEX128, c, d, 1);
        CHECK(creal(c[0]) == 5.0 && cimag(c[0]) == 5.0, "complex128 PROD");
    }

    return check_summary();
}
