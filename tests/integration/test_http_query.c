/* Queries, indexes, schema and maintenance over real HTTP. */
#include <curl/curl.h>
#include <jansson.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/snapshot.h"
#include "../test.h"
#include "buf.h"

static daemon_proc d;

static client_resp req(const char *method, const char *path, const char *body)
{
    return daemon_json(&d, method, path, body);
}

static long long count_of(const char *path, const char *where)
{
    char body[512];
    snprintf(body, sizeof body, "{\"where\":[%s],\"count\":true}", where);
    client_resp r = req("POST", path, body);
    json_t *v = json_loadb(r.body, r.len, 0, NULL);
    long long n = json_is_integer(json_object_get(v, "count"))
                      ? json_integer_value(json_object_get(v, "count"))
                      : -1;
    if (n < 0)
        fprintf(stderr, "count %s: %s\n", where, r.body);
    json_decref(v);
    client_free(&r);
    return n;
}

/* Set once the first case has built the indexed "pages" in this storhd. */
static int pages_indexed;

TEST(indexed_queries_conflicts_and_schema)
{
    pages_indexed = 1;
    client_resp r = req("PUT", "/v1/docs/pages/_indexes",
                        "{\"fields\":[{\"field\":\"kind\"},{\"field\":\"slug\",\"unique\":true},"
                        "{\"field\":\"at\",\"range\":true}]}");
    CHECK_INT(r.status, 200);
    CHECK_PREFIX(r.body, "{\"changed\":true,");
    client_free(&r);
    r = req("GET", "/v1/docs/pages/_indexes", NULL);
    CHECK_STR(r.body, "{\"fields\":[{\"field\":\"at\",\"unique\":false,\"range\":true},{\"field\":"
                      "\"kind\",\"unique\":false,\"range\":false},{\"field\":\"slug\",\"unique\":"
                      "true,\"range\":false}]}");
    client_free(&r);
    buf rows = BUF_INIT;
    for (int i = 0; i < 30; i++)
        buf_printf(&rows, "{\"kind\":\"%s\",\"slug\":\"s%d\",\"at\":%d}\n", i % 3 ? "post" : "page",
                   i, i);
    client_do(d.base, "POST", "/v1/docs/pages/_bulk", "application/x-ndjson", rows.data, rows.len,
              NULL, 0, &r);
    CHECK_STR(r.body, "{\"written\":30}");
    client_free(&r);
    buf_free(&rows);
    CHECK_INT(
        count_of("/v1/docs/pages/_query", "{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}"),
        10);
    CHECK_INT(count_of("/v1/docs/pages/_query",
                       "{\"field\":\"at\",\"op\":\"between\",\"value\":[10,14]}"),
              5);
    /* the indexed records answer (each row the record's cached bytes),
     * paged with its cursor: 10 pages in pages of 4, 4 and 2 */
    char cursor[64] = "", body[256];
    int seen = 0, pages = 0;
    do {
        snprintf(body, sizeof body,
                 "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],"
                 "\"limit\":4%s%s%s}",
                 cursor[0] ? ",\"cursor\":\"" : "", cursor, cursor[0] ? "\"" : "");
        r = req("POST", "/v1/docs/pages/_query", body);
        CHECK_INT(r.status, 200);
        json_t *page = json_loadb(r.body, r.len, 0, NULL);
        json_t *recs_ = json_object_get(page, "records"),
               *next = json_object_get(page, "next_cursor");
        size_t i;
        json_t *row;
        json_array_foreach (recs_, i, row)
            CHECK_STR(json_string_value(json_object_get(json_object_get(row, "data"), "kind")),
                      "page");
        seen += (int)json_array_size(recs_);
        CHECK(json_is_null(next) == (json_array_size(recs_) < 4));
        if (json_array_size(recs_) == 4)
            CHECK_STR(json_string_value(next),
                      json_string_value(json_object_get(json_array_get(recs_, 3), "id")));
        snprintf(cursor, sizeof cursor, "%s", json_is_string(next) ? json_string_value(next) : "");
        json_decref(page);
        client_free(&r);
    } while (cursor[0] && ++pages < 10);
    CHECK_INT(seen, 10);
    CHECK_INT(pages, 2);
    r = req("POST", "/v1/docs/pages/_query",
            "{\"where\":[{\"field\":\"at\",\"op\":\"gt\",\"value\":3}],\"explain\":true}");
    CHECK_STR(r.body, "{\"store\":\"Storh\\\\DocPerFileStore\",\"plan\":\"index_scan\",\"indexes\":"
                      "[{\"field\":\"at\",\"operator\":\"gt\"}],\"groups\":1,\"index_used\":true}");
    client_free(&r);
    r = req("POST", "/v1/docs/pages/_query",
            "{\"where\":[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}],\"orderBy\":[{"
            "\"field\":\"at\",\"dir\":\"desc\"}],\"limit\":3}");
    json_t *v = json_loadb(r.body, r.len, 0, NULL);
    json_t *recs = json_object_get(v, "records");
    CHECK_INT(json_array_size(recs), 3);
    CHECK_INT(
        json_integer_value(json_object_get(json_object_get(json_array_get(recs, 0), "data"), "at")),
        27);
    json_decref(v);
    client_free(&r);

    char *before = snapshot_tree(d.root);
    r = req("POST", "/v1/docs/pages", "{\"kind\":\"page\",\"slug\":\"s3\"}");
    CHECK_INT(r.status, 409);
    client_free(&r);
    r = req("POST", "/v1/docs/pages/_bulk", NULL);
    client_free(&r);
    client_do(d.base, "POST", "/v1/docs/pages/_bulk", "application/x-ndjson",
              "{\"slug\":\"new1\"}\n{\"slug\":\"s4\"}\n", 30, NULL, 0, &r);
    CHECK_INT(r.status, 409); /* a conflict anywhere in the batch writes none of it */
    client_free(&r);
    r = req("POST", "/v1/docs/pages/_query", "{\"where\":[{\"field\":\"k\",\"op\":\"like\"}]}");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "where[0].op") != NULL);
    client_free(&r);
    char *after = snapshot_tree(d.root);
    CHECK_STR(after, before);
    free(before);
    free(after);

    r = req("PUT", "/v1/docs/typed/_schema",
            "{\"fields\":{\"title\":{\"type\":\"string\",\"required\":true},\"n\":{\"type\":"
            "\"int\"}}}");
    CHECK_INT(r.status, 200);
    client_free(&r);
    r = req("POST", "/v1/docs/typed", "{\"n\":\"x\",\"title\":\"t\"}");
    CHECK_INT(r.status, 422);
    CHECK(strstr(r.body,
                 "\"code\":\"schema_violation\",\"message\":\"Schema field n must be int.\"") !=
          NULL);
    client_free(&r);
    r = req("POST", "/v1/docs/typed", "{\"n\":1}");
    CHECK_INT(r.status, 422);
    CHECK(strstr(r.body, "Missing required schema field: title") != NULL);
    client_free(&r);
    r = req("POST", "/v1/docs/typed", "{\"n\":1,\"title\":\"ok\"}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    r = req("GET", "/v1/docs/typed/_schema", NULL);
    CHECK_PREFIX(r.body, "{\"fields\":{\"title\":{\"type\":\"string\",\"required\":true,");
    client_free(&r);
}

TEST(verify_repair_reindex_over_http)
{
    if (!pages_indexed) /* run alone: build the indexed collection checked here */
        indexed_queries_conflicts_and_schema();
    client_resp r = req("GET", "/v1/docs/pages/_verify", NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,\"errors\":[]");
    client_free(&r);
    /* a stale index entry, edited by hand */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/pages/.storh/indexes/entries/eq/6b696e64/s-70616765.jsonc", d.root);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("{\"field\":\"kind\",\"key\":\"s-70616765\",\"count\":0,\"value\":\"page\",\"ids\":[]}\n",
          f);
    fclose(f);
    r = req("GET", "/v1/docs/pages/_verify", NULL);
    CHECK_PREFIX(r.body, "{\"ok\":false,");
    client_free(&r);
    r = req("POST", "/v1/docs/pages/_reindex", NULL);
    CHECK_STR(r.body, "{\"fields\":3,\"entries\":30}");
    client_free(&r);
    r = req("GET", "/v1/docs/pages/_verify", NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,");
    client_free(&r);
    r = req("POST", "/v1/docs/pages/_repair", NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,\"quarantined\":0,\"reindexed\":{\"fields\":3,");
    client_free(&r);
    r = req("POST", "/v1/docs/pages/_compact", NULL);
    CHECK_STR(r.body, "{\"ok\":true,\"records\":30}");
    client_free(&r);
    r = req("GET", "/v1/docs/pages/_stats", NULL);
    CHECK_PREFIX(r.body, "{\"records\":30,");
    CHECK(strstr(r.body, "\"indexes\":3}") != NULL);
    client_free(&r);
}

TEST(filter_and_log_query)
{
    client_resp r =
        req("POST", "/v1/filter",
            "{\"rows\":[{\"n\":1},{\"n\":2.5},{\"n\":\"3\"},{}],\"where\":[{\"field\":\"n\","
            "\"op\":\"gt\",\"value\":1}]}");
    CHECK_STR(r.body, "{\"rows\":[{\"n\":2.5}]}"); /* "3" is a string: it sorts below numbers */
    client_free(&r);
    r = req("POST", "/v1/filter", "{\"rows\":{}}");
    CHECK_INT(r.status, 400);
    client_free(&r);
    for (int i = 0; i < 6; i++) {
        char b[64];
        snprintf(b, sizeof b, "{\"kind\":\"%s\",\"i\":%d}", i % 2 ? "a" : "b", i);
        r = req("POST", "/v1/logs/ev", b);
        client_free(&r);
    }
    CHECK_INT(count_of("/v1/logs/ev/_query", "{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"a\"}"),
              3);
    r = req("POST", "/v1/logs/ev/_query", "{\"count\":true}");
    CHECK_STR(r.body, "{\"count\":6}");
    client_free(&r);
    r = req(
        "POST", "/v1/logs/ev/_query",
        "{\"where\":[{\"field\":\"i\",\"op\":\"gte\",\"value\":2}],\"orderBy\":[{\"field\":\"i\","
        "\"dir\":\"desc\"}],\"limit\":2}");
    json_t *v = json_loadb(r.body, r.len, 0, NULL);
    CHECK_INT(json_integer_value(json_object_get(
                  json_object_get(json_array_get(json_object_get(v, "records"), 1), "data"), "i")),
              4);
    json_decref(v);
    client_free(&r);
    r = req("POST", "/v1/logs/ev/_query", "{\"explain\":true}");
    CHECK_STR(r.body,
              "{\"store\":\"Storh\\\\SegmentedLogStore\",\"plan\":\"full_scan\",\"indexes\":[],"
              "\"groups\":1}");
    client_free(&r);
}

static const test_case tests[] = {
    TEST_ENTRY(indexed_queries_conflicts_and_schema),
    TEST_ENTRY(verify_repair_reindex_over_http),
    TEST_ENTRY(filter_and_log_query),
};

DAEMON_TEST_MAIN(d, tests)
