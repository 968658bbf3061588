/* http: the request life over libmicrohttpd (MHD), and the daemon.
 *
 * MHD calls on_access several times per request: with the headers, with
 * each piece of the body, at the end of the body, and once more when a
 * suspended connection is resumed. Between those calls req->life
 * (http_int.h) says where the request is; each move is made by one function:
 *
 *    on_uri
 *      |
 *      v        req_begin refused                drains_body
 *     NEW ------------------------------> FAILED ------------> DRAINING
 *      |                                   ^  |                   |
 *      | req_begin accepted    http_fail   |  | end of body       | end of body
 *      v                 (a body callback) |  v    (finish)       |  (finish)
 *     BODY --------------------------------+  send_reply <--------+
 *      |  \                                   ^  ^
 *      |   \-dispatch: a loop handler, finish-+  | on_access (resumed)
 *      |                                         |
 *      | dispatch: http_defer                    | run_deferred: http_complete
 *      v                                         |
 *   DEFERRED --finish: suspend, http_requeue--> POOL
 *                                              |  ^
 *                                    http_park |  | http_requeue
 *                                              v  |
 *                                             PARKED
 *
 *   send_reply -> REPLIED --on_completed--> freed (http_req_unref)
 *
 *   NEW -> BODY          on_access's first call: req_begin accepted the headers
 *   NEW -> FAILED        req_begin refused them (404, 405, 400, 401, 403, 413,
 *                        415); with no body on its way send_reply answers now
 *   FAILED -> DRAINING   on_access: a body is on its way (drains_body), so it
 *                        is read and dropped before the answer
 *   BODY -> FAILED       http_fail from a body callback (413, 503, a bad line)
 *   BODY -> DEFERRED     dispatch -> http_defer: the route runs off the loop
 *   BODY -> REPLIED      dispatch ran a loop handler; finish -> send_reply
 *   DEFERRED -> POOL     finish: MHD_suspend_connection, then http_requeue
 *   POOL -> PARKED       http_park (longpoll_park) from the pool handler
 *   PARKED -> POOL       http_requeue (a kick or the deadline) runs it again
 *   BODY -> ASYNC        a loop handler started async work (http_async: a page
 *                        RPC miss); finish suspends the connection and starts
 *                        it; ASYNC -> REPLIED as POOL does, on http_complete
 *   POOL -> REPLIED      run_deferred -> http_complete resumes the connection;
 *                        on_access -> send_reply
 *   FAILED, DRAINING -> REPLIED   end of the body: finish -> send_reply
 *   REPLIED -> freed     on_completed (access log, metrics) -> http_req_unref;
 *                        a streamed response holds a reference to its end
 *
 * Error states: FAILED and DRAINING carry a decided reply (fail_status,
 * fail_msg) that send_reply gives instead of any other, after freeing the
 * handler's state (a bulk stage is undone before the client hears). A
 * DRAINING body over HTTP_DRAIN_MAX closes the connection. A token refused
 * on the pool is answered there (run_off_loop) and stays POOL. A pool
 * handler that leaves no reply gets a 500 (run_deferred). A streamed body
 * whose fill fails ends with MHD's error (http_reply.c), never complete. */
#include "http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "accesslog.h"
#include "apierr.h"
#include "auth.h"
#include "evloop.h"
#include "http_int.h"
#include "metrics.h"
#include "rpc.h"

struct http_server {
    struct MHD_Daemon *d;
    service *svc;
    /* MHD in external epoll mode driven by an evloop (with the RPC's
     * PostgreSQL connections), when the server runs one loop and the page
     * RPC is configured: a miss then costs no thread switch */
    bool own_loop;
    evloop *loop;
};

/* Requests of the API (/v1, /rpc: the routes that take a token) begun
 * and ended: what the service's idle release watches (probes and scrapes
 * are not work). */
static _Atomic uint64_t work_events;

uint64_t http_work_events(void)
{
    return atomic_load_explicit(&work_events, memory_order_relaxed);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void http_req_unref(http_req *req)
{
    if (atomic_fetch_sub(&req->refs, 1) != 1)
        return;
    if (req->state_free)
        req->state_free(req->state);
    if (req->svc) /* after the state, which may still use an engine */
        registry_release(req->svc->reg, &req->engines);
    if (req->resp)
        MHD_destroy_response(req->resp);
    buf_free(&req->body);
    json_decref(req->claims);
    free(req->url);
    free(req->path);
    free(req);
}

static bool failed(const http_req *req)
{
    return req->life == HTTP_FAILED || req->life == HTTP_DRAINING;
}

/* -> FAILED; the first failure decided is the one answered */
int http_fail(http_req *req, int status, const char *fmt, ...)
{
    if (failed(req))
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(req->fail_msg, sizeof req->fail_msg, fmt, ap);
    va_end(ap);
    req->life = HTTP_FAILED;
    req->fail_status = status;
    return -1;
}

int http_fail_storh(http_req *req, const storh_err *err)
{
    http_note_limit(req, err);
    return http_fail(req, apierr_status(err->code), "%s", err->msg);
}

static enum MHD_Result send_reply(http_req *req);

/* ---- work off the event loop ---- */

/* BODY -> DEFERRED: runs fn(req) on a pool after the loop's part returns;
 * the connection is suspended meanwhile and resumed once fn has replied. A
 * request that failed meanwhile stays FAILED and is answered at once. */
static void http_defer(http_req *req, int (*fn)(http_req *req))
{
    req->deferred = fn;
    if (!failed(req))
        req->life = HTTP_DEFERRED;
}

/* The request this pool thread's handler parked: run_deferred reads this,
 * not the request, which a kick may already have requeued elsewhere (and a
 * reply freed) by the time the handler returns. */
static _Thread_local const http_req *parked_here;

/* POOL -> PARKED */
void http_park(http_req *req)
{
    req->life = HTTP_PARKED;
    parked_here = req;
}

/* BODY -> ASYNC: after the loop handler returns, the connection is
 * suspended and start(req) runs; whoever answers calls http_complete. */
void http_async(http_req *req, void (*start)(http_req *req))
{
    req->async_start = start;
    if (!failed(req))
        req->life = HTTP_ASYNC;
}

void http_complete(http_req *req)
{
    MHD_resume_connection(req->conn);
    evloop_resumed();
}

static void run_deferred(void *p)
{
    http_req *req = p;
    int (*fn)(http_req *) = req->deferred;
    req->deferred = NULL;
    parked_here = NULL;
    fn(req);
    if (parked_here == req) /* PARKED: whoever requeues it owns it now */
        return;
    if (!req->resp)
        http_reply_error(req, 500, "The handler produced no response.");
    http_complete(req);
}

/* DEFERRED or PARKED -> POOL */
void http_requeue(http_req *req, int (*fn)(http_req *req))
{
    req->deferred = fn;
    req->life = HTTP_POOL;
    bool side = req->route && req->route->run == ROUTE_RUN_SIDE;
    if (workpool_submit(side ? req->svc->side : req->svc->pool, run_deferred, req) != 0) {
        http_reply_error(req, 503, "Out of memory.");
        http_complete(req);
    }
}

static void reply_failure(http_req *req);
static bool check_token(http_req *req);

/* On the pool for a route that does not run on the loop: the token first
 * when it was not in the cache, then the handler. */
static int run_off_loop(http_req *req)
{
    if (req->verify_pending && !check_token(req)) {
        reply_failure(req);
        req->life = HTTP_POOL; /* answered here: the refusal is the reply */
        return 0;
    }
    return req->route->handler(req);
}

/* Runs the route where its table entry says (route.h). */
static void dispatch(http_req *req)
{
    const route *rt = req->route;
    if (rt->run == ROUTE_RUN_LOOP) {
        rt->handler(req);
        return;
    }
    if (rt->run == ROUTE_RUN_LOOP_FIRST && !req->verify_pending && rt->on_loop(req) == 0)
        return;
    http_defer(req, run_off_loop);
}

/* After the handler: either queue the reply now, or suspend and let the
 * pool produce it. */
static enum MHD_Result finish(http_req *req)
{
    if (req->life == HTTP_ASYNC && !req->resp) {
        void (*start)(http_req *) = req->async_start;
        req->async_start = NULL;
        MHD_suspend_connection(req->conn);
        start(req);
        return MHD_YES;
    }
    if (req->life == HTTP_DEFERRED) {
        MHD_suspend_connection(req->conn);
        http_requeue(req, req->deferred);
        return MHD_YES;
    }
    return send_reply(req);
}

/* ---- request life cycle ---- */

static bool ctype_is(const char *have, const char *want)
{
    if (!have)
        return false;
    while (*have == ' ')
        have++;
    size_t n = strlen(want);
    if (strncasecmp(have, want, n) != 0)
        return false;
    char c = have[n];
    return c == '\0' || c == ';' || c == ' ';
}

/* /v1 with a JWT key configured: a verified bearer token that grants the
 * route's scope (401 without one or with a bad one, 403 without the scope). */
static bool check_token(http_req *req)
{
    const char *h = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0 || !h[7]) {
        http_fail(req, 401, "A bearer token is required (Authorization: Bearer <JWT>).");
        return false;
    }
    char why[160];
    /* a route that runs (or may run) off the loop verifies a new token
     * there: an RS256 check must not stall the loop's other connections */
    /* (a streamed body's on_begin runs on the loop before the handler, so
     * such a route verifies here) */
    if (req->route->run != ROUTE_RUN_LOOP && !req->route->on_begin && !req->verify_pending) {
        int rc = auth_verify_cached(req->svc->auth, h + 7, &req->claims, why, sizeof why);
        if (rc > 0) {
            req->verify_pending = true;
            return true;
        }
        if (rc < 0) {
            http_fail(req, 401, "%s", why);
            return false;
        }
    } else if (auth_verify(req->svc->auth, h + 7, &req->claims, why, sizeof why) != 0) {
        http_fail(req, 401, "%s", why);
        return false;
    }
    req->verify_pending = false;
    if (req->route->scope && !auth_has_scope(req->claims, req->route->scope)) {
        http_fail(req, 403, "The token lacks the scope %s.", req->route->scope);
        return false;
    }
    return true;
}

/* Routing and header checks; true if the request may proceed. */
static bool req_begin(http_req *req)
{
    service *svc = req->svc;
    size_t plen = strcspn(req->url, "?");
    req->path = strndup(req->url, plen);
    if (!req->path)
        return http_fail(req, 503, "Out of memory."), false;
    if (req->encoded_slash)
        return http_fail(req, 400, "An encoded '/' (%%2F) is not allowed in the path."), false;
    for (const char *seg = req->path; (seg = strchr(seg, '/')); seg++) {
        size_t n = strcspn(seg + 1, "/");
        if ((n == 1 && seg[1] == '.') || (n == 2 && seg[1] == '.' && seg[2] == '.'))
            return http_fail(req, 400, "Path segments '.' and '..' are not allowed."), false;
    }
    int rc = route_find(svc->routes, svc->nroutes, req->method, req->path, &req->m);
    if (rc == 404)
        return http_fail(req, 404, "No route for %s.", req->url), false;
    if (rc == 405) {
        http_fail(req, 405, "Method %s is not allowed here; allowed: %s.", req->method,
                  req->m.allow);
        return false;
    }
    req->route = &svc->routes[req->m.index];
    if (req->route->auth == ROUTE_AUTH_TOKEN)
        atomic_fetch_add_explicit(&work_events, 1, memory_order_relaxed);
    char msg[160];
    if (!route_check_params(&req->m, msg, sizeof msg))
        return http_fail(req, 400, "%s", msg), false;
    if (svc->auth && req->route->auth == ROUTE_AUTH_TOKEN && !check_token(req))
        return false;
    route_body kind = req->route->body;
    if (kind == ROUTE_BODY_NONE)
        return true;
    const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;
    bool has_body = (cl && len > 0) || http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (!has_body && kind == ROUTE_BODY_JSON_OPT)
        return true;
    const char *ct = http_header(req, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *want = kind == ROUTE_BODY_NDJSON ? "application/x-ndjson" : "application/json";
    if (!ctype_is(ct, want))
        return http_fail(req, 415, "Content-Type must be %s, got %s.", want, ct ? ct : "none"),
               false;
    if (kind != ROUTE_BODY_NDJSON && len > svc->cfg.max_body)
        return http_fail(req, 413, "Request body of %llu bytes is over the limit of %zu bytes.",
                         len, svc->cfg.max_body),
               false;
    if (kind == ROUTE_BODY_NDJSON && req->route->on_begin && req->route->on_begin(req) != 0)
        return http_fail(req, 500, "Could not start the request."), false;
    return !failed(req);
}

static void reply_failure(http_req *req)
{
    http_reply_error(req, req->fail_status, "%s", req->fail_msg);
    if (req->fail_status == 405)
        http_header_add(req, MHD_HTTP_HEADER_ALLOW, req->m.allow);
    if (req->fail_status == 401)
        http_header_add(req, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

/* -> REPLIED */
static enum MHD_Result send_reply(http_req *req)
{
    if (failed(req)) {
        /* a failed request's state (a bulk stage, a spool) is undone before
         * the client hears of the failure, not after */
        if (req->state_free)
            req->state_free(req->state);
        req->state_free = NULL;
        req->state = NULL;
        reply_failure(req);
    }
    if (!req->resp)
        http_reply_error(req, 500, "The handler produced no response.");
    /* an answer that streams nothing (a stream holds a reference) needs
     * neither the handler's state nor its engines any more: both go before
     * the client can send its next request, so answers already given do
     * not hold the open-engine budget (--max-open-engines) against it */
    if (atomic_load(&req->refs) == 1) {
        if (req->state_free)
            req->state_free(req->state);
        req->state_free = NULL;
        req->state = NULL;
        registry_release(req->svc->reg, &req->engines);
    }
    enum MHD_Result r = MHD_queue_response(req->conn, (unsigned)req->status, req->resp);
    MHD_destroy_response(req->resp);
    req->resp = NULL;
    req->life = HTTP_REPLIED;
    return r;
}

/* A request refused before its body was read (413, 415, 401, ...) still has
 * the body on its way. Answered at once, the connection would close with
 * unread bytes, which the kernel turns into a reset that can reach the
 * client before the answer does. So a body up to HTTP_DRAIN_MAX is read and
 * dropped first, unless the client waits for "100 Continue" and has sent
 * nothing yet; a body over the bound ends in a closed connection. */
#define HTTP_DRAIN_MAX (64ull << 20)

static bool drains_body(http_req *req)
{
    const char *expect = http_header(req, MHD_HTTP_HEADER_EXPECT);
    if (expect && !strcasecmp(expect, "100-continue"))
        return false;
    const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        unsigned long long len = strtoull(cl, NULL, 10);
        return len > 0 && len <= HTTP_DRAIN_MAX;
    }
    return http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

static http_req *new_req(void)
{
    http_req *req = calloc(1, sizeof *req);
    if (req) {
        req->t0_us = now_us();
        atomic_init(&req->refs, 1);
    }
    return req;
}

/* MHD hands on_access a decoded URL, where "a%2Fb" reads as "a/b"; the raw
 * URI is seen here first, and what this returns starts the request. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    http_req *req = new_req();
    if (!req)
        return NULL;
    size_t plen = strcspn(uri, "?");
    for (size_t i = 0; i + 2 < plen && !req->encoded_slash; i++)
        req->encoded_slash = uri[i] == '%' && uri[i + 1] == '2' && (uri[i + 2] | 0x20) == 'f';
    return req;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    (void)version;
    http_req *req = *con_cls;
    if (!req || !req->conn) { /* the first call: on_uri made the state */
        if (!req && !(req = new_req()))
            return MHD_NO;
        req->conn = conn;
        req->svc = cls;
        req->method = method;
        req->url = strdup(url);
        *con_cls = req;
        if (!req->url)
            return MHD_NO;
        if (req_begin(req)) {
            req->life = HTTP_BODY;
        } else {
            if (!drains_body(req))
                return send_reply(req); /* nothing of the body is read */
            req->life = HTTP_DRAINING;
        }
        return MHD_YES;
    }
    if (req->life == HTTP_POOL || req->life == HTTP_PARKED ||
        req->life == HTTP_ASYNC) /* resumed: the pool or the async work replied */
        return send_reply(req);
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        req->bytes_in += n;
        if (failed(req)) /* discard what follows an error */
            return req->life == HTTP_DRAINING && req->bytes_in > HTTP_DRAIN_MAX ? MHD_NO : MHD_YES;
        if (req->route->body == ROUTE_BODY_NDJSON) {
            req->route->on_body(req, upload, n);
        } else if (req->body.len + n > req->svc->cfg.max_body) {
            http_fail(req, 413, "Request body is over the limit of %zu bytes.",
                      req->svc->cfg.max_body);
            buf_free(&req->body);
        } else {
            buf_append(&req->body, upload, n);
            if (buf_failed(&req->body))
                http_fail(req, 503, "Out of memory.");
        }
        return MHD_YES;
    }
    if (!failed(req) && req->route->body == ROUTE_BODY_NDJSON)
        req->route->on_body(req, NULL, 0); /* end of body */
    if (!failed(req))
        dispatch(req);
    return finish(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    service *svc = cls;
    http_req *req = *con_cls;
    if (!req)
        return;
    *con_cls = NULL;
    if (!req->conn) { /* MHD refused it before on_access (a header too large) */
        http_req_unref(req);
        return;
    }
    uint64_t us = now_us() - req->t0_us;
    int status = req->status ? req->status : 499; /* client went away before a reply */
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && status < 400)
        status = 499;
    uint64_t out = atomic_load(&req->bytes_out);
    int ridx = req->route ? (int)(req->route - svc->routes) : -1;
    metrics_observe(ridx, status, us, req->bytes_in, out);
    if (req->route && req->route->auth == ROUTE_AUTH_TOKEN)
        atomic_fetch_add_explicit(&work_events, 1, memory_order_relaxed);
    if (svc->cfg.access_log)
        accesslog_write(req->method, req->route ? req->route->pattern : "unmatched", req->url,
                        status, us, req->bytes_in, out, req->log_error[0] ? req->log_error : NULL);
    http_req_unref(req);
}

/* MHD decodes %XX in place; a decoded NUL would silently cut a path or an
 * argument short ("a%00b" -> "a"). Turn such bytes into 0x01, which no name,
 * id or parameter accepts, so the request fails loudly instead. */
static size_t unescape_no_nul(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    size_t n = MHD_http_unescape(s);
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0')
            s[i] = '\x01';
    return n;
}

/* Each connection's MHD memory pool: the request line and headers, the
 * response's headers and a streamed response's chunks. MHD zeroes the whole
 * pool after every request (MHD_pool_reset), which at its 32 KiB default
 * was a tenth of a cached page RPC's CPU; 16 KiB still takes headers of
 * about 8 KiB (a larger head is 431) and halves that cost and the pools'
 * memory. */
#define HTTP_CONN_MEMORY ((size_t)16 * 1024)

int http_start(service *svc, http_server **out, char *msg, size_t cap)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t slen;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, svc->cfg.listen_host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)svc->cfg.listen_port);
        slen = sizeof *a4;
    } else if (inet_pton(AF_INET6, svc->cfg.listen_host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)svc->cfg.listen_port);
        slen = sizeof *a6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(msg, cap, "bad listen address %s", svc->cfg.listen_host);
        return -1;
    }
    (void)slen;
    http_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(msg, cap, "Out of memory.");
        return -1;
    }
    s->svc = svc;
    s->own_loop = svc->cfg.threads <= 1 && svc->rpc && rpc_loop_fd(svc->rpc) >= 0;
    if (s->own_loop)
        flags = (flags & ~(unsigned)MHD_USE_EPOLL_INTERNAL_THREAD) | MHD_USE_EPOLL;
    /* a pool of one is no pool: MHD then runs a single internal event loop */
    struct MHD_OptionItem pool[] = {
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)svc->cfg.threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    if (svc->cfg.threads <= 1)
        pool[0].option = MHD_OPTION_END;
    s->d = MHD_start_daemon(
        flags, (uint16_t)svc->cfg.listen_port, NULL, NULL, on_access, svc, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_ARRAY, pool, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)svc->cfg.conn_timeout, MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY,
        MHD_OPTION_CONNECTION_LIMIT, svc->cfg.max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)svc->cfg.max_conns_per_ip, MHD_OPTION_NOTIFY_COMPLETED, on_completed, svc,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_no_nul, NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri,
        NULL, MHD_OPTION_END);
    if (!s->d) { /* errno is bind's when the address is taken */
        int e = errno;
        snprintf(msg, cap, "could not listen on %s:%d: %s", svc->cfg.listen_host,
                 svc->cfg.listen_port, e ? strerror(e) : "libmicrohttpd refused the options");
        free(s);
        return -1;
    }
    if (s->own_loop && evloop_start(s->d, svc->rpc, &s->loop) != 0) {
        snprintf(msg, cap, "could not start the event loop: %s", strerror(errno));
        MHD_stop_daemon(s->d);
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void http_stop(http_server *s)
{
    if (!s)
        return;
    evloop_stop(s->loop); /* first: it runs the daemon */
    MHD_stop_daemon(s->d);
    free(s);
}

int http_port(const http_server *s)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : -1;
}
