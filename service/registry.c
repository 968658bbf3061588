#include "registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xxhash.h"

#define REGISTRY_BUCKETS 1024

typedef struct entry {
    char *name;
    docstore *ds;
    struct entry *next;
} entry;

struct registry {
    char *root;
    pthread_rwlock_t mu;
    entry *buckets[REGISTRY_BUCKETS];
};

registry *registry_new(const char *root)
{
    registry *r = calloc(1, sizeof *r);
    if (!r || !(r->root = strdup(root))) {
        free(r);
        return NULL;
    }
    pthread_rwlock_init(&r->mu, NULL);
    return r;
}

void registry_free(registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < REGISTRY_BUCKETS; i++) {
        entry *e = r->buckets[i];
        while (e) {
            entry *next = e->next;
            docstore_close(e->ds);
            free(e->name);
            free(e);
            e = next;
        }
    }
    pthread_rwlock_destroy(&r->mu);
    free(r->root);
    free(r);
}

static entry *lookup(registry *r, size_t b, const char *name)
{
    for (entry *e = r->buckets[b]; e; e = e->next)
        if (!strcmp(e->name, name))
            return e;
    return NULL;
}

int registry_docstore(registry *r, const char *name, docstore **out, storh_err *err)
{
    size_t b = XXH32(name, strlen(name), 0) % REGISTRY_BUCKETS;
    pthread_rwlock_rdlock(&r->mu);
    entry *e = lookup(r, b, name);
    pthread_rwlock_unlock(&r->mu);
    if (e) {
        *out = e->ds;
        return 0;
    }
    pthread_rwlock_wrlock(&r->mu);
    int rc = 0;
    if (!(e = lookup(r, b, name))) {
        docstore *ds;
        rc = docstore_open(r->root, name, &ds, err);
        if (!rc) {
            e = calloc(1, sizeof *e);
            if (!e || !(e->name = strdup(name))) {
                free(e);
                e = NULL;
                docstore_close(ds);
                rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            } else {
                e->ds = ds;
                e->next = r->buckets[b];
                r->buckets[b] = e;
            }
        }
    }
    if (e)
        *out = e->ds;
    pthread_rwlock_unlock(&r->mu);
    return rc;
}
