/* seglog_compact: compaction (sealed segments rewritten to their live
 * lines, committed by a manifest swap) and retention (old records deleted,
 * then compacted). */
#include "seglog.h"

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
#include "docgroup.h"
#include "estats.h"
#include "fault.h"
#include "frame.h"
#include "fsx.h"
#include "gcommit.h"
#include "idmap.h"
#include "seglog_int.h"

/* ---------- compaction, retention, maintenance ---------- */

typedef struct out_file {
    seg g;
    buf bytes;
} out_file;

/* Writes an output segment and its sparse index. With fs, without fsync:
 * the caller syncfs(2)es every output once before the manifest names them
 * (a crash before that leaves files no manifest names, which the next
 * compaction or open removes). */
static int finish_output(seglog *s, out_file *o, bool fs, seg **outs, size_t *nouts, storh_err *err)
{
    if (o->g.records == 0)
        return 0;
    char path[PATH_MAX];
    int rc = seglog__seg_path(s, o->g.file, path, err);
    if (!rc)
        rc = fsx_write_file(path, o->bytes.data, o->bytes.len, !fs, err);
    if (!rc) {
        seglog__index_name_for(o->g.file, o->g.index);
        rc = seglog__write_sparse_as(s, &o->g, fs ? SPARSE_NOSYNC : SPARSE_PUBLISH, err);
    }
    if (rc)
        return rc;
    seg *n = realloc(*outs, (*nouts + 1) * sizeof *n);
    if (!n)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    *outs = n;
    o->g.size = o->bytes.len;
    o->g.compacted = true;
    n[(*nouts)++] = o->g;
    memset(&o->g, 0, sizeof o->g);
    buf_reset(&o->bytes);
    return 0;
}

/* Where a kept record's line went: output seg, offset off. */
typedef struct moved {
    live *v;
    uint32_t seg;
    uint64_t off;
} moved;

/* After the manifest swap: the state as a replay of [outputs..., active]
 * would build it, without reading the outputs again. nsealed segments were
 * replaced by nouts outputs; mv lists every record kept (its entry and new
 * place). Entries whose line was in a sealed segment and not kept (deletes,
 * other ops) go; the active segment's keep their lines, now at index
 * nouts; bad lines of sealed segments went with them. The counters stay:
 * no live record changed. Returns false when memory ran out (the caller
 * then replays). */
static bool move_state(seglog *s, size_t nsealed, size_t nouts, const moved *mv, size_t nmv)
{
    size_t pos = 0, ngone = 0, cap = 0;
    const char *k;
    void *x;
    char(*gone)[UUID7_LEN + 1] = NULL;
    while (idmap_next(&s->state, &pos, &k, &x)) {
        live *v = x;
        if (v->seg == nsealed) {
            v->seg = (uint32_t)nouts;
            continue;
        }
        v->seg = UINT32_MAX; /* gone unless kept below */
    }
    for (size_t i = 0; i < nmv; i++) {
        mv[i].v->seg = mv[i].seg;
        mv[i].v->off = mv[i].off;
    }
    pos = 0;
    while (idmap_next(&s->state, &pos, &k, &x)) {
        if (((live *)x)->seg != UINT32_MAX)
            continue;
        if (ngone == cap) {
            cap = cap ? cap * 2 : 64;
            void *g = realloc(gone, cap * sizeof *gone);
            if (!g) {
                free(gone);
                return false;
            }
            gone = g;
        }
        memcpy(gone[ngone++], k, UUID7_LEN + 1);
    }
    for (size_t i = 0; i < ngone; i++)
        idmap_del(&s->state, gone[i]);
    free(gone);
    size_t nb = 0;
    for (size_t i = 0; i < s->nbad; i++)
        if (s->bad[i].seg == nsealed) {
            s->bad[nb] = s->bad[i];
            s->bad[nb++].seg = (uint32_t)nouts;
        }
    s->nbad = nb;
    return true;
}

/* A compaction that did not swap: its nouts outputs (and the moves) freed,
 * their files removed (the list s has does not name them). */
static void drop_outputs(seglog *s, seg *outs, size_t nouts, moved *mv)
{
    for (size_t i = 0; i < nouts; i++)
        free(outs[i].sp);
    free(outs);
    free(mv);
    seglog__remove_unreferenced(s);
}

/* Under mu + flock. */
static int compact_locked(seglog *s, json_t **report, storh_err *err)
{
    int rc = seglog__catch_up(s, err);
    if (!rc)
        rc = seglog__roll(s, err);
    if (rc)
        return rc;
    size_t nsealed = s->nsegs - 1;
    if (nsealed == 0) {
        rc = seglog__manifest_write(s, err);
        if (!rc && report)
            *report = json_pack("{sbsisi}", "ok", 1, "segments", 0, "records", 0);
        return rc;
    }
    char token[9];
    if ((rc = fsx_random_hex(token, 4, err)))
        return rc;
    /* one syncfs for every output where it reports writeback errors (the
     * descriptor opened before the first write, so its errors since count),
     * else an fsync per file as before */
    char dir[PATH_MAX];
    if ((rc = fsx_pathf(dir, err, "%s/segments", s->dir)))
        return rc;
    int sync_fd = -1;
    if (docgroup_default_mode() != DOCGROUP_SYNC_EACH)
        sync_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool fs = sync_fd >= 0;
    seg *outs = NULL;
    size_t nouts = 0;
    long long kept = 0, outno = 0;
    moved *mv = NULL;
    size_t nmv = 0, capmv = 0;
    out_file o;
    memset(&o, 0, sizeof o);
    buf line = BUF_INIT;
    for (size_t i = 0; !rc && i < nsealed; i++) {
        char path[PATH_MAX];
        buf b = BUF_INIT;
        if ((rc = seglog__seg_path(s, s->segs[i].file, path, err)))
            break;
        rc = fsx_read_all(path, &b, err);
        if (rc == STORH_ENOTFOUND) {
            rc = 0;
            continue;
        }
        uint64_t pos = 0;
        while (!rc && pos < b.len) {
            const char *nl = memchr(b.data + pos, '\n', b.len - pos);
            uint64_t end = nl ? (uint64_t)(nl - b.data) : b.len;
            int op;
            char id[UUID7_LEN + 1];
            const char *p = b.data + pos, *j;
            size_t n = end - pos, jl;
            pos = nl ? end + 1 : b.len;
            if (!seglog__line_envelope(p, n, &op, id, &j, &jl) || op != OP_PUT)
                continue; /* deletes, other ops and bad lines do not survive */
            live *v = idmap_get(&s->state, id);
            if (!v || v->deleted || v->seg != i || v->off != (uint64_t)(p - b.data))
                continue;
            if (o.g.file[0] == '\0') {
                char file[NAME_CAP], probe[PATH_MAX];
                struct stat st;
                do {
                    snprintf(file, sizeof file, "compact-%s-%06lld.ndjson", token, ++outno);
                    seglog__seg_path(s, file, probe, NULL);
                } while (stat(probe, &st) == 0);
                snprintf(o.g.file, sizeof o.g.file, "%s", file);
                seglog__seg_reset_stats(&o.g);
            }
            uint64_t at = o.bytes.len;
            if (!memcmp(j, PUT_PREFIX, PUT_PREFIX_LEN)) {
                buf_append(&o.bytes, p, n);
                buf_appendc(&o.bytes, '\n');
            } else { /* a non-canonical put is written canonically */
                json_t *d;
                if ((rc = seglog__decode_envelope(j, jl, id, &d, err)))
                    break;
                buf_reset(&line);
                rc = seglog__encode_put(&line, id, d, err);
                json_decref(d);
                buf_append(&o.bytes, line.data, line.len);
            }
            /* stats and sparse entries of the output, by the replay's rules */
            seglog__seg_note(&o.g, s->o.sparse_interval, id, at);
            kept++;
            if (mv || !nmv) { /* after a failed grow: the swap replays */
                if (nmv == capmv) {
                    size_t cap = capmv ? capmv * 2 : 1024;
                    moved *g = realloc(mv, cap * sizeof *g);
                    if (!g) {
                        free(mv);
                        mv = NULL;
                        nmv = 1; /* marks the failure */
                    } else {
                        mv = g;
                        capmv = cap;
                    }
                }
                if (mv)
                    mv[nmv++] = (moved){v, (uint32_t)nouts, at};
            }
            if (o.bytes.len >= s->o.max_segment_bytes)
                rc = finish_output(s, &o, fs, &outs, &nouts, err);
        }
        buf_free(&b);
    }
    if (!rc)
        rc = finish_output(s, &o, fs, &outs, &nouts, err);
    free(o.g.sp);
    buf_free(&o.bytes);
    buf_free(&line);
    if (!rc && fs) {
        if (syncfs(sync_fd) != 0)
            rc = storh_err_sys(err, errno, "Could not sync the compacted segments.");
        else
            estats_add(ESTAT_FSYNC_FS, 1);
    }
    if (sync_fd >= 0)
        close(sync_fd);
    if (!rc)
        rc = fsx_fsync_dir(dir, err);
    fault_point("seglog.compact.before_manifest");
    if (rc) {
        drop_outputs(s, outs, nouts, mv);
        return rc;
    }
    /* the swap: outputs replace every sealed segment; the active one stays */
    seg *n = realloc(outs, (nouts + 1) * sizeof *n);
    if (!n) {
        drop_outputs(s, outs, nouts, mv);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    n[nouts] = *seglog__active(s);
    seg *old = s->segs;
    size_t old_n = s->nsegs;
    struct stat before = s->manifest_st;
    s->segs = n;
    s->nsegs = nouts + 1;
    rc = seglog__manifest_write(s, err);
    if (rc && !seglog__manifest_changed(s)) {
        /* not written (a full disk): the old manifest, and with it the old
         * segments and the state's places in them, stand */
        s->manifest_st = before;
        s->segs = old;
        s->nsegs = old_n;
        drop_outputs(s, n, nouts, mv);
        return rc;
    }
    /* written (if its directory's sync failed, the next catch-up sees a
     * manifest it did not load and replays it) */
    for (size_t i = 0; i < nsealed; i++)
        free(old[i].sp);
    free(old);
    s->gen++;
    if (!rc && !((mv || !kept) && move_state(s, nsealed, nouts, mv, nmv)))
        rc = seglog__replay(s, TORN_KEEP, err); /* out of memory for the moves */
    free(mv);
    estats_add(ESTAT_LOG_COMPACT, 1);
    if (!rc && report)
        *report = json_pack("{sbsIsI}", "ok", 1, "segments", (json_int_t)nouts, "records",
                            (json_int_t)kept);
    return rc;
}

int seglog_compact(seglog *s, json_t **report, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = seglog__lock(s, err);
    if (!rc) {
        rc = compact_locked(s, report, err);
        seglog__unlock(s);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int seglog_retain(seglog *s, int64_t cutoff_ms, size_t *deleted, storh_err *err)
{
    *deleted = 0;
    char bound[UUID7_LEN + 1];
    if (cutoff_ms < 0)
        return storh_err_set(err, STORH_EINVAL, "Retention cutoff must not be negative.");
    uuid7_max_for_ms(cutoff_ms > UUID7_MAX_TS ? UUID7_MAX_TS : cutoff_ms, bound);
    pthread_mutex_lock(&s->mu);
    int rc = seglog__lock(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    rc = seglog__catch_up(s, err);
    buf lines = BUF_INIT;
    size_t pos = 0, n = 0;
    const char *k;
    void *v;
    while (!rc && idmap_next(&s->state, &pos, &k, &v)) {
        if (((live *)v)->deleted || memcmp(k, bound, UUID7_LEN) > 0)
            continue;
        char env[DEL_PREFIX_LEN + UUID7_LEN + 3];
        snprintf(env, sizeof env, "%s%.36s\"}", DEL_PREFIX, k);
        frame_encode(&lines, env, strlen(env));
        n++;
    }
    gcommit_ticket t = {0, 0};
    if (!rc && n)
        rc = seglog__append_lines(s, lines.data, lines.len, &t, err);
    if (!rc && n)
        rc = gcommit_wait(&s->gc, t, err);
    if (!rc)
        rc = compact_locked(s, NULL, err);
    seglog__unlock(s);
    pthread_mutex_unlock(&s->mu);
    buf_free(&lines);
    if (!rc)
        *deleted = n;
    return rc;
}
