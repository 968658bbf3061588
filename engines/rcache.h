/* rcache: a bounded record cache for one docstore: id -> decoded data
 * and/or its canonical bytes (or "no such record"), bounded by entries and
 * bytes, least recently used out first. Hits are validated as storh's
 * CacheValidation says (FORMAT.md 7.2): STAT compares what every publish
 * by rename changes (inode and device, nanosecond mtime and ctime, size),
 * so a same-size rewrite in the same second by another process is seen;
 * HASH compares mtime (seconds), size and the xxh128 of the bytes; TRUST
 * checks nothing (out-of-band edits stay invisible). Thread-safe. */
#ifndef STORH_RCACHE_H
#define STORH_RCACHE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

typedef enum { RCACHE_STAT, RCACHE_HASH, RCACHE_TRUST } rcache_mode;

typedef struct rcache rcache;

typedef struct rcache_stats {
    uint64_t hits, misses, evictions, entries, bytes;
    uint64_t watched; /* validations the watch answered without a stat */
} rcache_stats;

rcache *rcache_new(rcache_mode mode, size_t max_entries, size_t max_bytes);
void rcache_free(rcache *c);
rcache_mode rcache_get_mode(const rcache *c);
/* STAT mode: hits are kept fresh by a watch (fwatch.h) over the record
 * files of the collection at dir instead of a stat each, where inotify
 * serves; the cache owns the watch and its descriptor. */
void rcache_watch(rcache *c, const char *dir);
/* What a lookup found. */
typedef enum { RCACHE_MISS, RCACHE_HIT, RCACHE_HIT_ABSENT } rcache_result;
/* Looks id up and validates the entry against path. On RCACHE_HIT *data
 * is a new reference. */
rcache_result rcache_get(rcache *c, const char *id, const char *path, json_t **data);
/* A fill's ticket, taken before the reader opens (or fails to find) the
 * record file: with a watch, the entry the read fills is fresh without a
 * stat when no event named a record of the collection between the ticket
 * and its next hit's drain (the shard was watched before the read began,
 * so whatever changed the file after it is queued; the fill itself reads
 * nothing of the watch); else its next hit stats, as any. */
typedef struct rcache_ticket {
    uint32_t epoch; /* the shard's watch epoch; 0: no watch */
    uint64_t named; /* records named by events, counted */
} rcache_ticket;
rcache_ticket rcache_fill_begin(rcache *c, const char *id);
/* Remembers data (borrowed; NULL = no such record) with the file state
 * the bytes came from (bytes/len may be NULL for an absent record); t is
 * the read's ticket (NULL: none). */
void rcache_put(rcache *c, const char *id, const json_t *data, const struct stat *st,
                const char *bytes, size_t len, const rcache_ticket *t);
void rcache_forget(rcache *c, const char *id);

/* A record's answer bytes (its canonical encoding) and their ETag, shared
 * by reference between a cache entry and the answers that send them, so a
 * hit is sent without encoding or copying: the last release frees it. */
typedef struct rcache_blob {
    _Atomic unsigned refs;
    size_t len;
    char etag[20]; /* "<xxh3-64 of the bytes, 16 hex digits>" */
    char data[];
} rcache_blob;
/* The strong ETag of answer bytes, quoted, as rcache_blob.etag holds it. */
void rcache_etag_of(const char *bytes, size_t len, char out[20]);
/* A blob of a copy of bytes with one reference; NULL when out of memory. */
rcache_blob *rcache_blob_new(const char *bytes, size_t len);
/* Drops one reference (NULL is fine); takes void * to be a free callback. */
void rcache_blob_release(void *blob);
/* rcache_get, and when the entry holds its answer bytes *blob is a new
 * reference to them and *data is left alone; else *blob is NULL. With
 * blob NULL it is rcache_get. */
rcache_result rcache_get_blob(rcache *c, const char *id, const char *path, json_t **data,
                              rcache_blob **blob);
/* Remembers a record by its canonical bytes (blob: a reference given to
 * the cache; its bytes must be docstore_encode_record's for their data, as
 * reccanon_is_canonical says) and the state of the file that holds them,
 * as a write publishes it: a later get is a validated hit, decoding the
 * bytes the first time a reader wants data. t: a reader's ticket, as for
 * rcache_put. With path (the record file, a writer's), a watched entry is
 * checked once now (the watch drained, then one stat of path against st)
 * so its first hit needs no stat: the writer pays the check instead of its
 * next reader. Both NULL: the first hit stats. */
void rcache_put_bytes(rcache *c, const char *id, rcache_blob *blob, const struct stat *st,
                      const rcache_ticket *t, const char *path);
/* A bulk's share of the cache: how many records, and their bytes, it
 * keeps for rcache_put_published (its memory until it ends). */
typedef struct rcache_share {
    size_t entries, bytes;
    uint64_t cache; /* the serial of the cache that pledged it (0: none) */
} rcache_share;
/* The share of a bulk beginning now, pledged to it until
 * rcache_bulk_unshare: for each of the cache's bounds, the room it has
 * free and not pledged to other bulks (within the process-wide budget
 * too), so that keeping it evicts nothing that is cached now, or a
 * quarter of the bound when that is more, so that a bulk into a full
 * cache evicts at most a quarter of what reads and puts made hot. The
 * memory of the bulks running at once is bounded by the cache's bounds
 * and a quarter of them per bulk, whatever their sizes. Reads and puts do
 * not heed pledges: what they cache meanwhile may be evicted when a
 * bulk's rows are handed over. */
rcache_share rcache_bulk_share(rcache *c);
/* Gives back what rcache_bulk_share pledged (once the bulk handed its
 * rows to the cache, or kept none); nothing when c is not the cache that
 * pledged it (the store's cache was replaced since: rcache_free gave back
 * what that one had pledged). */
void rcache_bulk_unshare(rcache *c, const rcache_share *s);
/* Whether n records of bytes bytes in all fit share s. */
bool rcache_share_fits(const rcache_share *s, size_t n, size_t bytes);
/* A record a writer published by rename: its canonical bytes (as for
 * rcache_put_bytes; a reference given to the cache), the record file's
 * path and the fstat of the file as its writer wrote and closed it. */
typedef struct rcache_pub {
    const char *id;
    const char *path;
    rcache_blob *blob;
    struct stat written;
} rcache_pub;
/* Remembers a bulk's published records (under the collection's lock, after
 * their renames): one drain of the watch per run of them, then per record
 * one stat of its path; a path that still holds the file written (inode,
 * device, size, mtime: a rename keeps them, anything else in its place
 * changes one) is cached with its state now (the rename's ctime), fresh
 * for the watch from that stat on, so what changes it later is seen. Any
 * other is forgotten. Every blob is the cache's after the call (each
 * p[i].blob is NULL). */
void rcache_put_published(rcache *c, rcache_pub *p, size_t n);
/* A lookup for a reader that wants a record's bytes and the state of the
 * file they are (a mirror's feed), validated as rcache_peek_drained (the
 * caller drains): RCACHE_HIT only in STAT mode and where the entry holds
 * canonical bytes; *blob is then a new reference and *st has the file's
 * device, inode, size, mtime and ctime (the rest zero). */
rcache_result rcache_peek_file(rcache *c, const char *id, const char *path, rcache_blob **blob,
                               struct stat *st);
/* Drains the watch once for a batch of lookups (rcache_get_drained). */
void rcache_drain(rcache *c);
/* rcache_get for a reader that called rcache_drain at the start of its
 * batch (a query's candidates): the entry is validated as of that drain,
 * so a change made after the batch began may not be seen (a change that
 * returned before it always is). */
rcache_result rcache_get_drained(rcache *c, const char *id, const char *path, json_t **data);
/* rcache_get_blob, validated as rcache_get_drained is. */
rcache_result rcache_get_blob_drained(rcache *c, const char *id, const char *path, json_t **data,
                                      rcache_blob **blob);
/* A validated lookup for a reader passing through (a listing, an export):
 * the LRU order and the hit and miss counts are left alone, and nothing is
 * decoded. On RCACHE_HIT *blob (the bytes) and *data (the decoded data) are
 * new references where the entry holds them, NULL where not (at least one
 * is set). */
rcache_result rcache_peek(rcache *c, const char *id, const char *path, json_t **data,
                          rcache_blob **blob);
/* rcache_peek, validated as rcache_get_drained is (a listing that drains
 * the watch once for a run of its records). */
rcache_result rcache_peek_drained(rcache *c, const char *id, const char *path, json_t **data,
                                  rcache_blob **blob);
/* Gives blob (a reference of its own) to the entry of id if that entry
 * still holds data (the reference rcache_get returned), so a rewrite in
 * between is never given the older bytes; counted in the entry's bytes. */
void rcache_attach_blob(rcache *c, const char *id, const json_t *data, rcache_blob *blob);
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
