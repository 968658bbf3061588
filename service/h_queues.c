#include "h_queues.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "longpoll.h"
#include "queue.h"
#include "reqparse.h"
#include "sjson.h"

#define CLAIM_MAX 1000
#define WAIT_MAX_MS 60000

static queue *queue_for(http_req *req, bool create, bool quiet_missing)
{
    queue *q = NULL;
    storh_err err;
    if (registry_queue(http_service(req)->reg, http_engines(req), http_param(req, "queue"), create,
                       &q, &err)) {
        if (!(quiet_missing && err.code == STORH_ENOTFOUND))
            http_reply_storh(req, &err);
        return NULL;
    }
    return q;
}

/* The reply {"ids":[...]} of an enqueue, as sjson encodes it. */
static int reply_ids(http_req *req, char (*ids)[UUID7_LEN + 1], size_t n)
{
    buf out = BUF_INIT;
    buf_reserve(&out, 10 + n * (UUID7_LEN + 3));
    buf_append(&out, "{\"ids\":[", 8);
    for (size_t i = 0; i < n; i++) {
        buf_append(&out, i ? ",\"" : "\"", i ? 2 : 1);
        buf_append(&out, ids[i], UUID7_LEN);
        buf_appendc(&out, '"');
    }
    buf_append(&out, "]}", 2);
    int rc = buf_failed(&out) ? http_reply_error(req, 503, "Out of memory.")
                              : http_reply_bytes(req, 201, "application/json", out.data, out.len);
    buf_free(&out);
    return rc;
}

/* A body in canonical form (queue_jobs_read): its jobs go to the log as
 * their bytes, without a tree per job. */
static int enqueue_bytes(http_req *req, const queue_jobs *js)
{
    char(*ids)[UUID7_LEN + 1] = malloc((js->n ? js->n : 1) * sizeof *ids);
    if (!ids)
        return http_reply_error(req, 503, "Out of memory.");
    queue *q = queue_for(req, true, false);
    storh_err err;
    int rc = 0;
    if (!q)
        ;
    else if (queue_enqueue_jobs(q, js, ids, &err))
        rc = http_reply_storh(req, &err);
    else {
        longpoll_kick(http_param(req, "queue"));
        rc = reply_ids(req, ids, js->n);
    }
    free(ids);
    return rc;
}

int h_queues_enqueue(http_req *req)
{
    storh_err err;
    const buf *b = http_body(req);
    queue_jobs js = QUEUE_JOBS_INIT;
    if (queue_jobs_read(b->data ? b->data : "", b->len, &js)) {
        int rc = enqueue_bytes(req, &js);
        queue_jobs_free(&js);
        return rc;
    }
    queue_jobs_free(&js);
    json_t *body = sjson_decode(b->data ? b->data : "", b->len, &err);
    if (!body)
        return http_reply_error(req, 400, "Request body: %s", err.msg);
    json_t *jobs = body;
    if (json_is_object(body)) { /* one job */
        jobs = json_array();
        json_array_append(jobs, body);
        json_decref(body);
    } else if (!json_is_array(body)) {
        json_decref(body);
        return http_reply_error(req, 400, "Request body must be a job object or an array.");
    }
    if (queue_check_jobs(jobs, &err)) { /* bad jobs create no queue */
        json_decref(jobs);
        return http_reply_storh(req, &err);
    }
    queue *q = queue_for(req, true, false);
    if (!q) {
        json_decref(jobs);
        return 0;
    }
    json_t *ids;
    int rc = queue_enqueue_many(q, jobs, &ids, &err);
    json_decref(jobs);
    if (rc)
        return http_reply_storh(req, &err);
    longpoll_kick(http_param(req, "queue"));
    return http_reply_owned(req, 201, json_pack("{so}", "ids", ids));
}

typedef struct claim_state {
    size_t limit;
    uint64_t deadline; /* 0: no waiting */
} claim_state;

static int claim_work(http_req *req)
{
    claim_state *c = http_state(req);
    const char *name = http_param(req, "queue");
    uint64_t seen = longpoll_generation(name);
    queue *q = queue_for(req, false, true);
    if (!q && http_has_reply(req))
        return 0;
    if (q) { /* the answer's bytes straight from the queue's state */
        storh_err err;
        buf out = BUF_INIT;
        buf_append(&out, "{\"jobs\":[", 9);
        size_t n = 0;
        int rc = 0;
        if (queue_claim_bytes(q, c->limit, &out, &n, &err))
            rc = http_reply_storh(req, &err);
        else if (n) {
            buf_append(&out, "]}", 2);
            rc = buf_failed(&out)
                     ? http_reply_error(req, 503, "Out of memory.")
                     : http_reply_bytes(req, 200, "application/json", out.data, out.len);
        }
        buf_free(&out);
        if (rc || n || http_has_reply(req))
            return rc;
    }
    if (c->deadline && longpoll_now_us() < c->deadline &&
        longpoll_park(name, req, c->deadline, claim_work, seen))
        return 0;
    return http_reply_empty(req, 204);
}

int h_queues_claim(http_req *req)
{
    long long limit, wait;
    storh_err perr;
    if (reqparse_int(req, "limit", 1, 1, CLAIM_MAX, &limit, &perr) ||
        reqparse_int(req, "wait_ms", 0, 0, WAIT_MAX_MS, &wait, &perr))
        return http_reply_storh(req, &perr);
    claim_state *c = calloc(1, sizeof *c);
    if (!c)
        return http_reply_error(req, 503, "Out of memory.");
    c->limit = (size_t)limit;
    c->deadline = wait ? longpoll_now_us() + (uint64_t)wait * 1000 : 0;
    http_set_state(req, c, free);
    return claim_work(req);
}

/* Completes the ids read from a body in canonical form (qi), or else those
 * of a decoded body (ids; queue_complete_many checks them). */
static int complete(http_req *req, const queue_ids *qi, const json_t *ids)
{
    bool keep;
    storh_err err;
    if (reqparse_bool(req, "keep_done", true, &keep, &err))
        return http_reply_storh(req, &err);
    queue *q = queue_for(req, false, false);
    if (!q)
        return 0;
    size_t done;
    if (qi ? queue_complete_ids(q, qi, keep, &done, &err)
           : queue_complete_many(q, ids, keep, &done, &err))
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, json_pack("{sI}", "completed", (json_int_t)done));
}

int h_queues_complete_one(http_req *req)
{
    /* NULL when the id is not UTF-8: queue_complete_many refuses it */
    json_t *ids = json_pack("[s]", http_param(req, "id"));
    int rc = complete(req, NULL, ids);
    json_decref(ids);
    return rc;
}

int h_queues_complete_many(http_req *req)
{
    /* a body in canonical form: its ids read as spans of its bytes */
    const buf *b = http_body(req);
    queue_ids qi = QUEUE_IDS_INIT;
    if (queue_ids_read(b->data ? b->data : "", b->len, &qi)) {
        int rc = complete(req, &qi, NULL);
        queue_ids_free(&qi);
        return rc;
    }
    queue_ids_free(&qi);
    json_t *body = http_body_object(req);
    if (!body)
        return 0;
    json_t *ids = json_object_get(body, "ids");
    int rc = json_is_array(ids)
                 ? complete(req, NULL, ids)
                 : http_reply_error(req, 400, "Body: ids must be an array of job ids.");
    json_decref(body);
    return rc;
}

/* requeue {"timeout_seconds":N} and purge {"older_than_seconds":N} */
static int age_work(http_req *req, const char *field, const char *result,
                    int (*fn)(queue *, int64_t, size_t *, storh_err *))
{
    json_t *body = NULL;
    const buf *b = http_body(req);
    int64_t secs = 0;
    if (b->len) {
        if (!(body = http_body_object(req)))
            return 0;
        json_t *v = json_object_get(body, field);
        if (v && (!json_is_integer(v) || json_integer_value(v) < 0)) {
            json_decref(body);
            return http_reply_error(req, 400, "Body: %s must be an integer >= 0.", field);
        }
        secs = v ? json_integer_value(v) : 0;
        json_decref(body);
    }
    queue *q = queue_for(req, false, false);
    if (!q)
        return 0;
    size_t n;
    storh_err err;
    if (fn(q, secs, &n, &err))
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, json_pack("{sI}", result, (json_int_t)n));
}

int h_queues_requeue(http_req *req)
{
    return age_work(req, "timeout_seconds", "requeued", queue_requeue_timed_out);
}

int h_queues_purge(http_req *req)
{
    return age_work(req, "older_than_seconds", "purged", queue_purge_done);
}

int h_queues_stats(http_req *req)
{
    queue *q = queue_for(req, false, false);
    if (!q)
        return 0;
    json_t *out;
    storh_err err;
    if (queue_stats(q, &out, &err))
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}

int h_queues_verify(http_req *req)
{
    queue *q = queue_for(req, false, false);
    if (!q)
        return 0;
    json_t *out;
    storh_err err;
    if (queue_verify(q, &out, &err))
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}

int h_queues_repair(http_req *req)
{
    long long timeout;
    storh_err perr;
    if (reqparse_int(req, "timeout_seconds", 3600, 0, INT32_MAX, &timeout, &perr))
        return http_reply_storh(req, &perr);
    queue *q = queue_for(req, false, false);
    if (!q)
        return 0;
    json_t *out;
    storh_err err;
    if (queue_repair(q, timeout, &out, &err))
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}
