/* seglog_maint: stats, verify (bad lines, state drift, undecodable
 * records), repair (quarantine and rewrite) and the equality counters that
 * serve count(field == value) without a scan. */
#include "seglog.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fault.h"
#include "frame.h"
#include "fsx.h"
#include "gcommit.h"
#include "idmap.h"
#include "sjson.h"
#include "seglog_int.h"

static json_t *stats_locked(seglog *s)
{
    long long live_n = 0, dead = 0, bytes = 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (idmap_next(&s->state, &pos, &k, &v)) {
        if (((live *)v)->deleted)
            dead++;
        else
            live_n++;
    }
    for (size_t i = 0; i < s->nsegs; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (!seglog__seg_path(s, s->segs[i].file, path, NULL) && stat(path, &st) == 0)
            bytes += st.st_size;
    }
    return json_pack("{sIsIsIsI}", "segments", (json_int_t)s->nsegs, "records", (json_int_t)live_n,
                     "deleted", (json_int_t)dead, "bytes", (json_int_t)bytes);
}

int seglog_stats(seglog *s, json_t **out, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = seglog__refresh(s, err);
    *out = rc ? NULL : stats_locked(s);
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return rc;
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

static bool states_equal(const idmap *a, const idmap *b)
{
    if (a->len != b->len)
        return false;
    size_t pos = 0;
    const char *k;
    void *v;
    while (idmap_next(a, &pos, &k, &v)) {
        live *x = v, *y = idmap_get(b, k);
        if (!y || x->deleted != y->deleted || x->seg != y->seg || x->off != y->off)
            return false;
    }
    return true;
}

int seglog_verify(seglog *s, json_t **out, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = seglog__lock(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    rc = seglog__catch_up(s, err); /* drift is measured against what is published */
    if (rc) {
        seglog__unlock(s);
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    /* catch_up above loaded whatever manifest is published (under the flock
     * no other writer can replace it), so a replay of the same segments is
     * the state as it should be; it fails or differs only for bad bytes */
    json_t *errors = json_array();
    idmap before;
    bool copied = errors && idmap_init(&before, sizeof(live)) == 0;
    size_t pos = 0;
    const char *k;
    void *v;
    while (copied && idmap_next(&s->state, &pos, &k, &v)) {
        live *c = idmap_put(&before, k, NULL);
        if (c)
            memcpy(c, v, sizeof(live));
        else
            copied = false;
    }
    if (!copied) {
        if (errors)
            idmap_free(&before);
        json_decref(errors);
        seglog__unlock(s);
        pthread_mutex_unlock(&s->mu);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    storh_err rerr;
    if (seglog__replay(s, TORN_KEEP, &rerr) != 0)
        json_array_append_new(errors, json_string(rerr.msg));
    else if (!states_equal(&before, &s->state))
        json_array_append_new(errors, json_string("Segmented log state index drift."));
    idmap_free(&before);
    for (size_t i = 0; i < s->nbad; i++) {
        char msg[160];
        snprintf(msg, sizeof msg, "Corrupt segmented log line at %s:%llu.",
                 s->segs[s->bad[i].seg].file, (unsigned long long)s->bad[i].off);
        json_array_append_new(errors, json_string(msg));
    }
    for (size_t i = 0; i < s->nsegs; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (!seglog__seg_path(s, s->segs[i].file, path, NULL) && stat(path, &st) != 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "Could not open segment: %s", s->segs[i].file);
            json_array_append_new(errors, json_string(msg));
        }
    }
    json_t *stats = stats_locked(s);
    seglog__unlock(s);
    pthread_mutex_unlock(&s->mu);
    /* every live record must decode */
    seglog_iter *it;
    if (seglog_iter_open(s, NULL, &it, &rerr) != 0) {
        json_array_append_new(errors, json_string(rerr.msg));
    } else {
        const char *id;
        json_t *d;
        int r;
        while ((r = seglog_iter_next(it, &id, &d, &rerr)) != 0) {
            if (r < 0) {
                json_array_append_new(errors, json_string(rerr.msg));
                break;
            }
            json_decref(d);
        }
        seglog_iter_close(it);
    }
    *out =
        json_pack("{sbsoso}", "ok", json_array_size(errors) == 0, "errors", errors, "stats", stats);
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

/* Copies bad line i to .storh/corrupt/ before repair drops it. */
static int quarantine_line(seglog *s, const bad_line *bl, const char *bytes, storh_err *err)
{
    char path[PATH_MAX];
    int rc = fsx_pathf(path, err, "%s/.storh/corrupt/%s.%llu.line", s->dir, s->segs[bl->seg].file,
                       (unsigned long long)bl->off);
    if (rc)
        return rc;
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    if ((rc = fsx_mkdirs(dir, true, err)))
        return rc;
    unlink(path);
    return fsx_publish(path, bytes + bl->off, bl->len, err);
}

int seglog_repair(seglog *s, json_t **out, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = seglog__lock(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    rc = seglog__catch_up(s, err);
    if (!rc)
        rc = seglog__replay(s, TORN_TRUNCATE, err);
    size_t quarantined = 0;
    bool rewrote = false, active_rewritten = false;
    for (size_t i = 0; !rc && i < s->nsegs; i++) {
        bool any = false;
        for (size_t k = 0; k < s->nbad; k++)
            any = any || s->bad[k].seg == i;
        if (!any)
            continue;
        char path[PATH_MAX];
        buf b = BUF_INIT, keep = BUF_INIT;
        if ((rc = seglog__seg_path(s, s->segs[i].file, path, err)) ||
            (rc = fsx_read_all(path, &b, err))) {
            buf_free(&b);
            break;
        }
        uint64_t from = 0;
        for (size_t k = 0; !rc && k < s->nbad; k++) {
            const bad_line *bl = &s->bad[k];
            if (bl->seg != i)
                continue;
            rc = quarantine_line(s, bl, b.data, err);
            buf_append(&keep, b.data + from, bl->off - from);
            from = bl->off + bl->len + 1; /* the line and its LF */
            quarantined++;
        }
        if (from < b.len)
            buf_append(&keep, b.data + from, b.len - from);
        if (!rc) { /* from here the segment may be the rewrite, whatever rc says */
            rewrote = true;
            active_rewritten = active_rewritten || i == s->nsegs - 1;
            rc = fsx_publish(path, keep.data ? keep.data : "", keep.len, err);
        }
        if (!rc && fault_fails("logsync", s->dir)) /* a failed dir sync */
            rc = storh_err_sys(err, EIO, "Could not sync directory of %s", path);
        buf_free(&b);
        buf_free(&keep);
    }
    if (!rc && quarantined) {
        s->gen++; /* rewritten segments: offsets moved */
        rc = seglog__replay(s, TORN_TRUNCATE, err);
    }
    if (!rc && active_rewritten)
        rc = seglog__open_active(s, err);
    if (rc && rewrote) {
        /* a segment replaced, then a failure: the state's places and the
         * active descriptor follow the files as they are now, and the log
         * refuses writes until it is opened again (a rewrite whose name is
         * not durable could give a power cut the old file back, without
         * what was appended to the new one) */
        s->gen++;
        if (!seglog__replay(s, TORN_TRUNCATE, NULL) && active_rewritten)
            seglog__open_active(s, NULL);
        gcommit_poison(&s->gc, EIO);
    }
    if (!rc)
        rc = seglog__manifest_write(s, err);
    json_t *stats = rc ? NULL : stats_locked(s);
    seglog__unlock(s);
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return rc;
    *out = json_pack("{sbsIso}", "ok", 1, "quarantined", (json_int_t)quarantined, "stats", stats);
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

/* ---------- equality counters ---------- */

static void count_value(json_t *counts, const json_t *v, json_int_t delta)
{
    buf k = BUF_INIT;
    sjson_encode(&k, v, 0, NULL);
    json_t *c = json_object_get(counts, k.data ? k.data : "");
    json_int_t n = (c ? json_integer_value(c) : 0) + delta;
    json_object_set_new(counts, k.data ? k.data : "", json_integer(n));
    buf_free(&k);
}

/* Under mu, for every applied line while counters exist. */
void seglog__counters_note(seglog *s, int op, bool fresh, const char *line, size_t len)
{
    if (op != OP_PUT || !fresh) { /* the old value is not at hand: start over */
        json_decref(s->counters);
        s->counters = NULL;
        return;
    }
    const char *j;
    size_t jl;
    if (frame_decode(line, len, false, &j, &jl, NULL) != 0)
        return;
    json_t *env = sjson_loadb(j, jl, JSON_ALLOW_NUL, NULL);
    json_t *data = seglog_envelope_data(env);
    const char *field;
    json_t *counts;
    json_object_foreach (s->counters, field, counts) {
        json_t *v = json_object_get(data, field);
        if (v && !json_is_object(v) && !json_is_array(v) && json_is_object(counts))
            count_value(counts, v, 1);
        if (json_is_object(counts) && json_object_size(counts) > COUNTER_MAX_VALUES)
            json_object_set_new(s->counters, field, json_false()); /* not countable */
    }
    json_decref(data);
    json_decref(env);
}

int seglog_count(seglog *s, size_t *count, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = seglog__refresh(s, err);
    size_t n = 0, pos = 0;
    const char *k;
    void *v;
    while (!rc && idmap_next(&s->state, &pos, &k, &v))
        if (!((live *)v)->deleted)
            n++;
    pthread_mutex_unlock(&s->mu);
    *count = n;
    return rc;
}

int seglog_count_eq(seglog *s, const char *field, const json_t *value, size_t *n, bool *served,
                    storh_err *err)
{
    *served = false;
    if (json_is_object(value) || json_is_array(value))
        return 0;
    /* one hold of the mutex: the freshness check (two stats), then the
     * value's key encoded into the log's own buffer and looked up */
    pthread_mutex_lock(&s->mu);
    int rc = seglog__refresh(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    json_t *counts = s->counters ? json_object_get(s->counters, field) : NULL;
    if (json_is_object(counts)) {
        buf_reset(&s->count_key);
        if (!sjson_encode(&s->count_key, value, 0, NULL) && !buf_failed(&s->count_key)) {
            json_t *c = json_object_get(counts, s->count_key.data);
            *n = c ? (size_t)json_integer_value(c) : 0;
            *served = true;
        }
    }
    bool uncountable = counts && json_is_false(counts);
    pthread_mutex_unlock(&s->mu);
    if (*served || uncountable)
        return 0;
    buf key = BUF_INIT;
    sjson_encode(&key, value, 0, NULL);
    /* build the field's counters from a scan; install them only if nothing
     * was appended meanwhile (an append would then have been missed) */
    pthread_mutex_lock(&s->mu);
    gcommit_ticket at = gcommit_position(&s->gc);
    pthread_mutex_unlock(&s->mu);
    json_t *built = json_object();
    seglog_iter *it = NULL;
    rc = built ? seglog_iter_open(s, NULL, &it, err)
               : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    const char *id;
    json_t *data;
    while (!rc) {
        int r = seglog_iter_next(it, &id, &data, err);
        if (r <= 0) {
            rc = r;
            break;
        }
        json_t *v = json_object_get(data, field);
        if (v && !json_is_object(v) && !json_is_array(v))
            count_value(built, v, 1);
        json_decref(data);
    }
    seglog_iter_close(it);
    if (rc) {
        json_decref(built);
        buf_free(&key);
        return rc;
    }
    json_t *c = json_object_get(built, key.data);
    *n = c ? (size_t)json_integer_value(c) : 0;
    *served = true;
    pthread_mutex_lock(&s->mu);
    gcommit_ticket now = gcommit_position(&s->gc);
    if (now.gen == at.gen && now.off == at.off) {
        if (!s->counters)
            s->counters = json_object();
        json_object_set_new(s->counters, field,
                            json_object_size(built) > COUNTER_MAX_VALUES ? json_false()
                                                                         : json_incref(built));
    }
    pthread_mutex_unlock(&s->mu);
    json_decref(built);
    buf_free(&key);
    return 0;
}
