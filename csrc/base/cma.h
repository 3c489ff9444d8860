/* cma.h - single copy between processes (Linux Cross Memory Attach).
 *
 * process_vm_readv / process_vm_writev move bytes straight between two
 * processes' private memory, like KNEM but without a kernel module. The
 * wrappers finish partial transfers, batch by IOV_MAX and retry on EINTR. */
#ifndef PGC_CMA_H
#define PGC_CMA_H

#include <sys/types.h>
#include <sys/uio.h>

#include "base/common.h"

/* Copy between local and remote iovec lists of equal total length.
 * write == 0: remote -> local (pull); write == 1: local -> remote (push). */
int pgc_cma_transfer(pid_t pid, int write, const struct iovec *local, size_t nlocal,
                     const struct iovec *remote, size_t nremote, pgc_error *err);

static inline int pgc_cma_read(pid_t pid, void *local, uint64_t remote, size_t len, pgc_error *err)
{
    struct iovec l = {local, len}, r = {(void *)(uintptr_t)remote, len};
    return pgc_cma_transfer(pid, 0, &l, 1, &r, 1, err);
}

static inline int pgc_cma_write(pid_t pid, const void *local, uint64_t remote, size_t len, pgc_error *err)
{
    struct iovec l = {(void *)local, len}, r = {(void *)(uintptr_t)remote, len};
    return pgc_cma_transfer(pid, 1, &l, 1, &r, 1, err);
}

/* Allow any process of ours to read us with CMA where Yama restricts ptrace
 * (PR_SET_PTRACER_ANY). A no-op without Yama. */
void pgc_cma_allow_peers(void);

/* Probe single copy without a team: fork a child that reads this process
 * with process_vm_readv (not an ancestor, like a sibling rank under Yama).
 * Returns 0 if it worked, PGC_ESYS with the reason otherwise. */
int pgc_cma_probe_fork(pgc_error *err);

#endif
