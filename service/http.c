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
#include "budget.h"
#include "evloop.h"
#include "metrics.h"
#include "rpc.h"
#include "sjson.h"

struct http_server {
    struct MHD_Daemon *d;
    service *svc;
    /* MHD in external epoll mode driven by an evloop (with the RPC's
     * PostgreSQL connections), when the server runs one loop and the page
     * RPC is configured: a miss then costs no thread switch */
    bool own_loop;
    evloop *loop;
};

struct http_req {
    struct MHD_Connection *conn;
    service *svc;
    const char *method;
    char *url;  /* as received (for the log) */
    char *path; /* split by the router; params point into it */
    route_match m;
    const route *route;
    buf body;
    bool failed; /* an error was decided while the body came in */
    int fail_status;
    char fail_msg[512];
    char log_error[256]; /* the message of a 5xx reply */
    struct MHD_Response *resp;
    int status;
    uint64_t t0_us;
    uint64_t bytes_in;
    _Atomic uint64_t bytes_out;
    atomic_int refs; /* the connection, plus a streamed response */
    void *state;
    void (*state_free)(void *);
    json_t *claims;                     /* of the verified token, when auth is on */
    bool encoded_slash;                 /* the raw path held %2F: never a separator */
    int (*deferred)(http_req *req);     /* set by http_defer, run on the pool */
    void (*async_start)(http_req *req); /* set by http_async, run once suspended */
    bool suspended, parked;
    bool draining;           /* refused before its body: the body is read and dropped */
    bool verify_pending;     /* the token is not in the cache: verified on the pool */
    registry_holder engines; /* released when the request is freed */
};

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void req_unref(http_req *req)
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

service *http_service(http_req *req)
{
    return req->svc;
}

registry_holder *http_engines(http_req *req)
{
    return &req->engines;
}

const char *http_param(http_req *req, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < req->m.nparams; i++)
        if (req->m.params[i].name_len == n && !memcmp(req->m.params[i].name, name, n))
            return req->m.params[i].value;
    return NULL;
}

const char *http_query(http_req *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

typedef struct each_ctx {
    void (*fn)(void *, const char *, const char *);
    void *ctx;
} each_ctx;

static enum MHD_Result each_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    (void)kind;
    each_ctx *e = cls;
    e->fn(e->ctx, k, v ? v : "");
    return MHD_YES;
}

void http_query_each(http_req *req, void (*fn)(void *ctx, const char *k, const char *v), void *ctx)
{
    each_ctx e = {fn, ctx};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, each_arg, &e);
}

const char *http_header(http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const json_t *http_claims(http_req *req)
{
    return req->claims;
}

const buf *http_body(http_req *req)
{
    return &req->body;
}

void http_set_state(http_req *req, void *state, void (*free_fn)(void *))
{
    req->state = state;
    req->state_free = free_fn;
}

void *http_state(http_req *req)
{
    return req->state;
}

static void set_resp(http_req *req, int status, struct MHD_Response *r)
{
    if (req->resp)
        MHD_destroy_response(req->resp);
    req->resp = r;
    req->status = status;
}

int http_reply_bytes(http_req *req, int status, const char *ctype, const char *data, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return -1;
    if (ctype)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    set_resp(req, status, r);
    req->bytes_out = len;
    return 0;
}

int http_reply_take(http_req *req, int status, const char *ctype, char *data, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return -1;
    }
    if (ctype)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    set_resp(req, status, r);
    req->bytes_out = len;
    return 0;
}

int http_reply_empty(http_req *req, int status)
{
    return http_reply_bytes(req, status, NULL, "", 0);
}

int http_reply_json(http_req *req, int status, const json_t *body)
{
    buf b = BUF_INIT;
    storh_err err;
    int rc = sjson_encode(&b, body, 0, &err);
    if (rc == 0)
        rc = http_reply_bytes(req, status, "application/json", b.data, b.len);
    else
        rc = http_reply_error(req, 500, "Could not encode the response: %s", err.msg);
    buf_free(&b);
    return rc;
}

int http_reply_owned(http_req *req, int status, json_t *body)
{
    int rc = http_reply_json(req, status, body);
    json_decref(body);
    return rc;
}

static int reply_errorv(http_req *req, int status, const char *fmt, va_list ap)
{
    char msg[600];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (status >= 500) /* kept for the access log line */
        snprintf(req->log_error, sizeof req->log_error, "%.250s", msg);
    json_t *text = json_string(msg);
    if (!text) /* the message quoted input that is not UTF-8 */
        text = json_string("(message not printable: the request contained invalid UTF-8)");
    json_t *body = json_pack("{s{sisssO}}", "error", "status", status, "code", apierr_code(status),
                             "message", text);
    json_decref(text);
    buf b = BUF_INIT;
    sjson_encode(&b, body, 0, NULL);
    json_decref(body);
    int rc = http_reply_bytes(req, status, "application/json", b.data, b.len);
    buf_free(&b);
    if (status == 503) /* a limit or a dependency: worth another try soon */
        http_header_add(req, "Retry-After", "1");
    return rc;
}

/* Out of descriptors, memory or engine room: /readyz says so for a while,
 * and idle engines give their descriptors back for the retry. */
static void note_limit(http_req *req, const storh_err *err)
{
    if (err->code == STORH_ELIMIT || err->code == STORH_ENOMEM)
        budget_note_exhausted(err->msg);
    if (err->code == STORH_ELIMIT)
        registry_shed_idle(req->svc->reg);
}

int http_reply_error(http_req *req, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = reply_errorv(req, status, fmt, ap);
    va_end(ap);
    return rc;
}

int http_reply_bulk(http_req *req, int rc, size_t written, size_t staged, const storh_err *err)
{
    if (rc)
        note_limit(req, err);
    if (rc)
        return http_reply_error(req, apierr_status(rc), "%s (%zu of %zu rows written)", err->msg,
                                written, staged);
    return http_reply_owned(req, 200, json_pack("{sI}", "written", (json_int_t)written));
}

int http_reply_storh(http_req *req, const storh_err *err)
{
    note_limit(req, err);
    return http_reply_error(req, apierr_status(err->code), "%s", err->msg);
}

int http_fail(http_req *req, int status, const char *fmt, ...)
{
    if (req->failed)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(req->fail_msg, sizeof req->fail_msg, fmt, ap);
    va_end(ap);
    req->failed = true;
    req->fail_status = status;
    return -1;
}

int http_fail_storh(http_req *req, const storh_err *err)
{
    note_limit(req, err);
    return http_fail(req, apierr_status(err->code), "%s", err->msg);
}

bool http_has_reply(http_req *req)
{
    return req->resp != NULL;
}

void http_header_add(http_req *req, const char *name, const char *value)
{
    if (req->resp)
        MHD_add_response_header(req->resp, name, value);
}

json_t *http_body_object(http_req *req)
{
    storh_err err;
    json_t *v = sjson_decode(req->body.data ? req->body.data : "", req->body.len, &err);
    if (!v) {
        http_reply_error(req, 400, "Request body: %s", err.msg);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        http_reply_error(req, 400, "Request body must be a JSON object.");
        return NULL;
    }
    return v;
}

static enum MHD_Result send_reply(http_req *req);

/* ---- work off the event loop ---- */

/* Runs fn(req) on the worker pool after the loop's part returns; the
 * connection is suspended meanwhile and resumed once fn has replied. */
static void http_defer(http_req *req, int (*fn)(http_req *req))
{
    req->deferred = fn;
}

void http_async(http_req *req, void (*start)(http_req *req))
{
    req->async_start = start;
}

void http_park(http_req *req)
{
    req->parked = true;
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
    req->parked = false;
    fn(req);
    if (!req->parked) {
        if (!req->resp)
            http_reply_error(req, 500, "The handler produced no response.");
        http_complete(req);
    }
}

void http_requeue(http_req *req, int (*fn)(http_req *req))
{
    req->deferred = fn;
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
        req->failed = false;
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
    if (req->async_start && !req->failed && !req->resp) {
        void (*start)(http_req *) = req->async_start;
        req->async_start = NULL;
        MHD_suspend_connection(req->conn);
        req->suspended = true;
        start(req);
        return MHD_YES;
    }
    if (req->deferred && !req->failed) {
        MHD_suspend_connection(req->conn);
        req->suspended = true;
        http_requeue(req, req->deferred);
        return MHD_YES;
    }
    return send_reply(req);
}

/* ---- streamed responses ---- */

typedef struct stream {
    http_req *req;
    http_fill_fn fill;
    void *state;
    void (*state_free)(void *);
    buf pending;
    size_t off;
    bool done, failed;
    storh_err err; /* why it failed */
} stream;

/* Logs why a streamed body stops short; the access log line then reports
 * the request as the server error it is, not as a client that went away. */
static void stream_abort(http_req *req, const storh_err *err)
{
    snprintf(req->log_error, sizeof req->log_error, "Stream aborted: %.230s", err->msg);
    req->status = 500;
    accesslog_event("stream aborted",
                    json_pack("{sssssIss}", "method", req->method, "path", req->url ? req->url : "",
                              "bytes_out", (json_int_t)atomic_load(&req->bytes_out), "error",
                              err->msg));
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    stream *s = cls;
    while (s->off >= s->pending.len) {
        if (s->failed) {
            stream_abort(s->req, &s->err);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (s->done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        buf_reset(&s->pending);
        s->off = 0;
        int rc = s->fill(s->state, &s->pending, max, &s->err);
        if (rc >= 0 && buf_failed(&s->pending)) {
            rc = storh_err_oom(&s->err);
            buf_reset(&s->pending);
        }
        /* the whole rows before a failure go out first, then the abort */
        if (rc < 0)
            s->failed = true;
        if (rc == 1)
            s->done = true;
    }
    size_t n = s->pending.len - s->off;
    if (n > max)
        n = max;
    memcpy(out, s->pending.data + s->off, n);
    s->off += n;
    atomic_fetch_add(&s->req->bytes_out, n);
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream *s = cls;
    if (s->state_free)
        s->state_free(s->state);
    buf_free(&s->pending);
    http_req *req = s->req;
    free(s);
    req_unref(req);
}

int http_reply_stream(http_req *req, int status, const char *ctype, http_fill_fn fill, void *state,
                      void (*free_fn)(void *))
{
    stream *s = calloc(1, sizeof *s);
    if (!s) {
        if (free_fn)
            free_fn(state);
        return http_reply_error(req, 503, "Out of memory.");
    }
    s->req = req;
    s->fill = fill;
    s->state = state;
    s->state_free = free_fn;
    atomic_fetch_add(&req->refs, 1);
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, stream_read, s, stream_free);
    if (!r) {
        stream_free(s);
        return http_reply_error(req, 503, "Out of memory.");
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    set_resp(req, status, r);
    req->bytes_out = 0;
    return 0;
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
    return !req->failed;
}

static void reply_failure(http_req *req)
{
    http_reply_error(req, req->fail_status, "%s", req->fail_msg);
    if (req->fail_status == 405)
        http_header_add(req, MHD_HTTP_HEADER_ALLOW, req->m.allow);
    if (req->fail_status == 401)
        http_header_add(req, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

static enum MHD_Result send_reply(http_req *req)
{
    if (req->failed) {
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
    enum MHD_Result r = MHD_queue_response(req->conn, (unsigned)req->status, req->resp);
    MHD_destroy_response(req->resp);
    req->resp = NULL;
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
        if (!req_begin(req)) {
            if (!drains_body(req))
                return send_reply(req); /* nothing of the body is read */
            req->draining = true;
        }
        return MHD_YES;
    }
    if (req->suspended) { /* resumed: the pool has replied */
        req->suspended = false;
        return send_reply(req);
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        req->bytes_in += n;
        if (req->failed) /* discard what follows an error */
            return req->draining && req->bytes_in > HTTP_DRAIN_MAX ? MHD_NO : MHD_YES;
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
    if (!req->failed && req->route->body == ROUTE_BODY_NDJSON)
        req->route->on_body(req, NULL, 0); /* end of body */
    if (!req->failed)
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
        req_unref(req);
        return;
    }
    uint64_t us = now_us() - req->t0_us;
    int status = req->status ? req->status : 499; /* client went away before a reply */
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && status < 400)
        status = 499;
    uint64_t out = atomic_load(&req->bytes_out);
    int ridx = req->route ? (int)(req->route - svc->routes) : -1;
    metrics_observe(ridx, status, us, req->bytes_in, out);
    if (svc->cfg.access_log)
        accesslog_write(req->method, req->route ? req->route->pattern : "unmatched", req->url,
                        status, us, req->bytes_in, out, req->log_error[0] ? req->log_error : NULL);
    req_unref(req);
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
        (unsigned)svc->cfg.conn_timeout, MHD_OPTION_CONNECTION_LIMIT, svc->cfg.max_conns,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)svc->cfg.max_conns_per_ip,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, svc, MHD_OPTION_UNESCAPE_CALLBACK,
        unescape_no_nul, NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL, MHD_OPTION_END);
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
