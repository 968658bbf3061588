/* queue_events: the event lines an operation writes and the notes it
 * applies them from. An operation (queue.c, queue_bytes.c) encodes each
 * event into its batch's lines (queue__event_begin/end for an enqueue with
 * its payload, queue__event for the others) and notes it; once the lines
 * are written, queue__apply_own applies the notes to the state as a replay
 * of those lines would (queue_state.c), without decoding them again. */
#include "queue.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "estats.h"
#include "frame.h"
#include "fsx.h"
#include "idmap.h"
#include "sjson.h"
#include "queue_int.h"

/* Keeps the event just encoded (at off, len in the batch) for
 * apply_own; takes payload. */
static void own_note(queue *q, const char *op, const char *id, int64_t ts, bool done,
                     json_t *payload, bool keyed, const char *raw, size_t rawlen, job *hint,
                     size_t off, size_t len)
{
    if (!q->own_failed && q->nown == q->capown) {
        size_t cap = q->capown ? q->capown * 2 : 64;
        own_event *n = realloc(q->own, cap * sizeof *n);
        if (n) {
            q->own = n;
            q->capown = cap;
        } else {
            q->own_failed = true;
        }
    }
    if (q->own_failed) {
        json_decref(payload);
        return;
    }
    own_event *o = &q->own[q->nown++];
    o->f.op = op;
    memcpy(o->f.id, id, UUID7_LEN);
    o->f.id[UUID7_LEN] = '\0';
    o->f.ts = ts;
    o->f.done = done;
    o->f.payload = payload;
    o->f.keyed = keyed;
    o->f.raw = raw;
    o->f.rawlen = rawlen;
    o->f.hint = hint;
    o->f.hash = 0;
    o->payload = payload;
    o->off = off;
    o->len = len;
}

/* Room for n more notes at once: a batch of n events grows nothing. */
void queue__own_reserve(queue *q, size_t n)
{
    if (q->own_failed || q->nown + n <= q->capown)
        return;
    own_event *o = realloc(q->own, (q->nown + n) * sizeof *o);
    if (o) {
        q->own = o;
        q->capown = q->nown + n;
    }
}

void queue__reserve_enqueues(queue *q, size_t n)
{
    queue__own_reserve(q, n);
    (void)queue__qstate_reserve(&q->st, n); /* else it grows as it applies */
}

void queue__own_clear(queue *q)
{
    for (size_t i = 0; i < q->nown; i++)
        json_decref(q->own[i].payload);
    q->nown = q->nevents = 0;
    q->own_failed = false;
    if (q->capown > 1024) { /* a big batch's notes are not kept while the queue stays open */
        free(q->own);
        q->own = NULL;
        q->capown = 0;
    }
}

/* Before the apply of note k: its job's slot fetched (an enqueue's: the
 * others carry their job). */
static void prefetch_own(queue *q, size_t k)
{
    own_event *o = &q->own[k];
    if (!o->f.hint) {
        o->f.hash = idmap_hash(o->f.id);
        idmap_prefetch(&q->st.jobs, o->f.hash);
    }
}

/* Applies the operation's events as noted, as queue__apply_bytes would
 * after decoding their lines (written at log offset base). */
void queue__apply_own(queue *q, uint64_t base)
{
    bool ahead = q->nown > QUEUE_AHEAD;
    for (size_t k = 0; ahead && k < QUEUE_AHEAD; k++)
        prefetch_own(q, k);
    for (size_t i = 0; i < q->nown; i++) {
        own_event *o = &q->own[i];
        if (ahead && i + QUEUE_AHEAD < q->nown)
            prefetch_own(q, i + QUEUE_AHEAD);
        q->lines++;
        if (!queue__apply_event(&q->st, &o->f)) {
            char msg[96];
            snprintf(msg, sizeof msg, "Unsupported log queue event: %.40s", o->f.op);
            queue__note_bad(q, base + o->off, o->len - 1, q->lines, msg);
        }
        estats_add(ESTAT_QUEUE_EVENT, 1);
    }
}

/* The start of an event's JSON in q->ev: {"op":"<op>","id":"<id>" (the
 * caller may add fields before event_end). */
void queue__event_begin(queue *q, const char *op, const char *id)
{
    buf *e = &q->ev; /* kept across events: no allocation per event */
    size_t ol = strlen(op);
    buf_reset(e);
    if (!buf_reserve(e, 7 + ol + 8 + UUID7_LEN + 1))
        return;
    char *p = e->data;
    memcpy(p, "{\"op\":\"", 7);
    memcpy(p += 7, op, ol);
    memcpy(p += ol, "\",\"id\":\"", 8);
    memcpy(p += 8, id, UUID7_LEN);
    p[UUID7_LEN] = '"';
    e->len = (size_t)(p + UUID7_LEN + 1 - e->data);
    e->data[e->len] = '\0';
}

/* The decimal text of ts, kept on q: a batch's events share one ts. */
static const char *ts_text(queue *q, int64_t ts, size_t *len)
{
    if (!q->ts_len || q->ts_of != ts) {
        char tmp[24], *t = tmp + sizeof tmp;
        uint64_t v = ts < 0 ? -(uint64_t)ts : (uint64_t)ts;
        do
            *--t = (char)('0' + v % 10);
        while ((v /= 10));
        if (ts < 0)
            *--t = '-';
        q->ts_len = (size_t)(tmp + sizeof tmp - t);
        memcpy(q->ts_text, t, q->ts_len);
        q->ts_of = ts;
    }
    *len = q->ts_len;
    return q->ts_text;
}

/* Ends the event begun in q->ev with its ts and appends its framed line to
 * lines; done and payload (taken; an enqueue's) or raw are its fields as
 * apply_own applies them. */
void queue__event_end(queue *q, buf *lines, const char *op, const char *id, int64_t ts, bool done,
                      json_t *payload, bool keyed, const char *raw, size_t rawlen)
{
    buf *e = &q->ev;
    size_t off = lines->len, tl;
    const char *t = ts_text(q, ts, &tl);
    buf_append(e, ",\"ts\":", 6);
    buf_append(e, t, tl);
    buf_appendc(e, '}');
    if (buf_failed(e))
        lines->oom = true;
    else
        frame_encode(lines, e->data, e->len);
    q->nevents++;
    own_note(q, op, id, ts, done, payload, keyed, raw, rawlen, NULL, off, lines->len - off);
    if (lines->len - q->spilled >= QUEUE_SPILL)
        queue__spill(q, lines);
}

/* Appends one event line without a payload (claim, complete, requeue,
 * purge), with the JSON fields extra (or NULL) before ts: composed on the
 * stack, framed once. job_of: the job of id (event_fields.hint). */
void queue__event(queue *q, buf *lines, const char *op, const char *id, const char *extra,
                  int64_t ts, bool done, job *job_of)
{
    char js[192];
    size_t ol = strlen(op), el = extra ? strlen(extra) : 0, tl, off = lines->len;
    const char *t = ts_text(q, ts, &tl);
    if (7 + ol + 8 + UUID7_LEN + 1 + el + 6 + tl + 1 > sizeof js) { /* not one of ours */
        queue__event_begin(q, op, id);
        if (extra)
            buf_append(&q->ev, extra, el);
        queue__event_end(q, lines, op, id, ts, done, NULL, false, NULL, 0);
        return;
    }
    char *p = js;
    memcpy(p, "{\"op\":\"", 7);
    memcpy(p += 7, op, ol);
    memcpy(p += ol, "\",\"id\":\"", 8);
    memcpy(p += 8, id, UUID7_LEN);
    p += UUID7_LEN;
    *p++ = '"';
    if (el)
        memcpy(p, extra, el);
    memcpy(p += el, ",\"ts\":", 6);
    memcpy(p += 6, t, tl);
    p += tl;
    *p++ = '}';
    frame_encode(lines, js, (size_t)(p - js));
    q->nevents++;
    own_note(q, op, id, ts, done, NULL, false, NULL, 0, job_of, off, lines->len - off);
    if (lines->len - q->spilled >= QUEUE_SPILL)
        queue__spill(q, lines);
}

void queue__spill(queue *q, const buf *lines)
{
    if (!q->spill_on || q->spill_err || lines->oom)
        return;
    size_t from = q->spilled, n = lines->len - from;
    if (fsx_write_all(q->fd, lines->data + from, n) != 0) {
        q->spill_err = errno; /* part of it may be in the file: cut away */
        return;
    }
    q->spilled += n;
    /* a hint: the fsync at the end is what makes them durable */
    (void)sync_file_range(q->fd, (off_t)(q->consumed + from), (off_t)n, SYNC_FILE_RANGE_WRITE);
}

/* Whether v decodes from its sjson encoding as an equal tree (same types,
 * keys in the same order): no reals (their text is PHP's), no object that
 * encodes as a list. *intkey: whether the top object has a key that is an
 * integer (which the state drops: sjson_string_keyed). */
static bool round_trips(const json_t *v, int depth, bool *intkey)
{
    if (depth > SJSON_MAX_DEPTH)
        return false;
    size_t i, kl;
    const char *k;
    json_t *e;
    switch (json_typeof(v)) {
    case JSON_REAL:
        return false;
    case JSON_ARRAY:
        json_array_foreach (v, i, e)
            if (!round_trips(e, depth + 1, intkey))
                return false;
        return true;
    case JSON_OBJECT:
        if (sjson_object_is_list(v))
            return false;
        json_object_keylen_foreach ((json_t *)v, k, kl, e) {
            if (!depth && sjson_is_int_key(k, kl))
                *intkey = true;
            if (!round_trips(e, depth + 1, intkey))
                return false;
        }
        return true;
    default:
        return true;
    }
}

/* The payload the state keeps for an enqueue: what decoding its encoding
 * enc gives; the caller's own tree (a reference, no copy: queue.h) when that
 * is the same tree. *keyed: whether it is kept as it is (no integer key at
 * its top to drop). */
json_t *queue__own_payload(const json_t *payload, const char *enc, size_t len, bool *keyed)
{
    bool intkey = !json_is_object(payload); /* a list: every key an integer */
    *keyed = false;
    if (round_trips(payload, 0, &intkey)) {
        *keyed = !intkey;
        return json_incref((json_t *)payload);
    }
    return sjson_loadb(enc, len, JSON_ALLOW_NUL, NULL);
}
