/* budget: what the process may use and how storhd shares it, decided once
 * at start. Descriptors: RLIMIT_NOFILE (the soft limit raised to the hard
 * one) less what the HTTP threads, workers, the RPC pool and the mirrors
 * need, split between connections and open engines. Memory: the cgroup's
 * limit when there is one (else RAM or RLIMIT_AS), a quarter of it for the
 * record caches together. It also remembers the last time a limit was hit,
 * so /readyz can say the service is degraded and why. */
#ifndef STORHD_BUDGET_H
#define STORHD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "registry.h"

typedef struct budget {
    uint64_t nofile;          /* the descriptor limit in force */
    uint64_t fds_reserved;    /* for everything but connections and engines */
    unsigned max_conns;       /* connections admitted: the config's, lowered to fit */
    size_t max_open_engines;  /* --max-open-engines, or what fits */
    size_t fd_safe_engines;   /* what fits the descriptors */
    uint64_t memory_limit;    /* bytes the process may use */
    const char *memory_from;  /* "cgroup v2", "cgroup v1", "RLIMIT_AS" or "RAM" */
    size_t cache_bytes_total; /* --cache-bytes-total, or a quarter of memory_limit */
} budget;

/* Raises the descriptor limit and fills b from cfg (nrpc: RPC connections,
 * nmirrors: SQL mirrors). Never fails: a tight limit gives small budgets. */
void budget_init(const config *cfg, size_t nrpc, size_t nmirrors, budget *b);
/* A request hit a limit (cause: the message it got); /readyz reports it
 * for a few seconds. Thread-safe. */
void budget_note_exhausted(const char *cause);
/* True while a limit was hit lately; the cause is copied to out. */
bool budget_degraded(char *out, size_t cap);
/* Descriptors this process has open now, -1 if unknown. */
int budget_fds_in_use(void);
/* The /metrics lines of the budgets: engines by kind, evictions, reopens,
 * descriptors and cache bytes against their budgets. */
void budget_render_metrics(buf *out, const budget *b, registry *reg);

#endif
