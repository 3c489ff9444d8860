/* cma.c - process_vm_readv / process_vm_writev wrappers (see cma.h). */
#define _GNU_SOURCE
#include "base/cma.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define BATCH 64 /* iovecs per call: well under IOV_MAX, on the stack */
/* Bytes per call: the kernel pins the remote pages of a call before copying,
 * and larger calls ran slower (docs/PERFORMANCE.md, "Single-copy calls of at
 * most 1 MiB"). */
#define CALL_MAX ((size_t)1 << 20)

/* A cursor over an iovec list: the next `batch` entries, starting `skip`
 * bytes into entry `i`. */
typedef struct {
    const struct iovec *iov;
    size_t n, i, skip;
} cursor;

static size_t fill(const cursor *c, struct iovec *out, size_t max, size_t limit)
{
    size_t k = 0, total = 0;
    for (size_t i = c->i; i < c->n && k < max && total < limit; i++) {
        size_t off = i == c->i ? c->skip : 0;
        size_t len = c->iov[i].iov_len - off;
        if (len == 0)
            continue;
        if (len > limit - total)
            len = limit - total;
        out[k].iov_base = (char *)c->iov[i].iov_base + off;
        out[k].iov_len = len;
        total += len;
        k++;
    }
    return k;
}

static size_t remaining(const cursor *c, size_t max)
{
    size_t total = 0;
    for (size_t i = c->i, k = 0; i < c->n && k < max; i++, k++)
        total += c->iov[i].iov_len - (i == c->i ? c->skip : 0);
    return total;
}

static void advance(cursor *c, size_t bytes)
{
    while (bytes && c->i < c->n) {
        size_t left = c->iov[c->i].iov_len - c->skip;
        if (bytes < left) {
            c->skip += bytes;
            return;
        }
        bytes -= left;
        c->i++;
        c->skip = 0;
    }
    while (c->i < c->n && c->iov[c->i].iov_len == c->skip) {
        c->i++;
        c->skip = 0;
    }
}

int pgc_cma_transfer(pid_t pid, int write, const struct iovec *local, size_t nlocal,
                     const struct iovec *remote, size_t nremote, pgc_error *err)
{
    cursor l = {local, nlocal, 0, 0}, r = {remote, nremote, 0, 0};
    advance(&l, 0);
    advance(&r, 0);
    while (l.i < l.n && r.i < r.n) {
        struct iovec lb[BATCH], rb[BATCH];
        /* Both sides of one call must describe the same number of bytes. */
        size_t want = remaining(&l, BATCH);
        size_t rwant = remaining(&r, BATCH);
        if (rwant < want)
            want = rwant;
        if (want > CALL_MAX)
            want = CALL_MAX;
        size_t nl = fill(&l, lb, BATCH, want), nr = fill(&r, rb, BATCH, want);
        ssize_t got = write ? process_vm_writev(pid, lb, nl, rb, nr, 0)
                            : process_vm_readv(pid, lb, nl, rb, nr, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            const char *why = e == EPERM  ? " (not permitted: Yama ptrace_scope, capabilities or seccomp)"
                              : e == ESRCH  ? " (the peer process is gone)"
                              : e == EFAULT ? " (an address is not mapped in one of the processes)"
                              : e == ENOSYS ? " (not supported by this kernel or blocked by seccomp)"
                                            : "";
            return pgc_set_error(err, PGC_ESYS, -1, e, "process_vm_%s with pid %d failed: %s%s",
                                 write ? "writev" : "readv", (int)pid, strerror(e), why);
        }
        if (got == 0)
            return pgc_set_error(err, PGC_ESYS, -1, EFAULT,
                                 "process_vm_%s with pid %d made no progress",
                                 write ? "writev" : "readv", (int)pid);
        advance(&l, (size_t)got);
        advance(&r, (size_t)got);
    }
    return PGC_OK;
}

void pgc_cma_allow_peers(void)
{
#ifdef PR_SET_PTRACER
    if (access("/proc/sys/kernel/yama/ptrace_scope", F_OK) == 0)
        (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}

int pgc_cma_probe_fork(pgc_error *err)
{
    static volatile uint64_t word = 0x636d612d70726f62ull;
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return pgc_set_error(err, PGC_ESYS, -1, errno, "pipe failed: %s", strerror(errno));
    pgc_cma_allow_peers();
    pid_t parent = getpid(), child = fork();
    if (child < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return pgc_set_error(err, PGC_ESYS, -1, errno, "fork failed: %s", strerror(errno));
    }
    if (child == 0) {
        uint64_t got = 0;
        pgc_error e = {0};
        int rc = pgc_cma_read(parent, &got, (uint64_t)(uintptr_t)&word, sizeof got, &e);
        int verdict = rc ? e.sys_errno : (got == word ? 0 : -1);
        (void)!write(pipefd[1], &verdict, sizeof verdict);
        _exit(0);
    }
    close(pipefd[1]);
    int verdict = -2;
    ssize_t n;
    do
        n = read(pipefd[0], &verdict, sizeof verdict);
    while (n < 0 && errno == EINTR);
    close(pipefd[0]);
    waitpid(child, NULL, 0);
    if (verdict == 0)
        return PGC_OK;
    if (verdict > 0)
        return pgc_set_error(err, PGC_ESYS, -1, verdict, "process_vm_readv between processes failed: %s",
                             strerror(verdict));
    return pgc_set_error(err, PGC_ESYS, -1, 0, "process_vm_readv returned wrong data or the probe died");
}
