/* seglog_manifest: the segment set of a seglog (FORMAT.md 3): manifest.jsonc
 * written and loaded, the active segment opened, unnamed leftovers removed,
 * sparse index files written, and the roll that seals the active segment. */
#include "seglog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "sjson.h"
#include "writers.h"
#include "seglog_int.h"

/* ---------- manifest ---------- */

/* A segment's manifest entry: the bytes sjson_encode writes for its tree
 * ({"file","index" when sealed,"max","min","records","ordered","compacted"
 * when so}), written without one: every roll rewrites the entry of every
 * sealed segment, and a tree per entry made a put's cost grow with the log
 * (11 -> 24 us a put over 50,000 puts in 16 KiB segments, on tmpfs). */
static void seg_encode(buf *b, const seg *g, bool sealed)
{
    buf_append(b, "{\"file\":", 8);
    sjson_encode_string(b, g->file, strlen(g->file));
    if (sealed) {
        buf_append(b, ",\"index\":", 9);
        sjson_encode_string(b, g->index, strlen(g->index));
    }
    buf_append(b, ",\"max\":", 7);
    if (g->has_minmax)
        sjson_encode_string(b, g->max, strlen(g->max));
    else
        buf_append(b, "null", 4);
    buf_append(b, ",\"min\":", 7);
    if (g->has_minmax)
        sjson_encode_string(b, g->min, strlen(g->min));
    else
        buf_append(b, "null", 4);
    buf_printf(b, ",\"records\":%lld,\"ordered\":%s", g->records, g->ordered ? "true" : "false");
    if (sealed && g->compacted)
        buf_append(b, ",\"compacted\":true", 17);
    buf_appendc(b, '}');
}

int seglog__manifest_write(seglog *s, storh_err *err)
{
    buf b = BUF_INIT;
    buf_printf(&b, "{\"nextSegment\":%lld,\"sealed\":[", s->next_segment);
    for (size_t i = 0; i + 1 < s->nsegs; i++) {
        if (i)
            buf_appendc(&b, ',');
        seg_encode(&b, &s->segs[i], true);
    }
    buf_append(&b, "],\"active\":", 11);
    seg_encode(&b, seglog__active(s), false);
    buf_append(&b, "}\n", 2);
    int rc = buf_failed(&b) ? storh_err_set(err, STORH_ENOMEM, "Out of memory.") : 0;
    char path[PATH_MAX];
    if (!rc)
        rc = fsx_pathf(path, err, "%s/manifest.jsonc", s->dir);
    if (!rc && fault_fails("manifest", s->dir)) /* as a full disk */
        rc = storh_err_sys(err, ENOSPC, "Could not write %s", path);
    if (!rc)
        rc = fsx_publish(path, b.data, b.len, err);
    if (!rc)
        stat(path, &s->manifest_st);
    buf_free(&b);
    return rc;
}

int seglog__manifest_load(seglog *s, bool *exists, storh_err *err)
{
    char path[PATH_MAX];
    int rc = fsx_pathf(path, err, "%s/manifest.jsonc", s->dir);
    if (rc)
        return rc;
    /* stat first: a manifest replaced after the read is then seen as
     * changed by the next check, never taken for the one that was read */
    struct stat st;
    bool have_st = stat(path, &st) == 0;
    buf b = BUF_INIT;
    rc = fsx_read_all(path, &b, err);
    *exists = rc != STORH_ENOTFOUND;
    if (rc) {
        buf_free(&b);
        return rc == STORH_ENOTFOUND ? 0 : rc;
    }
    storh_err jerr;
    json_t *m = sjson_decode_jsonc_object(b.data, b.len, &jerr);
    buf_free(&b);
    if (!m)
        return storh_err_set(err, STORH_ECORRUPT, "Unreadable log manifest %s: %s", path, jerr.msg);
    seglog__segs_free(s);
    json_t *sealed = json_object_get(m, "sealed"), *act = json_object_get(m, "active");
    const char *af = json_string_value(json_object_get(act, "file"));
    rc = 0;
    size_t i;
    json_t *e;
    json_array_foreach (sealed, i, e) {
        const char *f = json_string_value(json_object_get(e, "file"));
        const char *ix = json_string_value(json_object_get(e, "index"));
        if (!f || !seglog__safe_file_name(f) || (ix && !seglog__safe_file_name(ix))) {
            rc = storh_err_set(err, STORH_ECORRUPT, "Log manifest names a bad segment file.");
            break;
        }
        seg *g = seglog__segs_push(s, f, ix);
        if (!g) {
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            break;
        }
        g->compacted = json_is_true(json_object_get(e, "compacted"));
    }
    if (!rc && (!af || !seglog__safe_file_name(af)))
        rc = storh_err_set(err, STORH_ECORRUPT, "Log manifest has no valid active segment.");
    if (!rc && !seglog__segs_push(s, af, NULL))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    json_t *ns = json_object_get(m, "nextSegment");
    s->next_segment = json_is_integer(ns) ? json_integer_value(ns) : 2;
    json_decref(m);
    if (have_st)
        s->manifest_st = st;
    else
        memset(&s->manifest_st, 0, sizeof s->manifest_st);
    return rc;
}

bool seglog__manifest_changed(seglog *s)
{
    struct stat st;
    if (!s->manifest_path[0] || stat(s->manifest_path, &st) != 0)
        return true;
    return st.st_ino != s->manifest_st.st_ino || st.st_size != s->manifest_st.st_size ||
           st.st_mtim.tv_sec != s->manifest_st.st_mtim.tv_sec ||
           st.st_mtim.tv_nsec != s->manifest_st.st_mtim.tv_nsec;
}

long long seglog__seg_number(const char *file)
{
    if (strncmp(file, "seg-", 4) != 0)
        return 0;
    return strtoll(file + 4, NULL, 10);
}

int seglog__touch(const char *path, storh_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not create segment %s", path);
    close(fd);
    return 0;
}

int seglog__open_active(seglog *s, storh_err *err)
{
    char path[PATH_MAX];
    int rc = seglog__seg_path(s, seglog__active(s)->file, path, err);
    if (rc)
        return rc;
    int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        /* named by the manifest, not there (a roll whose directory sync
         * failed took it back, a hand-made log): made, and its name made
         * durable before anything appended to it can be acknowledged */
        char dir[PATH_MAX];
        fsx_dirname(path, dir, sizeof dir);
        fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
        if (fd >= 0 && (rc = fsx_fsync_dir(dir, err)) != 0) {
            close(fd);
            return rc;
        }
    }
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open active segment %s", path);
    if (s->active_fd >= 0) {
        rc = gcommit_switch(&s->gc, fd, seglog__active(s)->size, err); /* closes the old fd */
        if (rc) {
            close(fd);
            return rc;
        }
    } else {
        gcommit_init(&s->gc, &s->mu, fd, seglog__active(s)->size);
        const char *slash = strrchr(s->dir, '/');
        gcommit_label(&s->gc, WSTATS_LOG, slash ? slash + 1 : s->dir);
    }
    s->active_fd = fd;
    return 0;
}

/* compact-* outputs the manifest does not name are leftovers of a
 * compaction that crashed before its manifest swap; seg-* files numbered
 * from nextSegment on that it does not name are bulk batches that crashed
 * before theirs (older unnamed seg-* files are compaction inputs, kept for
 * readers as storh keeps them). */
void seglog__remove_unreferenced(seglog *s)
{
    char dir[PATH_MAX];
    if (fsx_pathf(dir, NULL, "%s/segments", s->dir))
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        size_t nl = strlen(n);
        bool uncommitted =
            seglog__seg_number(n) >= s->next_segment && nl > 7 && !strcmp(n + nl - 7, ".ndjson");
        if (strncmp(n, "compact-", 8) != 0 && !uncommitted)
            continue;
        bool referenced = false;
        for (size_t i = 0; i < s->nsegs && !referenced; i++)
            referenced = !strcmp(n, s->segs[i].file) || !strcmp(n, s->segs[i].index);
        if (!referenced) {
            char p[PATH_MAX];
            if (!fsx_pathf(p, NULL, "%s/%s", dir, n))
                unlink(p);
        }
    }
    closedir(d);
}

int seglog__write_sparse(seglog *s, seg *g, storh_err *err)
{
    return seglog__write_sparse_as(s, g, SPARSE_PUBLISH, err);
}

int seglog__write_sparse_as(seglog *s, seg *g, int how, storh_err *err)
{
    json_t *entries = json_array();
    for (size_t i = 0; i < g->nsp; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "id", json_stringn(g->sp[i].id, UUID7_LEN));
        json_object_set_new(e, "offset", json_integer((json_int_t)g->sp[i].off));
        json_array_append_new(entries, e);
    }
    json_t *o = json_pack("{so}", "entries", entries);
    buf b = BUF_INIT;
    int rc = sjson_encode_doc(&b, o, 0, err);
    json_decref(o);
    char path[PATH_MAX];
    if (!rc)
        rc = seglog__seg_path(s, g->index, path, err);
    if (!rc && how == SPARSE_SYNC && unlink(path) != 0 && errno != ENOENT)
        rc = storh_err_sys(err, errno, "Could not replace %s", path); /* an earlier roll's */
    if (!rc)
        rc = how == SPARSE_PUBLISH ? fsx_publish(path, b.data, b.len, err)
                                   : fsx_write_file(path, b.data, b.len, how == SPARSE_SYNC, err);
    buf_free(&b);
    return rc;
}

void seglog__index_name_for(const char *file, char *out)
{
    size_t n = strlen(file);
    if (n > 7 && !strcmp(file + n - 7, ".ndjson"))
        n -= 7;
    snprintf(out, NAME_CAP, "%.*s.idx.jsonc", (int)n, file);
}

/* Seals the active segment (if it has lines) and starts a new one, all
 * under the mutex (nothing here waits on a condition that releases it, so
 * no append can land in between). The manifest that names the new segment
 * is the commit point: the old segment is durable before it is written, and
 * nothing in memory switches until it is. When it cannot be written (a full
 * disk) the old segment stays active, unchanged but for a sparse index no
 * manifest names, and the next append retries the roll. */
int seglog__roll(seglog *s, storh_err *err)
{
    seg *a = seglog__active(s);
    if (a->records == 0)
        return 0;
    seglog__index_name_for(a->file, a->index);
    /* in place: no manifest names it until the roll's, and the directory
     * fsync below makes its name durable with the new segment's */
    int rc = seglog__write_sparse_as(s, a, SPARSE_SYNC, err);
    if (rc) {
        a->index[0] = '\0';
        return rc;
    }
    long long n = seglog__seg_number(a->file) + 1;
    if (n < s->next_segment)
        n = s->next_segment;
    char file[NAME_CAP], path[PATH_MAX];
    struct stat st;
    for (;; n++) {
        snprintf(file, sizeof file, "seg-%06lld.ndjson", n);
        if ((rc = seglog__seg_path(s, file, path, err))) {
            a->index[0] = '\0';
            return rc;
        }
        if (stat(path, &st) != 0)
            break;
    }
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        a->index[0] = '\0';
        return storh_err_sys(err, errno, "Could not create segment %s", path);
    }
    long long old_next = s->next_segment;
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    if ((rc = fsx_fsync_dir(dir, err)) || (rc = gcommit_flush(&s->gc, err)))
        goto undo;
    if (!seglog__segs_push(s, file, NULL)) {
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        goto undo;
    }
    s->segs[s->nsegs - 1].size = 0;
    s->next_segment = n + 1;
    if ((rc = seglog__manifest_write(s, err)) != 0) {
        free(s->segs[s->nsegs - 1].sp);
        s->nsegs--;
        s->next_segment = old_next;
        goto undo;
    }
    /* flushed above, with the mutex held since: this only switches */
    if ((rc = gcommit_switch(&s->gc, fd, 0, err)) != 0)
        return rc; /* poisoned: the store refuses writes until storhd restarts */
    s->active_fd = fd;
    s->need_lf = false;
    estats_add(ESTAT_LOG_ROLL, 1);
    return 0;
undo:
    close(fd);
    unlink(path);
    seglog__active(s)->index[0] = '\0';
    estats_add(ESTAT_LOG_ROLL_FAILED, 1);
    return rc;
}

/* The LF a valid but unterminated last line lacks, before any append. */
