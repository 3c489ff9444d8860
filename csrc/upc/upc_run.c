/* upc_run.c - the program of a member's share of a UPC collective inside a
 * node (upc.h). Phases as in coll.h: check (the program), begin
 * (pgc_coll_begin), start (POST ENTERED), work (WAITs, COPYs, folds, chunk
 * POSTs), end (pgc_coll_end, posting DONE) and the OUT waits after it. */
#include "upc/upc.h"

#include <string.h>

#include "coll/coll.h"

/* The largest element (long double): a FOLD's temporary. */
typedef union { long double ld; uint64_t u[2]; } element;

/* Whether address operand v (of `width` bytes) is an address, or a range
 * inside a member's partial-result area. */
static int operand_ok(const pgc_team *t, uint64_t v, uint64_t width)
{
    if (!(v & PGC_UPC_SLOT))
        return 1;
    uint64_t member = (v & ~PGC_UPC_SLOT) >> 32, offset = v & 0xffffffffu;
    return member < (uint64_t)t->nranks && offset + width <= t->hdr->inline_slot;
}

static int step_ok(const pgc_team *t, const pgc_upc_step *s, size_t left, int *op, int *dtype)
{
    size_t item = *op >= 0 ? pgc_dtype_size((pgc_dtype)*dtype) : 0;
    uint64_t n = s->c & ~PGC_UPC_INTO;
    switch (s->kind) {
    case PGC_UPC_COPY:
        return operand_ok(t, s->a, s->c) && operand_ok(t, s->b, s->c);
    case PGC_UPC_END:
        return 1;
    case PGC_UPC_ARRIVE:      /* the steps it skips are the program's; the count fits 16 bits */
        return s->a < left && t->nranks <= 0xffff;
    case PGC_UPC_POST:
        return s->a >= PGC_UPC_ENTERED && s->a < PGC_STEP_DONE;
    case PGC_UPC_WAIT:
        return (s->a == PGC_UPC_ALL || (s->a < (uint64_t)t->nranks && s->a != (uint64_t)t->rank)) &&
               s->b >= PGC_UPC_ENTERED && s->b <= PGC_STEP_DONE;
    case PGC_UPC_OPTYPE:
        if (s->a >= PGC_UPC_NOPS || s->b >= PGC_NDTYPES || !pgc_upc_op_valid((pgc_upc_op)s->a, (pgc_dtype)s->b))
            return 0;
        *op = (int)s->a, *dtype = (int)s->b;
        return 1;
    case PGC_UPC_FOLD:
        return item && n && operand_ok(t, s->a, item) && operand_ok(t, s->b, n * item);
    case PGC_UPC_SCAN:
        return item && operand_ok(t, s->a, s->c * item) && operand_ok(t, s->b, s->c * item);
    case PGC_UPC_LEFT:
        return item && operand_ok(t, s->a, s->c * item) && operand_ok(t, s->b, item);
    }
    return 0;
}

static int check_program(pgc_team *t, pgc_coll coll, const pgc_upc_step *prog, size_t n)
{
    if (coll < PGC_COLL_UPC_BROADCAST || coll > PGC_COLL_UPC_PREFIX_REDUCE)
        return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "pgc_upc_run: collective %d is not a UPC one", (int)coll);
    int op = -1, dtype = -1;
    for (size_t i = 0; i < n; i++) {
        const pgc_upc_step *s = &prog[i];
        if (!step_ok(t, s, n - i, &op, &dtype))
            return pgc_set_error(&t->err, PGC_EINVAL, -1, 0, "%s: step %zu of the program is invalid "
                                 "(kind %llu, %llu, %llu, %llu)", pgc_coll_name(coll), i,
                                 (unsigned long long)s->kind, (unsigned long long)s->a,
                                 (unsigned long long)s->b, (unsigned long long)s->c);
    }
    return PGC_OK;
}

static int wait_step(pgc_team *t, uint64_t peer, uint32_t step)
{
    if (peer == PGC_UPC_ALL)
        return pgc_wait_step_all(t, step);
    return pgc_wait_step(t, (int)peer, step);
}

/* ARRIVE (upc.h: the last arrival): count this member in the call's
 * arrival word; *last: whether every member has now arrived. */
static void arrive(pgc_team *t, int *last)
{
    _Atomic uint64_t *word = &t->hdr->arrivals[t->seq & (PGC_RUNAHEAD - 1)];
    uint64_t tag = (uint64_t)(t->seq & 0xffffffu) << 40 | ((t->sig ^ t->sig >> 24) & 0xffffffu) << 16;
    uint64_t seen = atomic_load_explicit(word, memory_order_relaxed), next;
    do {
        uint64_t count = seen & 0xffffu;
        if ((seen >> 40) != (tag >> 40) || count == 0 || count >= (uint64_t)t->nranks)
            next = tag | 1;         /* the first: the word is another call's */
        else if ((seen & ~0xffffull) != tag)
            return;                 /* another collective: not counted, the OUT wait names it */
        else
            next = seen + 1;
        /* acq_rel: release, what this member wrote before the call is
         * visible to the last arrival; acquire, the last arrival's RMW reads
         * the end of every earlier one's release sequence, so it sees what
         * every member wrote before arriving */
    } while (!atomic_compare_exchange_weak_explicit(word, &seen, next, memory_order_acq_rel,
                                                    memory_order_relaxed));
    *last = (next & 0xffffu) == (uint64_t)t->nranks;
}

/* The address an operand names (upc.h: PGC_UPC_SLOT). */
static void *address(const pgc_team *t, uint64_t v)
{
    if (!(v & PGC_UPC_SLOT))
        return (void *)(uintptr_t)v;
    int member = (int)((v & ~PGC_UPC_SLOT) >> 32);
    return (char *)pgc_inline_of(t, member, t->seq) + (v & 0xffffffffu);
}

/* FOLD: *dst = fold(src), or *dst = *dst op fold(src) (PGC_UPC_INTO). */
static void fold_step(const pgc_team *t, pgc_upc_op op, pgc_dtype dtype, const pgc_upc_step *s)
{
    void *dst = address(t, s->a);
    if (!(s->c & PGC_UPC_INTO)) {
        pgc_upc_fold(op, dtype, dst, address(t, s->b), (size_t)s->c);
        return;
    }
    element part;
    pgc_upc_fold(op, dtype, &part, address(t, s->b), (size_t)(s->c & ~PGC_UPC_INTO));
    pgc_upc_left(op, dtype, &part, dst, 1);      /* part = *dst op part: *dst is earlier */
    memcpy(dst, &part, pgc_dtype_size(dtype));
}

int pgc_upc_run(pgc_team *t, pgc_coll coll, uint32_t arg, const pgc_upc_step *prog, size_t n)
{
    int rc = check_program(t, coll, prog, n);
    if (rc)
        return rc;
    if ((rc = pgc_coll_begin(t, coll, arg)))
        return rc;
    int ended = 0;
    pgc_upc_op op = PGC_UPC_ADD;
    pgc_dtype dtype = PGC_FLOAT64;
    for (size_t i = 0; i < n && rc == PGC_OK; i++) {
        const pgc_upc_step *s = &prog[i];
        switch (s->kind) {
        case PGC_UPC_WAIT:
            /* acquire (pgc_wait_word): what the peer wrote into the parts
             * and partial-result areas before its post is visible to the
             * copies and folds after this wait */
            rc = wait_step(t, s->a, (uint32_t)s->b);
            break;
        case PGC_UPC_COPY:
            pgc_copy(t, address(t, s->a), address(t, s->b), (size_t)s->c);
            break;
        case PGC_UPC_POST:
            /* release (pgc_publish): the copies and folds before it are
             * visible to a peer that sees the step */
            pgc_post_step(t, (uint32_t)s->a);
            break;
        case PGC_UPC_END:
            /* DONE, released after every copy of ours: a peer's OUT wait
             * that sees it may reuse what we read or wrote */
            rc = pgc_coll_end(t, rc);
            ended = 1;
            break;
        case PGC_UPC_OPTYPE:
            op = (pgc_upc_op)s->a, dtype = (pgc_dtype)s->b;
            break;
        case PGC_UPC_ARRIVE: {
            int last = 0;
            arrive(t, &last);
            if (!last)
                i += (size_t)s->a;
            break;
        }
        case PGC_UPC_FOLD:
            fold_step(t, op, dtype, s);
            break;
        case PGC_UPC_SCAN:
            pgc_upc_scan(op, dtype, address(t, s->a), address(t, s->b), (size_t)s->c);
            break;
        case PGC_UPC_LEFT:
            pgc_upc_left(op, dtype, address(t, s->a), address(t, s->b), (size_t)s->c);
            break;
        }
    }
    return ended ? rc : pgc_coll_end(t, rc);
}
