/* team.c - creating, attaching and tearing down a node team (see team.h). */
#define _GNU_SOURCE
#include "team/team.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cma.h"
#include "base/proc.h"
#include "team/region.h"

/* A word of private memory that peers read to probe single copy. */
static volatile uint64_t cma_probe_word = 0x70676173636f6cull;

/* An inline slot holds inline_max bytes (capped), and at least a
 * Reduce_scatter's nranks - 1 block bounds (reduce.c: rs_bounds_of),
 * which only teams of more than 1025 members with the largest slots, or
 * small PGASCOL_INLINE_MAX, make count. */
static size_t inline_slot_size(const pgc_config *cfg, int nranks)
{
    size_t s = PGC_ALIGN_UP(cfg->inline_max ? cfg->inline_max : 1, PGC_CACHELINE);
    size_t bounds = PGC_ALIGN_UP((size_t)(nranks - 1) * sizeof(size_t), PGC_CACHELINE);
    s = s > PGC_INLINE_SLOT_MAX ? PGC_INLINE_SLOT_MAX : s;
    return s > bounds ? s : bounds;
}

static void compute_layout(pgc_header *h, int nranks, const pgc_config *cfg)
{
    size_t page = cfg->hugepages ? (size_t)2 << 20 : PGC_PAGE;
    h->nranks = (uint32_t)nranks;
    h->inline_slot = inline_slot_size(cfg, nranks);
    h->members_offset = PGC_ALIGN_UP(sizeof(pgc_header), PGC_CACHELINE);
    h->member_stride = sizeof(pgc_ctl) + sizeof(pgc_member) + sizeof(pgc_desc) +
                       PGC_RUNAHEAD * h->inline_slot;
    h->staging_offset = PGC_ALIGN_UP(h->members_offset + (size_t)nranks * h->member_stride, page);
    h->staging_stride = PGC_ALIGN_UP(cfg->staging_bytes, PGC_PAGE);
    h->size = PGC_ALIGN_UP(h->staging_offset + (size_t)nranks * h->staging_stride, page);
}

static pgc_team *new_team(int rank, int nranks, pgc_error *err)
{
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        pgc_set_error(err, PGC_EINVAL, -1, 0, "bad team geometry: rank %d of %d", rank, nranks);
        return NULL;
    }
    /* sig_checked and skip_seq live at the tail: one allocation, one free */
    pgc_team *t = calloc(1, sizeof *t + 2 * (size_t)nranks * sizeof *t->sig_checked);
    if (!t)
        pgc_set_error(err, PGC_ENOMEM, -1, 0, "out of memory for a team");
    else {
        t->rank = rank;
        t->nranks = nranks;
        t->sig_checked = (uint32_t *)(t + 1);
        t->skip_seq = t->sig_checked + nranks;
    }
    return t;
}

/* Record who we are and adopt the team-wide parameters (t->hdr is set). */
static void join(pgc_team *t)
{
    t->cfg = t->hdr->cfg;
    t->simd = t->cfg.simd ? pgc_simd_of_cpu() : PGC_SIMD_BASE;
    t->spin_iters = pgc_pause_iterations(t->cfg.spin_ns);
    pgc_member *me = pgc_member_of(t, t->rank);
    me->pid = (int32_t)getpid();
    me->starttime = pgc_process_starttime(me->pid, NULL);
    me->probe_addr = (uint64_t)(uintptr_t)&cma_probe_word;
    pgc_cma_allow_peers();
    atomic_store_explicit(&pgc_ctl_of(t, t->rank)->progress, PGC_STEP_DONE, memory_order_relaxed);
    /* release: the identity above is complete before `attached` says so. */
    atomic_store_explicit(&me->attached, 1, memory_order_release);
}

pgc_team *pgc_team_create(int rank, int nranks, const pgc_config *cfg, pgc_error *err)
{
    pgc_team *t = new_team(rank, nranks, err);
    if (!t)
        return NULL;
    pgc_header layout = {0};
    compute_layout(&layout, nranks, cfg);
    if (pgc_segment_create(&t->seg, layout.size, (int)cfg->hugepages,
                           cfg->named_segment ? PGC_SEGMENT_NAMED : PGC_SEGMENT_MEMFD, err)) {
        free(t);
        return NULL;
    }
    pgc_header *h = t->hdr = (pgc_header *)t->seg.base;
    *h = layout;
    h->cfg = *cfg;
    h->version = PGC_LAYOUT_VERSION;
    join(t);
    /* release: the header and the creator's identity are complete before
     * the magic says so (the stale-segment sweep judges a segment by its
     * members' liveness only once the magic is there). */
    atomic_store_explicit((_Atomic uint64_t *)&h->magic, PGC_MAGIC, memory_order_release);
    return t;
}

pgc_team *pgc_team_attach(int rank, int nranks, const char *name, pgc_error *err)
{
    pgc_team *t = new_team(rank, nranks, err);
    if (!t)
        return NULL;
    if (pgc_segment_attach(&t->seg, name, sizeof(pgc_header), err)) {
        free(t);
        return NULL;
    }
    const pgc_header *h = (const pgc_header *)t->seg.base;
    if (atomic_load_explicit((_Atomic uint64_t *)&h->magic, memory_order_acquire) != PGC_MAGIC ||
        h->version != PGC_LAYOUT_VERSION || h->nranks != (uint32_t)nranks || h->size > t->seg.size) {
        pgc_set_error(err, PGC_EINVAL, -1, 0,
                      "segment %s does not hold a pgascol team of %d members (layout %u, %u members)",
                      name, nranks, h->version, h->nranks);
        pgc_segment_detach(&t->seg);
        free(t);
        return NULL;
    }
    t->hdr = (pgc_header *)t->seg.base;
    join(t);
    return t;
}

int pgc_team_check_attached(pgc_team *t)
{
    for (int r = 0; r < t->nranks; r++)
        if (!atomic_load_explicit(&pgc_member_of(t, r)->attached, memory_order_acquire))
            return pgc_set_error(&t->err, PGC_EINVAL, r, 0, "local rank %d did not attach to the segment", r);
    return PGC_OK;
}

int pgc_team_release(pgc_team *t)
{
    return pgc_segment_release(&t->seg, &t->err);
}

void pgc_team_destroy(pgc_team *t)
{
    if (!t)
        return;
    pgc_segment_release(&t->seg, NULL); /* normally done long ago; harmless if so */
    pgc_segment_detach(&t->seg);
    free(t->pull_buf);
    pgc_region_clear(t);
    free(t);
}

int pgc_team_probe_cma(pgc_team *t)
{
    if (!t->cfg.cma_enable) {
        snprintf(t->cma_reason, sizeof t->cma_reason, "disabled by configuration (PGASCOL_CMA=0)");
        return 0;
    }
    if (t->nranks == 1)
        return 1;
    int peer = (t->rank + 1) % t->nranks;
    const pgc_member *m = pgc_member_of(t, peer);
    uint64_t word = 0;
    pgc_error e = {0};
    if (pgc_cma_read(m->pid, &word, m->probe_addr, sizeof word, &e)) {
        snprintf(t->cma_reason, sizeof t->cma_reason, "%s", e.msg);
        return 0;
    }
    if (word != cma_probe_word) {
        snprintf(t->cma_reason, sizeof t->cma_reason,
                 "process_vm_readv from pid %d returned the wrong data", m->pid);
        return 0;
    }
    /* Allocated here, before the members combine their answers, so that a
     * failure turns single copy off for the whole team. Pages are touched
     * only when a reduction pulls. */
    if (!t->pull_buf && !(t->pull_buf = malloc(t->hdr->staging_stride / 2))) {
        snprintf(t->cma_reason, sizeof t->cma_reason, "no memory for the %zu-byte single-copy pull buffer",
                 (size_t)(t->hdr->staging_stride / 2));
        return 0;
    }
    return 1;
}

void pgc_team_set_cma(pgc_team *t, int ok, const char *reason)
{
    t->cma_ok = ok;
    snprintf(t->cma_reason, sizeof t->cma_reason, "%s", ok ? "" : reason);
}

/* Whether any member recorded in a mapped segment is alive. */
static int segment_in_use(const char *base, size_t size)
{
    const pgc_header *h = (const pgc_header *)base;
    if (size < sizeof *h ||
        atomic_load_explicit((_Atomic uint64_t *)&h->magic, memory_order_acquire) != PGC_MAGIC ||
        h->version != PGC_LAYOUT_VERSION)
        return 1; /* being created, or not ours to judge */
    if (h->members_offset + (uint64_t)h->nranks * h->member_stride > size)
        return 1;
    for (uint32_t r = 0; r < h->nranks; r++) {
        const pgc_member *m = (const pgc_member *)(base + h->members_offset + r * h->member_stride + sizeof(pgc_ctl));
        /* a pid without a start time yet: that member is attaching right now */
        if (m->pid && (m->starttime == 0 || pgc_process_alive(m->pid, m->starttime)))
            return 1;
    }
    return 0;
}

int pgc_team_sweep_stale(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int removed = 0;
    const char *prefix = PGC_SEGMENT_PREFIX + 1; /* without the leading '/' */
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || strlen(e->d_name) >= PGC_SEGMENT_NAME_MAX - 1)
            continue;
        char name[PGC_SEGMENT_NAME_MAX + 256];
        snprintf(name, sizeof name, "/%s", e->d_name);
        int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
        struct stat st;
        if (fd < 0)
            continue;
        if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && st.st_size > 0) {
            void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
            if (base != MAP_FAILED) {
                if (!segment_in_use(base, (size_t)st.st_size) && shm_unlink(name) == 0)
                    removed++;
                munmap(base, (size_t)st.st_size);
            }
        }
        close(fd);
    }
    closedir(d);
    return removed;
}
