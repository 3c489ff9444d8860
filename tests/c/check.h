/* check.h - the pass/fail count of the C tests: CHECK(cond, printf-args)
 * counts a pass or prints the first failures; main ends with `return
 * check_summary();`, which prints the line tests/test_c_core.py reads ("N
 * passed, M failed"). A test whose checks run in forked processes calls
 * check_share() before forking: the counts then live in a shared page.
 * Header-only. */
#ifndef PGC_CHECK_H
#define PGC_CHECK_H

#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>

typedef struct {
    _Atomic int pass, fail;
} check_counts;
static check_counts check_local, *check_n = &check_local;

/* Count in a page that forked children share; 0, or -1 if it cannot be
 * mapped (the counts stay private). */
static inline int check_share(void)
{
    void *p = mmap(NULL, sizeof(check_counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    check_n = p;
    return 0;
}

/* Failures are flushed at once: a forked child leaves with _exit. */
#define CHECK(cond, ...) do {                                                     \
    if (cond) atomic_fetch_add(&check_n->pass, 1);                                \
    else if (atomic_fetch_add(&check_n->fail, 1) < 30) {                          \
        printf("FAIL %s:%d: ", __FILE__, __LINE__);                               \
        printf(__VA_ARGS__); printf("\n"); fflush(stdout); }                      \
} while (0)

/* CHECK naming the team member t (a pgc_team *) that counts it. */
#define CHECK_MEMBER(t, cond, fmt, ...) CHECK(cond, "rank %d/%d: " fmt, (t)->rank, (t)->nranks, ##__VA_ARGS__)

static inline int check_summary(void)
{
    int fail = atomic_load(&check_n->fail);
    printf("%d passed, %d failed\n", atomic_load(&check_n->pass), fail);
    return fail != 0;
}

#endif
