/* common.c - error recording, the clock, the CPU's vector width (see common.h). */
#define _GNU_SOURCE
#include "base/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int pgc_set_error(pgc_error *err, int code, int peer, int sys_errno, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->code = code;
        err->peer = peer;
        err->sys_errno = sys_errno;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

uint64_t pgc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

pgc_simd pgc_simd_of_cpu(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init(); /* needed when called before constructors ran */
    return __builtin_cpu_supports("avx2") ? PGC_SIMD_AVX2 : PGC_SIMD_BASE;
#else
    return PGC_SIMD_BASE;
#endif
}
