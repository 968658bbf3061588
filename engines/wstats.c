#include "wstats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_POISONED 256

typedef struct hist {
    _Atomic uint64_t bucket[WSTATS_NBUCKETS + 1];
    _Atomic uint64_t sum, count;
} hist;

static hist batches[WSTATS__KINDS];

static pthread_mutex_t poison_mu = PTHREAD_MUTEX_INITIALIZER;
static wstats_store poisoned[MAX_POISONED];
static size_t npoisoned;

double wstats_batch_le(size_t i)
{
    return (double)(1u << i);
}

const char *wstats_kind_name(wstats_kind kind)
{
    static const char *const names[WSTATS__KINDS] = {
        [WSTATS_LOG] = "log", [WSTATS_QUEUE] = "queue", [WSTATS_DOC] = "doc"};
    return kind < WSTATS__KINDS ? names[kind] : "unknown";
}

void wstats_batch(wstats_kind kind, uint64_t writes)
{
    if (kind >= WSTATS__KINDS || writes == 0)
        return;
    size_t b = 0;
    while (b < WSTATS_NBUCKETS && (double)writes > wstats_batch_le(b))
        b++;
    hist *h = &batches[kind];
    atomic_fetch_add_explicit(&h->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, writes, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

void wstats_batch_snapshot(wstats_kind kind, wstats_hist *out)
{
    memset(out, 0, sizeof *out);
    if (kind >= WSTATS__KINDS)
        return;
    hist *h = &batches[kind];
    /* count first: a scrape racing a batch never shows more in count than
     * in the buckets' total */
    out->count = atomic_load_explicit(&h->count, memory_order_relaxed);
    for (size_t b = 0; b <= WSTATS_NBUCKETS; b++)
        out->bucket[b] = atomic_load_explicit(&h->bucket[b], memory_order_relaxed);
    out->sum = atomic_load_explicit(&h->sum, memory_order_relaxed);
}

void wstats_poisoned(wstats_kind kind, const char *name, int errnum)
{
    pthread_mutex_lock(&poison_mu);
    bool seen = false;
    for (size_t i = 0; i < npoisoned && !seen; i++)
        seen = poisoned[i].kind == kind && !strcmp(poisoned[i].name, name);
    if (!seen && npoisoned < MAX_POISONED) {
        wstats_store *s = &poisoned[npoisoned++];
        s->kind = kind;
        snprintf(s->name, sizeof s->name, "%s", name);
        s->errnum = errnum;
    }
    pthread_mutex_unlock(&poison_mu);
}

bool wstats_is_poisoned(wstats_kind kind, const char *name)
{
    pthread_mutex_lock(&poison_mu);
    bool seen = false;
    for (size_t i = 0; i < npoisoned && !seen; i++)
        seen = poisoned[i].kind == kind && !strcmp(poisoned[i].name, name);
    pthread_mutex_unlock(&poison_mu);
    return seen;
}

size_t wstats_poisoned_list(wstats_store *out, size_t max)
{
    pthread_mutex_lock(&poison_mu);
    size_t n = npoisoned;
    memcpy(out, poisoned, (n < max ? n : max) * sizeof *out);
    pthread_mutex_unlock(&poison_mu);
    return n;
}
