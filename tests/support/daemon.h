/* daemon: starts the real storhd binary for an integration test on a free
 * loopback port with a scratch storage root, waits until /healthz answers,
 * and stops it (SIGTERM, or SIGKILL for crash tests). */
#ifndef STORHD_TEST_DAEMON_H
#define STORHD_TEST_DAEMON_H

#include <limits.h>
#include <sys/types.h>

typedef struct daemon_proc {
    pid_t pid;
    int port;
    char root[PATH_MAX];
    char base[64]; /* http://127.0.0.1:PORT */
} daemon_proc;

/* extra: NULL-terminated extra argv entries, may be NULL. root: an existing
 * dir to reuse, or NULL for a fresh scratch dir. Returns 0 when serving. */
int daemon_start(daemon_proc *d, const char *root, const char *const *extra);
/* SIGTERM and wait; returns the exit status. */
int daemon_stop(daemon_proc *d);
void daemon_kill(daemon_proc *d);
/* Removes the scratch root. */
void daemon_cleanup(daemon_proc *d);

#endif
