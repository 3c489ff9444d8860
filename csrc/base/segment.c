/* segment.c - POSIX shared-memory segments (see segment.h). */
#define _GNU_SOURCE
#include "base/segment.h"

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

/* Size, reserve and map a freshly created (empty) file. */
static int size_and_map(pgc_segment *seg, int fd, size_t size, pgc_error *err)
{
    int e;
    /* The umask can only remove bits; fchmod makes 0600 explicit all the same
     * (a memfd starts as 0777). */
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0)
        return pgc_set_error(err, PGC_ESYS, -1, errno, "sizing %s to %zu bytes failed: %s",
                             seg->name, size, strerror(errno));
    /* Reserve the pages now: on a full /dev/shm (a container's 64 MiB) a
     * sparse tmpfs file maps fine and the first touch of a missing page
     * kills the process with SIGBUS. */
    if ((e = posix_fallocate(fd, 0, (off_t)size)) != 0)
        return pgc_set_error(err, PGC_ESYS, -1, e, "reserving %zu bytes of shared memory for %s failed: %s "
                             "(is /dev/shm large enough? a node team needs about this much per communicator)",
                             size, seg->name, strerror(e));
    return map_fd(seg, fd, size, err);
}

static int create_memfd(pgc_segment *seg, size_t size, pgc_error *err)
{
    char hex[48]; /* "/pgascol-" and 32 hex digits */
    int rc = random_name(hex, sizeof hex, err);
    if (rc)
        return rc;
    int fd = memfd_create(hex + 1, MFD_CLOEXEC); /* the name without its '/' */
    if (fd < 0)
        return pgc_set_error(err, PGC_ESYS, -1, errno, "memfd_create failed: %s", strerror(errno));
    snprintf(seg->name, sizeof seg->name, PGC_SEGMENT_MEMFD_PREFIX "%ld:%d:%s", (long)getpid(), fd, hex);
    rc = size_and_map(seg, fd, size, err);
    if (rc) {
        close(fd);
        return rc;
    }
    seg->memfd = fd;
    return PGC_OK;
}

static int create_named(pgc_segment *seg, size_t size, pgc_error *err)
{
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
    int rc = size_and_map(seg, fd, size, err);
    close(fd);
    if (rc)
        shm_unlink(seg->name);
    return rc;
}

int pgc_segment_create(pgc_segment *seg, size_t size, int hugepages, pgc_segment_kind kind, pgc_error *err)
{
    memset(seg, 0, sizeof *seg);
    seg->memfd = -1;
    seg->hugepages = hugepages;
    size = PGC_ALIGN_UP(size, hugepages ? (size_t)2 << 20 : (size_t)PGC_PAGE);
    int rc = kind == PGC_SEGMENT_MEMFD ? create_memfd(seg, size, err) : PGC_ESYS;
    /* asked for a name, or no memfd in this kernel (or seccomp forbids it) */
    if (kind == PGC_SEGMENT_NAMED ||
        (rc && err->code == PGC_ESYS && (err->sys_errno == ENOSYS || err->sys_errno == EPERM))) {
        seg->kind = PGC_SEGMENT_NAMED;
        rc = create_named(seg, size, err);
    }
    if (rc)
        seg->name[0] = '\0';
    return rc;
}

/* The unguessable part of an address: "/pgascol-" and 32 hex digits. */
static int valid_name(const char *name)
{
    size_t n = strlen(PGC_SEGMENT_PREFIX);
    if (strncmp(name, PGC_SEGMENT_PREFIX, n) != 0 || strlen(name) != n + 32)
        return 0;
    for (const char *c = name + n; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return 0;
    return 1;
}

/* Open the creator's memfd through /proc and check that it is the file the
 * address names: the kernel calls it "/memfd:pgascol-<hex> (deleted)".
 * Checked on the descriptor we got, so a creator that died and a pid or fd
 * number reused in between cannot hand us another file. */
static int open_memfd(const char *address, pgc_error *err)
{
    long pid;
    int fd, used = 0;
    if (sscanf(address, PGC_SEGMENT_MEMFD_PREFIX "%ld:%d:%n", &pid, &fd, &used) != 2 || used == 0 ||
        pid <= 0 || fd < 0 || !valid_name(address + used))
        return pgc_set_error(err, PGC_EINVAL, -1, 0, "not a pgascol segment address: '%.100s'", address);
    const char *name = address + used;
    char path[64], link[PGC_SEGMENT_NAME_MAX + 32], want[PGC_SEGMENT_NAME_MAX + 32];
    snprintf(path, sizeof path, "/proc/%ld/fd/%d", pid, fd);
    int mine = open(path, O_RDWR | O_CLOEXEC);
    if (mine < 0)
        return pgc_set_error(err, PGC_ESYS, -1, errno,
                             "attaching %s failed: cannot open %s: %s (the creator exited, released "
                             "the segment, or its /proc entries are closed to us)", address, path, strerror(errno));
    snprintf(path, sizeof path, "/proc/self/fd/%d", mine);
    snprintf(want, sizeof want, "/memfd:%s (deleted)", name + 1);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n < 0 || (link[n] = '\0', strcmp(link, want) != 0)) {
        close(mine);
        return pgc_set_error(err, PGC_EINVAL, -1, 0, "attaching %s failed: fd %d of process %ld is %s, "
                             "not the segment (the creator exited?)", address, fd, pid, n < 0 ? "unreadable" : link);
    }
    return mine;
}

int pgc_segment_attach(pgc_segment *seg, const char *address, size_t size, pgc_error *err)
{
    memset(seg, 0, sizeof *seg);
    seg->memfd = -1;
    if (strlen(address) >= sizeof seg->name)
        return pgc_set_error(err, PGC_EINVAL, -1, 0, "not a pgascol segment address: '%.100s'", address);
    int fd;
    if (strncmp(address, PGC_SEGMENT_MEMFD_PREFIX, strlen(PGC_SEGMENT_MEMFD_PREFIX)) == 0) {
        seg->kind = PGC_SEGMENT_MEMFD;
        fd = open_memfd(address, err);
        if (fd < 0)
            return err->code;
    } else {
        if (!valid_name(address))
            return pgc_set_error(err, PGC_EINVAL, -1, 0, "not a pgascol segment address: '%.100s'", address);
        seg->kind = PGC_SEGMENT_NAMED;
        fd = shm_open(address, O_RDWR | O_CLOEXEC, 0);
        if (fd < 0)
            return pgc_set_error(err, PGC_ESYS, -1, errno, "attaching %s failed: %s", address, strerror(errno));
    }
    /* An attacher of a named segment removes the name too (whoever gets
     * there first); only the creator holds a memfd to close. */
    strcpy(seg->name, address);
    struct stat st;
    int rc = PGC_OK;
    if (fstat(fd, &st) != 0)
        rc = pgc_set_error(err, PGC_ESYS, -1, errno, "fstat(%s) failed: %s", address, strerror(errno));
    else if (st.st_uid != geteuid() || (st.st_mode & 0777) != 0600)
        rc = pgc_set_error(err, PGC_EINVAL, -1, 0,
                           "segment %s has owner %u mode %03o; expected owner %u mode 600",
                           address, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777), (unsigned)geteuid());
    else if ((size_t)st.st_size < size)
        rc = pgc_set_error(err, PGC_EINVAL, -1, 0, "segment %s has %lld bytes, expected %zu",
                           address, (long long)st.st_size, size);
    else
        rc = map_fd(seg, fd, (size_t)st.st_size, err);
    close(fd);
    return rc;
}

int pgc_segment_release(pgc_segment *seg, pgc_error *err)
{
    if (seg->memfd >= 0) {
        close(seg->memfd);
        seg->memfd = -1;
    }
    if (seg->kind == PGC_SEGMENT_NAMED && seg->name[0] && shm_unlink(seg->name) != 0 && errno != ENOENT)
        return pgc_set_error(err, PGC_ESYS, -1, errno, "shm_unlink(%s) failed: %s",
                             seg->name, strerror(errno));
    return PGC_OK;
}

void pgc_segment_detach(pgc_segment *seg)
{
    if (seg->memfd >= 0)
        close(seg->memfd);
    seg->memfd = -1;
    if (seg->base)
        munmap(seg->base, seg->size);
    seg->base = NULL;
    seg->size = 0;
}
