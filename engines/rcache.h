/* rcache: a bounded record cache for one docstore: id -> decoded data (or
 * "no such record"), bounded by entries and bytes, least recently used out
 * first. Hits are validated as storh's CacheValidation says (FORMAT.md 7.2):
 * STAT compares what every publish by rename changes (inode and device,
 * nanosecond mtime and ctime, size), so a same-size rewrite in the same
 * second by another process is seen; HASH compares mtime (seconds), size
 * and the xxh128 of the bytes; TRUST checks nothing (out-of-band edits stay
 * invisible). Thread-safe. */
#ifndef STORH_RCACHE_H
#define STORH_RCACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

typedef enum { RCACHE_STAT, RCACHE_HASH, RCACHE_TRUST } rcache_mode;

typedef struct rcache rcache;

typedef struct rcache_stats {
    uint64_t hits, misses, evictions, entries, bytes;
} rcache_stats;

rcache *rcache_new(rcache_mode mode, size_t max_entries, size_t max_bytes);
void rcache_free(rcache *c);
rcache_mode rcache_get_mode(const rcache *c);
/* What a lookup found. */
typedef enum { RCACHE_MISS, RCACHE_HIT, RCACHE_HIT_ABSENT } rcache_result;
/* Looks id up and validates the entry against path. On RCACHE_HIT *data
 * is a new reference. */
rcache_result rcache_get(rcache *c, const char *id, const char *path, json_t **data);
/* Remembers data (borrowed; NULL = no such record) with the file state
 * the bytes came from (bytes/len may be NULL for an absent record). */
void rcache_put(rcache *c, const char *id, const json_t *data, const struct stat *st,
                const char *bytes, size_t len);
void rcache_forget(rcache *c, const char *id);
void rcache_clear(rcache *c);
void rcache_get_stats(rcache *c, rcache_stats *out);
/* Process-wide totals over every cache (for /metrics). */
void rcache_totals(rcache_stats *out);
/* One bound on the bytes of every cache together (0: none, the default):
 * the least recently used entries of any cache go first; each cache's own
 * bounds still apply. */
void rcache_set_budget(size_t bytes);
size_t rcache_budget(void);
/* Entries evicted to keep the total within the budget. */
uint64_t rcache_budget_evictions(void);

#endif
