/* segment.h - POSIX shared-memory segments for one node.
 *
 * A segment is created by one member under an unguessable name
 * ("/pgascol-" + 128 random bits), mode 0600, attached by the others, and
 * unlinked as soon as every member has attached: from then on it lives only in
 * the members' mappings, so no /dev/shm entry can outlive the job, even if a
 * process is killed. */
#ifndef PGC_SEGMENT_H
#define PGC_SEGMENT_H

#include "common.h"

#define PGC_SEGMENT_PREFIX "/pgascol-"
#define PGC_SEGMENT_NAME_MAX 64

typedef struct pgc_segment {
    void *base;
    size_t size;
    char name[PGC_SEGMENT_NAME_MAX];
    int hugepages;  /* 1 if transparent huge pages were requested */
} pgc_segment;

/* Create a zero-filled segment of `size` bytes (rounded up to pages). */
int pgc_segment_create(pgc_segment *seg, size_t size, int hugepages, pgc_error *err);
/* Attach an existing segment; checks the owner, the mode and the size. */
int pgc_segment_attach(pgc_segment *seg, const char *name, size_t size, pgc_error *err);
/* Remove the name (idempotent: a name already gone is not an error). */
int pgc_segment_unlink(pgc_segment *seg, pgc_error *err);
/* Unmap. The segment struct can be reused afterwards. */
void pgc_segment_detach(pgc_segment *seg);

#endif
