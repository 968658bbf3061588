/* queue_state: a queue's jobs in memory and the events that move them
 * between states (apply_event, the replay of one line); pure state, no
 * files, so it can be driven and checked on its own. */
#include "queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frame.h"
#include "idmap.h"
#include "reccanon.h"
#include "sjson.h"
#include "queue_int.h"

int64_t queue__now_s(void)
{
    return (int64_t)time(NULL);
}

/* ---------- state ---------- */

int queue__qstate_init(qstate *s)
{
    memset(s, 0, sizeof *s);
    return idmap_init(&s->jobs, sizeof(job));
}

int queue__qstate_reserve(qstate *s, size_t more)
{
    if (idmap_reserve(&s->jobs, s->jobs.len + more) != 0)
        return -1;
    if (s->n + more <= s->cap)
        return 0;
    /* as push_order grows it: the consumed front reclaimed when it is most
     * of the array, else twice the room (or what the batch needs), so that
     * a run of one-job enqueues costs amortised O(1) each */
    size_t live = s->n - s->head;
    if (s->head > s->n / 2 && live + more <= s->cap) {
        memmove(s->order, s->order + s->head, live * sizeof *s->order);
        s->n = live;
        s->head = 0;
        return 0;
    }
    size_t cap = s->cap ? s->cap * 2 : 256;
    if (cap < s->n + more)
        cap = s->n + more;
    order_ent *o = realloc(s->order, cap * sizeof *o);
    if (!o)
        return -1;
    s->order = o;
    s->cap = cap;
    return 0;
}

void queue__qstate_free(qstate *s)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (idmap_next(&s->jobs, &pos, &k, &v)) {
        json_decref(((job *)v)->payload);
        free(((job *)v)->raw);
    }
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
    free(j->raw);
    j->raw = NULL;
    j->rawlen = 0;
}

json_t *queue__payload_tree(const job *j)
{
    if (j->raw)
        return reccanon_value_decode(j->raw, j->rawlen);
    return j->payload ? json_incref(j->payload) : json_object();
}

int queue__payload_bytes(const job *j, buf *out, storh_err *err)
{
    if (j->raw)
        buf_append(out, j->raw, j->rawlen);
    else if (!j->payload)
        buf_append(out, "[]", 2); /* an empty object, as sjson encodes it */
    else
        return sjson_encode(out, j->payload, 0, err);
    return buf_failed(out) ? storh_err_set(err, STORH_ENOMEM, "Out of memory.") : 0;
}

/* A job in no state anymore leaves the map: a queue that is worked off
 * keeps no memory of what went through it (claim-order entries of the id
 * turn stale and are skipped). */
static void forget(qstate *s, job *j)
{
    set_state(s, j, JOB_GONE);
    drop_payload(j);
    idmap_remove(&s->jobs, j);
}

/* The map hash of an event's id: the one its writer computed, if any. */
static size_t id_hash(const event_fields *f)
{
    return f->hash ? f->hash : idmap_hash(f->id);
}

/* Applies one event; false if its op is unknown. */
static bool apply_event(qstate *s, const event_fields *f)
{
    const char *op = f->op, *id = f->id;
    int64_t ts = f->ts;
    if (!strcmp(op, "enqueue")) {
        job *j = idmap_put_hashed(&s->jobs, id, id_hash(f), NULL);
        if (!j)
            return false;
        drop_payload(j);
        if (f->raw) {
            if (f->rawlen > UINT32_MAX || !(j->raw = malloc(f->rawlen + 1)))
                return false;
            memcpy(j->raw, f->raw, f->rawlen);
            j->raw[f->rawlen] = '\0';
            j->rawlen = (uint32_t)f->rawlen;
        } else {
            j->payload =
                f->keyed ? json_incref((json_t *)f->payload) : sjson_string_keyed(f->payload);
        }
        set_state(s, j, JOB_PENDING);
        j->seq = ++s->seq;
        push_order(s, id, j->seq);
        return true;
    }
    job *j = f->hint ? f->hint : idmap_get_hashed(&s->jobs, id, id_hash(f));
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
            forget(s, j);
        }
    } else if (!strcmp(op, "requeue")) {
        if (j && j->state == JOB_PROCESSING) {
            set_state(s, j, JOB_PENDING);
            j->seq = ++s->seq;
            push_order(s, id, j->seq);
        }
    } else if (!strcmp(op, "purge")) {
        if (j && j->state == JOB_DONE)
            forget(s, j);
        else if (j)
            drop_payload(j); /* always, even for a pending job (storh) */
    } else {
        return false;
    }
    return true;
}

bool queue__apply_event(qstate *s, const event_fields *f)
{
    return apply_event(s, f);
}

/* The ts of an event's end, ",\"ts\":N}" exactly (p to end, end at '}'). */
static bool ts_tail(const char *p, const char *end, int64_t *out)
{
    if (end - p < 7 || memcmp(p, ",\"ts\":", 6) != 0)
        return false;
    p += 6;
    int64_t ts = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9' || ts > INT64_MAX / 10 - 10)
            return false;
        ts = ts * 10 + (*p - '0');
    }
    *out = ts;
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
    int64_t ts;
    if (!ts_tail(p, end, &ts))
        return false;
    f->op = ops[k];
    f->ts = ts;
    f->payload = NULL;
    f->keyed = false;
    f->raw = NULL;
    f->rawlen = 0;
    f->hint = NULL;
    f->hash = 0;
    return true;
}

/* An enqueue as this process and storh write it, with a payload object in
 * canonical bytes (reccanon.h), read without a JSON parse; the payload is
 * kept as those bytes: {"op":"enqueue","id":"<36>","payload":{...},"ts":N} */
static bool fast_enqueue(const char *j, size_t jl, event_fields *f)
{
    static const char head[] = "{\"op\":\"enqueue\",\"id\":\"";
    static const char mid[] = "\",\"payload\":";
    size_t hl = sizeof head - 1, ml = sizeof mid - 1;
    if (jl < hl + UUID7_LEN + ml + 2 + 8 || memcmp(j, head, hl) != 0 || j[jl - 1] != '}')
        return false;
    const char *p = j + hl, *end = j + jl - 1;
    if (!uuid7_is_valid(p, UUID7_LEN) || memcmp(p + UUID7_LEN, mid, ml) != 0)
        return false;
    const char *pl = p + UUID7_LEN + ml;
    if (*pl != '{')
        return false;
    size_t n = reccanon_value_span(pl, (size_t)(end - pl));
    if (!n || !ts_tail(pl + n, end, &f->ts))
        return false;
    memcpy(f->id, p, UUID7_LEN);
    f->id[UUID7_LEN] = '\0';
    f->op = "enqueue";
    f->done = false;
    f->payload = NULL;
    f->keyed = true;
    f->raw = pl;
    f->rawlen = n;
    f->hint = NULL;
    f->hash = 0;
    return true;
}

/* Decodes and applies one whole line (no LF). On failure msg says why. */
bool queue__apply_line(qstate *s, const char *p, size_t n, char *msg, size_t cap)
{
    const char *j;
    size_t jl;
    storh_err e;
    if (frame_decode(p, n, true, &j, &jl, &e) != 0) {
        snprintf(msg, cap, "%.90s", e.msg);
        return false;
    }
    event_fields f;
    if (fast_event(j, jl, &f) || fast_enqueue(j, jl, &f))
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
            f.ts = json_is_integer(tsv) ? json_integer_value(tsv) : queue__now_s();
            f.done = json_is_true(json_object_get(ev, "done"));
            f.payload = json_object_get(ev, "payload");
            f.keyed = false;
            f.raw = NULL;
            f.rawlen = 0;
            f.hint = NULL;
            f.hash = 0;
            if (!(ok = apply_event(s, &f)))
                snprintf(msg, cap, "Unsupported log queue event: %.40s", op);
        }
    }
    json_decref(ev);
    return ok;
}
