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
 * pgc_rma_wait_until, and pgc_ring_doorbell, the waking of sleepers), which
 * turns collection off from their first instruction to their return. They
 * are PGC_NOINLINE so that every call stays a call of that name. What a
 * wait leaves counted is its call and arguments and the caller's branch on
 * whether the peer was there; pacing (below) makes those go the same way
 * in every run where they would weigh (docs/REGRESSION-TESTING.md).
 * Outside valgrind nothing here costs anything: the fast path (a word
 * already reached) never calls a wait. Without <valgrind/callgrind.h> the
 * calls compile to nothing and pgc_count_available() says 0. */
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
/* Pacing (bench_callgrind.py: the cases whose calls make few instructions):
 * from pgc_count_pace_setup on, call k of pgc_count_pace returns at
 * start_ns + k periods + slot/nslots of a period (at once where that has
 * passed: a late member catches up instead of slipping a period). The
 * members of a team then enter each call in slot order whatever the
 * scheduling, so the branches that depend on who came first (a wait that
 * found its peer there or not) go the same way in every run. start_ns is
 * on CLOCK_MONOTONIC, one clock for every process of the host (Python's
 * time.monotonic_ns). pgc_count_pace is named to callgrind's
 * --toggle-collect (its sleep is not counted); outside a count nothing
 * calls it. */
void pgc_count_pace_setup(int slot, int nslots, uint64_t period_ns, uint64_t start_ns);
PGC_NOINLINE void pgc_count_pace(void);

#endif
