/* suite_mirror (bench): the SQL mirror figures over SQLite, and over
 * PostgreSQL when STORHD_BENCH_PG names a server. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "suite_bulk.h"
#include "docstore.h"
#include "fsx.h"
#include "mirror.h"
#include "sjson.h"

/* ---------- SQL mirror ---------- */

/* SQLite's own insert rate for the suite's rows, on each side of a timed
 * call: the disk and the machine's load move within a run (the limits
 * suite's figure moved 130k-220k rows/s between runs minutes apart), so a
 * call is held against the limit measured around it. before: 0 for the
 * first measurement (returned as it is), else that figure: then the rate
 * of the two together (their mean time). replace: the table holds the
 * rows and the timed transaction empties it first (a rebuild's work). */
static double adjacent_limit(const harness_opts *o, double before, bool replace)
{
    double now = suite_sqlite_insert_rate(o, o->dataset, "limit-mirror.sqlite", replace);
    return before > 0 && now > 0 ? 2 / (1 / before + 1 / now) : now;
}

static void bench_mirror_driver(const harness_opts *o, bench_result *r, const char *prefix,
                                const char *driver, const char *target)
{
    long n = o->dataset;
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\"driver\":\"%s\",\"%s\":\"%s\",\"prefix\":\"bench_\",\"collections\":{"
             "\"docs\":{\"kind\":\"doc\",\"schema\":{\"fields\":{"
             "\"kind\":{\"type\":\"string\",\"index\":true},"
             "\"slug\":{\"type\":\"string\",\"unique\":true},"
             "\"publishedAt\":{\"type\":\"int\",\"range\":true}}}}}}",
             driver, strcmp(driver, "sqlite") ? "conninfo" : "path", target);
    json_t *cj = sjson_decode(cfg, strlen(cfg), NULL);
    mirror *m;
    storh_err err;
    if (mirror_new("bench", cj, &m, &err))
        harness_die("mirror", &err);
    json_decref(cj);
    const mirror_coll *c = mirror_find(m, "docs", false, &err);
    mirror_uninstall(m, c, NULL);
    docstore *ds;
    char sub[PATH_MAX];
    fsx_pathf(sub, NULL, "%s/%s", o->work, prefix);
    docstore_open(sub, "docs", &ds, NULL);
    /* the push reads what the fill left in the cache, as storh's reads the
     * records its store kept */
    suite_service_cache(o, ds);
    docstore_stage *st;
    docstore_stage_begin(ds, &st, NULL);
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    for (long i = 0; i < n; i++) {
        json_t *d = harness_record(i);
        docstore_stage_put(st, NULL, d, ids[i], NULL);
        json_decref(d);
    }
    if (docstore_stage_commit(st, NULL, &err))
        harness_die("mirror fill", &err);
    mirror_source src = {.ds = ds};
    char name[64];
    json_t *tot = json_object();
    /* the table made before the clock, as storh's bench.php installs before
     * it times push() (its DDL is a few synced autocommits) */
    if (mirror_install(m, c, &err))
        harness_die("install", &err);
    bool sqlite = !strcmp(driver, "sqlite");
    double around = sqlite ? adjacent_limit(o, 0, false) : 0;
    double t = harness_now();
    if (mirror_push(m, c, &src, tot, &err))
        harness_die("push", &err);
    snprintf(name, sizeof name, "%s.push", prefix);
    bench_add(r, name, n / (harness_now() - t), "rows/s", "higher", "initial push()");
    if (sqlite)
        bench_add(r, "limit.mirror_push", adjacent_limit(o, around, false), "rows/s", "higher",
                  "limit: SQLite's own insert of the push's rows (limit.sqlite_insert), "
                  "measured right before and right after it");
    /* a few milliseconds at 1k records: the median of three pushes, each
     * beside a stat scan of the same store (what a push of unchanged
     * records cannot avoid), the two taking turns going first: the
     * limits suite's scan, minutes away, moved 60-110% of the push */
    double tn[3], ts[3];
    char data[PATH_MAX];
    fsx_pathf(data, NULL, "%s/docs/data", sub);
    for (int i = 0; i < 3; i++) {
        long stated = 0;
        if (i % 2 == 0)
            ts[i] = suite_stat_scan(data, &stated);
        t = harness_now();
        if (mirror_push(m, c, &src, tot, &err))
            harness_die("push", &err);
        tn[i] = harness_now() - t;
        if (i % 2)
            ts[i] = suite_stat_scan(data, &stated);
        if (stated != n)
            harness_die("stat scan: not every record file stated", NULL);
    }
    snprintf(name, sizeof name, "%s.push_nochange", prefix);
    bench_add(r, name, n / harness_median(tn, 3), "records/s", "higher",
              "push() when nothing changed (median of 3)");
    if (sqlite)
        bench_add(r, "limit.mirror_push_nochange", n / harness_median(ts, 3), "records/s", "higher",
                  "limit: every shard listed and each record file stated (limit.stat_scan), "
                  "in turns with the pushes");
    json_t *flush = json_array();
    for (long i = 0; i < 100 && i < n; i++)
        json_array_append_new(flush, json_string(ids[(i * 37) % n]));
    json_t *fo;
    t = harness_now();
    if (mirror_flush(m, c, &src, flush, &fo, &err))
        harness_die("flush", &err);
    snprintf(name, sizeof name, "%s.flush100", prefix);
    bench_add(r, name, (harness_now() - t) * 1e3, "ms", "lower", "flush() of 100 ids");
    json_decref(fo);
    json_decref(flush);
    mparam p = {MPARAM_TEXT, "page", 4, 0, 0};
    char *v = NULL;
    const char *sql = strcmp(driver, "sqlite")
                          ? "SELECT COUNT(*) FROM \"bench_docs\" WHERE \"kind\" = $1"
                          : "SELECT COUNT(*) FROM \"bench_docs\" WHERE \"kind\" = ?";
    mirror_scalar(m, sql, &p, 1, &v, NULL); /* warm */
    free(v);
    /* each call timed alone, the median of 51: a call is tens of µs, so
     * one preemption in a mean of a few calls decided the figure */
    enum { COUNTS = 51 };
    double tc[COUNTS];
    for (int i = 0; i < COUNTS; i++) {
        t = harness_now();
        if (mirror_scalar(m, sql, &p, 1, &v, &err))
            harness_die("count", &err);
        tc[i] = harness_now() - t;
        free(v);
    }
    snprintf(name, sizeof name, "%s.sql_count", prefix);
    bench_add(r, name, harness_median(tc, COUNTS) * 1e3, "ms", "lower",
              "indexed SQL COUNT from the mirror (median of 51 calls)");
    around = sqlite ? adjacent_limit(o, 0, true) : 0;
    t = harness_now();
    if (mirror_rebuild(m, c, &src, tot, &err))
        harness_die("rebuild", &err);
    snprintf(name, sizeof name, "%s.rebuild", prefix);
    bench_add(r, name, n / (harness_now() - t), "rows/s", "higher", "rebuild()");
    if (sqlite)
        bench_add(r, "limit.mirror_rebuild", adjacent_limit(o, around, true), "rows/s", "higher",
                  "limit: SQLite emptying the table and inserting the rebuild's rows in one "
                  "transaction, measured right before and right after it");
    /* pull() into an empty store, batch for batch next to its limit */
    double lim[BULK_BATCHES], pull[BULK_BATCHES];
    for (int b = 0; b < BULK_BATCHES; b++) {
        fsx_pathf(sub, NULL, "%s/%s-limit-%d", o->work, prefix, b);
        if (b % 2 == 0) /* first and second in turn (suite_bulk_doc says why) */
            lim[b] = n / bulk_limit_batch(sub, n);
        docstore *empty;
        fsx_pathf(sub, NULL, "%s/%s-restore-%d", o->work, prefix, b);
        docstore_open(sub, "docs", &empty, NULL);
        mirror_source dst = {.ds = empty};
        t = harness_now();
        if (mirror_pull(m, c, &dst, tot, &err))
            harness_die("pull", &err);
        pull[b] = n / (harness_now() - t);
        docstore_close(empty);
        if (b % 2) {
            fsx_pathf(sub, NULL, "%s/%s-limit-%d", o->work, prefix, b);
            lim[b] = n / bulk_limit_batch(sub, n);
        }
    }
    snprintf(name, sizeof name, "limit.bulk_publish_%s", prefix);
    bench_add(r, name, harness_median(lim, BULK_BATCHES), "records/s", "higher",
              "limit: N creates + writes into the record shards, syncfs, N renames, syncfs "
              "(median batch, next to pull)");
    snprintf(name, sizeof name, "%s.pull", prefix);
    bench_add(r, name, harness_median(pull, BULK_BATCHES), "records/s", "higher",
              "pull() restore into an empty store (median batch)");
    json_decref(tot);
    mirror_uninstall(m, c, NULL);
    mirror_free(m);
    docstore_close(ds);
    free(ids);
}

void suite_mirror(const harness_opts *o, bench_result *r)
{
    char path[PATH_MAX];
    fsx_pathf(path, NULL, "%s/mirror.sqlite", o->work);
    bench_mirror_driver(o, r, "mirror", "sqlite", path);
    const char *pg = getenv("STORHD_BENCH_PG");
    if (pg)
        bench_mirror_driver(o, r, "mirror_pg", "postgres", pg);
}
