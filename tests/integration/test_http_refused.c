/* A refused write changes nothing, not even by creating its target: bad
 * rows in a bulk into a new log stream or collection, a bad log body, bad
 * jobs for a new queue. The root's bytes are compared before and after
 * (support/snapshot), and the target still answers as missing. A bulk into
 * a new target that is accepted lands whole, with the line numbers an
 * existing target reports. Over real HTTP against the real storhd. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "client.h"
#include "../support/daemon.h"
#include "../support/snapshot.h"
#include "../test.h"

static daemon_proc d;

static client_resp ndjson(const char *path, const char *body, size_t len)
{
    client_resp r = {0};
    client_do(d.base, "POST", path, "application/x-ndjson", body, len, NULL, 0, &r);
    return r;
}

static long status_of(const char *method, const char *path)
{
    client_resp r = daemon_req(&d, method, path, NULL, NULL);
    long st = r.status;
    client_free(&r);
    return st;
}

/* Whether the root holds an entry of that name (a target's directory:
 * a new empty one holds no regular file for the snapshot to see). */
static bool in_root(const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", d.root, name);
    struct stat st;
    return stat(path, &st) == 0;
}

/* Sends a refused request and checks its status, its message and that the
 * root is byte for byte as it was. */
static void check_refused(const char *path, const char *ctype, const char *body, size_t len,
                          long want_status, const char *want_msg)
{
    char *before = snapshot_tree(d.root);
    client_resp r = {0};
    CHECK(client_do(d.base, "POST", path, ctype, body, len, NULL, 0, &r) == 0);
    CHECK_INT(r.status, want_status);
    if (want_msg && (!r.body || !strstr(r.body, want_msg))) {
        fprintf(stderr, "reply %s lacks \"%s\"\n", r.body ? r.body : "(none)", want_msg);
        CHECK(0);
    }
    client_free(&r);
    char *after = snapshot_tree(d.root);
    CHECK_STR(after, before);
    free(before);
    free(after);
}

TEST(log_bulk_bad_row_creates_no_stream)
{
    const char *body = "{\"a\":1}\n[1,2]\n";
    check_refused("/v1/logs/newlog1/_bulk", "application/x-ndjson", body, strlen(body), 400,
                  "Line 2: Bulk rows must be JSON objects.");
    const char *bad_id = "{\"a\":1}\n{\"id\":\"nope\",\"data\":{}}\n";
    check_refused("/v1/logs/newlog1/_bulk", "application/x-ndjson", bad_id, strlen(bad_id), 400,
                  "Line 2: Invalid UUIDv7 value.");
    CHECK_INT(status_of("GET", "/v1/logs/newlog1"), 404);
    CHECK(!in_root("newlog1"));
}

TEST(log_bulk_line_over_limit_creates_no_stream)
{
    size_t n = 1100 * 1024; /* over the default 1 MiB line limit */
    buf b = BUF_INIT;
    buf_appends(&b, "{\"a\":1}\n{\"pad\":\"");
    for (size_t i = 0; i < n; i++)
        buf_appendc(&b, 'x');
    buf_appends(&b, "\"}\n");
    check_refused("/v1/logs/newlog2/_bulk", "application/x-ndjson", b.data, b.len, 413,
                  "Line 2 is over the limit");
    buf_free(&b);
    CHECK_INT(status_of("GET", "/v1/logs/newlog2"), 404);
    CHECK(!in_root("newlog2"));
}

TEST(log_append_bad_body_creates_no_stream)
{
    check_refused("/v1/logs/newlog3", "application/json", "[1]", 3, 400,
                  "Request body must be a JSON object.");
    CHECK_INT(status_of("GET", "/v1/logs/newlog3"), 404);
    CHECK(!in_root("newlog3"));
}

TEST(doc_bulk_bad_row_creates_no_collection)
{
    const char *body = "{\"a\":1}\n\"text\"\n";
    check_refused("/v1/docs/newcol1/_bulk", "application/x-ndjson", body, strlen(body), 400,
                  "Line 2: Bulk rows must be JSON objects.");
    const char *imp = "{\"a\":1}\n42\n";
    check_refused("/v1/docs/newcol1/_bulk?mode=import", "application/x-ndjson", imp, strlen(imp),
                  400, "Line 2: JSONL import rows must be objects.");
    const char *bad_id = "{\"id\":\"01\",\"data\":{}}\n";
    check_refused("/v1/docs/newcol1/_bulk", "application/x-ndjson", bad_id, strlen(bad_id), 400,
                  "Line 1: Invalid UUIDv7 value.");
    const char *bad_json = "{\"a\":1}\n{\"a\":\n";
    check_refused("/v1/docs/newcol1/_bulk", "application/x-ndjson", bad_json, strlen(bad_json), 400,
                  "Line 2:");
    CHECK(!in_root("newcol1"));
}

TEST(enqueue_bad_jobs_creates_no_queue)
{
    check_refused("/v1/queues/newq1/jobs", "application/json", "[{\"a\":1},7]", 11, 400,
                  "Job 1: jobs must be JSON objects.");
    const char *bad_id = "[{\"id\":\"x\",\"payload\":{}}]";
    check_refused("/v1/queues/newq1/jobs", "application/json", bad_id, strlen(bad_id), 400,
                  "Job 0: Invalid UUIDv7 value.");
    CHECK_INT(status_of("GET", "/v1/queues/newq1"), 404);
    CHECK(!in_root("newq1"));
}

/* rows (1,100, over the spool's 64 KiB block, blank lines among them) into
 * a new target land whole; a bad row after them is reported at the same
 * line number for a new target as for an existing one. */
static void big_body(buf *b, bool bad_tail)
{
    for (int i = 0; i < 1100; i++) {
        buf_printf(b, "{\"n\":%d,\"pad\":\"%096d\"}\n", i, i);
        if (i % 500 == 0)
            buf_appends(b, "\n");
    }
    if (bad_tail)
        buf_appends(b, "[\"not an object\"]\n");
}

TEST(new_target_bulk_lands_whole)
{
    buf b = BUF_INIT;
    big_body(&b, false);
    const char *paths[] = {"/v1/logs/newlog4/_bulk", "/v1/docs/newcol4/_bulk"};
    for (size_t k = 0; k < 2; k++) {
        client_resp r = ndjson(paths[k], b.data, b.len);
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body, "{\"written\":1100}");
        client_free(&r);
    }
    json_t *out = NULL;
    CHECK_INT(client_json(d.base, "GET", "/v1/docs/newcol4/_stats", NULL, &out), 200);
    CHECK_INT(json_integer_value(json_object_get(out, "records")), 1100);
    json_decref(out);
    CHECK_INT(client_json(d.base, "GET", "/v1/logs/newlog4/_stats", NULL, &out), 200);
    CHECK_INT(json_integer_value(json_object_get(out, "records")), 1100);
    json_decref(out);
    buf_free(&b);
}

TEST(new_target_bulk_reports_line_numbers_as_existing)
{
    buf b = BUF_INIT;
    big_body(&b, true);
    /* 1,100 rows and 3 blank lines before it */
    const char *want = "Line 1104: Bulk rows must be JSON objects.";
    check_refused("/v1/logs/newlog5/_bulk", "application/x-ndjson", b.data, b.len, 400, want);
    check_refused("/v1/docs/newcol5/_bulk", "application/x-ndjson", b.data, b.len, 400, want);
    CHECK(!in_root("newlog5") && !in_root("newcol5"));
    /* the same body into targets that exist */
    client_resp r = daemon_json(&d, "POST", "/v1/logs/newlog5", "{\"first\":true}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    r = daemon_json(&d, "POST", "/v1/docs/newcol5", "{\"first\":true}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    check_refused("/v1/logs/newlog5/_bulk", "application/x-ndjson", b.data, b.len, 400, want);
    check_refused("/v1/docs/newcol5/_bulk", "application/x-ndjson", b.data, b.len, 400, want);
    buf_free(&b);
}

static const test_case tests[] = {
    TEST_ENTRY(log_bulk_bad_row_creates_no_stream),
    TEST_ENTRY(log_bulk_line_over_limit_creates_no_stream),
    TEST_ENTRY(log_append_bad_body_creates_no_stream),
    TEST_ENTRY(doc_bulk_bad_row_creates_no_collection),
    TEST_ENTRY(enqueue_bad_jobs_creates_no_queue),
    TEST_ENTRY(new_target_bulk_lands_whole),
    TEST_ENTRY(new_target_bulk_reports_line_numbers_as_existing),
};

DAEMON_TEST_MAIN(d, tests)
