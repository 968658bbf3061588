/* suite_micro (bench): CPU-only figures: UUIDv7 and the in-memory filters. */
#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docstore.h"
#include "query.h"
#include "recpred.h"
#include "recquery.h"
#include "sjson.h"
#include "suite.h"

/* ---------- micro ---------- */

void suite_uuid(const harness_opts *o, bench_result *r)
{
    long n = o->dataset * 10;
    char id[UUID7_LEN + 1];
    double t = harness_now();
    for (long i = 0; i < n; i++)
        uuid7_generate(id, -1, NULL);
    bench_add(r, "uuid.generate", (harness_now() - t) / n * 1e6, "µs", "lower",
              "UUIDv7 generate, now (reads the clock)");
    /* storh's monotonic figure: every id for one given millisecond */
    t = harness_now();
    for (long i = 0; i < n; i++)
        uuid7_generate(id, INT64_C(1700000000000), NULL);
    bench_add(r, "uuid.generate_at", (harness_now() - t) / n * 1e6, "µs", "lower",
              "UUIDv7 generate for one given millisecond (storh's uuid.monotonic)");
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

/* ---------- filter ---------- */

/* storh's filter rows: the harness row under its id, as canonical record
 * bytes (what a record file holds and a serving cache keeps). */
typedef struct frow {
    const char *id;
    const char *rec, *data; /* the whole record; its data */
    size_t reclen, datalen;
} frow;

typedef struct fset {
    long n;
    frow *rows;
    json_t **trees;
    char (*ids)[UUID7_LEN + 1];
    buf bytes;
} fset;

static void fset_build(fset *f, long n)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    f->rows = calloc((size_t)n, sizeof *f->rows);
    f->trees = calloc((size_t)n, sizeof *f->trees);
    f->ids = harness_make_ids(n, HARNESS_BASE_MS);
    size_t *at = calloc((size_t)n + 1, sizeof *at);
    if (!f->rows || !f->trees || !f->ids || !at)
        harness_die("filter rows", NULL);
    for (long i = 0; i < n; i++) {
        f->trees[i] = harness_record(i);
        at[i] = f->bytes.len;
        if (docstore_encode_record(&f->bytes, f->ids[i], f->trees[i], NULL))
            harness_die("filter rows", NULL);
    }
    at[n] = f->bytes.len;
    for (long i = 0; i < n; i++) { /* the buffer has stopped moving */
        frow *r = &f->rows[i];
        r->id = f->ids[i];
        r->rec = f->bytes.data + at[i];
        r->reclen = at[i + 1] - at[i];
        r->data = r->rec + 7 + UUID7_LEN + 9; /* {"id":"<id>","data": */
        r->datalen = r->reclen - (7 + UUID7_LEN + 9) - 2;
    }
    free(at);
}

static void fset_free(fset *f)
{
    for (long i = 0; i < f->n; i++)
        json_decref(f->trees[i]);
    free(f->trees);
    free(f->rows);
    free(f->ids);
    buf_free(&f->bytes);
}

typedef enum { F_RECORD_EQUAL, F_RECORD_CHECKED, F_TREE, F_RANGE, F_CONDITION } fkind;

typedef struct fwork {
    fkind kind;
    const fset *set;
    const recquery *rq;
    const query *q;
    const recpred *p;
} fwork;

/* Where the bytes leave it open the record is decoded, as the read paths
 * do (the bench rows never need it). */
static bool decided(int r, const fwork *w, const frow *row)
{
    if (r != RECPRED_UNSURE)
        return r == RECPRED_YES;
    json_t *d = NULL;
    bool m = docstore_decode_record(row->rec, row->reclen, row->id, &d, NULL) == 0 &&
             (w->q ? query_match(w->q, row->id, d) : recquery_match_data(w->rq, d));
    json_decref(d);
    return m;
}

/* One pass of each filter over the rows, each its own function so a
 * profile (callgrind) gives its instructions per row. */
#define PASS_FN __attribute__((noinline)) static long

PASS_FN pass_record_equal(const fwork *w)
{
    /* RecordQuery::matches_data: the id bounds, then the fields */
    long hits = 0, n = w->set->n;
    const frow *rows = w->set->rows;
    for (long i = 0; i < n; i++)
        hits += recquery_match_id(w->rq, rows[i].id, UUID7_LEN) &&
                decided(recpred_match_data(w->p, rows[i].id, rows[i].data, rows[i].datalen), w,
                        &rows[i]);
    return hits;
}

PASS_FN pass_record_checked(const fwork *w)
{
    /* the same from a record file's bytes, checked as they are read */
    long hits = 0, n = w->set->n;
    const frow *rows = w->set->rows;
    for (long i = 0; i < n; i++)
        hits += recquery_match_id(w->rq, rows[i].id, UUID7_LEN) &&
                decided(recpred_match_record(w->p, rows[i].id, rows[i].rec, rows[i].reclen), w,
                        &rows[i]);
    return hits;
}

PASS_FN pass_tree(const fwork *w)
{
    long hits = 0, n = w->set->n;
    for (long i = 0; i < n; i++)
        hits += query_match(w->q, NULL, w->set->trees[i]);
    return hits;
}

PASS_FN pass_range(const fwork *w)
{
    long hits = 0, n = w->set->n;
    const frow *rows = w->set->rows;
    for (long i = 0; i < n; i++)
        hits += recquery_match_id(w->rq, rows[i].id, UUID7_LEN);
    return hits;
}

PASS_FN pass_condition(const fwork *w)
{
    /* QueryCondition::matches_data(id, row) */
    long hits = 0, n = w->set->n;
    const frow *rows = w->set->rows;
    for (long i = 0; i < n; i++)
        hits += decided(recpred_match_data(w->p, rows[i].id, rows[i].data, rows[i].datalen), w,
                        &rows[i]);
    return hits;
}

static long fpass(const fwork *w)
{
    switch (w->kind) {
    case F_RECORD_EQUAL:
        return pass_record_equal(w);
    case F_RECORD_CHECKED:
        return pass_record_checked(w);
    case F_TREE:
        return pass_tree(w);
    case F_RANGE:
        return pass_range(w);
    default:
        return pass_condition(w);
    }
}

/* rows/s: the median of 15 timed passes (each over the rows as many times
 * as it takes to fill 2 ms): short passes, so that on a loaded machine most
 * of them run between two preemptions and one preemption does not decide
 * the figure. */
static double ftime(const fwork *w)
{
    enum { PASSES = 15 };
    double rate[PASSES];
    for (int k = 0; k < PASSES; k++) {
        long seen = 0;
        double t = harness_now(), el;
        do {
            if (fpass(w) < 1)
                harness_die("filter matched no rows", NULL);
            seen += w->set->n;
        } while ((el = harness_now() - t) < 0.002);
        rate[k] = seen / el;
    }
    for (int i = 1; i < PASSES; i++) /* insertion sort */
        for (int j = i; j > 0 && rate[j] < rate[j - 1]; j--) {
            double x = rate[j];
            rate[j] = rate[j - 1];
            rate[j - 1] = x;
        }
    return rate[PASSES / 2];
}

static void parse_where(const char *w, query *q)
{
    json_t *where = sjson_decode(w, strlen(w), NULL);
    memset(q, 0, sizeof *q);
    if (!where || query_parse_where(where, q, NULL))
        harness_die("filter query", NULL);
    json_decref(where);
}

void suite_filter(const harness_opts *o, bench_result *r)
{
    /* storh's bench_filter: its three filters over the dataset's rows */
    fset set;
    fset_build(&set, o->dataset);

    recquery eq;
    recquery_init(&eq);
    json_t *page = json_string("page");
    recquery_where_equal(&eq, "kind", page, NULL);
    json_decref(page);
    recpred *eqp = recpred_from_recquery(&eq);
    fwork w = {F_RECORD_EQUAL, &set, &eq, NULL, eqp};
    bench_add(r, "filter.rows", ftime(&w), "rows/s", "higher",
              "RecordQuery field equality on canonical record bytes");
    w.kind = F_RECORD_CHECKED;
    bench_add(r, "filter.rows_checked", ftime(&w), "rows/s", "higher",
              "the same on record file bytes, checked canonical as scanned");

    query tq;
    parse_where("[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}]", &tq);
    w = (fwork){F_TREE, &set, NULL, &tq, NULL};
    bench_add(r, "filter.rows_tree", ftime(&w), "rows/s", "higher",
              "query equality on decoded jansson trees");

    recquery range;
    recquery_init(&range);
    recquery_time_range(&range, true, HARNESS_BASE_MS + 10, true, HARNESS_BASE_MS + o->dataset - 10,
                        NULL);
    w = (fwork){F_RANGE, &set, &range, NULL, NULL};
    bench_add(r, "filter.record_range", ftime(&w), "rows/s", "higher",
              "RecordQuery millisecond time range on the ids");

    query cq;
    parse_where("[{\"field\":\"status\",\"op\":\"eq\",\"value\":\"published\"}]", &cq);
    recpred *cqp = recpred_from_query(&cq);
    w = (fwork){F_CONDITION, &set, NULL, &cq, cqp};
    bench_add(r, "filter.condition_equal", ftime(&w), "rows/s", "higher",
              "one query condition (eq) on canonical record bytes");

    if (!eqp || !cqp)
        harness_die("filter predicates did not compile", NULL);
    recpred_free(eqp);
    recpred_free(cqp);
    recquery_clear(&eq);
    recquery_clear(&range);
    query_free(&tq);
    query_free(&cq);
    fset_free(&set);
}
