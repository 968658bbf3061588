#include "rpc.h"

#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpcpool.h"
#include "sjson.h"
#include "xxhash.h"

#define MAX_FUNCTIONS 64
#define ENTRY_OVERHEAD 128

/* An answer's bytes as PostgreSQL's call produced them (malloc'd, exact
 * size), shared by the cache entry, the misses it answered and the hits
 * being sent (rpc_result.hold): freed by the last of them, so neither a
 * miss nor a hit copies the page, and an entry evicted while its answer is
 * on the wire stays valid. */
typedef struct rblob {
    atomic_uint refs;
    char *data;
} rblob;

typedef struct rentry {
    char *key;
    char *alias; /* the key with the request's own argument bytes, when they differ */
    rblob *blob;
    size_t len, bytes;
    char etag[20];
    double expires;
} rentry;

/* A caller of a flight: told once the answer is in. */
typedef struct waiter {
    struct waiter *next;
    rpc_done_fn done;
    void *arg;
    double t0;
} waiter;

/* One PostgreSQL call that identical concurrent misses share (in
 * r->flights under mu until its answer lands, then freed by whoever
 * lands it). */
typedef struct flight {
    struct flight *next;
    rpc *r;
    char *key, *alias;
    waiter *waiters, *last;
} flight;

struct rpc {
    char *conninfo;
    char *fn[MAX_FUNCTIONS];
    size_t nfn;
    char *scope[16];
    size_t nscope;
    pthread_mutex_t mu;
    rpcpool *pool;
    /* response cache: key -> ring slot, FIFO eviction */
    int ttl;
    json_t *index;
    rentry *ring;
    size_t cap, head, count, bytes, max_bytes;
    unsigned long long calls, hits, misses, evictions, errors, coalesced;
    double latency_sum;
    flight *flights; /* in progress */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool identifier(const char *s)
{
    if (!*s || !((*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static size_t split(const char *list, char **out, size_t max)
{
    size_t n = 0;
    char *copy = strdup(list ? list : ""), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        out[n++] = strdup(t);
    free(copy);
    return n;
}

int rpc_new(const rpc_opts *o, rpc **out, char *msg, size_t cap)
{
    rpc *r = calloc(1, sizeof *r);
    if (!r)
        return snprintf(msg, cap, "Out of memory."), -1;
    pthread_mutex_init(&r->mu, NULL);
    r->conninfo = strdup(o->conninfo ? o->conninfo : "");
    r->nfn = split(o->functions, r->fn, MAX_FUNCTIONS);
    r->nscope = split(o->scope_claims ? o->scope_claims : "tenant,role", r->scope, 16);
    r->ttl = o->cache_ttl;
    r->cap = o->cache_entries ? o->cache_entries : 1;
    r->max_bytes = o->cache_bytes ? o->cache_bytes : 1;
    r->ring = calloc(r->cap, sizeof *r->ring);
    r->index = json_object();
    for (size_t i = 0; i < r->nfn; i++)
        if (!identifier(r->fn[i])) {
            snprintf(msg, cap, "rpc function '%.64s' is not a plain lowercase identifier",
                     r->fn[i]);
            rpc_free(r);
            return -1;
        }
    if (!r->nfn) {
        snprintf(msg, cap, "no rpc functions allowed (--rpc-functions)");
        rpc_free(r);
        return -1;
    }
    /* The claims are set for the statement's own transaction before the
     * function runs (the function's argument depends on set_config's
     * result, which orders the two). */
    char *sql[MAX_FUNCTIONS];
    for (size_t i = 0; i < r->nfn; i++) {
        sql[i] = malloc(512);
        if (sql[i])
            snprintf(sql[i], 512,
                     "SELECT coalesce(json_agg(t), '[]'::json)::text FROM (SELECT "
                     "set_config('request.jwt.claims', $1, true) AS c) s, LATERAL \"%s\"(CASE "
                     "WHEN s.c IS NOT NULL THEN $2::jsonb END) t",
                     r->fn[i]);
    }
    bool ok = true;
    for (size_t i = 0; i < r->nfn; i++)
        ok = ok && sql[i];
    rpcpool_opts po = {o->conninfo,
                       o->pool,
                       o->timeout_ms,
                       o->queue,
                       o->queue_timeout_ms,
                       (const char *const *)sql,
                       (const char *const *)r->fn,
                       r->nfn,
                       o->on_loop};
    int rc = ok ? rpcpool_new(&po, &r->pool, msg, cap) : (snprintf(msg, cap, "Out of memory."), -1);
    for (size_t i = 0; i < r->nfn; i++)
        free(sql[i]);
    if (rc) {
        rpc_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

void rpc_loop_attach(rpc *r)
{
    rpcpool_attach(r->pool);
}

int rpc_loop_fd(const rpc *r)
{
    return rpcpool_fd(r->pool);
}

void rpc_loop_run(rpc *r)
{
    rpcpool_run(r->pool);
}

int rpc_loop_wait_ms(rpc *r)
{
    return rpcpool_wait_ms(r->pool);
}

void rpc_shutdown(rpc *r)
{
    if (r)
        rpcpool_shutdown(r->pool);
}

void rpc_free(rpc *r)
{
    if (!r)
        return;
    rpcpool_free(r->pool); /* answers what is still queued: before the cache goes */
    for (size_t i = 0; i < r->cap; i++) {
        free(r->ring[i].key);
        free(r->ring[i].alias);
        rpc_release(r->ring[i].blob);
    }
    for (size_t i = 0; i < r->nfn; i++)
        free(r->fn[i]);
    for (size_t i = 0; i < r->nscope; i++)
        free(r->scope[i]);
    free(r->ring);
    json_decref(r->index);
    free(r->conninfo);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static int fn_index(const rpc *r, const char *function)
{
    for (size_t i = 0; i < r->nfn; i++)
        if (!strcmp(r->fn[i], function))
            return (int)i;
    return -1;
}

bool rpc_allowed(const rpc *r, const char *function)
{
    return fn_index(r, function) >= 0;
}

/* ---- response cache (under mu) ---- */

static void drop_slot(rpc *r, size_t i)
{
    rentry *e = &r->ring[i];
    if (!e->key)
        return;
    json_object_del(r->index, e->key);
    if (e->alias)
        json_object_del(r->index, e->alias);
    r->bytes -= e->bytes;
    free(e->key);
    free(e->alias);
    rpc_release(e->blob);
    memset(e, 0, sizeof *e);
}

void rpc_release(void *hold)
{
    rblob *b = hold;
    if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
        free(b->data);
        free(b);
    }
}

/* The fresh entry of key (under mu), or NULL; an expired one is dropped. */
static rentry *cache_find(rpc *r, const char *key)
{
    json_t *slot = json_object_get(r->index, key);
    if (!slot)
        return NULL;
    size_t i = (size_t)json_integer_value(slot);
    if (now_s() >= r->ring[i].expires) {
        drop_slot(r, i);
        return NULL;
    }
    return &r->ring[i];
}

/* A hit without a copy: res->body points into the entry's bytes, held for
 * the caller until rpc_release(res->hold). */
static bool cache_hold(rpc *r, const char *key, rpc_result *res)
{
    rentry *e = cache_find(r, key);
    if (!e)
        return false;
    atomic_fetch_add_explicit(&e->blob->refs, 1, memory_order_relaxed);
    res->hold = e->blob;
    res->body = e->blob->data;
    res->len = e->len;
    memcpy(res->etag, e->etag, sizeof res->etag);
    res->cached = true;
    return true;
}

/* Stores res (its bytes: blob, a reference of the entry's own taken here)
 * under key and, when alias is another key not in the index (the same call
 * keyed by its argument bytes as sent), under alias too. */
static void cache_put(rpc *r, const char *key, const char *alias, const rpc_result *res,
                      rblob *blob)
{
    if (alias && (!strcmp(alias, key) || json_object_get(r->index, alias)))
        alias = NULL;
    /* the keys twice: the entry's copies and the index's (jansson copies a
     * key), so storhd_cache_bytes is what the cache holds */
    size_t cost = ENTRY_OVERHEAD + 2 * (strlen(key) + (alias ? strlen(alias) : 0)) + res->len;
    if (cost > r->max_bytes)
        return;
    while (r->count && (r->count == r->cap || r->bytes + cost > r->max_bytes)) {
        size_t oldest = (r->head + r->cap - r->count) % r->cap;
        if (r->ring[oldest].key)
            r->evictions++;
        drop_slot(r, oldest);
        r->count--;
    }
    if (json_object_get(r->index, key)) /* a racing call stored it already */
        return;
    drop_slot(r, r->head);
    rentry *e = &r->ring[r->head];
    e->key = strdup(key);
    if (!e->key) {
        memset(e, 0, sizeof *e);
        return;
    }
    atomic_fetch_add_explicit(&blob->refs, 1, memory_order_relaxed);
    e->blob = blob;
    e->len = res->len;
    e->bytes = cost;
    memcpy(e->etag, res->etag, sizeof e->etag);
    e->expires = now_s() + r->ttl;
    json_object_set_new(r->index, key, json_integer((json_int_t)r->head));
    if (alias && (e->alias = strdup(alias)) &&
        json_object_set_new(r->index, alias, json_integer((json_int_t)r->head)) != 0) {
        free(e->alias); /* not valid UTF-8: no alias, the canonical key serves */
        e->alias = NULL;
    }
    r->bytes += cost;
    r->head = (r->head + 1) % r->cap;
    r->count++;
}

static void cache_key(const rpc *r, const char *function, const char *args, const json_t *claims,
                      buf *out)
{
    buf_appends(out, function);
    buf_appendc(out, '\n');
    buf_appends(out, args);
    for (size_t i = 0; i < r->nscope; i++) {
        json_t *v = json_object_get(claims, r->scope[i]);
        buf_appendc(out, '\n');
        if (v)
            sjson_encode(out, v, 0, NULL);
    }
}

struct rpc_key {
    int fi;
    buf args, claims, key;
    buf raw; /* the key with the argument bytes as sent; empty without them */
};

/* function \n args \n each scope claim: the cache key, with args canonical
 * (rpc_key_new) or as sent (the raw alias). */

static void raw_key(const rpc *r, const char *function, const char *raw, size_t raw_len,
                    const json_t *claims, buf *out)
{
    buf_appends(out, function);
    buf_appendc(out, '\n');
    buf_append(out, raw, raw_len);
    for (size_t i = 0; i < r->nscope; i++) {
        json_t *v = json_object_get(claims, r->scope[i]);
        buf_appendc(out, '\n');
        if (v)
            sjson_encode(out, v, 0, NULL);
    }
}

static bool raw_usable(const char *raw, size_t raw_len)
{
    return raw && raw_len && !memchr(raw, '\0', raw_len);
}

bool rpc_cached_raw(rpc *r, const char *function, const char *raw, size_t raw_len,
                    const json_t *claims, rpc_result *res)
{
    memset(res, 0, sizeof *res);
    if (r->ttl <= 0 || !raw_usable(raw, raw_len) || fn_index(r, function) < 0)
        return false;
    buf key = BUF_INIT;
    raw_key(r, function, raw, raw_len, claims, &key);
    bool hit = false;
    if (!buf_failed(&key)) {
        pthread_mutex_lock(&r->mu);
        hit = cache_hold(r, key.data, res);
        if (hit) {
            r->calls++;
            r->hits++;
        }
        pthread_mutex_unlock(&r->mu);
    }
    buf_free(&key);
    return hit;
}

int rpc_key_new(rpc *r, const char *function, const json_t *args, const char *raw, size_t raw_len,
                const json_t *claims, rpc_key **out, storh_err *err)
{
    *out = NULL;
    int fi = fn_index(r, function);
    if (fi < 0)
        return storh_err_set(err, STORH_ENOTFOUND, "No such rpc function: %.64s", function);
    rpc_key *k = calloc(1, sizeof *k);
    if (!k)
        return storh_err_oom(err);
    k->fi = fi;
    sjson_encode(&k->args, args, 0, NULL); /* canonical: one key for one argument set */
    if (claims)
        sjson_encode(&k->claims, claims, 0, NULL);
    else
        buf_appends(&k->claims, "{}");
    cache_key(r, function, k->args.data, claims, &k->key);
    /* identical concurrent misses share one call: keyed like the cache, or
     * by every claim when there is no cache to share answers anyway */
    if (r->ttl <= 0) {
        buf_appendc(&k->key, '\n');
        buf_append(&k->key, k->claims.data, k->claims.len);
    }
    if (r->ttl > 0 && raw_usable(raw, raw_len))
        raw_key(r, function, raw, raw_len, claims, &k->raw);
    if (buf_failed(&k->args) || buf_failed(&k->claims) || buf_failed(&k->key) ||
        buf_failed(&k->raw)) {
        rpc_key_free(k);
        return storh_err_oom(err);
    }
    *out = k;
    return 0;
}

void rpc_key_free(rpc_key *k)
{
    if (!k)
        return;
    buf_free(&k->args);
    buf_free(&k->claims);
    buf_free(&k->key);
    buf_free(&k->raw);
    free(k);
}

bool rpc_cached(rpc *r, const rpc_key *k, rpc_result *res)
{
    memset(res, 0, sizeof *res);
    if (r->ttl <= 0)
        return false;
    pthread_mutex_lock(&r->mu);
    bool hit = cache_hold(r, k->key.data, res);
    if (hit) { /* a miss is counted by the rpc_call that follows */
        r->calls++;
        r->hits++;
    }
    pthread_mutex_unlock(&r->mu);
    return hit;
}

static void flight_free(flight *f)
{
    for (waiter *w = f->waiters, *next; w; w = next) {
        next = w->next;
        free(w);
    }
    free(f->key);
    free(f->alias);
    free(f);
}

/* The answer of a flight's PostgreSQL call (on the pool's I/O thread, or
 * on the caller's when the pool refused it): body becomes one shared blob
 * that the cache and every waiter hold, not copies (without memory for
 * the blob: not cached, copies for all waiters but the last). */
static void flight_land(void *arg, int rc, const storh_err *err, char *body, size_t len)
{
    flight *f = arg;
    rpc *r = f->r;
    rpc_result res = {.body = body, .len = len};
    rblob *blob = NULL;
    if (!rc) {
        snprintf(res.etag, sizeof res.etag, "\"%016llx\"",
                 (unsigned long long)XXH3_64bits(body, len));
        if ((blob = malloc(sizeof *blob))) {
            atomic_init(&blob->refs, 1); /* ours, dropped once every waiter has its own */
            blob->data = body;
            body = NULL;
        }
    }
    double now = now_s();
    pthread_mutex_lock(&r->mu);
    if (blob && r->ttl > 0)
        cache_put(r, f->key, f->alias, &res, blob);
    for (flight **p = &r->flights; *p; p = &(*p)->next)
        if (*p == f) { /* later misses make a call of their own */
            *p = f->next;
            break;
        }
    for (waiter *w = f->waiters; w; w = w->next) {
        r->errors += rc != 0;
        r->latency_sum += now - w->t0;
    }
    pthread_mutex_unlock(&r->mu);
    for (waiter *w = f->waiters; w; w = w->next) {
        rpc_result mine = res;
        storh_err oom;
        int wrc = rc;
        const storh_err *werr = err;
        if (!rc && blob) {
            atomic_fetch_add_explicit(&blob->refs, 1, memory_order_relaxed);
            mine.hold = blob;
        } else if (!rc && w->next) { /* a copy for all but the last */
            mine.body = malloc(len + 1);
            if (mine.body)
                memcpy(mine.body, body, len + 1);
            else
                werr = &oom, wrc = storh_err_oom(&oom);
        }
        if (wrc)
            mine = (rpc_result){0};
        w->done(w->arg, wrc, werr, &mine);
    }
    rpc_release(blob);
    if (rc)
        free(body);
    flight_free(f);
}

void rpc_start(rpc *r, const rpc_key *k, rpc_done_fn done, void *arg)
{
    rpc_result res;
    memset(&res, 0, sizeof res);
    double t0 = now_s();
    storh_err err;
    waiter *w = calloc(1, sizeof *w);
    if (!w) {
        storh_err_oom(&err);
        done(arg, err.code, &err, &res);
        return;
    }
    *w = (waiter){.done = done, .arg = arg, .t0 = t0};
    const char *key = k->key.data;
    pthread_mutex_lock(&r->mu);
    r->calls++;
    if (r->ttl > 0 && cache_hold(r, key, &res)) {
        r->hits++;
        r->latency_sum += now_s() - t0;
        pthread_mutex_unlock(&r->mu);
        free(w);
        done(arg, 0, NULL, &res);
        return;
    }
    r->misses++;
    flight *f = r->flights;
    while (f && strcmp(f->key, key))
        f = f->next;
    if (f) { /* an identical call is under way: its answer serves this one */
        r->coalesced++;
        f->last->next = w;
        f->last = w;
        pthread_mutex_unlock(&r->mu);
        return;
    }
    f = calloc(1, sizeof *f);
    if (!f || !(f->key = strdup(key)) || (k->raw.len && !(f->alias = strdup(k->raw.data)))) {
        r->errors++;
        pthread_mutex_unlock(&r->mu);
        if (f)
            free(f->key);
        free(f);
        free(w);
        storh_err_oom(&err);
        done(arg, err.code, &err, &res);
        return;
    }
    f->r = r;
    f->waiters = f->last = w;
    f->next = r->flights;
    r->flights = f;
    pthread_mutex_unlock(&r->mu);
    if (rpcpool_submit(r->pool, k->fi, k->claims.data, k->args.data, flight_land, f, &err))
        flight_land(f, err.code, &err, NULL, 0);
}

/* rpc_call's wait for the answer of rpc_start. */
typedef struct sync_call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
    storh_err err;
    rpc_result res;
} sync_call;

static void sync_done(void *arg, int rc, const storh_err *err, rpc_result *res)
{
    sync_call *s = arg;
    pthread_mutex_lock(&s->mu);
    s->rc = rc;
    if (rc)
        s->err = *err;
    s->res = *res;
    s->done = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int rpc_call(rpc *r, const rpc_key *k, rpc_result *res, storh_err *err)
{
    sync_call s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    rpc_start(r, k, sync_done, &s);
    pthread_mutex_lock(&s.mu);
    while (!s.done)
        pthread_cond_wait(&s.cv, &s.mu);
    pthread_mutex_unlock(&s.mu);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    *res = s.res;
    if (s.rc)
        *err = s.err;
    return s.rc;
}

bool rpc_reachable(const rpc *r)
{
    /* expand_dbname: the conninfo's settings, then a connect timeout of ours */
    const char *const keys[] = {"dbname", "connect_timeout", NULL};
    const char *const values[] = {r->conninfo, "2", NULL};
    return PQpingParams(keys, values, 1) == PQPING_OK;
}

void rpc_snapshot(rpc *r, rpc_stats *out)
{
    rpcpool_stats ps;
    rpcpool_snapshot(r->pool, &ps);
    pthread_mutex_lock(&r->mu);
    *out = (rpc_stats){r->hits,
                       r->misses,
                       r->evictions,
                       ps.waits,
                       r->errors,
                       r->calls,
                       json_object_size(r->index),
                       r->bytes,
                       ps.size,
                       ps.busy,
                       r->latency_sum,
                       r->coalesced,
                       ps.rejected,
                       ps.timeouts};
    pthread_mutex_unlock(&r->mu);
}
