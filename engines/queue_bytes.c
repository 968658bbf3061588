/* queue_bytes: the queue's byte path. An enqueue whose body is in canonical
 * form (reccanon.h) is read as spans of that body and its payloads go into
 * the log lines and the state as those bytes; a claim appends its answer's
 * bytes from the state without building trees; a complete's ids are read
 * as spans of its body. Whatever is not canonical
 * goes the tree path (queue.c), which gives the same lines, state and
 * answers: these functions are its fast forms, not new semantics. */
#include "queue.h"

#include <stdlib.h>
#include <string.h>

#include "reccanon.h"
#include "queue_int.h"

/* ---------- reading a body ---------- */

static void job_member(const char *key, size_t klen, const char *val, size_t vlen, void *ctx)
{
    queue_jobs *js = ctx;
    if (klen == 2 && !memcmp(key, "id", 2)) {
        if (*val != '"')
            return; /* not a string: an id is made (queue_enqueue_many) */
        if (vlen != UUID7_LEN + 2 || !uuid7_is_valid(val + 1, UUID7_LEN))
            js->bad = true; /* the tree path says why */
        else
            js->id = val + 1;
    } else if (klen == 7 && !memcmp(key, "payload", 7) && (*val == '{' || *val == '[')) {
        js->payload = val;
        js->len = vlen;
    }
}

static void job_item(const char *item, size_t len, void *ctx)
{
    queue_jobs *js = ctx;
    if (*item != '{') /* jobs must be objects: the tree path says so */
        js->bad = true;
    if (!js->bad && js->n == js->cap) {
        size_t cap = js->cap ? js->cap * 2 : 64;
        queue_job_bytes *v = realloc(js->v, cap * sizeof *v);
        if (v) {
            js->v = v;
            js->cap = cap;
        } else {
            js->bad = true;
        }
    }
    if (!js->bad) /* without an object payload, the whole job is it */
        js->v[js->n++] = (queue_job_bytes){js->id, js->payload ? js->payload : item,
                                           js->payload ? js->len : len};
    js->id = js->payload = NULL;
    js->len = 0;
}

bool queue_jobs_read(const char *body, size_t len, queue_jobs *js)
{
    js->n = 0;
    js->bad = false;
    js->id = js->payload = NULL;
    js->len = 0;
    bool ok;
    if (len && *body == '{') {
        ok = reccanon_value_members(body, len, job_member, js);
        if (ok)
            job_item(body, len, js);
    } else {
        ok = reccanon_list_members(body, len, job_member, job_item, js);
    }
    return ok && !js->bad;
}

void queue_jobs_free(queue_jobs *js)
{
    free(js->v);
    *js = (queue_jobs)QUEUE_JOBS_INIT;
}

/* The ids list of a complete's body: "<36>" items only. */
static void ids_member(const char *key, size_t klen, const char *val, size_t vlen, void *ctx)
{
    queue_ids *qi = ctx;
    if (klen != 3 || memcmp(key, "ids", 3))
        return;
    qi->seen = true;
    const char *p = val + 1, *end = val + vlen - 1; /* inside [ ] */
    if (*val != '[') {
        qi->bad = true;
        return;
    }
    while (!qi->bad && p < end) {
        if (end - p < UUID7_LEN + 2 || *p != '"' || p[UUID7_LEN + 1] != '"' ||
            !uuid7_is_valid(p + 1, UUID7_LEN)) {
            qi->bad = true;
            break;
        }
        if (qi->n == qi->cap) {
            size_t cap = qi->cap ? qi->cap * 2 : 64;
            const char **v = realloc(qi->v, cap * sizeof *v);
            if (!v) {
                qi->bad = true;
                break;
            }
            qi->v = v;
            qi->cap = cap;
        }
        qi->v[qi->n++] = p + 1;
        p += UUID7_LEN + 2;
        if (p < end && *p++ != ',')
            qi->bad = true;
    }
}

bool queue_ids_read(const char *body, size_t len, queue_ids *qi)
{
    qi->n = 0;
    qi->seen = qi->bad = false;
    return reccanon_value_members(body, len, ids_member, qi) && qi->seen && !qi->bad;
}

void queue_ids_free(queue_ids *qi)
{
    free(qi->v);
    *qi = (queue_ids)QUEUE_IDS_INIT;
}

/* ---------- enqueue ---------- */

typedef struct enq_bytes {
    const queue_jobs *jobs;
    char (*ids)[UUID7_LEN + 1];
} enq_bytes;

static int do_enqueue_jobs(queue *q, void *a, buf *lines, storh_err *err)
{
    enq_bytes *eb = a;
    int64_t ts = queue__now_s();
    size_t total = 0;
    for (size_t i = 0; i < eb->jobs->n; i++)
        total += eb->jobs->v[i].len + 120;
    buf_reserve(lines, total);
    queue__reserve_enqueues(q, eb->jobs->n);
    /* the ids first: given ones copied, each run of jobs without one made
     * together (one clock read and one lock a run, not a job) */
    for (size_t i = 0, n = eb->jobs->n; i < n;) {
        if (eb->jobs->v[i].id) {
            memcpy(eb->ids[i], eb->jobs->v[i].id, UUID7_LEN);
            eb->ids[i++][UUID7_LEN] = '\0';
            continue;
        }
        size_t k = i;
        while (k < n && !eb->jobs->v[k].id)
            k++;
        int rc = uuid7_generate_many(eb->ids + i, k - i, err);
        if (rc)
            return rc;
        i = k;
    }
    for (size_t i = 0; i < eb->jobs->n; i++) {
        const queue_job_bytes *jb = &eb->jobs->v[i];
        const char *id = eb->ids[i];
        queue__event_begin(q, "enqueue", id);
        buf_append(&q->ev, ",\"payload\":", 11);
        buf_append(&q->ev, jb->payload, jb->len);
        if (*jb->payload == '{') { /* kept as these bytes */
            queue__event_end(q, lines, "enqueue", id, ts, false, NULL, true, jb->payload, jb->len);
        } else { /* a list: every key an integer, which the state drops */
            json_t *own = json_object();
            if (!own)
                q->own_failed = true;
            queue__event_end(q, lines, "enqueue", id, ts, false, own, true, NULL, 0);
        }
    }
    return 0;
}

int queue_enqueue_jobs(queue *q, const queue_jobs *jobs, char (*ids)[UUID7_LEN + 1], storh_err *err)
{
    enq_bytes a = {jobs, ids};
    return queue__with_lock_staged(q, do_enqueue_jobs, &a, true, err);
}

/* ---------- claim ---------- */

typedef struct claim_bytes {
    buf *out;
    bool first;
} claim_bytes;

static int claim_one(const char *id, const job *j, void *ctx, storh_err *err)
{
    claim_bytes *cb = ctx;
    buf *out = cb->out;
    if (!cb->first)
        buf_appendc(out, ',');
    cb->first = false;
    buf_append(out, "{\"id\":\"", 7);
    buf_append(out, id, UUID7_LEN);
    buf_append(out, "\",\"payload\":", 12);
    int rc = queue__payload_bytes(j, out, err);
    buf_appendc(out, '}');
    if (!rc && buf_failed(out))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    return rc;
}

typedef struct claimb_arg {
    size_t limit, n;
    claim_bytes cb;
} claimb_arg;

static int do_claim_bytes(queue *q, void *a, buf *lines, storh_err *err)
{
    claimb_arg *ca = a;
    return queue__claim_each(q, lines, ca->limit, claim_one, &ca->cb, &ca->n, err);
}

int queue_claim_bytes(queue *q, size_t limit, buf *out, size_t *n, storh_err *err)
{
    *n = 0;
    if (limit < 1)
        return storh_err_set(err, STORH_EINVAL, "Queue claim limit must be at least 1.");
    size_t at = out->len;
    claimb_arg a = {limit, 0, {out, true}};
    int rc = queue__with_lock(q, do_claim_bytes, &a, err);
    if (rc) {
        out->len = at; /* nothing claimed: nothing to answer */
        return rc;
    }
    *n = a.n;
    return 0;
}
