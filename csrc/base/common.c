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

uint64_t pgc_pause_iterations(uint64_t ns)
{
    if (ns == 0)
        return 0;
    const uint64_t probe = 20000;
    uint64_t t0 = pgc_now_ns();
    for (uint64_t i = 0; i < probe; i++)
        pgc_cpu_relax();
    uint64_t dt = pgc_now_ns() - t0;
    if (dt == 0)
        dt = 1;
    return ns * probe / dt + 1;
}
