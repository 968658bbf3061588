/* http: the libmicrohttpd front end. It owns the daemon and each request's
 * state: routing through the route table, path param validation, content
 * type and body size checks, buffering JSON bodies or streaming NDJSON bodies
 * to the route, running the handler, and at completion the access log line
 * and the metrics. Handlers only read the request and call one http_reply_*
 * (or http_fail from a body callback). */
#ifndef STORHD_HTTP_H
#define STORHD_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "buf.h"
#include "service.h"
#include "storh_err.h"

typedef struct http_server http_server;

/* Starts listening per svc->cfg; svc must outlive the server. */
int http_start(service *svc, http_server **out, char *msg, size_t cap);
void http_stop(http_server *s);
/* The port actually bound (useful with port 0). */
int http_port(const http_server *s);
/* Counts each API request (a route that takes a token: /v1, /rpc) when it
 * begins and when it ends; probes, scrapes and the contract do not count.
 * Thread-safe. */
uint64_t http_work_events(void);

/* ---- for handlers ---- */
service *http_service(http_req *req);
/* The request's holder for registry calls: what it holds stays open until
 * the request (and any streamed response) is done. */
registry_holder *http_engines(http_req *req);
/* Path param by name (validated by the router), or NULL. */
const char *http_param(http_req *req, const char *name);
/* Query argument, or NULL. */
const char *http_query(http_req *req, const char *key);
/* Calls fn for every query argument. */
void http_query_each(http_req *req, void (*fn)(void *ctx, const char *k, const char *v), void *ctx);
const char *http_header(http_req *req, const char *name);
/* The verified token's claims (NULL without auth); borrowed. */
const json_t *http_claims(http_req *req);
/* The buffered body (ROUTE_BODY_JSON routes). */
const buf *http_body(http_req *req);
/* Decodes the buffered body as a JSON object; on failure replies 400 itself
 * and returns NULL. New reference. */
json_t *http_body_object(http_req *req);
/* Per-request state of a handler, freed with the request via free_fn. */
void http_set_state(http_req *req, void *state, void (*free_fn)(void *));
void *http_state(http_req *req);

/* Replies; each replaces any reply made before. */
int http_reply_json(http_req *req, int status, const json_t *body);
/* As http_reply_json, and steals the reference to body. */
int http_reply_owned(http_req *req, int status, json_t *body);
int http_reply_bytes(http_req *req, int status, const char *ctype, const char *data, size_t len);
/* Like http_reply_bytes, but takes data (malloc'd; freed with the response). */
int http_reply_take(http_req *req, int status, const char *ctype, char *data, size_t len);
/* Like http_reply_bytes, without a copy: data stays valid until the
 * response is done with it, then release(cls) runs (also on failure). */
int http_reply_held(http_req *req, int status, const char *ctype, const char *data, size_t len,
                    void (*release)(void *), void *cls);
int http_reply_empty(http_req *req, int status);
int http_reply_error(http_req *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The reply of a bulk commit: {"written":n}, or the error with how many of
 * the staged rows were written. */
int http_reply_bulk(http_req *req, int rc, size_t written, size_t staged, const storh_err *err);
/* Replies with the status apierr maps err->code to, and err->msg. */
int http_reply_storh(http_req *req, const storh_err *err);
/* A streamed body: fill(state, out, max, err) appends at most about max
 * bytes to out and returns 0, 1 at the end, or < 0 with err set to abort
 * (out then holds only the whole rows before the failure, which are sent
 * first): the connection is closed without the chunked body's last chunk, so the
 * client sees a truncated transfer (curl: error 18), never a false success;
 * the reason is logged (a "stream aborted" event, and the access log line
 * with status 500 and the error). free_fn releases state when the response
 * is done. */
typedef int (*http_fill_fn)(void *state, buf *out, size_t max, storh_err *err);
int http_reply_stream(http_req *req, int status, const char *ctype, http_fill_fn fill, void *state,
                      void (*free_fn)(void *));
/* Where a handler runs is its route's .run (route.h), not its own choice:
 * a ROUTE_RUN_POOL handler runs on the worker pool with the connection
 * suspended, and request state (params, body, http_state) stays valid. */
/* From a handler on the pool: keep the connection suspended after it returns; some
 * thread calls http_complete(req) once it has replied (long polls). */
void http_park(http_req *req);
void http_complete(http_req *req);
/* From a handler on the loop: the reply comes later from another thread,
 * which calls http_complete(req) once it has replied. start(req) runs on
 * the loop once the connection is suspended, and starts that work (which
 * may complete before start returns). */
void http_async(http_req *req, void (*start)(http_req *req));
/* Runs fn(req) on the pool again (for a parked request). */
void http_requeue(http_req *req, int (*fn)(http_req *req));
/* Whether a reply has been made. */
bool http_has_reply(http_req *req);
/* Adds a header to the reply made last. */
void http_header_add(http_req *req, const char *name, const char *value);
/* From a body callback: remember an error, discard the rest of the body and
 * reply with it at the end. Returns -1. */
int http_fail(http_req *req, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int http_fail_storh(http_req *req, const storh_err *err);

#endif
