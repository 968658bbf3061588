#include "h_logs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apierr.h"
#include "bulkspool.h"
#include "http.h"
#include "ndjson.h"
#include "reqparse.h"
#include "seglog.h"
#include "sjson.h"
#include "uuid7.h"

/* The configured options of this request's stream. */
static int stream_opts(http_req *req, seglog_opts *o, storh_err *err)
{
    return config_log_opts(&http_service(req)->cfg, http_param(req, "stream"), o, err);
}

/* The log for this request's stream. ts_ms picks the partition (< 0: now);
 * create=false makes a missing log STORH_ENOTFOUND. */
static int log_open(http_req *req, int64_t ts_ms, bool create, seglog **out, storh_err *err)
{
    seglog_opts o;
    int rc = stream_opts(req, &o, err);
    if (rc)
        return rc;
    o.partition_ts_ms = ts_ms;
    return registry_seglog(http_service(req)->reg, http_engines(req), http_param(req, "stream"), &o,
                           create, out, err);
}

/* log_open, replying with its error (the error's own status) on failure. */
static seglog *log_for(http_req *req, int64_t ts_ms, bool create)
{
    seglog *s = NULL;
    storh_err err;
    if (log_open(req, ts_ms, create, &s, &err)) {
        http_reply_storh(req, &err);
        return NULL;
    }
    return s;
}

bool h_logs_set(http_req *req, logset *ls)
{
    service *svc = http_service(req);
    const char *name = http_param(req, "stream");
    seglog_opts o;
    storh_err err;
    if (stream_opts(req, &o, &err) ||
        registry_logset(svc->reg, http_engines(req), name, &o, ls, &err)) {
        http_reply_storh(req, &err);
        return false;
    }
    return true;
}

static int64_t id_ms(const char *id)
{
    int64_t ms = -1;
    uuid7_timestamp(id, strlen(id), &ms, NULL);
    return ms;
}

static int reply_record(http_req *req, int status, const char *id, const json_t *data)
{
    json_t *o = sjson_row(id, json_incref((json_t *)data));
    return http_reply_owned(req, status, o);
}

int h_logs_append(http_req *req)
{
    json_t *data = http_body_object(req); /* a bad body creates no stream */
    if (!data)
        return 0;
    seglog *s = log_for(req, -1, true);
    if (!s) {
        json_decref(data);
        return 0;
    }
    char id[UUID7_LEN + 1];
    storh_err err;
    if (seglog_put(s, NULL, data, id, &err))
        http_reply_storh(req, &err);
    else
        reply_record(req, 201, id, data);
    json_decref(data);
    return 0;
}

int h_logs_get(http_req *req)
{
    const char *id = http_param(req, "id");
    seglog *s = log_for(req, id_ms(id), false);
    if (!s)
        return 0;
    json_t *data;
    storh_err err;
    if (seglog_get(s, id, &data, &err))
        return http_reply_storh(req, &err);
    reply_record(req, 200, id, data);
    json_decref(data);
    return 0;
}

int h_logs_delete(http_req *req)
{
    const char *id = http_param(req, "id");
    seglog *s = log_for(req, id_ms(id), false);
    if (!s)
        return 0;
    bool existed;
    storh_err err;
    if (seglog_delete(s, id, &existed, &err))
        return http_reply_storh(req, &err);
    if (!existed)
        return http_reply_error(req, 404, "Log record not found: %s", id);
    return http_reply_empty(req, 204);
}

/* ---- streams: every partition in order, or the one log ---- */

typedef struct list_state {
    recquery q;
    logset ls;
    logset_iter *it;
} list_state;

static void list_free(void *p)
{
    list_state *s = p;
    logset_iter_close(s->it);
    logset_free(&s->ls);
    recquery_clear(&s->q);
    free(s);
}

static int list_fill(void *p, buf *out, size_t max, storh_err *err)
{
    list_state *s = p;
    while (out->len < max) {
        const char *id, *raw;
        size_t rawlen;
        json_t *data;
        int rc = logset_iter_next_raw(s->it, &id, &raw, &rawlen, &data, err);
        if (rc == 0)
            return 1;
        if (rc < 0)
            return rc; /* a truncated transfer, never a silent gap */
        size_t mark = out->len;
        if (raw) {
            /* the line's data bytes are what encoding its tree would write:
             * the row as sjson_encode writes {"id":id,"data":data} */
            buf_append(out, "{\"id\":\"", 7);
            buf_appends(out, id);
            buf_append(out, "\",\"data\":", 9);
            buf_append(out, raw, rawlen);
            buf_append(out, "}\n", 2);
            if (buf_failed(out)) {
                out->len = mark;
                return storh_err_oom(err);
            }
            continue;
        }
        json_t *row = sjson_row(id, data);
        rc = row ? sjson_encode(out, row, 0, err) : storh_err_oom(err);
        json_decref(row);
        if (rc) {
            out->len = mark; /* only whole rows before the abort */
            return rc;
        }
        buf_appendc(out, '\n');
    }
    return 0;
}

int h_logs_list(http_req *req)
{
    list_state *s = calloc(1, sizeof *s);
    if (!s)
        return http_reply_error(req, 503, "Out of memory.");
    recquery_init(&s->q);
    storh_err perr;
    if (reqparse_recquery(req, &s->q, &perr)) {
        list_free(s);
        return http_reply_storh(req, &perr);
    }
    if (!h_logs_set(req, &s->ls)) {
        list_free(s);
        return 0; /* replied */
    }
    storh_err err;
    if (logset_iter_open(&s->ls, &s->q, &s->it, &err)) {
        list_free(s);
        return http_reply_storh(req, &err);
    }
    return http_reply_stream(req, 200, "application/x-ndjson", list_fill, s, list_free);
}

/* ---- maintenance ---- */

int h_logs_compact(http_req *req)
{
    seglog *s = log_for(req, -1, false);
    if (!s)
        return 0;
    json_t *out;
    storh_err err;
    if (seglog_compact(s, &out, &err))
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}

int h_logs_retain(http_req *req)
{
    json_t *body = http_body_object(req);
    if (!body)
        return 0;
    json_t *days = json_object_get(body, "older_than_days");
    json_t *ms = json_object_get(body, "older_than_ms");
    if ((!days && !ms) || (days && (!json_is_integer(days) || json_integer_value(days) < 1)) ||
        (ms && (!json_is_integer(ms) || json_integer_value(ms) < 0))) {
        json_decref(body);
        return http_reply_error(req, 400,
                                "Body: older_than_days must be an integer >= 1 (or "
                                "older_than_ms an integer >= 0).");
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t cutoff = ms ? json_integer_value(ms)
                        : ((int64_t)ts.tv_sec - json_integer_value(days) * 86400) * 1000;
    json_decref(body);
    seglog *s = log_for(req, -1, false);
    if (!s)
        return 0;
    size_t deleted;
    storh_err err;
    if (seglog_retain(s, cutoff, &deleted, &err))
        return http_reply_storh(req, &err);
    json_t *out =
        json_pack("{sIsI}", "deleted", (json_int_t)deleted, "cutoff_ms", (json_int_t)cutoff);
    return http_reply_owned(req, 200, out);
}

static int json_op(http_req *req, int (*fn)(seglog *, json_t **, storh_err *))
{
    seglog *s = log_for(req, -1, false);
    if (!s)
        return 0;
    json_t *out;
    storh_err err;
    if (fn(s, &out, &err))
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}

/* A read over every log of the stream (every partition). */
static int set_op(http_req *req, int (*fn)(const logset *, json_t **, storh_err *))
{
    logset ls;
    if (!h_logs_set(req, &ls))
        return 0;
    json_t *out;
    storh_err err;
    int rc = fn(&ls, &out, &err);
    logset_free(&ls);
    if (rc)
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}

int h_logs_stats(http_req *req)
{
    return set_op(req, logset_stats);
}

int h_logs_verify(http_req *req)
{
    return set_op(req, logset_verify);
}

int h_logs_repair(http_req *req)
{
    return json_op(req, seglog_repair);
}

/* ---- _bulk ---- */

typedef struct bulk_state {
    ndjson_lines lines;
    seglog_batch *b;
    bulkspool spool; /* active: the stream did not exist, the body is checked and spooled */
} bulk_state;

static void bulk_free(void *p)
{
    bulk_state *b = p;
    seglog_batch_abort(b->b);
    ndjson_lines_free(&b->lines);
    bulkspool_close(&b->spool);
    free(b);
}

/* The checks seglog_batch_element makes of a row without a stream: an
 * object, and an id, when it has one, a UUIDv7. */
static int bulk_check_row(void *ctx, http_req *req, const char *p, size_t n, size_t lineno)
{
    (void)ctx;
    storh_err err;
    json_t *row = sjson_decode(p, n, &err);
    int rc = row ? 0 : STORH_EINVAL;
    if (row && !json_is_object(row)) {
        rc = storh_err_set(&err, STORH_EINVAL, "Bulk rows must be JSON objects.");
    } else if (row) {
        const json_t *id = json_object_get(row, "id");
        if (json_is_string(id) && !uuid7_is_valid(json_string_value(id), json_string_length(id)))
            rc = storh_err_set(&err, STORH_EINVAL, "Invalid UUIDv7 value.");
    }
    json_decref(row);
    if (rc)
        return http_fail(req, apierr_status(rc), "Line %zu: %s", lineno, err.msg);
    return 0;
}

static int bulk_row(void *ctx, http_req *req, const char *p, size_t n, size_t lineno)
{
    bulk_state *b = ctx;
    storh_err err;
    json_t *row = sjson_decode(p, n, &err);
    char id[UUID7_LEN + 1];
    int rc = row ? seglog_batch_element(b->b, row, id, &err) : STORH_EINVAL;
    json_decref(row);
    if (rc) {
        seglog_batch_abort(b->b);
        b->b = NULL;
        return http_fail(req, apierr_status(rc), "Line %zu: %s", lineno, err.msg);
    }
    return 0;
}

/* A bulk into a stream that exists stages its rows as they arrive; one into
 * a new stream checks and spools them (bulkspool.h), and creates the stream
 * only at the end, so a refused bulk creates nothing. */
int h_logs_bulk_begin(http_req *req)
{
    seglog *s = NULL;
    storh_err err;
    bulk_state *b = calloc(1, sizeof *b);
    if (!b)
        return http_fail(req, 503, "Out of memory.");
    b->spool.fd = -1;
    http_set_state(req, b, bulk_free);
    size_t max = http_service(req)->cfg.max_body;
    /* the opener's own status: a full disk is 507, not a generic 500 */
    if (log_open(req, -1, false, &s, &err)) {
        if (err.code != STORH_ENOTFOUND)
            return http_fail_storh(req, &err);
        ndjson_lines_init(&b->lines, max, bulk_check_row, b);
        if (bulkspool_open(&b->spool, http_service(req)->cfg.root, &err))
            return http_fail_storh(req, &err);
        return 0;
    }
    ndjson_lines_init(&b->lines, max, bulk_row, b);
    if (seglog_batch_begin(s, &b->b, &err))
        return http_fail_storh(req, &err);
    return 0;
}

int h_logs_bulk_body(http_req *req, const char *data, size_t len)
{
    bulk_state *b = http_state(req);
    return bulkspool_feed(&b->spool, &b->lines, req, data, len);
}

/* The body of a new stream's bulk, checked whole: the stream is created now
 * and the body replayed through the row path of an existing stream. */
static int bulk_publish_pending(http_req *req, bulk_state *b)
{
    seglog *s = NULL;
    storh_err err;
    if (log_open(req, -1, true, &s, &err))
        return http_fail_storh(req, &err);
    ndjson_lines_free(&b->lines);
    ndjson_lines_init(&b->lines, http_service(req)->cfg.max_body, bulk_row, b);
    if (seglog_batch_begin(s, &b->b, &err))
        return http_fail_storh(req, &err);
    return bulkspool_replay(&b->spool, &b->lines, req);
}

int h_logs_bulk_end(http_req *req)
{
    bulk_state *b = http_state(req);
    if (bulkspool_active(&b->spool) && bulk_publish_pending(req, b))
        return 0;
    size_t written = 0, staged = seglog_batch_count(b->b);
    storh_err err;
    int rc = seglog_batch_commit(b->b, &written, &err);
    b->b = NULL;
    return http_reply_bulk(req, rc, written, staged, &err);
}
