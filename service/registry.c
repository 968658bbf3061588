/* An entry moves OPENING -> OPEN (get) and is then held (refs > 0) or idle
 * (refs == 0, on the idle list, most recent first). make_room closes idle
 * entries from the list's tail; a held or opening entry is never closed. An
 * entry whose open failed leaves the table at once and is freed by the last
 * thread that held a reference to it (the opener or a thread waiting for
 * the open, which then tries the open itself). A store whose writes a
 * failed fsync poisoned is pinned: never idle, so never closed, since a
 * reopen would take its writes again before storhd restarts. One mutex guards the table,
 * the idle list and the counts; opens and closes run outside it. */
#include "registry.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wstats.h"
#include "xxhash.h"

#define REGISTRY_BUCKETS 4096
#define REGISTRY_MIN_OPEN 4     /* the budget never learns its way below this */
#define HEADROOM_FDS 16         /* kept free for streams, accept() and writes past fd_safe */
#define EVICTED_BITS (1u << 20) /* hashed keys of closed engines, to count reopens */

typedef struct registry_entry entry;

struct registry_entry {
    char *key; /* kind letter + ':' + name or directory */
    char *name;
    int kind;
    uint32_t hash;
    void *h;
    bool open, failed;
    bool pinned;          /* poisoned: stays open, off the idle list */
    unsigned refs;        /* holders, the opener and threads waiting for the open */
    entry *next;          /* hash chain */
    entry *newer, *older; /* the idle list */
};

struct registry {
    char *root;
    int cache_mode;
    size_t cache_entries, cache_bytes, max_open;
    size_t fd_safe; /* open engines the descriptor budget plans for */
    int probe_fd;   /* duplicated to test for free descriptors */
    pthread_mutex_t mu;
    pthread_cond_t opened; /* an entry left OPENING */
    entry *buckets[REGISTRY_BUCKETS];
    entry *idle_newest, *idle_oldest;
    size_t n_open, n_idle, open_kind[REGISTRY_KINDS];
    uint64_t opens, reopens, evictions, refusals;
    unsigned char *evicted;
};

registry *registry_new(const char *root, int cache_mode, size_t cache_entries, size_t cache_bytes,
                       size_t max_open)
{
    registry *r = calloc(1, sizeof *r);
    if (!r || !(r->root = strdup(root)) || !(r->evicted = calloc(EVICTED_BITS / 8, 1))) {
        if (r)
            free(r->root);
        free(r);
        return NULL;
    }
    r->cache_mode = cache_mode;
    r->cache_entries = cache_entries;
    r->cache_bytes = cache_bytes;
    r->max_open = max_open ? max_open : 1;
    r->fd_safe = SIZE_MAX;
    r->probe_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->opened, NULL);
    return r;
}

static void close_handle(int kind, void *h)
{
    if (kind == REGISTRY_DOC)
        docstore_close(h);
    else if (kind == REGISTRY_LOG)
        seglog_close(h);
    else
        queue_close(h);
}

static void entry_free(entry *e)
{
    if (e->h)
        close_handle(e->kind, e->h);
    free(e->key);
    free(e->name);
    free(e);
}

void registry_free(registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < REGISTRY_BUCKETS; i++) {
        entry *e = r->buckets[i];
        while (e) {
            entry *next = e->next;
            entry_free(e);
            e = next;
        }
    }
    if (r->probe_fd >= 0)
        close(r->probe_fd);
    pthread_cond_destroy(&r->opened);
    pthread_mutex_destroy(&r->mu);
    free(r->evicted);
    free(r->root);
    free(r);
}

/* ---- under mu ---- */

static entry *lookup(registry *r, uint32_t hash, const char *key)
{
    for (entry *e = r->buckets[hash % REGISTRY_BUCKETS]; e; e = e->next)
        if (e->hash == hash && !strcmp(e->key, key))
            return e;
    return NULL;
}

static void table_unlink(registry *r, entry *e)
{
    entry **p = &r->buckets[e->hash % REGISTRY_BUCKETS];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    e->next = NULL;
}

static void idle_push(registry *r, entry *e)
{
    e->older = r->idle_newest;
    e->newer = NULL;
    if (r->idle_newest)
        r->idle_newest->newer = e;
    r->idle_newest = e;
    if (!r->idle_oldest)
        r->idle_oldest = e;
    r->n_idle++;
}

static void idle_unlink(registry *r, entry *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        r->idle_newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        r->idle_oldest = e->newer;
    e->newer = e->older = NULL;
    r->n_idle--;
}

static void take_ref(registry *r, entry *e)
{
    if (e->refs++ == 0 && e->open && !e->pinned)
        idle_unlink(r, e);
}

static void drop_ref(registry *r, entry *e)
{
    if (--e->refs > 0)
        return;
    if (e->failed)
        entry_free(e); /* out of the table since its open failed */
    else if (!e->pinned)
        idle_push(r, e);
}

/* Whether the engine's store refuses writes after a failed fsync (the name
 * its group commit reports: a log's directory, a collection's or a queue's
 * name). */
static bool poisoned(const entry *e)
{
    static const wstats_kind kinds[REGISTRY_KINDS] = {WSTATS_DOC, WSTATS_LOG, WSTATS_QUEUE};
    const char *name = e->name;
    if (e->kind == REGISTRY_LOG) {
        const char *slash = strrchr(e->key, '/');
        name = slash ? slash + 1 : e->key + 2;
    }
    return wstats_is_poisoned(kinds[e->kind], name);
}

/* Takes the least recently used idle engine out, onto *victims (closed by
 * the caller outside mu); a poisoned one is pinned instead. */
static bool evict_oldest(registry *r, entry **victims)
{
    entry *v;
    while ((v = r->idle_oldest) && poisoned(v)) {
        idle_unlink(r, v);
        v->pinned = true;
    }
    if (!v)
        return false;
    idle_unlink(r, v);
    table_unlink(r, v);
    r->n_open--;
    r->open_kind[v->kind]--;
    r->evictions++;
    r->evicted[(v->hash % EVICTED_BITS) / 8] |= (unsigned char)(1u << (v->hash % 8));
    v->next = *victims;
    *victims = v;
    return true;
}

/* Room for one more engine: idle ones out, oldest first. */
static bool make_room(registry *r, entry **victims)
{
    while (r->n_open >= r->max_open)
        if (!evict_oldest(r, victims))
            return false;
    return true;
}

static void close_victims(entry *v)
{
    while (v) {
        entry *next = v->next;
        entry_free(v);
        v = next;
    }
}

/* Out of descriptors within the budget (a limit lower than planned, or
 * --max-open-engines set above what descriptors allow): closes a share of
 * the idle engines and lowers the budget to what is left open, so that
 * engines stop taking what connections and streams need. */
void registry_shed_idle(registry *r)
{
    entry *victims = NULL;
    pthread_mutex_lock(&r->mu);
    size_t n = r->n_idle / 4 > 8 ? r->n_idle / 4 : 8;
    while (n-- && evict_oldest(r, &victims))
        ;
    if (r->n_open < r->max_open)
        r->max_open = r->n_open > REGISTRY_MIN_OPEN ? r->n_open : REGISTRY_MIN_OPEN;
    pthread_mutex_unlock(&r->mu);
    close_victims(victims);
}

/* Whether HEADROOM_FDS descriptors are still free. */
static bool fd_headroom(registry *r)
{
    if (r->probe_fd < 0)
        return true;
    int fds[HEADROOM_FDS], n = 0;
    while (n < HEADROOM_FDS && (fds[n] = fcntl(r->probe_fd, F_DUPFD_CLOEXEC, 0)) >= 0)
        n++;
    bool ok = n == HEADROOM_FDS;
    while (n > 0)
        close(fds[--n]);
    return ok;
}

void registry_set_fd_safe(registry *r, size_t engines)
{
    pthread_mutex_lock(&r->mu);
    r->fd_safe = engines;
    pthread_mutex_unlock(&r->mu);
}

/* ---- holders ---- */

static entry **holder_at(registry_holder *h, size_t i)
{
    return i < REGISTRY_HOLD_INLINE ? &h->one[i] : &h->more[i - REGISTRY_HOLD_INLINE];
}

static bool holder_has(registry_holder *h, const entry *e)
{
    for (size_t i = 0; i < h->n; i++)
        if (*holder_at(h, i) == e)
            return true;
    return false;
}

static bool holder_push(registry_holder *h, entry *e)
{
    if (h->n >= REGISTRY_HOLD_INLINE && h->n - REGISTRY_HOLD_INLINE >= h->cap_more) {
        size_t cap = h->cap_more ? h->cap_more * 2 : 8;
        entry **m = realloc(h->more, cap * sizeof *m);
        if (!m)
            return false;
        h->more = m;
        h->cap_more = cap;
    }
    *holder_at(h, h->n++) = e;
    return true;
}

void registry_release(registry *r, registry_holder *h)
{
    if (!h->n)
        return;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < h->n; i++)
        drop_ref(r, *holder_at(h, i));
    pthread_mutex_unlock(&r->mu);
    free(h->more);
    memset(h, 0, sizeof *h);
}

/* ---- opening ---- */

typedef int (*open_fn)(registry *r, const char *name, const void *opts, bool create, void **h,
                       storh_err *err);

/* The open engine of key, held by h: found, waited for, or opened here. */
static int get(registry *r, registry_holder *h, int kind, const char *key, const char *name,
               const void *opts, bool create, open_fn open, void **out, storh_err *err)
{
    uint32_t hash = XXH32(key, strlen(key), 0);
    pthread_mutex_lock(&r->mu);
    entry *e;
    for (;;) {
        if (!(e = lookup(r, hash, key)))
            break;
        if (holder_has(h, e)) {
            *out = e->h;
            pthread_mutex_unlock(&r->mu);
            return 0;
        }
        take_ref(r, e);
        while (!e->open && !e->failed)
            pthread_cond_wait(&r->opened, &r->mu);
        if (e->failed) { /* try the open ourselves */
            drop_ref(r, e);
            continue;
        }
        if (!holder_push(h, e)) {
            drop_ref(r, e);
            pthread_mutex_unlock(&r->mu);
            return storh_err_oom(err);
        }
        *out = e->h;
        pthread_mutex_unlock(&r->mu);
        return 0;
    }
    entry *victims = NULL;
    if (!make_room(r, &victims)) {
        r->refusals++;
        size_t max = r->max_open;
        pthread_mutex_unlock(&r->mu);
        return storh_err_set(err, STORH_ELIMIT,
                             "All %zu open engines are in use (the handle budget, "
                             "--max-open-engines); retry shortly.",
                             max);
    }
    e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key)) || !(e->name = strdup(name)) || !holder_push(h, e)) {
        if (e) {
            free(e->key);
            free(e->name);
        }
        free(e);
        pthread_mutex_unlock(&r->mu);
        close_victims(victims);
        return storh_err_oom(err);
    }
    e->kind = kind;
    e->hash = hash;
    e->refs = 1;
    e->next = r->buckets[hash % REGISTRY_BUCKETS];
    r->buckets[hash % REGISTRY_BUCKETS] = e;
    r->n_open++;
    r->open_kind[kind]++;
    bool beyond_plan = r->n_open > r->fd_safe;
    pthread_mutex_unlock(&r->mu);

    close_victims(victims); /* their descriptors go before ours are opened */
    if (beyond_plan && !fd_headroom(r))
        registry_shed_idle(r);
    void *handle = NULL;
    int rc = open(r, name, opts, create, &handle, err);
    if (rc == STORH_ELIMIT) {
        registry_shed_idle(r);
        rc = open(r, name, opts, create, &handle, err);
    }

    pthread_mutex_lock(&r->mu);
    if (rc) {
        table_unlink(r, e);
        e->failed = true;
        r->n_open--;
        r->open_kind[kind]--;
        h->n--; /* e was pushed last */
        drop_ref(r, e);
    } else {
        e->h = handle;
        e->open = true;
        r->opens++;
        unsigned char bit = (unsigned char)(1u << (hash % 8));
        if (r->evicted[(hash % EVICTED_BITS) / 8] & bit) {
            r->reopens++;
            r->evicted[(hash % EVICTED_BITS) / 8] &= (unsigned char)~bit;
        }
        *out = handle;
    }
    pthread_cond_broadcast(&r->opened);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

static int open_doc(registry *r, const char *name, const void *opts, bool create, void **h,
                    storh_err *err)
{
    (void)opts;
    (void)create;
    int rc = docstore_open(r->root, name, (docstore **)h, err);
    if (!rc && r->cache_entries &&
        (rc = docstore_set_cache(*h, r->cache_mode, r->cache_entries, r->cache_bytes, err)))
        docstore_close(*h);
    return rc;
}

static int open_log(registry *r, const char *name, const void *opts, bool create, void **h,
                    storh_err *err)
{
    return seglog_open(r->root, name, opts, create, (seglog **)h, err);
}

static int open_queue(registry *r, const char *name, const void *opts, bool create, void **h,
                      storh_err *err)
{
    (void)opts;
    return queue_open(r->root, name, create, (queue **)h, err);
}

int registry_docstore(registry *r, registry_holder *h, const char *name, docstore **out,
                      storh_err *err)
{
    char key[80];
    snprintf(key, sizeof key, "d:%s", name);
    return get(r, h, REGISTRY_DOC, key, name, NULL, true, open_doc, (void **)out, err);
}

int registry_seglog(registry *r, registry_holder *h, const char *name, const seglog_opts *o,
                    bool create, seglog **out, storh_err *err)
{
    char dir[PATH_MAX], key[PATH_MAX + 4];
    int rc = seglog_dir(r->root, name, o, dir, err); /* partitions get one handle each */
    if (rc)
        return rc;
    snprintf(key, sizeof key, "l:%s", dir);
    return get(r, h, REGISTRY_LOG, key, name, o, create, open_log, (void **)out, err);
}

struct logset_ctx {
    registry *r;
    registry_holder *h;
};

/* logset calls this only inside logset_open, so the context may live on the
 * caller's stack; every partition engine opened goes into the holder. */
static int open_existing_log(void *ctx, const char *name, const seglog_opts *o, seglog **out,
                             storh_err *err)
{
    struct logset_ctx *c = ctx;
    return registry_seglog(c->r, c->h, name, o, false, out, err);
}

int registry_logset(registry *r, registry_holder *h, const char *name, const seglog_opts *o,
                    logset *out, storh_err *err)
{
    struct logset_ctx c = {r, h};
    return logset_open(out, r->root, name, o, open_existing_log, &c, err);
}

int registry_queue(registry *r, registry_holder *h, const char *name, bool create, queue **out,
                   storh_err *err)
{
    char key[80];
    snprintf(key, sizeof key, "q:%s", name);
    return get(r, h, REGISTRY_QUEUE, key, name, NULL, create, open_queue, (void **)out, err);
}

void registry_each_queue(registry *r, void (*fn)(void *ctx, const char *name, queue *q), void *ctx)
{
    /* held while fn runs (it may wait for a lock), not under mu */
    registry_holder h = {0};
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
        for (entry *e = r->buckets[i]; e; e = e->next)
            if (e->kind == REGISTRY_QUEUE && e->open && holder_push(&h, e))
                take_ref(r, e);
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < h.n; i++) {
        entry *e = *holder_at(&h, i);
        fn(ctx, e->name, e->h);
    }
    registry_release(r, &h);
}

void registry_get_stats(registry *r, registry_stats *out)
{
    pthread_mutex_lock(&r->mu);
    memset(out, 0, sizeof *out);
    for (int k = 0; k < REGISTRY_KINDS; k++)
        out->open[k] = r->open_kind[k];
    out->held = r->n_open - r->n_idle;
    out->max_open = r->max_open;
    out->opens = r->opens;
    out->reopens = r->reopens;
    out->evictions = r->evictions;
    out->refusals = r->refusals;
    pthread_mutex_unlock(&r->mu);
}
