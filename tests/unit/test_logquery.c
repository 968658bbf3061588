/* test_logquery: QueryBuilder queries on a log stream (explain, the two
 * count fast paths against the scan, conditions, orderBy, limit and cursor,
 * deleted records, and a partitioned stream read across its partitions). */
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "../tmpdir.h"
#include "logquery.h"

#include "../support/js.h"

static char root[PATH_MAX];

/* logset's opener: existing logs under root, closed by the test. */
static int open_existing(void *ctx, const char *name, const seglog_opts *o, seglog **out,
                         storh_err *err)
{
    (void)ctx;
    return seglog_open(root, name, o, false, out, err);
}

static void close_set(logset *ls)
{
    for (size_t i = 0; i < ls->n; i++)
        seglog_close(ls->logs[i]);
    logset_free(ls);
}

/* Appends {"n":i,"kind":"a"|"b"} for i in [from, to) to s; ids into ids[i]. */
static void fill(seglog *s, int from, int to, char ids[][UUID7_LEN + 1])
{
    for (int i = from; i < to; i++) {
        json_t *d = json_pack("{siss}", "n", i, "kind", i % 2 ? "a" : "b");
        storh_err err;
        if (seglog_put(s, NULL, d, ids[i], &err) != 0) {
            fprintf(stderr, "put: %s\n", err.msg);
            test_failures++;
        }
        json_decref(d);
    }
}

/* The result of the query body on ls, or NULL (the error in *err). */
static json_t *run(const logset *ls, const char *body, storh_err *err)
{
    json_t *b = js(body);
    if (!b) {
        fprintf(stderr, "bad test body: %s\n", body);
        return NULL;
    }
    query q;
    json_t *out = NULL;
    int rc = query_parse(b, &q, err);
    json_decref(b);
    if (rc)
        return NULL;
    rc = logquery_run(ls, &q, &out, err);
    query_free(&q);
    return rc ? NULL : out;
}

static long long count_of(const logset *ls, const char *body)
{
    storh_err err;
    json_t *out = run(ls, body, &err);
    if (!out)
        return -1;
    json_t *c = json_object_get(out, "count");
    long long n = json_is_integer(c) ? json_integer_value(c) : -2;
    json_decref(out);
    return n;
}

/* The "n" of each record of a result, as "1,2,3". */
static void ns(const json_t *out, char *s, size_t cap)
{
    size_t i, at = 0;
    json_t *r;
    s[0] = 0;
    json_array_foreach (json_object_get(out, "records"), i, r) {
        json_t *n = json_object_get(json_object_get(r, "data"), "n");
        at += (size_t)snprintf(s + at, cap - at, "%s%lld", i ? "," : "",
                               (long long)json_integer_value(n));
        if (at >= cap)
            break;
    }
}

static seglog *new_log(const char *name)
{
    seglog_opts o;
    seglog_opts_default(&o);
    seglog *s = NULL;
    storh_err err;
    if (seglog_open(root, name, &o, true, &s, &err) != 0) {
        fprintf(stderr, "open %s: %s\n", name, err.msg);
        test_failures++;
    }
    return s;
}

static int open_set(logset *ls, const char *name, int partition)
{
    seglog_opts o;
    seglog_opts_default(&o);
    o.partition = partition;
    storh_err err;
    int rc = logset_open(ls, root, name, &o, open_existing, NULL, &err);
    if (rc)
        fprintf(stderr, "logset_open %s: %s\n", name, err.msg);
    return rc;
}

TEST(explain_names_the_full_scan_and_its_groups)
{
    seglog *s = new_log("explain");
    seglog_close(s);
    logset ls;
    CHECK_INT(open_set(&ls, "explain", SEGLOG_PART_NONE), 0);
    storh_err err;
    json_t *out = run(&ls, "{\"explain\":true}", &err);
    json_t *want = js("{\"store\":\"Storh\\\\SegmentedLogStore\",\"plan\":\"full_scan\","
                      "\"indexes\":[],\"groups\":1}");
    CHECK(out && json_equal(out, want));
    json_decref(out);
    json_decref(want);
    out = run(&ls,
              "{\"explain\":true,\"where\":[{\"or\":[[{\"field\":\"n\",\"op\":\"eq\","
              "\"value\":1}],[{\"field\":\"n\",\"op\":\"eq\",\"value\":2}],"
              "[{\"field\":\"kind\",\"op\":\"exists\"}]]}]}",
              &err);
    CHECK(out != NULL);
    CHECK_INT(json_integer_value(json_object_get(out, "groups")), 3);
    json_decref(out);
    close_set(&ls);
}

TEST(count_fast_paths_agree_with_the_scan)
{
    seglog *s = new_log("counts");
    char ids[10][UUID7_LEN + 1];
    fill(s, 0, 10, ids);
    bool existed = false;
    storh_err err;
    CHECK_INT(seglog_delete(s, ids[3], &existed, &err), 0); /* an "a" */
    CHECK(existed);
    seglog_close(s);
    logset ls;
    CHECK_INT(open_set(&ls, "counts", SEGLOG_PART_NONE), 0);
    /* no conditions: the live count, capped by the limit */
    CHECK_INT(count_of(&ls, "{\"count\":true}"), 9);
    CHECK_INT(count_of(&ls, "{\"count\":true,\"limit\":4}"), 4);
    CHECK_INT(count_of(&ls, "{\"count\":true,\"limit\":100}"), 9);
    /* field = scalar: from the equality counters; the same as a scan that
     * cannot use them (a second condition) */
    const char *eq_a =
        "{\"count\":true,\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"a\"}]}";
    CHECK_INT(count_of(&ls, eq_a), 4);
    CHECK_INT(count_of(&ls, "{\"count\":true,\"where\":[{\"field\":\"kind\",\"op\":\"eq\","
                            "\"value\":\"a\"},{\"field\":\"n\",\"op\":\"gte\",\"value\":0}]}"),
              4);
    CHECK_INT(count_of(&ls, "{\"count\":true,\"limit\":3,\"where\":[{\"field\":\"kind\","
                            "\"op\":\"eq\",\"value\":\"a\"}]}"),
              3);
    CHECK_INT(count_of(&ls, "{\"count\":true,\"where\":[{\"field\":\"kind\",\"op\":\"eq\","
                            "\"value\":\"zzz\"}]}"),
              0);
    /* a value the counters cannot serve (an object): scanned, still right */
    CHECK_INT(count_of(&ls, "{\"count\":true,\"where\":[{\"field\":\"kind\",\"op\":\"eq\","
                            "\"value\":{\"x\":1}}]}"),
              0);
    /* id = x is never a counter: a live id counts 1, a deleted one 0 */
    char body[256];
    snprintf(body, sizeof body,
             "{\"count\":true,\"where\":[{\"field\":\"id\",\"op\":\"eq\",\"value\":\"%s\"}]}",
             ids[4]);
    CHECK_INT(count_of(&ls, body), 1);
    snprintf(body, sizeof body,
             "{\"count\":true,\"where\":[{\"field\":\"id\",\"op\":\"eq\",\"value\":\"%s\"}]}",
             ids[3]);
    CHECK_INT(count_of(&ls, body), 0);
    /* count after a cursor scans from there */
    snprintf(body, sizeof body, "{\"count\":true,\"cursor\":\"%s\"}", ids[5]);
    CHECK_INT(count_of(&ls, body), 4);
    close_set(&ls);
}

TEST(conditions_order_limit_and_cursor)
{
    seglog *s = new_log("rows");
    char ids[8][UUID7_LEN + 1];
    fill(s, 0, 8, ids);
    bool existed;
    storh_err err;
    CHECK_INT(seglog_delete(s, ids[6], &existed, &err), 0);
    seglog_close(s);
    logset ls;
    CHECK_INT(open_set(&ls, "rows", SEGLOG_PART_NONE), 0);
    char got[128];

    /* everything, in log order, deleted records left out */
    json_t *out = run(&ls, "{}", &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "0,1,2,3,4,5,7");
    CHECK(json_is_null(json_object_get(out, "next_cursor")));
    json_decref(out);

    /* AND of conditions; an OR of groups */
    out = run(&ls,
              "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"a\"},"
              "{\"field\":\"n\",\"op\":\"gt\",\"value\":2}]}",
              &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "3,5,7");
    json_decref(out);
    out = run(&ls,
              "{\"where\":[{\"or\":[[{\"field\":\"n\",\"op\":\"lt\",\"value\":2}],"
              "[{\"field\":\"n\",\"op\":\"in\",\"value\":[5,6,7]}]]}]}",
              &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "0,1,5,7");
    json_decref(out);
    out = run(&ls, "{\"where\":[{\"field\":\"missing\",\"op\":\"exists\"}]}", &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "");
    json_decref(out);

    /* orderBy a field, descending, with a limit */
    out = run(&ls, "{\"orderBy\":[{\"field\":\"n\",\"dir\":\"desc\"}],\"limit\":3}", &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "7,5,4");
    json_decref(out);

    /* pages by id: the cursor is the last id of a full page */
    out = run(&ls, "{\"orderBy\":[{\"field\":\"id\",\"dir\":\"asc\"}],\"limit\":3}", &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "0,1,2");
    CHECK_STR(json_string_value(json_object_get(out, "next_cursor")), ids[2]);
    json_decref(out);
    char body[256];
    snprintf(body, sizeof body,
             "{\"orderBy\":[{\"field\":\"id\",\"dir\":\"asc\"}],\"limit\":3,\"cursor\":\"%s\"}",
             ids[2]);
    out = run(&ls, body, &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "3,4,5");
    CHECK_STR(json_string_value(json_object_get(out, "next_cursor")), ids[5]);
    json_decref(out);
    snprintf(body, sizeof body,
             "{\"orderBy\":[{\"field\":\"id\",\"dir\":\"asc\"}],\"limit\":3,\"cursor\":\"%s\"}",
             ids[5]);
    out = run(&ls, body, &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "7"); /* a short page ends it */
    CHECK(json_is_null(json_object_get(out, "next_cursor")));
    json_decref(out);

    /* a limit without orderBy stops at the first matches in log order */
    out = run(&ls, "{\"limit\":2,\"where\":[{\"field\":\"n\",\"op\":\"gte\",\"value\":3}]}", &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "3,4");
    json_decref(out);
    close_set(&ls);
}

TEST(bad_queries_are_refused_before_running)
{
    query q;
    storh_err err;
    json_t *b = js("{\"where\":[{\"field\":\"n\",\"op\":\"like\",\"value\":1}]}");
    CHECK_INT(query_parse(b, &q, &err), STORH_EINVAL);
    CHECK(strstr(err.msg, "where[0]") != NULL);
    json_decref(b);
    b = js("{\"limit\":-1}");
    CHECK(query_parse(b, &q, &err) != 0);
    json_decref(b);
    b = js("{\"cursor\":\"not-an-id\"}");
    CHECK(query_parse(b, &q, &err) != 0);
    json_decref(b);
}

TEST(a_partitioned_stream_is_queried_across_its_partitions)
{
    seglog_opts o;
    seglog_opts_default(&o);
    o.partition = SEGLOG_PART_DAILY;
    char ids[9][UUID7_LEN + 1];
    storh_err err;
    seglog *later, *earlier;
    /* written to the later day first: readers still go oldest partition first */
    o.partition_ts_ms = INT64_C(1783209600000); /* 2026-07-05 */
    CHECK_INT(seglog_open(root, "parts", &o, true, &later, &err), 0);
    fill(later, 0, 4, ids);
    o.partition_ts_ms = INT64_C(1783209600000) - 86400000; /* 2026-07-04 */
    CHECK_INT(seglog_open(root, "parts", &o, true, &earlier, &err), 0);
    fill(earlier, 4, 9, ids);
    seglog_close(later);
    seglog_close(earlier);
    logset ls;
    CHECK_INT(open_set(&ls, "parts", SEGLOG_PART_DAILY), 0);
    CHECK_INT(ls.n, 2);
    char got[128];
    json_t *out = run(&ls, "{}", &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "4,5,6,7,8,0,1,2,3");
    json_decref(out);
    CHECK_INT(count_of(&ls, "{\"count\":true}"), 9);
    /* the equality counters of both partitions, summed */
    CHECK_INT(count_of(&ls, "{\"count\":true,\"where\":[{\"field\":\"kind\",\"op\":\"eq\","
                            "\"value\":\"b\"}]}"),
              5);
    out = run(&ls, "{\"where\":[{\"field\":\"n\",\"op\":\"between\",\"value\":[3,5]}]}", &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "4,5,3");
    json_decref(out);
    out = run(&ls, "{\"orderBy\":[{\"field\":\"n\",\"dir\":\"asc\"}],\"limit\":4}", &err);
    ns(out, got, sizeof got);
    CHECK_STR(got, "0,1,2,3");
    json_decref(out);
    close_set(&ls);
    /* an unpartitioned reader of a partitioned stream finds no log */
    CHECK_INT(open_set(&ls, "parts", SEGLOG_PART_NONE), STORH_ENOTFOUND);
}

static const test_case tests[] = {
    TEST_ENTRY(explain_names_the_full_scan_and_its_groups),
    TEST_ENTRY(count_fast_paths_agree_with_the_scan),
    TEST_ENTRY(conditions_order_limit_and_cursor),
    TEST_ENTRY(bad_queries_are_refused_before_running),
    TEST_ENTRY(a_partitioned_stream_is_queried_across_its_partitions),
};

TMPDIR_TEST_MAIN(root, tests)
