/* sync.h - progress words, the waits on them, liveness and abort.
 *
 * A member publishes progress by storing (seq << 32) | step (see team.h)
 * into one of its own two words, progress and ack; peers wait until the word
 * reaches a target. A wait escalates: spin with a pause instruction (only
 * when the node's members fit its CPUs), then sched_yield (hands the core to
 * the member that must act next when members outnumber CPUs), then sleep on
 * a shared futex with a timeout. A publisher pays for a wake-up only when someone sleeps. While it
 * sleeps, a waiter checks that the member it waits for is alive and that the
 * team was not aborted, and calls the progress hook if one is set; it fails
 * after the team timeout. */
#ifndef PGC_SYNC_H
#define PGC_SYNC_H

#include "team/team.h"

/* The progress value of `step` of the collective in progress. */
static inline uint64_t pgc_progress(const pgc_team *t, uint32_t step)
{
    return ((uint64_t)t->seq << 32) | step;
}

/* Wrap-safe "value has reached target". */
static inline int pgc_reached(uint64_t value, uint64_t target)
{
    return (int64_t)(value - target) >= 0;
}

/* Store `value` into one of this member's words (release: everything written
 * before, e.g. staged data, is visible to a peer that sees the value), then
 * wake the sleepers, if any. */
void pgc_publish(pgc_team *t, _Atomic uint64_t *word, uint64_t value);
/* Wake every member asleep on c's doorbell (pgc_publish where c has sleepers,
 * pgc_team_abort). */
void pgc_ring_doorbell(pgc_ctl *c);

/* Wait until `word`, owned by member `peer`, reaches `target`. 0 or PGC_E*. */
int pgc_wait_slow(pgc_team *t, int peer, _Atomic uint64_t *word, uint64_t target);

/* Wait until `peer` signed collective `seq` (pgc_coll_sign, also as
 * refused or taken to MPI): *sig its signature of seq, 0 where the peer
 * got PGC_SIG_RING or more collectives further and reused the slot.
 * Signatures only, so a peer in the collective that waits for us is seen
 * too; bounded as pgc_wait_slow is (abort, liveness, timeout, the progress
 * hook while it sleeps). 0 or PGC_E*. */
int pgc_wait_signed(pgc_team *t, int peer, uint32_t seq, uint64_t *sig);

/* A process-wide hook called between the futex slices of a wait that sleeps
 * (never while it spins or yields, never in its first PGC_PROGRESS_EVERY_NS),
 * at most every PGC_PROGRESS_EVERY_NS;
 * slices are that short while one is set. The comm layer registers one that
 * makes MPI progress: a peer's MPI call (e.g. an RMA flush under MPICH) may
 * need this process to enter MPI before the peer can reach the collective we
 * wait in. NULL removes it. */
#define PGC_PROGRESS_EVERY_NS (2ull * 1000 * 1000)
void pgc_set_wait_progress(void (*hook)(void));

/* The peer's signature differs from ours in this slot: what differs is
 * classified, then reported (sync.c: classify_signature_difference,
 * report_signature_difference). Returns PGC_OK where nothing is wrong (the
 * same call, seen early), PGC_EREFUSED or PGC_EPEERREFUSED for a refusal
 * (the team stays usable), else PGC_EMISMATCH with the team aborted and a
 * message naming both calls. */
int pgc_signature_mismatch(pgc_team *t, int peer, uint64_t theirs);
/* Check the peer's signatures of the collectives since `last` (the seq of
 * our previous check of it) in which we did not wait on it. */
int pgc_check_skipped_signatures(pgc_team *t, int peer, uint32_t last);

/* Once per peer and collective, at the first wait that proves the peer has
 * begun this collective: check that it is in the same collective as we are (signatures:
 * team.h, written by pgc_coll_begin in coll.h). Catches ranks
 * whose calls went out of step (a rank that raised an error before entering
 * a collective the others entered) before any data is read or written. */
static inline int pgc_check_signature(pgc_team *t, int peer)
{
    uint32_t last = t->sig_checked[peer];
    t->sig_checked[peer] = t->seq;
    /* relaxed: the wait that got here acquired a value the peer published
     * after storing its signature for this collective. */
    uint64_t theirs = atomic_load_explicit(&pgc_ctl_of(t, peer)->sig[t->seq & (PGC_SIG_RING - 1)],
                                           memory_order_relaxed);
    /* A different seq byte: the peer is PGC_SIG_RING or more collectives
     * ahead and reused the slot; it got past this one, nothing left to check. */
    if (PGC_UNLIKELY(theirs != t->sig && pgc_sig_seqbyte(theirs) == pgc_sig_seqbyte(t->sig)))
        return pgc_signature_mismatch(t, peer, theirs);
    /* collectives in which we did not wait on this peer */
    if (PGC_UNLIKELY(last != t->seq - 1))
        return pgc_check_skipped_signatures(t, peer, last);
    return PGC_OK;
}

/* Whether we write nothing into the peer's buffer in this collective (a
 * Bcast root's push, coll_bcast.c): the peer states another basic type,
 * or refused the Bcast or Scatter(v) whose root we are, forwarding or
 * not. What a forwarding member takes from a peer of another type goes
 * on to other nodes; what it would put into such a peer's buffer is bytes
 * the peer refused (it took none of the head itself). */
static inline int pgc_peer_takes_nothing(const pgc_team *t, int peer)
{
    return PGC_UNLIKELY(t->end_pending & (PGC_END_TYPES | PGC_END_SKIP)) && t->skip_seq[peer] == t->seq;
}

/* Whether no bytes move between us and the peer in this collective,
 * neither into our buffer nor into its own (coll_bcast.c, coll_gather.c):
 * it states another basic type than we do (pgc_sig_types_only_differ), or
 * it refused the Bcast or Scatter(v) whose root we are. Asked only after a
 * wait on the peer in this collective, whose signature check recorded it
 * (pgc_signature_mismatch, sync.c). From our record rather than the peer's
 * signature word: a peer that waits for nobody may run PGC_SIG_RING
 * collectives ahead and reuse that slot in between. A member that forwards
 * what it takes beyond the team (t->forwards) takes it all the same. A
 * correct call tests one word it tests anyway (pgc_coll_end). */
static inline int pgc_peer_skipped(const pgc_team *t, int peer)
{
    return pgc_peer_takes_nothing(t, peer) && !t->forwards;
}

static inline int pgc_wait_word(pgc_team *t, int peer, _Atomic uint64_t *word, uint64_t target)
{
    /* acquire: pairs with the release in pgc_publish, so what the peer wrote
     * before publishing is visible after this returns. */
    if (PGC_UNLIKELY(!pgc_reached(atomic_load_explicit(word, memory_order_acquire), target))) {
        int rc = pgc_wait_slow(t, peer, word, target);
        if (rc)
            return rc;
    }
    /* target in this collective first: the compiler folds it where the
     * target is pgc_progress(t, step) */
    if ((uint32_t)(target >> 32) == t->seq && PGC_UNLIKELY(t->sig_checked[peer] != t->seq))
        return pgc_check_signature(t, peer);
    return PGC_OK;
}

/* The common cases: steps of the collective in progress on the progress
 * and ack words. */
static inline void pgc_post_step(pgc_team *t, uint32_t step)
{
    pgc_publish(t, &pgc_ctl_of(t, t->rank)->progress, pgc_progress(t, step));
}
static inline void pgc_post_ack(pgc_team *t, uint32_t step)
{
    pgc_publish(t, &pgc_ctl_of(t, t->rank)->ack, pgc_progress(t, step));
}
static inline int pgc_wait_step(pgc_team *t, int peer, uint32_t step)
{
    return pgc_wait_word(t, peer, &pgc_ctl_of(t, peer)->progress, pgc_progress(t, step));
}
static inline int pgc_wait_ack(pgc_team *t, int peer, uint32_t step)
{
    return pgc_wait_word(t, peer, &pgc_ctl_of(t, peer)->ack, pgc_progress(t, step));
}

/* Wait for every other member's progress (or ack) to reach `step` of the
 * collective in progress. */
int pgc_wait_step_all(pgc_team *t, uint32_t step);
int pgc_wait_ack_all(pgc_team *t, uint32_t step);

/* Is member r alive (its process exists, is not a zombie, and is the same
 * process that attached: base/proc.h)? */
int pgc_member_alive(const pgc_team *t, int r);

/* Give up on the team: record why and wake every sleeper. Every member's
 * next or current wait fails with PGC_EABORTED. */
void pgc_team_abort(pgc_team *t, int code, const char *msg);

/* PGC_EABORTED (with the aborting member's reason) if the team was aborted. */
int pgc_check_aborted(pgc_team *t);

/* Check member r (a no-op for ourselves) or every peer; on a dead one,
 * abort the team and return PGC_EPEERDEAD. Waits check only the member they
 * wait for (pgc_wait_slow). */
int pgc_check_peer(pgc_team *t, int r);
int pgc_check_peers(pgc_team *t);


#endif
