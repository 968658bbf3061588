#include "queue.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

enum { JOB_GONE = 0, JOB_PENDING, JOB_PROCESSING, JOB_DONE };

typedef struct job {
    uint8_t state;
    int64_t ts;      /* claim time (processing) or completion time (done) */
    json_t *payload; /* owned; NULL once dropped */
    uint64_t seq;    /* position of the latest enqueue/requeue */
} job;

typedef struct order_ent {
    char id[UUID7_LEN];
    uint64_t seq;
} order_ent;

typedef struct qstate {
    idmap jobs;
    order_ent *order; /* claim order; stale entries are skipped lazily */
    size_t head, n, cap;
    uint64_t seq;
    size_t pending, processing, done;
} qstate;

typedef struct bad_ev {
    uint64_t off, len;
    long line;
    char msg[96];
} bad_ev;

struct queue {
    char dir[PATH_MAX];
    char log[PATH_MAX];
    pthread_mutex_t mu;
    fsx_lock lock;
    int fd;
    uint64_t consumed; /* bytes of queue.log applied to st */
    long lines;        /* whole lines consumed */
    qstate st;
    bad_ev *bad;
    size_t nbad;
    gcommit gc;
};

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

/* ---------- state ---------- */

static int qstate_init(qstate *s)
{
    memset(s, 0, sizeof *s);
    return idmap_init(&s->jobs, sizeof(job));
}

static void qstate_free(qstate *s)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (idmap_next(&s->jobs, &pos, &k, &v))
        json_decref(((job *)v)->payload);
    idmap_free(&s->jobs);
    free(s->order);
    memset(s, 0, sizeof *s);
}

static void set_state(qstate *s, job *j, uint8_t to)
{
    size_t *c[] = {NULL, &s->pending, &s->processing, &s->done};
    if (c[j->state])
        (*c[j->state])--;
    j->state = to;
    if (c[to])
        (*c[to])++;
}

static void push_order(qstate *s, const char *id, uint64_t seq)
{
    if (s->n == s->cap) {
        if (s->head > s->n / 2) { /* reclaim the consumed front */
            memmove(s->order, s->order + s->head, (s->n - s->head) * sizeof *s->order);
            s->n -= s->head;
            s->head = 0;
        } else {
            size_t cap = s->cap ? s->cap * 2 : 256;
            order_ent *o = realloc(s->order, cap * sizeof *o);
            if (!o)
                return;
            s->order = o;
            s->cap = cap;
        }
    }
    memcpy(s->order[s->n].id, id, UUID7_LEN);
    s->order[s->n++].seq = seq;
}

static void drop_payload(job *j)
{
    json_decref(j->payload);
    j->payload = NULL;
}

/* A job in no state anymore leaves the map: a queue that is worked off
 * keeps no memory of what went through it (claim-order entries of the id
 * turn stale and are skipped). */
static void forget(qstate *s, const char *id, job *j)
{
    set_state(s, j, JOB_GONE);
    drop_payload(j);
    idmap_del(&s->jobs, id);
}

typedef struct event_fields {
    const char *op;
    char id[UUID7_LEN + 1];
    int64_t ts; /* the replaying process's clock when the event has none */
    bool done;
    const json_t *payload; /* enqueue only; may be NULL */
} event_fields;

/* Applies one event; false if its op is unknown. */
static bool apply_event(qstate *s, const event_fields *f)
{
    const char *op = f->op, *id = f->id;
    int64_t ts = f->ts;
    if (!strcmp(op, "enqueue")) {
        job *j = idmap_put(&s->jobs, id, NULL);
        if (!j)
            return false;
        drop_payload(j);
        j->payload = sjson_string_keyed(f->payload);
        set_state(s, j, JOB_PENDING);
        j->seq = ++s->seq;
        push_order(s, id, j->seq);
        return true;
    }
    job *j = idmap_get(&s->jobs, id);
    if (!strcmp(op, "claim")) {
        if (j && j->state == JOB_PENDING) {
            set_state(s, j, JOB_PROCESSING);
            j->ts = ts;
        }
    } else if (!strcmp(op, "complete")) {
        /* storh: out of pending and processing, payload dropped; "done":true
         * puts the id in done whatever it was (even unknown), else out */
        if (!j && f->done && !(j = idmap_put(&s->jobs, id, NULL)))
            return false;
        if (j && f->done) {
            drop_payload(j);
            set_state(s, j, JOB_DONE);
            j->ts = ts;
        } else if (j) {
            forget(s, id, j);
        }
    } else if (!strcmp(op, "requeue")) {
        if (j && j->state == JOB_PROCESSING) {
            set_state(s, j, JOB_PENDING);
            j->seq = ++s->seq;
            push_order(s, id, j->seq);
        }
    } else if (!strcmp(op, "purge")) {
        if (j && j->state == JOB_DONE)
            forget(s, id, j);
        else if (j)
            drop_payload(j); /* always, even for a pending job (storh) */
    } else {
        return false;
    }
    return true;
}

/* The canonical spelling of the events without a payload, which are most
 * of a busy log, read without a JSON parse:
 *   {"op":"claim","id":"<36>","ts":N}  (complete: ,"done":true|false before ts) */
static bool fast_event(const char *j, size_t jl, event_fields *f)
{
    static const char *const ops[] = {"claim", "complete", "requeue", "purge"};
    if (jl < 60 || memcmp(j, "{\"op\":\"", 7) != 0 || j[jl - 1] != '}')
        return false;
    const char *p = j + 7, *end = j + jl - 1;
    size_t k = 0;
    for (; k < 4; k++) {
        size_t n = strlen(ops[k]);
        if (!memcmp(p, ops[k], n) && p[n] == '"') {
            p += n;
            break;
        }
    }
    if (k == 4 || end - p < 50 || memcmp(p, "\",\"id\":\"", 8) != 0)
        return false;
    p += 8;
    if (!uuid7_is_valid(p, UUID7_LEN) || p[UUID7_LEN] != '"')
        return false;
    memcpy(f->id, p, UUID7_LEN);
    f->id[UUID7_LEN] = '\0';
    p += UUID7_LEN + 1;
    f->done = false;
    if (k == 1) {
        if (end - p > 12 && !memcmp(p, ",\"done\":true", 12)) {
            f->done = true;
            p += 12;
        } else if (end - p > 13 && !memcmp(p, ",\"done\":false", 13)) {
            p += 13;
        } else {
            return false;
        }
    }
    if (end - p < 7 || memcmp(p, ",\"ts\":", 6) != 0)
        return false;
    p += 6;
    int64_t ts = 0;
    if (p == end)
        return false;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9' || ts > INT64_MAX / 10 - 10)
            return false;
        ts = ts * 10 + (*p - '0');
    }
    f->op = ops[k];
    f->ts = ts;
    f->payload = NULL;
    return true;
}

/* Decodes and applies one whole line (no LF). On failure msg says why. */
static bool apply_line(qstate *s, const char *p, size_t n, char *msg, size_t cap)
{
    const char *j;
    size_t jl;
    storh_err e;
    if (frame_decode(p, n, true, &j, &jl, &e) != 0) {
        snprintf(msg, cap, "%.90s", e.msg);
        return false;
    }
    event_fields f;
    if (fast_event(j, jl, &f))
        return apply_event(s, &f);
    json_t *ev = sjson_loadb(j, jl, JSON_ALLOW_NUL, NULL);
    bool ok = false;
    if (!ev || !sjson_top_keys_ok(ev)) {
        snprintf(msg, cap, "Log queue event must be an object.");
    } else {
        const char *op = json_string_value(json_object_get(ev, "op"));
        json_t *idv = json_object_get(ev, "id");
        const char *id = json_string_value(idv);
        json_t *tsv = json_object_get(ev, "ts");
        if (!op || !op[0] || !id || !uuid7_is_valid(id, json_string_length(idv))) {
            snprintf(msg, cap, "Invalid log queue event.");
        } else {
            f.op = op;
            memcpy(f.id, id, UUID7_LEN + 1);
            f.ts = json_is_integer(tsv) ? json_integer_value(tsv) : now_s();
            f.done = json_is_true(json_object_get(ev, "done"));
            f.payload = json_object_get(ev, "payload");
            if (!(ok = apply_event(s, &f)))
                snprintf(msg, cap, "Unsupported log queue event: %.40s", op);
        }
    }
    json_decref(ev);
    return ok;
}

/* ---------- log reading ---------- */

static void note_bad(queue *q, uint64_t off, uint64_t len, long line, const char *msg)
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
static uint64_t apply_bytes(queue *q, qstate *st, const char *b, uint64_t base, uint64_t len,
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
        if (!apply_line(st, b + pos, end - pos, msg, sizeof msg) && record_bad)
            note_bad(q, base + pos, end - pos, *lines, msg);
        estats_add(ESTAT_QUEUE_EVENT, 1);
        pos = end + 1;
    }
    return base + pos;
}

static int truncate_to(queue *q, uint64_t size, storh_err *err)
{
    if (ftruncate(q->fd, (off_t)size) != 0 || fsync(q->fd) != 0)
        return storh_err_sys(err, errno, "Could not truncate torn tail of %s", q->log);
    return 0;
}

/* Full replay from the start; truncates an unterminated tail. */
static int replay(queue *q, storh_err *err)
{
    qstate_free(&q->st);
    if (qstate_init(&q->st) != 0)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    q->nbad = 0;
    q->lines = 0;
    buf b = BUF_INIT;
    int rc = fsx_read_all(q->log, &b, err);
    if (rc) {
        buf_free(&b);
        return rc;
    }
    uint64_t end = apply_bytes(q, &q->st, b.data ? b.data : "", 0, b.len, &q->lines, true);
    if (end < b.len)
        rc = truncate_to(q, end, err);
    q->consumed = end;
    buf_free(&b);
    return rc;
}

/* Under mu + flock: applies what other processes appended since. */
static int sync_log(queue *q, storh_err *err)
{
    struct stat st;
    if (fstat(q->fd, &st) != 0)
        return storh_err_sys(err, errno, "Could not read log queue file.");
    uint64_t size = (uint64_t)st.st_size;
    if (size < q->consumed)
        return replay(q, err);
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
        uint64_t end = apply_bytes(q, &q->st, b, q->consumed, (uint64_t)r, &q->lines, true);
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
    if (!rc && qstate_init(&q->st) != 0)
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
        rc = replay(q, err);
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
    qstate_free(&q->st);
    free(q->bad);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* ---------- operations ---------- */

typedef int (*locked_fn)(queue *q, void *arg, buf *lines, storh_err *err);

/* Runs fn under mu + flock after syncing from the log; fn appends event
 * lines to lines; they are written, applied and made durable. With staged,
 * lines of more than one event go through a qstage first, so a crash
 * leaves all of them or none. */
static int with_lock_staged(queue *q, locked_fn fn, void *arg, bool staged, storh_err *err)
{
    pthread_mutex_lock(&q->mu);
    int rc = fsx_lock_acquire(&q->lock, err);
    if (rc) {
        pthread_mutex_unlock(&q->mu);
        return rc;
    }
    buf lines = BUF_INIT;
    gcommit_ticket t = {0, 0};
    rc = gcommit_check(&q->gc, err);
    if (!rc)
        rc = sync_log(q, err);
    if (!rc)
        rc = fn(q, arg, &lines, err);
    if (!rc && buf_failed(&lines))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    char stage[PATH_MAX] = "";
    if (!rc && staged && lines.len &&
        memchr(lines.data, '\n', lines.len) != lines.data + lines.len - 1)
        rc = qstage_write(q->dir, q->consumed, lines.data, lines.len, stage, err);
    if (stage[0])
        fault_point("queue.batch.staged");
    if (!rc && lines.len) {
        size_t done = 0;
        while (!rc && done < lines.len) {
            ssize_t w = write(q->fd, lines.data + done, lines.len - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                int e = errno;
                /* no partial event may stay: when it cannot be cut, the file
                 * takes no more writes (a reopen cuts it as a torn tail) */
                if (ftruncate(q->fd, (off_t)q->consumed) != 0)
                    gcommit_poison(&q->gc, errno);
                else if (stage[0]) /* cut away: nothing to finish on open */
                    qstage_remove(stage);
                rc = storh_err_sys(err, e, "Could not append to log queue file.");
                break;
            }
            done += (size_t)w;
        }
        if (stage[0])
            fault_point("queue.batch.written");
        if (!rc) {
            apply_bytes(q, &q->st, lines.data, q->consumed, lines.len, &q->lines, true);
            q->consumed += lines.len;
            t = gcommit_written(&q->gc, q->consumed);
        }
    }
    fsx_lock_release(&q->lock);
    if (!rc && lines.len)
        rc = gcommit_wait(&q->gc, t, err);
    if (!rc && stage[0]) /* durable in the log: the stage has done its work */
        qstage_remove(stage);
    pthread_mutex_unlock(&q->mu);
    buf_free(&lines);
    return rc;
}

static int with_lock(queue *q, locked_fn fn, void *arg, storh_err *err)
{
    return with_lock_staged(q, fn, arg, false, err);
}

static void event(buf *lines, const char *op, const char *id, const char *extra, int64_t ts)
{
    buf e = BUF_INIT;
    buf_appends(&e, "{\"op\":\"");
    buf_appends(&e, op);
    buf_appends(&e, "\",\"id\":\"");
    buf_append(&e, id, UUID7_LEN);
    buf_appendc(&e, '"');
    if (extra)
        buf_appends(&e, extra);
    buf_printf(&e, ",\"ts\":%lld}", (long long)ts);
    frame_encode(lines, e.data, e.len);
    buf_free(&e);
}

typedef struct enq_arg {
    const json_t *jobs;
    json_t *ids;
} enq_arg;

static int do_enqueue(queue *q, void *a, buf *lines, storh_err *err)
{
    (void)q;
    enq_arg *ea = a;
    int64_t ts = now_s();
    size_t i;
    json_t *jobj;
    buf env = BUF_INIT;
    int rc = 0;
    json_array_foreach(ea->jobs, i, jobj)
    {
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
        buf_reset(&env);
        buf_appends(&env, ",\"payload\":");
        if ((rc = sjson_encode(&env, payload, 0, err)))
            break;
        event(lines, "enqueue", id, env.data, ts);
        json_array_append_new(ea->ids, json_string(id));
    }
    buf_free(&env);
    return rc;
}

int queue_enqueue_many(queue *q, const json_t *jobs, json_t **ids, storh_err *err)
{
    if (!json_is_array(jobs))
        return storh_err_set(err, STORH_EINVAL, "Jobs must be a JSON array.");
    enq_arg a = {jobs, json_array()};
    int rc = a.ids ? with_lock_staged(q, do_enqueue, &a, true, err)
                   : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (rc) {
        json_decref(a.ids);
        return rc;
    }
    *ids = a.ids;
    return 0;
}

typedef struct claim_arg {
    size_t limit;
    json_t *jobs;
} claim_arg;

static int do_claim(queue *q, void *a, buf *lines, storh_err *err)
{
    claim_arg *ca = a;
    qstate *s = &q->st;
    int64_t ts = now_s();
    /* pick in FIFO order; the claim events move them to processing */
    size_t i = s->head;
    while (json_array_size(ca->jobs) < ca->limit && i < s->n) {
        order_ent *o = &s->order[i++];
        char id[UUID7_LEN + 1];
        memcpy(id, o->id, UUID7_LEN);
        id[UUID7_LEN] = '\0';
        job *j = idmap_get(&s->jobs, id);
        if (!j || j->state != JOB_PENDING || j->seq != o->seq)
            continue;
        /* an id has one order entry per seq, so no id is picked twice */
        json_t *p = j->payload ? json_incref(j->payload) : json_object();
        json_array_append_new(ca->jobs, json_pack("{ssso}", "id", id, "payload", p));
        event(lines, "claim", id, NULL, ts);
    }
    s->head = i; /* entries before i are claimed now, or stale */
    (void)err;
    return 0;
}

int queue_claim(queue *q, size_t limit, json_t **jobs, storh_err *err)
{
    if (limit < 1)
        return storh_err_set(err, STORH_EINVAL, "Queue claim limit must be at least 1.");
    claim_arg a = {limit, json_array()};
    int rc = with_lock(q, do_claim, &a, err);
    if (rc) {
        json_decref(a.jobs);
        return rc;
    }
    *jobs = a.jobs;
    return 0;
}

typedef struct complete_arg {
    const json_t *ids;
    bool keep;
    size_t n;
} complete_arg;

static int do_complete(queue *q, void *a, buf *lines, storh_err *err)
{
    complete_arg *c = a;
    size_t i;
    json_t *v;
    json_array_foreach(c->ids, i, v)
    {
        const char *id = json_string_value(v);
        if (!id || !uuid7_is_valid(id, json_string_length(v)))
            return storh_err_set(err, STORH_EINVAL, "Id %zu: Invalid UUIDv7 value.", i);
    }
    int64_t ts = now_s();
    /* a scratch state tracks duplicates within the batch */
    idmap seen;
    if (idmap_init(&seen, 1) != 0)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    json_array_foreach(c->ids, i, v)
    {
        const char *id = json_string_value(v);
        job *j = idmap_get(&q->st.jobs, id);
        bool fresh;
        if (!j || j->state != JOB_PROCESSING || !idmap_put(&seen, id, &fresh) || !fresh)
            continue;
        event(lines, "complete", id, c->keep ? ",\"done\":true" : ",\"done\":false", ts);
        c->n++;
    }
    idmap_free(&seen);
    return 0;
}

int queue_complete_many(queue *q, const json_t *ids, bool keep_done, size_t *completed,
                        storh_err *err)
{
    if (!json_is_array(ids))
        return storh_err_set(err, STORH_EINVAL, "Ids must be a JSON array of strings.");
    complete_arg a = {ids, keep_done, 0};
    int rc = with_lock(q, do_complete, &a, err);
    *completed = rc ? 0 : a.n;
    return rc;
}

typedef struct age_arg {
    int64_t secs;
    size_t n;
} age_arg;

typedef struct aged {
    const char *id;
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
    int64_t now = now_s();
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
            list[k++] = (aged){key, j->ts, j->seq};
    }
    qsort(list, k, sizeof *list, aged_cmp);
    for (size_t i = 0; i < k; i++)
        event(lines, op, list[i].id, NULL, now);
    *n = k;
    free(list);
    return 0;
}

static int do_requeue(queue *q, void *a, buf *lines, storh_err *err)
{
    age_arg *r = a;
    return age_events(q, JOB_PROCESSING, "requeue", r->secs, false, lines, &r->n, err);
}

int queue_requeue_timed_out(queue *q, int64_t timeout_s, size_t *n, storh_err *err)
{
    age_arg a = {timeout_s, 0};
    int rc = with_lock(q, do_requeue, &a, err);
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
    int rc = with_lock(q, do_purge, &a, err);
    *n = rc ? 0 : a.n;
    return rc;
}

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
    int rc = with_lock(q, do_nothing, NULL, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&q->mu);
    *out = counts_of(&q->st);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

int queue_pending(queue *q, size_t *n, storh_err *err)
{
    int rc = with_lock(q, do_nothing, NULL, err);
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

static bool job_equal(const job *a, const job *b)
{
    if (a->state != b->state)
        return false;
    if ((a->state == JOB_PROCESSING || a->state == JOB_DONE) && a->ts != b->ts)
        return false;
    if (!a->payload != !b->payload)
        return false;
    return !a->payload || json_equal(a->payload, b->payload);
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
        if (x->state == JOB_GONE && !x->payload && (!y || (y->state == JOB_GONE && !y->payload)))
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
    rc = sync_log(q, err);
    buf b = BUF_INIT;
    storh_err rerr;
    if (rc || fsx_read_all(q->log, &b, &rerr) != 0) {
        json_array_append_new(errors, json_string("Could not read log queue file."));
    } else {
        qstate fresh;
        qstate_init(&fresh);
        long lines = 0;
        uint64_t end = apply_bytes(q, &fresh, b.data ? b.data : "", 0, b.len, &lines, false);
        for (size_t i = 0; i < q->nbad; i++) {
            char msg[160];
            snprintf(msg, sizeof msg, "line %ld: %s", q->bad[i].line, q->bad[i].msg);
            json_array_append_new(errors, json_string(msg));
        }
        if (end < b.len)
            json_array_append_new(errors, json_string("Torn log queue line."));
        if (!states_equal(&fresh, &q->st))
            json_array_append_new(errors, json_string("Log queue state drift."));
        qstate_free(&fresh);
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

/* Under the locks: rewrites queue.log without the bad lines, saving each to
 * .storh/corrupt/ first. */
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
    buf_free(&b);
    buf_free(&keep);
    if (rc)
        return rc;
    int fd = open(q->log, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open log queue file.");
    if ((rc = gcommit_switch(&q->gc, fd, 0, err))) { /* closes the old fd */
        close(fd);
        return rc;
    }
    q->fd = fd;
    rc = replay(q, err);
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
    rc = do_requeue(q, &age, lines, err);
    r->requeued = age.n;
    return rc;
}

int queue_repair(queue *q, int64_t timeout_s, json_t **out, storh_err *err)
{
    repair_arg a = {timeout_s, 0, 0};
    int rc = with_lock(q, do_repair, &a, err);
    if (rc)
        return rc;
    *out = json_pack("{sbsIsI}", "ok", 1, "quarantined", (json_int_t)a.quarantined, "requeued",
                     (json_int_t)a.requeued);
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}
