/* handoff.c - is this host in a "slow period"? Two processes on two CPUs
 * hand data to each other the way copy-in/copy-out does, and the local
 * memcpy speed is measured alongside (docs/PERFORMANCE.md, "Slow periods").
 *
 *     cc -O2 -o handoff bench/handoff.c && ./handoff
 *
 * Prints the round trip of one cache line between the two processes, the
 * streaming rate of 128 KiB chunks through a 4-slot shared ring (producer
 * copies in, consumer copies out) and one process's memcpy rate. On the
 * development VM: quiet 70-300 ns and 7-10 GB/s; slow periods 1.6-7 us and
 * 0.07-2.3 GB/s, with memcpy unchanged (43-52 GB/s). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK ((size_t)128 * 1024)
#define SLOTS 4
#define CHUNKS 2000
#define TRIPS 100000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
    /* two flags on their own cache lines, then the ring */
    char *shared = mmap(NULL, 128 + SLOTS * CHUNK, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    _Atomic long *posted = (_Atomic long *)shared, *acked = (_Atomic long *)(shared + 64);
    char *ring = shared + 128;
    memset(ring, 1, SLOTS * CHUNK);
    char *src = malloc(CHUNK), *dst = malloc(CHUNK);
    memset(src, 2, CHUNK);
    memset(dst, 3, CHUNK);
    pid_t child = fork();
    int consumer = child == 0;

    double t0 = now();
    for (long i = 1; i <= TRIPS; i++) {
        if (!consumer) {
            atomic_store(posted, i);
            while (atomic_load(acked) != i)
                __builtin_ia32_pause();
        } else {
            while (atomic_load(posted) != i)
                __builtin_ia32_pause();
            atomic_store(acked, i);
        }
    }
    double trip = (now() - t0) / TRIPS;

    /* both sides start the stream from 0 (the last ack above has been seen) */
    if (consumer)
        while (atomic_load(posted) != 0)
            __builtin_ia32_pause();
    else {
        atomic_store(acked, 0);
        atomic_store(posted, 0);
    }
    t0 = now();
    for (long k = 1; k <= CHUNKS; k++) {
        char *slot = ring + (k % SLOTS) * CHUNK;
        if (!consumer) {
            while (atomic_load(acked) < k - (SLOTS - 1))   /* slot free again */
                __builtin_ia32_pause();
            memcpy(slot, src, CHUNK);
            atomic_store(posted, k);
        } else {
            while (atomic_load(posted) < k)
                __builtin_ia32_pause();
            memcpy(dst, slot, CHUNK);
            atomic_store(acked, k);
        }
    }
    double stream = (now() - t0) / CHUNKS;

    t0 = now();
    for (int i = 0; i < CHUNKS; i++) {
        memcpy(dst, src, CHUNK);
        __asm__ volatile("" ::: "memory");
    }
    double local = (now() - t0) / CHUNKS;
    if (consumer) {
        printf("cache-line round trip %.0f ns; ring stream %.2f GB/s (%.1f us per 128 KiB); "
               "local memcpy %.1f GB/s\n", trip * 1e9, CHUNK / stream / 1e9, stream * 1e6, CHUNK / local / 1e9);
        return 0;
    }
    wait(NULL);
    return 0;
}
