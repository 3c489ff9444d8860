/* count.c - the rounds of an instruction count (see count.h). */
#include "base/count.h"

int pgc_count_available(void)
{
#ifdef PGC_HAVE_CALLGRIND
    return RUNNING_ON_VALGRIND ? 1 : 0;
#else
    return 0;
#endif
}

void pgc_count_start(void)
{
#ifdef PGC_HAVE_CALLGRIND
    CALLGRIND_START_INSTRUMENTATION;
#endif
}

void pgc_count_round_begin(void)
{
#ifdef PGC_HAVE_CALLGRIND
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
#endif
}

void pgc_count_round_end(const char *label)
{
#ifdef PGC_HAVE_CALLGRIND
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(label);
#else
    (void)label;
#endif
}
