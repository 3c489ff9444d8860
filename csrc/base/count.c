/* count.c - the rounds of an instruction count (see count.h). */
#include "base/count.h"

#include <errno.h>
#include <time.h>

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

static int pace_slot, pace_nslots = 1;
static uint64_t pace_period_ns = 1, pace_start_ns, pace_calls;

void pgc_count_pace_setup(int slot, int nslots, uint64_t period_ns, uint64_t start_ns)
{
    pace_slot = slot;
    pace_nslots = nslots > 0 ? nslots : 1;
    pace_period_ns = period_ns > 0 ? period_ns : 1;
    pace_start_ns = start_ns;
    pace_calls = 0;
}

PGC_NOINLINE void pgc_count_pace(void)
{
    uint64_t at = pace_start_ns + pace_calls++ * pace_period_ns +
                  pace_period_ns * (uint64_t)pace_slot / (uint64_t)pace_nslots;
    struct timespec ts = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}
