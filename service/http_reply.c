/* http_reply: the responses a handler gives (http.h): bytes, JSON, the
 * error body every failure shares ({"error":{status,code,message}}), the
 * bulk and engine-error replies, and streamed bodies that end in an error
 * the client can see when a fill fails midway. */
#include <microhttpd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accesslog.h"
#include "apierr.h"
#include "budget.h"
#include "http.h"
#include "http_int.h"
#include "sjson.h"

void http_set_resp(http_req *req, int status, struct MHD_Response *r)
{
    if (req->resp)
        MHD_destroy_response(req->resp);
    req->resp = r;
    req->status = status;
}

/* r, with its Content-Type, as the request's reply of len body bytes. */
static int reply_with(http_req *req, int status, const char *ctype, struct MHD_Response *r,
                      size_t len)
{
    if (ctype)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    http_set_resp(req, status, r);
    req->bytes_out = len;
    return 0;
}

int http_reply_bytes(http_req *req, int status, const char *ctype, const char *data, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return -1;
    return reply_with(req, status, ctype, r, len);
}

int http_reply_take(http_req *req, int status, const char *ctype, char *data, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return -1;
    }
    return reply_with(req, status, ctype, r, len);
}

int http_reply_held(http_req *req, int status, const char *ctype, const char *data, size_t len,
                    void (*release)(void *), void *cls)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer_with_free_callback_cls(len, (void *)data, release, cls);
    if (!r) {
        release(cls);
        return -1;
    }
    return reply_with(req, status, ctype, r, len);
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
void http_note_limit(http_req *req, const storh_err *err)
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
        http_note_limit(req, err);
    if (rc)
        return http_reply_error(req, apierr_status(rc), "%s (%zu of %zu rows written)", err->msg,
                                written, staged);
    return http_reply_owned(req, 200, json_pack("{sI}", "written", (json_int_t)written));
}

int http_reply_storh(http_req *req, const storh_err *err)
{
    http_note_limit(req, err);
    return http_reply_error(req, apierr_status(err->code), "%s", err->msg);
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
    http_req_unref(req);
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
    http_set_resp(req, status, r);
    req->bytes_out = 0;
    return 0;
}
