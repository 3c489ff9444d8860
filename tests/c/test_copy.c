/* test_copy.c - the copy loops of csrc/base/copy.h: the baseline, the AVX2 one
 * (where the CPU has it) and the streaming-store one copy exactly n bytes,
 * for every length around their steps (64, 128, 256 bytes and the wide
 * threshold) and every misalignment of source and destination, and touch
 * nothing around the destination. Prints "N passed, 0 failed". */
#include "base/copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"


enum { GUARD = 64, MAXN = 4096 + 300 };

typedef void (*copy_fn)(void *restrict, const void *restrict, size_t);

static void copy_base(void *restrict d, const void *restrict s, size_t n) { pgc_copy_with(PGC_SIMD_BASE, d, s, n); }
static void copy_avx2(void *restrict d, const void *restrict s, size_t n) { pgc_copy_with(PGC_SIMD_AVX2, d, s, n); }

static void check(const char *name, copy_fn fn, size_t n, size_t soff, size_t doff)
{
    static unsigned char src[MAXN + 128], dst[MAXN + 128 + 2 * GUARD];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 131 + n + 7);
    memset(dst, 0xa5, sizeof dst);
    unsigned char *d = dst + GUARD + doff;
    fn(d, src + soff, n);
    int ok = !memcmp(d, src + soff, n);
    for (unsigned char *p = dst; p < d; p++)
        ok &= *p == 0xa5;
    for (unsigned char *p = d + n; p < dst + sizeof dst; p++)
        ok &= *p == 0xa5;
    CHECK(ok, "%s: n=%zu src+%zu dst+%zu", name, n, soff, doff);
}

int main(void)
{
    struct { const char *name; copy_fn fn; } loops[] = {
        {"base", copy_base}, {"stream", pgc_copy_stream}, {"avx2", copy_avx2},
    };
    int nloops = pgc_simd_of_cpu() == PGC_SIMD_AVX2 ? 3 : 2;
    if (nloops == 2)
        printf("(this CPU has no AVX2: its loop is not run)\n");
    size_t lens[128], nlen = 0;
    for (size_t n = 0; n <= 300; n += n < 70 ? 1 : 29)
        lens[nlen++] = n;
    const size_t more[] = {PGC_COPY_WIDE_MIN - 1, PGC_COPY_WIDE_MIN, PGC_COPY_WIDE_MIN + 1, 383, 384, 385,
                           4096 - 1, 4096, 4096 + 1, 4096 + 159, MAXN};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        lens[nlen++] = more[i];
    for (int l = 0; l < nloops; l++)
        for (size_t i = 0; i < nlen; i++)
            for (size_t soff = 0; soff < 64; soff += 9)
                for (size_t doff = 0; doff < 64; doff += 13)
                    check(loops[l].name, loops[l].fn, lens[i], soff, doff);
    return check_summary();
}
