/* count.h - instruction counts under callgrind without the waits.
 *
 * `pgascol-bench instructions` runs every rank under valgrind's callgrind
 * with collection off and turns it on around each measured round
 * (pgc_count_round_begin/end, called through ctypes by
 * pgascol/tools/bench_callgrind.py). How long a rank waits for its peers
 * depends on scheduling, so the engine's waits (spin, yield, futex sleep and
 * the MPI progress hook called while sleeping) turn collection off on entry
 * and back on at exit: pgc_count_wait_begin/end, only while a round is
 * counted. Outside valgrind the cost is one load and a not-taken branch per
 * slow wait (the fast path of pgc_wait_word, a word already reached, never
 * gets here). Without <valgrind/callgrind.h> the calls compile to nothing
 * and pgc_count_available() says 0. */
#ifndef PGC_COUNT_H
#define PGC_COUNT_H

#include "base/common.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define PGC_HAVE_CALLGRIND 1
#endif
#endif

/* 1 while a round is counted (its waits are left out) */
extern int pgc_counting;

static inline void pgc_count_wait_begin(void)
{
#ifdef PGC_HAVE_CALLGRIND
    if (PGC_UNLIKELY(pgc_counting))
        CALLGRIND_TOGGLE_COLLECT;
#endif
}

static inline void pgc_count_wait_end(void)
{
#ifdef PGC_HAVE_CALLGRIND
    if (PGC_UNLIKELY(pgc_counting))
        CALLGRIND_TOGGLE_COLLECT;
#endif
}

/* 1: built with the client requests and running under valgrind now */
int pgc_count_available(void);
/* start instrumenting (valgrind --instr-atstart=no runs the start-up fast) */
void pgc_count_start(void);
/* zero the counters and collect from here on, waits left out */
void pgc_count_round_begin(void);
/* stop collecting and dump what the round counted, under `label` */
void pgc_count_round_end(const char *label);

#endif
