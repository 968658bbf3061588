/* registry: the engines storhd has open (docstores, logs, queues), one per
 * collection directory, shared by all threads. At most max_open are open at
 * once: a request holds the engines it uses (a holder, released when the
 * request ends), and an engine nobody holds is closed least recently used
 * first when room is needed, then reopened on its next use. Opening a
 * docstore creates nothing on disk; logs and queues are created only when
 * asked to (create), so reads of a missing one are 404. Names must be
 * validated (route_valid_name) before they get here. */
#ifndef STORHD_REGISTRY_H
#define STORHD_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docstore.h"
#include "logset.h"
#include "queue.h"
#include "seglog.h"
#include "storh_err.h"

typedef struct registry registry;
struct registry_entry;

/* The engines one user (a request, the background push) holds: they stay
 * open until registry_release. Zero-initialise it. */
#define REGISTRY_HOLD_INLINE 4
typedef struct registry_holder {
    struct registry_entry *one[REGISTRY_HOLD_INLINE];
    struct registry_entry **more; /* beyond the inline ones */
    size_t n, cap_more;
} registry_holder;

enum { REGISTRY_DOC, REGISTRY_LOG, REGISTRY_QUEUE, REGISTRY_KINDS };

/* A snapshot for /metrics and /readyz. */
typedef struct registry_stats {
    size_t open[REGISTRY_KINDS]; /* open (or opening) engines by kind */
    size_t held;                 /* of them, held by a request */
    size_t max_open;
    uint64_t opens, reopens, evictions, refusals; /* refusals: budget full, all held */
} registry_stats;

/* cache_mode: an rcache_mode; cache_entries 0 = no record cache. max_open:
 * engines open at once (at least 1). */
registry *registry_new(const char *root, int cache_mode, size_t cache_entries, size_t cache_bytes,
                       size_t max_open);
void registry_free(registry *r);
/* Handles are owned by the registry (do not close them) and stay valid
 * while h holds them. A full budget of held engines is STORH_ELIMIT. */
int registry_docstore(registry *r, registry_holder *h, const char *name, docstore **out,
                      storh_err *err);
int registry_seglog(registry *r, registry_holder *h, const char *name, const seglog_opts *o,
                    bool create, seglog **out, storh_err *err);
/* The logs a reader of stream name sees (logset_open with the registry as
 * opener: every partition of a partitioned stream), each held by h like any
 * other engine; free with logset_free, the handles stay the registry's. */
int registry_logset(registry *r, registry_holder *h, const char *name, const seglog_opts *o,
                    logset *out, storh_err *err);
int registry_queue(registry *r, registry_holder *h, const char *name, bool create, queue **out,
                   storh_err *err);
/* Out of descriptors: closes a share of the idle engines (a quarter, at
 * least 8) so the next try finds some, and lowers max_open to the engines
 * left open. */
void registry_shed_idle(registry *r);
/* Past this many open engines (what the descriptor budget planned for,
 * exceeded only with --max-open-engines set higher), each open first checks
 * that a few descriptors are still free and sheds idle engines if not. */
void registry_set_fd_safe(registry *r, size_t engines);
/* Lets go of everything h holds (h is then empty and reusable). */
void registry_release(registry *r, registry_holder *h);
/* Calls fn for every open queue (for the queue depth metrics). */
void registry_each_queue(registry *r, void (*fn)(void *ctx, const char *name, queue *q), void *ctx);
void registry_get_stats(registry *r, registry_stats *out);

#endif
