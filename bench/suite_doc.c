/* suite_doc (bench): the DocStore figures (writes, bulk, export/import,
 * get, reopen, indexes, queries, stream) and the record cache's. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "suite_bulk.h"
#include "allocs.h"
#include "docstore.h"
#include "fsx.h"
#include "query.h"
#include "rcache.h"
#include "sjson.h"

/* ---------- DocStore ---------- */

void suite_doc(const harness_opts *o, bench_result *r)
{
    long n = o->dataset;
    storh_err err;
    docstore *ds;
    if (docstore_open(o->work, "docs", &ds, &err))
        harness_die("open", &err);
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    double t = harness_now();
    for (long i = 0; i < n; i++) {
        json_t *d = harness_record(i);
        if (docstore_put(ds, NULL, d, ids[i], NULL, &err))
            harness_die("put", &err);
        json_decref(d);
    }
    bench_add(r, "doc.put", n / (harness_now() - t), "records/s", "higher",
              "put(), one durable file per record");

    char path[PATH_MAX];
    fsx_pathf(path, NULL, "%s/export.jsonl", o->work);
    size_t cnt;
    t = harness_now();
    if (docstore_export_jsonl(ds, path, &cnt, &err))
        harness_die("export", &err);
    bench_add(r, "doc.export_jsonl", cnt / (harness_now() - t), "records/s", "higher",
              "exportJsonl()");

    /* putStream() and importJsonl(), batch for batch next to their limit */
    suite_bulk_doc(o, r, path);

    /* get() as storh's bench times it: the first 1000 records, in order,
     * without a record cache (the cached figures are cache.*) */
    json_t *d;
    long gets = n < 1000 ? n : 1000;
    t = harness_now();
    for (long i = 0; i < gets; i++) {
        if (docstore_get(ds, ids[i], &d, NULL, &err))
            harness_die("get", &err);
        json_decref(d);
    }
    bench_add(r, "doc.get", (harness_now() - t) / gets * 1e6, "µs", "lower",
              "get() single read, no cache");

    /* storh's "reopen" times the constructor alone; the teardown of the
     * store (its record cache, its indexes) is a figure of its own */
    t = harness_now();
    docstore_close(ds);
    bench_add(r, "doc.close", (harness_now() - t) * 1e3, "ms", "lower",
              "close() of the store after the writes and reads");
    t = harness_now();
    if (docstore_open(o->work, "docs", &ds, &err))
        harness_die("reopen", &err);
    bench_add(r, "doc.reopen", (harness_now() - t) * 1e3, "ms", "lower",
              "reopen an existing store (the constructor)");
    t = harness_now();
    if (docstore_get(ds, ids[n / 2], &d, NULL, &err))
        harness_die("reopen get", &err);
    json_decref(d);
    bench_add(r, "doc.reopen_get", (harness_now() - t) * 1e3, "ms", "lower",
              "the first get() after the reopen");

    const char *dj = "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"bucket\"},"
                     "{\"field\":\"publishedAt\",\"range\":true}]}";
    json_t *defs = sjson_decode(dj, strlen(dj), NULL);
    json_t *out;
    t = harness_now();
    if (docstore_define_indexes(ds, defs, true, &out, &err))
        harness_die("indexes", &err);
    bench_add(r, "doc.index_build", n / (harness_now() - t), "records/s", "higher",
              "index build, 2 equality + 1 range field");
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
              "stream() of every record, re-read and decoded");
    docstore_close(ds);
    free(ids);
}

/* ---------- record cache ---------- */

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
    json_t *d;
    double t = harness_now();
    for (long i = 0; i < n; i++) {
        docstore_get(ds, ids[i], &d, NULL, NULL);
        json_decref(d);
    }
    bench_add(r, "cache.get_cold", (harness_now() - t) / n * 1e6, "µs", "lower",
              "cached get(), cold (file read, decode, fill)");
    t = harness_now();
    for (long i = 0; i < n; i++) {
        docstore_get(ds, ids[i], &d, NULL, NULL);
        json_decref(d);
    }
    bench_add(r, "cache.get_warm", (harness_now() - t) / n * 1e6, "µs", "lower",
              "cached get(), warm (validated hit)");
    docstore_close(ds);
    free(ids);
}
