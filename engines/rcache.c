#include "rcache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fsx.h"
#include "fwatch.h"
#include "idmap.h"
#include "reccanon.h"
#include "xxhash.h"

#define ENTRY_OVERHEAD 160 /* node, map slot and jansson headers, roughly */

/* What every publish changes (a compact copy of the stat fields). */
typedef struct file_state {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
} file_state;

static file_state state_of(const struct stat *st)
{
    return (file_state){st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim};
}

typedef struct node {
    char id[IDMAP_KEY];
    json_t *data;      /* decoded; NULL until a reader wants it from blob */
    rcache_blob *blob; /* the canonical bytes (a write's, or a reader's encoding) */
    file_state st;     /* of the file the data came from */
    uint32_t fresh;    /* the watch epoch it was validated at; 0: stat at the next hit */
    /* a reader's fill not yet vouched for: its ticket, checked at the next
     * hit's drain (pend_epoch 0: none) */
    uint32_t pend_epoch;
    uint64_t pend_named;
    XXH128_hash_t hash;
    size_t bytes;
    struct node *prev, *next; /* LRU: head is the most recent */
    struct rcache *owner;
    struct node *gprev, *gnext; /* the process-wide LRU (under gmu) */
} node;

struct rcache {
    pthread_mutex_t mu;
    rcache_mode mode;
    size_t max_entries, max_bytes, bytes;
    idmap map; /* id -> node* */
    node *head, *tail;
    uint64_t hits, misses, evictions;
    size_t pledged_entries, pledged_bytes; /* bulks' shares not yet handed over */
    uint64_t serial;                       /* this cache, for the shares it pledges */
    fwatch *fw;                            /* NULL: every hit validated by stat */
    uint64_t named; /* records named by the watch's events (tickets compare it) */
};

static _Atomic uint64_t total_hits, total_misses, total_evictions, total_watched;
static _Atomic int64_t total_entries, total_bytes;

/* The budget over every cache: one LRU of all nodes. Lock order: a cache's
 * mu, then gmu; the budget's evictor holds gmu and only try-locks a cache
 * (a busy cache's oldest entries are skipped, not waited for). */
static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
static node *ghead, *gtail;
static size_t gbytes, gbudget;   /* gbudget 0: no process-wide bound */
static size_t gpledged;          /* bulks' shares of bytes, over every cache */
static _Atomic uint64_t serials; /* the last cache's serial */
static _Atomic uint64_t budget_evictions;

void rcache_set_budget(size_t bytes)
{
    pthread_mutex_lock(&gmu);
    gbudget = bytes;
    pthread_mutex_unlock(&gmu);
}

size_t rcache_budget(void)
{
    pthread_mutex_lock(&gmu);
    size_t b = gbudget;
    pthread_mutex_unlock(&gmu);
    return b;
}

uint64_t rcache_budget_evictions(void)
{
    return atomic_load(&budget_evictions);
}

/* Under gmu. */
static void glink_front(node *n)
{
    n->gprev = NULL;
    n->gnext = ghead;
    if (ghead)
        ghead->gprev = n;
    ghead = n;
    if (!gtail)
        gtail = n;
}

static void gunlink(node *n)
{
    if (n->gprev)
        n->gprev->gnext = n->gnext;
    else
        ghead = n->gnext;
    if (n->gnext)
        n->gnext->gprev = n->gprev;
    else
        gtail = n->gprev;
    n->gprev = n->gnext = NULL;
}

rcache *rcache_new(rcache_mode mode, size_t max_entries, size_t max_bytes)
{
    rcache *c = calloc(1, sizeof *c);
    if (!c || idmap_init(&c->map, sizeof(node *)) != 0) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->mode = mode;
    c->serial = atomic_fetch_add(&serials, 1) + 1;
    c->max_entries = max_entries ? max_entries : 1;
    c->max_bytes = max_bytes ? max_bytes : 1;
    return c;
}

void rcache_watch(rcache *c, const char *dir)
{
    if (c->mode != RCACHE_STAT)
        return;
    fwatch *w = fwatch_new(dir);
    pthread_mutex_lock(&c->mu);
    fwatch_free(c->fw);
    c->fw = w;
    pthread_mutex_unlock(&c->mu);
}

rcache_mode rcache_get_mode(const rcache *c)
{
    return c->mode;
}

static void unlink_node(rcache *c, node *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        c->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        c->tail = n->prev;
    n->prev = n->next = NULL;
}

static void push_front(rcache *c, node *n)
{
    n->next = c->head;
    n->prev = NULL;
    if (c->head)
        c->head->prev = n;
    c->head = n;
    if (!c->tail)
        c->tail = n;
}

/* Under c->mu and gmu. */
static void drop_locked(rcache *c, node *n)
{
    gunlink(n);
    gbytes -= n->bytes;
    unlink_node(c, n);
    char id[IDMAP_KEY + 1];
    memcpy(id, n->id, IDMAP_KEY);
    idmap_del(&c->map, id);
    c->bytes -= n->bytes;
    atomic_fetch_sub(&total_bytes, (int64_t)n->bytes);
    atomic_fetch_sub(&total_entries, 1);
    json_decref(n->data);
    rcache_blob_release(n->blob);
    free(n);
}

/* Under c->mu. */
static void drop(rcache *c, node *n)
{
    pthread_mutex_lock(&gmu);
    drop_locked(c, n);
    pthread_mutex_unlock(&gmu);
}

/* Least recently used entries of any cache out until the total is within
 * the budget. Called holding no cache's mu. */
static void enforce_budget(void)
{
    pthread_mutex_lock(&gmu);
    node *n = gtail;
    while (gbudget && gbytes > gbudget && n) {
        rcache *c = n->owner;
        if (pthread_mutex_trylock(&c->mu) != 0) {
            n = n->gprev;
            continue;
        }
        node *prev = n->gprev;
        drop_locked(c, n);
        c->evictions++;
        pthread_mutex_unlock(&c->mu);
        atomic_fetch_add(&total_evictions, 1);
        atomic_fetch_add(&budget_evictions, 1);
        n = prev;
    }
    pthread_mutex_unlock(&gmu);
}

void rcache_clear(rcache *c)
{
    /* every entry out of the lists and the map at once, freed after: a
     * close of a big cache costs the frees, not an unlink and a map
     * delete each */
    pthread_mutex_lock(&c->mu);
    node *all = c->head;
    int64_t n = 0;
    pthread_mutex_lock(&gmu);
    for (node *x = all; x; x = x->next, n++) {
        gunlink(x);
        gbytes -= x->bytes;
    }
    pthread_mutex_unlock(&gmu);
    atomic_fetch_sub(&total_bytes, (int64_t)c->bytes);
    atomic_fetch_sub(&total_entries, n);
    c->head = c->tail = NULL;
    c->bytes = 0;
    idmap_clear(&c->map);
    pthread_mutex_unlock(&c->mu);
    while (all) {
        node *next = all->next;
        json_decref(all->data);
        rcache_blob_release(all->blob);
        free(all);
        all = next;
    }
}

/* *from less n, down to 0 at most (a pledge given back) */
static void take_back(size_t *from, size_t n)
{
    *from -= n < *from ? n : *from;
}

void rcache_free(rcache *c)
{
    if (!c)
        return;
    rcache_clear(c);
    /* the shares of bulks still running leave with it */
    pthread_mutex_lock(&gmu);
    take_back(&gpledged, c->pledged_bytes);
    pthread_mutex_unlock(&gmu);
    fwatch_free(c->fw);
    idmap_free(&c->map);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static node *find(rcache *c, const char *id)
{
    node **slot = idmap_get(&c->map, id);
    return slot ? *slot : NULL;
}

/* Every publish (storh's or storhd's write to a temp file then rename)
 * gives the path a new inode and a new ctime, so a same-size rewrite in the
 * same second is seen too; an in-place edit changes mtime or ctime. */
static bool same_file_state(const file_state *a, const file_state *b)
{
    return a->ino == b->ino && a->dev == b->dev && a->size == b->size &&
           a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
           a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec;
}

/* An event named id's file: its entry is stat-validated at its next hit. */
static void stale(void *ctx, const char *id)
{
    rcache *c = ctx;
    c->named++;
    node *n = find(c, id);
    if (n)
        n->fresh = 0;
}

static bool stat_valid(rcache *c, const node *n, const char *path);

/* With a watch, an entry validated after its shard's watch was set up and
 * named by no event since is fresh without a syscall but the drain's
 * read(): the kernel queues an event inside the write or rename that makes
 * it, so a change that returned before this hit began is seen. */
static bool still_valid(rcache *c, node *n, const char *path, bool drained)
{
    if (c->mode == RCACHE_TRUST)
        return true;
    if (!c->fw)
        return stat_valid(c, n, path);
    char id[IDMAP_KEY + 1];
    memcpy(id, n->id, IDMAP_KEY);
    id[IDMAP_KEY] = '\0';
    if (!drained)
        fwatch_drain(c->fw, stale, c);
    uint32_t now = fwatch_epoch(c->fw, id);
    /* a reader's fill: fresh if no event named a record since its ticket
     * (as fresh_at would have found at the fill, with more events seen);
     * only after a drain of this lookup's own: a batch's drain may predate
     * the fill */
    if (!drained && n->pend_epoch && n->pend_epoch == now && n->pend_named == c->named)
        n->fresh = n->pend_epoch;
    n->pend_epoch = 0;
    if (n->fresh && n->fresh == now) {
        atomic_fetch_add_explicit(&total_watched, 1, memory_order_relaxed);
        return true;
    }
    uint32_t e = fwatch_arm(c->fw, id); /* the watch first, then the stat */
    bool ok = stat_valid(c, n, path);
    n->fresh = ok ? e : 0;
    return ok;
}

static bool stat_valid(rcache *c, const node *n, const char *path)
{
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (!n->data && !n->blob) /* no such record */
        return !exists;
    file_state now = exists ? state_of(&st) : (file_state){0};
    if (!exists || now.size != n->st.size)
        return false;
    if (c->mode == RCACHE_STAT)
        return same_file_state(&now, &n->st);
    if (now.mtim.tv_sec != n->st.mtim.tv_sec)
        return false;
    buf b = BUF_INIT;
    bool same = fsx_read_all(path, &b, NULL) == 0 && (off_t)b.len == n->st.size;
    if (same) {
        XXH128_hash_t h = XXH3_128bits(b.data, b.len);
        same = XXH128_isEqual(h, n->hash);
    }
    buf_free(&b);
    return same;
}

/* Adds extra bytes to n's cost (under c->mu), then evicts older entries
 * until the cache is within its bound again. */
static void grow(rcache *c, node *n, size_t extra)
{
    n->bytes += extra;
    c->bytes += extra;
    atomic_fetch_add(&total_bytes, (int64_t)extra);
    pthread_mutex_lock(&gmu);
    gbytes += extra;
    pthread_mutex_unlock(&gmu);
    while (c->tail && c->tail != n && c->bytes > c->max_bytes) {
        drop(c, c->tail);
        c->evictions++;
        atomic_fetch_add(&total_evictions, 1);
    }
}

/* A hit on an entry that holds only its bytes, by a reader that wants the
 * data: decoded once and kept. False when the bytes do not decode (the
 * entry is then dropped as a miss). */
static bool decode_into(rcache *c, node *n)
{
    char id[IDMAP_KEY + 1];
    memcpy(id, n->id, IDMAP_KEY);
    id[IDMAP_KEY] = '\0';
    /* an entry with bytes and no data is rcache_put_bytes's: checked */
    n->data = reccanon_decode_checked(n->blob->data, id);
    if (!n->data)
        return false;
    grow(c, n, n->blob->len); /* the tree, counted as its bytes as rcache_put does */
    return true;
}

static void touch(rcache *c, node *n)
{
    if (c->head != n) {
        unlink_node(c, n);
        push_front(c, n);
    }
    pthread_mutex_lock(&gmu);
    if (ghead != n) {
        gunlink(n);
        glink_front(n);
    }
    pthread_mutex_unlock(&gmu);
}

static rcache_result lookup(rcache *c, const char *id, const char *path, json_t **data,
                            rcache_blob **blob, bool drained)
{
    if (blob)
        *blob = NULL;
    pthread_mutex_lock(&c->mu);
    node *n = find(c, id);
    rcache_result r = RCACHE_MISS;
    if (n && still_valid(c, n, path, drained) &&
        (blob || n->data || !n->blob || decode_into(c, n))) {
        touch(c, n);
        r = n->data || n->blob ? RCACHE_HIT : RCACHE_HIT_ABSENT;
        if (blob && n->blob) {
            atomic_fetch_add_explicit(&n->blob->refs, 1, memory_order_relaxed);
            *blob = n->blob;
        } else if (n->data) {
            *data = json_incref(n->data);
        }
        c->hits++;
        atomic_fetch_add(&total_hits, 1);
    } else {
        if (n)
            drop(c, n);
        c->misses++;
        atomic_fetch_add(&total_misses, 1);
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

rcache_result rcache_get_blob(rcache *c, const char *id, const char *path, json_t **data,
                              rcache_blob **blob)
{
    return lookup(c, id, path, data, blob, false);
}

void rcache_drain(rcache *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->fw)
        fwatch_drain(c->fw, stale, c);
    pthread_mutex_unlock(&c->mu);
}

rcache_result rcache_get_drained(rcache *c, const char *id, const char *path, json_t **data)
{
    return lookup(c, id, path, data, NULL, true);
}

rcache_result rcache_get_blob_drained(rcache *c, const char *id, const char *path, json_t **data,
                                      rcache_blob **blob)
{
    return lookup(c, id, path, data, blob, true);
}

static rcache_result peek(rcache *c, const char *id, const char *path, json_t **data,
                          rcache_blob **blob, bool drained)
{
    *data = NULL;
    *blob = NULL;
    pthread_mutex_lock(&c->mu);
    node *n = find(c, id);
    rcache_result r = RCACHE_MISS;
    if (n && still_valid(c, n, path, drained)) {
        r = n->data || n->blob ? RCACHE_HIT : RCACHE_HIT_ABSENT;
        if (n->blob) {
            atomic_fetch_add_explicit(&n->blob->refs, 1, memory_order_relaxed);
            *blob = n->blob;
        }
        if (n->data)
            *data = json_incref(n->data);
    } else if (n) {
        drop(c, n);
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

rcache_result rcache_peek(rcache *c, const char *id, const char *path, json_t **data,
                          rcache_blob **blob)
{
    return peek(c, id, path, data, blob, false);
}

rcache_result rcache_peek_drained(rcache *c, const char *id, const char *path, json_t **data,
                                  rcache_blob **blob)
{
    return peek(c, id, path, data, blob, true);
}

rcache_result rcache_get(rcache *c, const char *id, const char *path, json_t **data)
{
    return rcache_get_blob(c, id, path, data, NULL);
}

void rcache_etag_of(const char *bytes, size_t len, char out[20])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t h = XXH3_64bits(bytes, len);
    out[0] = '"';
    for (int i = 16; i >= 1; i--, h >>= 4)
        out[i] = hex[h & 15];
    out[17] = '"';
    out[18] = '\0';
}

rcache_blob *rcache_blob_new(const char *bytes, size_t len)
{
    rcache_blob *b = malloc(sizeof *b + len + 1);
    if (!b)
        return NULL;
    atomic_init(&b->refs, 1);
    b->len = len;
    memcpy(b->data, bytes, len);
    b->data[len] = '\0';
    rcache_etag_of(bytes, len, b->etag);
    return b;
}

void rcache_blob_release(void *blob)
{
    rcache_blob *b = blob;
    if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
        free(b);
}

void rcache_attach_blob(rcache *c, const char *id, const json_t *data, rcache_blob *blob)
{
    pthread_mutex_lock(&c->mu);
    node *n = find(c, id);
    if (!n || !n->data || n->data != data || n->blob) {
        pthread_mutex_unlock(&c->mu);
        rcache_blob_release(blob);
        return;
    }
    n->blob = blob;
    grow(c, n, blob->len);
    pthread_mutex_unlock(&c->mu);
    enforce_budget();
}

rcache_ticket rcache_fill_begin(rcache *c, const char *id)
{
    rcache_ticket t = {0, 0};
    pthread_mutex_lock(&c->mu);
    if (c->fw) {
        t.epoch = fwatch_arm(c->fw, id); /* the watch before the read */
        t.named = c->named;
    }
    pthread_mutex_unlock(&c->mu);
    return t;
}

/* Under c->mu, before n goes in: the epoch n is fresh at. With a ticket,
 * the watch (drained now) named no record since the ticket was taken, so
 * the file n was read from is still the path's; with a path, one stat now
 * (after the drain) shows the path is still the file n holds. */
static uint32_t fresh_at(rcache *c, const node *n, const char *id, const rcache_ticket *t,
                         const char *path)
{
    if (!c->fw || (!t && !path))
        return 0;
    fwatch_drain(c->fw, stale, c);
    /* without a ticket the watch is armed after the drain (an event of
     * the shard dir's own making, queued before, would undo it) and before
     * the stat */
    uint32_t e = t ? t->epoch : fwatch_arm(c->fw, id);
    if (!e || fwatch_epoch(c->fw, id) != e || (t && c->named != t->named))
        return 0;
    return !path || stat_valid(c, n, path) ? e : 0;
}

/* Under c->mu: takes n (its id, data or blob, state, hash and fresh set)
 * into the cache in place of any entry of id (the caller enforces the
 * budget once the lock is let go). */
static void insert_locked(rcache *c, node *n, size_t cost)
{
    n->bytes = cost;
    n->owner = c;
    char id[IDMAP_KEY + 1];
    memcpy(id, n->id, IDMAP_KEY);
    id[IDMAP_KEY] = '\0';
    node *old = find(c, id);
    if (old)
        drop(c, old);
    while (c->tail && (c->map.len + 1 > c->max_entries || c->bytes + cost > c->max_bytes)) {
        drop(c, c->tail);
        c->evictions++;
        atomic_fetch_add(&total_evictions, 1);
    }
    node **slot = idmap_put(&c->map, id, NULL);
    if (slot) {
        *slot = n;
        push_front(c, n);
        pthread_mutex_lock(&gmu);
        glink_front(n);
        gbytes += cost;
        pthread_mutex_unlock(&gmu);
        c->bytes += cost;
        atomic_fetch_add(&total_bytes, (int64_t)cost);
        atomic_fetch_add(&total_entries, 1);
    } else {
        json_decref(n->data);
        rcache_blob_release(n->blob);
        free(n);
    }
}

/* Takes n into the cache in place of any entry of id, fresh as fresh_at
 * says. */
static void insert(rcache *c, node *n, size_t cost, const rcache_ticket *t, const char *path)
{
    char id[IDMAP_KEY + 1];
    memcpy(id, n->id, IDMAP_KEY);
    id[IDMAP_KEY] = '\0';
    pthread_mutex_lock(&c->mu);
    if (c->fw && t && t->epoch && !path) {
        /* a reader's fill: vouched for at its next hit's drain, so that a
         * cold read pays no read() of the watch; the ticket is checked then
         * against every event drained since it was taken */
        n->fresh = 0;
        n->pend_epoch = t->epoch;
        n->pend_named = t->named;
    } else {
        n->fresh = fresh_at(c, n, id, t, path);
    }
    insert_locked(c, n, cost);
    pthread_mutex_unlock(&c->mu);
    enforce_budget();
}

void rcache_put(rcache *c, const char *id, const json_t *data, const struct stat *st,
                const char *bytes, size_t len, const rcache_ticket *t)
{
    size_t cost = ENTRY_OVERHEAD + (data ? len : 0);
    if (cost > c->max_bytes)
        return;
    node *n = calloc(1, sizeof *n);
    if (!n)
        return;
    memcpy(n->id, id, IDMAP_KEY);
    n->data = data ? json_incref((json_t *)data) : NULL;
    if (st)
        n->st = state_of(st);
    if (bytes && c->mode == RCACHE_HASH)
        n->hash = XXH3_128bits(bytes, len);
    insert(c, n, cost, t, NULL);
}

void rcache_put_bytes(rcache *c, const char *id, rcache_blob *blob, const struct stat *st,
                      const rcache_ticket *t, const char *path)
{
    size_t cost = ENTRY_OVERHEAD + blob->len;
    node *n = cost > c->max_bytes ? NULL : calloc(1, sizeof *n);
    if (!n) {
        rcache_blob_release(blob);
        rcache_forget(c, id);
        return;
    }
    memcpy(n->id, id, IDMAP_KEY);
    n->blob = blob;
    n->st = state_of(st);
    if (c->mode == RCACHE_HASH)
        n->hash = XXH3_128bits(blob->data, blob->len);
    insert(c, n, cost, t, path);
}

/* room - used - pledged, or 0 */
static size_t room_left(size_t room, size_t used, size_t pledged)
{
    return room > used && room - used > pledged ? room - used - pledged : 0;
}

rcache_share rcache_bulk_share(rcache *c)
{
    rcache_share s = {c->max_entries / 4, c->max_bytes / 4, c->serial};
    pthread_mutex_lock(&c->mu);
    size_t entries = room_left(c->max_entries, c->map.len, c->pledged_entries);
    size_t bytes = room_left(c->max_bytes, c->bytes, c->pledged_bytes);
    pthread_mutex_lock(&gmu);
    if (gbudget) {
        size_t room = room_left(gbudget, gbytes, gpledged);
        if (room < bytes)
            bytes = room;
    }
    /* each bound: the free room, or a quarter when that is more */
    if (entries > s.entries)
        s.entries = entries;
    if (bytes > s.bytes)
        s.bytes = bytes;
    gpledged += s.bytes;
    pthread_mutex_unlock(&gmu);
    c->pledged_entries += s.entries;
    c->pledged_bytes += s.bytes;
    pthread_mutex_unlock(&c->mu);
    return s;
}

void rcache_bulk_unshare(rcache *c, const rcache_share *s)
{
    if (!c || s->cache != c->serial)
        return;
    pthread_mutex_lock(&c->mu);
    take_back(&c->pledged_entries, s->entries);
    take_back(&c->pledged_bytes, s->bytes);
    pthread_mutex_lock(&gmu);
    take_back(&gpledged, s->bytes);
    pthread_mutex_unlock(&gmu);
    pthread_mutex_unlock(&c->mu);
}

bool rcache_share_fits(const rcache_share *s, size_t n, size_t bytes)
{
    return n <= s->entries && n * ENTRY_OVERHEAD + bytes <= s->bytes;
}

/* The stat of a published file shows the file its writer wrote: the same
 * inode of the same device, its size and mtime (a rename changes neither;
 * a rewrite, or another file in its place, changes one). */
static bool same_written(const struct stat *now, const struct stat *w)
{
    return now->st_ino == w->st_ino && now->st_dev == w->st_dev && now->st_size == w->st_size &&
           now->st_mtim.tv_sec == w->st_mtim.tv_sec && now->st_mtim.tv_nsec == w->st_mtim.tv_nsec;
}

/* Published records checked and taken in runs of this many per hold of the
 * cache's lock (and per drain of its watch), so readers wait a run's stats
 * at most. */
#define PUB_RUN 64

void rcache_put_published(rcache *c, rcache_pub *p, size_t n)
{
    for (size_t k = 0; k < n; k += PUB_RUN) {
        size_t end = n - k < PUB_RUN ? n : k + PUB_RUN;
        pthread_mutex_lock(&c->mu);
        if (c->fw)
            fwatch_drain(c->fw, stale, c);
        for (size_t i = k; i < end; i++) {
            rcache_blob *b = p[i].blob;
            p[i].blob = NULL; /* the cache's now, kept or released */
            size_t cost = ENTRY_OVERHEAD + b->len;
            char id[IDMAP_KEY + 1];
            memcpy(id, p[i].id, IDMAP_KEY);
            id[IDMAP_KEY] = '\0';
            /* the watch after the drain and before the stat, as fresh_at */
            uint32_t e = c->fw ? fwatch_arm(c->fw, id) : 0;
            struct stat now;
            node *nd = NULL;
            if (cost <= c->max_bytes && stat(p[i].path, &now) == 0 &&
                same_written(&now, &p[i].written))
                nd = calloc(1, sizeof *nd);
            if (!nd) {
                rcache_blob_release(b);
                node *old = find(c, id);
                if (old)
                    drop(c, old);
                continue;
            }
            memcpy(nd->id, id, IDMAP_KEY);
            nd->blob = b;
            nd->st = state_of(&now); /* the rename's ctime with it */
            if (c->mode == RCACHE_HASH)
                nd->hash = XXH3_128bits(b->data, b->len);
            nd->fresh = e && fwatch_epoch(c->fw, id) == e ? e : 0;
            insert_locked(c, nd, cost);
        }
        pthread_mutex_unlock(&c->mu);
        enforce_budget();
    }
}

rcache_result rcache_peek_file(rcache *c, const char *id, const char *path, rcache_blob **blob,
                               struct stat *st)
{
    *blob = NULL;
    pthread_mutex_lock(&c->mu);
    node *n = find(c, id);
    rcache_result r = RCACHE_MISS;
    if (n && c->mode == RCACHE_STAT && still_valid(c, n, path, true)) {
        if (n->blob) {
            r = RCACHE_HIT;
            atomic_fetch_add_explicit(&n->blob->refs, 1, memory_order_relaxed);
            *blob = n->blob;
            memset(st, 0, sizeof *st);
            st->st_dev = n->st.dev;
            st->st_ino = n->st.ino;
            st->st_size = n->st.size;
            st->st_mtim = n->st.mtim;
            st->st_ctim = n->st.ctim;
        }
    } else if (n && c->mode == RCACHE_STAT) {
        drop(c, n);
    }
    pthread_mutex_unlock(&c->mu);
    return r;
}

void rcache_forget(rcache *c, const char *id)
{
    pthread_mutex_lock(&c->mu);
    node *n = find(c, id);
    if (n)
        drop(c, n);
    pthread_mutex_unlock(&c->mu);
}

void rcache_get_stats(rcache *c, rcache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = (rcache_stats){c->hits, c->misses, c->evictions, c->map.len, c->bytes, 0};
    pthread_mutex_unlock(&c->mu);
}

void rcache_totals(rcache_stats *out)
{
    *out = (rcache_stats){atomic_load(&total_hits),
                          atomic_load(&total_misses),
                          atomic_load(&total_evictions),
                          (uint64_t)atomic_load(&total_entries),
                          (uint64_t)atomic_load(&total_bytes),
                          atomic_load(&total_watched)};
}
