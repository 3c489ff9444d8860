/* count.h - instruction counts under callgrind without the waits.
 *
 * `pgascol-bench instructions` runs every rank under valgrind's callgrind
 * with collection off and turns it on around each measured round
 * (pgc_count_round_begin/end, called through ctypes by
 * pgascol/tools/bench_callgrind.py). How long a rank waits for its peers
 * depends on scheduling, so the engine's waits are left out whole, callees
 * included (the GIL's release, sched_yield, the futex, the MPI progress
 * hook): the launcher names them to callgrind's --toggle-collect
 * (UNCOUNTED in bench_callgrind.py: pgc_wait_slow, pgc_wait_signed,
 * pgc_rma_wait_until), which turns collection off from their first
 * instruction to their return. They are PGC_NOINLINE so that every call
 * stays a call of that name. Left out at the first instruction, not at a
 * client request inside, so that a call that waited counts what one that did
 * not wait counts but for the wait's call and its arguments (and the few
 * branches of the caller that depend on whether the peer was there:
 * docs/REGRESSION-TESTING.md). Outside valgrind nothing
 * here costs anything: the fast path (a word already reached) never calls a
 * wait. Without <valgrind/callgrind.h> the calls compile to nothing and
 * pgc_count_available() says 0. */
#ifndef PGC_COUNT_H
#define PGC_COUNT_H

#include "base/common.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define PGC_HAVE_CALLGRIND 1
#endif
#endif

/* 1: built with the client requests and running under valgrind now */
int pgc_count_available(void);
/* start instrumenting (valgrind --instr-atstart=no runs the start-up fast) */
void pgc_count_start(void);
/* zero the counters and collect from here on, waits left out */
void pgc_count_round_begin(void);
/* stop collecting and dump what the round counted, under `label` */
void pgc_count_round_end(const char *label);

#endif
