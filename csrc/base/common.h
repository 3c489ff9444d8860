/* common.h - definitions shared by every file of the pgascol C core.
 *
 * The C core knows nothing of Python or MPI: it works on a node team (a group
 * of processes sharing one segment) and reports errors through pgc_error,
 * which the Cython layer turns into Python exceptions. */
#ifndef PGC_COMMON_H
#define PGC_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define PGC_CACHELINE 64
#define PGC_PAGE 4096
#define PGC_ALIGN_UP(x, a) (((x) + ((a) - 1)) / (a) * (a))

#if defined(__x86_64__) || defined(__i386__)
#define pgc_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define pgc_cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define pgc_cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

#define PGC_LIKELY(x) __builtin_expect(!!(x), 1)
#define PGC_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* a function that stays one, so that a tool can name it (count.h) */
#define PGC_NOINLINE __attribute__((noinline))

/* Status codes: 0 is success, every error is negative. The Cython layer maps
 * each to an exception class (see pgascol/engine/errors.pxi: _raise).
 * PGC_ON_MPI is no error: every member agreed to run the call on MPI
 * (pgc_coll_agree_mpi, coll.h), and the caller now does. */
enum {
    PGC_ON_MPI = 1,
    PGC_OK = 0,
    PGC_EINVAL = -1,     /* bad argument: refused before any data moved */
    PGC_ENOMEM = -2,
    PGC_ESYS = -3,       /* a system call failed (errno in pgc_error.sys_errno) */
    PGC_ETIMEDOUT = -4,  /* a wait exceeded the team timeout */
    PGC_EPEERDEAD = -5,  /* a team member died or vanished */
    PGC_EABORTED = -6,   /* another member aborted the team */
    PGC_ECLOSED = -7,    /* the team was closed */
    PGC_EMISMATCH = -8,  /* members are in different collectives (see team.h: signatures) */
    PGC_EREFUSED = -9,   /* the root refused its arguments before any data moved: the collective
                          * failed on every member that needed the root, the team is usable */
    PGC_EREVOKED = -10,  /* a member revoked the communicator (MPI's ULFM Revoke): the abort code
                          * of a team aborted by Comm.Revoke; waits report it as PGC_EABORTED */
    PGC_ETYPE = -11,     /* members of a rooted collective stated other basic types at the same byte
                          * count (team.h: PGC_SIG_ROOTED): the call moved its bytes as MPI would, the
                          * members that saw the difference fail it, the team is usable */
    PGC_EPEERREFUSED = -12, /* a member this one needed refused its arguments (pgc_coll_refuse) in a
                             * collective that is no root's refusal: every member that needed it, or
                             * a member that gave up, gave the collective up (give_up, coll.c), the
                             * team is usable */
};

typedef struct pgc_error {
    int code;       /* PGC_* */
    int peer;       /* local rank concerned, or -1 */
    int sys_errno;  /* errno of a failed system call, or 0 */
    char msg[320];
} pgc_error;

/* Record an error (printf-style message) and return its code. */
int pgc_set_error(pgc_error *err, int code, int peer, int sys_errno,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Monotonic clock in nanoseconds. */
uint64_t pgc_now_ns(void);

/* Calibrate the spin budget: how many pause instructions fill `ns`. */
uint64_t pgc_pause_iterations(uint64_t ns);

/* Which vector loops the copies (copy.h) and the reduction kernels
 * (reduce_ops.h) use: the baseline of the architecture (SSE2 on x86-64) or
 * AVX2. Both give the same bytes. */
typedef enum { PGC_SIMD_BASE, PGC_SIMD_AVX2 } pgc_simd;

/* The widest this CPU runs. */
pgc_simd pgc_simd_of_cpu(void);

#endif
