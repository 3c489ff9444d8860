/* copy.h - the copy loops of the data paths: a baseline loop every CPU
 * runs, a wider one for CPUs with AVX2 (chosen at run time, pgc_simd), and
 * a copy with streaming stores. Plain C, no team; coll.h's pgc_copy picks
 * the loop of a team's pgc_simd.
 *
 * Why not memcpy: for the sizes of a pipeline chunk glibc picks
 * `rep movsb`, which measured slower on the development machine. Why AVX2:
 * most stores of a pipeline land in lines another core last read (staging,
 * result slots), and each such store waits for the line to be taken over;
 * the 32-byte AVX2 loop below takes fewer store-buffer entries per line, so
 * more lines are in flight (PGASCOL_SIMD=0 selects the baseline loops, to
 * compare; docs/PERFORMANCE.md, "Copies use an AVX2 loop, not memcpy").
 * On the copy of a cache-resident buffer no loop wins. */
#ifndef PGC_COPY_H
#define PGC_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "base/common.h"

/* The baseline: 64-byte moves (four SSE2 loads and stores on x86-64).
 * Buffers never overlap. */
static inline void pgc_copy_base(void *restrict dst, const void *restrict src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        __builtin_memcpy(d + i, s + i, 64);
    if (i < n)
        memcpy(d + i, s + i, n - i);
}

#if defined(__x86_64__)
/* 128 bytes per step: four 32-byte loads, then four stores (copy.c). Only
 * on a CPU with AVX2 (pgc_simd_of_cpu). */
void pgc_copy_avx2(void *restrict dst, const void *restrict src, size_t n);
#endif

/* Below this many bytes the call to the wide loop does not pay. */
#define PGC_COPY_WIDE_MIN 256

/* The copy of the data paths with the loops `simd` allows. */
static inline void pgc_copy_with(pgc_simd simd, void *restrict dst, const void *restrict src, size_t n)
{
#if defined(__x86_64__)
    if (simd == PGC_SIMD_AVX2 && n >= PGC_COPY_WIDE_MIN) {
        pgc_copy_avx2(dst, src, n);
        return;
    }
#endif
    (void)simd;
    pgc_copy_base(dst, src, n);
}

/* A copy with streaming (non-temporal) stores: the lines go to memory
 * and leave every cache, instead of being fetched for ownership first. On
 * the development VM, in the hours when its two vCPUs stop sharing a cache
 * well (bench/handoff.c tells when), an ordinary store into staging
 * lines that readers on the other core hold costs several times a
 * streaming one (docs/PERFORMANCE.md, "Streaming stores into staging while
 * ordinary ones cost 3x more"); readers then fetch from memory, which
 * costs them more when the machine is quiet. pgc_stage_xfer (coll.c)
 * chooses by measurement. The baseline copy off x86-64. */
static inline void pgc_copy_stream(void *restrict dst, const void *restrict src, size_t n)
{
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63); /* up to the first whole line */
    if (head > n)
        head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    size_t body = n & ~(size_t)63;
    for (size_t i = 0; i < body; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    memcpy(d + body, s + body, n - body);
    /* Streaming stores are weakly ordered, even against a later release
     * store: fence them before the post that publishes this data. */
    _mm_sfence();
#else
    pgc_copy_base(dst, src, n);
#endif
}

#endif
