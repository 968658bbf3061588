/* suite_micro (bench): CPU-only figures: UUIDv7 and the in-memory filter. */
#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"
#include "query.h"
#include "sjson.h"

/* ---------- micro ---------- */

void suite_uuid(const harness_opts *o, bench_result *r)
{
    long n = o->dataset * 10;
    char id[UUID7_LEN + 1];
    double t = harness_now();
    for (long i = 0; i < n; i++)
        uuid7_generate(id, -1, NULL);
    bench_add(r, "uuid.generate", (harness_now() - t) / n * 1e6, "µs", "lower", "UUIDv7 generate");
    /* storh's sample: one id, every other call in upper case */
    uuid7_generate(id, -1, NULL);
    char up[UUID7_LEN + 1];
    for (int i = 0; i <= UUID7_LEN; i++)
        up[i] = (char)toupper((unsigned char)id[i]);
    const char *const sample[2] = {id, up};
    volatile int ok = 0;
    t = harness_now();
    for (long i = 0; i < n; i++)
        ok += uuid7_is_valid(sample[i & 1], UUID7_LEN);
    bench_add(r, "uuid.validate", (harness_now() - t) / n * 1e6, "µs", "lower",
              "UUIDv7 validate (lower and upper case alternately)");
    (void)ok;
}

void suite_filter(const harness_opts *o, bench_result *r)
{
    /* storh's filter.record_equal: one equality over the dataset's rows;
     * passes over the same rows until enough time has gone by to measure */
    long n = o->dataset;
    json_t **rows = malloc((size_t)n * sizeof *rows);
    for (long i = 0; i < n; i++)
        rows[i] = harness_record(i);
    const char *w = "[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}]";
    json_t *where = sjson_decode(w, strlen(w), NULL);
    query q;
    memset(&q, 0, sizeof q);
    query_parse_where(where, &q, NULL);
    volatile long hits = 0;
    long seen = 0;
    double t = harness_now(), el;
    do {
        for (long i = 0; i < n; i++)
            hits += query_match(&q, NULL, rows[i]);
        seen += n;
    } while ((el = harness_now() - t) < 0.05);
    bench_add(r, "filter.rows", seen / el, "rows/s", "higher",
              "in-memory predicate filter, one equality");
    (void)hits;
    query_free(&q);
    json_decref(where);
    for (long i = 0; i < n; i++)
        json_decref(rows[i]);
    free(rows);
}
