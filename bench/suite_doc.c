/* suite_doc (bench): the DocStore figures (writes, bulk, export/import,
 * get, reopen, indexes, queries, stream) and the record cache's. */
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suite.h"
#include "suite_bulk.h"
#include "suite_docput.h"
#include "allocs.h"
#include "docgroup.h"
#include "docstore.h"
#include "fsx.h"
#include "query.h"
#include "rcache.h"
#include "sjson.h"

/* ---------- DocStore ---------- */

enum { GET_DATA, GET_ANSWER };

/* Seconds per get over ids [0, n), each read once, in order, timed in ten
 * slices of consecutive ids: the median slice's, so one preemption of a
 * loaded machine does not decide a figure of a few milliseconds. */
static double timed_gets(docstore *ds, char (*ids)[UUID7_LEN + 1], long n, int how)
{
    enum { SLICES = 10 };
    double per[SLICES];
    int k = 0;
    for (; k < SLICES; k++) {
        long from = n * k / SLICES, to = n * (k + 1) / SLICES;
        storh_err err;
        double t = harness_now();
        for (long i = from; i < to; i++) {
            json_t *d;
            rcache_blob *a;
            int rc = how == GET_ANSWER ? docstore_get_answer(ds, ids[i], &a, &err)
                                       : docstore_get(ds, ids[i], &d, NULL, &err);
            if (rc)
                harness_die("get", &err);
            if (how == GET_ANSWER)
                rcache_blob_release(a);
            else
                json_decref(d);
        }
        per[k] = to > from ? (harness_now() - t) / (double)(to - from) : 0;
    }
    return harness_median(per, SLICES);
}

/* ---------- the index build's limit ---------- */

typedef struct ixfile {
    char rel[PATH_MAX]; /* path under the indexes directory */
    buf bytes;
} ixfile;

typedef struct ixfiles {
    ixfile *f;
    size_t n, cap;
} ixfiles;

/* Every file under root/rel (dot-names included: .chunks holds none after
 * a build), read into memory. */
static void collect_files(const char *root, const char *rel, ixfiles *fs)
{
    char dir[PATH_MAX];
    fsx_pathf(dir, NULL, "%s%s", root, rel);
    DIR *d = opendir(dir);
    if (!d)
        harness_die("index files", NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char sub[PATH_MAX], p[PATH_MAX];
        fsx_pathf(sub, NULL, "%s/%s", rel, de->d_name);
        fsx_pathf(p, NULL, "%s%s", root, sub);
        struct stat st;
        if (lstat(p, &st) != 0)
            harness_die("index files", NULL);
        if (S_ISDIR(st.st_mode)) {
            collect_files(root, sub, fs);
            continue;
        }
        if (fs->n == fs->cap) {
            fs->cap = fs->cap ? fs->cap * 2 : 64;
            fs->f = realloc(fs->f, fs->cap * sizeof *fs->f);
            if (!fs->f)
                harness_die("index files", NULL);
        }
        ixfile *f = &fs->f[fs->n++];
        snprintf(f->rel, sizeof f->rel, "%s", sub);
        f->bytes = (buf)BUF_INIT;
        if (fsx_read_all(p, &f->bytes, NULL))
            harness_die("index files", NULL);
    }
    closedir(d);
}

/* The build's files published as one durable step, as pubset.h does it
 * with syncfs: each created and written, one syncfs, each renamed, one
 * syncfs (plain system calls). */
static void publish_together(const char *to, ixfiles *fs)
{
    char(*tmp)[PATH_MAX + 8] = malloc(fs->n * sizeof *tmp);
    int sfd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool ok = tmp && sfd >= 0;
    for (size_t i = 0; ok && i < fs->n; i++) {
        char p[PATH_MAX], dir[PATH_MAX];
        fsx_pathf(p, NULL, "%s%s", to, fs->f[i].rel);
        fsx_dirname(p, dir, sizeof dir);
        snprintf(tmp[i], sizeof tmp[i], "%s.tmp", p);
        int fd = fsx_mkdirs(dir, false, NULL)
                     ? -1
                     : open(tmp[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        ok = fd >= 0 && fsx_write_all(fd, fs->f[i].bytes.data, fs->f[i].bytes.len) == 0;
        ok = close(fd) == 0 && ok;
    }
    ok = ok && syncfs(sfd) == 0;
    for (size_t i = 0; ok && i < fs->n; i++) {
        char p[PATH_MAX];
        fsx_pathf(p, NULL, "%s%s", to, fs->f[i].rel);
        ok = rename(tmp[i], p) == 0;
    }
    ok = ok && syncfs(sfd) == 0;
    if (!ok)
        harness_die("index publish", NULL);
    close(sfd);
    free(tmp);
}

/* What no index build can beat, the kernel work it needs: every shard
 * listed and each record file stated (a scan's cache validation, as storh's
 * stat), then its output (the files the build left, the same count and
 * bytes) published as it publishes them into a scratch tree: together
 * (publish_together) where syncfs serves, else mkdirs, then temp, write,
 * fsync, rename, directory fsync per file. Seconds. */
static double index_io_seconds(const harness_opts *o, const char *coll)
{
    char root[PATH_MAX], to[PATH_MAX], data[PATH_MAX];
    fsx_pathf(root, NULL, "%s/%s/.storh/indexes", o->work, coll);
    fsx_pathf(to, NULL, "%s/limit-indexes", o->work);
    fsx_pathf(data, NULL, "%s/%s/data", o->work, coll);
    ixfiles fs = {0};
    collect_files(root, "", &fs);
    long stated;
    double scan = suite_stat_scan(data, &stated);
    if (fsx_mkdirs(to, true, NULL))
        harness_die("index publish", NULL);
    double t = harness_now();
    for (size_t i = 0; docgroup_default_mode() == DOCGROUP_SYNC_EACH && i < fs.n; i++) {
        char p[PATH_MAX], dir[PATH_MAX];
        fsx_pathf(p, NULL, "%s%s", to, fs.f[i].rel);
        fsx_dirname(p, dir, sizeof dir);
        if (fsx_mkdirs(dir, true, NULL) ||
            fsx_publish(p, fs.f[i].bytes.data, fs.f[i].bytes.len, NULL))
            harness_die("index publish", NULL);
    }
    if (docgroup_default_mode() != DOCGROUP_SYNC_EACH)
        publish_together(to, &fs);
    t = harness_now() - t + scan;
    for (size_t i = 0; i < fs.n; i++)
        buf_free(&fs.f[i].bytes);
    free(fs.f);
    harness_clean(to);
    return t;
}

void suite_service_cache(const harness_opts *o, docstore *ds)
{
    storh_err err;
    if (docstore_set_cache(ds, o->cache_mode, 100000, (size_t)64 << 20, &err))
        harness_die("cache", &err);
}

void suite_doc(const harness_opts *o, bench_result *r)
{
    long n = o->dataset;
    storh_err err;
    docstore *ds;
    if (docstore_open(o->work, "docs", &ds, &err))
        harness_die("open", &err);
    suite_service_cache(o, ds);
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    suite_docput(o, ds, ids, r);

    char path[PATH_MAX];
    fsx_pathf(path, NULL, "%s/export.jsonl", o->work);
    size_t cnt;
    double t = harness_now();
    if (docstore_export_jsonl(ds, path, &cnt, &err))
        harness_die("export", &err);
    bench_add(r, "doc.export_jsonl", cnt / (harness_now() - t), "records/s", "higher",
              "exportJsonl()");

    /* putStream() and importJsonl(), batch for batch next to their limit */
    suite_bulk_doc(o, r, path);

    /* get() as storh's bench times it: the first 1000 records, in order,
     * on the store that wrote them (its cache holds what the puts wrote:
     * validated hits) */
    json_t *d;
    long gets = n < 1000 ? n : 1000;
    /* what storhd's GET /v1/docs/{c}/{id} sends: the cached canonical
     * bytes, validated, without a tree (the same records, first) */
    bench_add(r, "doc.get_answer", timed_gets(ds, ids, gets, GET_ANSWER) * 1e6, "µs", "lower",
              "the answer bytes of a get after the puts (what GET sends)");
    bench_add(r, "doc.get", timed_gets(ds, ids, gets, GET_DATA) * 1e6, "µs", "lower",
              "get() after the puts (a validated cache hit), median of 10 slices");

    /* storh's "reopen" times the constructor alone, a second instance
     * beside the first; the teardown of the store (its record cache, its
     * indexes) is doc.close, at the end */
    docstore *re;
    /* a fraction of a millisecond: the median of five constructors, each
     * instance closed untimed before the next (the last one stays open) */
    double opens[5];
    for (int k = 0; k < 5; k++) {
        t = harness_now();
        if (docstore_open(o->work, "docs", &re, &err))
            harness_die("reopen", &err);
        opens[k] = harness_now() - t;
        if (k < 4)
            docstore_close(re);
    }
    bench_add(r, "doc.reopen", harness_median(opens, 5) * 1e3, "ms", "lower",
              "reopen an existing store (the constructor), median of 5");
    t = harness_now();
    if (docstore_get(re, ids[n / 2], &d, NULL, &err))
        harness_die("reopen get", &err);
    json_decref(d);
    bench_add(r, "doc.reopen_get", (harness_now() - t) * 1e3, "ms", "lower",
              "the first get() after the reopen");
    bench_add(r, "doc.get_uncached", timed_gets(re, ids, gets, GET_DATA) * 1e6, "µs", "lower",
              "get() single read, no cache (the store reopened without one)");
    docstore_close(re);

    const char *dj = "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"bucket\"},"
                     "{\"field\":\"publishedAt\",\"range\":true}]}";
    json_t *defs = sjson_decode(dj, strlen(dj), NULL);
    json_t *out;
    /* as storh's bench: the first 100 records deleted (untimed), then the
     * build over the N-100 left */
    long dels = n < 100 ? n : 100;
    bool existed;
    for (long i = 0; i < dels; i++)
        if (docstore_delete(ds, ids[i], &existed, &err))
            harness_die("delete", &err);
    t = harness_now();
    if (docstore_define_indexes(ds, defs, true, &out, &err))
        harness_die("indexes", &err);
    double built = harness_now() - t;
    bench_add(r, "doc.index_build", n > dels ? (double)(n - dels) / built : 0, "records/s",
              "higher", "index build over the N-100 records left, 2 equality + 1 range field");
    double limit = index_io_seconds(o, "docs");
    bench_add(r, "limit.index_io", n > dels ? (double)(n - dels) / limit : 0, "records/s", "higher",
              "limit: every shard listed and each record file stated, then the build's files "
              "(same count and bytes) published durably; per record built");
    json_decref(out);
    json_decref(defs);

    const char *qs[2] = {"{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],"
                         "\"limit\":100}",
                         "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],"
                         "\"count\":true}"};
    const char *names[2] = {"doc.query_eq_limit100", "doc.count_indexed"};
    const char *labels[2] = {"indexed equality query, limit(100)",
                             "indexed count() of the whole collection"};
    for (int k = 0; k < 2; k++) {
        json_t *b = sjson_decode(qs[k], strlen(qs[k]), NULL);
        query q;
        query_parse(b, &q, NULL);
        int iters = 50;
        docstore_query(ds, &q, &out, NULL); /* warm */
        json_decref(out);
        long long a0 = allocs_count();
        t = harness_now();
        for (int i = 0; i < iters; i++) {
            if (docstore_query(ds, &q, &out, &err))
                harness_die("query", &err);
            json_decref(out);
        }
        double per = (harness_now() - t) / iters;
        long long a1 = allocs_count();
        bench_add(r, names[k], k ? per * 1e6 : per * 1e3, k ? "µs" : "ms", "lower", labels[k]);
        if (a0 >= 0) {
            char an[64];
            snprintf(an, sizeof an, "%s.allocs", names[k]);
            bench_add(r, an, (double)(a1 - a0) / iters, "allocs", "lower",
                      "heap allocation calls per query (malloc, calloc, realloc)");
        }
        if (k == 0) { /* the bytes _query sends for it: cached records, no trees */
            buf ans = BUF_INIT;
            bool served;
            a0 = allocs_count();
            t = harness_now();
            for (int i = 0; i < iters; i++) {
                buf_reset(&ans);
                if (docstore_query_answer(ds, &q, &ans, &served, &err) || !served)
                    harness_die("query answer", &err);
            }
            per = (harness_now() - t) / iters;
            a1 = allocs_count();
            buf_free(&ans);
            bench_add(r, "doc.query_eq_limit100_answer", per * 1e3, "ms", "lower",
                      "indexed equality query, limit(100): the bytes POST _query sends (each "
                      "row its record's cached bytes; doc.query_eq_limit100 builds the tree)");
            if (a0 >= 0)
                bench_add(r, "doc.query_eq_limit100_answer.allocs", (double)(a1 - a0) / iters,
                          "allocs", "lower",
                          "heap allocation calls per query answer (malloc, calloc, realloc)");
        }
        query_free(&q);
        json_decref(b);
    }

    docstore_iter *it;
    t = harness_now();
    docstore_iter_open(ds, NULL, &it, NULL);
    const char *id;
    long seen = 0;
    while (docstore_iter_next(it, &id, &d, NULL) == 1) {
        json_decref(d);
        seen++;
    }
    docstore_iter_close(it);
    bench_add(r, "doc.stream", seen / (harness_now() - t), "records/s", "higher",
              "stream() of every record, validated and decoded");
    t = harness_now();
    docstore_close(ds);
    bench_add(r, "doc.close", (harness_now() - t) * 1e3, "ms", "lower",
              "close() of the store after the writes and reads");
    free(ids);
}

/* ---------- record cache ---------- */

/* Seconds of limit.cold_read for records [from, to): each file opened by
 * its path (made as a get makes it), fstat, read, closed. */
static double cold_read_slice(const char *data, char (*ids)[UUID7_LEN + 1], long from, long to)
{
    char path[PATH_MAX], bytes[65536];
    double t = harness_now();
    for (long i = from; i < to; i++) {
        snprintf(path, sizeof path, "%s/%c%c/%s.jsonc", data, ids[i][24], ids[i][25], ids[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) || st.st_size > (off_t)sizeof bytes ||
            read(fd, bytes, (size_t)st.st_size) != st.st_size || close(fd))
            harness_die("cold read limit", NULL);
    }
    return harness_now() - t;
}

/* cache.get_cold_answer and its limit, limit.cold_read, slice for slice
 * (ten slices, each first every other slice; medians): the answer bytes of
 * gets on a new cache, and the same files read with no cache at all, at
 * the same moment (a limit measured minutes away in the limits suite moved
 * 1.5x between runs at 1,000 records). */
static void cold_answers_and_limit(const harness_opts *o, docstore *ds, char (*ids)[UUID7_LEN + 1],
                                   bench_result *r)
{
    enum { SLICES = 10 };
    double per[SLICES], lim[SLICES];
    long n = o->dataset;
    char data[PATH_MAX];
    fsx_pathf(data, NULL, "%s/cached/data", o->work);
    for (int k = 0; k < SLICES; k++) {
        long from = n * k / SLICES, to = n * (k + 1) / SLICES;
        double tl = k % 2 ? cold_read_slice(data, ids, from, to) : 0;
        storh_err err;
        double t = harness_now();
        for (long i = from; i < to; i++) {
            rcache_blob *a;
            if (docstore_get_answer(ds, ids[i], &a, &err))
                harness_die("get", &err);
            rcache_blob_release(a);
        }
        t = harness_now() - t;
        if (k % 2 == 0)
            tl = cold_read_slice(data, ids, from, to);
        per[k] = t / (double)(to - from);
        lim[k] = tl / (double)(to - from);
    }
    bench_add(r, "cache.get_cold_answer", harness_median(per, SLICES) * 1e6, "µs", "lower",
              "the answer bytes of a cached get, cold (file read, kept as its bytes)");
    bench_add(r, "limit.cold_read", harness_median(lim, SLICES) * 1e6, "µs", "lower",
              "limit: open + fstat + read + close of each record file the cold gets read, slice "
              "for slice with them");
}

void suite_cache(const harness_opts *o, bench_result *r)
{
    long n = o->dataset;
    docstore *ds;
    storh_err err;
    docstore_open(o->work, "cached", &ds, NULL);
    docstore_stage *st;
    docstore_stage_begin(ds, &st, NULL);
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    for (long i = 0; i < n; i++) {
        json_t *d = harness_record(i);
        docstore_stage_put(st, NULL, d, ids[i], NULL);
        json_decref(d);
    }
    if (docstore_stage_commit(st, NULL, &err))
        harness_die("cache fill", &err);
    docstore_set_cache(ds, o->cache_mode, (size_t)n + 1, (size_t)1 << 30, NULL);
    bench_add(r, "cache.get_cold", timed_gets(ds, ids, n, GET_DATA) * 1e6, "µs", "lower",
              "cached get(), cold (file read, decode, fill), median of 10 slices");
    bench_add(r, "cache.get_warm", timed_gets(ds, ids, n, GET_DATA) * 1e6, "µs", "lower",
              "cached get(), warm (validated hit), median of 10 slices");
    /* what GET /v1/docs/{c}/{id} does: the answer bytes, cold (the file's
     * canonical bytes kept as they are) then warm, on a new cache */
    docstore_set_cache(ds, o->cache_mode, (size_t)n + 1, (size_t)1 << 30, NULL);
    cold_answers_and_limit(o, ds, ids, r);
    bench_add(r, "cache.get_warm_answer", timed_gets(ds, ids, n, GET_ANSWER) * 1e6, "µs", "lower",
              "the answer bytes of a cached get, warm (validated hit)");
    docstore_close(ds);
    free(ids);
}
