/* scenario: what the trials load. Each scenario names one route and
 * prepares its plan for trial.lua: the request paths, the body template and
 * whatever the route needs stored first (records to read). The reference
 * workload of the page RPC is rpc-miss and rpc-hit: a 1 KiB JSON argument
 * and 10 reused tokens. */
#ifndef STORHD_TRIAL_SCENARIO_H
#define STORHD_TRIAL_SCENARIO_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "wrkrun.h"

typedef struct scenario_ctx {
    const char *base;   /* http://HOST:PORT of the API */
    const char *dir;    /* where plan files go */
    const char *tokens; /* file of bearer tokens, or NULL (no auth) */
    const char *token;  /* one of them, for set-up requests, or NULL */
    size_t arg_bytes;   /* size of POST bodies */
    unsigned long salt; /* differs per trial, so no two trials share a "{u}" body */
    int records;        /* records stored for read scenarios */
} scenario_ctx;

/* A prepared plan; the strings live in the struct. */
typedef struct scenario_plan {
    wrkrun_plan wrk;
    char paths[PATH_MAX];
    char body[PATH_MAX];
} scenario_plan;

typedef struct scenario {
    const char *name;   /* rpc-miss */
    const char *title;  /* one line for the report */
    const char *method; /* of the route */
    const char *route;  /* the route pattern, as /metrics labels it */
    const char *what;   /* the workload in a sentence */
    bool rpc;           /* needs the page RPC (PostgreSQL) */
    /* POST scenarios: the path, and the body's "req": "{u}" (new for every
     * request), "{k}" (one per token) or a fixed word */
    const char *path, *req;
    /* more set-up (stored records, a worker loop), or NULL */
    int (*prepare)(const struct scenario *sc, const scenario_ctx *ctx, scenario_plan *plan,
                   char *msg, size_t cap);
    int connections; /* wrk connections, 0: the run's --connections */
} scenario;

const scenario *scenario_find(const char *name);
/* Writes sc's plan: its path and 1 KiB body template, then its own set-up. */
int scenario_prepare(const scenario *sc, const scenario_ctx *ctx, scenario_plan *plan, char *msg,
                     size_t cap);
/* Every scenario, for --help. */
const scenario *scenario_all(size_t *n);

#endif
