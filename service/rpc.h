/* rpc: the page RPC into PostgreSQL. An allow-list of function names (plain
 * identifiers, checked at start; the URL never reaches SQL), the calls into
 * PostgreSQL through rpcpool (non-blocking connections driven by the HTTP
 * loop thread, or by an I/O thread of their own when the server runs
 * several loops: no thread waits for a round trip), the JSON arguments and
 * the token's claims always bound as parameters, claims visible to SQL as
 * request.jwt.claims (as PostgREST does), and a response cache keyed by
 * function, canonical arguments and the claims that scope it, bounded by
 * entries and bytes, with a TTL. A lost server is 503 and every connection
 * is re-established when it is back. Every call is bounded: at most `queue`
 * calls wait for a busy pool, each at most queue_timeout_ms (then
 * STORH_EUNAVAIL: 503), and a statement runs at most timeout_ms
 * (PostgreSQL's statement_timeout, and a client-side deadline a little
 * later that drops the connection: STORH_ETIMEOUT, 504). */
#ifndef STORHD_RPC_H
#define STORHD_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "storh_err.h"

typedef struct rpc rpc;

typedef struct rpc_opts {
    const char *conninfo;
    const char *functions; /* comma separated allow-list */
    int pool;              /* connections (default 8) */
    int cache_ttl;         /* seconds; 0 turns the response cache off */
    size_t cache_entries, cache_bytes;
    const char *scope_claims; /* comma separated claims that scope the cache */
    int timeout_ms;           /* statement timeout (default 5000) */
    int queue;                /* calls that may wait for a connection */
    int queue_timeout_ms;     /* how long one waits (default 1000) */
    /* the HTTP server runs one event-loop thread, which then drives the
     * PostgreSQL connections too (rpc_loop_*): no I/O thread of their own */
    bool on_loop;
} rpc_opts;

int rpc_new(const rpc_opts *o, rpc **out, char *msg, size_t cap);
/* Answers the calls under way and stops the PostgreSQL I/O (before
 * the HTTP server stops: it resumes their connections); later calls get
 * 503. */
void rpc_shutdown(rpc *r);
void rpc_free(rpc *r);
bool rpc_allowed(const rpc *r, const char *function);

typedef struct rpc_result {
    char *body; /* JSON array of rows: malloc'd, or shared bytes when hold is set */
    size_t len;
    char etag[20];
    bool cached;
    void *hold; /* the shared bytes held for this answer (a hit's, a miss's), else NULL */
} rpc_result;
/* Drops a hold (NULL is fine); the bytes are freed with the last one, so
 * they stay valid while an answer is sent even if the entry is evicted. */
void rpc_release(void *hold);

/* A call as the cache and PostgreSQL see it: the function, the canonical
 * arguments, the claims as text and the cache key, computed once per
 * request (on the event loop for a route that tries the cache there, then
 * reused by the call on the pool). */
typedef struct rpc_key rpc_key;
/* function must be allowed (rpc_allowed); args and claims are borrowed
 * (claims may be NULL); raw (may be NULL) is the arguments' bytes as sent,
 * under which the answer is cached too (rpc_cached_raw). STORH_ENOMEM. */
int rpc_key_new(rpc *r, const char *function, const json_t *args, const char *raw, size_t raw_len,
                const json_t *claims, rpc_key **out, storh_err *err);
void rpc_key_free(rpc_key *k);

/* Calls the function of k through the response cache. STORH_EUNAVAIL when
 * PostgreSQL is down, STORH_EINVAL when it rejects the arguments. Identical
 * concurrent misses (same function, arguments and cache key of the claims)
 * make one PostgreSQL call and share its answer. The caller frees
 * res->body, or drops res->hold when it is set (the shared answer's). */
int rpc_call(rpc *r, const rpc_key *k, rpc_result *res, storh_err *err);
/* rpc_call without waiting: done(arg, rc, err, res) runs once, with the
 * answer (res->body then the callee's, freed or held as rpc_call says) or rc < 0 and err; on the
 * thread that drives the connections, or on the caller's before rpc_start
 * returns (a hit, a refusal). k may be freed once rpc_start returns. */
typedef void (*rpc_done_fn)(void *arg, int rc, const storh_err *err, rpc_result *res);
void rpc_start(rpc *r, const rpc_key *k, rpc_done_fn done, void *arg);
/* The response cache alone, cheap enough for an event loop: true and *res
 * (cached set, body held in the entry, not copied: rpc_release(res->hold))
 * on a fresh entry; false on a miss or with the cache off,
 * and then rpc_call decides. Never waits for PostgreSQL. */
bool rpc_cached(rpc *r, const rpc_key *k, rpc_result *res);
/* The response cache by the arguments' bytes as sent, before they are
 * parsed: a repeat of a request whose answer was cached (the same bytes
 * canonicalise the same way) costs no JSON parse; held like rpc_cached.
 * false: parse, then rpc_cached. */
bool rpc_cached_raw(rpc *r, const char *function, const char *raw, size_t raw_len,
                    const json_t *claims, rpc_result *res);
/* The response cache, the pool and the calls, for /metrics. */
typedef struct rpc_stats {
    unsigned long long hits, misses, evictions, waits, errors, calls;
    size_t entries, bytes;
    int pool, busy;
    double seconds;
    unsigned long long coalesced; /* misses that waited for an identical call */
    unsigned long long rejected;  /* saturated: queue full or wait timed out */
    unsigned long long timeouts;  /* statements over the timeout */
} rpc_stats;
void rpc_snapshot(rpc *r, rpc_stats *out);
/* With on_loop, for the HTTP event-loop thread: attach once from it, then
 * watch fd (-1 without on_loop), run when it is readable or wait_ms (-1:
 * no deadline) has passed; run never blocks. */
void rpc_loop_attach(rpc *r);
int rpc_loop_fd(const rpc *r);
void rpc_loop_run(rpc *r);
int rpc_loop_wait_ms(rpc *r);
/* Whether the server accepts connections (libpq's ping: no login, a
 * 2 s connect timeout); blocks, so call it off the event loops. */
bool rpc_reachable(const rpc *r);

#endif
