#include "registry.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xxhash.h"

#define REGISTRY_BUCKETS 1024

enum { KIND_DOC, KIND_LOG, KIND_QUEUE };

typedef struct entry {
    char *key; /* kind letter + ':' + name or directory */
    char *name;
    int kind;
    void *h;
    struct entry *next;
} entry;

struct registry {
    char *root;
    int cache_mode;
    size_t cache_entries, cache_bytes;
    pthread_rwlock_t mu;
    entry *buckets[REGISTRY_BUCKETS];
};

registry *registry_new(const char *root, int cache_mode, size_t cache_entries, size_t cache_bytes)
{
    registry *r = calloc(1, sizeof *r);
    if (!r || !(r->root = strdup(root))) {
        free(r);
        return NULL;
    }
    r->cache_mode = cache_mode;
    r->cache_entries = cache_entries;
    r->cache_bytes = cache_bytes;
    pthread_rwlock_init(&r->mu, NULL);
    return r;
}

static void close_handle(entry *e)
{
    if (e->kind == KIND_DOC)
        docstore_close(e->h);
    else if (e->kind == KIND_LOG)
        seglog_close(e->h);
    else
        queue_close(e->h);
}

void registry_free(registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < REGISTRY_BUCKETS; i++) {
        entry *e = r->buckets[i];
        while (e) {
            entry *next = e->next;
            close_handle(e);
            free(e->key);
            free(e->name);
            free(e);
            e = next;
        }
    }
    pthread_rwlock_destroy(&r->mu);
    free(r->root);
    free(r);
}

static entry *lookup(registry *r, size_t b, const char *key)
{
    for (entry *e = r->buckets[b]; e; e = e->next)
        if (!strcmp(e->key, key))
            return e;
    return NULL;
}

typedef int (*open_fn)(registry *r, const char *name, const void *opts, bool create, void **h,
                       storh_err *err);

static int get(registry *r, int kind, const char *key, const char *name, const void *opts,
               bool create, open_fn open, void **out, storh_err *err)
{
    size_t b = XXH32(key, strlen(key), 0) % REGISTRY_BUCKETS;
    pthread_rwlock_rdlock(&r->mu);
    entry *e = lookup(r, b, key);
    pthread_rwlock_unlock(&r->mu);
    if (e) {
        *out = e->h;
        return 0;
    }
    pthread_rwlock_wrlock(&r->mu);
    int rc = 0;
    if (!(e = lookup(r, b, key))) {
        void *h;
        rc = open(r, name, opts, create, &h, err);
        if (!rc) {
            e = calloc(1, sizeof *e);
            if (!e || !(e->key = strdup(key)) || !(e->name = strdup(name))) {
                if (e)
                    free(e->key);
                free(e);
                e = NULL;
                entry tmp = {.kind = kind, .h = h};
                close_handle(&tmp);
                rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            } else {
                e->kind = kind;
                e->h = h;
                e->next = r->buckets[b];
                r->buckets[b] = e;
            }
        }
    }
    if (e)
        *out = e->h;
    pthread_rwlock_unlock(&r->mu);
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

int registry_docstore(registry *r, const char *name, docstore **out, storh_err *err)
{
    char key[80];
    snprintf(key, sizeof key, "d:%s", name);
    return get(r, KIND_DOC, key, name, NULL, true, open_doc, (void **)out, err);
}

int registry_seglog(registry *r, const char *name, const seglog_opts *o, bool create, seglog **out,
                    storh_err *err)
{
    char dir[PATH_MAX], key[PATH_MAX + 4];
    int rc = seglog_dir(r->root, name, o, dir, err); /* partitions get one handle each */
    if (rc)
        return rc;
    snprintf(key, sizeof key, "l:%s", dir);
    return get(r, KIND_LOG, key, name, o, create, open_log, (void **)out, err);
}

static int open_existing_log(void *ctx, const char *name, const seglog_opts *o, seglog **out,
                             storh_err *err)
{
    return registry_seglog(ctx, name, o, false, out, err);
}

int registry_logset(registry *r, const char *name, const seglog_opts *o, logset *out,
                    storh_err *err)
{
    return logset_open(out, r->root, name, o, open_existing_log, r, err);
}

int registry_queue(registry *r, const char *name, bool create, queue **out, storh_err *err)
{
    char key[80];
    snprintf(key, sizeof key, "q:%s", name);
    return get(r, KIND_QUEUE, key, name, NULL, create, open_queue, (void **)out, err);
}

void registry_each_queue(registry *r, void (*fn)(void *ctx, const char *name, queue *q), void *ctx)
{
    pthread_rwlock_rdlock(&r->mu);
    for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
        for (entry *e = r->buckets[i]; e; e = e->next)
            if (e->kind == KIND_QUEUE)
                fn(ctx, e->name, e->h);
    pthread_rwlock_unlock(&r->mu);
}
