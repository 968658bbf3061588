#include "rpc.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pgerr.h"
#include "sjson.h"
#include "xxhash.h"

#define MAX_FUNCTIONS 64
#define ENTRY_OVERHEAD 128

typedef struct pconn {
    PGconn *conn;
    bool prepared[MAX_FUNCTIONS];
} pconn;

/* A cached answer's bytes, shared by its entry and the hits being sent
 * (rpc_result.hold): freed by the last of them, so a hit costs no copy and
 * an entry evicted while its answer is on the wire stays valid. */
typedef struct rblob {
    atomic_uint refs;
    char data[];
} rblob;

typedef struct rentry {
    char *key;
    char *alias; /* the key with the request's own argument bytes, when they differ */
    rblob *blob;
    size_t len, bytes;
    char etag[20];
    double expires;
} rentry;

/* One PostgreSQL call that identical concurrent misses wait for (under mu;
 * the caller that made it runs it, the last one out frees it). */
typedef struct flight {
    struct flight *next;
    char *key;
    int waiters;
    bool done;
    int rc;
    storh_err err;
    char *body;
    size_t len;
    char etag[20];
} flight;

struct rpc {
    char *conninfo;
    char *fn[MAX_FUNCTIONS];
    size_t nfn;
    char *scope[16];
    size_t nscope;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pconn *conns;
    bool *busy;
    int pool;
    int timeout_ms, queue, queue_timeout_ms, queued;
    /* response cache: key -> ring slot, FIFO eviction */
    int ttl;
    json_t *index;
    rentry *ring;
    size_t cap, head, count, bytes, max_bytes;
    unsigned long long calls, hits, misses, evictions, waits, errors, coalesced, rejected, timeouts;
    double latency_sum;
    flight *flights; /* in progress */
    pthread_cond_t fcv;
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
    pthread_condattr_t ca; /* the pool's waits count on the monotonic clock */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&r->fcv, NULL);
    r->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 5000;
    r->queue = o->queue >= 0 ? o->queue : 0;
    r->queue_timeout_ms = o->queue_timeout_ms > 0 ? o->queue_timeout_ms : 1000;
    r->conninfo = strdup(o->conninfo ? o->conninfo : "");
    r->nfn = split(o->functions, r->fn, MAX_FUNCTIONS);
    r->nscope = split(o->scope_claims ? o->scope_claims : "tenant,role", r->scope, 16);
    r->pool = o->pool > 0 ? o->pool : 8;
    r->conns = calloc((size_t)r->pool, sizeof *r->conns);
    r->busy = calloc((size_t)r->pool, sizeof *r->busy);
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
    *out = r;
    return 0;
}

void rpc_free(rpc *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->pool; i++)
        if (r->conns[i].conn)
            PQfinish(r->conns[i].conn);
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
    free(r->conns);
    free(r->busy);
    free(r->conninfo);
    pthread_cond_destroy(&r->cv);
    pthread_cond_destroy(&r->fcv);
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
    if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
        free(b);
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

static bool cache_get(rpc *r, const char *key, rpc_result *res)
{
    rentry *e = cache_find(r, key);
    if (!e)
        return false;
    res->body = malloc(e->len + 1);
    if (!res->body)
        return false;
    memcpy(res->body, e->blob->data, e->len + 1);
    res->len = e->len;
    memcpy(res->etag, e->etag, sizeof res->etag);
    res->cached = true;
    return true;
}

/* Stores res under key and, when alias is another key not in the index
 * (the same call keyed by its argument bytes as sent), under alias too. */
static void cache_put(rpc *r, const char *key, const char *alias, const rpc_result *res)
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
    e->blob = malloc(sizeof *e->blob + res->len + 1);
    if (!e->key || !e->blob) {
        free(e->key);
        free(e->blob);
        memset(e, 0, sizeof *e);
        return;
    }
    atomic_init(&e->blob->refs, 1);
    memcpy(e->blob->data, res->body, res->len + 1);
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

/* ---- the pool ---- */

/* A free connection's index, or -1 with err set when the pool is
 * saturated: `queue` callers wait already, or none came free in time. */
static int take(rpc *r, storh_err *err)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long long ns = until.tv_nsec + (long long)r->queue_timeout_ms * 1000000LL;
    until.tv_sec += (time_t)(ns / 1000000000LL);
    until.tv_nsec = (long)(ns % 1000000000LL);
    pthread_mutex_lock(&r->mu);
    bool waited = false, late = false;
    for (;;) {
        for (int i = 0; i < r->pool; i++)
            if (!r->busy[i]) {
                r->busy[i] = true;
                r->queued -= waited;
                pthread_mutex_unlock(&r->mu);
                return i;
            }
        if (late || (!waited && r->queued >= r->queue)) {
            r->queued -= waited;
            r->rejected++;
            pthread_mutex_unlock(&r->mu);
            if (late)
                storh_err_set(err, STORH_EUNAVAIL,
                              "All %d PostgreSQL connections stayed busy for %d ms; retry later.",
                              r->pool, r->queue_timeout_ms);
            else
                storh_err_set(err, STORH_EUNAVAIL,
                              "All %d PostgreSQL connections are busy and %d calls wait already; "
                              "retry later.",
                              r->pool, r->queue);
            return -1;
        }
        if (!waited) {
            waited = true;
            r->queued++;
            r->waits++;
        }
        late = pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT;
    }
}

/* Returns connection i to the pool; counts a call that timed out. */
static void give(rpc *r, int i, bool timed_out)
{
    pthread_mutex_lock(&r->mu);
    r->busy[i] = false;
    r->timeouts += timed_out;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static int ensure(rpc *r, pconn *c, storh_err *err)
{
    if (c->conn && PQstatus(c->conn) == CONNECTION_OK)
        return 0;
    if (c->conn)
        PQfinish(c->conn);
    memset(c->prepared, 0, sizeof c->prepared);
    /* expand_dbname: the conninfo's settings, then a connect timeout of
     * ours, so a server that does not answer costs a bounded wait */
    char ct[16], set[64];
    snprintf(ct, sizeof ct, "%d", r->timeout_ms / 1000 > 2 ? r->timeout_ms / 1000 : 2);
    const char *const keys[] = {"dbname", "connect_timeout", NULL};
    const char *const values[] = {r->conninfo, ct, NULL};
    c->conn = PQconnectdbParams(keys, values, 1);
    PGresult *res = NULL;
    if (PQstatus(c->conn) == CONNECTION_OK) {
        snprintf(set, sizeof set, "SET statement_timeout = %d", r->timeout_ms);
        res = PQexec(c->conn, set);
    }
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        storh_err_set(err, STORH_EUNAVAIL, "PostgreSQL is unavailable: %s",
                      PQerrorMessage(c->conn));
        PQclear(res);
        PQfinish(c->conn);
        c->conn = NULL;
        return STORH_EUNAVAIL;
    }
    PQclear(res);
    return 0;
}

/* The claims are set for the statement's own transaction before the
 * function runs (the function's argument depends on set_config's result,
 * which orders the two). */
static int prepare(rpc *r, pconn *c, int fi, storh_err *err)
{
    if (c->prepared[fi])
        return 0;
    char name[16], sql[512];
    snprintf(name, sizeof name, "rpc%d", fi);
    snprintf(sql, sizeof sql,
             "SELECT coalesce(json_agg(t), '[]'::json)::text FROM (SELECT "
             "set_config('request.jwt.claims', $1, true) AS c) s, LATERAL \"%s\"(CASE WHEN "
             "s.c IS NOT NULL THEN $2::jsonb END) t",
             r->fn[fi]);
    PGresult *res = PQprepare(c->conn, name, sql, 2, NULL);
    int rc = 0;
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        rc = storh_err_set(err, PQstatus(c->conn) == CONNECTION_OK ? STORH_EINVAL : STORH_EUNAVAIL,
                           "Could not prepare %s: %s", r->fn[fi], PQresultErrorMessage(res));
    else
        c->prepared[fi] = true;
    PQclear(res);
    return rc;
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

/* Runs the prepared statement and waits for its result at most the
 * statement timeout and a second more (PostgreSQL cancels it at the
 * timeout; the extra wait covers a server or network that does not answer
 * at all). NULL and *late when that passed: the connection is then in an
 * unknown state and must be dropped. */
static PGresult *exec_bounded(rpc *r, pconn *c, const char *name, const char *const vals[2],
                              bool *late)
{
    *late = false;
    if (!PQsendQueryPrepared(c->conn, name, 2, vals, NULL, NULL, 0))
        return NULL;
    double until = now_s() + (r->timeout_ms + 1000) / 1000.0;
    struct pollfd p = {.fd = PQsocket(c->conn), .events = POLLIN};
    while (PQisBusy(c->conn)) {
        double left = until - now_s();
        if (left <= 0) {
            *late = true;
            return NULL;
        }
        int n = poll(&p, 1, (int)(left * 1000) + 1);
        if ((n < 0 && errno != EINTR) || (n > 0 && !PQconsumeInput(c->conn)))
            break; /* PQgetResult reports the failure */
    }
    PGresult *q = PQgetResult(c->conn), *more;
    while ((more = PQgetResult(c->conn))) /* the end of the command */
        PQclear(more);
    return q;
}

/* One call to PostgreSQL on a pool connection. */
static int query(rpc *r, int fi, const buf *a, const buf *cl, rpc_result *res, storh_err *err)
{
    int ci = take(r, err);
    if (ci < 0)
        return STORH_EUNAVAIL;
    pconn *c = &r->conns[ci];
    int rc = ensure(r, c, err);
    if (!rc)
        rc = prepare(r, c, fi, err);
    bool late = false;
    if (!rc) {
        char name[16];
        snprintf(name, sizeof name, "rpc%d", fi);
        const char *const vals[2] = {cl->data, a->data};
        PGresult *q = exec_bounded(r, c, name, vals, &late);
        int code = pgerr_code(c->conn, q, STORH_EINVAL);
        if (PQresultStatus(q) == PGRES_TUPLES_OK && PQntuples(q) == 1) {
            res->len = (size_t)PQgetlength(q, 0, 0);
            res->body = malloc(res->len + 1);
            if (res->body)
                memcpy(res->body, PQgetvalue(q, 0, 0), res->len + 1);
            else
                rc = storh_err_oom(err);
        } else if (late || code == STORH_ETIMEOUT) {
            rc = storh_err_set(err, STORH_ETIMEOUT,
                               "%s did not answer within %d ms (--rpc-timeout); it was cancelled.",
                               r->fn[fi], r->timeout_ms);
        } else if (code == STORH_EUNAVAIL) {
            rc = storh_err_set(err, STORH_EUNAVAIL, "PostgreSQL is unavailable: %s",
                               PQerrorMessage(c->conn));
        } else {
            rc = storh_err_set(err, STORH_EINVAL, "The function rejected the call: %s",
                               q ? PQresultErrorMessage(q) : PQerrorMessage(c->conn));
        }
        PQclear(q);
    }
    if ((rc == STORH_EUNAVAIL || late) && c->conn) { /* reconnect next time */
        PQfinish(c->conn);
        c->conn = NULL;
    }
    give(r, ci, rc == STORH_ETIMEOUT);
    if (!rc)
        snprintf(res->etag, sizeof res->etag, "\"%016llx\"",
                 (unsigned long long)XXH3_64bits(res->body, res->len));
    return rc;
}

static flight *flight_find(rpc *r, const char *key)
{
    for (flight *f = r->flights; f; f = f->next)
        if (!strcmp(f->key, key))
            return f;
    return NULL;
}

static void flight_free(flight *f)
{
    free(f->key);
    free(f->body);
    free(f);
}

/* Waits (under mu) for the flight another caller runs and takes a copy of
 * its answer. */
static int flight_wait(rpc *r, flight *f, rpc_result *res, storh_err *err)
{
    f->waiters++;
    r->coalesced++;
    while (!f->done)
        pthread_cond_wait(&r->fcv, &r->mu);
    int rc = f->rc;
    if (rc) {
        *err = f->err;
    } else if ((res->body = malloc(f->len + 1))) {
        memcpy(res->body, f->body, f->len + 1);
        res->len = f->len;
        memcpy(res->etag, f->etag, sizeof res->etag);
    } else {
        rc = storh_err_oom(err);
    }
    if (--f->waiters == 0)
        flight_free(f);
    return rc;
}

/* Publishes the answer of the flight (under mu) to its waiters. */
static void flight_land(rpc *r, flight *f, int rc, const storh_err *err, const rpc_result *res)
{
    for (flight **p = &r->flights; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    f->done = true;
    f->rc = rc;
    if (rc) {
        f->err = *err;
    } else if (f->waiters && !(f->body = malloc(res->len + 1))) {
        f->rc = storh_err_oom(&f->err);
    } else if (f->waiters) {
        memcpy(f->body, res->body, res->len + 1);
        f->len = res->len;
        memcpy(f->etag, res->etag, sizeof f->etag);
    }
    if (!f->waiters)
        flight_free(f);
    else
        pthread_cond_broadcast(&r->fcv);
}

int rpc_call(rpc *r, const rpc_key *k, rpc_result *res, storh_err *err)
{
    memset(res, 0, sizeof *res);
    double t0 = now_s();
    const char *key = k->key.data;
    int rc = 0;
    pthread_mutex_lock(&r->mu);
    r->calls++;
    bool hit = r->ttl > 0 && cache_get(r, key, res);
    if (hit)
        r->hits++;
    else
        r->misses++;
    flight *f = NULL;
    if (!hit && (f = flight_find(r, key))) {
        rc = flight_wait(r, f, res, err);
        f = NULL;
    } else if (!hit && (f = calloc(1, sizeof *f)) && (f->key = strdup(key))) {
        f->next = r->flights; /* this caller makes the call */
        r->flights = f;
    } else if (!hit) {
        free(f);
        f = NULL;
        rc = storh_err_oom(err);
    }
    pthread_mutex_unlock(&r->mu);
    if (f) {
        rc = query(r, k->fi, &k->args, &k->claims, res, err);
        pthread_mutex_lock(&r->mu);
        if (!rc && r->ttl > 0)
            cache_put(r, key, k->raw.len ? k->raw.data : NULL, res);
        flight_land(r, f, rc, err, res);
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_lock(&r->mu);
    if (rc)
        r->errors++;
    r->latency_sum += now_s() - t0;
    pthread_mutex_unlock(&r->mu);
    return rc;
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
    pthread_mutex_lock(&r->mu);
    int busy = 0;
    for (int i = 0; i < r->pool; i++)
        busy += r->busy[i];
    *out = (rpc_stats){r->hits,
                       r->misses,
                       r->evictions,
                       r->waits,
                       r->errors,
                       r->calls,
                       json_object_size(r->index),
                       r->bytes,
                       r->pool,
                       busy,
                       r->latency_sum,
                       r->coalesced,
                       r->rejected,
                       r->timeouts};
    pthread_mutex_unlock(&r->mu);
}
