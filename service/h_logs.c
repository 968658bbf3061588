#include "h_logs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apierr.h"
#include "fsx.h"
#include "http.h"
#include "ndjson.h"
#include "reqparse.h"
#include "seglog.h"
#include "sjson.h"

/* The log for this request's stream. ts_ms picks the partition (< 0: now);
 * create=false turns a missing log into a 404 reply. */
static seglog *log_for(http_req *req, int64_t ts_ms, bool create)
{
    service *svc = http_service(req);
    const char *name = http_param(req, "stream");
    seglog_opts o;
    char msg[160];
    if (config_log_opts(&svc->cfg, name, &o, msg, sizeof msg)) {
        http_reply_error(req, 500, "%s", msg);
        return NULL;
    }
    o.partition_ts_ms = ts_ms;
    seglog *s = NULL;
    storh_err err;
    if (registry_seglog(svc->reg, http_engines(req), name, &o, create, &s, &err)) {
        http_reply_storh(req, &err);
        return NULL;
    }
    return s;
}

static int64_t id_ms(const char *id)
{
    int64_t ms = -1;
    uuid7_timestamp(id, strlen(id), &ms, NULL);
    return ms;
}

static int reply_record(http_req *req, int status, const char *id, const json_t *data)
{
    json_t *o = json_pack("{sssO}", "id", id, "data", data);
    return http_reply_owned(req, status, o);
}

static int append_work(http_req *req)
{
    seglog *s = log_for(req, -1, true);
    if (!s)
        return 0;
    json_t *data = http_body_object(req);
    if (!data)
        return 0;
    char id[UUID7_LEN + 1];
    storh_err err;
    if (seglog_put(s, NULL, data, id, &err))
        http_reply_storh(req, &err);
    else
        reply_record(req, 201, id, data);
    json_decref(data);
    return 0;
}

int h_logs_append(http_req *req)
{
    http_defer(req, append_work);
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

static int delete_work(http_req *req)
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

int h_logs_delete(http_req *req)
{
    http_defer(req, delete_work);
    return 0;
}

/* ---- streams: every partition in order, or the one log ---- */

typedef struct list_state {
    recquery q;
    seglog **logs;
    size_t nlogs, cur;
    seglog_iter *it;
    size_t emitted;
} list_state;

static void list_free(void *p)
{
    list_state *s = p;
    seglog_iter_close(s->it);
    recquery_clear(&s->q);
    free(s->logs);
    free(s);
}

static int list_fill(void *p, buf *out, size_t max)
{
    list_state *s = p;
    while (out->len < max) {
        if (s->q.limit && s->emitted >= s->q.limit)
            return 1;
        if (!s->it) {
            if (s->cur >= s->nlogs)
                return 1;
            if (seglog_iter_open(s->logs[s->cur++], &s->q, &s->it, NULL))
                return -1;
        }
        const char *id;
        json_t *data;
        storh_err err;
        int rc = seglog_iter_next(s->it, &id, &data, &err);
        if (rc == 0) {
            seglog_iter_close(s->it);
            s->it = NULL;
            continue;
        }
        if (rc < 0)
            return -1; /* a truncated transfer, never a silent gap */
        json_t *row = json_pack("{sssO}", "id", id, "data", data);
        json_decref(data);
        rc = row ? sjson_encode(out, row, 0, &err) : -1;
        json_decref(row);
        if (rc)
            return -1;
        buf_appendc(out, '\n');
        s->emitted++;
    }
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Opens every partition directory of a partitioned stream, oldest first. */
static int open_partitions(http_req *req, list_state *s, const seglog_opts *o)
{
    service *svc = http_service(req);
    const char *name = http_param(req, "stream");
    char dir[PATH_MAX];
    if (fsx_pathf(dir, NULL, "%s/%s/partitions", svc->cfg.root, name))
        return http_reply_error(req, 400, "Path too long.");
    DIR *d = opendir(dir);
    if (!d && errno != ENOENT && errno != ENOTDIR) {
        storh_err err;
        storh_err_sys(&err, errno, "Could not list the partitions of %s", name);
        return http_reply_storh(req, &err);
    }
    if (!d)
        return http_reply_error(req, 404, "No such log: %s", name);
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char **nn = realloc(names, (n + 1) * sizeof *nn);
        if (!nn)
            break;
        names = nn;
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    s->logs = calloc(n ? n : 1, sizeof *s->logs);
    for (size_t i = 0; i < n && s->logs; i++) {
        /* the partition's day or month, back to a timestamp inside it */
        struct tm tm = {0};
        int y = 0, m = 0, day = 1;
        if (sscanf(names[i], "%d-%d-%d", &y, &m, &day) < 2)
            continue;
        tm.tm_year = y - 1900;
        tm.tm_mon = m - 1;
        tm.tm_mday = day;
        seglog_opts po = *o;
        po.partition_ts_ms = (int64_t)timegm(&tm) * 1000;
        seglog *lg;
        storh_err err;
        int rc = registry_seglog(svc->reg, http_engines(req), name, &po, false, &lg, &err);
        if (rc == 0) {
            s->logs[s->nlogs++] = lg;
        } else if (rc != STORH_ENOTFOUND) { /* a partition left out would be a silent gap */
            http_reply_storh(req, &err);
            free(s->logs);
            s->logs = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return 0;
}

int h_logs_list(http_req *req)
{
    list_state *s = calloc(1, sizeof *s);
    if (!s)
        return http_reply_error(req, 503, "Out of memory.");
    recquery_init(&s->q);
    char msg[300];
    if (!reqparse_recquery(req, &s->q, msg, sizeof msg)) {
        list_free(s);
        return http_reply_error(req, 400, "%s", msg);
    }
    service *svc = http_service(req);
    seglog_opts o;
    if (config_log_opts(&svc->cfg, http_param(req, "stream"), &o, msg, sizeof msg)) {
        list_free(s);
        return http_reply_error(req, 500, "%s", msg);
    }
    if (o.partition != SEGLOG_PART_NONE) {
        open_partitions(req, s, &o);
        if (!s->logs) {
            list_free(s);
            return 0; /* replied */
        }
    } else {
        seglog *lg = log_for(req, -1, false);
        if (!lg) {
            list_free(s);
            return 0;
        }
        s->logs = malloc(sizeof *s->logs);
        if (s->logs)
            s->logs[s->nlogs++] = lg;
    }
    return http_reply_stream(req, 200, "application/x-ndjson", list_fill, s, list_free);
}

/* ---- maintenance ---- */

static int compact_work(http_req *req)
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

int h_logs_compact(http_req *req)
{
    http_defer(req, compact_work);
    return 0;
}

static int retain_work(http_req *req)
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

int h_logs_retain(http_req *req)
{
    http_defer(req, retain_work);
    return 0;
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

int h_logs_stats(http_req *req)
{
    return json_op(req, seglog_stats);
}

static int verify_work(http_req *req)
{
    return json_op(req, seglog_verify);
}

int h_logs_verify(http_req *req)
{
    http_defer(req, verify_work);
    return 0;
}

static int repair_work(http_req *req)
{
    return json_op(req, seglog_repair);
}

int h_logs_repair(http_req *req)
{
    http_defer(req, repair_work);
    return 0;
}

/* ---- _bulk ---- */

typedef struct bulk_state {
    ndjson_lines lines;
    seglog_batch *b;
} bulk_state;

static void bulk_free(void *p)
{
    bulk_state *b = p;
    seglog_batch_abort(b->b);
    ndjson_lines_free(&b->lines);
    free(b);
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

int h_logs_bulk_begin(http_req *req)
{
    seglog *s = log_for(req, -1, true);
    if (!s)
        return http_fail(req, 500, "Could not open the log.");
    bulk_state *b = calloc(1, sizeof *b);
    if (!b)
        return http_fail(req, 503, "Out of memory.");
    http_set_state(req, b, bulk_free);
    ndjson_lines_init(&b->lines, http_service(req)->cfg.max_body, bulk_row, b);
    storh_err err;
    if (seglog_batch_begin(s, &b->b, &err))
        return http_fail_storh(req, &err);
    return 0;
}

int h_logs_bulk_body(http_req *req, const char *data, size_t len)
{
    bulk_state *b = http_state(req);
    return ndjson_lines_feed(&b->lines, req, data, len);
}

static int bulk_commit_work(http_req *req)
{
    bulk_state *b = http_state(req);
    size_t written = 0, staged = seglog_batch_count(b->b);
    storh_err err;
    int rc = seglog_batch_commit(b->b, &written, &err);
    b->b = NULL;
    return http_reply_bulk(req, rc, written, staged, &err);
}

int h_logs_bulk_end(http_req *req)
{
    http_defer(req, bulk_commit_work);
    return 0;
}
