/* storh-bench: the engine benchmark harness, counterpart of storh's
 * `composer bench*` (see README "Benchmarks"). Every engine runs in process
 * against a scratch root on the same filesystem as the build; every write is
 * fsynced exactly as in production.
 *   run     --dataset=N --engine=doc|docgroup|log|queue|cache|filter|uuid|mirror|all
 *           [--cache-validation=stat|hash|trust] [--repeat=N] [--out=FILE]
 *   repeat  like run, --repeat defaults to 3
 *   range   --datasets=1000,10000 [--engines=doc,log] -> build/bench-ranges/
 *   compare a.json b.json
 *   gate    base.json cur.json [--threshold=10] [--metric=doc.put ...]
 *   ci      a 1k run of every engine gated against bench/baselines/ci-1k-all.json */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "docgroup.h"
#include "docstore.h"
#include "fsx.h"
#include "logquery.h"
#include "metrics.h"
#include "mirror.h"
#include "query.h"
#include "queue.h"
#include "rcache.h"
#include "recquery.h"
#include "seglog.h"
#include "sjson.h"
#include "uuid7.h"

typedef struct opts {
    bool quiet; /* no report on stdout (ci prints only its verdicts) */
    long dataset;
    const char *engine;
    int cache_mode;
    int repeat;
    const char *out;
    char work[PATH_MAX];
} opts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const storh_err *err)
{
    fprintf(stderr, "bench: %s: %s\n", what, err ? err->msg : strerror(errno));
    exit(1);
}

static json_t *record(long i)
{
    char title[64];
    snprintf(title, sizeof title, "Record number %ld", i);
    return json_pack("{sssssisisIss}", "title", title, "kind",
                     (char[]){'k', (char)('0' + i % 10), 0}, "tag", (int)(i % 7), "n",
                     (int)(i % 1000), "at", (json_int_t)i, "body",
                     "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.");
}

static char (*make_ids(long n, int64_t base_ms))[UUID7_LEN + 1]
{
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    for (long i = 0; ids && i < n; i++)
        uuid7_generate(ids[i], base_ms + i, NULL);
    return ids;
}

static void clean(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench: could not remove %s\n", dir);
}

/* ---------- DocStore ---------- */

static void bench_doc(const opts *o, bench_result *r)
{
    long n = o->dataset;
    storh_err err;
    docstore *ds;
    if (docstore_open(o->work, "docs", &ds, &err))
        die("open", &err);
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    double t = now_s();
    for (long i = 0; i < n; i++) {
        json_t *d = record(i);
        if (docstore_put(ds, NULL, d, ids[i], NULL, &err))
            die("put", &err);
        json_decref(d);
    }
    bench_add(r, "doc.put", n / (now_s() - t), "records/s", "higher",
              "put(), one durable file per record");

    docstore *st_ds;
    docstore_open(o->work, "streamed", &st_ds, NULL);
    docstore_stage *st;
    t = now_s();
    docstore_stage_begin(st_ds, &st, NULL);
    for (long i = 0; i < n; i++) {
        json_t *d = record(i);
        char id[UUID7_LEN + 1];
        if (docstore_stage_put(st, NULL, d, id, &err))
            die("stage", &err);
        json_decref(d);
    }
    if (docstore_stage_commit(st, NULL, &err))
        die("commit", &err);
    bench_add(r, "doc.put_stream", n / (now_s() - t), "records/s", "higher",
              "putStream() bulk insert");
    docstore_close(st_ds);

    char path[PATH_MAX];
    fsx_pathf(path, NULL, "%s/export.jsonl", o->work);
    size_t cnt;
    t = now_s();
    if (docstore_export_jsonl(ds, path, &cnt, &err))
        die("export", &err);
    bench_add(r, "doc.export_jsonl", cnt / (now_s() - t), "records/s", "higher", "exportJsonl()");

    docstore *imp;
    docstore_open(o->work, "imported", &imp, NULL);
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    t = now_s();
    docstore_stage_begin(imp, &st, NULL);
    while ((len = getline(&line, &cap, f)) > 0) {
        char id[UUID7_LEN + 1];
        if (docstore_stage_import_line(st, line, (size_t)len, id, &err))
            die("import", &err);
    }
    if (docstore_stage_commit(st, NULL, &err))
        die("import commit", &err);
    bench_add(r, "doc.import_jsonl", n / (now_s() - t), "records/s", "higher", "importJsonl()");
    free(line);
    fclose(f);
    docstore_close(imp);

    /* get(): cache on, STAT-validated (each hit stats the file) */
    docstore_set_cache(ds, RCACHE_STAT, (size_t)n + 1, (size_t)1 << 30, NULL);
    json_t *d;
    for (long i = 0; i < n; i++) {
        docstore_get(ds, ids[i], &d, NULL, NULL);
        json_decref(d);
    }
    long gets = n < 20000 ? 20000 : n;
    t = now_s();
    for (long i = 0; i < gets; i++) {
        if (docstore_get(ds, ids[(i * 7919) % n], &d, NULL, &err))
            die("get", &err);
        json_decref(d);
    }
    bench_add(r, "doc.get", (now_s() - t) / gets * 1e6, "µs", "lower",
              "get() single read, STAT-validated");

    docstore_close(ds);
    t = now_s();
    docstore_open(o->work, "docs", &ds, NULL);
    if (docstore_get(ds, ids[n / 2], &d, NULL, &err)) /* reopen and first read */
        die("reopen", &err);
    json_decref(d);
    bench_add(r, "doc.reopen", (now_s() - t) * 1e3, "ms", "lower",
              "reopen an existing store and read one record");
    docstore_set_cache(ds, RCACHE_STAT, (size_t)n + 1, (size_t)1 << 30, NULL);

    const char *dj = "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"tag\"},"
                     "{\"field\":\"at\",\"range\":true}]}";
    json_t *defs = sjson_decode(dj, strlen(dj), NULL);
    json_t *out;
    t = now_s();
    if (docstore_define_indexes(ds, defs, true, &out, &err))
        die("indexes", &err);
    bench_add(r, "doc.index_build", n / (now_s() - t), "records/s", "higher",
              "index build, 2 equality + 1 range field");
    json_decref(out);
    json_decref(defs);

    const char *qs[2] = {"{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"k3\"}],"
                         "\"limit\":100}",
                         "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"k3\"}],"
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
        t = now_s();
        for (int i = 0; i < iters; i++) {
            if (docstore_query(ds, &q, &out, &err))
                die("query", &err);
            json_decref(out);
        }
        double per = (now_s() - t) / iters;
        bench_add(r, names[k], k ? per * 1e6 : per * 1e3, k ? "µs" : "ms", "lower", labels[k]);
        query_free(&q);
        json_decref(b);
    }

    docstore_iter *it;
    t = now_s();
    docstore_iter_open(ds, NULL, &it, NULL);
    const char *id;
    long seen = 0;
    while (docstore_iter_next(it, &id, &d, NULL) == 1) {
        json_decref(d);
        seen++;
    }
    docstore_iter_close(it);
    bench_add(r, "doc.stream", seen / (now_s() - t), "records/s", "higher",
              "stream() of every record, re-read and decoded");
    docstore_close(ds);
    free(ids);
}

/* ---------- DocStore group commit ---------- */

typedef struct put_worker {
    docstore *ds;
    long n;
    pthread_t th;
} put_worker;

static json_t *record_1k(long i)
{
    static char pad[1001];
    if (!pad[0])
        memset(pad, 'x', sizeof pad - 1);
    return json_pack("{sisssi}", "n", (int)i, "pad", pad, "kind", (int)(i % 10));
}

static void *put_loop(void *arg)
{
    put_worker *w = arg;
    storh_err err;
    for (long i = 0; i < w->n; i++) {
        json_t *d = record_1k(i);
        char id[UUID7_LEN + 1];
        if (docstore_put(w->ds, NULL, d, id, NULL, &err))
            die("put", &err);
        json_decref(d);
    }
    return NULL;
}

/* n puts spread over threads, into a fresh collection; records/s. With
 * gs, the docgroup figures of the run (a delta). */
static double concurrent_puts(const opts *o, const char *name, int threads, int mode, long n,
                              docgroup_stats *gs)
{
    docgroup_stats before;
    docgroup_stats_snapshot(&before);
    docstore *ds;
    storh_err err;
    if (docstore_open(o->work, name, &ds, &err))
        die("open", &err);
    docstore_set_group_sync(ds, mode);
    put_worker w[32];
    double t = now_s();
    for (int i = 0; i < threads; i++) {
        w[i] = (put_worker){ds, n / threads + (i < n % threads), 0};
        if (pthread_create(&w[i].th, NULL, put_loop, &w[i]) != 0)
            die("thread", NULL);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(w[i].th, NULL);
    double rate = n / (now_s() - t);
    docstore_close(ds);
    if (gs) {
        docgroup_stats_snapshot(gs);
        gs->groups -= before.groups;
        gs->ops -= before.ops;
        gs->acked -= before.acked;
        gs->syncs -= before.syncs;
    }
    return rate;
}

/* The disk's per-publish limit: create, write 1 KiB, fsync, rename, fsync
 * the directory, one record after the other. */
static double disk_publish_rate(const opts *o, long n)
{
    char dir[PATH_MAX], tmp[PATH_MAX], fin[PATH_MAX];
    fsx_pathf(dir, NULL, "%s/disk", o->work);
    storh_err err;
    if (fsx_mkdirs(dir, false, &err))
        die("mkdir", &err);
    char data[1024];
    memset(data, 'x', sizeof data);
    double t = now_s();
    for (long i = 0; i < n; i++) {
        fsx_pathf(tmp, NULL, "%s/.%ld.tmp", dir, i);
        fsx_pathf(fin, NULL, "%s/%ld.jsonc", dir, i);
        if (fsx_write_file(tmp, data, sizeof data, true, &err) || fsx_rename(tmp, fin, true, &err))
            die("publish", &err);
    }
    return n / (now_s() - t);
}

static double per(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

/* One run: the disk's limit, then one thread, then 32 in each mode, back
 * to back, so the ratios compare figures of the same minute. */
static void bench_docgroup(const opts *o, bench_result *r)
{
    long n = o->dataset < 4000 ? o->dataset : 4000;
    long n1 = n < 200 ? n : 200; /* the serial runs are the slow ones */
    int mode = docgroup_default_mode();
    double disk = disk_publish_rate(o, n1);
    docgroup_stats g, ge, gf;
    double one = concurrent_puts(o, "one", 1, mode, n1, NULL);
    double dflt = concurrent_puts(o, "dflt", 32, mode, n, &g);
    double each = concurrent_puts(o, "each", 32, DOCGROUP_SYNC_EACH, n, &ge);
    double fs = concurrent_puts(o, "syncfs", 32, DOCGROUP_SYNC_FS, n, &gf);
    bench_add(r, "docgroup.disk_publish", disk, "records/s", "higher",
              "the disk's per-publish limit: create, write, fsync, rename, dir fsync");
    bench_add(r, "docgroup.put_1", one, "records/s", "higher", "put() from one thread");
    bench_add(r, "docgroup.put_32", dflt, "records/s", "higher",
              "put() from 32 threads, grouped (the default --doc-sync)");
    bench_add(r, "docgroup.put_32_fsync", each, "records/s", "higher",
              "put() from 32 threads, temps and directories fsynced in parallel");
    bench_add(r, "docgroup.put_32_syncfs", fs, "records/s", "higher",
              "put() from 32 threads, one syncfs per step of a group");
    bench_add(r, "docgroup.group_size_32", per(g.ops, g.groups), "writes", "higher",
              "writes per group, 32 threads (the default)");
    bench_add(r, "docgroup.syncs_per_write_32", per(g.syncs, g.acked), "syncs", "lower",
              "fsync and syncfs calls per acknowledged write, 32 threads (the default)");
    bench_add(r, "docgroup.syncs_per_write_32_fsync", per(ge.syncs, ge.acked), "syncs", "lower",
              "fsyncs per acknowledged write, 32 threads, parallel fsyncs");
    bench_add(r, "docgroup.syncs_per_write_32_syncfs", per(gf.syncs, gf.acked), "syncs", "lower",
              "syncfs calls per acknowledged write, 32 threads");
    bench_add(r, "docgroup.put_32_vs_1", dflt / one, "x", "higher",
              "put_32 over put_1 in the same run");
    bench_add(r, "docgroup.put_32_vs_disk", dflt / disk, "x", "higher",
              "put_32 over disk_publish in the same run");
}

/* ---------- record cache ---------- */

static void bench_cache(const opts *o, bench_result *r)
{
    long n = o->dataset;
    docstore *ds;
    storh_err err;
    docstore_open(o->work, "cached", &ds, NULL);
    docstore_stage *st;
    docstore_stage_begin(ds, &st, NULL);
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    for (long i = 0; i < n; i++) {
        json_t *d = record(i);
        docstore_stage_put(st, NULL, d, ids[i], NULL);
        json_decref(d);
    }
    if (docstore_stage_commit(st, NULL, &err))
        die("cache fill", &err);
    docstore_set_cache(ds, o->cache_mode, (size_t)n + 1, (size_t)1 << 30, NULL);
    json_t *d;
    double t = now_s();
    for (long i = 0; i < n; i++) {
        docstore_get(ds, ids[i], &d, NULL, NULL);
        json_decref(d);
    }
    bench_add(r, "cache.get_cold", (now_s() - t) / n * 1e6, "µs", "lower",
              "cached get(), cold (file read, decode, fill)");
    t = now_s();
    for (long i = 0; i < n; i++) {
        docstore_get(ds, ids[i], &d, NULL, NULL);
        json_decref(d);
    }
    bench_add(r, "cache.get_warm", (now_s() - t) / n * 1e6, "µs", "lower",
              "cached get(), warm (validated hit)");
    docstore_close(ds);
    free(ids);
}

/* ---------- SegmentedLog ---------- */

static seglog *open_log(const opts *o, const char *name)
{
    seglog_opts so;
    seglog_opts_default(&so);
    so.max_segment_bytes = 16 * 1024; /* as the storh bench: rolls often */
    seglog *s;
    storh_err err;
    if (seglog_open(o->work, name, &so, true, &s, &err))
        die("log open", &err);
    return s;
}

static long drain(seglog *s, const recquery *q)
{
    seglog_iter *it;
    seglog_iter_open(s, q, &it, NULL);
    const char *id;
    json_t *d;
    long n = 0;
    while (seglog_iter_next(it, &id, &d, NULL) == 1) {
        json_decref(d);
        n++;
    }
    seglog_iter_close(it);
    return n;
}

static void bench_log(const opts *o, bench_result *r)
{
    long n = o->dataset;
    int64_t base = INT64_C(1700000000000);
    char(*ids)[UUID7_LEN + 1] = make_ids(n, base);
    seglog *s = open_log(o, "events");
    storh_err err;
    double t = now_s();
    for (long i = 0; i < n; i++) {
        json_t *d = record(i);
        char id[UUID7_LEN + 1];
        if (seglog_put(s, ids[i], d, id, &err))
            die("log put", &err);
        json_decref(d);
    }
    bench_add(r, "log.put", n / (now_s() - t), "appends/s", "higher",
              "put(), fsync after every append");

    seglog *bulk = open_log(o, "bulk");
    seglog_batch *b;
    t = now_s();
    seglog_batch_begin(bulk, &b, NULL);
    for (long i = 0; i < n; i++) {
        json_t *d = record(i);
        char id[UUID7_LEN + 1];
        seglog_batch_element(b, d, id, NULL);
        json_decref(d);
    }
    if (seglog_batch_commit(b, NULL, &err))
        die("log bulk", &err);
    bench_add(r, "log.append_stream", n / (now_s() - t), "records/s", "higher",
              "appendStream() bulk insert");
    seglog_close(bulk);

    recquery q;
    recquery_init(&q);
    recquery_after(&q, ids[n / 2], UUID7_LEN, NULL);
    recquery_limit(&q, 100, NULL);
    int iters = 20;
    t = now_s();
    for (int i = 0; i < iters; i++)
        drain(s, &q);
    bench_add(r, "log.cursor_read", (now_s() - t) / iters * 1e3, "ms", "lower",
              "cursor read, 100 records from the middle");
    recquery_clear(&q);
    recquery_init(&q);
    long span = n < 100 ? n : 100;
    recquery_time_range(&q, true, base + n / 2, true, base + n / 2 + span - 1, NULL);
    t = now_s();
    for (int i = 0; i < iters; i++)
        drain(s, &q);
    bench_add(r, "log.time_range", (now_s() - t) / iters * 1e3, "ms", "lower",
              "time-range read (100 ms window)");
    recquery_clear(&q);

    const char *cj = "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"k3\"}],"
                     "\"count\":true}";
    json_t *qb = sjson_decode(cj, strlen(cj), NULL);
    query cq;
    query_parse(qb, &cq, NULL);
    json_t *out;
    logset one = {&s, NULL, 1};
    t = now_s();
    if (logquery_run(&one, &cq, &out, &err))
        die("log count", &err);
    bench_add(r, "log.eq_count_cold", (now_s() - t) * 1e6, "µs", "lower",
              "equality count(), first call (builds the counters by a scan)");
    json_decref(out);
    t = now_s();
    for (int i = 0; i < iters; i++) {
        if (logquery_run(&one, &cq, &out, &err))
            die("log count", &err);
        json_decref(out);
    }
    bench_add(r, "log.eq_count", (now_s() - t) / iters * 1e6, "µs", "lower",
              "equality count() from the counters");
    query_free(&cq);
    json_decref(qb);

    bool ex;
    for (long i = 0; i < n; i += 10)
        seglog_delete(s, ids[i], &ex, NULL);
    size_t live;
    if (seglog_count(s, &live, &err))
        die("count", &err);
    t = now_s();
    if (seglog_compact(s, &out, &err))
        die("compact", &err);
    bench_add(r, "log.compact", live / (now_s() - t), "records/s", "higher",
              "compact() of every sealed segment");
    json_decref(out);
    seglog_close(s);

    /* a torn tail on the active segment, then reopen */
    char p[PATH_MAX];
    fsx_pathf(p, NULL, "%s/events/manifest.jsonc", o->work);
    buf m = BUF_INIT;
    fsx_read_all(p, &m, NULL);
    json_t *man = json_loadb(m.data, m.len, 0, NULL);
    fsx_pathf(p, NULL, "%s/events/segments/%s", o->work,
              json_string_value(json_object_get(json_object_get(man, "active"), "file")));
    json_decref(man);
    buf_free(&m);
    FILE *f = fopen(p, "a");
    fputs("120\tdeadbeef\t{\"op\":\"put\",\"id\":\"", f);
    fclose(f);
    t = now_s();
    s = open_log(o, "events");
    bench_add(r, "log.reopen_torn", live / (now_s() - t), "records/s", "higher",
              "reopen with torn-tail recovery");
    seglog_close(s);
    free(ids);
}

/* ---------- Queue ---------- */

static void bench_queue(const opts *o, bench_result *r)
{
    long n = o->dataset;
    queue *q;
    storh_err err;
    if (queue_open(o->work, "jobs", true, &q, &err))
        die("queue open", &err);
    json_t *one = json_array();
    double t = now_s();
    for (long i = 0; i < n; i++) {
        json_array_clear(one);
        json_array_append_new(one, json_pack("{si}", "n", (int)i));
        json_t *ids;
        if (queue_enqueue_many(q, one, &ids, &err))
            die("enqueue", &err);
        json_decref(ids);
    }
    bench_add(r, "queue.enqueue", n / (now_s() - t), "jobs/s", "higher",
              "enqueue(), fsync after every event");
    json_t *claimed = json_array();
    t = now_s();
    for (long i = 0; i < n; i++) {
        json_t *c;
        if (queue_claim(q, 1, &c, &err))
            die("claim", &err);
        json_array_extend(claimed, c);
        json_decref(c);
    }
    bench_add(r, "queue.claim", n / (now_s() - t), "jobs/s", "higher", "claim()");
    t = now_s();
    for (size_t i = 0; i < json_array_size(claimed); i++) {
        json_t *id = json_pack("[O]", json_object_get(json_array_get(claimed, i), "id"));
        size_t done;
        if (queue_complete_many(q, id, true, &done, &err))
            die("complete", &err);
        json_decref(id);
    }
    bench_add(r, "queue.complete", n / (now_s() - t), "jobs/s", "higher", "complete()");
    json_decref(claimed);
    queue_close(q);

    queue_open(o->work, "many", true, &q, NULL);
    json_t *jobs = json_array();
    for (long i = 0; i < n; i++)
        json_array_append_new(jobs, json_pack("{si}", "n", (int)i));
    json_t *ids;
    t = now_s();
    if (queue_enqueue_many(q, jobs, &ids, &err))
        die("enqueueMany", &err);
    bench_add(r, "queue.enqueue_many", n / (now_s() - t), "jobs/s", "higher", "enqueueMany()");
    json_decref(ids);
    json_decref(jobs);
    json_t *all = json_array();
    t = now_s();
    for (;;) {
        json_t *c;
        if (queue_claim(q, 1000, &c, &err))
            die("claimMany", &err);
        size_t got = json_array_size(c);
        json_array_extend(all, c);
        json_decref(c);
        if (!got)
            break;
    }
    bench_add(r, "queue.claim_many", n / (now_s() - t), "jobs/s", "higher",
              "claimMany() in batches of 1000");
    json_t *idl = json_array();
    for (size_t i = 0; i < json_array_size(all); i++)
        json_array_append(idl, json_object_get(json_array_get(all, i), "id"));
    t = now_s();
    for (size_t i = 0; i < json_array_size(idl); i += 1000) {
        json_t *part = json_array();
        for (size_t k = i; k < i + 1000 && k < json_array_size(idl); k++)
            json_array_append(part, json_array_get(idl, k));
        size_t done;
        if (queue_complete_many(q, part, true, &done, &err))
            die("completeMany", &err);
        json_decref(part);
    }
    bench_add(r, "queue.complete_many", n / (now_s() - t), "jobs/s", "higher",
              "completeMany() in batches of 1000");
    json_decref(idl);
    json_decref(all);
    queue_close(q);
}

/* ---------- SQL mirror ---------- */

static void bench_mirror_driver(const opts *o, bench_result *r, const char *prefix,
                                const char *driver, const char *target)
{
    long n = o->dataset;
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\"driver\":\"%s\",\"%s\":\"%s\",\"prefix\":\"bench_\",\"collections\":{"
             "\"docs\":{\"kind\":\"doc\",\"schema\":{\"fields\":{\"kind\":{\"type\":"
             "\"string\",\"index\":true},\"n\":{\"type\":\"int\"}}}}}}",
             driver, strcmp(driver, "sqlite") ? "conninfo" : "path", target);
    json_t *cj = sjson_decode(cfg, strlen(cfg), NULL);
    mirror *m;
    storh_err err;
    if (mirror_new("bench", cj, &m, &err))
        die("mirror", &err);
    json_decref(cj);
    const mirror_coll *c = mirror_find(m, "docs", false, &err);
    mirror_uninstall(m, c, NULL);
    docstore *ds;
    char sub[PATH_MAX];
    fsx_pathf(sub, NULL, "%s/%s", o->work, prefix);
    docstore_open(sub, "docs", &ds, NULL);
    docstore_stage *st;
    docstore_stage_begin(ds, &st, NULL);
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    for (long i = 0; i < n; i++) {
        json_t *d = record(i);
        docstore_stage_put(st, NULL, d, ids[i], NULL);
        json_decref(d);
    }
    if (docstore_stage_commit(st, NULL, &err))
        die("mirror fill", &err);
    mirror_source src = {.ds = ds};
    char name[64];
    json_t *tot = json_object();
    double t = now_s();
    if (mirror_push(m, c, &src, tot, &err))
        die("push", &err);
    snprintf(name, sizeof name, "%s.push", prefix);
    bench_add(r, name, n / (now_s() - t), "rows/s", "higher", "initial push()");
    t = now_s();
    if (mirror_push(m, c, &src, tot, &err))
        die("push", &err);
    snprintf(name, sizeof name, "%s.push_nochange", prefix);
    bench_add(r, name, n / (now_s() - t), "records/s", "higher", "push() when nothing changed");
    json_t *flush = json_array();
    for (long i = 0; i < 100 && i < n; i++)
        json_array_append_new(flush, json_string(ids[(i * 37) % n]));
    json_t *fo;
    t = now_s();
    if (mirror_flush(m, c, &src, flush, &fo, &err))
        die("flush", &err);
    snprintf(name, sizeof name, "%s.flush100", prefix);
    bench_add(r, name, (now_s() - t) * 1e3, "ms", "lower", "flush() of 100 ids");
    json_decref(fo);
    json_decref(flush);
    mparam p = {MPARAM_TEXT, "k3", 2, 0, 0};
    char *v = NULL;
    const char *sql = strcmp(driver, "sqlite")
                          ? "SELECT COUNT(*) FROM \"bench_docs\" WHERE \"kind\" = $1"
                          : "SELECT COUNT(*) FROM \"bench_docs\" WHERE \"kind\" = ?";
    mirror_scalar(m, sql, &p, 1, &v, NULL); /* warm */
    free(v);
    int iters = 20;
    t = now_s();
    for (int i = 0; i < iters; i++) {
        if (mirror_scalar(m, sql, &p, 1, &v, &err))
            die("count", &err);
        free(v);
    }
    snprintf(name, sizeof name, "%s.sql_count", prefix);
    bench_add(r, name, (now_s() - t) / iters * 1e3, "ms", "lower",
              "indexed SQL COUNT from the mirror");
    t = now_s();
    if (mirror_rebuild(m, c, &src, tot, &err))
        die("rebuild", &err);
    snprintf(name, sizeof name, "%s.rebuild", prefix);
    bench_add(r, name, n / (now_s() - t), "rows/s", "higher", "rebuild()");
    docstore *empty;
    fsx_pathf(sub, NULL, "%s/%s-restore", o->work, prefix);
    docstore_open(sub, "docs", &empty, NULL);
    mirror_source dst = {.ds = empty};
    t = now_s();
    if (mirror_pull(m, c, &dst, tot, &err))
        die("pull", &err);
    snprintf(name, sizeof name, "%s.pull", prefix);
    bench_add(r, name, n / (now_s() - t), "records/s", "higher",
              "pull() restore into an empty store");
    json_decref(tot);
    mirror_uninstall(m, c, NULL);
    mirror_free(m);
    docstore_close(empty);
    docstore_close(ds);
    free(ids);
}

static void bench_mirror(const opts *o, bench_result *r)
{
    char path[PATH_MAX];
    fsx_pathf(path, NULL, "%s/mirror.sqlite", o->work);
    bench_mirror_driver(o, r, "mirror", "sqlite", path);
    const char *pg = getenv("STORHD_BENCH_PG");
    if (pg)
        bench_mirror_driver(o, r, "mirror_pg", "postgres", pg);
}

/* ---------- micro ---------- */

static void bench_uuid(const opts *o, bench_result *r)
{
    long n = o->dataset * 10;
    char id[UUID7_LEN + 1];
    double t = now_s();
    for (long i = 0; i < n; i++)
        uuid7_generate(id, -1, NULL);
    bench_add(r, "uuid.generate", (now_s() - t) / n * 1e6, "µs", "lower", "UUIDv7 generate");
    volatile int ok = 0;
    t = now_s();
    for (long i = 0; i < n; i++)
        ok += uuid7_is_valid(id, UUID7_LEN);
    bench_add(r, "uuid.validate", (now_s() - t) / n * 1e6, "µs", "lower", "UUIDv7 validate");
    (void)ok;
}

static void bench_filter(const opts *o, bench_result *r)
{
    long n = o->dataset * 10;
    json_t **rows = malloc((size_t)n * sizeof *rows);
    for (long i = 0; i < n; i++)
        rows[i] = record(i);
    const char *w = "[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"k3\"},"
                    "{\"field\":\"n\",\"op\":\"gte\",\"value\":100}]";
    json_t *where = sjson_decode(w, strlen(w), NULL);
    query q;
    memset(&q, 0, sizeof q);
    query_parse_where(where, &q, NULL);
    volatile long hits = 0;
    double t = now_s();
    for (long i = 0; i < n; i++)
        hits += query_match(&q, NULL, rows[i]);
    bench_add(r, "filter.rows", n / (now_s() - t), "rows/s", "higher",
              "in-memory predicate filter");
    (void)hits;
    query_free(&q);
    json_decref(where);
    for (long i = 0; i < n; i++)
        json_decref(rows[i]);
    free(rows);
}

/* ---------- driver ---------- */

static const struct {
    const char *name;
    void (*fn)(const opts *, bench_result *);
} engines[] = {{"doc", bench_doc},       {"log", bench_log},          {"queue", bench_queue},
               {"cache", bench_cache},   {"filter", bench_filter},    {"uuid", bench_uuid},
               {"mirror", bench_mirror}, {"docgroup", bench_docgroup}};

static int run_engines(opts *o, bench_result *r)
{
    bool any = false;
    for (int rep = 0; rep < o->repeat; rep++)
        for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
            if (strcmp(o->engine, "all") && strcmp(o->engine, engines[e].name))
                continue;
            any = true;
            snprintf(o->work, sizeof o->work, "build/bench-work/%ld-%s-%d", (long)getpid(),
                     engines[e].name, rep);
            storh_err err;
            if (fsx_mkdirs(o->work, false, &err))
                die("work dir", &err);
            fprintf(stderr, "bench: %s, %ld records, run %d/%d\n", engines[e].name, o->dataset,
                    rep + 1, o->repeat);
            engines[e].fn(o, r);
            clean(o->work);
        }
    if (!any) {
        fprintf(stderr, "bench: unknown engine %s\n", o->engine);
        return 2;
    }
    bench_finish(r);
    return 0;
}

static int write_doc(const json_t *doc, const char *path)
{
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    fsx_mkdirs(dir, false, NULL);
    if (json_dump_file(doc, path, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(6))) {
        fprintf(stderr, "bench: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static int cmd_run(opts *o)
{
    bench_result r;
    bench_result_init(&r);
    int rc = run_engines(o, &r);
    if (rc)
        return rc;
    json_t *doc = bench_document(&r, o->dataset, o->repeat, o->engine);
    rc = write_doc(doc, o->out);
    if (!rc) {
        char md[PATH_MAX], html[PATH_MAX];
        snprintf(md, sizeof md, "%.*s.md", (int)(strlen(o->out) - 5), o->out);
        snprintf(html, sizeof html, "%.*s.html", (int)(strlen(o->out) - 5), o->out);
        bench_write_reports(doc, md, html);
        fprintf(stderr, "bench: wrote %s, %s, %s\n", o->out, md, html);
        FILE *f = o->quiet ? NULL : fopen(md, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f))
            fputs(line, stdout);
        if (f)
            fclose(f);
    }
    json_decref(doc);
    bench_result_free(&r);
    return rc;
}

static json_t *load(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    if (!j)
        fprintf(stderr, "bench: %s: %s\n", path, e.text);
    return j;
}

static int cmd_compare(const char *a, const char *b)
{
    json_t *x = load(a), *y = load(b);
    if (!x || !y)
        return 2;
    printf("| metric | %s | %s | change |\n|---|---|---|---|\n", a, b);
    const char *k;
    json_t *m;
    json_object_foreach(json_object_get(x, "metrics"), k, m)
    {
        json_t *n = json_object_get(json_object_get(y, "metrics"), k);
        if (!n)
            continue;
        double va = json_number_value(json_object_get(m, "value"));
        double vb = json_number_value(json_object_get(n, "value"));
        bool higher = !strcmp(json_string_value(json_object_get(m, "better")), "higher");
        double gain = va > 0 ? (higher ? vb / va : va / (vb > 0 ? vb : 1e-12)) : 0;
        printf("| %s | %.4g %s | %.4g %s | %.2fx %s |\n", k, va,
               json_string_value(json_object_get(m, "unit")), vb,
               json_string_value(json_object_get(n, "unit")), gain >= 1 ? gain : 1 / gain,
               gain >= 1 ? "better" : "worse");
    }
    json_decref(x);
    json_decref(y);
    return 0;
}

static int cmd_gate(const char *base, const char *cur, double threshold, char **only, int nonly,
                    bool verbose)
{
    json_t *x = load(base), *y = load(cur);
    if (!x || !y)
        return 2;
    int bad = 0, checked = 0;
    const char *k;
    json_t *m;
    json_object_foreach(json_object_get(x, "metrics"), k, m)
    {
        bool wanted = nonly == 0;
        for (int i = 0; i < nonly; i++)
            wanted = wanted || !strcmp(only[i], k);
        json_t *n = json_object_get(json_object_get(y, "metrics"), k);
        if (!wanted)
            continue;
        if (!n) {
            printf("MISSING %s\n", k);
            bad++;
            continue;
        }
        double va = json_number_value(json_object_get(m, "value"));
        double vb = json_number_value(json_object_get(n, "value"));
        bool higher = !strcmp(json_string_value(json_object_get(m, "better")), "higher");
        /* worse by more than threshold percent, as a ratio: 10 means 1.1x
         * slower whether the metric is a rate or a latency */
        double worse =
            higher ? (vb > 0 ? (va / vb - 1) * 100 : 1e9) : (va > 0 ? (vb / va - 1) * 100 : 0);
        checked++;
        if (va > 0 && worse > threshold) {
            printf("REGRESSION %s: %.4g -> %.4g %s (%.1f%% worse, threshold %.0f%%)\n", k, va, vb,
                   json_string_value(json_object_get(m, "unit")), worse, threshold);
            bad++;
        } else if (verbose) {
            printf("ok %s: %.4g -> %.4g %s\n", k, va, vb,
                   json_string_value(json_object_get(m, "unit")));
        }
    }
    for (int i = 0; i < nonly; i++)
        if (!json_object_get(json_object_get(x, "metrics"), only[i])) {
            printf("UNKNOWN metric %s\n", only[i]);
            bad++;
        }
    json_decref(x);
    json_decref(y);
    printf("%d checked, %d failed\n", checked, bad);
    return bad ? 1 : 0;
}

static const char *arg(const char *a, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(a, name, n) && a[n] == '=' ? a + n + 1 : NULL;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "run";
    opts o = {.dataset = 1000,
              .engine = "all",
              .cache_mode = RCACHE_STAT,
              .repeat = 1,
              .out = "build/bench-current.json"};
    if (!strcmp(cmd, "repeat"))
        o.repeat = 3;
    const char *datasets = NULL, *engines_list = NULL;
    double threshold = 10;
    char *only[64];
    int nonly = 0;
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    for (int i = 2; i < argc; i++) {
        const char *v;
        if ((v = arg(argv[i], "--dataset")))
            o.dataset = atol(v);
        else if ((v = arg(argv[i], "--engine")))
            o.engine = v;
        else if ((v = arg(argv[i], "--engines")))
            engines_list = v;
        else if ((v = arg(argv[i], "--datasets")))
            datasets = v;
        else if ((v = arg(argv[i], "--repeat")))
            o.repeat = atoi(v);
        else if ((v = arg(argv[i], "--out")))
            o.out = v;
        else if ((v = arg(argv[i], "--threshold")))
            threshold = atof(v);
        else if ((v = arg(argv[i], "--metric")) && nonly < 64)
            only[nonly++] = (char *)v;
        else if ((v = arg(argv[i], "--cache-validation"))) {
            o.cache_mode = !strcmp(v, "hash")    ? RCACHE_HASH
                           : !strcmp(v, "trust") ? RCACHE_TRUST
                                                 : RCACHE_STAT;
            if (strcmp(v, "stat") && strcmp(v, "hash") && strcmp(v, "trust")) {
                fprintf(stderr, "bench: --cache-validation must be stat, hash or trust\n");
                return 2;
            }
        } else if (argv[i][0] != '-' && npos < 2)
            pos[npos++] = argv[i];
        else {
            fprintf(stderr, "bench: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (o.dataset < 10 || o.repeat < 1) {
        fprintf(stderr, "bench: --dataset must be >= 10 and --repeat >= 1\n");
        return 2;
    }
    if (!strcmp(cmd, "run") || !strcmp(cmd, "repeat"))
        return cmd_run(&o);
    if (!strcmp(cmd, "compare") && npos == 2)
        return cmd_compare(pos[0], pos[1]);
    if (!strcmp(cmd, "gate") && npos == 2)
        return cmd_gate(pos[0], pos[1], threshold, only, nonly, true);
    if (!strcmp(cmd, "ci")) {
        /* medians of three: a single 1k run of an fsync-bound metric is
         * a handful of fsyncs, too few to tell anything from noise */
        o.dataset = 1000;
        o.repeat = 3;
        o.quiet = true;
        o.out = "build/bench-ci.json";
        int rc = cmd_run(&o);
        /* generous: shared machines move fsync-bound figures a lot; this
         * catches order-of-magnitude regressions, not noise */
        return rc ? rc : cmd_gate("bench/baselines/ci-1k-all.json", o.out, 300, only, nonly, false);
    }
    if (!strcmp(cmd, "range") && datasets) {
        char *list = strdup(datasets), *save = NULL;
        const char *which = engines_list ? engines_list : "doc,log,queue,cache,filter,uuid,mirror";
        for (char *d = strtok_r(list, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
            char *el = strdup(which), *s2 = NULL;
            for (char *e = strtok_r(el, ",", &s2); e; e = strtok_r(NULL, ",", &s2)) {
                char out[PATH_MAX];
                snprintf(out, sizeof out, "build/bench-ranges/%s-%s.json", e, d);
                opts ro = o;
                ro.dataset = atol(d);
                ro.engine = e;
                ro.out = out;
                int rc = cmd_run(&ro);
                if (rc) {
                    free(el);
                    free(list);
                    return rc;
                }
            }
            free(el);
        }
        free(list);
        return 0;
    }
    fprintf(stderr, "usage: storh-bench run|repeat|range|compare|gate|ci [options]\n");
    return 2;
}
