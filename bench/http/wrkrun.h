/* wrkrun: one run of wrk with trial.lua, pinned to the load generator's
 * CPUs. The plan (method, paths, tokens, body) reaches the script through
 * files named in its environment; the script's done() writes the run's
 * summary, which wrkrun returns as JSON. */
#ifndef STORHD_TRIAL_WRKRUN_H
#define STORHD_TRIAL_WRKRUN_H

#include <jansson.h>
#include <stddef.h>

typedef struct wrkrun_plan {
    const char *method;
    const char *paths;  /* file: request paths, one per line */
    const char *tokens; /* file: bearer tokens, one per line, or NULL */
    const char *body;   /* file: body template, or NULL */
    const char *ctype;  /* of the body */
    const char *queue;  /* a queue for trial.lua's worker loop, or NULL */
} wrkrun_plan;

typedef struct wrkrun_opts {
    const char *wrk;  /* the wrk binary */
    const char *lua;  /* trial.lua */
    const char *cpus; /* taskset list, or NULL */
    int threads, connections;
    int seconds;
    int timeout_s;   /* a request slower than this counts as a timeout */
    const char *url; /* http://HOST:PORT */
    const char *out; /* where done() writes its JSON */
    const char *log; /* wrk's own output */
    const wrkrun_plan *plan;
} wrkrun_opts;

/* Runs wrk to the end. *result: done()'s summary (new reference); *cmdline
 * (caller frees, may be NULL): the command that ran. 0, or -1 with msg. */
int wrkrun_run(const wrkrun_opts *o, json_t **result, char **cmdline, char *msg, size_t cap);

#endif
