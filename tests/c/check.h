/* check.h - the pass/fail count of the standalone C tests (no team):
 * CHECK(cond, printf-args) counts a pass or prints the first failures;
 * main ends with `return check_summary();`, which prints the line
 * tests/test_c_core.py reads ("N passed, M failed"). Header-only. */
#ifndef PGC_CHECK_H
#define PGC_CHECK_H

#include <stdio.h>

static int npass, nfail;

#define CHECK(cond, ...) do {                                         \
    if (cond) npass++;                                                \
    else { nfail++; if (nfail <= 30) { printf("FAIL %s:%d: ", __FILE__, __LINE__); \
           printf(__VA_ARGS__); printf("\n"); } }                     \
} while (0)

static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail != 0;
}

#endif
