#include "docjournal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "estats.h"
#include "fault.h"
#include "fsx.h"
#include "idmap.h"
#include "sjson.h"

struct docjournal {
    char coll[PATH_MAX];
    char base[PATH_MAX]; /* <coll>/.storh/bulk/<identity>.<n>: .lock, .journal.jsonc */
    const char *name;    /* <identity>.<n>, in base */
    int lock_fd;
    /* a descriptor (O_PATH) on data/, opened on first use: each row's
     * create, stats and rename then walk two names (its shard's and its
     * own), not the collection's whole path; one per bulk, whatever its
     * size. DIR_UNOPENED, or DIR_MISSING for a data directory not made yet */
    int data_fd;
};

#define DIR_UNOPENED (-1)
#define DIR_MISSING (-2)

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* The flock on <base>.lock, taken before the stage's first row exists, so
 * an opener that finds a row or a commit record of a stage and can lock it
 * knows its writer is gone. A lock file unlinked by such an opener between
 * our open and flock is not ours anymore: then again. */
static int lock_stage(const char *base, bool wait, int *fd, storh_err *err)
{
    char p[PATH_MAX];
    int rc = fsx_pathf(p, err, "%s.lock", base);
    if (rc)
        return rc;
    for (;;) {
        *fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (*fd < 0)
            return storh_err_sys(err, errno, "Could not open bulk stage lock %s", p);
        if (flock(*fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
            int e = errno;
            close(*fd);
            *fd = -1;
            return e == EWOULDBLOCK ? STORH_ECONFLICT
                                    : storh_err_sys(err, e, "Could not lock bulk stage %s", p);
        }
        struct stat a, b;
        if (fstat(*fd, &a) == 0 && stat(p, &b) == 0 && a.st_ino == b.st_ino)
            return 0;
        close(*fd);
    }
}

/* Drops a stage's lock file, then its descriptor (and so the flock). */
static void unlock_stage(const char *base, int fd)
{
    char p[PATH_MAX];
    if (!fsx_pathf(p, NULL, "%s.lock", base))
        unlink(p);
    if (fd >= 0)
        close(fd);
}

int docjournal_begin(const char *coll, const char *identity, unsigned long n, docjournal **out,
                     storh_err *err)
{
    docjournal *j = calloc(1, sizeof *j);
    if (!j)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    j->lock_fd = -1;
    j->data_fd = DIR_UNOPENED;
    snprintf(j->coll, sizeof j->coll, "%s", coll);
    char bulk[PATH_MAX];
    int rc = fsx_pathf(j->base, err, "%s/.storh/bulk/%s.%lu", coll, identity, n);
    if (!rc)
        rc = fsx_pathf(bulk, err, "%s/.storh/bulk", coll);
    if (!rc) /* durable with the rows' syncfs */
        rc = fsx_mkdirs(bulk, false, err);
    if (!rc)
        rc = lock_stage(j->base, true, &j->lock_fd, err);
    if (rc) {
        docjournal_release(j);
        return rc;
    }
    j->name = strrchr(j->base, '/') + 1;
    *out = j;
    return 0;
}

/* Where a stage keeps its rows: in the record's shard directory (this
 * build's), or under .storh/bulk/rows/<shard>/ (the builds before, whose
 * commit records say nothing of it; recovery still finishes theirs). */
typedef enum row_home { ROWS_IN_SHARD, ROWS_IN_BULK } row_home;

/* A staged row's name in its shard directory: hidden, and ending neither
 * in .jsonc (no listing takes it for a record) nor in .tmp (no temp sweep,
 * storh's or ours, removes a committed row before recovery renames it). */
#define ROW_SUFFIX ".row"

static int row_path(const char *coll, row_home home, const char *name, const char *shard, size_t i,
                    char *out, storh_err *err)
{
    return home == ROWS_IN_SHARD
               ? fsx_pathf(out, err, "%s/data/%.2s/.%s.%zu" ROW_SUFFIX, coll, shard, name, i)
               : fsx_pathf(out, err, "%s/.storh/bulk/rows/%.2s/%s.%zu", coll, shard, name, i);
}

int docjournal_row_path(const docjournal *j, size_t i, const char *id, char *out, storh_err *err)
{
    return row_path(j->coll, ROWS_IN_SHARD, j->name, id + 24, i, out, err);
}

/* The descriptor on <coll>/<sub> in *slot, opened on first use; with
 * make, the directory is made when it is missing. -1 (errno set) when it
 * cannot be had: the caller uses paths. A missing directory without make
 * is remembered as DIR_MISSING (errno ENOENT). */
static int dir_open(const docjournal *j, int *slot, const char *sub, bool make)
{
    if (*slot >= 0)
        return *slot;
    if (*slot == DIR_MISSING && !make) {
        errno = ENOENT;
        return -1;
    }
    char dir[PATH_MAX];
    if (fsx_pathf(dir, NULL, "%s/%s", j->coll, sub)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && make && fsx_mkdirs(dir, false, NULL) == 0)
        fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            *slot = DIR_MISSING;
        errno = e;
        return -1;
    }
    return *slot = fd;
}

/* Row i's staged file as a descriptor on data/ and its name under it
 * ("<shard>/.<name>.<i>.row"): -1 when the directory cannot be had. */
static int row_at(docjournal *j, size_t i, const char *id, bool make, char *name, size_t cap)
{
    if ((size_t)snprintf(name, cap, "%.2s/.%s.%zu" ROW_SUFFIX, id + 24, j->name, i) >= cap)
        return -1;
    return dir_open(j, &j->data_fd, "data", make);
}

/* A record path as a descriptor on the data directory and its name under
 * it: -1 when final is not under <coll>/data/ or the directory cannot be
 * had (errno ENOENT: it does not exist). */
static int final_at(docjournal *j, const char *final, bool make, const char **name)
{
    size_t cl = strlen(j->coll);
    if (strncmp(final, j->coll, cl) != 0 || strncmp(final + cl, "/data/", 6) != 0) {
        errno = EINVAL;
        return -1;
    }
    *name = final + cl + 6;
    return dir_open(j, &j->data_fd, "data", make);
}

/* The shard directory of a name under a descriptor, made (0 or -1). */
static int mkdir_shard(int dfd, const char *name)
{
    char shard[3] = {name[0], name[1], '\0'};
    return mkdirat(dfd, shard, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

int docjournal_write_row(docjournal *j, size_t i, const char *id, const void *data, size_t len,
                         struct stat *written, storh_err *err)
{
    if (written)
        memset(written, 0, sizeof *written);
    char name[NAME_MAX + 1];
    int dfd = row_at(j, i, id, true, name, sizeof name);
    char path[PATH_MAX];
    int rc = docjournal_row_path(j, i, id, path, err);
    if (rc)
        return rc;
    if (dfd < 0) /* the path's own error, or its directory made on the way */
        return fsx_write_file(path, data, len, false, err);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == ENOENT && mkdir_shard(dfd, name) == 0) /* a new shard */
        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == ENOENT) /* its directory went: by the path */
        return fsx_write_file(path, data, len, false, err);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open temporary storage file for writing: %s",
                             path);
    if (fsx_write_all(fd, data, len) != 0)
        rc = storh_err_sys(err, errno, "Could not write storage file: %s", path);
    if (!rc && written && fstat(fd, written) != 0)
        memset(written, 0, sizeof *written);
    if (close(fd) != 0 && !rc)
        rc = storh_err_sys(err, errno, "Could not write storage file: %s", path);
    if (rc)
        unlinkat(dfd, name, 0);
    return rc;
}

/* stat of row i's staged file: 0, or -1 with errno. */
static int stat_row(docjournal *j, size_t i, const char *id, struct stat *st)
{
    char name[NAME_MAX + 1], path[PATH_MAX];
    int dfd = row_at(j, i, id, false, name, sizeof name);
    if (dfd >= 0)
        return fstatat(dfd, name, st, 0);
    if (docjournal_row_path(j, i, id, path, NULL)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return stat(path, st);
}

/* stat of a record path: 0, or -1 with errno (ENOENT also when its shard
 * directory does not exist). */
static int stat_final(docjournal *j, const char *final, struct stat *st)
{
    const char *name;
    int dfd = final_at(j, final, false, &name);
    if (dfd >= 0)
        return fstatat(dfd, name, st, 0);
    return errno == ENOENT ? -1 : stat(final, st);
}

/* The commit record's temp file, written in pieces of up to JW_PIECE. */
#define JW_PIECE (64 * 1024)

typedef struct jwriter {
    int fd;
    buf b;
    char tmp[PATH_MAX];
} jwriter;

static int jw_flush(jwriter *w, bool all, storh_err *err)
{
    if (buf_failed(&w->b))
        return storh_err_oom(err);
    if (!all && w->b.len < JW_PIECE)
        return 0;
    if (fsx_write_all(w->fd, w->b.data, w->b.len) != 0)
        return storh_err_sys(err, errno, "Could not write bulk journal %s", w->tmp);
    w->b.len = 0;
    return 0;
}

/* Row i's entry [final relative to the collection, pre, staged inode]:
 * pre is what the record path holds when the renames begin (the file an
 * earlier row of this bulk puts there, or the one on disk now, as [inode,
 * mtime ns]) or null. */
static int jw_row(docjournal *j, jwriter *w, idmap *last, size_t i, const char *id,
                  const char *final, storh_err *err)
{
    size_t cl = strlen(j->coll);
    struct stat sst, tst;
    if (stat_row(j, i, id, &sst) != 0) {
        char staged[PATH_MAX];
        int e = errno;
        int rc = docjournal_row_path(j, i, id, staged, err);
        return rc ? rc : storh_err_sys(err, e, "Could not stat staged row %s", staged);
    }
    bool fresh = false;
    size_t *prev = idmap_put(last, id, &fresh);
    if (!prev)
        return storh_err_oom(err);
    bool pre = (!fresh && stat_row(j, *prev - 1, id, &tst) == 0) ||
               (fresh && stat_final(j, final, &tst) == 0);
    *prev = i + 1;
    if (strncmp(final, j->coll, cl) != 0 || final[cl] != '/')
        return storh_err_set(err, STORH_EINVAL, "Record path outside the collection.");
    buf_append(&w->b, i ? ",[" : "[", i ? 2 : 1);
    sjson_encode_string(&w->b, final + cl + 1, strlen(final + cl + 1));
    if (pre) {
        buf_printf(&w->b, ",[%lld,%lld],", (long long)tst.st_ino, (long long)mtime_ns(&tst));
    } else {
        buf_append(&w->b, ",null,", 6);
    }
    buf_printf(&w->b, "%lld]", (long long)sst.st_ino);
    return jw_flush(w, false, err);
}

/* dir synced; STORH_FAULT_FAIL=bulksync:<collection> makes that fail. */
static int sync_dir(const docjournal *j, const char *dir, storh_err *err)
{
    if (fault_fails("bulksync", j->coll))
        return storh_err_sys(err, EIO, "Could not sync directory %s", dir);
    return fsx_fsync_dir(dir, err);
}

/* The commit record at path made durable: its directory dir synced. When
 * the sync fails, the record is taken back before the caller drops the
 * rows (unlinked, then dir synced), so that no crash while the rows go can
 * leave a record naming some of them. *keep: it could not be taken back
 * durably; the caller leaves the stage whole, which the next open rolls
 * forward (the record kept) or drops (the record gone). */
static int commit_durable(const docjournal *j, const char *dir, const char *path, bool *keep,
                          storh_err *err)
{
    int rc = sync_dir(j, dir, err);
    if (rc)
        *keep = (unlink(path) != 0 && errno != ENOENT) || sync_dir(j, dir, NULL) != 0;
    return rc;
}

int docjournal_commit(docjournal *j, size_t n, docjournal_row_fn row, void *ctx, bool *keep,
                      storh_err *err)
{
    *keep = false;
    char path[PATH_MAX], hex[13];
    jwriter w = {.fd = -1, .b = BUF_INIT};
    idmap last; /* id -> 1 + the latest row of this bulk that writes it */
    if (idmap_init(&last, sizeof(size_t)) != 0)
        return storh_err_oom(err);
    int rc = fsx_pathf(path, err, "%s.journal.jsonc", j->base);
    if (!rc)
        rc = fsx_random_hex(hex, 6, err);
    char dir[PATH_MAX];
    fsx_dirname(j->base, dir, sizeof dir);
    if (!rc) /* fsx_publish's temp name */
        rc = fsx_pathf(w.tmp, err, "%s/.%s.journal.jsonc.%s.tmp", dir, j->name, hex);
    if (!rc && (w.fd = open(w.tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) < 0)
        rc = storh_err_sys(err, errno, "Could not create bulk journal %s", w.tmp);
    if (!rc) /* "staged": where the rows are (row_home) */
        buf_append(&w.b, "{\"staged\":\"shard\",\"rows\":[", 26);
    for (size_t i = 0; !rc && i < n; i++) {
        const char *id;
        char final[PATH_MAX];
        row(ctx, i, &id, final);
        rc = jw_row(j, &w, &last, i, id, final, err);
    }
    idmap_free(&last);
    if (!rc) {
        buf_append(&w.b, "]}", 2);
        rc = jw_flush(&w, true, err);
    }
    if (!rc)
        fault_point("docstore.bulk.committing"); /* the temp written, not renamed */
    if (!rc && fsync(w.fd) != 0)
        rc = storh_err_sys(err, errno, "Could not sync bulk journal %s", w.tmp);
    if (w.fd >= 0 && close(w.fd) != 0 && !rc)
        rc = storh_err_sys(err, errno, "Could not write bulk journal %s", w.tmp);
    buf_free(&w.b);
    if (!rc)
        rc = fsx_rename(w.tmp, path, false, err);
    if (rc && w.fd >= 0)
        unlink(w.tmp);
    else if (!rc)
        rc = commit_durable(j, dir, path, keep, err);
    if (!rc)
        fault_point("docstore.bulk.committed");
    return rc;
}

int docjournal_rename_row(docjournal *j, size_t i, const char *id, const char *final,
                          storh_err *err)
{
    char name[NAME_MAX + 1], from[PATH_MAX];
    const char *to;
    int rfd = row_at(j, i, id, false, name, sizeof name);
    int dfd = rfd < 0 ? -1 : final_at(j, final, false, &to);
    /* within the shard directory the row was staged in */
    if (dfd >= 0 && renameat(rfd, name, dfd, to) == 0) {
        estats_add(ESTAT_RENAME, 1);
        return 0;
    }
    /* by paths, which reports the error (or makes what went missing) */
    int rc = docjournal_row_path(j, i, id, from, err);
    return rc ? rc : docjournal_rename(from, final, err);
}

int docjournal_rename(const char *from, const char *to, storh_err *err)
{
    if (rename(from, to) != 0 && errno == ENOENT) {
        char d[PATH_MAX];
        fsx_dirname(to, d, sizeof d);
        if (fsx_mkdirs(d, false, NULL) == 0 && rename(from, to) == 0)
            goto done;
        errno = ENOENT;
    } else {
        goto done;
    }
    return storh_err_sys(err, errno, "Could not atomically replace storage file: %s", to);
done:
    estats_add(ESTAT_RENAME, 1);
    return 0;
}

/* Removes a stage's commit record, then its lock file (and flock). */
static void remove_stage(const char *base, int fd)
{
    char p[PATH_MAX];
    if (!fsx_pathf(p, NULL, "%s.journal.jsonc", base))
        unlink(p);
    unlock_stage(base, fd);
}

void docjournal_end(docjournal *j)
{
    if (!j)
        return;
    remove_stage(j->base, j->lock_fd);
    j->lock_fd = -1;
    docjournal_release(j);
}

void docjournal_release(docjournal *j)
{
    if (!j)
        return;
    if (j->lock_fd >= 0)
        close(j->lock_fd);
    if (j->data_fd >= 0)
        close(j->data_fd);
    free(j);
}

/* Replays the commit record of a dead writer's stage (name, in bulk/). */
static int roll_forward(const char *coll, const char *name, const json_t *doc, storh_err *err)
{
    json_t *rows = json_object_get(doc, "rows"), *r;
    if (!json_is_array(rows))
        return storh_err_set(err, STORH_ECORRUPT, "Malformed bulk journal of %s", name);
    const char *staged_in = json_string_value(json_object_get(doc, "staged"));
    row_home home = staged_in && !strcmp(staged_in, "shard") ? ROWS_IN_SHARD : ROWS_IN_BULK;
    size_t i;
    int rc = 0;
    json_array_foreach (rows, i, r) {
        const char *rel = json_string_value(json_array_get(r, 0));
        json_t *pre = json_array_get(r, 1);
        json_t *ino = json_array_get(r, 2);
        if (!rel || strncmp(rel, "data/", 5) != 0 || strlen(rel) < 9 || rel[7] != '/' ||
            strstr(rel, "..") || !json_is_integer(ino))
            return storh_err_set(err, STORH_ECORRUPT, "Malformed bulk journal of %s", name);
        char staged[PATH_MAX], target[PATH_MAX];
        if ((rc = row_path(coll, home, name, rel + 5, i, staged, err)) ||
            (rc = fsx_pathf(target, err, "%s/%s", coll, rel)))
            return rc;
        struct stat sst, tst;
        if (stat(staged, &sst) != 0)
            continue; /* renamed before the crash */
        bool exists = stat(target, &tst) == 0;
        if (exists && tst.st_ino == sst.st_ino) { /* renamed, the old name kept too */
            unlink(staged);
            continue;
        }
        bool same =
            json_is_null(pre)
                ? !exists
                : exists && json_is_array(pre) &&
                      (json_int_t)tst.st_ino == json_integer_value(json_array_get(pre, 0)) &&
                      mtime_ns(&tst) == json_integer_value(json_array_get(pre, 1));
        if (!same) { /* another writer replaced it since: theirs is newer */
            unlink(staged);
            continue;
        }
        if ((rc = docjournal_rename(staged, target, err)))
            return rc;
        fault_point("docstore.bulk.recovering");
    }
    return 0;
}

/* The files in .storh/bulk that name a stage: <stage> + one of these */
static const char *const STAGE_FILES[] = {".lock", ".journal.jsonc"};
#define NSTAGE_FILES (sizeof STAGE_FILES / sizeof *STAGE_FILES)

/* The stages recovery has looked at: dead ones (their flock held by us
 * until they are removed) and live ones. */
typedef struct stage_seen {
    char name[96];
    int fd; /* >= 0: dead, locked by us; -1: alive */
} stage_seen;

typedef struct seen_list {
    stage_seen *v;
    size_t n;
} seen_list;

/* The stage named name (len bytes) among those seen, or NULL. */
static stage_seen *find_stage(const seen_list *l, const char *name, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strncmp(l->v[i].name, name, len) && !l->v[i].name[len])
            return &l->v[i];
    return NULL;
}

/* Looks name up, locking it (without waiting) the first time: NULL on out
 * of memory or a path too long. */
static stage_seen *seen(seen_list *l, const char *bulk, const char *name, size_t len)
{
    if (len >= sizeof l->v->name)
        return NULL;
    stage_seen *known = find_stage(l, name, len);
    if (known)
        return known;
    stage_seen *g = realloc(l->v, (l->n + 1) * sizeof *g);
    if (!g)
        return NULL;
    l->v = g;
    stage_seen *e = &l->v[l->n++];
    snprintf(e->name, sizeof e->name, "%.*s", (int)len, name);
    char base[PATH_MAX];
    if (fsx_pathf(base, NULL, "%s/%s", bulk, e->name) || lock_stage(base, false, &e->fd, NULL))
        e->fd = -1;
    return e;
}

/* fn(ctx, descriptor of the directory, name) for each entry of each
 * directory in top (names beginning with '.' at the top skipped): the
 * shard directories of data/ or of .storh/bulk/rows/. */
static void each_shard_file(const char *top, void (*fn)(void *ctx, int dfd, const char *name),
                            void *ctx)
{
    DIR *d = opendir(top);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char shard[PATH_MAX];
        if (de->d_name[0] == '.' || fsx_pathf(shard, NULL, "%s/%s", top, de->d_name))
            continue;
        DIR *sd = opendir(shard);
        struct dirent *re;
        while (sd && (re = readdir(sd)))
            fn(ctx, dirfd(sd), re->d_name);
        if (sd)
            closedir(sd);
    }
    if (d)
        closedir(d);
}

/* Whether a stage named name (len bytes) has a lock file or a commit
 * record in bulk/ now (one begun after recovery listed bulk/ has). */
static bool stage_exists(const char *bulk, const char *name, size_t len)
{
    for (size_t k = 0; k < NSTAGE_FILES; k++) {
        char p[PATH_MAX];
        struct stat st;
        if (fsx_pathf(p, NULL, "%s/%.*s%s", bulk, (int)len, name, STAGE_FILES[k]) ||
            lstat(p, &st) == 0)
            return true; /* (a name too long is left alone) */
    }
    return false;
}

/* What a sweep of staged rows consults: bulk/ and the stages seen in it */
typedef struct row_sweep {
    const char *bulk;
    seen_list *l;
} row_sweep;

/* nm, in a shard of data/, removed when it is a row of a dead or gone
 * stage (sweep_shard_rows) */
static void sweep_shard_row(void *ctx, int dfd, const char *nm)
{
    const row_sweep *sw = ctx;
    static const size_t sl = sizeof ROW_SUFFIX - 1;
    size_t nl = strlen(nm);
    if (nm[0] != '.' || nl <= 1 + sl || strcmp(nm + nl - sl, ROW_SUFFIX))
        return;
    const char *dot = memrchr(nm, '.', nl - sl); /* before <i> */
    if (!dot || dot <= nm + 1)
        return;
    size_t len = (size_t)(dot - nm - 1);
    const stage_seen *e = find_stage(sw->l, nm + 1, len);
    if (e ? e->fd >= 0 : !stage_exists(sw->bulk, nm + 1, len))
        unlinkat(dfd, nm, 0);
}

/* Removes the rows left in the shard directories of data/
 * (".<stage>.<i>.row") by dead stages (an uncommitted bulk's, or a
 * committed one's that another writer superseded) and by stages that are
 * gone: a stage takes its lock before its first row and drops it after
 * its last, but a power cut can keep a row's name and lose the lock's
 * (made or removed after it, with no sync between), and a failed unlink
 * leaves a row of a dropped stage. A row whose stage has neither a lock
 * file nor a commit record is such a row: never renamed (a renamed row
 * has its record's name), never to be. data/ is walked only when
 * recovery found a dead stage or the open found a writer that died
 * (walk). */
static void sweep_shard_rows(const char *coll, const char *bulk, seen_list *l, bool walk)
{
    for (size_t i = 0; i < l->n && !walk; i++)
        walk = l->v[i].fd >= 0;
    char data[PATH_MAX];
    row_sweep sw = {bulk, l};
    if (walk && !fsx_pathf(data, NULL, "%s/data", coll))
        each_shard_file(data, sweep_shard_row, &sw);
}

/* nm, in a shard of .storh/bulk/rows/, removed when its stage is dead */
static void sweep_bulk_row(void *ctx, int dfd, const char *nm)
{
    const row_sweep *sw = ctx;
    const char *dot = strrchr(nm, '.');
    if (nm[0] == '.' || !dot)
        return;
    stage_seen *e = seen(sw->l, sw->bulk, nm, (size_t)(dot - nm));
    if (e && e->fd >= 0)
        unlinkat(dfd, nm, 0);
}

/* Removes the rows of dead stages under .storh/bulk/rows/ (where the
 * builds before staged them). */
static void sweep_rows(const char *bulk, seen_list *l)
{
    char rows[PATH_MAX];
    row_sweep sw = {bulk, l};
    if (!fsx_pathf(rows, NULL, "%s/rows", bulk))
        each_shard_file(rows, sweep_bulk_row, &sw);
}

/* Removes the commit records a dead stage's writer was still writing
 * (".<stage>.journal.jsonc.<hex>.tmp", docjournal_commit's temp): a kill
 * between its create and its rename left it. */
static void sweep_journal_temps(const char *bulk, seen_list *l)
{
    static const char mid[] = ".journal.jsonc.";
    DIR *d = opendir(bulk);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *nm = de->d_name, *m = strstr(nm, mid);
        size_t nl = strlen(nm);
        if (nm[0] != '.' || !m || m == nm + 1 || nl < 4 || strcmp(nm + nl - 4, ".tmp"))
            continue;
        stage_seen *e = seen(l, bulk, nm + 1, (size_t)(m - nm - 1));
        char p[PATH_MAX];
        if (e && e->fd >= 0 && !fsx_pathf(p, NULL, "%s/%s", bulk, nm))
            unlink(p);
    }
    if (d)
        closedir(d);
}

int docjournal_recover(const char *coll, bool writer_died, bool *rolled, storh_err *err)
{
    *rolled = false;
    char bulk[PATH_MAX];
    int rc = fsx_pathf(bulk, err, "%s/.storh/bulk", coll);
    if (rc)
        return rc;
    DIR *d = opendir(bulk);
    if (!d)
        return errno == ENOENT ? 0 : storh_err_sys(err, errno, "Could not list %s", bulk);
    seen_list l = {NULL, 0};
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        const char *nm = de->d_name;
        size_t nl = strlen(nm);
        for (size_t k = 0; k < NSTAGE_FILES && nm[0] != '.'; k++) {
            size_t sl = strlen(STAGE_FILES[k]);
            if (nl > sl && !strcmp(nm + nl - sl, STAGE_FILES[k]) && !seen(&l, bulk, nm, nl - sl))
                rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        }
    }
    closedir(d);
    for (size_t i = 0; !rc && i < l.n; i++) {
        if (l.v[i].fd < 0)
            continue; /* its writer is alive */
        char jp[PATH_MAX];
        buf b = BUF_INIT;
        if ((rc = fsx_pathf(jp, err, "%s/%s.journal.jsonc", bulk, l.v[i].name)))
            break;
        int jrc = fsx_read_all(jp, &b, err);
        if (jrc == 0) {
            json_t *doc = json_loadb(b.data, b.len, 0, NULL);
            rc = doc ? roll_forward(coll, l.v[i].name, doc, err)
                     : storh_err_set(err, STORH_ECORRUPT, "Malformed bulk journal %s", jp);
            json_decref(doc);
            *rolled = true;
        } else if (jrc != STORH_ENOTFOUND) {
            rc = jrc;
        }
        buf_free(&b);
    }
    if (!rc) {
        sweep_rows(bulk, &l);
        sweep_journal_temps(bulk, &l);
        sweep_shard_rows(coll, bulk, &l, writer_died);
    }
    /* the renames durable before any commit record goes */
    if (!rc && *rolled) {
        int fd = open(coll, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) != 0)
            rc = storh_err_sys(err, errno, "Could not sync %s", coll);
        else
            estats_add(ESTAT_FSYNC_FS, 1);
        if (fd >= 0)
            close(fd);
    }
    for (size_t i = 0; i < l.n; i++) {
        char base[PATH_MAX];
        if (l.v[i].fd < 0)
            continue;
        if (!rc && !fsx_pathf(base, NULL, "%s/%s", bulk, l.v[i].name))
            remove_stage(base, l.v[i].fd);
        else
            close(l.v[i].fd);
    }
    free(l.v);
    return rc;
}
