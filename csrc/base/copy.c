/* copy.c - the AVX2 copy loop (see copy.h). Compiled for AVX2 by a function
 * attribute, so the extension itself stays baseline x86-64; called only
 * where pgc_simd_of_cpu() said the CPU has it. */
#include "base/copy.h"

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2"))) void pgc_copy_avx2(void *restrict dst, const void *restrict src, size_t n)
{
    char *d = dst;
    const char *s = src;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));
        _mm256_storeu_si256((__m256i *)(d + i), a);
        _mm256_storeu_si256((__m256i *)(d + i + 32), b);
        _mm256_storeu_si256((__m256i *)(d + i + 64), c);
        _mm256_storeu_si256((__m256i *)(d + i + 96), e);
    }
    for (; i + 32 <= n; i += 32)
        _mm256_storeu_si256((__m256i *)(d + i), _mm256_loadu_si256((const __m256i *)(s + i)));
    if (i < n)
        memcpy(d + i, s + i, n - i);
}
#endif
