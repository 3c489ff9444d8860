/* segment.h - the shared memory of one node team.
 *
 * A segment is created by one member and attached by the others. Two kinds:
 *
 *  - memfd (the default): an anonymous memfd_create() file named
 *    "pgascol-" + 128 random bits. It never has a name in /dev/shm: the
 *    others open it through /proc/<creator>/fd/<n> (the kernel allows that
 *    to processes of the same user, as for ptrace's read mode), check that
 *    the file they got carries the unguessable name, and the creator closes
 *    its descriptor once everyone attached. Whatever kills whom, when, the
 *    kernel frees the pages with the last mapping: nothing can leak.
 *  - named: a POSIX shm_open() name "/pgascol-" + 128 random bits, mode 0600,
 *    removed as soon as every member attached. Used where /proc/<pid>/fd is
 *    not reachable (no memfd, /proc hidden); a process killed between the
 *    creation and the removal leaves the name behind, which the stale
 *    sweep (team.h) removes later.
 *
 * The address a member attaches with is "/pgascol-<hex>" for a named
 * segment and "memfd:<pid>:<fd>:/pgascol-<hex>" for a memfd. */
#ifndef PGC_SEGMENT_H
#define PGC_SEGMENT_H

#include "base/common.h"

#define PGC_SEGMENT_PREFIX "/pgascol-"
#define PGC_SEGMENT_MEMFD_PREFIX "memfd:"
#define PGC_SEGMENT_NAME_MAX 96

typedef enum { PGC_SEGMENT_MEMFD = 0, PGC_SEGMENT_NAMED = 1 } pgc_segment_kind;

typedef struct pgc_segment {
    void *base;
    size_t size;
    char name[PGC_SEGMENT_NAME_MAX];  /* the address others attach with */
    int kind;       /* pgc_segment_kind */
    int memfd;      /* the creator's memfd until released, else -1 */
    int hugepages;  /* 1 if transparent huge pages were requested */
} pgc_segment;

/* Create a zero-filled segment of `size` bytes (rounded up to pages). A memfd
 * segment falls back to a named one where memfd_create is missing. */
int pgc_segment_create(pgc_segment *seg, size_t size, int hugepages, pgc_segment_kind kind, pgc_error *err);
/* Attach an existing segment by its address; checks the identity, the owner,
 * the mode and the size. */
int pgc_segment_attach(pgc_segment *seg, const char *address, size_t size, pgc_error *err);
/* Nobody else may attach from now on: remove the name, or close the memfd
 * (idempotent). */
int pgc_segment_release(pgc_segment *seg, pgc_error *err);
/* Unmap (closing a memfd still held; a name stays). The segment struct can be reused afterwards. */
void pgc_segment_detach(pgc_segment *seg);

#endif
