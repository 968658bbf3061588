/* daemon: starts the real storhd binary for an integration test on a free
 * loopback port with a scratch storage root, waits until /healthz answers,
 * and stops it (SIGTERM, or SIGKILL for crash tests). STORHD_TEST_WRAPPER
 * (e.g. "valgrind --error-exitcode=99") runs storhd under a wrapper; its
 * exit status then fails the test at daemon_stop. */
#ifndef STORHD_TEST_DAEMON_H
#define STORHD_TEST_DAEMON_H

#include <limits.h>
#include <sys/types.h>

#include "client.h"

typedef struct daemon_proc {
    pid_t pid;
    int port;
    char root[PATH_MAX];
    char base[64]; /* http://127.0.0.1:PORT */
} daemon_proc;

/* When set, runs in storhd's child process just before exec (the power-cut
 * suite installs its syncfs relay there); it returns 0 or the child exits. */
extern int (*daemon_pre_exec)(void);

/* extra: NULL-terminated extra argv entries, may be NULL. root: an existing
 * dir to reuse, or NULL for a fresh scratch dir. Returns 0 when serving. */
int daemon_start(daemon_proc *d, const char *root, const char *const *extra);
/* SIGTERM and wait; returns the exit status. */
int daemon_stop(daemon_proc *d);
void daemon_kill(daemon_proc *d);
/* Removes the scratch root. */
void daemon_cleanup(daemon_proc *d);

/* One request to d, no extra header (the request helper of the daemon
 * tests): daemon_req sends body (may be NULL) with ctype as given,
 * daemon_json as application/json when there is a body. */
client_resp daemon_req(const daemon_proc *d, const char *method, const char *path,
                       const char *ctype, const char *body);
client_resp daemon_json(const daemon_proc *d, const char *method, const char *path,
                        const char *body);

/* main() of an integration test: starts storhd into d, runs the cases,
 * and fails if storhd does not stop cleanly. Needs test.h and curl.h. */
#define DAEMON_TEST_MAIN(d, list)                                                                  \
    static int run_cases(int argc, char **argv);                                                   \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        TEST_LIST_EXIT(argc, argv, list);                                                          \
        curl_global_init(CURL_GLOBAL_DEFAULT);                                                     \
        if (daemon_start(&d, NULL, NULL) != 0) {                                                   \
            fprintf(stderr, "could not start storhd\n");                                           \
            return 1;                                                                              \
        }                                                                                          \
        int rc = run_cases(argc, argv);                                                            \
        if (daemon_stop(&d) != 0) {                                                                \
            fprintf(stderr, "storhd did not exit cleanly\n");                                      \
            rc = 1;                                                                                \
        }                                                                                          \
        daemon_cleanup(&d);                                                                        \
        curl_global_cleanup();                                                                     \
        return rc;                                                                                 \
    }                                                                                              \
    TEST_MAIN_NAMED(run_cases, list)

#endif
