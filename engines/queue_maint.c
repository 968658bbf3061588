/* queue_maint: counts and stats, verify (bad lines, drift between the
 * replayed and the in-memory state) and repair (quarantine bad lines,
 * rewrite the log, requeue stuck jobs) of a queue. */
#include "queue.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fault.h"
#include "fsx.h"
#include "gcommit.h"
#include "idmap.h"
#include "queue_int.h"

/* ---------- counts ---------- */

static int do_nothing(queue *q, void *a, buf *lines, storh_err *err)
{
    (void)q;
    (void)a;
    (void)lines;
    (void)err;
    return 0;
}

static json_t *counts_of(const qstate *s)
{
    return json_pack("{sIsIsI}", "pending", (json_int_t)s->pending, "processing",
                     (json_int_t)s->processing, "done", (json_int_t)s->done);
}

int queue_counts(queue *q, json_t **out, storh_err *err)
{
    int rc = queue__with_lock(q, do_nothing, NULL, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&q->mu);
    *out = counts_of(&q->st);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

int queue_pending(queue *q, size_t *n, storh_err *err)
{
    int rc = queue__with_lock(q, do_nothing, NULL, err);
    pthread_mutex_lock(&q->mu);
    *n = q->st.pending;
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int queue_stats(queue *q, json_t **out, storh_err *err)
{
    int rc = queue_counts(q, out, err);
    if (rc)
        return rc;
    struct stat st;
    json_object_set_new(*out, "bytes", json_integer(stat(q->log, &st) == 0 ? st.st_size : 0));
    return 0;
}

/* ---------- verify ---------- */

static bool job_equal(const job *a, const job *b)
{
    if (a->state != b->state)
        return false;
    if ((a->state == JOB_PROCESSING || a->state == JOB_DONE) && a->ts != b->ts)
        return false;
    bool ha = a->payload || a->raw, hb = b->payload || b->raw;
    if (ha != hb)
        return false;
    if (!ha)
        return true;
    if (a->raw && b->raw)
        return a->rawlen == b->rawlen && !memcmp(a->raw, b->raw, a->rawlen);
    json_t *x = queue__payload_tree(a), *y = queue__payload_tree(b);
    bool same = x && y && json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return same;
}

/* The claim order of the pending jobs, as a comparable list of ids. */
static json_t *effective_order(const qstate *s)
{
    json_t *o = json_array();
    for (size_t i = s->head; i < s->n; i++) {
        char id[UUID7_LEN + 1];
        memcpy(id, s->order[i].id, UUID7_LEN);
        id[UUID7_LEN] = '\0';
        job *j = idmap_get(&s->jobs, id);
        if (j && j->state == JOB_PENDING && j->seq == s->order[i].seq)
            json_array_append_new(o, json_string(id));
    }
    return o;
}

static bool states_equal(const qstate *a, const qstate *b)
{
    if (a->pending != b->pending || a->processing != b->processing || a->done != b->done)
        return false;
    size_t pos = 0;
    const char *k;
    void *v;
    while (idmap_next(&a->jobs, &pos, &k, &v)) {
        job *x = v, *y = idmap_get(&b->jobs, k);
        if (x->state == JOB_GONE && !x->payload && !x->raw &&
            (!y || (y->state == JOB_GONE && !y->payload && !y->raw)))
            continue;
        if (!y || !job_equal(x, y))
            return false;
    }
    json_t *oa = effective_order(a), *ob = effective_order(b);
    bool same = json_equal(oa, ob);
    json_decref(oa);
    json_decref(ob);
    return same;
}

int queue_verify(queue *q, json_t **out, storh_err *err)
{
    pthread_mutex_lock(&q->mu);
    int rc = fsx_lock_acquire(&q->lock, err);
    if (rc) {
        pthread_mutex_unlock(&q->mu);
        return rc;
    }
    json_t *errors = json_array();
    storh_err rerr;
    rc = queue__sync_log(q, &rerr);
    buf b = BUF_INIT;
    if (rc || fsx_read_all(q->log, &b, &rerr) != 0) { /* reported, with its reason */
        json_array_append_new(errors, json_string(rerr.msg));
    } else {
        qstate fresh;
        queue__qstate_init(&fresh);
        long lines = 0;
        uint64_t end = queue__apply_bytes(q, &fresh, b.data ? b.data : "", 0, b.len, &lines, false);
        for (size_t i = 0; i < q->nbad; i++) {
            char msg[160];
            snprintf(msg, sizeof msg, "line %ld: %s", q->bad[i].line, q->bad[i].msg);
            json_array_append_new(errors, json_string(msg));
        }
        if (end < b.len)
            json_array_append_new(errors, json_string("Torn log queue line."));
        if (!states_equal(&fresh, &q->st))
            json_array_append_new(errors, json_string("Log queue state drift."));
        queue__qstate_free(&fresh);
    }
    buf_free(&b);
    json_t *stats = counts_of(&q->st);
    struct stat st;
    json_object_set_new(stats, "bytes", json_integer(stat(q->log, &st) == 0 ? st.st_size : 0));
    fsx_lock_release(&q->lock);
    pthread_mutex_unlock(&q->mu);
    rc = 0;
    *out =
        json_pack("{sbsoso}", "ok", json_array_size(errors) == 0, "errors", errors, "stats", stats);
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

/* Whether queue.log is no longer the file q->fd writes to (or cannot be
 * told): a rewrite renamed it into place and then failed. */
static bool log_replaced(const queue *q)
{
    struct stat a, b;
    return fstat(q->fd, &a) != 0 || stat(q->log, &b) != 0 || a.st_ino != b.st_ino ||
           a.st_dev != b.st_dev;
}

/* Under the locks: rewrites queue.log without the bad lines, saving each to
 * .storh/corrupt/ first. A rewrite that replaced queue.log but could not
 * take it on (its directory's sync failed, no descriptor) poisons the
 * queue: appends to the old file would be acknowledged and lost. */
static int rewrite_without_bad(queue *q, size_t *quarantined, storh_err *err)
{
    *quarantined = 0;
    if (q->nbad == 0)
        return 0;
    buf b = BUF_INIT, keep = BUF_INIT;
    int rc = fsx_read_all(q->log, &b, err);
    uint64_t from = 0;
    for (size_t i = 0; !rc && i < q->nbad; i++) {
        bad_ev *e = &q->bad[i];
        char path[PATH_MAX];
        rc = fsx_pathf(path, err, "%s/.storh/corrupt/queue.log.%llu.line", q->dir,
                       (unsigned long long)e->off);
        if (!rc)
            rc = fsx_publish(path, b.data + e->off, e->len, err);
        buf_append(&keep, b.data + from, e->off - from);
        from = e->off + e->len + 1;
        (*quarantined)++;
    }
    if (!rc && from < b.len)
        buf_append(&keep, b.data + from, b.len - from);
    if (!rc)
        rc = fsx_publish(q->log, keep.data ? keep.data : "", keep.len, err);
    if (!rc && fault_fails("logsync", q->dir)) /* as a failed directory sync */
        rc = storh_err_sys(err, EIO, "Could not sync directory %s", q->dir);
    buf_free(&b);
    buf_free(&keep);
    if (rc) {
        if (log_replaced(q))
            gcommit_poison(&q->gc, EIO);
        return rc;
    }
    int fd = open(q->log, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
        rc = storh_err_sys(err, errno, "Could not open log queue file.");
        gcommit_poison(&q->gc, EIO);
        return rc;
    }
    if ((rc = gcommit_switch(&q->gc, fd, 0, err))) { /* closes the old fd */
        close(fd);
        return rc;
    }
    q->fd = fd;
    rc = queue__replay(q, err);
    gcommit_written(&q->gc, q->consumed);
    q->gc.synced = q->consumed;
    q->gc.pending = 0;
    return rc;
}

typedef struct repair_arg {
    int64_t timeout;
    size_t quarantined, requeued;
} repair_arg;

static int do_repair(queue *q, void *a, buf *lines, storh_err *err)
{
    repair_arg *r = a;
    int rc = rewrite_without_bad(q, &r->quarantined, err);
    if (rc)
        return rc;
    age_arg age = {r->timeout, 0};
    rc = queue__do_requeue(q, &age, lines, err);
    r->requeued = age.n;
    return rc;
}

int queue_repair(queue *q, int64_t timeout_s, json_t **out, storh_err *err)
{
    repair_arg a = {timeout_s, 0, 0};
    int rc = queue__with_lock(q, do_repair, &a, err);
    if (rc)
        return rc;
    *out = json_pack("{sbsIsI}", "ok", 1, "quarantined", (json_int_t)a.quarantined, "requeued",
                     (json_int_t)a.requeued);
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}
