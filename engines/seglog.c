#include "seglog.h"

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
#include "frame.h"
#include "fsx.h"
#include "gcommit.h"
#include "idmap.h"
#include "sjson.h"
#include "writers.h"
#include "seglog_int.h"

/* ---------- helpers ---------- */

seg *seglog__active(seglog *s)
{
    return &s->segs[s->nsegs - 1];
}

int seglog__seg_path(const seglog *s, const char *file, char *out, storh_err *err)
{
    return fsx_pathf(out, err, "%s/segments/%s", s->dir, file);
}

bool seglog__safe_file_name(const char *f)
{
    if (!f[0] || f[0] == '.' || strlen(f) >= NAME_CAP)
        return false;
    for (const char *p = f; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

void seglog__seg_reset_stats(seg *g)
{
    g->has_minmax = false;
    g->ordered = true;
    g->records = 0;
    g->nsp = 0;
    g->min[0] = g->max[0] = '\0';
}

void seglog__segs_free(seglog *s)
{
    for (size_t i = 0; i < s->nsegs; i++)
        free(s->segs[i].sp);
    free(s->segs);
    s->segs = NULL;
    s->nsegs = 0;
}

seg *seglog__segs_push(seglog *s, const char *file, const char *index)
{
    seg *n = realloc(s->segs, (s->nsegs + 1) * sizeof *n);
    if (!n)
        return NULL;
    s->segs = n;
    seg *g = &s->segs[s->nsegs++];
    memset(g, 0, sizeof *g);
    snprintf(g->file, sizeof g->file, "%s", file);
    snprintf(g->index, sizeof g->index, "%s", index ? index : "");
    seglog__seg_reset_stats(g);
    return g;
}

json_t *seglog_envelope_data(const json_t *env)
{
    return sjson_string_keyed(json_object_get(env, "data"));
}

/* op and id of an envelope; canonical put/delete lines skip the JSON parse. */
static int parse_envelope(const char *j, size_t jl, int *op, char id[UUID7_LEN + 1])
{
    if (jl > PUT_PREFIX_LEN + UUID7_LEN + 9 && !memcmp(j, PUT_PREFIX, PUT_PREFIX_LEN) &&
        !memcmp(j + PUT_PREFIX_LEN + UUID7_LEN, "\",\"data\":", 9) && j[jl - 1] == '}') {
        *op = OP_PUT;
        memcpy(id, j + PUT_PREFIX_LEN, UUID7_LEN);
        id[UUID7_LEN] = '\0';
        return 0;
    }
    if (jl == DEL_PREFIX_LEN + UUID7_LEN + 2 && !memcmp(j, DEL_PREFIX, DEL_PREFIX_LEN) &&
        !memcmp(j + jl - 2, "\"}", 2)) {
        *op = OP_DELETE;
        memcpy(id, j + DEL_PREFIX_LEN, UUID7_LEN);
        id[UUID7_LEN] = '\0';
        return 0;
    }
    json_t *v = sjson_loadb(j, jl, JSON_ALLOW_NUL, NULL);
    json_t *o = json_object_get(v, "op"), *i = json_object_get(v, "id");
    int rc = -1;
    if (json_is_object(v) && json_is_string(o) && json_is_string(i) &&
        json_string_length(i) == UUID7_LEN) {
        const char *ops = json_string_value(o);
        *op = !strcmp(ops, "put") ? OP_PUT : !strcmp(ops, "delete") ? OP_DELETE : OP_OTHER;
        memcpy(id, json_string_value(i), UUID7_LEN + 1);
        rc = 0;
    }
    json_decref(v);
    return rc;
}

/* A line [p, p+n) (no LF) is a valid record line. */
bool seglog__line_valid(const char *p, size_t n, int *op, char id[UUID7_LEN + 1])
{
    const char *j;
    size_t jl;
    return seglog__line_envelope(p, n, op, id, &j, &jl);
}

bool seglog__line_envelope(const char *p, size_t n, int *op, char id[UUID7_LEN + 1],
                           const char **json, size_t *jlen)
{
    return frame_decode(p, n, false, json, jlen, NULL) == 0 &&
           parse_envelope(*json, *jlen, op, id) == 0;
}

/* A line of id at off joins g's stats (min, max, ordered, records) and,
 * every interval-th line, its sparse offsets. */
void seglog__seg_note(seg *g, int interval, const char *id, uint64_t off)
{
    if (g->records % interval == 0) {
        if (g->nsp == g->capsp) {
            size_t cap = g->capsp ? g->capsp * 2 : 16;
            sparse_ent *n = realloc(g->sp, cap * sizeof *n);
            if (n) {
                g->sp = n;
                g->capsp = cap;
            }
        }
        if (g->nsp < g->capsp) {
            memcpy(g->sp[g->nsp].id, id, UUID7_LEN);
            g->sp[g->nsp++].off = off;
        }
    }
    if (!g->has_minmax) {
        memcpy(g->min, id, UUID7_LEN + 1);
        memcpy(g->max, id, UUID7_LEN + 1);
        g->has_minmax = true;
    } else {
        if (memcmp(id, g->max, UUID7_LEN) < 0)
            g->ordered = false;
        if (memcmp(id, g->min, UUID7_LEN) < 0)
            memcpy(g->min, id, UUID7_LEN + 1);
        if (memcmp(id, g->max, UUID7_LEN) > 0)
            memcpy(g->max, id, UUID7_LEN + 1);
    }
    g->records++;
}

void seglog__apply(seglog *s, uint32_t si, uint64_t off, int op, const char *id, const char *line,
                   size_t len)
{
    seglog__seg_note(&s->segs[si], s->o.sparse_interval, id, off);
    bool created = false;
    live *v = idmap_put(&s->state, id, &created);
    if (s->counters)
        seglog__counters_note(s, op, created || (v && v->deleted), line, len);
    if (v) {
        v->seg = si;
        v->off = off;
        v->deleted = op == OP_DELETE;
        v->other = op == OP_OTHER;
    }
}

static void note_bad(seglog *s, uint32_t si, uint64_t off, uint64_t len)
{
    bad_line *n = realloc(s->bad, (s->nbad + 1) * sizeof *n);
    if (!n)
        return;
    s->bad = n;
    s->bad[s->nbad++] = (bad_line){si, off, len};
}

/* Applies the lines of segment si held in b, which starts at segment offset
 * base and has len bytes. Returns the segment offset after the last whole
 * line; *torn tells whether an invalid unterminated tail follows it. */
uint64_t seglog__scan_lines(seglog *s, uint32_t si, const char *b, uint64_t base, uint64_t len,
                            bool *torn)
{
    uint64_t pos = 0;
    *torn = false;
    bool last_active = si == s->nsegs - 1;
    while (pos < len) {
        const char *nl = memchr(b + pos, '\n', len - pos);
        uint64_t end = nl ? (uint64_t)(nl - b) : len;
        int op;
        char id[UUID7_LEN + 1];
        bool ok = seglog__line_valid(b + pos, end - pos, &op, id);
        if (!nl) {
            if (!ok) {
                *torn = true;
                return base + pos;
            }
            seglog__apply(s, si, base + pos, op, id, b + pos, end - pos);
            if (last_active)
                s->need_lf = true;
            return base + len;
        }
        if (ok)
            seglog__apply(s, si, base + pos, op, id, b + pos, end - pos);
        else if (end > pos) /* an empty line is not worth reporting */
            note_bad(s, si, base + pos, end - pos);
        pos = end + 1;
    }
    return base + pos;
}

/* Rebuilds the state index from every listed segment. */
int seglog__replay(seglog *s, int torn_mode, storh_err *err)
{
    json_decref(s->counters);
    s->counters = NULL;
    idmap_clear(&s->state);
    s->nbad = 0;
    s->need_lf = false;
    for (uint32_t i = 0; i < s->nsegs; i++) {
        seg *g = &s->segs[i];
        seglog__seg_reset_stats(g);
        char path[PATH_MAX];
        int rc = seglog__seg_path(s, g->file, path, err);
        if (rc)
            return rc;
        buf b = BUF_INIT;
        rc = fsx_read_all(path, &b, err);
        if (rc == STORH_ENOTFOUND) { /* storh skips a missing listed segment */
            g->size = 0;
            continue;
        }
        if (rc)
            return rc;
        bool torn;
        uint64_t end = seglog__scan_lines(s, i, b.data ? b.data : "", 0, b.len, &torn);
        g->size = b.len;
        if (torn && torn_mode == TORN_LEAVE)
            g->size = end;
        if (torn && torn_mode == TORN_TRUNCATE) {
            if (truncate(path, (off_t)end) != 0) {
                buf_free(&b);
                return storh_err_sys(err, errno, "Could not truncate torn tail of %s", path);
            }
            int fd = open(path, O_WRONLY | O_CLOEXEC);
            if (fd < 0 || fsync(fd) != 0) {
                int e = errno;
                if (fd >= 0)
                    close(fd);
                buf_free(&b);
                return storh_err_sys(err, e, "Could not sync %s", path);
            }
            close(fd);
            g->size = end;
        }
        buf_free(&b);
    }
    return 0;
}

void seglog_opts_default(seglog_opts *o)
{
    o->max_segment_bytes = 1024 * 1024;
    o->sparse_interval = 64;
    o->partition = SEGLOG_PART_NONE;
    o->partition_ts_ms = -1;
}

int seglog_dir(const char *root, const char *name, const seglog_opts *o, char *out, storh_err *err)
{
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/')
        rl--;
    if (o->partition == SEGLOG_PART_NONE)
        return fsx_pathf(out, err, "%.*s/%s", (int)rl, root, name);
    int64_t ms = o->partition_ts_ms;
    if (ms < 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char part[16];
    strftime(part, sizeof part, o->partition == SEGLOG_PART_DAILY ? "%Y-%m-%d" : "%Y-%m", &tm);
    return fsx_pathf(out, err, "%.*s/%s/partitions/%s", (int)rl, root, name, part);
}

int seglog__lock(seglog *s, storh_err *err)
{
    return fsx_lock_acquire(&s->lock, err);
}

void seglog__unlock(seglog *s)
{
    fsx_lock_release(&s->lock);
}

int seglog_open(const char *root, const char *name, const seglog_opts *o, bool create, seglog **out,
                storh_err *err)
{
    if (o->max_segment_bytes < 256)
        return storh_err_set(err, STORH_EINVAL, "Segment size must be at least 256 bytes.");
    if (o->sparse_interval < 1)
        return storh_err_set(err, STORH_EINVAL, "Sparse index interval must be at least 1.");
    seglog *s = calloc(1, sizeof *s);
    if (!s)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    s->o = *o;
    s->active_fd = -1;
    s->lock.fd = -1;
    pthread_mutex_init(&s->mu, NULL);
    int rc = seglog_dir(root, name, o, s->dir, err);
    if (!rc)
        rc = fsx_pathf(s->manifest_path, err, "%s/manifest.jsonc", s->dir);
    if (rc || idmap_init(&s->state, sizeof(live)) != 0) {
        if (!rc)
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        pthread_mutex_destroy(&s->mu);
        free(s);
        return rc;
    }
    char p[PATH_MAX];
    struct stat st;
    if (!create && (fsx_pathf(p, NULL, "%s/manifest.jsonc", s->dir) || stat(p, &st) != 0)) {
        seglog_close(s);
        return storh_err_set(err, STORH_ENOTFOUND, "No such log: %s", name);
    }
    if (!rc)
        rc = fsx_pathf(p, err, "%s/segments", s->dir);
    if (!rc)
        rc = fsx_mkdirs(p, true, err);
    if (!rc)
        rc = fsx_pathf(p, err, "%s/collection.lock", s->dir);
    if (!rc)
        rc = fsx_lock_open(&s->lock, p, err);
    if (!rc)
        rc = seglog__lock(s, err);
    if (rc) {
        seglog_close(s);
        return rc;
    }
    bool exists = false;
    rc = writers_cleanup_on_open(s->dir, NULL, err);
    if (!rc)
        rc = writers_identity(s->identity, err);
    if (!rc)
        rc = writers_register(s->dir, s->identity, err);
    if (!rc)
        rc = seglog__manifest_load(s, &exists, err);
    if (!rc && exists)
        seglog__remove_unreferenced(s);
    if (!rc && !exists) {
        seglog__segs_free(s);
        s->next_segment = 2;
        if (!seglog__segs_push(s, "seg-000001.ndjson", NULL))
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    if (!rc)
        rc = seglog__seg_path(s, seglog__active(s)->file, p, err);
    if (!rc && stat(p, &st) != 0) {
        rc = seglog__touch(p, err);
        char d[PATH_MAX];
        fsx_dirname(p, d, sizeof d);
        if (!rc)
            rc = fsx_fsync_dir(d, err);
    }
    if (!rc)
        rc = seglog__replay(s, TORN_TRUNCATE, err);
    if (!rc)
        rc = seglog__manifest_write(s, err);
    if (!rc)
        rc = seglog__open_active(s, err);
    seglog__unlock(s);
    if (rc) {
        seglog_close(s);
        return rc;
    }
    s->watch = logwatch_new(s->dir);
    *out = s;
    return 0;
}

void seglog_close(seglog *s)
{
    if (!s)
        return;
    if (s->active_fd >= 0) {
        gcommit_destroy(&s->gc);
        close(s->active_fd);
    }
    if (s->identity[0])
        writers_unregister(s->dir, s->identity);
    fsx_lock_close(&s->lock);
    logwatch_free(s->watch);
    seglog__segs_free(s);
    idmap_free(&s->state);
    json_decref(s->counters);
    buf_free(&s->count_key);
    free(s->bad);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Under mu: catch up with what other processes published, at the cost of a
 * stat of the manifest and an fstat of the active segment when nothing
 * changed, or of one empty read of the log watch when it saw nothing since
 * the last such check found everything read. A new manifest (a roll or a compaction elsewhere)
 * replays the log; lines appended to the active segment are applied from where this process stopped
 * reading. locked: the flock is held too (a writer about to append); otherwise this is a read, and
 * a line another process is still writing (an invalid unterminated tail) is left for the next read.
 */
static int catch_up_mode(seglog *s, bool locked, storh_err *err)
{
    logwatch_mark wm;
    if (s->watch && logwatch_quiet(s->watch, &wm))
        return 0;
    if (seglog__manifest_changed(s)) {
        /* the old list as a prefix of the new one (a roll elsewhere) keeps
         * every index and offset; anything else is a new generation */
        size_t nold = s->nsegs;
        char(*old)[NAME_CAP] = nold ? malloc(nold * sizeof *old) : NULL;
        for (size_t i = 0; old && i < nold; i++)
            memcpy(old[i], s->segs[i].file, NAME_CAP);
        bool exists;
        int rc = seglog__manifest_load(s, &exists, err);
        bool same = old || !nold;
        for (size_t i = 0; same && i < nold; i++)
            same = i < s->nsegs && !strcmp(old[i], s->segs[i].file);
        free(old);
        if (!same)
            s->gen++;
        if (!rc)
            rc = seglog__replay(s, locked ? TORN_KEEP : TORN_LEAVE, err);
        if (!rc)
            rc = seglog__open_active(s, err);
        if (rc) /* half-loaded: every later call retries, none uses it */
            memset(&s->manifest_st, 0, sizeof s->manifest_st);
        return rc;
    }
    struct stat st;
    if (fstat(s->active_fd, &st) != 0)
        return storh_err_sys(err, errno, "Could not stat active segment");
    seg *a = seglog__active(s);
    if ((uint64_t)st.st_size <= a->size) {
        if (s->watch)
            logwatch_validated(s->watch, &wm);
        return 0;
    }
    /* another writer appended to the active segment */
    uint64_t from = a->size, len = (uint64_t)st.st_size - from;
    char *b = malloc(len ? len : 1);
    if (!b)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    ssize_t r = pread(s->active_fd, b, len, (off_t)from);
    if (r < 0) {
        free(b);
        return storh_err_sys(err, errno, "Could not read active segment");
    }
    /* scan_lines works on segment offsets: shift the buffer view */
    bool torn;
    s->need_lf = false;
    uint64_t end = seglog__scan_lines(s, (uint32_t)(s->nsegs - 1), b, from, (uint64_t)r, &torn);
    a->size = torn && !locked ? end : from + (uint64_t)r;
    gcommit_written(&s->gc, a->size);
    free(b);
    if (s->watch && a->size == (uint64_t)st.st_size) /* no line left half read */
        logwatch_validated(s->watch, &wm);
    return 0;
}

/* Under mu and the flock, before a write. */
int seglog__catch_up(seglog *s, storh_err *err)
{
    return catch_up_mode(s, true, err);
}

/* Under mu, before a read: every read sees what was published before it
 * began, by this process or another (storh included). */
int seglog__refresh(seglog *s, storh_err *err)
{
    return catch_up_mode(s, false, err);
}

static int end_last_line(seglog *s, storh_err *err)
{
    if (!s->need_lf)
        return 0;
    if (write(s->active_fd, "\n", 1) != 1)
        return storh_err_sys(err, errno, "Could not write segment %s", seglog__active(s)->file);
    seglog__active(s)->size++;
    s->need_lf = false;
    return 0;
}

/* Writes len bytes at the end of the active segment; when a write fails
 * (a full disk) the segment is cut back to start, so no partial line stays
 * (if even that fails, the next append begins with an LF). */
static int write_tail(seglog *s, const char *data, size_t len, uint64_t start, storh_err *err)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(s->active_fd, data + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = errno;
            if (ftruncate(s->active_fd, (off_t)start) != 0)
                s->need_lf = true;
            return storh_err_sys(err, e, "Could not append to segment %s", seglog__active(s)->file);
        }
        done += (size_t)w;
    }
    return 0;
}

/* Under mu + flock: appends framed lines (nlines of them, each a canonical
 * put or delete) to the active segment and applies them. */
int seglog__append_lines(seglog *s, const char *lines, size_t len, gcommit_ticket *t,
                         storh_err *err)
{
    int rc = gcommit_check(&s->gc, err);
    if (!rc)
        rc = end_last_line(s, err);
    seg *a = seglog__active(s);
    uint64_t start = a->size;
    if (!rc)
        rc = write_tail(s, lines, len, start, err);
    if (rc)
        return rc;
    bool torn;
    seglog__scan_lines(s, (uint32_t)(s->nsegs - 1), lines, start, len, &torn);
    a->size = start + len;
    *t = gcommit_written(&s->gc, a->size);
    estats_add(ESTAT_LOG_APPEND, 1);
    /* the lines are in: a roll that fails now must not fail their append
     * (they are applied and will be synced); the next append retries it */
    storh_err roll_err;
    if (a->size >= s->o.max_segment_bytes)
        seglog__roll(s, &roll_err);
    return 0;
}

int seglog__encode_put(buf *line, const char *id, const json_t *data, storh_err *err)
{
    buf env = BUF_INIT;
    buf_append(&env, PUT_PREFIX, PUT_PREFIX_LEN);
    buf_appends(&env, id);
    buf_append(&env, "\",\"data\":", 9);
    int rc = sjson_encode(&env, data, 0, err);
    buf_appendc(&env, '}');
    if (!rc && buf_failed(&env))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (!rc)
        frame_encode(line, env.data, env.len);
    buf_free(&env);
    return rc;
}

int seglog__resolve_id(const char *id, char out[UUID7_LEN + 1], storh_err *err)
{
    if (!id)
        return uuid7_generate(out, -1, err);
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    memcpy(out, id, UUID7_LEN + 1);
    return 0;
}

/* Under the flock, after this process's own append: no other writer can
 * have written since the catch-up, so the events queued now are this
 * append's (and its roll's) and the state is what the files hold; the next
 * read or append needs no stat. */
static void settle_watch(seglog *s)
{
    logwatch_mark wm;
    if (s->watch && !logwatch_quiet(s->watch, &wm))
        logwatch_validated(s->watch, &wm);
}

/* Appends under the locks, then waits for the group fsync. */
static int append_durable(seglog *s, const char *lines, size_t len, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = seglog__lock(s, err);
    gcommit_ticket t = {0, 0};
    if (!rc) {
        rc = seglog__catch_up(s, err);
        if (!rc)
            rc = seglog__append_lines(s, lines, len, &t, err);
        if (!rc)
            settle_watch(s);
        seglog__unlock(s);
    }
    if (!rc)
        rc = gcommit_wait(&s->gc, t, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int seglog_put(seglog *s, const char *id, json_t *data, char out_id[UUID7_LEN + 1], storh_err *err)
{
    if (!json_is_object(data))
        return storh_err_set(err, STORH_EINVAL, "Log record data must be a JSON object.");
    int rc = seglog__resolve_id(id, out_id, err);
    if (rc)
        return rc;
    buf line = BUF_INIT;
    rc = seglog__encode_put(&line, out_id, data, err);
    if (!rc)
        rc = append_durable(s, line.data, line.len, err);
    buf_free(&line);
    return rc;
}

static bool is_live(seglog *s, const char *id)
{
    live *v = idmap_get(&s->state, id);
    return v && !v->deleted;
}

int seglog_delete(seglog *s, const char *id, bool *existed, storh_err *err)
{
    *existed = false;
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    char env[DEL_PREFIX_LEN + UUID7_LEN + 3];
    snprintf(env, sizeof env, "%s%s\"}", DEL_PREFIX, id);
    buf line = BUF_INIT;
    frame_encode(&line, env, strlen(env));
    pthread_mutex_lock(&s->mu);
    int rc = seglog__lock(s, err);
    gcommit_ticket t = {0, 0};
    if (!rc) {
        rc = seglog__catch_up(s, err);
        if (!rc && (*existed = is_live(s, id)))
            rc = seglog__append_lines(s, line.data, line.len, &t, err);
        if (!rc && *existed)
            settle_watch(s);
        seglog__unlock(s);
    }
    if (!rc && *existed)
        rc = gcommit_wait(&s->gc, t, err);
    pthread_mutex_unlock(&s->mu);
    buf_free(&line);
    return rc;
}

/* Reads the line at (file, off) into out (without LF). */
static int read_line_at(seglog *s, const char *file, uint64_t off, buf *out, storh_err *err)
{
    char path[PATH_MAX];
    int rc = seglog__seg_path(s, file, path, err);
    if (rc)
        return rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open segment: %s", file);
    size_t chunk = 4096;
    for (;;) {
        if (!buf_reserve(out, chunk)) {
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            break;
        }
        ssize_t r = pread(fd, out->data + out->len, chunk, (off_t)(off + out->len));
        if (r < 0) {
            rc = storh_err_sys(err, errno, "Could not read segment record.");
            break;
        }
        char *nl = memchr(out->data + out->len, '\n', (size_t)r);
        out->len += (size_t)r;
        if (nl) {
            out->len = (size_t)(nl - out->data);
            break;
        }
        if (r == 0)
            break;
        chunk *= 2;
    }
    out->data[out->len] = '\0';
    close(fd);
    estats_add(ESTAT_LOG_READ, 1);
    return rc;
}

int seglog_get(seglog *s, const char *id, json_t **data, storh_err *err)
{
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    char file[NAME_CAP];
    uint64_t off;
    pthread_mutex_lock(&s->mu);
    int rc = seglog__refresh(s, err);
    live *v = rc ? NULL : idmap_get(&s->state, id);
    bool found = v && !v->deleted;
    if (found) {
        snprintf(file, sizeof file, "%s", s->segs[v->seg].file);
        off = v->off;
    }
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return rc;
    if (!found)
        return storh_err_set(err, STORH_ENOTFOUND, "Log record not found: %s", id);
    buf line = BUF_INIT;
    rc = read_line_at(s, file, off, &line, err);
    if (!rc)
        rc = seglog__decode_put(line.data, line.len, id, data, err);
    buf_free(&line);
    return rc;
}
