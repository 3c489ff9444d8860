/* proc.c - process liveness from /proc (see proc.h). */
#define _GNU_SOURCE
#include "base/proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t pgc_process_starttime(int pid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* "pid (comm) state f4 ... f22": comm may hold spaces and parentheses,
     * so fields are counted from the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return 0;
    p += 2;
    if (state)
        *state = *p;
    unsigned long long start = 0;
    int field = 3;
    /* strtok_r: liveness checks run in several threads at once (one per
     * communicator in a collective, GIL released). */
    char *save = NULL;
    for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++)
        if (field == 22) {
            start = strtoull(tok, NULL, 10);
            break;
        }
    return start;
}

int pgc_process_alive(int pid, uint64_t starttime)
{
    char state = '?';
    uint64_t start = pgc_process_starttime(pid, &state);
    /* A zombie is dead for our purpose ('Z'; 'X' dead) and a different
     * start time means the pid was reused. */
    return start != 0 && start == starttime && state != 'Z' && state != 'X';
}
