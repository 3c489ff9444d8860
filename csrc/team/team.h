/* team.h - a node team: the processes of one node sharing one segment.
 *
 * Segment layout (every part cache-line aligned, staging page aligned):
 *
 *   header page   pgc_header: geometry, team-wide parameters, abort line,
 *                 measured transfer costs (pgc_costs)
 *   members       per rank: pgc_ctl (hot progress line, written by its owner),
 *                 pgc_member (identity, written once), pgc_desc (descriptor
 *                 words), PGC_RUNAHEAD inline slots
 *   staging       per rank: staging_bytes for copy-in/copy-out pipelines
 *
 * Every control word is written by exactly one rank (its owner), except the
 * futex `sleepers` counters and the abort line. Every collective a member
 * begins gets the next sequence number, `seq` (pgc_team.seq), and progress
 * is expressed as (seq << 32) | step: no word is ever reset, so a stale value
 * can never be mistaken for a fresh one. */
#ifndef PGC_TEAM_H
#define PGC_TEAM_H

#include <stdatomic.h>

#include "base/common.h"
#include "base/reduce_ops.h"
#include "base/segment.h"

#define PGC_MAGIC 0x316c6f6373616770ull /* "pgascol1" */
#define PGC_LAYOUT_VERSION 19
/* The largest inline slot (PGASCOL_INLINE_MAX is capped to it): PGC_RUNAHEAD
 * of them per member, 512 KiB. Below a pipeline chunk, copy-in/copy-out
 * copies as often as inline but adds its protocol (docs/PERFORMANCE.md,
 * "Inline up to 8 KiB"). */
#define PGC_INLINE_SLOT_MAX 8192

/* The last step of every collective: "this member is done with collective
 * k" (seq k). A member that has posted (k, DONE) no longer reads anyone's
 * staging, inline slots or buffers of collective k. A new member starts as
 * done with seq 0. */
#define PGC_STEP_DONE 0xffffffffu

/* How far a member may run ahead of its slowest reader: the inline slots and
 * the descriptor words of seq k are reused by seq k + PGC_RUNAHEAD, so a
 * member writes them only once every peer is done with seq k - PGC_RUNAHEAD
 * (a root of back-to-back small Bcasts/Reduces keeps going while readers
 * catch up). A power of two. */
#define PGC_RUNAHEAD 64

/* How many of its last collectives' signatures a member keeps in its hot
 * line (see pgc_coll_begin in coll.h). A power of two. */
#define PGC_SIG_RING 4

/* The collectives: the one list of them. Their ids index the statistics,
 * the per-collective thresholds and the signatures; pgc_coll_name gives
 * their names, and pgascol.engine's COLLECTIVES is read from here. */
typedef enum {
    PGC_COLL_BARRIER, PGC_COLL_BCAST, PGC_COLL_REDUCE, PGC_COLL_ALLREDUCE,
    PGC_COLL_GATHER, PGC_COLL_GATHERV, PGC_COLL_SCATTER, PGC_COLL_SCATTERV,
    PGC_COLL_ALLGATHER, PGC_COLL_ALLGATHERV, PGC_COLL_ALLTOALL, PGC_COLL_ALLTOALLV,
    PGC_COLL_REDUCE_SCATTER, PGC_COLL_REDUCE_SCATTER_BLOCK, PGC_COLL_SCAN, PGC_COLL_EXSCAN,
    /* UPC's collectives on global arrays (csrc/upc/, pgascol.upc) */
    PGC_COLL_UPC_BROADCAST, PGC_COLL_UPC_SCATTER, PGC_COLL_UPC_GATHER, PGC_COLL_UPC_GATHER_ALL,
    PGC_COLL_UPC_EXCHANGE, PGC_COLL_UPC_PERMUTE, PGC_COLL_UPC_REDUCE, PGC_COLL_UPC_PREFIX_REDUCE,
    PGC_NCOLL
} pgc_coll;

/* "Barrier", "Bcast", ...: a collective's name, for messages ("?" for an
 * id out of range). Data in this header, so that every layer may name the
 * collective in progress without calling the layer that runs it. */
static inline const char *pgc_coll_name(pgc_coll coll)
{
    static const char *const names[PGC_NCOLL] = {
        [PGC_COLL_BARRIER] = "Barrier", [PGC_COLL_BCAST] = "Bcast",
        [PGC_COLL_REDUCE] = "Reduce", [PGC_COLL_ALLREDUCE] = "Allreduce",
        [PGC_COLL_GATHER] = "Gather", [PGC_COLL_GATHERV] = "Gatherv",
        [PGC_COLL_SCATTER] = "Scatter", [PGC_COLL_SCATTERV] = "Scatterv",
        [PGC_COLL_ALLGATHER] = "Allgather", [PGC_COLL_ALLGATHERV] = "Allgatherv",
        [PGC_COLL_ALLTOALL] = "Alltoall", [PGC_COLL_ALLTOALLV] = "Alltoallv",
        [PGC_COLL_REDUCE_SCATTER] = "Reduce_scatter",
        [PGC_COLL_REDUCE_SCATTER_BLOCK] = "Reduce_scatter_block",
        [PGC_COLL_SCAN] = "Scan", [PGC_COLL_EXSCAN] = "Exscan",
        [PGC_COLL_UPC_BROADCAST] = "upc_all_broadcast", [PGC_COLL_UPC_SCATTER] = "upc_all_scatter",
        [PGC_COLL_UPC_GATHER] = "upc_all_gather", [PGC_COLL_UPC_GATHER_ALL] = "upc_all_gather_all",
        [PGC_COLL_UPC_EXCHANGE] = "upc_all_exchange", [PGC_COLL_UPC_PERMUTE] = "upc_all_permute",
        [PGC_COLL_UPC_REDUCE] = "upc_all_reduce", [PGC_COLL_UPC_PREFIX_REDUCE] = "upc_all_prefix_reduce",
    };
    return (unsigned)coll < PGC_NCOLL && names[coll] ? names[coll] : "?";
}

/* Transfer methods ("paths"). */
typedef enum { PGC_PATH_INLINE, PGC_PATH_CICO, PGC_PATH_CMA, PGC_NPATH } pgc_path;

/* How a single copy moved (pgc_team.single_copies). */
typedef enum { PGC_COPY_KERNEL, PGC_COPY_SHARED, PGC_NCOPY } pgc_copy_kind;

/* Transfers whose cost the team measures while it works (pgc_costs):
 * copying into one's own staging, copying out of a peer's staging (the
 * cross-core step of copy-in/copy-out), single copy, and copying into
 * one's own staging with streaming stores (pgc_copy_stream, copy.h). */
typedef enum { PGC_XFER_STAGE, PGC_XFER_COPYOUT, PGC_XFER_CMA, PGC_XFER_STREAM, PGC_NXFER } pgc_xfer;

/* Team-wide parameters. The creating rank's values are stored in the header
 * and adopted by every member, so all members choose the same method for the
 * same call. */
typedef struct pgc_config {
    double timeout_s;         /* a wait longer than this fails (PGASCOL_TIMEOUT) */
    uint64_t spin_ns;         /* busy-wait budget before yielding */
    uint64_t yield_ns;        /* sched_yield budget before sleeping on the futex */
    uint64_t inline_max;      /* payloads up to this size travel in the inline slots */
    uint64_t staging_bytes;   /* per-rank staging area for copy-in/copy-out */
    uint64_t chunk_bytes;     /* pipeline chunk of copy-in/copy-out Bcast */
    uint64_t xchg_chunk_bytes; /* chunk of the exchange ring (Gather/Scatter/Allgather/Alltoall(v)) */
    uint64_t cma_min[PGC_NCOLL]; /* single copy from this many bytes on (UINT64_MAX: never) */
    uint32_t hugepages;       /* advise huge pages for the segment */
    uint32_t named_segment;   /* a /dev/shm name instead of a memfd (segment.h) */
    uint32_t cma_enable;      /* 0 forces single copy off */
    uint32_t bcast_tree_min;  /* Bcast uses a k-nomial tree from this team size on (0: never) */
    uint32_t bcast_radix;     /* k of that tree (>= 2) */
    uint32_t adapt_mask;      /* collectives (1 << id) whose path follows the measured costs */
    uint64_t adapt_min;       /* ... for payloads of this many bytes or more */
    uint32_t reduce_one_window; /* reductions whose blocks fit one window of the whole staging
                                 * area take it (no double buffering): oversubscribed teams */
    uint32_t stream;          /* staging written with streaming stores: 0 never, 1 while measured
                               * much cheaper (pgc_stage_xfer), 2 always */
    uint32_t simd;            /* 1: copies and reduction kernels use the widest loops the CPU
                               * runs (pgc_simd_of_cpu), 0: the baseline ones */
    uint64_t recv_stream_min; /* an exchange member writes its receive buffer with streaming
                               * stores once a block reaches this many bytes (coll_gather.c;
                               * 0: never) */
} pgc_config;

/* A member's control lines: written by its owner only (sleepers excepted).
 * The first is the hot one: progress, the doorbell and the signatures, so
 * that the check of a peer's signature costs a reader no extra cache miss
 * and the owner no extra store miss. The buffer addresses, published only
 * by the paths that move more than an inline slot, come on the second. */
typedef struct pgc_ctl {
    _Atomic uint64_t progress;  /* owner's progress: (seq << 32) | step */
    _Atomic uint64_t ack;       /* second progress word (acknowledgements), same encoding */
    _Atomic uint32_t doorbell;  /* futex word, bumped after progress/ack change when someone sleeps */
    _Atomic uint32_t sleepers;  /* members asleep on doorbell (written by the sleepers) */
    /* Signatures of the owner's last PGC_SIG_RING collectives, seq k in
     * slot k % PGC_SIG_RING. */
    _Atomic uint64_t sig[PGC_SIG_RING];
    /* (seq << 32) | PGC_GAVE_UP | refuser: the owner gave collective seq up
     * because member `refuser` refused it (give_up, coll.c); read
     * only by waits that found the owner behind (pgc_wait_slow). */
    _Atomic uint64_t gave_up;
    _Atomic uint64_t addr __attribute__((aligned(PGC_CACHELINE))); /* published user-buffer address (single copy) */
    _Atomic uint64_t out_addr;  /* a second one: a reduction's receive buffer */
} __attribute__((aligned(PGC_CACHELINE))) pgc_ctl;

#define PGC_GAVE_UP (1ull << 31)

/* A member's identity, written once when it attaches. */
typedef struct pgc_member {
    int32_t pid;
    _Atomic uint32_t attached;
    uint64_t starttime;     /* /proc/<pid>/stat field 22: tells a reused pid apart */
    uint64_t probe_addr;    /* address of a word in private memory, for the CMA probe */
} __attribute__((aligned(PGC_CACHELINE))) pgc_member;

/* A member's descriptors (size, path: what readers check before reading),
 * one word per seq modulo PGC_RUNAHEAD; see pgc_desc_of in coll.h. */
typedef struct pgc_desc {
    _Atomic uint64_t word[PGC_RUNAHEAD];
} __attribute__((aligned(PGC_CACHELINE))) pgc_desc;

/* The team's measured transfer costs, in picoseconds per byte (0: not
 * measured yet), shared by its members: a member folds in what its
 * collective measured (pgc_coll_end), and reads them when it chooses between
 * copy-in/copy-out and single copy (pgc_choose_member_path, coll.c). Updated
 * without locks: they are estimates, and a lost update only delays one. */
typedef struct pgc_costs {
    _Atomic uint32_t ps_per_byte[PGC_NXFER];
    _Atomic uint64_t measured_ns[PGC_NXFER]; /* when each was last folded in */
    _Atomic uint64_t probe_ns;               /* when a member last called for a probe */
    _Atomic uint64_t probe;                  /* the last probe: (first seq << 32) | path; 0 once judged */
    _Atomic uint32_t probe_backoff;          /* probes are pgc_probe_interval_ns(this) apart (coll.h) */
} __attribute__((aligned(PGC_CACHELINE))) pgc_costs;

typedef struct pgc_header {
    uint64_t magic;
    uint32_t version;
    uint32_t nranks;
    uint64_t size;
    uint64_t members_offset, member_stride, inline_slot;
    uint64_t staging_offset, staging_stride;
    pgc_config cfg;
    /* Abort line: set once by the first member that gives up on the team. */
    _Atomic uint32_t aborted __attribute__((aligned(PGC_CACHELINE)));
    int32_t abort_rank;
    int32_t abort_code;
    char abort_msg[256];
    pgc_costs costs;
    /* Arrival words of the UPC collectives whose last member to arrive
     * makes the copies (csrc/upc/upc_run.c: arrive), one per seq modulo
     * PGC_RUNAHEAD, shared by every member. */
    _Atomic uint64_t arrivals[PGC_RUNAHEAD] __attribute__((aligned(PGC_CACHELINE)));
} pgc_header;

/* pgc_team.end_pending's bits. */
#define PGC_END_FOLD 1u  /* the collective timed copies: fold them into the costs (pgc_costs_fold) */
#define PGC_END_TYPES 2u /* a peer stated another basic type (pgc_signature_mismatch, sync.c): the
                          * collective ends with PGC_ETYPE, t->err says which */
#define PGC_END_SKIP 4u  /* a reader of the Bcast or Scatter(v) whose root this member is refused it
                          * (pgc_signature_mismatch): skipped (t->skip_seq), the call completes */

typedef struct pgc_team {
    pgc_segment seg;
    pgc_header *hdr;
    int rank, nranks;
    uint32_t seq;               /* sequence number: collectives begun on this team */
    uint64_t sig;               /* signature of the collective in progress (coll.h: pgc_coll_begin) */
    uint64_t sig_elems;         /* a reduction's element count, for mismatch messages */
    uint32_t abort_seq;         /* the seq in which this member aborted the team */
    uint32_t *sig_checked;      /* per member: the last seq whose signature we checked */
    uint32_t *skip_seq;         /* per member: the last seq in which we move no bytes with it
                                 * (pgc_peer_skipped, sync.h): our check found it stating another
                                 * basic type, or refusing the Bcast or Scatter(v) whose root we
                                 * are (pgc_signature_mismatch, sync.c) */
    /* This member passes what its collectives bring it beyond the team (a
     * hierarchical call's node leader: set by the comm layer's Team while
     * it holds a leg's errors, _core.pyx): it takes bytes from a peer of
     * another basic type too (pgc_peer_skipped, sync.h), for the
     * members of other nodes, whose types the hierarchy compares. */
    int forwards;
    /* A peer's refusal of a collective that is no root's aborts the team
     * instead of ending the collective on the members that need the peer
     * (give_up, coll.c): set by the comm layer for a hierarchy's node
     * team, whose members wait for each other in further legs of the call. */
    int refusals_abort;
    /* The path the comm layer's tuner chose for the next collectives
     * (pgascol/comm/tune.pxi): PGC_PATH_CICO or PGC_PATH_CMA, PGC_HINT_MPI
     * (MPI's own collective: pgc_coll_begin agrees on it with the peers and
     * the call returns PGC_ON_MPI), or 0 (PGC_PATH_INLINE: no choice, the
     * thresholds and the measured costs decide). Private to the member, set
     * and cleared around one call; every member of the call sets the same one
     * (the tuner's schedule and its decisions are the same on every rank),
     * which Bcast needs (its root and readers must agree on the path) and the
     * others tolerate (readers follow each sender's announced path). Inline
     * payloads stay inline. hint_bytes: the call's bytes as the tuner counts
     * them, the same on every member of a correct call (the MPI hint's
     * agreement compares them). */
    int path_hint;
    size_t hint_bytes;
    pgc_config cfg;             /* copy of hdr->cfg */
    pgc_simd simd;              /* the loops this member copies and reduces with (cfg.simd) */
    uint64_t spin_iters;        /* spin budget in pause instructions */
    /* Whether spinning pays (sync.c: spin_gate_count): of the last waits
     * that spun, how many the spin ended; while a window of them showed
     * that it seldom does, waits skip the spin until off_until. */
    struct pgc_spin_gate {
        uint32_t spun, ended;   /* in the current window */
        uint64_t off_until;     /* pgc_now_ns() before which waits do not spin */
        uint64_t hold_ns;       /* the next hold (0: the shortest) */
        uint64_t offs;          /* windows that turned the spin off */
    } spin_gate;
    uint64_t liveness_next_ns;  /* next time a waiting member checks its peers */
    int cma_ok;                 /* single copy works between all members */
    char cma_reason[320];       /* why not, when it does not */
    /* Where a reduction's block owner pulls the pieces of members that
     * exposed their buffers (reduce.c): staging_bytes / 2, private,
     * allocated with single copy (pgc_team_probe_cma) or with the first
     * shared region (region.h). */
    char *pull_buf;
    /* The shared regions every member maps (region.h): a private table,
     * changed only collectively. */
    struct pgc_region *regions;
    int nregions, regions_cap;
    pgc_error err;              /* last error of this process on this team */
    uint64_t stats[PGC_NCOLL][PGC_NPATH];
    /* Single copies this member made (pgc_coll_cma), by how: the kernel's
     * process_vm_readv/writev, or a user-space copy through a shared region. */
    uint64_t single_copies[PGC_NCOPY];
    int stats_paused;           /* calls made on behalf of a caller's own operation are not counted */
    /* What the collective in progress measured, per transfer: the best
     * (lowest) picoseconds per byte of its timed copies, 0: none; folded
     * into hdr->costs by pgc_coll_end. */
    uint32_t xfer_best[PGC_NXFER];
    /* What pgc_coll_end (coll.h) must do besides posting DONE, PGC_END_*:
     * one word, so that a collective with nothing more to do tests one. */
    unsigned end_pending;
    /* The basic type (pgc_dtype) the peer stated in the last PGC_ETYPE
     * this member met (pgc_signature_mismatch, sync.c; read only after
     * one): on a hierarchy, a Bcast's root type as the root's node's
     * leader saw it. */
    int basic_seen;
    uint32_t xfer_seen;         /* transfers this member measured before (1 << pgc_xfer) */
    uint64_t stream_probe_ns;   /* when this member last staged the other way to re-measure it */
    /* Called once, by the first wait of a call that may block, then cleared:
     * a caller may enter a short call holding a lock others need (the
     * Python GIL, pgascol/engine/_core.pyx) and give it up only if it must wait. */
    void (*before_wait)(struct pgc_team *t);
    void *before_wait_state;    /* the hook's (the released thread state) */
} pgc_team;

/* Create the team's segment (rank 0 of the node) or attach to it (the
 * others, with the name rank 0 published). Returns NULL with *err set on
 * failure. */
pgc_team *pgc_team_create(int rank, int nranks, const pgc_config *cfg, pgc_error *err);
pgc_team *pgc_team_attach(int rank, int nranks, const char *name, pgc_error *err);
/* Once every member has attached: nobody else may attach (segment.h:
 * the name is removed, or the memfd closed). */
int pgc_team_release(pgc_team *t);
/* Check that every member has attached (after an external barrier). */
int pgc_team_check_attached(pgc_team *t);
/* Remove segments of ours in /dev/shm whose members are all dead: left by a
 * job killed between creating its segment and removing the name (a window of
 * milliseconds at set-up). Returns how many were removed. */
int pgc_team_sweep_stale(void);
/* Unmap and free. Safe on NULL. */
void pgc_team_destroy(pgc_team *t);

/* Single-copy probe: read one word of private memory from the next member.
 * Returns 1 if it worked; otherwise 0 with the reason in t->cma_reason. The
 * caller combines the answers of all members (any failure disables CMA for
 * the team) and records the outcome with pgc_team_set_cma. */
int pgc_team_probe_cma(pgc_team *t);
void pgc_team_set_cma(pgc_team *t, int ok, const char *reason);

/* Collective signatures (written by pgc_coll_begin in coll.h, checked by the
 * waits in sync.h). A signature names what every member must agree on for
 * one collective: which one, and its root, or its datatype, operator and
 * shape; its top byte is the sequence number's low byte, so a slot reused
 * by a later collective is recognised. Layout (64 bits): seq byte (8) |
 * kind (6: collective, refused bit) | argument (50). */
#define PGC_SIG_REFUSED 0x20u /* kind bit: the member refused its arguments (pgc_coll_refuse) */
#define PGC_SIG_ARG_BITS 50
#define PGC_SIG_ARG_MASK ((1ull << PGC_SIG_ARG_BITS) - 1)
#define PGC_SIG_ARG_MPI PGC_SIG_ARG_MASK /* with PGC_SIG_REFUSED: it took the collective to MPI (pgc_coll_to_mpi) */
/* What takes a call to MPI, in the messages that say so. */
#define PGC_TO_MPI_WHY "arguments pgascol does not accelerate, such as an object without the buffer protocol or a " \
                       "user-defined operator"
/* The tuner's hint to run a call on MPI (pgc_team.path_hint; not a pgc_path:
 * the engine's counters have no row for it). */
#define PGC_HINT_MPI 3
/* A call agreed on MPI (pgc_coll_agree_mpi) states its size class,
 * floor(log2(bytes)) capped to 31, in argument bits 45-49, which only the
 * reductions use (their shape states the count exactly): a member whose call
 * is of another class took another path, and the signatures tell. */
#define PGC_SIG_CLASS_SHIFT 45
static inline uint64_t pgc_sig_class_bits(size_t bytes)
{
    int k = bytes > 1 ? 63 - __builtin_clzll((unsigned long long)bytes) : 0;
    return (uint64_t)(k > 31 ? 31 : k) << PGC_SIG_CLASS_SHIFT;
}
static inline uint64_t pgc_sig_make(uint32_t seq, uint32_t kind, uint64_t arg)
{
    return (uint64_t)(seq & 0xffu) << 56 | (uint64_t)(kind & 0x3fu) << PGC_SIG_ARG_BITS | (arg & PGC_SIG_ARG_MASK);
}
static inline uint32_t pgc_sig_seqbyte(uint64_t sig)
{
    return (uint32_t)(sig >> 56);
}
static inline uint32_t pgc_sig_kind(uint64_t sig)
{
    return (uint32_t)(sig >> PGC_SIG_ARG_BITS) & 0x3fu;
}
static inline pgc_coll pgc_sig_coll(uint64_t sig)
{
    return (pgc_coll)(pgc_sig_kind(sig) & ~PGC_SIG_REFUSED);
}
static inline uint64_t pgc_sig_arg(uint64_t sig)
{
    return sig & PGC_SIG_ARG_MASK;
}
/* The collectives signed PGC_SIG_ROOTED (below): root and basic type. */
static inline int pgc_sig_rooted(pgc_coll coll)
{
    return coll == PGC_COLL_BCAST || coll == PGC_COLL_GATHER || coll == PGC_COLL_GATHERV ||
           coll == PGC_COLL_SCATTER || coll == PGC_COLL_SCATTERV;
}
/* The reductions, signed PGC_SIG_REDUCTION (below). */
static inline int pgc_sig_reduction(pgc_coll coll)
{
    return coll == PGC_COLL_REDUCE || coll == PGC_COLL_ALLREDUCE || coll == PGC_COLL_REDUCE_SCATTER ||
           coll == PGC_COLL_REDUCE_SCATTER_BLOCK || coll == PGC_COLL_SCAN || coll == PGC_COLL_EXSCAN;
}
/* The size class a signature states (pgc_sig_class_bits; 0: none, the
 * engine's own paths). Not in a reduction's, nor in a UPC collective's,
 * whose argument is a hash of all its bits. */
static inline int pgc_sig_class(uint64_t sig)
{
    pgc_coll coll = pgc_sig_coll(sig);
    return pgc_sig_reduction(coll) || coll >= PGC_COLL_UPC_BROADCAST
               ? 0 : (int)(pgc_sig_arg(sig) >> PGC_SIG_CLASS_SHIFT & 0x1fu);
}
/* Collectives whose root's refusal (pgc_coll_refuse) ends the call on
 * every member, with PGC_EREFUSED and the root's reason, the team usable:
 * every member's result needs the root, and none waits on a member that
 * could not tell. Gather(v), Scatter(v): no member but the root waits on
 * another. Bcast: a reader waits on the root, or in a tree on a relay that
 * ended the call the same way and posted DONE; it then finds the root's
 * descriptor saying "refused" (bcast.c, check_root_desc). In any other
 * collective a refusal aborts the team (pgc_signature_mismatch, sync.c),
 * since members that wait on each other could not all tell. */
static inline int pgc_root_refusal_ends_call(pgc_coll coll)
{
    return pgc_sig_rooted(coll);
}
/* Whether a and b are the same collective up to the v form (a hierarchical
 * Scatter's node leg is a Scatterv). */
static inline int pgc_same_family(pgc_coll a, pgc_coll b)
{
    return a == b || (a == PGC_COLL_GATHER && b == PGC_COLL_GATHERV) ||
           (a == PGC_COLL_GATHERV && b == PGC_COLL_GATHER) || (a == PGC_COLL_SCATTER && b == PGC_COLL_SCATTERV) ||
           (a == PGC_COLL_SCATTERV && b == PGC_COLL_SCATTER);
}
/* A rooted collective's signature argument (Bcast, Gather(v), Scatter(v)):
 * the root (32 bits) and the basic type of the member's elements (5 bits:
 * pgc_dtype + 1, 0 where the caller states none, as the inner legs of
 * other collectives do). The engine moves bytes, so members whose byte
 * counts agree would otherwise never see that the root sends MPI.INT x 2n
 * where the others receive MPI.DOUBLE x n (an erroneous program to MPI):
 * folded into the word every member already publishes, the check costs
 * nothing more. */
#define PGC_SIG_BASIC_MASK (0x1full << 40)
#define PGC_SIG_ROOTED(dtype, root) ((uint64_t)(((dtype) + 1) & 0x1f) << 40 | (uint32_t)(root))
#define PGC_SIG_ROOT(arg) ((int)(uint32_t)(arg))
#define PGC_SIG_BASIC(arg) ((int)((arg) >> 40 & 0x1f) - 1) /* a pgc_dtype, or -1: not stated */
/* Two signatures of one rooted collective that differ in the basic type
 * only (same seq, collective and root; neither refused). The byte counts
 * decide what moves, and no member waits on data a peer of another type
 * withholds, so the collective completes as under MPI (which compares no
 * type signatures) and the members that see the difference end it with
 * PGC_ETYPE, the team usable (pgc_signature_mismatch, sync.c). */
static inline int pgc_sig_types_only_differ(uint64_t a, uint64_t b)
{
    pgc_coll coll = pgc_sig_coll(a);
    return a != b && ((a ^ b) & ~PGC_SIG_BASIC_MASK) == 0 && !(pgc_sig_kind(a) & PGC_SIG_REFUSED) &&
           pgc_sig_rooted(coll);
}
/* A reduction's signature argument: datatype (4 bits), operator (4 bits)
 * and its shape (42 bits: pgc_sig_shape), so members that reduce different
 * counts (or Reduce to different roots, or split Reduce_scatter's vector
 * otherwise) fail with PGC_EMISMATCH instead of folding garbage: nothing
 * else would tell them, since every member splits the vector by its own
 * count. */
#define PGC_SIG_SHAPE_BITS 42
#define PGC_SIG_REDUCTION(dtype, op, shape) \
    (((uint64_t)(dtype) & 0xfu) << 46 | ((uint64_t)(op) & 0xfu) << PGC_SIG_SHAPE_BITS | \
     ((shape) & ((1ull << PGC_SIG_SHAPE_BITS) - 1)))
#define PGC_SIG_DTYPE(arg) ((pgc_dtype)((arg) >> 46 & 0xfu))
#define PGC_SIG_OP(arg) ((pgc_op)((arg) >> PGC_SIG_SHAPE_BITS & 0xfu))
/* The shape of a reduction of `total` elements (to `root`, a Reduce's, or
 * 0) on a team of n members, exactly: total * n + root while that is below
 * 2^41 (2 TiB of int8: no node's memory holds such a vector), so two
 * members whose counts or roots differ always sign differently; beyond, a
 * hash with the top bit set. Reduce_scatter's recvcounts do not fit a word:
 * the shape states their sum, and the members compare the block bounds
 * themselves, in full, before reading each other's data (rs_check_bounds,
 * reduce.c). */
static inline uint64_t pgc_sig_mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    return h ^ h >> 29;
}
static inline uint64_t pgc_sig_shape(uint64_t total, uint64_t root, uint64_t n)
{
    const uint64_t exact_max = 1ull << (PGC_SIG_SHAPE_BITS - 1);
    /* every factor below 2^20 (the common case, without a division):
     * total * n + root < 2^40 + 2^20 */
    if (((total | n) >> 20) == 0 && root < n)
        return total * n + root;
    if (n && total < (exact_max - root) / n)
        return total * n + root;
    return exact_max | (pgc_sig_mix(pgc_sig_mix(pgc_sig_mix(0, total), root), n) & (exact_max - 1));
}
/* A UPC collective's signature argument is an 18-bit hash of what its
 * members must agree on (root, nbytes, flags, algorithm, operator, counts:
 * pgascol/upc computes it), so members that disagree fail with
 * PGC_EMISMATCH at their first wait on each other. */

/* The collective in progress (or last run), for messages. */
static inline const char *pgc_current_coll_name(const pgc_team *t)
{
    return t->seq ? pgc_coll_name(pgc_sig_coll(t->sig)) : "pgascol";
}

static inline pgc_ctl *pgc_ctl_of(const pgc_team *t, int r)
{
    return (pgc_ctl *)((char *)t->seg.base + t->hdr->members_offset + (size_t)r * t->hdr->member_stride);
}
static inline pgc_member *pgc_member_of(const pgc_team *t, int r)
{
    return (pgc_member *)((char *)pgc_ctl_of(t, r) + sizeof(pgc_ctl));
}
static inline pgc_desc *pgc_desc_line_of(const pgc_team *t, int r)
{
    return (pgc_desc *)((char *)pgc_member_of(t, r) + sizeof(pgc_member));
}
/* Inline slots rotate with the sequence number (PGC_RUNAHEAD of them), so a
 * member may write seq k's slot while slow peers still read earlier ones. */
static inline void *pgc_inline_of(const pgc_team *t, int r, uint32_t seq)
{
    return (char *)pgc_desc_line_of(t, r) + sizeof(pgc_desc) +
           (size_t)(seq & (PGC_RUNAHEAD - 1)) * t->hdr->inline_slot;
}
static inline void *pgc_staging_of(const pgc_team *t, int r)
{
    return (char *)t->seg.base + t->hdr->staging_offset + (size_t)r * t->hdr->staging_stride;
}

#endif
