/* segment.c - POSIX shared-memory segments (see segment.h). */
#define _GNU_SOURCE
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static int random_name(char *out, size_t outlen, pgc_error *err)
{
    unsigned char rnd[16];
    size_t got = 0;
    while (got < sizeof rnd) {
        ssize_t n = getrandom(rnd + got, sizeof rnd - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return pgc_set_error(err, PGC_ESYS, -1, errno, "getrandom failed: %s", strerror(errno));
        }
        got += (size_t)n;
    }
    int len = snprintf(out, outlen, "%s", PGC_SEGMENT_PREFIX);
    for (size_t i = 0; i < sizeof rnd; i++)
        len += snprintf(out + len, outlen - (size_t)len, "%02x", rnd[i]);
    return PGC_OK;
}

static int map_fd(pgc_segment *seg, int fd, size_t size, pgc_error *err)
{
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED)
        return pgc_set_error(err, PGC_ESYS, -1, errno, "mmap of %zu bytes of %s failed: %s",
                             size, seg->name, strerror(errno));
    /* Huge pages are a hint: tmpfs honours it only when shmem_enabled allows. */
    if (seg->hugepages)
        (void)madvise(base, size, MADV_HUGEPAGE);
    seg->base = base;
    seg->size = size;
    return PGC_OK;
}

int pgc_segment_create(pgc_segment *seg, size_t size, int hugepages, pgc_error *err)
{
    memset(seg, 0, sizeof *seg);
    seg->hugepages = hugepages;
    size = PGC_ALIGN_UP(size, hugepages ? (size_t)2 << 20 : (size_t)PGC_PAGE);
    int fd = -1;
    for (int attempt = 0; fd < 0; attempt++) {
        int rc = random_name(seg->name, sizeof seg->name, err);
        if (rc)
            return rc;
        fd = shm_open(seg->name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 && (errno != EEXIST || attempt > 8))
            return pgc_set_error(err, PGC_ESYS, -1, errno, "shm_open(%s) failed: %s",
                                 seg->name, strerror(errno));
    }
    int rc = PGC_OK;
    /* The umask can only remove bits; fchmod makes 0600 explicit all the same. */
    int e;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0)
        rc = pgc_set_error(err, PGC_ESYS, -1, errno, "sizing %s to %zu bytes failed: %s",
                           seg->name, size, strerror(errno));
    /* Reserve the pages now: on a full /dev/shm (a container's 64 MiB) a
     * sparse tmpfs file maps fine and the first touch of a missing page
     * kills the process with SIGBUS. */
    else if ((e = posix_fallocate(fd, 0, (off_t)size)) != 0)
        rc = pgc_set_error(err, PGC_ESYS, -1, e, "reserving %zu bytes of shared memory for %s failed: %s "
                           "(is /dev/shm large enough? a node team needs about this much per communicator)",
                           size, seg->name, strerror(e));
    else
        rc = map_fd(seg, fd, size, err);
    close(fd);
    if (rc) {
        shm_unlink(seg->name);
        seg->name[0] = '\0';
    }
    return rc;
}

int pgc_segment_attach(pgc_segment *seg, const char *name, size_t size, pgc_error *err)
{
    memset(seg, 0, sizeof *seg);
    if (strncmp(name, PGC_SEGMENT_PREFIX, strlen(PGC_SEGMENT_PREFIX)) != 0 ||
        strlen(name) >= sizeof seg->name)
        return pgc_set_error(err, PGC_EINVAL, -1, 0, "not a pgascol segment name: '%s'", name);
    strcpy(seg->name, name);
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return pgc_set_error(err, PGC_ESYS, -1, errno, "attaching %s failed: %s", name, strerror(errno));
    struct stat st;
    int rc = PGC_OK;
    if (fstat(fd, &st) != 0)
        rc = pgc_set_error(err, PGC_ESYS, -1, errno, "fstat(%s) failed: %s", name, strerror(errno));
    else if (st.st_uid != geteuid() || (st.st_mode & 0777) != 0600)
        rc = pgc_set_error(err, PGC_EINVAL, -1, 0,
                           "segment %s has owner %u mode %03o; expected owner %u mode 600",
                           name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (unsigned)geteuid());
    else if ((size_t)st.st_size < size)
        rc = pgc_set_error(err, PGC_EINVAL, -1, 0, "segment %s has %lld bytes, expected %zu",
                           name, (long long)st.st_size, size);
    else
        rc = map_fd(seg, fd, (size_t)st.st_size, err);
    close(fd);
    return rc;
}

int pgc_segment_unlink(pgc_segment *seg, pgc_error *err)
{
    if (seg->name[0] && shm_unlink(seg->name) != 0 && errno != ENOENT)
        return pgc_set_error(err, PGC_ESYS, -1, errno, "shm_unlink(%s) failed: %s",
                             seg->name, strerror(errno));
    return PGC_OK;
}

void pgc_segment_detach(pgc_segment *seg)
{
    if (seg->base)
        munmap(seg->base, seg->size);
    seg->base = NULL;
    seg->size = 0;
}
