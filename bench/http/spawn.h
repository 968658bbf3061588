/* spawn: the child processes of the trial runner. A command runs pinned
 * with `taskset -c CPUS` (the command line a person would type, recorded in
 * results.json), with its output in a log file; its CPU time and memory are
 * read from /proc/PID. */
#ifndef STORHD_TRIAL_SPAWN_H
#define STORHD_TRIAL_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct spawn_stat {
    double cpu_s;   /* utime + stime */
    double sys_s;   /* stime: the kernel's share */
    double ctxsw;   /* voluntary + involuntary context switches of all its threads */
    double pss_mib; /* Pss of /proc/PID/smaps_rollup */
    double rss_mib;
} spawn_stat;

/* Starts argv (NULL-terminated) under `taskset -c cpus` (cpus NULL or "":
 * unpinned) with env ("K=V" strings, NULL-terminated, may be NULL) added to
 * the runner's environment, stdout and stderr appended to log (NULL:
 * /dev/null). Returns the pid, or -1 with errno set. */
pid_t spawn_pinned(const char *cpus, const char *const *argv, const char *const *env,
                   const char *log);
/* Waits for pid and returns its exit code, or 128 + the signal. */
int spawn_wait(pid_t pid);
/* SIGTERM, then SIGKILL after timeout_ms; returns what spawn_wait does. */
int spawn_stop(pid_t pid, int timeout_ms);
/* Reads pid's CPU time and memory; 0, or -1 when the process is gone. */
int spawn_stat_read(pid_t pid, spawn_stat *out);
/* The command line spawn_pinned runs, as one shell-quoted string. Caller
 * frees. */
char *spawn_cmdline(const char *cpus, const char *const *argv);
/* Runs argv (unpinned) and returns the first line it prints (stdout or
 * stderr), or NULL. Caller frees. */
char *spawn_first_line(const char *const *argv);

#endif
