/* fwatch: a freshness watch on inotify over one collection's record files
 * (<dir>/data/<xx>/<id>.jsonc, xx = id[24..25]): the root, the collection
 * dir, data/ and each shard dir a validated record lives in. It owns the
 * inotify descriptor and a validation epoch per shard; an epoch moves on
 * when the watch of its shard (or above) is lost or the queue overflowed.
 * Not thread-safe: its owner (rcache) calls it under its own lock. */
#ifndef STORH_FWATCH_H
#define STORH_FWATCH_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fwatch fwatch;

/* A watch over the collection at dir (root/name); NULL when watches are
 * turned off (fwatch_set_enabled) or out of memory: the owner then
 * validates every hit by stat. Caller frees with fwatch_free. */
fwatch *fwatch_new(const char *dir);
void fwatch_free(fwatch *w);
/* Process-wide switch (default on): off for filesystems inotify does not
 * see other hosts' writes on (network filesystems). */
void fwatch_set_enabled(bool on);
bool fwatch_enabled(void);
/* Reads every queued event (one read(), EAGAIN when nothing changed) and
 * calls stale(ctx, id) for each record named by one; lost watches and an
 * overflow move the epochs of what they covered on. */
void fwatch_drain(fwatch *w, void (*stale)(void *ctx, const char *id), void *ctx);
/* The current epoch of id's shard: an entry validated at it, and not named
 * by an event since, is fresh. 0 (never current) when not watched. */
uint32_t fwatch_epoch(const fwatch *w, const char *id);
/* Makes sure id's shard is watched, before the caller stats id's file:
 * returns the epoch a successful stat validates the entry at, 0 when the
 * shard cannot be watched (absent dir, no inotify: stat per hit). */
uint32_t fwatch_arm(fwatch *w, const char *id);

typedef struct fwatch_stats {
    uint64_t drains, events, resets, watches;
} fwatch_stats;
/* Process-wide totals (tests, /metrics). */
void fwatch_totals(fwatch_stats *out);

#endif
