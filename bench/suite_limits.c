/* suite_limits (bench): this machine's limits for the system calls the
 * engines need, measured in the same run as the engines: append + fsync,
 * create + fsync + rename + directory fsync, a shard's readdir, a record
 * file's open/fstat/read/close, and SQLite's own insert rate for the
 * mirror's rows. The engines' figures are reported as fractions of these
 * (runner, compare). */
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docstore.h"
#include "fsx.h"
#include "sjson.h"
#include "suite.h"

/* 4 KiB appended and fsynced, one after the other: the log and queue's
 * per-write cost. */
static double append_fsync_rate(const harness_opts *o, long k)
{
    char path[PATH_MAX];
    fsx_pathf(path, NULL, "%s/append.bin", o->work);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        harness_die("append open", NULL);
    char data[4096];
    memset(data, 'a', sizeof data);
    double t = harness_now();
    for (long i = 0; i < k; i++)
        if (write(fd, data, sizeof data) != (ssize_t)sizeof data || fsync(fd))
            harness_die("append", NULL);
    double el = harness_now() - t;
    close(fd);
    return k / el;
}

/* A record published as put() does it: create a temp, write, fsync, close,
 * rename over the final name, fsync the directory. */
static double publish_rate(const harness_opts *o, long k, size_t size)
{
    char dir[PATH_MAX], tmp[PATH_MAX], fin[PATH_MAX];
    fsx_pathf(dir, NULL, "%s/publish", o->work);
    if (mkdir(dir, 0755))
        harness_die("publish mkdir", NULL);
    char *data = malloc(size);
    memset(data, 'p', size);
    double t = harness_now();
    for (long i = 0; i < k; i++) {
        fsx_pathf(tmp, NULL, "%s/.%ld.tmp", dir, i);
        fsx_pathf(fin, NULL, "%s/%ld.jsonc", dir, i);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, data, size) != (ssize_t)size || fsync(fd) || close(fd))
            harness_die("publish", NULL);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rename(tmp, fin) || dfd < 0 || fsync(dfd) || close(dfd))
            harness_die("publish rename", NULL);
    }
    double el = harness_now() - t;
    free(data);
    return k / el;
}

typedef struct files {
    char **path;
    long n, cap;
} files;

static void files_add(files *f, const char *dir, const char *name)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 1024;
        f->path = realloc(f->path, (size_t)f->cap * sizeof *f->path);
        if (!f->path)
            harness_die("files", NULL);
    }
    size_t len = strlen(dir) + strlen(name) + 2;
    f->path[f->n] = malloc(len);
    snprintf(f->path[f->n++], len, "%s/%s", dir, name);
}

/* Every shard of <coll>/data read with opendir/readdir/closedir; the
 * record files' paths go to f. Returns the seconds it took. */
static double read_shards(const char *data, files *f)
{
    double t = harness_now();
    DIR *top = opendir(data);
    if (!top)
        harness_die("readdir", NULL);
    struct dirent *e;
    while ((e = readdir(top))) {
        if (e->d_name[0] == '.')
            continue;
        char shard[PATH_MAX];
        fsx_pathf(shard, NULL, "%s/%s", data, e->d_name);
        DIR *d = opendir(shard);
        if (!d)
            continue;
        struct dirent *r;
        while ((r = readdir(d)))
            if (r->d_name[0] != '.')
                files_add(f, shard, r->d_name);
        closedir(d);
    }
    closedir(top);
    return harness_now() - t;
}

/* open, fstat, one read of the whole file, close: the least a get() of an
 * uncached record can do. Returns the seconds for every file of f. */
static double read_records(const files *f)
{
    char bytes[65536];
    double t = harness_now();
    for (long i = 0; i < f->n; i++) {
        int fd = open(f->path[i], O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) || st.st_size > (off_t)sizeof bytes ||
            read(fd, bytes, (size_t)st.st_size) != st.st_size || close(fd))
            harness_die("record read", NULL);
    }
    return harness_now() - t;
}

/* What a push of unchanged records cannot avoid: every shard listed, and
 * one fstatat of each record file relative to its shard (nothing read).
 * Returns the seconds it took; *n the files stated. */
double suite_stat_scan(const char *data, long *n)
{
    *n = 0;
    double t = harness_now();
    DIR *top = opendir(data);
    if (!top)
        harness_die("readdir", NULL);
    struct dirent *e;
    while ((e = readdir(top))) {
        if (e->d_name[0] == '.')
            continue;
        int sfd = openat(dirfd(top), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = sfd < 0 ? NULL : fdopendir(sfd);
        if (!d) {
            if (sfd >= 0)
                close(sfd);
            continue;
        }
        struct dirent *r;
        struct stat st;
        while ((r = readdir(d)))
            if (r->d_name[0] != '.') {
                if (fstatat(dirfd(d), r->d_name, &st, 0))
                    harness_die("stat scan", NULL);
                (*n)++;
            }
        closedir(d);
    }
    closedir(top);
    return harness_now() - t;
}

/* One stat(2) of each record file's path: the least a validated cache hit
 * can do. Seconds per stat, the median of three passes. */
static double stat_records(const files *f)
{
    double pass[3];
    for (int k = 0; k < 3; k++) {
        double t = harness_now();
        for (long i = 0; i < f->n; i++) {
            struct stat st;
            if (stat(f->path[i], &st))
                harness_die("record stat", NULL);
        }
        pass[k] = (harness_now() - t) / f->n;
    }
    return harness_median(pass, 3);
}

static void sq(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "bench: sqlite: %s\n", msg ? msg : sql);
        exit(1);
    }
}

/* The n rows inserted with st in one transaction (BEGIN, after emptying
 * the table when empty is true, then COMMIT): seconds. */
static double sqlite_fill(sqlite3 *db, sqlite3_stmt *st, long n, char (*ids)[UUID7_LEN + 1],
                          char **data, bool empty)
{
    double t = harness_now();
    sq(db, "BEGIN");
    if (empty)
        sq(db, "DELETE FROM \"limit_docs\"");
    for (long i = 0; i < n; i++) {
        char hash[33], slug[32];
        snprintf(hash, sizeof hash, "%032lx", (unsigned long)i * 2654435761u);
        snprintf(slug, sizeof slug, "item-%ld", i);
        sqlite3_bind_text(st, 1, ids[i], UUID7_LEN, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, hash, 32, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, i % 2 ? "post" : "page", 4, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, slug, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 5, HARNESS_BASE_MS + i);
        sqlite3_bind_text(st, 6, data[i], -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            harness_die("sqlite insert", NULL);
        sqlite3_reset(st);
    }
    sq(db, "COMMIT");
    return harness_now() - t;
}

double suite_sqlite_insert_rate(const harness_opts *o, long n, const char *file, bool replace)
{
    char path[PATH_MAX], side[PATH_MAX + 8];
    if (fsx_pathf(path, NULL, "%s/%s", o->work, file))
        harness_die("limit path", NULL);
    unlink(path); /* a fresh database each time, as the limit's first */
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
        harness_die("sqlite open", NULL);
    sq(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;");
    sq(db, "CREATE TABLE \"limit_docs\" (\"id\" TEXT NOT NULL PRIMARY KEY, \"hash\" TEXT NOT "
           "NULL, \"kind\" TEXT, \"slug\" TEXT, \"publishedAt\" INTEGER, \"data\" TEXT NOT NULL);"
           "CREATE INDEX \"limit_docs_kind_idx\" ON \"limit_docs\" (\"kind\");"
           "CREATE UNIQUE INDEX \"limit_docs_slug_idx\" ON \"limit_docs\" (\"slug\");"
           "CREATE INDEX \"limit_docs_publishedat_idx\" ON \"limit_docs\" (\"publishedAt\");");
    char(*ids)[UUID7_LEN + 1] = harness_make_ids(n, HARNESS_BASE_MS);
    char **data = malloc((size_t)n * sizeof *data);
    for (long i = 0; i < n; i++) {
        json_t *d = harness_record(i);
        data[i] = json_dumps(d, JSON_COMPACT);
        json_decref(d);
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO \"limit_docs\" (\"id\", \"hash\", \"kind\", \"slug\", "
                           "\"publishedAt\", \"data\") VALUES (?, ?, ?, ?, ?, ?)",
                           -1, &st, NULL) != SQLITE_OK)
        harness_die("sqlite prepare", NULL);
    if (replace) /* the rows are there, untimed, as a rebuild finds them */
        sqlite_fill(db, st, n, ids, data, false);
    double el = sqlite_fill(db, st, n, ids, data, replace);
    sqlite3_finalize(st);
    sqlite3_close(db);
    for (long i = 0; i < n; i++)
        free(data[i]);
    free(data);
    free(ids);
    return n / el;
}

void suite_limits(const harness_opts *o, bench_result *r)
{
    long n = o->dataset;
    long k = n < 500 ? n : 500; /* the fsync loops: enough to average */
    bench_add(r, "limit.append_fsync", append_fsync_rate(o, k), "appends/s", "higher",
              "limit: append 4 KiB + fsync");
    json_t *one = harness_record(n / 2);
    char *canon = json_dumps(one, JSON_COMPACT);
    size_t size = strlen(canon) + 60; /* the id prefix and suffix of a record file */
    free(canon);
    json_decref(one);
    bench_add(r, "limit.publish", publish_rate(o, k, size), "records/s", "higher",
              "limit: create + write + fsync + rename + dir fsync");

    /* the dataset as record files, then their reads */
    docstore *ds;
    docstore_stage *st;
    storh_err err;
    if (docstore_open(o->work, "limits", &ds, &err) || docstore_stage_begin(ds, &st, &err))
        harness_die("limits store", &err);
    for (long i = 0; i < n; i++) {
        json_t *d = harness_record(i);
        char id[UUID7_LEN + 1];
        if (docstore_stage_put(st, NULL, d, id, &err))
            harness_die("limits fill", &err);
        json_decref(d);
    }
    if (docstore_stage_commit(st, NULL, &err))
        harness_die("limits commit", &err);
    docstore_close(ds);
    char data[PATH_MAX];
    fsx_pathf(data, NULL, "%s/limits/data", o->work);
    files f = {0};
    double tdir = read_shards(data, &f);
    double tread = read_records(&f);
    if (f.n != n)
        harness_die("limits: the store's files are not the dataset", NULL);
    bench_add(r, "limit.readdir", f.n / tdir, "entries/s", "higher",
              "limit: readdir of every shard");
    bench_add(r, "limit.record_read", tread / f.n * 1e6, "µs", "lower",
              "limit: open + fstat + read + close of one record file");
    bench_add(r, "limit.stream", f.n / (tdir + tread), "records/s", "higher",
              "limit: readdir of every shard, then every record file read");
    /* a few milliseconds at 1k records: the median of five passes */
    double tstats[5];
    long ns = 0;
    for (int i = 0; i < 5; i++)
        tstats[i] = suite_stat_scan(data, &ns);
    bench_add(r, "limit.stat_scan", ns / harness_median(tstats, 5), "records/s", "higher",
              "limit: readdir of every shard and one fstatat of each record file (median of 5)");
    bench_add(r, "limit.stat", stat_records(&f) * 1e6, "µs", "lower",
              "limit: stat of one record file's path (a validated cache hit's)");
    for (long i = 0; i < f.n; i++)
        free(f.path[i]);
    free(f.path);

    bench_add(r, "limit.sqlite_insert", suite_sqlite_insert_rate(o, n, "limit.sqlite", false),
              "rows/s", "higher",
              "limit: SQLite's own insert rate for the mirror's rows and indexes");
}
