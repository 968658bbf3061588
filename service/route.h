/* route: the route table type and its matcher. Routes are data: {method,
 * pattern, handler, body kind, scope} and the contract the OpenAPI document
 * is generated from (operationId, summary, query parameters, request and
 * response schemas, statuses; see openapi.h). A pattern is "/"-separated
 * literals and {param}s; a literal beats a param, and a param's name says how
 * it is validated ({collection}/{stream}/{queue}: [A-Za-z0-9_-]{1,64};
 * {id}: UUIDv7), so no handler sees an unchecked name or id. */
#ifndef STORHD_ROUTE_H
#define STORHD_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#define ROUTE_MAX_SEGS 12
#define ROUTE_MAX_PARAMS 4

typedef struct http_req http_req;

typedef enum {
    ROUTE_BODY_NONE = 0, /* any body is ignored */
    ROUTE_BODY_JSON,     /* application/json, buffered up to the body limit */
    ROUTE_BODY_JSON_OPT, /* like JSON, but an empty body is allowed */
    ROUTE_BODY_NDJSON,   /* application/x-ndjson, streamed to on_body */
} route_body;

/* Where a route's handler runs; http.c decides from this, not the handler. */
typedef enum {
    /* on the event loop: only for work that cannot block (no file lock, no
     * mutex held across I/O, no scan of a collection) */
    ROUTE_RUN_LOOP = 0,
    ROUTE_RUN_POOL, /* on the work pool, token verification included */
    /* on the side pool (a few threads of its own): reads for probes and
     * operators (/metrics, /readyz, _stats, _health) that may wait on a lock
     * or scan, and must neither stall the loop nor queue behind a work pool
     * saturated with writes or RPC calls */
    ROUTE_RUN_SIDE,
    /* on_loop first, on the event loop, when the token is in the verified-
     * token cache; it replies (returns 0) or declines (returns 1, nothing
     * replied), and then the handler runs on the work pool. A token not yet
     * verified goes to the pool without trying on_loop. */
    ROUTE_RUN_LOOP_FIRST,
} route_run;

/* What a route asks of the caller when JWT auth is configured. */
typedef enum {
    ROUTE_AUTH_TOKEN = 0, /* a verified bearer token granting .scope (if set) */
    ROUTE_AUTH_NONE,      /* no token: health, readiness, metrics, the contract */
} route_auth;

typedef struct route {
    const char *method;
    const char *pattern;
    /* Called once the whole request is in; must reply (http_reply_*). */
    int (*handler)(http_req *req);
    /* Streaming bodies: begin before the first chunk, then every chunk. */
    int (*on_begin)(http_req *req);
    int (*on_body)(http_req *req, const char *data, size_t len);
    route_body body;
    route_run run;
    int (*on_loop)(http_req *req); /* ROUTE_RUN_LOOP_FIRST */
    route_auth auth;
    const char *scope;
    /* ---- the contract (openapi.c renders it) ---- */
    const char *op; /* operationId */
    const char *summary;
    /* components/parameters names of the query (and header) parameters,
     * space separated */
    const char *query;
    /* components/schemas name of the request body (media type from body) */
    const char *req;
    /* Every status the handler answers, space separated: "STATUS[:SCHEMA]
     * [+HEADER...]". SCHEMA is a components/schemas name, "ndjson:NAME" for
     * a stream of NAME rows, "text" for text/plain; none = no body for
     * 1xx-3xx, the error object for 4xx-5xx. The statuses of the HTTP layer
     * (400, 401, 403, 413, 415, 503) are added by openapi.c. */
    const char *res;
} route;

typedef struct route_param {
    const char *name; /* points into the pattern */
    size_t name_len;
    const char *value; /* points into the caller's path copy */
} route_param;

typedef struct route_match {
    int index; /* into the table, -1 when nothing matched */
    int nparams;
    route_param params[ROUTE_MAX_PARAMS];
    /* methods whose pattern matched, for 405 Allow (comma separated) */
    char allow[96];
} route_match;

/* Matches method + path (path is modified: '/' become NUL). Returns 0 on a
 * match, 404 when no pattern fits, 405 when only other methods fit. */
int route_find(const route *table, size_t n, const char *method, char *path, route_match *m);
/* Validates the matched params; on failure writes a message and returns
 * false. */
bool route_check_params(const route_match *m, char *msg, size_t cap);
/* Valid collection/stream/queue name. */
bool route_valid_name(const char *s);

#endif
