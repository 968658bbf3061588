/* registry: the engine handles storhd has opened (docstores, logs, queues),
 * one per collection directory, shared by all threads for the life of the
 * process. Opening a docstore creates nothing on disk; logs and queues are
 * created only when asked to (create), so reads of a missing one are 404.
 * Names must be validated (route_valid_name) before they get here. */
#ifndef STORHD_REGISTRY_H
#define STORHD_REGISTRY_H

#include <stdbool.h>

#include "docstore.h"
#include "logset.h"
#include "queue.h"
#include "seglog.h"
#include "storh_err.h"

typedef struct registry registry;

/* cache_mode: an rcache_mode; cache_entries 0 = no record cache. */
registry *registry_new(const char *root, int cache_mode, size_t cache_entries, size_t cache_bytes);
void registry_free(registry *r);
/* Handles are owned by the registry (do not close them). */
int registry_docstore(registry *r, const char *name, docstore **out, storh_err *err);
int registry_seglog(registry *r, const char *name, const seglog_opts *o, bool create, seglog **out,
                    storh_err *err);
/* The logs a reader of stream name sees (logset_open with the registry as
 * opener: every partition of a partitioned stream); free with logset_free,
 * the handles stay the registry's. */
int registry_logset(registry *r, const char *name, const seglog_opts *o, logset *out,
                    storh_err *err);
int registry_queue(registry *r, const char *name, bool create, queue **out, storh_err *err);
/* Calls fn for every open queue (for the queue depth metrics). */
void registry_each_queue(registry *r, void (*fn)(void *ctx, const char *name, queue *q), void *ctx);

#endif
