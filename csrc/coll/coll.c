/* coll.c - what the collectives share: refusing or handing a collective to
 * MPI, the wait for the peers' DONE, method choice, measured costs, single
 * copy with a peer (see coll.h). */
#include <stdio.h>

#include "base/cma.h"
#include "coll/coll.h"

int pgc_coll_refuse(pgc_team *t, pgc_coll coll, const char *reason)
{
    if (pgc_check_aborted(t))
        return PGC_OK; /* the sequence numbers no longer matter */
    int rc = pgc_coll_sign(t, PGC_SIG_REFUSED | coll, 0);
    if (rc)
        return rc;
    /* The reason into our staging and its length into our descriptor, which
     * says "refused" even with no reason (a Bcast's readers below a relay
     * tell by it alone, check_root_desc in bcast.c): both free once every
     * peer is done with the previous collective, and read only by peers in
     * this one (root_refused), which post DONE after reading,
     * before our next collective may write them again. */
    size_t n = reason ? strnlen(reason, PGC_REFUSAL_MAX) : 0;
    if ((rc = pgc_wait_peers_done(t, 1)) == PGC_OK) {
        if (n)
            memcpy(pgc_staging_of(t, t->rank), reason, n);
        pgc_desc_put(t, (pgc_path)PGC_DESC_REFUSED, PGC_DESC_REFUSAL_LEN + n);
    }
    /* both words: a peer may wait on either (release: after the signature,
     * the descriptor and the reason) */
    pgc_post_ack(t, PGC_STEP_DONE);
    pgc_post_step(t, PGC_STEP_DONE);
    return rc;
}

/* The reason member r gave when it refused the collective in progress
 * (pgc_coll_refuse), into reason[PGC_REFUSAL_MAX + 1]: 0, or -1 where it
 * gave none. Read after a wait that acquired r's DONE, or the gave_up word
 * of a member that did (relaxed: ordered by that acquire); r writes them
 * again only once we posted DONE. */
static int refusal_reason(const pgc_team *t, int r, char *reason)
{
    uint64_t desc = pgc_desc_get(t, r);
    size_t n = (size_t)(pgc_desc_len(desc) - PGC_DESC_REFUSAL_LEN);
    if (pgc_desc_path(desc) != (pgc_path)PGC_DESC_REFUSED || n > PGC_REFUSAL_MAX)
        return -1;
    memcpy(reason, pgc_staging_of(t, r), n);
    reason[n] = 0;
    return 0;
}

/* The root refused (PGC_EREFUSED): its reason, and our part done. */
static void root_refused(pgc_team *t)
{
    int root = t->err.peer;
    char reason[PGC_REFUSAL_MAX + 1];
    if (refusal_reason(t, root, reason) == 0)
        pgc_set_error(&t->err, PGC_EREFUSED, root, 0, "%s: the root (local rank %d) refused its arguments: %s",
                      pgc_current_coll_name(t), root, reason);
    /* done, as the root is: both words (release: after reading its staging) */
    pgc_post_ack(t, PGC_STEP_DONE);
    pgc_post_step(t, PGC_STEP_DONE);
}

/* A member we wait for refused, or gave the call up (PGC_EPEERREFUSED):
 * give it up too (pgc_coll_end_failed, coll.h). */
static int give_up(pgc_team *t)
{
    int refuser = t->err.peer, me = t->rank, rc = PGC_OK;
    char reason[PGC_REFUSAL_MAX + 1];
    if (refusal_reason(t, refuser, reason) == 0)
        pgc_set_error(&t->err, PGC_EPEERREFUSED, refuser, 0,
                      "%s: local rank %d refused its arguments%s%s; the call is given up on the ranks that "
                      "wait for it", pgc_current_coll_name(t), refuser, reason[0] ? ": " : " (see the error it raised)",
                      reason);
    pgc_error why = t->err;
    /* Tell the members that wait for a step we will not post: their waits
     * end with PGC_EPEERREFUSED (wait_broken, sync.c). pgc_publish wakes
     * the sleepers (release: after our wait that acquired the refuser's DONE). */
    pgc_publish(t, &pgc_ctl_of(t, me)->gave_up, (uint64_t)t->seq << 32 | PGC_GAVE_UP | (uint64_t)refuser);
    /* Before we return, every member ends the collective: a member still in
     * it may read or write our buffers (a pull, a push, our staging), and
     * none may take our DONE below for a step we skipped. A member that
     * gave up or refused too ends it there (PGC_EPEERREFUSED). */
    for (int p = 0; p < t->nranks && !rc; p++)
        if (p != me && ((rc = pgc_wait_step(t, p, PGC_STEP_DONE)) == PGC_EPEERREFUSED || rc == PGC_EREFUSED))
            rc = PGC_OK;
    /* what those waits' signature checks noted (a type) ends nothing now */
    t->end_pending = 0;
    if (rc)
        return rc; /* aborted, timed out, a peer dead: t->err says */
    t->err = why;
    /* both words: a member's next collective waits on either */
    pgc_post_ack(t, PGC_STEP_DONE);
    pgc_post_step(t, PGC_STEP_DONE);
    return PGC_EPEERREFUSED;
}

int pgc_coll_peers_refused(pgc_team *t, pgc_coll coll, int *alike)
{
    uint32_t next = t->seq + 1;
    uint64_t refused = pgc_sig_make(next, PGC_SIG_REFUSED | coll, 0), sig;
    *alike = t->nranks > 1;
    for (int p = 0; p < t->nranks && *alike; p++) {
        if (p == t->rank)
            continue;
        int rc = pgc_wait_signed(t, p, next, &sig);
        if (rc)
            return rc;
        *alike = sig == refused;
    }
    return PGC_OK;
}

int pgc_coll_to_mpi(pgc_team *t, pgc_coll coll)
{
    int rc = pgc_check_aborted(t);
    if (rc || (rc = pgc_coll_sign(t, PGC_SIG_REFUSED | coll, PGC_SIG_ARG_MPI)))
        return rc;
    /* A reason in our staging and descriptor, as pgc_coll_refuse leaves
     * one, for peers in the engine, which end the call as on a refusal
     * (root_refused, give_up); read by nobody where every peer goes to MPI. */
    static const char why[] = "its arguments take the call to MPI (" PGC_TO_MPI_WHY ")";
    if ((rc = pgc_wait_peers_done(t, 1)) == PGC_OK) {
        memcpy(pgc_staging_of(t, t->rank), why, sizeof why - 1);
        pgc_desc_put(t, (pgc_path)PGC_DESC_REFUSED, PGC_DESC_REFUSAL_LEN + sizeof why - 1);
    }
    /* both words (release: after the signature, the descriptor and the reason) */
    pgc_post_ack(t, PGC_STEP_DONE);
    pgc_post_step(t, PGC_STEP_DONE);
    /* the first wait on each peer in this collective checks its signature */
    if (rc == PGC_OK)
        rc = pgc_wait_peers_done(t, 0);
    char reason[PGC_REFUSAL_MAX + 1];
    int refuser = t->err.peer;
    if (rc == PGC_EPEERREFUSED && refuser == t->rank)
        /* a peer in the engine gave the call up on us, whom it took for a
         * refuser, before we checked its signature */
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0,
                             "%s: this rank's arguments take the call to MPI (" PGC_TO_MPI_WHY ") while other "
                             "ranks' go to pgascol; every rank must pass arguments of the same kind",
                             pgc_coll_name(coll));
    if (rc == PGC_EPEERREFUSED && refusal_reason(t, refuser, reason) == 0)
        pgc_set_error(&t->err, PGC_EPEERREFUSED, refuser, 0,
                      "%s: local rank %d refused its arguments%s%s; the call is given up on the ranks that "
                      "wait for it", pgc_coll_name(coll), refuser, reason[0] ? ": " : "", reason);
    return rc;
}

/* The descriptor's path byte of a member in a call agreed on MPI: its
 * length is the call's bytes (t->hint_bytes). */
#define PGC_DESC_ON_MPI 0xfeu

int pgc_coll_agree_mpi(pgc_team *t, pgc_coll coll, uint64_t arg)
{
    if (!pgc_sig_reduction(coll))
        arg |= pgc_sig_class_bits(t->hint_bytes);
    int rc = pgc_coll_sign(t, coll, arg);
    if (rc || (rc = pgc_check_aborted(t)))
        return rc;
    /* our bytes in our descriptor (free once every peer is done with the
     * collective PGC_RUNAHEAD back, pgc_desc_of), then DONE: both words,
     * since a peer may wait on either (release: after the descriptor) */
    if ((rc = pgc_wait_peers_done(t, PGC_RUNAHEAD)))
        return rc;
    pgc_desc_put(t, (pgc_path)PGC_DESC_ON_MPI, t->hint_bytes);
    pgc_post_ack(t, PGC_STEP_DONE);
    pgc_post_step(t, PGC_STEP_DONE);
    /* the first wait on each peer checks its signature (sync.h) */
    if ((rc = pgc_wait_peers_done(t, 0)))
        return rc;
    unsigned pending = t->end_pending;
    t->end_pending = 0;
    if (pending & PGC_END_TYPES)
        return PGC_ETYPE; /* t->err says which member stated which type */
    for (int p = 0; p < t->nranks; p++) {
        if (p == t->rank)
            continue;
        /* relaxed: the peer stored both before the DONE our wait acquired */
        uint64_t sig = atomic_load_explicit(&pgc_ctl_of(t, p)->sig[t->seq & (PGC_SIG_RING - 1)], memory_order_relaxed);
        if (pgc_sig_kind(sig) & PGC_SIG_REFUSED)
            /* a reader of our Bcast or Scatter refused (PGC_END_SKIP: the
             * engine would complete the call without it): on MPI nobody may */
            return pgc_set_error(&t->err, PGC_EPEERREFUSED, p, 0, "%s: local rank %d refused its arguments",
                                 pgc_coll_name(coll), p);
        uint64_t desc = pgc_desc_get(t, p);
        if (pgc_desc_path(desc) != (pgc_path)PGC_DESC_ON_MPI || pgc_desc_len(desc) != t->hint_bytes) {
            pgc_set_error(&t->err, PGC_EMISMATCH, p, 0,
                          "%s: this rank (local rank %d) passes %zu bytes, local rank %d %llu; every rank must "
                          "pass the same count", pgc_coll_name(coll), t->rank, t->hint_bytes, p,
                          (unsigned long long)pgc_desc_len(desc));
            pgc_team_abort(t, PGC_EMISMATCH, t->err.msg);
            return PGC_EMISMATCH;
        }
    }
    return PGC_ON_MPI;
}

pgc_path pgc_choose_path(const pgc_team *t, pgc_coll coll, size_t bytes, int shared)
{
    if (bytes <= t->cfg.inline_max && bytes <= t->hdr->inline_slot)
        return PGC_PATH_INLINE;
    /* shared: one user-space copy, fewer than staging's two, and no kernel
     * call (coll.h) */
    if (shared)
        return PGC_PATH_CMA;
    if (t->path_hint) /* the tuner's choice; single copy only where it works */
        return t->path_hint == PGC_PATH_CMA && t->cma_ok ? PGC_PATH_CMA : PGC_PATH_CICO;
    if (t->cma_ok && bytes >= t->cfg.cma_min[coll])
        return PGC_PATH_CMA;
    return PGC_PATH_CICO;
}

/* When a path's costs were last measured (0: never): single copy's, or
 * the latest of staging's (either way of storing) and copy-out's. */
static uint64_t last_measured(pgc_costs *c, pgc_path path)
{
    if (path == PGC_PATH_CMA)
        return atomic_load_explicit(&c->measured_ns[PGC_XFER_CMA], memory_order_relaxed);
    static const pgc_xfer staged[] = {PGC_XFER_STAGE, PGC_XFER_STREAM, PGC_XFER_COPYOUT};
    uint64_t last = 0;
    for (size_t i = 0; i < sizeof staged / sizeof *staged; i++) {
        uint64_t m = atomic_load_explicit(&c->measured_ns[staged[i]], memory_order_relaxed);
        last = m > last ? m : last;
    }
    return last;
}

/* The way of storing into staging that cfg.stream and the costs favour
 * (its cost: ps_per_byte of it, 0 while not measured). Streaming stores go to
 * memory and leave every cache: cheaper for the writer when a line the
 * readers hold must first come back across a slow link, dearer for the
 * readers, who then fetch from memory. Stream only while ordinary stores
 * measure more than three times dearer, as in slow periods (copy.h:
 * pgc_copy_stream; docs/PERFORMANCE.md, "Streaming stores into staging
 * while ordinary ones cost 3x more"). */
static pgc_xfer stage_best(const pgc_team *t)
{
    pgc_costs *c = &t->hdr->costs;
    uint32_t plain = atomic_load_explicit(&c->ps_per_byte[PGC_XFER_STAGE], memory_order_relaxed);
    uint32_t stream = atomic_load_explicit(&c->ps_per_byte[PGC_XFER_STREAM], memory_order_relaxed);
    int streams = t->cfg.stream == 2 || (t->cfg.stream == 1 && stream && plain > 3 * (uint64_t)stream);
    return streams ? PGC_XFER_STREAM : PGC_XFER_STAGE;
}

pgc_path pgc_choose_member_path(pgc_team *t, pgc_coll coll, size_t bytes, int shared)
{
    pgc_path path = pgc_choose_path(t, coll, bytes, shared);
    /* the tuner's choice is measured by the tuner: no probe of the other */
    if (path != PGC_PATH_CICO || t->path_hint || !pgc_adapts(t, coll, bytes))
        return path;
    pgc_costs *c = &t->hdr->costs;
    /* a probe in progress decides */
    uint64_t probe = atomic_load_explicit(&c->probe, memory_order_relaxed);
    int32_t into_probe = (int32_t)(t->seq - (uint32_t)(probe >> 32)); /* < 0: we lag behind it */
    if (probe && into_probe >= 0 && (uint32_t)into_probe < PGC_PROBE_LEN)
        return (pgc_path)(probe & 0xff);
    uint64_t stage = atomic_load_explicit(&c->ps_per_byte[stage_best(t)], memory_order_relaxed);
    uint64_t out = atomic_load_explicit(&c->ps_per_byte[PGC_XFER_COPYOUT], memory_order_relaxed);
    uint64_t cma = atomic_load_explicit(&c->ps_per_byte[PGC_XFER_CMA], memory_order_relaxed);
    /* A byte staged is copied into staging (the way stage_best favours:
     * in slow periods streaming stores keep staging close to single copy)
     * and out of it (or read there by a block owner's fold); by single
     * copy it is pulled once, except in Allreduce, whose exposing owners
     * leave their results in their receive buffers to be pulled a second
     * time (coll_reduce.c). Single copy only
     * when clearly cheaper (by a quarter): the two are close on a quiet
     * machine, where staging keeps the readers' copies at memcpy speed, and
     * one pull per byte chose single copy for a 16 MiB Allreduce that
     * staging ran faster (docs/PERFORMANCE.md, "The path follows the
     * measured costs"). A copy-out not measured yet
     * counts as free: members of a Reduce_scatter or a Reduce stage but
     * copy nothing out (the block owners read the staging inside the
     * fold), and their staging alone tells a slow period. */
    const uint64_t pulls = coll == PGC_COLL_ALLREDUCE ? 2 : 1;
    pgc_path other = PGC_PATH_CMA;
    if ((stage || out) && cma && 4 * pulls * cma < 3 * (stage + out)) {
        path = PGC_PATH_CMA;
        other = PGC_PATH_CICO;
    }
    /* The first member a whole collective past a probe judges it
     * (all-member collectives: everybody chose its path for the probe's
     * collectives by then; the costs hold them but for the last ones of the
     * slower members): probing a path that lost again costs more than it
     * tells, so the next probe comes later. */
    if (probe && into_probe > (int32_t)PGC_PROBE_LEN &&
        atomic_compare_exchange_strong_explicit(&c->probe, &probe, 0, memory_order_relaxed,
                                                memory_order_relaxed)) {
        uint32_t backoff = atomic_load_explicit(&c->probe_backoff, memory_order_relaxed);
        if ((pgc_path)(probe & 0xff) == path) /* the probed path took over */
            backoff = backoff < PGC_PROBE_BACKOFF_RESET ? backoff : PGC_PROBE_BACKOFF_RESET;
        else if (backoff < PGC_PROBE_BACKOFF_MAX)
            backoff++;
        atomic_store_explicit(&c->probe_backoff, backoff, memory_order_relaxed);
    }
    /* Call a probe of the other path when it is stale and ours was measured. */
    const uint64_t gap = pgc_probe_interval_ns(atomic_load_explicit(&c->probe_backoff, memory_order_relaxed));
    uint64_t now = pgc_now_ns(), last = atomic_load_explicit(&c->probe_ns, memory_order_relaxed);
    if (now - last_measured(c, other) > gap && last_measured(c, path) && now - last > gap &&
        atomic_compare_exchange_strong_explicit(&c->probe_ns, &last, now, memory_order_relaxed,
                                                memory_order_relaxed)) {
        atomic_store_explicit(&c->probe, (uint64_t)t->seq << 32 | other, memory_order_relaxed);
        return other;
    }
    return path;
}

/* A cost falls three quarters of the way to a lower sample at once but
 * rises by at most a quarter per collective: one slow collective (preempted,
 * interrupted) barely moves it, while a lasting change of the machine's
 * speed wins within a few collectives. */
void pgc_costs_fold(pgc_team *t, int rc)
{
    pgc_costs *c = &t->hdr->costs;
    uint64_t now = rc == PGC_OK ? pgc_now_ns() : 0;
    for (int k = 0; k < PGC_NXFER; k++) {
        uint32_t s = t->xfer_best[k];
        t->xfer_best[k] = 0;
        if (s == 0 || rc != PGC_OK)
            continue;
        /* A member's first copies of a kind fault in pages and cold lines. */
        if (!(t->xfer_seen & 1u << k)) {
            t->xfer_seen |= 1u << k;
            continue;
        }
        uint32_t e = atomic_load_explicit(&c->ps_per_byte[k], memory_order_relaxed);
        uint64_t up = (uint64_t)e + e / 4 + 1;
        e = e == 0 ? s : s < e ? s + (e - s) / 4 : (uint32_t)(s < up ? s : up);
        atomic_store_explicit(&c->ps_per_byte[k], e, memory_order_relaxed);
        atomic_store_explicit(&c->measured_ns[k], now, memory_order_relaxed);
    }
}

/* pgc_coll_end with something pending: fold what the collective measured
 * into the team's costs (discarded on failure), post DONE as pgc_coll_end
 * does, and end a success in which a peer stated another basic type with
 * PGC_ETYPE (the bytes moved, the team in step, t->err says which types). */
int pgc_coll_end_pending(pgc_team *t, int rc)
{
    unsigned pending = t->end_pending;
    t->end_pending = 0;
    if (pending & PGC_END_FOLD)
        pgc_costs_fold(t, rc);
    if (rc == PGC_OK) {
        pgc_post_step(t, PGC_STEP_DONE);
        return pending & PGC_END_TYPES ? PGC_ETYPE : PGC_OK;
    }
    return pgc_coll_end_failed(t, rc);
}

int pgc_coll_end_failed(pgc_team *t, int rc)
{
    if (rc == PGC_EREFUSED)
        root_refused(t);
    else if (rc == PGC_EPEERREFUSED)
        rc = give_up(t);
    return rc;
}

void pgc_costs_seed(pgc_team *t, const uint32_t ps_per_byte[PGC_NXFER])
{
    pgc_costs *c = &t->hdr->costs;
    uint64_t now = pgc_now_ns();
    for (int k = 0; k < PGC_NXFER; k++)
        if (ps_per_byte[k]) {
            atomic_store_explicit(&c->ps_per_byte[k], ps_per_byte[k], memory_order_relaxed);
            atomic_store_explicit(&c->measured_ns[k], now, memory_order_relaxed);
        }
    atomic_store_explicit(&c->probe, 0, memory_order_relaxed);
    atomic_store_explicit(&c->probe_backoff, PGC_PROBE_BACKOFF_RESET, memory_order_relaxed);
    atomic_store_explicit(&c->probe_ns, now, memory_order_relaxed);
}

/* How this member writes its staging in its next copy-in/copy-out collective:
 * stage_best's way, except that the other way is taken once when it was not
 * measured for PGC_PROBE_NS, by each member for itself (no agreement is
 * needed: readers copy the same bytes either way). */
pgc_xfer pgc_stage_xfer(pgc_team *t)
{
    pgc_xfer best = stage_best(t);
    if (t->cfg.stream != 1)
        return best;
    if (!atomic_load_explicit(&t->hdr->costs.ps_per_byte[PGC_XFER_STAGE], memory_order_relaxed))
        return PGC_XFER_STAGE; /* nothing staged yet: the ordinary way first */
    pgc_xfer other = best == PGC_XFER_STREAM ? PGC_XFER_STAGE : PGC_XFER_STREAM;
    uint64_t now = pgc_now_ns();
    if (now - atomic_load_explicit(&t->hdr->costs.measured_ns[other], memory_order_relaxed) > PGC_PROBE_NS &&
        now - t->stream_probe_ns > PGC_PROBE_NS) {
        t->stream_probe_ns = now;
        return other;
    }
    return best;
}

int pgc_bcast_radix(const pgc_team *t, pgc_path path)
{
    /* A member has at most (k-1) * ceil(log_k P) children: radix 2..16 and
     * P <= 65536 keep that within PGC_TREE_MAX_CHILDREN. */
    if (path == PGC_PATH_INLINE || t->cfg.bcast_tree_min == 0 ||
        (uint32_t)t->nranks < t->cfg.bcast_tree_min || t->nranks > 65536)
        return 0;
    uint32_t k = t->cfg.bcast_radix;
    return k < 2 ? 2 : k > 16 ? 16 : (int)k;
}

int pgc_wait_peers_done(pgc_team *t, uint32_t back)
{
    uint64_t done = ((uint64_t)(t->seq - back) << 32) | PGC_STEP_DONE;
    for (int r = 0; r < t->nranks; r++)
        if (r != t->rank) {
            int rc = pgc_wait_word(t, r, &pgc_ctl_of(t, r)->progress, done);
            if (rc)
                return rc;
        }
    return PGC_OK;
}

/* A single copy through a shared region: this member's own mapping of the
 * peer's memory, copied with the team's loop; once a copy outgrows the
 * cache its destination is written with streaming stores, as the exchange
 * engine writes a cold receive buffer (cfg.recv_stream_min, xchg.c). */
static void region_copy(pgc_team *t, int write, void *local, char *mapped, size_t len)
{
    void *dst = write ? mapped : local;
    const void *src = write ? (const void *)local : mapped;
    if (t->cfg.recv_stream_min && len >= t->cfg.recv_stream_min)
        pgc_copy_stream(dst, src, len);
    else
        pgc_copy(t, dst, src, len);
}

int pgc_coll_cma(pgc_team *t, int peer, int write, void *local, uint64_t remote, size_t len)
{
    int rc = pgc_check_aborted(t);
    if (rc || len == 0)
        return rc;
    char *mapped = t->nregions ? pgc_region_find(t, peer, remote, len) : NULL;
    if (mapped) {
        region_copy(t, write, local, mapped, len);
        if (!t->stats_paused)
            t->single_copies[PGC_COPY_SHARED]++;
        return PGC_OK;
    }
    if (!t->cma_ok) {
        /* The path choice (pgc_choose_path) takes single copy without the
         * kernel's only for buffers in shared regions: a bug if reached,
         * unless the peer died (its memory is gone from the tables' view). */
        if (!pgc_member_alive(t, peer))
            return pgc_check_peer(t, peer);
        pgc_set_error(&t->err, PGC_EINVAL, peer, 0,
                      "%s: single copy with local rank %d at 0x%llx (%zu bytes): not in a shared region, "
                      "and process_vm_readv is not available (%.100s)", pgc_current_coll_name(t), peer,
                      (unsigned long long)remote, len, t->cma_reason);
        pgc_team_abort(t, PGC_EINVAL, t->err.msg);
        return PGC_EINVAL;
    }
    pid_t pid = pgc_member_of(t, peer)->pid;
    uint64_t t0 = len >= PGC_XFER_TIMED_MIN ? pgc_now_ns() : 0;
    rc = write ? pgc_cma_write(pid, local, remote, len, &t->err)
               : pgc_cma_read(pid, local, remote, len, &t->err);
    if (t0 && rc == PGC_OK)
        pgc_xfer_note(t, PGC_XFER_CMA, len, pgc_now_ns() - t0);
    if (rc == PGC_OK && !t->stats_paused)
        t->single_copies[PGC_COPY_KERNEL]++;
    if (rc) {
        int arc = pgc_check_aborted(t);
        if (arc)
            return arc;
        /* The usual cause: the peer died under us (ESRCH, or EFAULT as its
         * memory went). Reported as a dead peer, like a wait would. */
        if (!pgc_member_alive(t, peer))
            return pgc_check_peer(t, peer);
        char msg[sizeof t->err.msg];
        snprintf(msg, sizeof msg, "%s: single copy with local rank %d: %.250s", pgc_current_coll_name(t), peer,
                 t->err.msg);
        pgc_set_error(&t->err, rc, peer, t->err.sys_errno, "%s", msg);
        pgc_team_abort(t, rc, t->err.msg);
    }
    return rc;
}
