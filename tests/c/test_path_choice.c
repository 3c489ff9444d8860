/* test_path_choice.c - the run-time choice between copy-in/copy-out and
 * single copy (pgc_choose_member_path, coll.c) and its probe schedule, on a
 * team of 2 forked processes (no MPI, no Python).
 *
 *   gcc -O3 -std=gnu11 -Wall -Wextra -Werror -Icsrc $(find csrc -name '*.c') \
 *       tests/c/test_path_choice.c -o /tmp/test_path_choice -lm
 *
 * Member 0 calls the choice directly, setting the team's measured costs,
 * their ages and its sequence number between calls, so every step is
 * deterministic: the path the costs say (Allreduce pulling each byte
 * twice), a probe of the path not taken once
 * it is stale, followed for PGC_PROBE_LEN collectives and judged a whole one later;
 * a new team's interval is 12.5 ms, a probe that confirms the path taken
 * doubles it up to 0.8 s, one that changes the path brings it back to
 * 100 ms (a shorter one stays), and seeding the costs sets 100 ms; a member lagging behind a probe neither
 * follows nor judges it; staging costs what the stores pgc_stage_xfer
 * favours cost (streaming ones in slow periods). Skipped (with a pass)
 * where single copy is not allowed: the choice applies only with it.
 * Prints "N passed, M failed"; exits 1 on failure. */
#include <stdatomic.h>
#include <sys/mman.h>

#include "check.h"
#include "base/cma.h"
#include "team_fork.h"

/* member 0 finished: member 1 stays alive until then (its probe reads us) */
static _Atomic int *done;

#define MS (1000ull * 1000)
static const pgc_coll COLL = PGC_COLL_ALLTOALL;
static const size_t BYTES = 1 << 20;

/* Costs as if measured `stage_age` / `cma_age` ns ago (0: not measured). */
static void set_costs(pgc_team *t, uint32_t stage, uint32_t out, uint32_t cma, uint64_t stage_age,
                      uint64_t cma_age)
{
    pgc_costs *c = &t->hdr->costs;
    uint64_t now = pgc_now_ns();
    atomic_store(&c->ps_per_byte[PGC_XFER_STAGE], stage);
    atomic_store(&c->ps_per_byte[PGC_XFER_COPYOUT], out);
    atomic_store(&c->ps_per_byte[PGC_XFER_CMA], cma);
    atomic_store(&c->measured_ns[PGC_XFER_STAGE], stage ? now - stage_age : 0);
    atomic_store(&c->measured_ns[PGC_XFER_COPYOUT], out ? now - stage_age : 0);
    atomic_store(&c->measured_ns[PGC_XFER_CMA], cma ? now - cma_age : 0);
}

/* Streaming stores' cost as if measured `age` ns ago (0: not measured). */
static void set_stream(pgc_team *t, uint32_t stream, uint64_t age)
{
    pgc_costs *c = &t->hdr->costs;
    atomic_store(&c->ps_per_byte[PGC_XFER_STREAM], stream);
    atomic_store(&c->measured_ns[PGC_XFER_STREAM], stream ? pgc_now_ns() - age : 0);
}

/* The choice of the collective with sequence number `seq` (the member's
 * own, set here as pgc_coll_begin would). */
static pgc_path choose(pgc_team *t, uint32_t seq)
{
    t->seq = seq;
    return pgc_choose_member_path(t, COLL, BYTES, 0);
}

/* No probe called for the last `ago` ns. */
static void last_probe(pgc_team *t, uint64_t ago)
{
    atomic_store(&t->hdr->costs.probe_ns, pgc_now_ns() - ago);
}

static const char *name(pgc_path p)
{
    return p == PGC_PATH_CMA ? "cma" : p == PGC_PATH_CICO ? "cico" : "inline";
}

/* A probe of `probed` called at seq `first`: followed by seqs first..first +
 * PGC_PROBE_LEN - 1, not judged at seq first + PGC_PROBE_LEN. */
static void run_probe(pgc_team *t, uint32_t first, pgc_path probed)
{
    for (uint32_t k = 1; k < PGC_PROBE_LEN; k++) {
        pgc_path p = choose(t, first + k);
        CHECK(p == probed, "seq %u of the probe took %s, not %s", k, name(p), name(probed));
    }
    uint64_t word = atomic_load(&t->hdr->costs.probe);
    (void)choose(t, first + PGC_PROBE_LEN);
    CHECK(atomic_load(&t->hdr->costs.probe) == word, "the probe was judged before all its collectives were chosen");
}

static int checks(pgc_team *t);

static int body(pgc_team *t, void *arg)
{
    (void)arg;
    if (t->rank != 0) {
        while (!atomic_load(done))
            sched_yield();
        return 0;
    }
    int rc = checks(t);
    atomic_store(done, 1);
    return rc;
}

static int checks(pgc_team *t)
{
    CHECK(t->cma_ok, "single copy works between forked processes but not in the team: %s", t->cma_reason);
    if (!t->cma_ok)
        return 1;
    pgc_costs *c = &t->hdr->costs;

    /* A new team probes after 12.5 ms, and a probe that changes its path
     * keeps that interval (its first costs come from cold staging). */
    CHECK(atomic_load(&c->probe_backoff) == 0 && pgc_probe_interval_ns(0) == PGC_PROBE_NS / 8,
          "a new team: backoff %u", atomic_load(&c->probe_backoff));
    set_costs(t, 1000, 1000, 100, 20 * MS, 0);
    last_probe(t, 20 * MS);
    pgc_path p = choose(t, 1);
    CHECK(p == PGC_PATH_CICO, "a new team's staging stale for 20 ms not probed (%s)", name(p));
    run_probe(t, 1, PGC_PATH_CICO);
    set_costs(t, 40, 40, 100, 0, 20 * MS);
    last_probe(t, 20 * MS);
    p = choose(t, 1 + PGC_PROBE_LEN + 1);
    CHECK(p == PGC_PATH_CMA && atomic_load(&c->probe_backoff) == 0,
          "after the new team's probe changed the path: %s (a probe of single copy), backoff %u", name(p),
          atomic_load(&c->probe_backoff));
    run_probe(t, 1 + PGC_PROBE_LEN + 1, PGC_PATH_CMA);
    set_costs(t, 40, 40, 100, 0, 0);
    p = choose(t, 2 * PGC_PROBE_LEN + 3);
    CHECK(p == PGC_PATH_CICO && atomic_load(&c->probe_backoff) == 1, "confirmed: %s, backoff %u", name(p),
          atomic_load(&c->probe_backoff));

    const uint32_t seed[PGC_NXFER] = {1000, 1000, 100, 0};
    pgc_costs_seed(t, seed);
    CHECK(atomic_load(&c->probe_backoff) == PGC_PROBE_BACKOFF_RESET &&
          pgc_probe_interval_ns(PGC_PROBE_BACKOFF_RESET) == PGC_PROBE_NS, "seeded: backoff %u",
          atomic_load(&c->probe_backoff));

    /* Single copy clearly cheaper, everything fresh: single copy. */
    p = choose(t, 10);
    CHECK(p == PGC_PATH_CMA, "seq 10: %s", name(p));
    CHECK(choose(t, 11) == PGC_PATH_CMA, "seq 11");
    /* Dearer but not by a quarter (4 * 80 >= 3 * (50 + 50)): staging. */
    set_costs(t, 50, 50, 80, 0, 0);
    CHECK(choose(t, 12) == PGC_PATH_CICO, "seq 12: staging within a quarter of single copy");
    /* Allreduce pulls each byte twice by single copy: 4 * 2 * 60 >= 3 * (50
     * + 50) stages it where the exchanges (4 * 60 < 300) take single copy. */
    set_costs(t, 50, 50, 60, 0, 0);
    t->seq = 12;
    p = pgc_choose_member_path(t, PGC_COLL_ALLREDUCE, BYTES, 0);
    CHECK(p == PGC_PATH_CICO, "Allreduce at 60 ps/B a pull against 100 staged: %s", name(p));
    CHECK(choose(t, 12) == PGC_PATH_CMA, "Alltoall at 60 ps/B a pull against 100 staged");
    set_costs(t, 50, 50, 35, 0, 0);
    p = pgc_choose_member_path(t, PGC_COLL_ALLREDUCE, BYTES, 0);
    CHECK(p == PGC_PATH_CMA, "Allreduce at 35 ps/B a pull against 100 staged: %s", name(p));
    /* A copy-out not measured counts as free: 4 * 100 < 3 * 1000. */
    set_costs(t, 1000, 0, 100, 0, 0);
    CHECK(choose(t, 13) == PGC_PATH_CMA, "seq 13: staging alone tells a slow period");

    /* Staging costs what the stores the costs favour cost. In a slow
     * period (ordinary stores 1000 ps/B, streaming ones 40) members stream
     * (pgc_stage_xfer), and staging that copies nothing out (40) beats
     * single copy (4 * 60 >= 3 * 40); with a copy-out (4 * 60 < 3 * (40 +
     * 70)) it does not. */
    set_costs(t, 1000, 0, 60, 0, 0);
    set_stream(t, 40, 0);
    const uint32_t stream_cfg = t->cfg.stream;
    t->cfg.stream = 1;
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STREAM, "ordinary stores 25x dearer, not streaming");
    CHECK(choose(t, 14) == PGC_PATH_CICO, "seq 14: streamed staging at 40 ps/B against a pull at 60");
    set_costs(t, 1000, 70, 60, 0, 0);
    CHECK(choose(t, 15) == PGC_PATH_CMA, "seq 15: streamed staging and copy-out 110 ps/B against 60");
    /* Not 3x cheaper: ordinary stores, and their cost decides (4 * 60 < 3 *
     * 100, where streaming's 40 would stage). */
    set_costs(t, 100, 0, 60, 0, 0);
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STAGE, "streaming 2.5x cheaper was taken");
    CHECK(choose(t, 16) == PGC_PATH_CMA, "seq 16: ordinary stores at 100 ps/B against a pull at 60");
    /* Streaming never measured: not free, but tried once. */
    set_costs(t, 1000, 0, 60, 0, 0);
    set_stream(t, 0, 0);
    CHECK(choose(t, 17) == PGC_PATH_CMA, "seq 17: streaming not measured counted as cheaper");
    t->stream_probe_ns = 0;
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STREAM, "streaming never measured, not tried");
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STAGE, "streaming tried twice within 100 ms");
    /* The way not taken is re-measured once per PGC_PROBE_NS, by each
     * member for itself; the way taken is measured by every collective. */
    set_stream(t, 40, 150 * MS);
    t->stream_probe_ns = 0;
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STREAM, "the way taken, measured 150 ms ago, was left");
    set_costs(t, 1000, 0, 60, 150 * MS, 0);
    set_stream(t, 40, 0);
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STAGE, "ordinary stores stale for 150 ms not re-measured");
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STREAM, "re-measured twice within 100 ms");
    /* 0: never stream, 2: always, whatever the costs (and the cost of the
     * way fixed counts). */
    t->cfg.stream = 0;
    set_costs(t, 1000, 0, 60, 0, 0);
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STAGE && choose(t, 18) == PGC_PATH_CMA, "PGASCOL_STREAM=0 streamed");
    t->cfg.stream = 2;
    set_costs(t, 30, 0, 60, 0, 0);
    set_stream(t, 400, 0);
    CHECK(pgc_stage_xfer(t) == PGC_XFER_STREAM && choose(t, 19) == PGC_PATH_CMA,
          "PGASCOL_STREAM=2: ordinary stores taken, or their cost counted");
    t->cfg.stream = stream_cfg;
    set_stream(t, 0, 0);

    /* Staging stale for 150 ms (> 100): the next collective calls a probe of it. */
    uint32_t seq = 20;
    set_costs(t, 1000, 1000, 100, 150 * MS, 0);
    last_probe(t, 150 * MS);
    p = choose(t, seq);
    CHECK(p == PGC_PATH_CICO, "seq %u: stale staging not probed (%s)", seq, name(p));
    CHECK(atomic_load(&c->probe) == ((uint64_t)seq << 32 | PGC_PATH_CICO), "probe word %#llx",
          (unsigned long long)atomic_load(&c->probe));
    run_probe(t, seq, PGC_PATH_CICO);
    /* The probe measured staging as dear as before: single copy stays and
     * the interval doubles, judged one whole collective after the probe. */
    set_costs(t, 1000, 1000, 100, 0, 0);
    p = choose(t, seq + PGC_PROBE_LEN + 1);
    CHECK(p == PGC_PATH_CMA, "after a confirming probe: %s", name(p));
    CHECK(atomic_load(&c->probe) == 0, "the probe was not judged");
    CHECK(atomic_load(&c->probe_backoff) == PGC_PROBE_BACKOFF_RESET + 1, "backoff %u after one confirming probe",
          atomic_load(&c->probe_backoff));

    /* Now 200 ms apart: stale for 150 ms is not enough, 250 ms is. */
    seq = 40;
    set_costs(t, 1000, 1000, 100, 150 * MS, 0);
    last_probe(t, 150 * MS);
    p = choose(t, seq);
    CHECK(p == PGC_PATH_CMA && atomic_load(&c->probe) == 0, "probed after 150 ms with a 200 ms interval");
    set_costs(t, 1000, 1000, 100, 250 * MS, 0);
    last_probe(t, 250 * MS);
    p = choose(t, ++seq);
    CHECK(p == PGC_PATH_CICO, "not probed after 250 ms with a 200 ms interval (%s)", name(p));
    run_probe(t, seq, PGC_PATH_CICO);

    /* This probe found staging cheaper: it takes over, the interval is
     * back to 100 ms, and single copy is the path now probed. */
    set_costs(t, 40, 40, 100, 0, 0);
    p = choose(t, seq + PGC_PROBE_LEN + 1);
    CHECK(p == PGC_PATH_CICO, "after a probe that changed the path: %s", name(p));
    CHECK(atomic_load(&c->probe_backoff) == PGC_PROBE_BACKOFF_RESET, "backoff %u after a probe that changed the path",
          atomic_load(&c->probe_backoff));
    seq = 60;
    set_costs(t, 40, 40, 100, 0, 150 * MS);
    last_probe(t, 150 * MS);
    p = choose(t, seq);
    CHECK(p == PGC_PATH_CMA, "stale single copy not probed at 100 ms (%s)", name(p));
    run_probe(t, seq, PGC_PATH_CMA);
    set_costs(t, 40, 40, 100, 0, 0);
    p = choose(t, seq + PGC_PROBE_LEN + 1);
    CHECK(p == PGC_PATH_CICO && atomic_load(&c->probe_backoff) == PGC_PROBE_BACKOFF_RESET + 1,
          "single copy confirmed dearer: %s, "
          "backoff %u", name(p), atomic_load(&c->probe_backoff));

    /* Confirming probes, one after the other: the interval stops at
     * 0.8 s (PGC_PROBE_BACKOFF_MAX). */
    for (uint32_t i = 0; i < PGC_PROBE_BACKOFF_MAX + 3; i++) {
        uint64_t gap = pgc_probe_interval_ns(atomic_load(&c->probe_backoff));
        seq += 10;
        set_costs(t, 40, 40, 100, 0, gap + 50 * MS);
        last_probe(t, gap + 50 * MS);
        p = choose(t, seq);
        CHECK(p == PGC_PATH_CMA, "round %u: no probe after %llu ms", i, (unsigned long long)(gap / MS + 50));
        run_probe(t, seq, PGC_PATH_CMA);
        set_costs(t, 40, 40, 100, 0, 0);
        CHECK(choose(t, seq + PGC_PROBE_LEN + 1) == PGC_PATH_CICO, "round %u: staging lost", i);
    }
    CHECK(atomic_load(&c->probe_backoff) == PGC_PROBE_BACKOFF_MAX &&
          pgc_probe_interval_ns(PGC_PROBE_BACKOFF_MAX) == 800 * MS, "backoff %u, expected the cap %u",
          atomic_load(&c->probe_backoff), PGC_PROBE_BACKOFF_MAX);

    /* A member behind a probe (its seq before the probe's first) neither
     * follows it nor judges it. */
    seq = 200;
    set_costs(t, 40, 40, 100, 0, pgc_probe_interval_ns(PGC_PROBE_BACKOFF_MAX) + 50 * MS);
    last_probe(t, pgc_probe_interval_ns(PGC_PROBE_BACKOFF_MAX) + 50 * MS);
    CHECK(choose(t, seq) == PGC_PATH_CMA, "no probe at the longest interval");
    uint64_t word = atomic_load(&c->probe);
    p = choose(t, seq - 3);
    CHECK(p == PGC_PATH_CICO && atomic_load(&c->probe) == word, "a lagging member followed or judged the probe");

    /* Seeding the costs ends the probe and resets the interval. */
    pgc_costs_seed(t, seed);
    CHECK(atomic_load(&c->probe) == 0 && atomic_load(&c->probe_backoff) == PGC_PROBE_BACKOFF_RESET,
          "seed: probe %#llx backoff %u",
          (unsigned long long)atomic_load(&c->probe), atomic_load(&c->probe_backoff));

    /* Outside the adaptive collectives and sizes the thresholds decide. */
    t->seq = 300;
    CHECK(pgc_choose_member_path(t, COLL, t->cfg.adapt_min - 1, 0) == PGC_PATH_CICO, "below adapt_min");
    CHECK(pgc_choose_member_path(t, PGC_COLL_BCAST, BYTES, 0) == PGC_PATH_CICO, "Bcast is not adaptive");
    return 0;
}

int main(void)
{
    done = mmap(NULL, sizeof *done, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (done == MAP_FAILED || check_share())
        return perror("mmap"), 1;
    pgc_config cfg = pgc_test_config();
    cfg.adapt_min = 64 << 10;
    cfg.adapt_mask = 1u << COLL | 1u << PGC_COLL_ALLREDUCE;
    pgc_error err = {0};
    if (pgc_cma_probe_fork(&err) != PGC_OK) {
        printf("single copy not allowed here (%s): the choice does not apply\n", err.msg);
        CHECK(1, "skipped");
    } else
        CHECK(pgc_test_fork(2, &cfg, body, NULL) == 0, "a member of the team failed");
    return check_summary();
}
