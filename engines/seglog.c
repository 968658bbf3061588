#include "seglog.h"

#include <dirent.h>
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
#include "sjson.h"
#include "writers.h"

#define NAME_CAP 64
#define BATCH_CHUNK (1024 * 1024)
#define PUT_PREFIX "{\"op\":\"put\",\"id\":\""
#define PUT_PREFIX_LEN 18
#define DEL_PREFIX "{\"op\":\"delete\",\"id\":\""
#define DEL_PREFIX_LEN 21

enum { OP_PUT = 1, OP_DELETE, OP_OTHER };

typedef struct sparse_ent {
    char id[UUID7_LEN];
    uint64_t off;
} sparse_ent;

typedef struct seg {
    char file[NAME_CAP], index[NAME_CAP];
    char min[UUID7_LEN + 1], max[UUID7_LEN + 1];
    bool has_minmax, ordered, compacted;
    long long records;
    uint64_t size;
    sparse_ent *sp;
    size_t nsp, capsp;
} seg;

typedef struct live {
    uint32_t seg;
    uint8_t deleted;
    uint8_t other;
    uint64_t off;
} live;

typedef struct bad_line {
    uint32_t seg;
    uint64_t off, len;
} bad_line;

struct seglog {
    char dir[PATH_MAX];
    seglog_opts o;
    pthread_mutex_t mu;
    fsx_lock lock;
    char identity[32];
    seg *segs; /* sealed in manifest order, then the active one last */
    size_t nsegs;
    long long next_segment;
    int active_fd;
    bool need_lf; /* the active segment ends with a valid line but no LF */
    idmap state;
    bad_line *bad;
    size_t nbad;
    struct stat manifest_st;
    gcommit gc;
    unsigned long tmp_seq;
    /* equality counters, storh's count() fast path: field -> {SJSON(value)
     * -> count}, built on the first count of a field, kept up to date by
     * appends of new ids, and dropped (all of them) by a re-put or a delete */
    json_t *counters;
};

#define COUNTER_MAX_VALUES 64

/* ---------- helpers ---------- */

static seg *active(seglog *s)
{
    return &s->segs[s->nsegs - 1];
}

static int seg_path(const seglog *s, const char *file, char *out, storh_err *err)
{
    return fsx_pathf(out, err, "%s/segments/%s", s->dir, file);
}

static bool safe_file_name(const char *f)
{
    if (!f[0] || f[0] == '.' || strlen(f) >= NAME_CAP)
        return false;
    for (const char *p = f; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

static void seg_reset_stats(seg *g)
{
    g->has_minmax = false;
    g->ordered = true;
    g->records = 0;
    g->nsp = 0;
    g->min[0] = g->max[0] = '\0';
}

static void segs_free(seglog *s)
{
    for (size_t i = 0; i < s->nsegs; i++)
        free(s->segs[i].sp);
    free(s->segs);
    s->segs = NULL;
    s->nsegs = 0;
}

static seg *segs_push(seglog *s, const char *file, const char *index)
{
    seg *n = realloc(s->segs, (s->nsegs + 1) * sizeof *n);
    if (!n)
        return NULL;
    s->segs = n;
    seg *g = &s->segs[s->nsegs++];
    memset(g, 0, sizeof *g);
    snprintf(g->file, sizeof g->file, "%s", file);
    snprintf(g->index, sizeof g->index, "%s", index ? index : "");
    seg_reset_stats(g);
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
static bool line_valid(const char *p, size_t n, int *op, char id[UUID7_LEN + 1])
{
    const char *j;
    size_t jl;
    return frame_decode(p, n, false, &j, &jl, NULL) == 0 && parse_envelope(j, jl, op, id) == 0;
}

static void counters_note(seglog *s, int op, bool created, const char *line, size_t len);

/* A line of id at off joins g's stats (min, max, ordered, records) and,
 * every interval-th line, its sparse offsets. */
static void seg_note(seg *g, int interval, const char *id, uint64_t off)
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

static void apply(seglog *s, uint32_t si, uint64_t off, int op, const char *id, const char *line,
                  size_t len)
{
    seg_note(&s->segs[si], s->o.sparse_interval, id, off);
    bool created = false;
    live *v = idmap_put(&s->state, id, &created);
    if (s->counters)
        counters_note(s, op, created || (v && v->deleted), line, len);
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
static uint64_t scan_lines(seglog *s, uint32_t si, const char *b, uint64_t base, uint64_t len,
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
        bool ok = line_valid(b + pos, end - pos, &op, id);
        if (!nl) {
            if (!ok) {
                *torn = true;
                return base + pos;
            }
            apply(s, si, base + pos, op, id, b + pos, end - pos);
            if (last_active)
                s->need_lf = true;
            return base + len;
        }
        if (ok)
            apply(s, si, base + pos, op, id, b + pos, end - pos);
        else if (end > pos) /* an empty line is not worth reporting */
            note_bad(s, si, base + pos, end - pos);
        pos = end + 1;
    }
    return base + pos;
}

/* What replay does with an invalid unterminated tail: a writer under the
 * flock cuts it (a torn write) or keeps its bytes counted (appends go after
 * it); a reader without the flock leaves it unread, since another process
 * may still be writing that line. */
enum { TORN_TRUNCATE, TORN_KEEP, TORN_LEAVE };

/* Rebuilds the state index from every listed segment. */
static int replay(seglog *s, int torn_mode, storh_err *err)
{
    json_decref(s->counters);
    s->counters = NULL;
    idmap_clear(&s->state);
    s->nbad = 0;
    s->need_lf = false;
    for (uint32_t i = 0; i < s->nsegs; i++) {
        seg *g = &s->segs[i];
        seg_reset_stats(g);
        char path[PATH_MAX];
        int rc = seg_path(s, g->file, path, err);
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
        uint64_t end = scan_lines(s, i, b.data ? b.data : "", 0, b.len, &torn);
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

/* ---------- manifest ---------- */

static json_t *seg_json(const seg *g, bool sealed)
{
    json_t *o = json_object();
    json_object_set_new(o, "file", json_string(g->file));
    if (sealed)
        json_object_set_new(o, "index", json_string(g->index));
    json_object_set_new(o, "max", g->has_minmax ? json_string(g->max) : json_null());
    json_object_set_new(o, "min", g->has_minmax ? json_string(g->min) : json_null());
    json_object_set_new(o, "records", json_integer(g->records));
    json_object_set_new(o, "ordered", json_boolean(g->ordered));
    if (sealed && g->compacted)
        json_object_set_new(o, "compacted", json_true());
    return o;
}

static int manifest_write(seglog *s, storh_err *err)
{
    json_t *sealed = json_array();
    for (size_t i = 0; i + 1 < s->nsegs; i++)
        json_array_append_new(sealed, seg_json(&s->segs[i], true));
    json_t *m = json_object();
    json_object_set_new(m, "nextSegment", json_integer(s->next_segment));
    json_object_set_new(m, "sealed", sealed);
    json_object_set_new(m, "active", seg_json(active(s), false));
    buf b = BUF_INIT;
    int rc = sjson_encode_doc(&b, m, 0, err);
    json_decref(m);
    char path[PATH_MAX];
    if (!rc)
        rc = fsx_pathf(path, err, "%s/manifest.jsonc", s->dir);
    if (!rc)
        rc = fsx_publish(path, b.data, b.len, err);
    if (!rc)
        stat(path, &s->manifest_st);
    buf_free(&b);
    return rc;
}

static int manifest_load(seglog *s, bool *exists, storh_err *err)
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
    segs_free(s);
    json_t *sealed = json_object_get(m, "sealed"), *act = json_object_get(m, "active");
    const char *af = json_string_value(json_object_get(act, "file"));
    rc = 0;
    size_t i;
    json_t *e;
    json_array_foreach(sealed, i, e)
    {
        const char *f = json_string_value(json_object_get(e, "file"));
        const char *ix = json_string_value(json_object_get(e, "index"));
        if (!f || !safe_file_name(f) || (ix && !safe_file_name(ix))) {
            rc = storh_err_set(err, STORH_ECORRUPT, "Log manifest names a bad segment file.");
            break;
        }
        seg *g = segs_push(s, f, ix);
        if (!g) {
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            break;
        }
        g->compacted = json_is_true(json_object_get(e, "compacted"));
    }
    if (!rc && (!af || !safe_file_name(af)))
        rc = storh_err_set(err, STORH_ECORRUPT, "Log manifest has no valid active segment.");
    if (!rc && !segs_push(s, af, NULL))
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

static bool manifest_changed(seglog *s)
{
    char path[PATH_MAX];
    struct stat st;
    if (fsx_pathf(path, NULL, "%s/manifest.jsonc", s->dir) || stat(path, &st) != 0)
        return true;
    return st.st_ino != s->manifest_st.st_ino || st.st_size != s->manifest_st.st_size ||
           st.st_mtim.tv_sec != s->manifest_st.st_mtim.tv_sec ||
           st.st_mtim.tv_nsec != s->manifest_st.st_mtim.tv_nsec;
}

static long long seg_number(const char *file)
{
    if (strncmp(file, "seg-", 4) != 0)
        return 0;
    return strtoll(file + 4, NULL, 10);
}

static int touch(const char *path, storh_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not create segment %s", path);
    close(fd);
    return 0;
}

static int open_active(seglog *s, storh_err *err)
{
    char path[PATH_MAX];
    int rc = seg_path(s, active(s)->file, path, err);
    if (rc)
        return rc;
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open active segment %s", path);
    if (s->active_fd >= 0) {
        rc = gcommit_switch(&s->gc, fd, active(s)->size, err); /* closes the old fd */
        if (rc) {
            close(fd);
            return rc;
        }
    } else {
        gcommit_init(&s->gc, &s->mu, fd, active(s)->size);
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
static void remove_unreferenced(seglog *s)
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
            seg_number(n) >= s->next_segment && nl > 7 && !strcmp(n + nl - 7, ".ndjson");
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

static int lock(seglog *s, storh_err *err)
{
    return fsx_lock_acquire(&s->lock, err);
}

static void unlock(seglog *s)
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
        rc = lock(s, err);
    if (rc) {
        seglog_close(s);
        return rc;
    }
    bool exists = false;
    rc = writers_cleanup_on_open(s->dir, err);
    if (!rc)
        rc = writers_identity(s->identity, err);
    if (!rc)
        rc = writers_register(s->dir, s->identity, err);
    if (!rc)
        rc = manifest_load(s, &exists, err);
    if (!rc && exists)
        remove_unreferenced(s);
    if (!rc && !exists) {
        segs_free(s);
        s->next_segment = 2;
        if (!segs_push(s, "seg-000001.ndjson", NULL))
            rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    if (!rc)
        rc = seg_path(s, active(s)->file, p, err);
    if (!rc && stat(p, &st) != 0) {
        rc = touch(p, err);
        char d[PATH_MAX];
        fsx_dirname(p, d, sizeof d);
        if (!rc)
            rc = fsx_fsync_dir(d, err);
    }
    if (!rc)
        rc = replay(s, TORN_TRUNCATE, err);
    if (!rc)
        rc = manifest_write(s, err);
    if (!rc)
        rc = open_active(s, err);
    unlock(s);
    if (rc) {
        seglog_close(s);
        return rc;
    }
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
    segs_free(s);
    idmap_free(&s->state);
    json_decref(s->counters);
    free(s->bad);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Under mu: catch up with what other processes published, at the cost of a
 * stat of the manifest and an fstat of the active segment when nothing
 * changed. A new manifest (a roll or a compaction elsewhere) replays the
 * log; lines appended to the active segment are applied from where this
 * process stopped reading. locked: the flock is held too (a writer about to
 * append); otherwise this is a read, and a line another process is still
 * writing (an invalid unterminated tail) is left for the next read. */
static int catch_up_mode(seglog *s, bool locked, storh_err *err)
{
    if (manifest_changed(s)) {
        bool exists;
        int rc = manifest_load(s, &exists, err);
        if (!rc)
            rc = replay(s, locked ? TORN_KEEP : TORN_LEAVE, err);
        if (!rc)
            rc = open_active(s, err);
        if (rc) /* half-loaded: every later call retries, none uses it */
            memset(&s->manifest_st, 0, sizeof s->manifest_st);
        return rc;
    }
    struct stat st;
    if (fstat(s->active_fd, &st) != 0)
        return storh_err_sys(err, errno, "Could not stat active segment");
    seg *a = active(s);
    if ((uint64_t)st.st_size <= a->size)
        return 0;
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
    uint64_t end = scan_lines(s, (uint32_t)(s->nsegs - 1), b, from, (uint64_t)r, &torn);
    a->size = torn && !locked ? end : from + (uint64_t)r;
    gcommit_written(&s->gc, a->size);
    free(b);
    return 0;
}

/* Under mu and the flock, before a write. */
static int catch_up(seglog *s, storh_err *err)
{
    return catch_up_mode(s, true, err);
}

/* Under mu, before a read: every read sees what was published before it
 * began, by this process or another (storh included). */
static int refresh(seglog *s, storh_err *err)
{
    return catch_up_mode(s, false, err);
}

static int write_sparse(seglog *s, seg *g, storh_err *err)
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
        rc = seg_path(s, g->index, path, err);
    if (!rc)
        rc = fsx_publish(path, b.data, b.len, err);
    buf_free(&b);
    return rc;
}

static void index_name_for(const char *file, char *out)
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
static int roll(seglog *s, storh_err *err)
{
    seg *a = active(s);
    if (a->records == 0)
        return 0;
    index_name_for(a->file, a->index);
    int rc = write_sparse(s, a, err);
    if (rc) {
        a->index[0] = '\0';
        return rc;
    }
    long long n = seg_number(a->file) + 1;
    if (n < s->next_segment)
        n = s->next_segment;
    char file[NAME_CAP], path[PATH_MAX];
    struct stat st;
    for (;; n++) {
        snprintf(file, sizeof file, "seg-%06lld.ndjson", n);
        if ((rc = seg_path(s, file, path, err))) {
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
    if (!segs_push(s, file, NULL)) {
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        goto undo;
    }
    s->segs[s->nsegs - 1].size = 0;
    s->next_segment = n + 1;
    if ((rc = manifest_write(s, err)) != 0) {
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
    active(s)->index[0] = '\0';
    estats_add(ESTAT_LOG_ROLL_FAILED, 1);
    return rc;
}

/* The LF a valid but unterminated last line lacks, before any append. */
static int end_last_line(seglog *s, storh_err *err)
{
    if (!s->need_lf)
        return 0;
    if (write(s->active_fd, "\n", 1) != 1)
        return storh_err_sys(err, errno, "Could not write segment %s", active(s)->file);
    active(s)->size++;
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
            return storh_err_sys(err, e, "Could not append to segment %s", active(s)->file);
        }
        done += (size_t)w;
    }
    return 0;
}

/* Under mu + flock: appends framed lines (nlines of them, each a canonical
 * put or delete) to the active segment and applies them. */
static int append_lines(seglog *s, const char *lines, size_t len, gcommit_ticket *t, storh_err *err)
{
    int rc = gcommit_check(&s->gc, err);
    if (!rc)
        rc = end_last_line(s, err);
    seg *a = active(s);
    uint64_t start = a->size;
    if (!rc)
        rc = write_tail(s, lines, len, start, err);
    if (rc)
        return rc;
    bool torn;
    scan_lines(s, (uint32_t)(s->nsegs - 1), lines, start, len, &torn);
    a->size = start + len;
    *t = gcommit_written(&s->gc, a->size);
    estats_add(ESTAT_LOG_APPEND, 1);
    /* the lines are in: a roll that fails now must not fail their append
     * (they are applied and will be synced); the next append retries it */
    storh_err roll_err;
    if (a->size >= s->o.max_segment_bytes)
        roll(s, &roll_err);
    return 0;
}

static int encode_put(buf *line, const char *id, const json_t *data, storh_err *err)
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

static int resolve_id(const char *id, char out[UUID7_LEN + 1], storh_err *err)
{
    if (!id)
        return uuid7_generate(out, -1, err);
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    memcpy(out, id, UUID7_LEN + 1);
    return 0;
}

/* Appends under the locks, then waits for the group fsync. */
static int append_durable(seglog *s, const char *lines, size_t len, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = lock(s, err);
    gcommit_ticket t = {0, 0};
    if (!rc) {
        rc = catch_up(s, err);
        if (!rc)
            rc = append_lines(s, lines, len, &t, err);
        unlock(s);
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
    int rc = resolve_id(id, out_id, err);
    if (rc)
        return rc;
    buf line = BUF_INIT;
    rc = encode_put(&line, out_id, data, err);
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
    int rc = lock(s, err);
    gcommit_ticket t = {0, 0};
    if (!rc) {
        rc = catch_up(s, err);
        if (!rc && (*existed = is_live(s, id)))
            rc = append_lines(s, line.data, line.len, &t, err);
        unlock(s);
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
    int rc = seg_path(s, file, path, err);
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

static int decode_put(const char *line, size_t len, const char *want_id, json_t **data,
                      storh_err *err)
{
    const char *j;
    size_t jl;
    int rc = frame_decode(line, len, false, &j, &jl, err);
    if (rc)
        return rc;
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

int seglog_get(seglog *s, const char *id, json_t **data, storh_err *err)
{
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    char file[NAME_CAP];
    uint64_t off;
    pthread_mutex_lock(&s->mu);
    int rc = refresh(s, err);
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
        rc = decode_put(line.data, line.len, id, data, err);
    buf_free(&line);
    return rc;
}

int seglog_count(seglog *s, size_t *count, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = refresh(s, err);
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
    seg_reset_stats(&b->g);
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
    int rc = resolve_id(json_is_string(id) ? json_string_value(id) : NULL, out_id, err);
    if (rc)
        return rc;
    buf_reset(&b->line);
    if ((rc = encode_put(&b->line, out_id, data, err)))
        return rc;
    if (fwrite(b->line.data, 1, b->line.len, b->f) != b->line.len)
        return storh_err_sys(err, errno, "Could not write spool file %s", b->path);
    seg_note(&b->g, b->s->o.sparse_interval, out_id, b->size);
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
    long long n = seg_number(active(s)->file) + 1;
    if (n < s->next_segment)
        n = s->next_segment;
    struct stat st;
    for (;; n++) {
        snprintf(file, NAME_CAP, "seg-%06lld.ndjson", n);
        int rc = seg_path(s, file, path, err);
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
        scan_lines(s, si, pend.data, at, cut, &torn);
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
        rc = catch_up(s, err);
    if (!rc)
        rc = gcommit_flush(&s->gc, err);
    if (rc)
        return rc;
    seg *a = active(s);
    bool seal = a->records > 0;
    if (seal) {
        index_name_for(a->file, a->index);
        if ((rc = write_sparse(s, a, err))) {
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
    if (seal && !segs_push(s, file, NULL)) {
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        goto undo_file;
    }
    a = active(s);
    if (!seal)
        memset(a, 0, sizeof *a);
    snprintf(a->file, sizeof a->file, "%s", file);
    a->has_minmax = b->g.has_minmax;
    a->ordered = b->g.ordered;
    a->records = b->g.records;
    memcpy(a->min, b->g.min, sizeof a->min);
    memcpy(a->max, b->g.max, sizeof a->max);
    a->size = b->size;
    s->next_segment = seg_number(file) + 1;
    struct stat before = s->manifest_st;
    rc = manifest_write(s, err);
    fault_point("seglog.bulk.manifest");
    if (rc && !manifest_changed(s)) {
        /* not written (a full disk): the old manifest stands */
        s->manifest_st = before;
        s->next_segment = old_next;
        if (seal)
            s->nsegs--;
        else
            *active(s) = old;
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
    seg_reset_stats(active(s));
    rc = apply_spool(s, b->f, (uint32_t)(s->nsegs - 1), err);
    active(s)->size = b->size;
    estats_add(ESTAT_LOG_APPEND, 1);
    return rc;
undo_file:
    unlink(path);
undo_index:
    if (seal)
        active(s)->index[0] = '\0';
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
        rc = lock(s, err);
        if (!rc) {
            rc = publish_spool(s, b, err);
            unlock(s);
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (written)
        *written = rc ? 0 : b->n;
    seglog_batch_abort(b);
    return rc;
}

/* ---------- streaming reads ---------- */

typedef struct snap_seg {
    char file[NAME_CAP];
    uint64_t start;
    bool skip, ordered;
    char max[UUID7_LEN + 1];
} snap_seg;

typedef struct hit {
    uint64_t off, len; /* into it->seg */
    char id[UUID7_LEN + 1];
} hit;

struct seglog_iter {
    seglog *s;
    const recquery *q;
    snap_seg *snap;
    size_t nsnap, si;
    buf seg;
    hit *hits;
    size_t nhits, caphits, hi;
    size_t emitted;
    char id[UUID7_LEN + 1];
};

int seglog_iter_open(seglog *s, const recquery *q, seglog_iter **out, storh_err *err)
{
    seglog_iter *it = calloc(1, sizeof *it);
    if (!it)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    it->s = s;
    it->q = q;
    const char *lower = NULL;
    if (q && q->has_after)
        lower = q->after;
    if (q && q->has_from && (!lower || strcmp(q->min_id, lower) > 0))
        lower = q->min_id;
    pthread_mutex_lock(&s->mu);
    int rc = refresh(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        free(it);
        return rc;
    }
    it->snap = calloc(s->nsegs, sizeof *it->snap);
    if (it->snap) {
        it->nsnap = s->nsegs;
        for (size_t i = 0; i < s->nsegs; i++) {
            seg *g = &s->segs[i];
            snap_seg *n = &it->snap[i];
            snprintf(n->file, sizeof n->file, "%s", g->file);
            n->ordered = g->ordered;
            memcpy(n->max, g->max, sizeof n->max);
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
    }
    pthread_mutex_unlock(&s->mu);
    if (!it->snap) {
        free(it);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    *out = it;
    return 0;
}

/* Loads the next segment and collects its live lines in the id window. */
static int load_segment(seglog_iter *it, storh_err *err)
{
    seglog *s = it->s;
    snap_seg *n = &it->snap[it->si++];
    it->nhits = it->hi = 0;
    if (n->skip)
        return 0;
    char path[PATH_MAX];
    int rc = seg_path(s, n->file, path, err);
    if (rc)
        return rc;
    buf_reset(&it->seg);
    rc = fsx_read_all(path, &it->seg, err);
    if (rc)
        return storh_err_set(err, rc, "Could not open segment: %s", n->file);
    const char *b = it->seg.data ? it->seg.data : "";
    uint64_t len = it->seg.len, pos = n->start < len ? n->start : len;
    const recquery *q = it->q;
    pthread_mutex_lock(&s->mu);
    /* the segment's index in the live state, by name (compaction may have
     * renumbered the list since the snapshot) */
    long si = -1;
    for (size_t i = 0; i < s->nsegs; i++)
        if (!strcmp(s->segs[i].file, n->file))
            si = (long)i;
    while (si >= 0 && pos < len) {
        const char *nl = memchr(b + pos, '\n', len - pos);
        uint64_t end = nl ? (uint64_t)(nl - b) : len;
        int op;
        char id[UUID7_LEN + 1];
        if (line_valid(b + pos, end - pos, &op, id)) {
            if (n->ordered && q && q->has_until && strcmp(id, q->max_id) > 0)
                break;
            live *v = idmap_get(&s->state, id);
            if (v && !v->deleted && v->seg == (uint32_t)si && v->off == pos && op != OP_DELETE &&
                (!q || recquery_match_id(q, id, UUID7_LEN))) {
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
                h->off = pos;
                h->len = end - pos;
                memcpy(h->id, id, sizeof h->id);
            }
        }
        pos = nl ? end + 1 : len;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int seglog_iter_next(seglog_iter *it, const char **id, json_t **data, storh_err *err)
{
    for (;;) {
        if (it->q && it->q->limit && it->emitted >= it->q->limit)
            return 0;
        if (it->hi < it->nhits) {
            hit *h = &it->hits[it->hi++];
            json_t *d;
            storh_err derr;
            int rc = decode_put(it->seg.data + h->off, h->len, h->id, &d, &derr);
            if (rc)
                return storh_err_set(err, rc, "Bad record at %s:%llu: %s",
                                     it->snap[it->si - 1].file, (unsigned long long)h->off,
                                     derr.msg);
            if (it->q && !recquery_match_data(it->q, d)) {
                json_decref(d);
                continue;
            }
            memcpy(it->id, h->id, sizeof it->id);
            it->emitted++;
            *id = it->id;
            *data = d;
            return 1;
        }
        if (it->si >= it->nsnap)
            return 0;
        int rc = load_segment(it, err);
        if (rc)
            return rc;
    }
}

void seglog_iter_close(seglog_iter *it)
{
    if (!it)
        return;
    free(it->snap);
    free(it->hits);
    buf_free(&it->seg);
    free(it);
}

/* ---------- compaction, retention, maintenance ---------- */

typedef struct out_file {
    seg g;
    buf bytes;
} out_file;

static int finish_output(seglog *s, out_file *o, seg **outs, size_t *nouts, storh_err *err)
{
    if (o->g.records == 0)
        return 0;
    char path[PATH_MAX];
    int rc = seg_path(s, o->g.file, path, err);
    if (!rc)
        rc = fsx_write_synced(path, o->bytes.data, o->bytes.len, err);
    if (!rc) {
        index_name_for(o->g.file, o->g.index);
        rc = write_sparse(s, &o->g, err);
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

/* Under mu + flock. */
static int compact_locked(seglog *s, json_t **report, storh_err *err)
{
    int rc = catch_up(s, err);
    if (!rc)
        rc = roll(s, err);
    if (rc)
        return rc;
    size_t nsealed = s->nsegs - 1;
    if (nsealed == 0) {
        rc = manifest_write(s, err);
        if (!rc && report)
            *report = json_pack("{sbsisi}", "ok", 1, "segments", 0, "records", 0);
        return rc;
    }
    char token[9];
    if ((rc = fsx_random_hex(token, 4, err)))
        return rc;
    seg *outs = NULL;
    size_t nouts = 0;
    long long kept = 0, outno = 0;
    out_file o;
    memset(&o, 0, sizeof o);
    seglog tmp; /* stats of the output being written, via apply() */
    memset(&tmp, 0, sizeof tmp);
    tmp.o = s->o;
    idmap_init(&tmp.state, sizeof(live));
    buf line = BUF_INIT;
    for (size_t i = 0; !rc && i < nsealed; i++) {
        char path[PATH_MAX];
        buf b = BUF_INIT;
        if ((rc = seg_path(s, s->segs[i].file, path, err)))
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
            const char *p = b.data + pos;
            size_t n = end - pos;
            pos = nl ? end + 1 : b.len;
            if (!line_valid(p, n, &op, id) || op != OP_PUT)
                continue; /* deletes, other ops and bad lines do not survive */
            live *v = idmap_get(&s->state, id);
            if (!v || v->deleted || v->seg != i || v->off != (uint64_t)(p - b.data))
                continue;
            if (o.g.file[0] == '\0') {
                char file[NAME_CAP], probe[PATH_MAX];
                struct stat st;
                do {
                    snprintf(file, sizeof file, "compact-%s-%06lld.ndjson", token, ++outno);
                    seg_path(s, file, probe, NULL);
                } while (stat(probe, &st) == 0);
                snprintf(o.g.file, sizeof o.g.file, "%s", file);
                seg_reset_stats(&o.g);
            }
            uint64_t at = o.bytes.len;
            const char *j;
            size_t jl;
            frame_decode(p, n, false, &j, &jl, NULL);
            if (!memcmp(j, PUT_PREFIX, PUT_PREFIX_LEN)) {
                buf_append(&o.bytes, p, n);
                buf_appendc(&o.bytes, '\n');
            } else { /* a non-canonical put is written canonically */
                json_t *d;
                if ((rc = decode_put(p, n, id, &d, err)))
                    break;
                buf_reset(&line);
                rc = encode_put(&line, id, d, err);
                json_decref(d);
                buf_append(&o.bytes, line.data, line.len);
            }
            /* stats and sparse entries of the output, by the same rules */
            tmp.segs = &o.g;
            tmp.nsegs = 1;
            apply(&tmp, 0, at, OP_PUT, id, NULL, 0);
            kept++;
            if (o.bytes.len >= s->o.max_segment_bytes)
                rc = finish_output(s, &o, &outs, &nouts, err);
        }
        buf_free(&b);
    }
    if (!rc)
        rc = finish_output(s, &o, &outs, &nouts, err);
    free(o.g.sp);
    buf_free(&o.bytes);
    buf_free(&line);
    idmap_free(&tmp.state);
    char dir[PATH_MAX];
    if (!rc && !(rc = fsx_pathf(dir, err, "%s/segments", s->dir)))
        rc = fsx_fsync_dir(dir, err);
    fault_point("seglog.compact.before_manifest");
    if (rc) {
        for (size_t i = 0; i < nouts; i++)
            free(outs[i].sp);
        free(outs);
        remove_unreferenced(s);
        return rc;
    }
    /* the swap: outputs replace every sealed segment; the active one stays */
    seg act = *active(s);
    for (size_t i = 0; i < nsealed; i++)
        free(s->segs[i].sp);
    seg *n = realloc(outs, (nouts + 1) * sizeof *n);
    if (!n) {
        free(outs);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    n[nouts] = act;
    free(s->segs);
    s->segs = n;
    s->nsegs = nouts + 1;
    rc = manifest_write(s, err);
    if (!rc)
        rc = replay(s, TORN_KEEP, err);
    estats_add(ESTAT_LOG_COMPACT, 1);
    if (!rc && report)
        *report = json_pack("{sbsIsI}", "ok", 1, "segments", (json_int_t)nouts, "records",
                            (json_int_t)kept);
    return rc;
}

int seglog_compact(seglog *s, json_t **report, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = lock(s, err);
    if (!rc) {
        rc = compact_locked(s, report, err);
        unlock(s);
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
    int rc = lock(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    rc = catch_up(s, err);
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
        rc = append_lines(s, lines.data, lines.len, &t, err);
    if (!rc && n)
        rc = gcommit_wait(&s->gc, t, err);
    if (!rc)
        rc = compact_locked(s, NULL, err);
    unlock(s);
    pthread_mutex_unlock(&s->mu);
    buf_free(&lines);
    if (!rc)
        *deleted = n;
    return rc;
}

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
        if (!seg_path(s, s->segs[i].file, path, NULL) && stat(path, &st) == 0)
            bytes += st.st_size;
    }
    return json_pack("{sIsIsIsI}", "segments", (json_int_t)s->nsegs, "records", (json_int_t)live_n,
                     "deleted", (json_int_t)dead, "bytes", (json_int_t)bytes);
}

int seglog_stats(seglog *s, json_t **out, storh_err *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = refresh(s, err);
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
    int rc = lock(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    rc = catch_up(s, err); /* drift is measured against what is published */
    if (rc) {
        unlock(s);
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    json_t *errors = json_array();
    idmap before;
    idmap_init(&before, sizeof(live));
    size_t pos = 0;
    const char *k;
    void *v;
    while (idmap_next(&s->state, &pos, &k, &v))
        memcpy(idmap_put(&before, k, NULL), v, sizeof(live));
    storh_err rerr;
    if (manifest_changed(s)) {
        bool exists;
        if (manifest_load(s, &exists, &rerr) == 0)
            open_active(s, &rerr);
    }
    if (replay(s, TORN_KEEP, &rerr) != 0)
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
        if (!seg_path(s, s->segs[i].file, path, NULL) && stat(path, &st) != 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "Could not open segment: %s", s->segs[i].file);
            json_array_append_new(errors, json_string(msg));
        }
    }
    json_t *stats = stats_locked(s);
    unlock(s);
    pthread_mutex_unlock(&s->mu);
    /* every live record must decode */
    seglog_iter *it;
    if (seglog_iter_open(s, NULL, &it, &rerr) == 0) {
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
    int rc = lock(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    rc = catch_up(s, err);
    if (!rc)
        rc = replay(s, TORN_TRUNCATE, err);
    size_t quarantined = 0;
    bool active_rewritten = false;
    for (size_t i = 0; !rc && i < s->nsegs; i++) {
        bool any = false;
        for (size_t k = 0; k < s->nbad; k++)
            any = any || s->bad[k].seg == i;
        if (!any)
            continue;
        char path[PATH_MAX];
        buf b = BUF_INIT, keep = BUF_INIT;
        if ((rc = seg_path(s, s->segs[i].file, path, err)) || (rc = fsx_read_all(path, &b, err))) {
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
        if (!rc)
            rc = fsx_publish(path, keep.data ? keep.data : "", keep.len, err);
        active_rewritten = active_rewritten || i == s->nsegs - 1;
        buf_free(&b);
        buf_free(&keep);
    }
    if (!rc && quarantined)
        rc = replay(s, TORN_TRUNCATE, err);
    if (!rc && active_rewritten)
        rc = open_active(s, err);
    if (!rc)
        rc = manifest_write(s, err);
    json_t *stats = rc ? NULL : stats_locked(s);
    unlock(s);
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
static void counters_note(seglog *s, int op, bool fresh, const char *line, size_t len)
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
    json_object_foreach(s->counters, field, counts)
    {
        json_t *v = json_object_get(data, field);
        if (v && !json_is_object(v) && !json_is_array(v) && json_is_object(counts))
            count_value(counts, v, 1);
        if (json_is_object(counts) && json_object_size(counts) > COUNTER_MAX_VALUES)
            json_object_set_new(s->counters, field, json_false()); /* not countable */
    }
    json_decref(data);
    json_decref(env);
}

int seglog_count_eq(seglog *s, const char *field, const json_t *value, size_t *n, bool *served,
                    storh_err *err)
{
    *served = false;
    if (json_is_object(value) || json_is_array(value))
        return 0;
    pthread_mutex_lock(&s->mu);
    int rc = refresh(s, err);
    pthread_mutex_unlock(&s->mu);
    if (rc)
        return rc;
    buf key = BUF_INIT;
    sjson_encode(&key, value, 0, NULL);
    pthread_mutex_lock(&s->mu);
    json_t *counts = s->counters ? json_object_get(s->counters, field) : NULL;
    if (json_is_object(counts)) {
        json_t *c = json_object_get(counts, key.data);
        *n = c ? (size_t)json_integer_value(c) : 0;
        *served = true;
    }
    bool uncountable = counts && json_is_false(counts);
    pthread_mutex_unlock(&s->mu);
    if (*served || uncountable) {
        buf_free(&key);
        return 0;
    }
    /* build the field's counters from a scan; install them only if nothing
     * was appended meanwhile (an append would then have been missed) */
    uint64_t gen0;
    pthread_mutex_lock(&s->mu);
    gen0 = s->gc.written + s->gc.gen * (UINT64_C(1) << 48);
    pthread_mutex_unlock(&s->mu);
    json_t *built = json_object();
    seglog_iter *it = NULL;
    rc = seglog_iter_open(s, NULL, &it, err);
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
    if (gen0 == s->gc.written + s->gc.gen * (UINT64_C(1) << 48)) {
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
