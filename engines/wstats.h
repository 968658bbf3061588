/* wstats: the write path's health for /metrics and /readyz. Group-commit
 * batch sizes (how many writes one fsync made durable) per kind of store,
 * and the stores that refuse writes because an fsync of theirs failed (a
 * poisoned gcommit). Process-wide, kept until the process ends: a poisoned
 * store stays listed until storhd restarts, as its refusal does. */
#ifndef STORH_WSTATS_H
#define STORH_WSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { WSTATS_LOG, WSTATS_QUEUE, WSTATS_DOC, WSTATS__KINDS } wstats_kind;

#define WSTATS_NBUCKETS 10 /* upper bounds 1, 2, 4 ... 512; then +Inf */
#define WSTATS_NAME_CAP 72

typedef struct wstats_hist {
    uint64_t bucket[WSTATS_NBUCKETS + 1]; /* not cumulative; last = +Inf */
    uint64_t sum, count;
} wstats_hist;

typedef struct wstats_store {
    wstats_kind kind;
    char name[WSTATS_NAME_CAP];
    int errnum; /* the first failure's errno */
} wstats_store;

/* One fsync made `writes` writes (tickets) of a store of this kind durable.
 * Lock-free; for every group-commit path (logs, queues, documents). */
void wstats_batch(wstats_kind kind, uint64_t writes);
void wstats_batch_snapshot(wstats_kind kind, wstats_hist *out);
/* The upper bound of bucket i (< WSTATS_NBUCKETS). */
double wstats_batch_le(size_t i);
/* "log", "queue", "doc". */
const char *wstats_kind_name(wstats_kind kind);

/* Records that the store refuses writes from now on (idempotent). */
void wstats_poisoned(wstats_kind kind, const char *name, int errnum);
/* Whether the store was poisoned (so an engine cache keeps it open: a
 * reopen would take writes again before a restart). */
bool wstats_is_poisoned(wstats_kind kind, const char *name);
/* Copies up to max poisoned stores to out; returns how many there are. */
size_t wstats_poisoned_list(wstats_store *out, size_t max);

#endif
