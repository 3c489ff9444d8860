/* proc.h - whether a process is alive, from /proc/<pid>/stat.
 *
 * A process is told apart from a later one that reused its pid by its start
 * time (field 22 of /proc/<pid>/stat, in clock ticks since boot). Used by
 * the waits (a member that died) and by the sweep of stale segments (team.h). */
#ifndef PGC_PROC_H
#define PGC_PROC_H

#include <stdint.h>

/* /proc/<pid>/stat start time of a process (0 if it cannot be read); its
 * state letter into *state when state is not NULL. */
uint64_t pgc_process_starttime(int pid, char *state);

/* Is the process alive: it exists, is not a zombie, and has the start time
 * recorded for it (the pid was not reused)? */
int pgc_process_alive(int pid, uint64_t starttime);

#endif
