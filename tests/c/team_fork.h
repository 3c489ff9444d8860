/* team_fork.h - run a function on a node team of P forked processes, for the
 * C-level tests of the core (no MPI, no Python). Header-only.
 *
 *   int failed = pgc_test_fork(P, &cfg, body, arg);
 *
 * The parent creates the segment, forks P children that attach as ranks
 * 0..P-1, waits until all attached, unlinks the name and reaps the children.
 * body returns 0 on success; a child that returns non-zero, crashes or
 * hangs past the timeout counts as failed. Its twin for the Python tests is
 * team_fork.py (fork_team). */
#ifndef PGC_TEAM_FORK_H
#define PGC_TEAM_FORK_H

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/coll.h"

static inline pgc_config pgc_test_config(void)
{
    pgc_config c;
    memset(&c, 0, sizeof c);
    c.timeout_s = 20;
    c.spin_ns = 2000;
    c.yield_ns = 1000000;
    c.inline_max = 256;
    c.staging_bytes = 256 * 1024;
    c.chunk_bytes = 16 * 1024;
    c.xchg_chunk_bytes = 16 * 1024;
    for (int i = 0; i < PGC_NCOLL; i++)
        c.cma_min[i] = UINT64_MAX;
    c.cma_enable = 1;
    c.simd = 1;
    return c;
}

static inline int pgc_test_fork(int P, const pgc_config *cfg, int (*body)(pgc_team *, void *), void *arg)
{
    pgc_error err = {0};
    pgc_team *creator = pgc_team_create(0, P, cfg, &err);
    if (!creator) {
        fprintf(stderr, "team create: %s\n", err.msg);
        return P;
    }
    fflush(stdout); /* a child flushing its output (check.h) must not repeat the parent's pending lines */
    pid_t pids[256];
    for (int r = 0; r < P; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("fork");
            for (int q = 0; q < r; q++)
                kill(pids[q], SIGKILL);
            return P;
        }
        if (pids[r] == 0) {
            alarm(120); /* a hung test dies instead of hanging CI */
            pgc_error e = {0};
            pgc_team *t = pgc_team_attach(r, P, creator->seg.name, &e);
            if (!t) {
                fprintf(stderr, "rank %d attach: %s\n", r, e.msg);
                _exit(2);
            }
            /* wait until every child re-attached (rank 0 was joined by the parent) */
            uint64_t deadline = pgc_now_ns() + 30ull * 1000000000ull;
            for (int q = 0; q < P; q++)
                while (!atomic_load(&pgc_member_of(t, q)->attached) ||
                       pgc_member_of(t, q)->pid == (int32_t)getppid()) {
                    if (pgc_now_ns() > deadline) {
                        fprintf(stderr, "rank %d: rank %d never attached\n", r, q);
                        _exit(3);
                    }
                    sched_yield();
                }
            if (P > 1 || cfg->cma_enable)
                pgc_team_set_cma(t, pgc_team_probe_cma(t), t->cma_reason);
            int rc = body(t, arg);
            if (rc)
                fprintf(stderr, "rank %d failed (%d): %s\n", r, rc, t->err.msg);
            _exit(rc ? 1 : 0);
        }
    }
    int failed = 0;
    for (int r = 0; r < P; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    pgc_team_destroy(creator);
    return failed;
}

#endif
