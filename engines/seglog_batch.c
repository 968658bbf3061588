/* seglog_batch: bulk appends to a seglog, spooled to a file and published
 * at commit as a segment of their own (all or nothing across a crash). */
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
#include "estats.h"
#include "fault.h"
#include "fsx.h"
#include "gcommit.h"
#include "seglog_int.h"

/* ---------- bulk appends through a spool file ----------
 *
 * A batch is published as a segment of its own, so that no crash (SIGKILL
 * or power cut) can leave part of it: the rows are framed into a spool file
 * (.storh/.<identity>.<n>.tmp, swept as a dead writer's temp), which at
 * commit is fsynced and renamed to segments/seg-NNNNNN.ndjson, a number the
 * manifest has not handed out yet. The manifest that names it as the active
 * segment (the old active one sealed before it) is the commit point: storh
 * and storhd replay only the segments a manifest lists, so before that
 * rename the batch is invisible to both, after it whole. A spool renamed
 * but never named (a crash in between) is removed on open. */

struct seglog_batch {
    seglog *s;
    FILE *f;
    char path[PATH_MAX];
    size_t n;
    bool renamed;
    buf line;
    seg g; /* the stats of the spooled lines, for the manifest */
    uint64_t size;
};

int seglog_batch_begin(seglog *s, seglog_batch **out, storh_err *err)
{
    seglog_batch *b = calloc(1, sizeof *b);
    if (!b)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    b->s = s;
    seglog__seg_reset_stats(&b->g);
    pthread_mutex_lock(&s->mu);
    unsigned long seq = ++s->tmp_seq;
    pthread_mutex_unlock(&s->mu);
    /* named like a record temp so a sweep keeps it while we are alive */
    int rc = fsx_pathf(b->path, err, "%s/.storh/.%s.%lu.tmp", s->dir, s->identity, seq);
    if (!rc && !(b->f = fopen(b->path, "w+e")))
        rc = storh_err_sys(err, errno, "Could not create spool file %s", b->path);
    if (rc) {
        free(b);
        return rc;
    }
    *out = b;
    return 0;
}

size_t seglog_batch_count(const seglog_batch *b)
{
    return b->n;
}

int seglog_batch_element(seglog_batch *b, json_t *elem, char out_id[UUID7_LEN + 1], storh_err *err)
{
    if (!json_is_object(elem))
        return storh_err_set(err, STORH_EINVAL, "Bulk rows must be JSON objects.");
    json_t *id = json_object_get(elem, "id");
    json_t *data = json_object_get(elem, "data");
    if (!json_is_object(data))
        data = elem;
    int rc = seglog__resolve_id(json_is_string(id) ? json_string_value(id) : NULL, out_id, err);
    if (rc)
        return rc;
    buf_reset(&b->line);
    if ((rc = seglog__encode_put(&b->line, out_id, data, err)))
        return rc;
    if (fwrite(b->line.data, 1, b->line.len, b->f) != b->line.len)
        return storh_err_sys(err, errno, "Could not write spool file %s", b->path);
    seglog__seg_note(&b->g, b->s->o.sparse_interval, out_id, b->size);
    b->size += b->line.len;
    b->n++;
    return 0;
}

void seglog_batch_abort(seglog_batch *b)
{
    if (!b)
        return;
    if (b->f)
        fclose(b->f);
    if (!b->renamed)
        unlink(b->path);
    buf_free(&b->line);
    free(b->g.sp);
    free(b);
}

/* The next segment number no file and no manifest entry uses yet. */
static int free_segment(seglog *s, char file[NAME_CAP], char path[PATH_MAX], storh_err *err)
{
    long long n = seglog__seg_number(seglog__active(s)->file) + 1;
    if (n < s->next_segment)
        n = s->next_segment;
    struct stat st;
    for (;; n++) {
        snprintf(file, NAME_CAP, "seg-%06lld.ndjson", n);
        int rc = seglog__seg_path(s, file, path, err);
        if (rc)
            return rc;
        if (stat(path, &st) != 0)
            return 0;
    }
}

/* Applies the lines of the spool (whole lines, as written) to the state
 * index as segment si. */
static int apply_spool(seglog *s, FILE *f, uint32_t si, storh_err *err)
{
    rewind(f);
    buf pend = BUF_INIT;
    uint64_t at = 0;
    bool eof = false;
    while (!eof || pend.len) {
        if (!eof) {
            if (!buf_reserve(&pend, BATCH_CHUNK)) {
                buf_free(&pend);
                return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            }
            size_t r = fread(pend.data + pend.len, 1, BATCH_CHUNK, f);
            pend.len += r;
            eof = r < BATCH_CHUNK;
        }
        const char *last = pend.len ? memrchr(pend.data, '\n', pend.len) : NULL;
        if (!last) {
            if (eof)
                break; /* the spool holds whole lines only */
            continue;
        }
        size_t cut = (size_t)(last - pend.data) + 1;
        bool torn;
        seglog__scan_lines(s, si, pend.data, at, cut, &torn);
        at += cut;
        buf_consume(&pend, cut);
    }
    buf_free(&pend);
    return ferror(f) ? storh_err_sys(err, EIO, "Could not read the spool file") : 0;
}

/* Under mu + flock: publishes the fsynced spool as the new active segment.
 * The old active one is sealed (its pending appends flushed, its sparse
 * index written) unless it is empty, when the batch takes its place. */
static int publish_spool(seglog *s, seglog_batch *b, storh_err *err)
{
    int rc = gcommit_check(&s->gc, err);
    if (!rc)
        rc = seglog__catch_up(s, err);
    if (!rc)
        rc = gcommit_flush(&s->gc, err);
    if (rc)
        return rc;
    seg *a = seglog__active(s);
    bool seal = a->records > 0;
    if (seal) {
        seglog__index_name_for(a->file, a->index);
        if ((rc = seglog__write_sparse(s, a, err))) {
            a->index[0] = '\0';
            return rc;
        }
    }
    char file[NAME_CAP], path[PATH_MAX], dir[PATH_MAX];
    if ((rc = free_segment(s, file, path, err)))
        goto undo_index;
    if (rename(b->path, path) != 0) {
        rc = storh_err_sys(err, errno, "Could not publish bulk segment %s", path);
        goto undo_index;
    }
    b->renamed = true;
    estats_add(ESTAT_RENAME, 1);
    fault_point("seglog.bulk.renamed");
    fsx_dirname(path, dir, sizeof dir);
    if ((rc = fsx_fsync_dir(dir, err)))
        goto undo_file;
    /* the manifest as it will be: the batch is the active segment */
    seg old = *a;
    long long old_next = s->next_segment;
    if (seal && !seglog__segs_push(s, file, NULL)) {
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        goto undo_file;
    }
    a = seglog__active(s);
    if (!seal)
        memset(a, 0, sizeof *a);
    snprintf(a->file, sizeof a->file, "%s", file);
    a->has_minmax = b->g.has_minmax;
    a->ordered = b->g.ordered;
    a->records = b->g.records;
    memcpy(a->min, b->g.min, sizeof a->min);
    memcpy(a->max, b->g.max, sizeof a->max);
    a->size = b->size;
    s->next_segment = seglog__seg_number(file) + 1;
    struct stat before = s->manifest_st;
    rc = seglog__manifest_write(s, err);
    fault_point("seglog.bulk.manifest");
    if (rc && !seglog__manifest_changed(s)) {
        /* not written (a full disk): the old manifest stands */
        s->manifest_st = before;
        s->next_segment = old_next;
        if (seal)
            s->nsegs--;
        else
            *seglog__active(s) = old;
        goto undo_file;
    }
    int fd = rc ? -1 : open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (!rc && fd < 0)
        rc = storh_err_sys(err, errno, "Could not open active segment %s", path);
    if (!rc && (rc = gcommit_switch(&s->gc, fd, b->size, err)) != 0)
        close(fd);
    if (rc) {
        /* the manifest names the batch, but this process cannot take it on
         * (a failed directory fsync, no descriptor): refuse writes until
         * a restart reopens the log as the disk has it */
        gcommit_poison(&s->gc, EIO);
        return rc;
    }
    if (!seal)
        free(old.sp);
    s->active_fd = fd;
    s->need_lf = false;
    seglog__seg_reset_stats(seglog__active(s));
    /* room for the batch's ids at once, not a doubling per power of two
     * (each a fresh table; without room, the puts below still grow it) */
    (void)idmap_reserve(&s->state, s->state.len + b->n);
    rc = apply_spool(s, b->f, (uint32_t)(s->nsegs - 1), err);
    seglog__active(s)->size = b->size;
    estats_add(ESTAT_LOG_APPEND, 1);
    return rc;
undo_file:
    unlink(path);
undo_index:
    if (seal)
        seglog__active(s)->index[0] = '\0';
    return rc;
}

int seglog_batch_commit(seglog_batch *b, size_t *written, storh_err *err)
{
    seglog *s = b->s;
    int rc = 0;
    if (b->n) {
        /* the rows durable before their segment can be named: fsync here,
         * outside the locks */
        if (fflush(b->f) != 0 || fsync(fileno(b->f)) != 0)
            rc = storh_err_sys(err, errno, "Could not write spool file %s", b->path);
        else
            estats_add(ESTAT_FSYNC_FILE, 1);
        fault_point("seglog.bulk.spooled");
    }
    pthread_mutex_lock(&s->mu);
    if (!rc && b->n) {
        rc = seglog__lock(s, err);
        if (!rc) {
            rc = publish_spool(s, b, err);
            seglog__unlock(s);
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (written)
        *written = rc ? 0 : b->n;
    seglog_batch_abort(b);
    return rc;
}
