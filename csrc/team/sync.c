/* sync.c - progress words, escalating waits, liveness, the abort line and
 * the signature checks of the waits (see sync.h). */
#define _GNU_SOURCE
#include "team/sync.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"

#define SLEEP_SLICE_NS (50ull * 1000 * 1000)     /* longest single futex sleep */
#define LIVENESS_EVERY_NS (100ull * 1000 * 1000) /* how often a sleeper checks its peers */
/* The spin gate (spin_gate_count): a window of waits that spun, the share
 * of them the spin must end for spinning to stay on, and the hold. */
#define SPIN_WINDOW 32u
#define SPIN_PAYS_ONE_IN 8u
#define SPIN_HOLD_MIN_NS (10ull * 1000 * 1000)
#define SPIN_HOLD_MAX_NS (1000ull * 1000 * 1000)

/* pgc_set_wait_progress's hook. Relaxed: a wait sees the hook or not, both
 * are correct; it is only read in the sleeping phase. */
static void (*_Atomic wait_progress)(void);

void pgc_set_wait_progress(void (*hook)(void))
{
    atomic_store_explicit(&wait_progress, hook, memory_order_relaxed);
}

/* Shared (not FUTEX_PRIVATE) futex calls: the words live in a segment mapped
 * by several processes. */
static int futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts = {(time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull)};
    return (int)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Out of line, and named to callgrind like the waits (csrc/base/count.h):
 * whether a peer sleeps when we publish is a matter of scheduling. */
PGC_NOINLINE void pgc_ring_doorbell(pgc_ctl *c)
{
    atomic_fetch_add_explicit(&c->doorbell, 1, memory_order_seq_cst);
    futex_wake_all(&c->doorbell);
}

void pgc_publish(pgc_team *t, _Atomic uint64_t *word, uint64_t value)
{
    pgc_ctl *c = pgc_ctl_of(t, t->rank);
    /* release: orders the data written before this store (staged chunks,
     * inline payloads, published addresses) before the new value. */
    atomic_store_explicit(word, value, memory_order_release);
    /* seq_cst fence: orders the store above before the load of `sleepers`
     * (store-load). Pairs with the sleeper's increment of `sleepers` before
     * its re-check in pgc_wait_slow: either we see the sleeper, or it sees
     * the value. */
    atomic_thread_fence(memory_order_seq_cst);
    if (PGC_UNLIKELY(atomic_load_explicit(&c->sleepers, memory_order_relaxed)))
        pgc_ring_doorbell(c);
}

int pgc_member_alive(const pgc_team *t, int r)
{
    const pgc_member *m = pgc_member_of(t, r);
    return pgc_process_alive(m->pid, m->starttime);
}

int pgc_check_peer(pgc_team *t, int r)
{
    if (r == t->rank || pgc_member_alive(t, r))
        return PGC_OK;
    pgc_set_error(&t->err, PGC_EPEERDEAD, r, 0, "%s: local rank %d (pid %d) of the node team died or exited",
                  pgc_current_coll_name(t), r, pgc_member_of(t, r)->pid);
    pgc_team_abort(t, PGC_EPEERDEAD, t->err.msg);
    return PGC_EPEERDEAD;
}

int pgc_check_peers(pgc_team *t)
{
    for (int r = 0; r < t->nranks; r++) {
        int rc = pgc_check_peer(t, r);
        if (rc)
            return rc;
    }
    return PGC_OK;
}

/* The team was aborted by someone: copy their reason. Within the collective
 * in which this member aborted it, it keeps its own error (code and
 * message); any later collective is told, like every peer, that the team
 * was aborted. */
static int aborted_error(pgc_team *t)
{
    pgc_header *h = t->hdr;
    int ours = h->abort_rank == t->rank;
    if (ours && t->err.code && t->abort_seq == t->seq)
        return t->err.code;
    return pgc_set_error(&t->err, PGC_EABORTED, h->abort_rank, 0,
                         "%s: the node team was aborted by local rank %d%s: %s",
                         pgc_current_coll_name(t), h->abort_rank, ours ? " (this rank, in an earlier call)" : "",
                         h->abort_msg);
}

static inline int is_aborted(const pgc_team *t)
{
    /* 1 while the aborter is still writing its reason, 2 once it is there */
    return atomic_load_explicit(&t->hdr->aborted, memory_order_acquire) == 2;
}

int pgc_check_aborted(pgc_team *t)
{
    return PGC_UNLIKELY(is_aborted(t)) ? aborted_error(t) : PGC_OK;
}

/* "Bcast (root 2)", "Allreduce (float64, SUM)", "Barrier": what a signature
 * says, for messages. */
static void describe_sig(uint64_t sig, char *out, size_t size)
{
    pgc_coll coll = pgc_sig_coll(sig);
    uint64_t arg = pgc_sig_arg(sig);
    const char *name = pgc_coll_name(coll);
    if ((pgc_sig_kind(sig) & PGC_SIG_REFUSED) && arg == PGC_SIG_ARG_MPI) {
        snprintf(out, size, "%s on MPI", name);
        return;
    }
    switch (coll) {
    case PGC_COLL_BCAST: case PGC_COLL_GATHER: case PGC_COLL_GATHERV:
    case PGC_COLL_SCATTER: case PGC_COLL_SCATTERV:
        snprintf(out, size, "%s (root %d)", name, PGC_SIG_ROOT(arg));
        break;
    case PGC_COLL_REDUCE: case PGC_COLL_ALLREDUCE: case PGC_COLL_REDUCE_SCATTER:
    case PGC_COLL_REDUCE_SCATTER_BLOCK: case PGC_COLL_SCAN: case PGC_COLL_EXSCAN:
        snprintf(out, size, "%s (%s, %s)", name, pgc_dtype_name(PGC_SIG_DTYPE(arg)), pgc_op_name(PGC_SIG_OP(arg)));
        break;
    default:
        snprintf(out, size, "%s", name);
    }
}

/* The basic type a signature states (PGC_SIG_ROOTED, PGC_SIG_REDUCTION:
 * a pgc_dtype, or -1 for none), or -2 for a collective that states none. */
static int sig_basic(uint64_t sig)
{
    pgc_coll coll = pgc_sig_coll(sig);
    uint64_t arg = pgc_sig_arg(sig);
    if (pgc_sig_kind(sig) & PGC_SIG_REFUSED)
        return -2;
    if (pgc_sig_rooted(coll))
        return PGC_SIG_BASIC(arg);
    if (coll == PGC_COLL_REDUCE || coll == PGC_COLL_ALLREDUCE || coll == PGC_COLL_REDUCE_SCATTER ||
        coll == PGC_COLL_REDUCE_SCATTER_BLOCK || coll == PGC_COLL_SCAN || coll == PGC_COLL_EXSCAN)
        return (int)PGC_SIG_DTYPE(arg);
    return -2;
}

/* Two signatures of one collective (up to the v form) that state different
 * basic types: the members' type signatures differ. */
static int types_differ(uint64_t mine, uint64_t theirs)
{
    return pgc_same_family(pgc_sig_coll(mine), pgc_sig_coll(theirs)) && sig_basic(mine) != -2 &&
           sig_basic(theirs) != -2 && sig_basic(mine) != sig_basic(theirs);
}

static const char *basic_name(uint64_t sig)
{
    int basic = sig_basic(sig);
    return basic < 0 ? "bytes of no stated type" : pgc_dtype_name((pgc_dtype)basic);
}

/* What a peer's signature of this seq says against ours (pgc_check_signature
 * found them different), from classify_signature_difference; the first that
 * applies, in this order. */
typedef enum {
    SIGDIFF_PEER_ON_MPI,     /* the peer took its collective to MPI, and a refusal aborts (or we refused) */
    SIGDIFF_SELF_ON_MPI,     /* we must take ours to MPI, the peer refused nothing, and a refusal aborts */
    SIGDIFF_SELF_ON_MPI_ALONE, /* the same where refusals end the call: we end ours as a refuser would */
    SIGDIFF_ON_MPI_PEER_REFUSED, /* we must take ours to MPI, the peer refused it: we may not */
    SIGDIFF_ROOT_REFUSED,    /* the root of our rooted collective refused it */
    SIGDIFF_TYPES_ONLY,      /* the basic types alone differ (pgc_sig_types_only_differ) */
    SIGDIFF_READER_REFUSED,  /* a reader of the Bcast or Scatter(v) whose root we are refused it */
    SIGDIFF_PEER_REFUSED,    /* a peer we need refused our collective, refusals not aborting */
    SIGDIFF_REFUSAL_ABORTS,  /* the peer refused, in any other case: our call cannot complete */
    SIGDIFF_SIZE_CLASS,      /* one collective, another size class stated (a call agreed on MPI, coll.h) */
    SIGDIFF_UPC_ARGS,        /* one UPC collective, other arguments */
    SIGDIFF_TYPES_DIFFER,    /* one collective, other basic types (and counts) */
    SIGDIFF_REDUCTION_SHAPE, /* one reduction, another count (or a Reduce's root) */
    SIGDIFF_RECVCOUNTS,      /* one Reduce_scatter, other recvcounts */
    SIGDIFF_OUT_OF_STEP,     /* another collective */
} sig_difference;

/* Decide what differs between our signature and the peer's `theirs`; no
 * effect on the team. */
static sig_difference classify_signature_difference(const pgc_team *t, int peer, uint64_t theirs)
{
    const uint64_t ours = t->sig;
    const pgc_coll coll = pgc_sig_coll(ours);
    const int they_refused = (pgc_sig_kind(theirs) & PGC_SIG_REFUSED) != 0;
    const int we_refused = (pgc_sig_kind(ours) & PGC_SIG_REFUSED) != 0;
    const int same = pgc_same_family(pgc_sig_coll(theirs), coll);
    const int we_on_mpi = we_refused && pgc_sig_arg(ours) == PGC_SIG_ARG_MPI;
    /* On one node (refusals not aborting), a member that takes the call to
     * MPI while its peers are in the engine is taken for a refuser by them
     * (the cases below), and ends its own call the same way. */
    if (they_refused && pgc_sig_arg(theirs) == PGC_SIG_ARG_MPI && (we_refused || t->refusals_abort || !same))
        return SIGDIFF_PEER_ON_MPI;
    if (we_on_mpi && same && !t->refusals_abort)
        return they_refused ? SIGDIFF_ON_MPI_PEER_REFUSED : SIGDIFF_SELF_ON_MPI_ALONE;
    if (we_on_mpi && !they_refused)
        return SIGDIFF_SELF_ON_MPI;
    if (they_refused && !we_refused && pgc_same_family(pgc_sig_coll(theirs), coll) &&
        pgc_root_refusal_ends_call(coll) && peer == PGC_SIG_ROOT(pgc_sig_arg(ours)))
        return SIGDIFF_ROOT_REFUSED;
    if (pgc_sig_types_only_differ(ours, theirs))
        return SIGDIFF_TYPES_ONLY;
    if (they_refused && !we_refused && pgc_same_family(pgc_sig_coll(theirs), coll) && !t->refusals_abort) {
        if ((coll == PGC_COLL_BCAST || pgc_same_family(coll, PGC_COLL_SCATTER)) &&
            PGC_SIG_ROOT(pgc_sig_arg(ours)) == t->rank)
            return SIGDIFF_READER_REFUSED;
        return SIGDIFF_PEER_REFUSED;
    }
    if (they_refused)
        return SIGDIFF_REFUSAL_ABORTS;
    if (pgc_same_family(pgc_sig_coll(theirs), coll) && pgc_sig_class(theirs) != pgc_sig_class(ours))
        return SIGDIFF_SIZE_CLASS;
    if (pgc_sig_coll(theirs) == coll && coll >= PGC_COLL_UPC_BROADCAST)
        return SIGDIFF_UPC_ARGS;
    if (types_differ(ours, theirs))
        return SIGDIFF_TYPES_DIFFER;
    /* the messages' descriptions: the collective, a reduction's dtype and
     * op, a rooted collective's root */
    char mine[96], other[96];
    describe_sig(ours, mine, sizeof mine);
    describe_sig(theirs, other, sizeof other);
    /* a reduction of another shape (team.h: PGC_SIG_REDUCTION) */
    if (strcmp(mine, other) == 0 && pgc_sig_coll(theirs) == coll && coll != PGC_COLL_REDUCE_SCATTER)
        return SIGDIFF_REDUCTION_SHAPE;
    if (strcmp(mine, other) == 0 && pgc_sig_coll(theirs) == coll)
        return SIGDIFF_RECVCOUNTS;
    return SIGDIFF_OUT_OF_STEP;
}

/* Report a difference: set t->err, abort the team and return
 * PGC_EMISMATCH, except in four cases, which leave the team usable. A
 * refusing root ends the call (PGC_EREFUSED), a refusing peer we need
 * gives it up (PGC_EPEERREFUSED), each with t->err; basic types that alone
 * differ (t->err: PGC_ETYPE) and a refusing reader of our Bcast or
 * Scatter(v) let the call complete: PGC_OK, recorded for pgc_coll_end and
 * pgc_peer_skipped. */
static int report_signature_difference(pgc_team *t, int peer, uint64_t theirs, sig_difference d)
{
    char mine[96], other[96];
    describe_sig(t->sig, mine, sizeof mine);
    describe_sig(theirs, other, sizeof other);
    const char *collname = pgc_current_coll_name(t);
    switch (d) {
    case SIGDIFF_PEER_ON_MPI:
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: local rank %d took %s to MPI (" PGC_TO_MPI_WHY ") while this rank is in %s; "
                      "every rank must pass arguments of the same kind", collname, peer,
                      pgc_coll_name(pgc_sig_coll(theirs)), mine);
        break;
    case SIGDIFF_SELF_ON_MPI:
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: this rank (local rank %d) must take %s to MPI (" PGC_TO_MPI_WHY ") while local "
                      "rank %d is in %s; every rank must pass arguments of the same kind", collname, t->rank, pgc_coll_name(pgc_sig_coll(t->sig)), peer, other);
        break;
    case SIGDIFF_SELF_ON_MPI_ALONE:
        /* The peer is in the engine, which took us for a refuser (our
         * descriptor says so, pgc_coll_to_mpi): we may not enter MPI
         * without it. No abort: every member ends the call. */
        return pgc_set_error(&t->err, PGC_EINVAL, peer, 0,
                             "%s: this rank's arguments take the call to MPI (" PGC_TO_MPI_WHY ") while local "
                             "rank %d's go to pgascol; every rank must pass arguments of the same kind",
                             collname, peer);
    case SIGDIFF_ON_MPI_PEER_REFUSED:
        return pgc_set_error(&t->err, PGC_EPEERREFUSED, peer, 0, "%s: local rank %d refused its arguments",
                             collname, peer);
    case SIGDIFF_ROOT_REFUSED:
        /* The root refused before anything moved, and nobody waits on a
         * member but the root: every member that needs it ends the call
         * with the root's reason (pgc_coll_end, coll.h), no abort. */
        pgc_set_error(&t->err, PGC_EREFUSED, peer, 0, "%s: the root (local rank %d) refused its arguments",
                      collname, peer);
        return PGC_EREFUSED;
    case SIGDIFF_TYPES_ONLY: {
        /* The byte counts agree (or a later check of them aborts): the
         * collective moves its bytes as MPI would, and this member ends it
         * with the difference (pgc_coll_end), the team usable. */
        int root = PGC_SIG_ROOT(pgc_sig_arg(t->sig));
        pgc_set_error(&t->err, PGC_ETYPE, peer, 0,
                      "%s: local rank %d%s passes its elements as %s where this rank (local rank %d%s) "
                      "passes %s: the type signatures differ (MPI calls the program erroneous, even at "
                      "the same byte count); every rank must pass the basic type of the root (local rank %d)",
                      collname, peer, peer == root ? ", the root," : "", basic_name(theirs), t->rank,
                      t->rank == root ? ", the root" : "", basic_name(t->sig), root);
        t->end_pending |= PGC_END_TYPES;
        t->skip_seq[peer] = t->seq;
        t->basic_seen = sig_basic(theirs);
        return PGC_OK;
    }
    case SIGDIFF_READER_REFUSED:
        /* A reader of our Bcast or Scatter(v) refused it: we need
         * nothing from it, its DONE stands for its acknowledgements,
         * and we push nothing into the buffer it never exposed
         * (pgc_peer_skipped): the call completes, as under MPI. */
        t->end_pending |= PGC_END_SKIP;
        t->skip_seq[peer] = t->seq;
        return PGC_OK;
    case SIGDIFF_PEER_REFUSED:
        /* The peer refused this collective before it moved anything, and
         * we need it: we give the collective up (pgc_coll_end: give_up,
         * coll.c, which adds the peer's reason), and so does every member
         * that needs us. No abort. */
        return pgc_set_error(&t->err, PGC_EPEERREFUSED, peer, 0, "%s: local rank %d refused its arguments",
                             collname, peer);
    case SIGDIFF_REFUSAL_ABORTS:
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: local rank %d refused its arguments to %s (see the error it raised), "
                      "so this rank's %s cannot complete",
                      collname, peer, pgc_coll_name(pgc_sig_coll(theirs)), mine);
        break;
    case SIGDIFF_SIZE_CLASS:
        /* The tuner chose by the call's size, alike on every rank of a
         * correct call: one rank's call on MPI and another's in the engine
         * (or on MPI at another class) is a call of other counts. */
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: local rank %d passes a count of another size than this rank (local rank %d%s); "
                      "every rank must pass the same count", collname, peer, t->rank,
                      pgc_sig_class(t->sig) ? ", whose call went to MPI" : "");
        break;
    case SIGDIFF_UPC_ARGS:
        /* a UPC collective: its argument hashes what must agree (team.h) */
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: local rank %d passed other arguments than this rank (local rank %d): the "
                      "arrays, root, nbytes, flags, algorithm, operator and counts must agree on every rank",
                      collname, peer, t->rank);
        break;
    case SIGDIFF_TYPES_DIFFER:
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: local rank %d passes its elements as %s where this rank (local rank %d) passes "
                      "%s: the type signatures differ (MPI calls the program erroneous, even at the same "
                      "byte count); every rank must pass the same basic type",
                      collname, peer, basic_name(theirs), t->rank, basic_name(t->sig));
        break;
    case SIGDIFF_REDUCTION_SHAPE:
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: local rank %d reduces a different number of elements%s than this rank "
                      "(local rank %d, %llu elements); every rank must pass the same count",
                      collname, peer, pgc_sig_coll(t->sig) == PGC_COLL_REDUCE ? " (or to a different root)" : "",
                      t->rank, (unsigned long long)t->sig_elems);
        break;
    case SIGDIFF_RECVCOUNTS:
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: local rank %d passed other recvcounts than this rank (local rank %d, %llu "
                      "elements in all); every rank must pass the same recvcounts",
                      collname, peer, t->rank, (unsigned long long)t->sig_elems);
        break;
    case SIGDIFF_OUT_OF_STEP:
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: collectives out of step: local rank %d is in %s where this rank (local rank %d) "
                      "is in %s; every rank must call the same collectives in the same order "
                      "(did a rank skip one after an error?)", collname, peer, other, t->rank, mine);
        break;
    }
    pgc_team_abort(t, PGC_EMISMATCH, t->err.msg);
    return PGC_EMISMATCH;
}

int pgc_signature_mismatch(pgc_team *t, int peer, uint64_t theirs)
{
    return report_signature_difference(t, peer, theirs, classify_signature_difference(t, peer, theirs));
}

int pgc_check_skipped_signatures(pgc_team *t, int peer, uint32_t last)
{
    /* The collectives since `last` in which this member never waited on the
     * peer (a Bcast root, a Reduce member that is not the root, zero counts)
     * went unchecked; their signatures are still in both rings for up to
     * PGC_SIG_RING - 1 collectives back. Members that both took themselves
     * for the root of a small Bcast wait for nobody: this is where they learn
     * it, one collective late but before this one moves any data. Refusals
     * are left alone: a member that did not need the refusing one completed
     * legitimately; so are basic types that differ alone: the collective
     * completed as under MPI, and the members that saw it failed it. */
    _Atomic uint64_t *mine_ring = pgc_ctl_of(t, t->rank)->sig, *their_ring = pgc_ctl_of(t, peer)->sig;
    uint32_t from = t->seq - (PGC_SIG_RING - 1);
    if ((int32_t)(last + 1 - from) > 0)
        from = last + 1;
    for (uint32_t j = from; j != t->seq; j++) {
        /* relaxed: ours we wrote; the peer's were stored before the value of
         * this collective that our wait acquired */
        uint64_t mine = atomic_load_explicit(&mine_ring[j & (PGC_SIG_RING - 1)], memory_order_relaxed);
        uint64_t theirs = atomic_load_explicit(&their_ring[j & (PGC_SIG_RING - 1)], memory_order_relaxed);
        if (theirs == mine || pgc_sig_seqbyte(mine) != (j & 0xffu) || pgc_sig_seqbyte(theirs) != (j & 0xffu) ||
            ((pgc_sig_kind(mine) | pgc_sig_kind(theirs)) & PGC_SIG_REFUSED) ||
            pgc_sig_types_only_differ(mine, theirs))
            continue;
        char m[96], o[96];
        describe_sig(mine, m, sizeof m);
        describe_sig(theirs, o, sizeof o);
        pgc_set_error(&t->err, PGC_EMISMATCH, peer, 0,
                      "%s: collectives out of step %u call(s) before this one: local rank %d was in %s%s "
                      "where this rank (local rank %d) was in %s; every rank must call the same collectives, "
                      "with the same root and counts, in the same order", pgc_current_coll_name(t), t->seq - j,
                      peer, o, strcmp(m, o) == 0 ? " of another count or root" : "", t->rank, m);
        pgc_team_abort(t, PGC_EMISMATCH, t->err.msg);
        return PGC_EMISMATCH;
    }
    return PGC_OK;
}

/* The clock of a wait that may sleep: its deadline, and when it next calls
 * the progress hook and checks the peer's liveness. */
typedef struct {
    uint64_t deadline, next_check, next_progress, max_slice;
    void (*progress)(void);
} wait_clock;

static void wait_clock_start(const pgc_team *t, uint64_t start, wait_clock *c)
{
    /* saturating: a huge timeout (or one set from C) must not wrap around */
    double timeout_ns = t->cfg.timeout_s * 1e9;
    c->deadline = timeout_ns < (double)(UINT64_MAX - start) ? start + (uint64_t)timeout_ns : UINT64_MAX;
    c->next_check = start + LIVENESS_EVERY_NS;
    c->progress = atomic_load_explicit(&wait_progress, memory_order_relaxed);
    c->max_slice = c->progress ? PGC_PROGRESS_EVERY_NS : SLEEP_SLICE_NS;
    /* the first call once the wait has lasted a progress period: a short
     * wait (the peer is a few microseconds behind, or a doorbell rung for
     * an earlier step of the collective woke us) never pays for it */
    c->next_progress = start + PGC_PROGRESS_EVERY_NS;
}

/* After a slice of sleep on `peer`: the progress hook and the peer's
 * liveness when due. PGC_ETIMEDOUT once the deadline passed: the caller
 * says what it waited for and aborts. */
static int wait_clock_tick(pgc_team *t, int peer, wait_clock *c)
{
    uint64_t now = pgc_now_ns();
    if (c->progress && now >= c->next_progress) {
        c->progress();
        c->next_progress = now + PGC_PROGRESS_EVERY_NS;
    }
    /* Only the member we wait for: one that finished its part of the
     * collective and exited (its program ended) is gone legitimately,
     * and a dead one that somebody needs is found by whoever waits on
     * it, whose abort reaches everyone. */
    if (now >= c->next_check) {
        int rc = pgc_check_peer(t, peer);
        if (rc)
            return rc;
        c->next_check = now + LIVENESS_EVERY_NS;
    }
    return now >= c->deadline ? PGC_ETIMEDOUT : PGC_OK;
}

/* The longest slice of sleep from now: to the deadline at most. */
static uint64_t wait_clock_slice(const wait_clock *c, uint64_t now)
{
    return c->deadline - now < c->max_slice ? c->deadline - now : c->max_slice;
}

/* Whether a wait for `target` on `peer` can never end: the team was
 * aborted, or the peer gave the collective in progress up (give_up,
 * coll.c: it posts nothing more in it until every member ended it) and the
 * target lies in that collective. PGC_EABORTED, PGC_EPEERREFUSED (t->err:
 * the refusing member) or 0. */
static int wait_broken(pgc_team *t, int peer, uint64_t target)
{
    if (is_aborted(t))
        return aborted_error(t);
    if ((uint32_t)(target >> 32) != t->seq)
        return PGC_OK;
    /* seq_cst: a sleeper's load after its increment of `sleepers`, as the
     * word's (pgc_publish, which stores gave_up too); and it acquires the
     * giver's store, which follows the giver's wait that acquired the
     * refuser's DONE, so the refuser's reason is visible to us */
    uint64_t g = atomic_load_explicit(&pgc_ctl_of(t, peer)->gave_up, memory_order_seq_cst);
    if (!(g & PGC_GAVE_UP) || (uint32_t)(g >> 32) != t->seq)
        return PGC_OK;
    int refuser = (int)(g & (PGC_GAVE_UP - 1));
    return pgc_set_error(&t->err, PGC_EPEERREFUSED, refuser, 0,
                         "%s: local rank %d refused its arguments (local rank %d gave the call up)",
                         pgc_current_coll_name(t), refuser, peer);
}

/* Count a wait that spun (ended: the spin ended it) and close the gate
 * when a window of them shows that spins seldom end a wait: the member we
 * wait for is not running while we spin. That is so when it shares our CPU
 * (the scheduler puts ranks that wake each other on one CPU when another
 * job's ranks hold the others, and a job sharing a node with a second one
 * takes turns with it) or when another job's task holds its CPU; the spin
 * then only takes our CPU from whoever needs it (measured: with another
 * 2-rank pgascol job on the same 2 CPUs, 3 spins in 10,000 ended a wait,
 * and small collectives took 2-4x longer than with no spin; quiet, with
 * busy processes, or beside a plain MPI job, 98% or more did). Closed, the
 * waits yield and sleep as when the team outnumbers its CPUs, for a hold
 * that doubles while windows keep failing (SPIN_HOLD_MIN_NS to
 * SPIN_HOLD_MAX_NS) and is back at the shortest after a window that pays:
 * at most one switch off per hold, and under lasting contention a window
 * of SPIN_WINDOW failed spins (about 0.6 ms) per second re-measures it. */
static void spin_gate_count(pgc_team *t, int ended, uint64_t now)
{
    struct pgc_spin_gate *g = &t->spin_gate;
    g->ended += (uint32_t)ended;
    if (++g->spun < SPIN_WINDOW)
        return;
    if (g->ended * SPIN_PAYS_ONE_IN < g->spun) {
        uint64_t hold = g->hold_ns ? g->hold_ns : SPIN_HOLD_MIN_NS;
        g->off_until = now + hold;
        g->hold_ns = hold < SPIN_HOLD_MAX_NS / 2 ? 2 * hold : SPIN_HOLD_MAX_NS;
        g->offs++;
    } else {
        g->hold_ns = 0;
    }
    g->spun = g->ended = 0;
}

/* Left out of an instruction count, callees included (count.h). */
PGC_NOINLINE int pgc_wait_slow(pgc_team *t, int peer, _Atomic uint64_t *word, uint64_t target)
{
    int rc;
    if (PGC_UNLIKELY(t->before_wait != NULL)) {
        void (*hook)(pgc_team *) = t->before_wait;
        t->before_wait = NULL;
        hook(t);
    }
    /* 1. Spin: only worth it when the peer has a core of its own
     *    (spin_iters is ~0 when members outnumber CPUs; the spin gate is
     *    closed while spins seldom end a wait). */
    uint64_t start = pgc_now_ns();
    if (t->spin_iters && start >= t->spin_gate.off_until) {
        for (uint64_t i = 0; i < t->spin_iters; i++) {
            pgc_cpu_relax();
            if (pgc_reached(atomic_load_explicit(word, memory_order_acquire), target)) {
                spin_gate_count(t, 1, start);
                return PGC_OK;
            }
        }
        spin_gate_count(t, 0, start);
        start = pgc_now_ns();
    }
    if ((rc = wait_broken(t, peer, target)))
        return rc;

    /* 2. Yield: hand the core to whoever must act next. */
    wait_clock clock;
    wait_clock_start(t, start, &clock);
    uint64_t yield_end = start + t->cfg.yield_ns;
    for (unsigned i = 1;; i++) {
        sched_yield();
        if (pgc_reached(atomic_load_explicit(word, memory_order_acquire), target))
            return PGC_OK;
        if ((i & 15) == 0) {
            if ((rc = wait_broken(t, peer, target)))
                return rc;
            if (pgc_now_ns() >= yield_end)
                break;
        }
    }

    /* 3. Sleep on the owner's doorbell, in slices, checking liveness,
     *    abort and the timeout between slices. */
    pgc_ctl *owner = pgc_ctl_of(t, peer);
    for (;;) {
        uint32_t bell = atomic_load_explicit(&owner->doorbell, memory_order_acquire);
        /* seq_cst RMW: pairs with the fence in pgc_publish (see there). */
        atomic_fetch_add_explicit(&owner->sleepers, 1, memory_order_seq_cst);
        int ready = pgc_reached(atomic_load_explicit(word, memory_order_seq_cst), target);
        uint64_t now = pgc_now_ns();
        if (!ready && !wait_broken(t, peer, target) && now < clock.deadline)
            futex_wait(&owner->doorbell, bell, wait_clock_slice(&clock, now));
        atomic_fetch_sub_explicit(&owner->sleepers, 1, memory_order_relaxed);
        if (ready || pgc_reached(atomic_load_explicit(word, memory_order_acquire), target))
            return PGC_OK;
        if ((rc = wait_broken(t, peer, target)))
            return rc;
        rc = wait_clock_tick(t, peer, &clock);
        if (rc == PGC_ETIMEDOUT) {
            uint64_t seen = atomic_load_explicit(word, memory_order_relaxed);
            pgc_set_error(&t->err, PGC_ETIMEDOUT, peer, 0,
                          "%s: timed out after %.1f s waiting for local rank %d (pid %d): "
                          "progress %u:%u, needed %u:%u (PGASCOL_TIMEOUT)",
                          pgc_current_coll_name(t), t->cfg.timeout_s, peer,
                          pgc_member_of(t, peer)->pid, (unsigned)(seen >> 32), (unsigned)seen,
                          (unsigned)(target >> 32), (unsigned)target);
            pgc_team_abort(t, PGC_ETIMEDOUT, t->err.msg);
        }
        if (rc)
            return rc;
    }
}

/* Left out of an instruction count, callees included (count.h). */
PGC_NOINLINE int pgc_wait_signed(pgc_team *t, int peer, uint32_t seq, uint64_t *sig)
{
    pgc_ctl *owner = pgc_ctl_of(t, peer);
    _Atomic uint64_t *slot = &owner->sig[seq & (PGC_SIG_RING - 1)];
    uint64_t start = pgc_now_ns(), yield_end = start + t->cfg.yield_ns;
    wait_clock clock;
    wait_clock_start(t, start, &clock);
    for (;;) {
        /* relaxed: the signature alone is read, nothing it orders */
        *sig = atomic_load_explicit(slot, memory_order_relaxed);
        if (pgc_sig_seqbyte(*sig) == (seq & 0xffu))
            return PGC_OK;
        /* acquire: pairs with the release of the peer's first publish in
         * collective seq or a later one, which its signature of seq precedes
         * (pgc_coll_sign): not there now, the slot was reused */
        if ((uint32_t)(atomic_load_explicit(&owner->progress, memory_order_acquire) >> 32) - seq < (1u << 31)) {
            *sig = atomic_load_explicit(slot, memory_order_relaxed);
            if (pgc_sig_seqbyte(*sig) != (seq & 0xffu))
                *sig = 0;
            return PGC_OK;
        }
        if (is_aborted(t))
            return aborted_error(t);
        uint64_t now = pgc_now_ns();
        if (now < yield_end) {
            sched_yield();
            continue;
        }
        /* Signing rings no doorbell: a slice at most (any publish of the
         * peer's, such as a refusal's DONE, wakes us sooner). seq_cst RMW:
         * as in pgc_wait_slow. */
        uint32_t bell = atomic_load_explicit(&owner->doorbell, memory_order_acquire);
        atomic_fetch_add_explicit(&owner->sleepers, 1, memory_order_seq_cst);
        if (now < clock.deadline)
            futex_wait(&owner->doorbell, bell, wait_clock_slice(&clock, now));
        atomic_fetch_sub_explicit(&owner->sleepers, 1, memory_order_relaxed);
        int rc = wait_clock_tick(t, peer, &clock);
        if (rc == PGC_ETIMEDOUT) {
            pgc_set_error(&t->err, PGC_ETIMEDOUT, peer, 0,
                          "timed out after %.1f s waiting for local rank %d (pid %d) to enter collective "
                          "number %u (PGASCOL_TIMEOUT)", t->cfg.timeout_s, peer, pgc_member_of(t, peer)->pid,
                          (unsigned)seq);
            pgc_team_abort(t, PGC_ETIMEDOUT, t->err.msg);
        }
        if (rc)
            return rc;
    }
}

int pgc_wait_step_all(pgc_team *t, uint32_t step)
{
    for (int r = 0; r < t->nranks; r++)
        if (r != t->rank) {
            int rc = pgc_wait_step(t, r, step);
            if (rc)
                return rc;
        }
    return PGC_OK;
}

int pgc_wait_ack_all(pgc_team *t, uint32_t step)
{
    for (int r = 0; r < t->nranks; r++)
        if (r != t->rank) {
            int rc = pgc_wait_ack(t, r, step);
            if (rc)
                return rc;
        }
    return PGC_OK;
}

void pgc_team_abort(pgc_team *t, int code, const char *msg)
{
    pgc_header *h = t->hdr;
    uint32_t expected = 0;
    if (atomic_compare_exchange_strong(&h->aborted, &expected, 1)) {
        t->abort_seq = t->seq;
        h->abort_rank = t->rank;
        h->abort_code = code;
        /* a member's message (pgc_error.msg) is longer than the header's: cut */
        snprintf(h->abort_msg, sizeof h->abort_msg, "%.*s", (int)sizeof h->abort_msg - 1, msg);
        /* release the reason before waking: sleepers re-read `aborted`
         * with acquire. */
        atomic_store_explicit(&h->aborted, 2, memory_order_release);
    }
    for (int r = 0; r < t->nranks; r++)
        pgc_ring_doorbell(pgc_ctl_of(t, r));
}

