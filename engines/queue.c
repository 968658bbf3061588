#include "queue.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "estats.h"
#include "fault.h"
#include "frame.h"
#include "fsx.h"
#include "gcommit.h"
#include "idmap.h"
#include "qstage.h"
#include "sjson.h"
#include "queue_int.h"

/* ---------- log reading ---------- */

void queue__note_bad(queue *q, uint64_t off, uint64_t len, long line, const char *msg)
{
    bad_ev *n = realloc(q->bad, (q->nbad + 1) * sizeof *n);
    if (!n)
        return;
    q->bad = n;
    bad_ev *b = &q->bad[q->nbad++];
    b->off = off;
    b->len = len;
    b->line = line;
    snprintf(b->msg, sizeof b->msg, "%s", msg);
}

/* Applies the whole lines of b (which starts at log offset base) to st.
 * Returns the log offset after the last whole line. */
uint64_t queue__apply_bytes(queue *q, qstate *st, const char *b, uint64_t base, uint64_t len,
                            long *lines, bool record_bad)
{
    uint64_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(b + pos, '\n', len - pos);
        if (!nl)
            break; /* an unterminated tail is not an event (yet) */
        uint64_t end = (uint64_t)(nl - b);
        char msg[96];
        (*lines)++;
        if (!queue__apply_line(st, b + pos, end - pos, msg, sizeof msg) && record_bad)
            queue__note_bad(q, base + pos, end - pos, *lines, msg);
        estats_add(ESTAT_QUEUE_EVENT, 1);
        pos = end + 1;
    }
    return base + pos;
}

/* Under the lock: the lines a failed operation appended cut away, and the
 * cut made durable (a group commit of another thread, or the writeback the
 * spill started, may have made them durable already); when that cannot
 * be done, the file takes no more writes (a reopen cuts a torn tail, or
 * applies whole events no one was told of, as after a crash). */
static int cut_back(queue *q)
{
    if (ftruncate(q->fd, (off_t)q->consumed) != 0 || fdatasync(q->fd) != 0) {
        gcommit_poison(&q->gc, errno);
        return -1;
    }
    return 0;
}

static int truncate_to(queue *q, uint64_t size, storh_err *err)
{
    if (ftruncate(q->fd, (off_t)size) != 0 || fsync(q->fd) != 0)
        return storh_err_sys(err, errno, "Could not truncate torn tail of %s", q->log);
    return 0;
}

/* Full replay from the start; truncates an unterminated tail. */
int queue__replay(queue *q, storh_err *err)
{
    queue__qstate_free(&q->st);
    if (queue__qstate_init(&q->st) != 0)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    q->nbad = 0;
    q->lines = 0;
    buf b = BUF_INIT;
    int rc = fsx_read_all(q->log, &b, err);
    if (rc) {
        buf_free(&b);
        return rc;
    }
    uint64_t end = queue__apply_bytes(q, &q->st, b.data ? b.data : "", 0, b.len, &q->lines, true);
    if (end < b.len)
        rc = truncate_to(q, end, err);
    q->consumed = end;
    buf_free(&b);
    return rc;
}

/* Under mu + flock: applies what other processes appended since. */
int queue__sync_log(queue *q, storh_err *err)
{
    struct stat st;
    if (fstat(q->fd, &st) != 0)
        return storh_err_sys(err, errno, "Could not read log queue file.");
    uint64_t size = (uint64_t)st.st_size;
    if (size < q->consumed)
        return queue__replay(q, err);
    if (size == q->consumed)
        return 0;
    uint64_t len = size - q->consumed;
    char *b = malloc(len);
    if (!b)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    ssize_t r = pread(q->fd, b, len, (off_t)q->consumed);
    int rc = 0;
    if (r < 0) {
        rc = storh_err_sys(err, errno, "Could not read log queue file.");
    } else {
        uint64_t end = queue__apply_bytes(q, &q->st, b, q->consumed, (uint64_t)r, &q->lines, true);
        /* a tail without LF under a free lock: its writer died mid-write */
        if (end < q->consumed + (uint64_t)r)
            rc = truncate_to(q, end, err);
        q->consumed = end;
        gcommit_written(&q->gc, end);
    }
    free(b);
    return rc;
}

int queue_open(const char *root, const char *name, bool create, queue **out, storh_err *err)
{
    queue *q = calloc(1, sizeof *q);
    if (!q)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    q->fd = -1;
    q->lock.fd = -1;
    pthread_mutex_init(&q->mu, NULL);
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/')
        rl--;
    int rc = fsx_pathf(q->dir, err, "%.*s/%s", (int)rl, root, name);
    if (!rc)
        rc = fsx_pathf(q->log, err, "%s/queue.log", q->dir);
    if (!rc && queue__qstate_init(&q->st) != 0)
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    struct stat st;
    if (!rc && !create && stat(q->log, &st) != 0)
        rc = storh_err_set(err, STORH_ENOTFOUND, "No such queue: %s", name);
    char lockp[PATH_MAX];
    if (!rc)
        rc = fsx_mkdirs(q->dir, true, err);
    if (!rc)
        rc = fsx_pathf(lockp, err, "%s/queue.lock", q->dir);
    if (!rc)
        rc = fsx_lock_open(&q->lock, lockp, err);
    if (!rc)
        rc = fsx_lock_acquire(&q->lock, err);
    if (rc) {
        queue_close(q);
        return rc;
    }
    bool fresh = stat(q->log, &st) != 0;
    q->fd = open(q->log, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (q->fd < 0)
        rc = storh_err_sys(err, errno, "Could not open log queue file.");
    if (!rc && fresh)
        rc = fsx_fsync_dir(q->dir, err);
    if (!rc) /* batches a crash cut short are finished before replay */
        rc = qstage_recover(q->dir, q->fd, err);
    if (!rc) {
        gcommit_init(&q->gc, &q->mu, q->fd, 0);
        gcommit_label(&q->gc, WSTATS_QUEUE, name);
        rc = queue__replay(q, err);
        gcommit_written(&q->gc, q->consumed);
        q->gc.synced = q->consumed;
        q->gc.pending = 0; /* replayed, not written */
    }
    fsx_lock_release(&q->lock);
    if (rc) {
        queue_close(q);
        return rc;
    }
    *out = q;
    return 0;
}

void queue_close(queue *q)
{
    if (!q)
        return;
    if (q->fd >= 0) {
        gcommit_destroy(&q->gc);
        close(q->fd);
    }
    fsx_lock_close(&q->lock);
    queue__qstate_free(&q->st);
    queue__own_clear(q);
    free(q->own);
    buf_free(&q->ev);
    buf_free(&q->batch);
    free(q->bad);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* ---------- operations ---------- */

/* Runs fn under mu + flock after syncing from the log; fn appends event
 * lines to lines; they are written, applied and made durable. With staged,
 * lines of more than one event go through a qstage first, so a crash
 * leaves all of them or none. */
int queue__with_lock_staged(queue *q, locked_fn fn, void *arg, bool staged, storh_err *err)
{
    pthread_mutex_lock(&q->mu);
    int rc = fsx_lock_acquire(&q->lock, err);
    if (rc) {
        pthread_mutex_unlock(&q->mu);
        return rc;
    }
    /* the queue's buffer, kept between operations: a batch's lines go
     * into memory the last batch already touched */
    buf lines = q->batch;
    q->batch = (buf)BUF_INIT;
    buf_reset(&lines);
    gcommit_ticket t = {0, 0};
    rc = gcommit_check(&q->gc, err);
    if (!rc)
        rc = queue__sync_log(q, err);
    q->spill_on = !staged && !rc;
    q->spilled = 0;
    q->spill_err = 0;
    q->head_set = false;
    if (!rc)
        rc = fn(q, arg, &lines, err);
    q->spill_on = false;
    if (!rc && q->spill_err)
        rc = storh_err_sys(err, q->spill_err, "Could not append to log queue file.");
    if (!rc && buf_failed(&lines))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (rc && (q->spilled || q->spill_err)) /* a failed operation's spilled lines */
        (void)cut_back(q);
    char stage[PATH_MAX] = "";
    if (!rc && staged && lines.len &&
        memchr(lines.data, '\n', lines.len) != lines.data + lines.len - 1)
        rc = qstage_write(q->dir, q->consumed, lines.data, lines.len, stage, err);
    if (rc && stage[0]) /* a refused batch the next open may roll forward: nothing after it */
        gcommit_poison(&q->gc, EIO);
    if (stage[0])
        fault_point("queue.batch.staged");
    if (!rc && lines.len) {
        if (fsx_write_all(q->fd, lines.data + q->spilled, lines.len - q->spilled) != 0) {
            int e = errno;
            /* no partial event may stay */
            if (cut_back(q) == 0 && stage[0]) /* nothing to finish on open */
                qstage_remove(stage);
            rc = storh_err_sys(err, e, "Could not append to log queue file.");
        }
        if (stage[0])
            fault_point("queue.batch.written");
        if (!rc) {
            if (!q->own_failed && q->nown == q->nevents)
                queue__apply_own(q, q->consumed);
            else
                queue__apply_bytes(q, &q->st, lines.data, q->consumed, lines.len, &q->lines, true);
            q->consumed += lines.len;
            t = gcommit_written(&q->gc, q->consumed);
        }
    }
    /* a claim's cursor, once its lines are written (applying claims moves
     * no order entry); a claim that found nothing moves it too, past the
     * entries other processes' claims made stale */
    if (!rc && q->head_set)
        q->st.head = q->head_next;
    queue__own_clear(q);
    fsx_lock_release(&q->lock);
    bool wrote = lines.len > 0;
    /* handed back before gcommit_wait, which lets other operations in (one
     * of which may have handed back its own meanwhile: the larger stays) */
    if (lines.cap > QUEUE_BATCH_KEEP || lines.cap <= q->batch.cap) {
        buf_free(&lines);
    } else {
        buf_free(&q->batch);
        q->batch = lines;
    }
    if (!rc && wrote)
        rc = gcommit_wait(&q->gc, t, err);
    if (!rc && stage[0]) /* durable in the log: the stage has done its work */
        qstage_remove(stage);
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int queue__with_lock(queue *q, locked_fn fn, void *arg, storh_err *err)
{
    return queue__with_lock_staged(q, fn, arg, false, err);
}

typedef struct enq_arg {
    const json_t *jobs;
    json_t *ids;
} enq_arg;

static int do_enqueue(queue *q, void *a, buf *lines, storh_err *err)
{
    enq_arg *ea = a;
    int64_t ts = queue__now_s();
    size_t i;
    json_t *jobj;
    int rc = 0;
    /* the batch's lines in one buffer: a guess at their size saves the
     * copies of growing it */
    buf_reserve(lines, json_array_size(ea->jobs) * 192);
    queue__reserve_enqueues(q, json_array_size(ea->jobs));
    json_array_foreach (ea->jobs, i, jobj) {
        if (!json_is_object(jobj)) {
            rc = storh_err_set(err, STORH_EINVAL, "Job %zu: jobs must be JSON objects.", i);
            break;
        }
        json_t *idv = json_object_get(jobj, "id");
        json_t *payload = json_object_get(jobj, "payload");
        if (!json_is_object(payload) && !json_is_array(payload))
            payload = jobj;
        char id[UUID7_LEN + 1];
        if (json_is_string(idv)) {
            const char *s = json_string_value(idv);
            if (!uuid7_is_valid(s, json_string_length(idv))) {
                rc = storh_err_set(err, STORH_EINVAL, "Job %zu: Invalid UUIDv7 value.", i);
                break;
            }
            memcpy(id, s, UUID7_LEN + 1);
        } else if ((rc = uuid7_generate(id, -1, err))) {
            break;
        }
        queue__event_begin(q, "enqueue", id);
        buf_append(&q->ev, ",\"payload\":", 11);
        size_t at = q->ev.len;
        if ((rc = sjson_encode(&q->ev, payload, 0, err)))
            break;
        bool keyed;
        json_t *own = queue__own_payload(payload, q->ev.data + at, q->ev.len - at, &keyed);
        if (!own)
            q->own_failed = true;
        queue__event_end(q, lines, "enqueue", id, ts, false, own, keyed, NULL, 0);
        json_t *idj = json_stringn_nocheck(id, UUID7_LEN); /* checked or generated: ASCII */
        if (!idj || json_array_append_new(ea->ids, idj)) {
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            break;
        }
    }
    return rc;
}

int queue_check_jobs(const json_t *jobs, storh_err *err)
{
    if (!json_is_array(jobs))
        return storh_err_set(err, STORH_EINVAL, "Jobs must be a JSON array.");
    size_t i;
    const json_t *jobj;
    json_array_foreach (jobs, i, jobj) {
        if (!json_is_object(jobj))
            return storh_err_set(err, STORH_EINVAL, "Job %zu: jobs must be JSON objects.", i);
        const json_t *idv = json_object_get(jobj, "id");
        if (json_is_string(idv) && !uuid7_is_valid(json_string_value(idv), json_string_length(idv)))
            return storh_err_set(err, STORH_EINVAL, "Job %zu: Invalid UUIDv7 value.", i);
    }
    return 0;
}

int queue_enqueue_many(queue *q, const json_t *jobs, json_t **ids, storh_err *err)
{
    if (!json_is_array(jobs))
        return storh_err_set(err, STORH_EINVAL, "Jobs must be a JSON array.");
    enq_arg a = {jobs, json_array()};
    int rc = a.ids ? queue__with_lock_staged(q, do_enqueue, &a, true, err)
                   : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (rc) {
        json_decref(a.ids);
        return rc;
    }
    *ids = a.ids;
    return 0;
}

/* A walk over many jobs known ahead (a claim's order, a complete's ids):
 * with ahead, the map slots of the keys QUEUE_AHEAD positions on are
 * prefetched, their hashes kept for the lookup; without (a small
 * operation), plain lookups and no hash it would not use. */
typedef struct walk {
    bool ahead;
    size_t hs[QUEUE_AHEAD]; /* the hash of the key at position k, at k % QUEUE_AHEAD */
} walk;

/* Starts fetching the slot of key, the walk's k-th. */
static void walk_prefetch(const idmap *m, walk *w, size_t k, const char *key)
{
    if (!w->ahead)
        return;
    w->hs[k % QUEUE_AHEAD] = idmap_hash(key);
    idmap_prefetch(m, w->hs[k % QUEUE_AHEAD]);
}

/* The job of key, the walk's i-th, or NULL; then prefetches next, the key
 * QUEUE_AHEAD positions on (NULL: none). */
static job *walk_get(const idmap *m, walk *w, size_t i, const char *key, const char *next)
{
    if (!w->ahead)
        return idmap_get(m, key);
    job *j = idmap_get_hashed(m, key, w->hs[i % QUEUE_AHEAD]);
    if (next)
        walk_prefetch(m, w, i + QUEUE_AHEAD, next);
    return j;
}

int queue__claim_each(queue *q, buf *lines, size_t limit, queue_claim_fn fn, void *ctx, size_t *n,
                      storh_err *err)
{
    qstate *s = &q->st;
    int64_t ts = queue__now_s();
    size_t want = limit < s->pending ? limit : s->pending;
    buf_reserve(lines, want * 96); /* a claim line is 87 bytes */
    queue__own_reserve(q, want);
    /* pick in FIFO order; the claim events move them to processing */
    size_t i = s->head;
    walk w = {.ahead = want > QUEUE_AHEAD};
    for (size_t k = i; k < i + QUEUE_AHEAD && k < s->n; k++)
        walk_prefetch(&s->jobs, &w, k, s->order[k].id);
    *n = 0;
    while (*n < limit && i < s->n) {
        order_ent *o = &s->order[i];
        job *j = walk_get(&s->jobs, &w, i, o->id,
                          i + QUEUE_AHEAD < s->n ? s->order[i + QUEUE_AHEAD].id : NULL);
        i++;
        if (!j || j->state != JOB_PENDING || j->seq != o->seq)
            continue;
        char id[UUID7_LEN + 1];
        memcpy(id, o->id, UUID7_LEN);
        id[UUID7_LEN] = '\0';
        /* an id has one order entry per seq, so no id is picked twice */
        /* a job goes into the answer before its claim event is written:
         * one that cannot be handed out is not claimed */
        int rc = fn(id, j, ctx, err);
        if (rc)
            return rc;
        queue__event(q, lines, "claim", id, NULL, ts, false, j);
        ++*n;
    }
    /* entries before i are claimed now, or stale, once the claim's lines
     * are written */
    q->head_set = true;
    q->head_next = i;
    return 0;
}

typedef struct claim_arg {
    size_t limit;
    json_t *jobs;
} claim_arg;

static int claim_tree(const char *id, const job *j, void *ctx, storh_err *err)
{
    json_t *p = queue__payload_tree(j);
    json_t *e = json_object();
    /* the setters and append take their value even when they fail */
    if (!p || !e || json_object_set_new_nocheck(e, "id", json_stringn_nocheck(id, UUID7_LEN))) {
        json_decref(p);
        json_decref(e);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    if (json_object_set_new_nocheck(e, "payload", p)) {
        json_decref(e);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    if (json_array_append_new(ctx, e) != 0)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    return 0;
}

static int do_claim(queue *q, void *a, buf *lines, storh_err *err)
{
    claim_arg *ca = a;
    size_t n;
    return queue__claim_each(q, lines, ca->limit, claim_tree, ca->jobs, &n, err);
}

int queue_claim(queue *q, size_t limit, json_t **jobs, storh_err *err)
{
    if (limit < 1)
        return storh_err_set(err, STORH_EINVAL, "Queue claim limit must be at least 1.");
    claim_arg a = {limit, json_array()};
    int rc = a.jobs ? queue__with_lock(q, do_claim, &a, err)
                    : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (rc) {
        json_decref(a.jobs);
        return rc;
    }
    *jobs = a.jobs;
    return 0;
}

typedef struct complete_arg {
    const char *const *ids; /* n ids of UUID7_LEN bytes (not NUL-ended) */
    size_t nids;
    bool keep;
    size_t n;
} complete_arg;

static int do_complete(queue *q, void *a, buf *lines, storh_err *err)
{
    complete_arg *c = a;
    int64_t ts = queue__now_s();
    /* a job completed twice in the batch is skipped: its events are applied
     * after the batch is written, so the job carries the batch's mark */
    uint64_t mark = ++q->st.mark;
    buf_reserve(lines, c->nids * 112); /* a complete line is 100 or 101 bytes */
    queue__own_reserve(q, c->nids < q->st.processing ? c->nids : q->st.processing);
    const char *extra = c->keep ? ",\"done\":true" : ",\"done\":false";
    walk w = {.ahead = c->nids > QUEUE_AHEAD};
    for (size_t k = 0; k < QUEUE_AHEAD && k < c->nids; k++)
        walk_prefetch(&q->st.jobs, &w, k, c->ids[k]);
    for (size_t i = 0; i < c->nids; i++) {
        job *j = walk_get(&q->st.jobs, &w, i, c->ids[i],
                          i + QUEUE_AHEAD < c->nids ? c->ids[i + QUEUE_AHEAD] : NULL);
        if (!j || j->state != JOB_PROCESSING || j->mark == mark)
            continue;
        j->mark = mark;
        char id[UUID7_LEN + 1];
        memcpy(id, c->ids[i], UUID7_LEN);
        id[UUID7_LEN] = '\0';
        queue__event(q, lines, "complete", id, extra, ts, c->keep, j);
        c->n++;
    }
    return 0;
}

/* Completes n ids already checked valid. */
static int complete_checked(queue *q, const char *const *ids, size_t n, bool keep_done,
                            size_t *completed, storh_err *err)
{
    complete_arg a = {ids, n, keep_done, 0};
    int rc = queue__with_lock(q, do_complete, &a, err);
    *completed = rc ? 0 : a.n;
    return rc;
}

int queue_complete_ids(queue *q, const queue_ids *ids, bool keep_done, size_t *completed,
                       storh_err *err)
{
    /* queue_ids_read checked each id */
    return complete_checked(q, ids->v, ids->n, keep_done, completed, err);
}

int queue_complete_many(queue *q, const json_t *ids, bool keep_done, size_t *completed,
                        storh_err *err)
{
    *completed = 0;
    if (!json_is_array(ids))
        return storh_err_set(err, STORH_EINVAL, "Ids must be a JSON array of strings.");
    size_t n = json_array_size(ids);
    const char **v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(ids, i);
        v[i] = json_string_value(e);
        if (!v[i] || !uuid7_is_valid(v[i], json_string_length(e))) {
            free(v);
            return storh_err_set(err, STORH_EINVAL, "Id %zu: Invalid UUIDv7 value.", i);
        }
    }
    int rc = complete_checked(q, v, n, keep_done, completed, err);
    free(v);
    return rc;
}

typedef struct aged {
    const char *id;
    job *j;
    int64_t ts;
    uint64_t seq;
} aged;

static int aged_cmp(const void *a, const void *b)
{
    const aged *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Writes op for every job in state that is at least secs old (secs <= 0 and
 * purge: all), oldest first and in claim order within one second. */
static int age_events(queue *q, uint8_t state, const char *op, int64_t secs, bool all_if_zero,
                      buf *lines, size_t *n, storh_err *err)
{
    int64_t now = queue__now_s();
    size_t cap = state == JOB_PROCESSING ? q->st.processing : q->st.done, k = 0;
    aged *list = malloc((cap ? cap : 1) * sizeof *list);
    if (!list)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    size_t pos = 0;
    const char *key;
    void *v;
    while (idmap_next(&q->st.jobs, &pos, &key, &v) && k < cap) {
        job *j = v;
        if (j->state == state && ((all_if_zero && secs <= 0) || now - j->ts >= secs))
            list[k++] = (aged){key, j, j->ts, j->seq};
    }
    qsort(list, k, sizeof *list, aged_cmp);
    for (size_t i = 0; i < k; i++)
        queue__event(q, lines, op, list[i].id, NULL, now, false, list[i].j);
    *n = k;
    free(list);
    return 0;
}

int queue__do_requeue(queue *q, void *a, buf *lines, storh_err *err)
{
    age_arg *r = a;
    return age_events(q, JOB_PROCESSING, "requeue", r->secs, false, lines, &r->n, err);
}

int queue_requeue_timed_out(queue *q, int64_t timeout_s, size_t *n, storh_err *err)
{
    age_arg a = {timeout_s, 0};
    int rc = queue__with_lock(q, queue__do_requeue, &a, err);
    *n = rc ? 0 : a.n;
    return rc;
}

static int do_purge(queue *q, void *a, buf *lines, storh_err *err)
{
    age_arg *p = a;
    return age_events(q, JOB_DONE, "purge", p->secs, true, lines, &p->n, err);
}

int queue_purge_done(queue *q, int64_t older_than_s, size_t *n, storh_err *err)
{
    age_arg a = {older_than_s, 0};
    int rc = queue__with_lock(q, do_purge, &a, err);
    *n = rc ? 0 : a.n;
    return rc;
}
