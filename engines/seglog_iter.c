/* seglog_iter: streaming reads of a seglog's live records in log order,
 * a bounded chunk of one segment in memory at a time (a line longer than a
 * chunk is read whole), skipping segments outside the query's id window.
 *
 * A line is handed out when the live state names it as its record's put.
 * A compaction (here or in another process, seen by a refresh) replaces
 * the segment list and bumps s->gen: the snapshot's segments then match
 * nothing. The iterator notices the new generation before its next chunk,
 * takes a new snapshot and goes on right after the last live line it
 * passed (its anchor), found through the state; compaction keeps log
 * order, so nothing is skipped or handed out twice. */
#include "seglog.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "frame.h"
#include "fsx.h"
#include "idmap.h"
#include "reccanon.h"
#include "sjson.h"
#include "seglog_int.h"

/* ---------- streaming reads ---------- */

typedef struct snap_seg {
    char file[NAME_CAP];
    uint64_t start;
    bool skip, ordered;
    bool skip_first; /* the line at start is the anchor: pass it */
    char max[UUID7_LEN + 1];
    /* a sealed segment's size when the snapshot was taken: every line the
     * state knows lies before it (UINT64_MAX: the active one, or unknown;
     * read to the end of the file) */
    uint64_t end;
} snap_seg;

/* what one read of a segment brings in at most (before the end of the
 * line it cuts): the first read of a segment takes ITER_FIRST, each next
 * one twice the last, up to ITER_CHUNK, so a read of a few records from a
 * sparse offset reads little more than those records */
#define ITER_CHUNK (256 * 1024)
#define ITER_FIRST (16 * 1024)

typedef struct hit {
    uint64_t off;  /* of the line in the segment file */
    uint32_t joff; /* its envelope (frame checked) from off */
    uint64_t jlen;
    char id[UUID7_LEN + 1];
} hit;

struct seglog_iter {
    seglog *s;
    const recquery *q;
    snap_seg *snap;
    size_t nsnap, si;
    buf seg;       /* the chunk: the segment's bytes from base */
    uint64_t base; /* file offset of seg.data[0] */
    uint64_t pos;  /* file offset of the next chunk */
    size_t chunk;  /* what the next read asks for */
    int fd;        /* the current segment, -1 between segments */
    bool seg_end;  /* the current segment has nothing more to read */
    hit *hits;
    size_t nhits, caphits, hi;
    size_t emitted;
    char id[UUID7_LEN + 1];
    uint64_t gen;    /* s->gen of the snapshot */
    bool has_anchor; /* anchor: the last live line passed */
    bool skip_line;  /* the current segment's first chunk starts at it */
    bool has_after;  /* resumed by id order: in snap[after_seg] ids > after */
    size_t after_seg;
    char anchor[UUID7_LEN + 1], after[UUID7_LEN + 1];
    char frame[32]; /* the anchor line's frame ("<len>\t<xxh32>\t") */
    size_t framelen;
};

/* Under mu: the snapshot of s's segments for it's query. */
static bool take_snapshot(seglog_iter *it)
{
    seglog *s = it->s;
    const recquery *q = it->q;
    const char *lower = NULL;
    if (q && q->has_after)
        lower = q->after;
    if (q && q->has_from && (!lower || strcmp(q->min_id, lower) > 0))
        lower = q->min_id;
    snap_seg *snap = calloc(s->nsegs ? s->nsegs : 1, sizeof *snap);
    if (!snap)
        return false;
    free(it->snap);
    it->snap = snap;
    it->nsnap = s->nsegs;
    it->gen = s->gen;
    for (size_t i = 0; i < s->nsegs; i++) {
        seg *g = &s->segs[i];
        snap_seg *n = &it->snap[i];
        snprintf(n->file, sizeof n->file, "%s", g->file);
        n->ordered = g->ordered;
        memcpy(n->max, g->max, sizeof n->max);
        n->end = i + 1 < s->nsegs && g->size ? g->size : UINT64_MAX;
        if (g->has_minmax && q) {
            n->skip = (q->has_after && strcmp(g->max, q->after) <= 0) ||
                      (q->has_from && strcmp(g->max, q->min_id) < 0) ||
                      (q->has_until && strcmp(g->min, q->max_id) > 0);
        }
        if (!n->skip && lower && g->ordered && g->nsp && strcmp(g->min, lower) < 0) {
            for (size_t k = 0; k < g->nsp && memcmp(g->sp[k].id, lower, UUID7_LEN) <= 0; k++)
                n->start = g->sp[k].off;
        }
    }
    return true;
}

static void close_segment(seglog_iter *it)
{
    if (it->fd >= 0)
        close(it->fd);
    it->fd = -1;
}

/* The last hit collected becomes the anchor (before the hits go). */
static void note_anchor(seglog_iter *it)
{
    if (it->nhits) {
        const hit *h = &it->hits[it->nhits - 1];
        memcpy(it->anchor, h->id, sizeof it->anchor);
        it->has_anchor = true;
        it->framelen = h->joff < sizeof it->frame ? h->joff : 0;
        memcpy(it->frame, it->seg.data + (h->off - it->base), it->framelen);
    }
    it->nhits = it->hi = 0;
}

/* Under mu: whether the anchor's put in the new layout has the frame (its
 * envelope's length and hash) of the line passed, so that it is the same
 * put and not a later one of the same id (whose place would skip what lies
 * between). */
static bool same_frame(seglog_iter *it, const live *v)
{
    char path[PATH_MAX], b[sizeof it->frame];
    if (!it->framelen || seglog__seg_path(it->s, it->s->segs[v->seg].file, path, NULL))
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t r = pread(fd, b, it->framelen, (off_t)v->off);
    close(fd);
    return r == (ssize_t)it->framelen && !memcmp(b, it->frame, it->framelen);
}

/* Under mu, s->gen moved on: a new snapshot, and the place right after the
 * anchor in it (the next open_segment opens snap[it->si]). The anchor's
 * put is found through the state; when it is gone (deleted, then
 * compacted away) or is not the one passed (put again since), segments in
 * id order (each ordered, each after the
 * last) still give its place; else the read cannot go on in order. */
static int resume(seglog_iter *it, storh_err *err)
{
    seglog *s = it->s;
    note_anchor(it);
    close_segment(it);
    it->skip_line = it->has_after = false;
    it->si = 0;
    if (!take_snapshot(it))
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (!it->has_anchor)
        return 0; /* nothing passed yet: from the start */
    live *v = idmap_get(&s->state, it->anchor);
    if (v && !v->deleted && v->seg < it->nsnap && same_frame(it, v)) {
        snap_seg *n = &it->snap[v->seg];
        if (n->start <= v->off) {
            n->start = v->off;
            n->skip_first = true;
        }
        it->si = v->seg;
        return 0;
    }
    const char *prev = NULL; /* the snapshot is s->segs as they are now */
    for (size_t i = 0; i < it->nsnap; i++) {
        const seg *n = &s->segs[i];
        if (!n->has_minmax)
            continue;
        if (!n->ordered || (prev && strcmp(n->min, prev) <= 0))
            return storh_err_set(err, STORH_EUNAVAIL,
                                 "The log was compacted during this read and the read cannot go "
                                 "on in order: read again after %s.",
                                 it->anchor);
        prev = n->max;
    }
    while (it->si < it->nsnap &&
           (!s->segs[it->si].has_minmax || strcmp(it->snap[it->si].max, it->anchor) <= 0))
        it->si++;
    if (it->si < it->nsnap) {
        seg *g = &s->segs[it->si];
        snap_seg *n = &it->snap[it->si];
        for (size_t k = 0; k < g->nsp && memcmp(g->sp[k].id, it->anchor, UUID7_LEN) <= 0; k++)
            if (g->sp[k].off > n->start)
                n->start = g->sp[k].off;
        it->has_after = true;
        it->after_seg = it->si;
        memcpy(it->after, it->anchor, sizeof it->after);
    }
    return 0;
}

int seglog_iter_open(seglog *s, const recquery *q, seglog_iter **out, storh_err *err)
{
    seglog_iter *it = calloc(1, sizeof *it);
    if (!it)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    it->s = s;
    it->q = q;
    it->fd = -1;
    pthread_mutex_lock(&s->mu);
    int rc = seglog__refresh(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        free(it);
        return rc;
    }
    bool ok = take_snapshot(it);
    pthread_mutex_unlock(&s->mu);
    if (!ok) {
        free(it);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    *out = it;
    return 0;
}

/* Opens the next segment of the snapshot (unless the query skips it). */
static int open_segment(seglog_iter *it, storh_err *err)
{
    snap_seg *n = &it->snap[it->si++];
    note_anchor(it);
    if (n->skip)
        return 0;
    char path[PATH_MAX];
    int rc = seglog__seg_path(it->s, n->file, path, err);
    if (rc)
        return rc;
    it->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (it->fd < 0) {
        int e = errno;
        if (e != ENOENT && e != ENOTDIR)
            return storh_err_sys(err, e, "Could not open segment: %s", n->file);
        /* compacted away (by another process, or here)? */
        seglog *s = it->s;
        pthread_mutex_lock(&s->mu);
        rc = seglog__refresh(s, err);
        bool moved = !rc && s->gen != it->gen;
        if (moved)
            rc = resume(it, err);
        pthread_mutex_unlock(&s->mu);
        if (rc || moved)
            return rc;
        return storh_err_set(err, STORH_ENOTFOUND, "Could not open segment: %s", n->file);
    }
    it->skip_line = n->skip_first;
    it->pos = n->start;
    it->chunk = ITER_FIRST;
    it->seg_end = false;
    return 0;
}

/* Reads the current segment's next chunk: whole lines, and at the end of
 * the file whatever is left (an unterminated tail). Returns how many bytes
 * of it->seg to scan. */
static int read_chunk(seglog_iter *it, uint64_t *scan, storh_err *err)
{
    buf_reset(&it->seg);
    it->base = it->pos;
    const char *file = it->snap[it->si - 1].file;
    uint64_t end = it->snap[it->si - 1].end;
    size_t want = it->chunk;
    if (it->chunk < ITER_CHUNK)
        it->chunk *= 2;
    if (end != UINT64_MAX && it->base >= end) { /* nothing the state knows is left */
        it->seg_end = true;
        *scan = 0;
        return 0;
    }
    if (end != UINT64_MAX && end - it->base <= (uint64_t)want * 2)
        want = (size_t)(end - it->base); /* the rest in one read, no read of the end */
    for (;;) {
        if (!buf_reserve(&it->seg, want))
            return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        ssize_t r =
            pread(it->fd, it->seg.data + it->seg.len, want, (off_t)(it->base + it->seg.len));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return storh_err_sys(err, errno, "Could not read segment: %s", file);
        if (r == 0) { /* the end of the file */
            it->seg_end = true;
            *scan = it->seg.len;
            break;
        }
        it->seg.len += (size_t)r;
        if (end != UINT64_MAX && it->base + it->seg.len >= end) { /* its lines end there */
            it->seg_end = true;
            *scan = end - it->base;
            break;
        }
        const char *nl = memrchr(it->seg.data + it->seg.len - r, '\n', (size_t)r);
        if (nl) {
            *scan = (uint64_t)(nl - it->seg.data) + 1;
            break;
        }
    }
    it->pos = it->base + *scan;
    if (it->seg.data)
        it->seg.data[it->seg.len] = '\0';
    return 0;
}

/* Reads the current segment's next chunk and collects its live lines in
 * the id window. */
static int load_chunk(seglog_iter *it, storh_err *err)
{
    seglog *s = it->s;
    snap_seg *n = &it->snap[it->si - 1];
    note_anchor(it);
    uint64_t len = 0;
    int rc = read_chunk(it, &len, err);
    if (rc)
        return rc;
    const char *b = it->seg.data ? it->seg.data : "";
    uint64_t pos = 0;
    if (it->skip_line) { /* the anchor, handed out before the compaction */
        it->skip_line = false;
        const char *nl = memchr(b, '\n', len);
        pos = nl ? (uint64_t)(nl - b) + 1 : len;
    }
    bool after = it->has_after && it->si - 1 == it->after_seg;
    const recquery *q = it->q;
    /* without a field condition every hit is handed out: collect no more
     * than the limit still needs */
    size_t need = SIZE_MAX;
    if (q && q->limit && !q->where)
        need = q->limit > it->emitted ? q->limit - it->emitted : 0;
    pthread_mutex_lock(&s->mu);
    if (s->gen != it->gen) { /* the list was replaced: this chunk is stale */
        rc = resume(it, err);
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    long si = (long)(it->si - 1);
    while (pos < len && it->nhits < need) {
        const char *nl = memchr(b + pos, '\n', len - pos);
        uint64_t end = nl ? (uint64_t)(nl - b) : len;
        int op;
        char id[UUID7_LEN + 1];
        const char *j;
        size_t jl;
        if (seglog__line_envelope(b + pos, end - pos, &op, id, &j, &jl)) {
            if (n->ordered && q && q->has_until && strcmp(id, q->max_id) > 0) {
                it->seg_end = true;
                break;
            }
            live *v = idmap_get(&s->state, id);
            if (v && !v->deleted && v->seg == (uint32_t)si && v->off == it->base + pos &&
                op != OP_DELETE && (!q || recquery_match_id(q, id, UUID7_LEN)) &&
                (!after || strcmp(id, it->after) > 0)) {
                if (it->nhits == it->caphits) {
                    size_t cap = it->caphits ? it->caphits * 2 : 256;
                    hit *h = realloc(it->hits, cap * sizeof *h);
                    if (!h) {
                        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
                        break;
                    }
                    it->hits = h;
                    it->caphits = cap;
                }
                hit *h = &it->hits[it->nhits++];
                h->off = it->base + pos;
                h->joff = (uint32_t)(j - (b + pos));
                h->jlen = (uint32_t)jl;
                memcpy(h->id, id, sizeof h->id);
            }
        }
        pos = nl ? end + 1 : len;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int seglog_iter_next_raw(seglog_iter *it, const char **id, const char **raw, size_t *rawlen,
                         json_t **data, storh_err *err)
{
    for (;;) {
        if (it->q && it->q->limit && it->emitted >= it->q->limit)
            return 0;
        if (it->hi < it->nhits) {
            hit *h = &it->hits[it->hi++];
            const char *j = it->seg.data + (h->off - it->base) + h->joff;
            const char *r = NULL;
            size_t rl = 0;
            json_t *d = NULL;
            bool where = it->q && it->q->where;
            if (!raw || where || !seglog__put_raw(j, h->jlen, h->id, &r, &rl)) {
                storh_err derr;
                int rc = seglog__decode_envelope(j, h->jlen, h->id, &d, &derr);
                if (rc)
                    return storh_err_set(err, rc, "Bad record at %s:%llu: %s",
                                         it->snap[it->si - 1].file, (unsigned long long)h->off,
                                         derr.msg);
                if (where && !recquery_match_data(it->q, d)) {
                    json_decref(d);
                    continue;
                }
                if (raw && seglog__put_raw(j, h->jlen, h->id, &r, &rl)) {
                    json_decref(d); /* matched on the tree, handed out as bytes */
                    d = NULL;
                }
            }
            memcpy(it->id, h->id, sizeof it->id);
            it->emitted++;
            *id = it->id;
            if (raw) {
                *raw = r;
                *rawlen = rl;
            }
            *data = d;
            return 1;
        }
        int rc;
        if (it->fd >= 0 && !it->seg_end) {
            if ((rc = load_chunk(it, err)))
                return rc;
            continue;
        }
        close_segment(it);
        if (it->si >= it->nsnap)
            return 0;
        if ((rc = open_segment(it, err)))
            return rc;
    }
}

int seglog_iter_next(seglog_iter *it, const char **id, json_t **data, storh_err *err)
{
    return seglog_iter_next_raw(it, id, NULL, NULL, data, err);
}

void seglog_iter_close(seglog_iter *it)
{
    if (!it)
        return;
    close_segment(it);
    free(it->snap);
    free(it->hits);
    buf_free(&it->seg);
    free(it);
}

/* ---------- envelopes ---------- */

/* The UUID7_LEN bytes at p are a string literal's whole text with no
 * escape, equal to want_id when there is one. */
static bool plain_id(const char *p, const char *want_id)
{
    if (want_id)
        return !memcmp(p, want_id, UUID7_LEN) && !want_id[UUID7_LEN];
    for (size_t i = 0; i < UUID7_LEN; i++)
        if (p[i] == '"' || p[i] == '\\' || (unsigned char)p[i] < 0x20)
            return false;
    return true;
}

/* The data bytes of a canonical put envelope j (of want_id, if set). */
static bool put_data(const char *j, size_t jl, const char *want_id, const char **d, size_t *dl)
{
    size_t head = PUT_PREFIX_LEN + UUID7_LEN + 9;
    if (jl > head + 1 && !memcmp(j, PUT_PREFIX, PUT_PREFIX_LEN) &&
        !memcmp(j + PUT_PREFIX_LEN + UUID7_LEN, "\",\"data\":", 9) && j[jl - 1] == '}' &&
        plain_id(j + PUT_PREFIX_LEN, want_id)) {
        *d = j + head;
        *dl = jl - head - 1;
        return true;
    }
    return false;
}

bool seglog__put_raw(const char *j, size_t jl, const char *want_id, const char **raw,
                     size_t *rawlen)
{
    /* an object (reccanon refuses {} and integer keys) is handed out as it
     * is; a list would become {} */
    const char *d;
    size_t dl;
    if (!put_data(j, jl, want_id, &d, &dl) || *d != '{' || !reccanon_value_is_canonical(d, dl))
        return false;
    *raw = d;
    *rawlen = dl;
    return true;
}

int seglog__decode_envelope(const char *j, size_t jl, const char *want_id, json_t **data,
                            storh_err *err)
{
    /* the canonical put line ({"op":"put","id":"<id>","data":<data>}):
     * only data is decoded (canonical bytes without a general parser);
     * anything else takes the whole parse */
    const char *dp;
    size_t dl;
    if (put_data(j, jl, want_id, &dp, &dl)) {
        json_t *d = *dp == '{' ? reccanon_value_decode(dp, dl) : NULL;
        if (d) {
            *data = d; /* an object with no integer key: as it is */
            return 0;
        }
        d = sjson_loadb(dp, dl, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
        if (d) {
            *data = sjson_string_keyed(d);
            json_decref(d);
            return 0;
        }
    }
    json_t *env = sjson_loadb(j, jl, JSON_ALLOW_NUL, NULL);
    const char *op = json_string_value(json_object_get(env, "op"));
    const char *id = json_string_value(json_object_get(env, "id"));
    if (!env || !op || !id || strcmp(op, "put") || (want_id && strcmp(id, want_id))) {
        json_decref(env);
        return storh_err_set(err, STORH_ECORRUPT,
                             "Segmented log state index points at the wrong record.");
    }
    *data = seglog_envelope_data(env);
    json_decref(env);
    return 0;
}

int seglog__decode_put(const char *line, size_t len, const char *want_id, json_t **data,
                       storh_err *err)
{
    const char *j;
    size_t jl;
    int rc = frame_decode(line, len, false, &j, &jl, err);
    return rc ? rc : seglog__decode_envelope(j, jl, want_id, data, err);
}
