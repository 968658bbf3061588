/* The /v1/logs and /v1/queues routes over real HTTP against storhd. */
#include <curl/curl.h>
#include <jansson.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/snapshot.h"
#include "../test.h"
#include "buf.h"
#include "frame.h"
#include "fsx.h"
#include "uuid7.h"

static daemon_proc d;

static client_resp req(const char *method, const char *path, const char *ctype, const char *body)
{
    return daemon_req(&d, method, path, ctype, body);
}

static json_t *body_of(const client_resp *r)
{
    return json_loadb(r->body, r->len, 0, NULL);
}

static int lines(const char *s)
{
    int n = 0;
    for (; (s = strchr(s, '\n')); s++)
        n++;
    return n;
}

static long long metric(const char *name)
{
    client_resp r = req("GET", "/metrics", NULL, NULL);
    const char *p = strstr(r.body, name);
    long long v = p ? atoll(p + strlen(name)) : -1;
    client_free(&r);
    return v;
}

TEST(log_append_get_delete_stream)
{
    client_resp r =
        req("POST", "/v1/logs/events", "application/json", "{\"type\":\"a\",\"n\":1.0}");
    CHECK_INT(r.status, 201);
    json_t *v = body_of(&r);
    char id[40];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(v, "id")));
    json_decref(v);
    client_free(&r);
    char path[128];
    snprintf(path, sizeof path, "/v1/logs/events/%s", id);
    r = req("GET", path, NULL, NULL);
    CHECK_INT(r.status, 200);
    char want[160];
    snprintf(want, sizeof want, "{\"id\":\"%s\",\"data\":{\"type\":\"a\",\"n\":1.0}}", id);
    CHECK_STR(r.body, want);
    client_free(&r);
    for (int i = 0; i < 5; i++) {
        char b[64];
        snprintf(b, sizeof b, "{\"type\":\"%s\",\"i\":%d}", i % 2 ? "b" : "a", i);
        r = req("POST", "/v1/logs/events", "application/json", b);
        CHECK_INT(r.status, 201);
        client_free(&r);
    }
    r = req("GET", "/v1/logs/events?eq.type=a", NULL, NULL);
    CHECK_INT(lines(r.body), 4);
    CHECK(strncmp(r.body, want, strlen(want)) == 0); /* log order: the first append first */
    client_free(&r);
    r = req("GET", "/v1/logs/events?limit=2", NULL, NULL);
    CHECK_INT(lines(r.body), 2);
    client_free(&r);
    r = req("DELETE", path, NULL, NULL);
    CHECK_INT(r.status, 204);
    client_free(&r);
    r = req("DELETE", path, NULL, NULL);
    CHECK_INT(r.status, 404);
    client_free(&r);
    r = req("GET", path, NULL, NULL);
    CHECK_INT(r.status, 404);
    client_free(&r);
    r = req("GET", "/v1/logs/events/_stats", NULL, NULL);
    /* 6 puts and a delete; bytes are the segment file's size */
    CHECK_PREFIX(r.body, "{\"segments\":1,\"records\":5,\"deleted\":1,\"bytes\":");
    client_free(&r);
    r = req("GET", "/v1/logs/nosuch", NULL, NULL);
    CHECK_INT(r.status, 404);
    client_free(&r);
    r = req("POST", "/v1/logs/events/_compact", NULL, NULL);
    CHECK_INT(r.status, 200);
    client_free(&r);
    r = req("GET", "/v1/logs/events/_verify", NULL, NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,\"errors\":[]");
    client_free(&r);
    r = req("POST", "/v1/logs/events/_repair", NULL, NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,\"quarantined\":0,\"stats\":{");
    client_free(&r);
    r = req("POST", "/v1/logs/events/_retain", "application/json", "{\"older_than_days\":0}");
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("POST", "/v1/logs/events/_retain", "application/json", "{\"older_than_days\":1}");
    CHECK_INT(r.status, 200);
    CHECK_PREFIX(r.body, "{\"deleted\":0,"); /* everything is from today */
    client_free(&r);
}

TEST(log_bulk_is_all_or_nothing)
{
    client_resp r = req("POST", "/v1/logs/bulk", "application/json", "{\"seed\":1}");
    client_free(&r);
    char *before = snapshot_tree(d.root);
    r = req("POST", "/v1/logs/bulk/_bulk", "application/x-ndjson", "{\"a\":1}\n{\"b\":2}\nnope\n");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "Line 3") != NULL);
    client_free(&r);
    char *after = snapshot_tree(d.root);
    CHECK_STR(after, before);
    free(before);
    free(after);
    buf body = BUF_INIT;
    for (int i = 0; i < 2000; i++)
        buf_printf(&body, "{\"i\":%d}\n", i);
    client_do(d.base, "POST", "/v1/logs/bulk/_bulk", "application/x-ndjson", body.data, body.len,
              NULL, 1000, &r);
    CHECK_STR(r.body, "{\"written\":2000}");
    client_free(&r);
    buf_free(&body);
    r = req("GET", "/v1/logs/bulk", NULL, NULL);
    CHECK_INT(lines(r.body), 2001);
    client_free(&r);
}

typedef struct appender {
    int n, ok;
} appender;

static void *append_many(void *p)
{
    appender *a = p;
    for (int i = 0; i < a->n; i++) {
        client_resp r = req("POST", "/v1/logs/shared", "application/json", "{\"x\":1}");
        if (r.status == 201)
            a->ok++;
        client_free(&r);
    }
    return NULL;
}

TEST(concurrent_appends_all_land)
{
    enum { T = 8, N = 40 };
    long long fsyncs0 = metric("storhd_engine_operations_total{op=\"fsync_file\"} ");
    pthread_t th[T];
    appender a[T];
    for (int i = 0; i < T; i++) {
        a[i] = (appender){N, 0};
        pthread_create(&th[i], NULL, append_many, &a[i]);
    }
    int ok = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        ok += a[i].ok;
    }
    CHECK_INT(ok, T * N);
    client_resp r = req("GET", "/v1/logs/shared/_stats", NULL, NULL);
    json_t *v = body_of(&r);
    CHECK_INT(json_integer_value(json_object_get(v, "records")), T * N);
    json_decref(v);
    client_free(&r);
    long long fsyncs = metric("storhd_engine_operations_total{op=\"fsync_file\"} ") - fsyncs0;
    CHECK(fsyncs > 0 && fsyncs <= T * N);
    printf("%d acknowledged appends took %lld fsyncs\n", T * N, fsyncs);
}

TEST(queue_flow)
{
    client_resp r = req("POST", "/v1/queues/work/jobs", "application/json",
                        "[{\"to\":\"a\"},{\"to\":\"b\"},{\"to\":\"c\"}]");
    CHECK_INT(r.status, 201);
    json_t *v = body_of(&r);
    CHECK_INT(json_array_size(json_object_get(v, "ids")), 3);
    char first[40];
    snprintf(first, sizeof first, "%s",
             json_string_value(json_array_get(json_object_get(v, "ids"), 0)));
    json_decref(v);
    client_free(&r);
    r = req("POST", "/v1/queues/work/claim?limit=2", NULL, NULL);
    CHECK_INT(r.status, 200);
    v = body_of(&r);
    json_t *jobs = json_object_get(v, "jobs");
    CHECK_INT(json_array_size(jobs), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(jobs, 0), "id")), first);
    CHECK_STR(json_string_value(
                  json_object_get(json_object_get(json_array_get(jobs, 0), "payload"), "to")),
              "a");
    char second[40];
    snprintf(second, sizeof second, "%s",
             json_string_value(json_object_get(json_array_get(jobs, 1), "id")));
    json_decref(v);
    client_free(&r);
    char path[160];
    snprintf(path, sizeof path, "/v1/queues/work/jobs/%s/complete", first);
    r = req("POST", path, NULL, NULL);
    CHECK_STR(r.body, "{\"completed\":1}");
    client_free(&r);
    r = req("POST", path, NULL, NULL);
    CHECK_STR(r.body, "{\"completed\":0}");
    client_free(&r);
    r = req("POST", "/v1/queues/work/requeue", "application/json", "{\"timeout_seconds\":0}");
    CHECK_STR(r.body, "{\"requeued\":1}");
    client_free(&r);
    r = req("GET", "/v1/queues/work", NULL, NULL);
    CHECK_PREFIX(r.body, "{\"pending\":2,\"processing\":0,\"done\":1,\"bytes\":");
    client_free(&r);
    r = req("POST", "/v1/queues/work/purge", "application/json", "{\"older_than_seconds\":0}");
    CHECK_STR(r.body, "{\"purged\":1}");
    client_free(&r);
    char body[128];
    snprintf(body, sizeof body, "{\"ids\":[\"%s\"]}", second);
    r = req("POST", "/v1/queues/work/complete", "application/json", body);
    CHECK_STR(r.body, "{\"completed\":0}"); /* pending again, not processing */
    client_free(&r);
    r = req("GET", "/v1/queues/work/_verify", NULL, NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,\"errors\":[]");
    client_free(&r);
    r = req("POST", "/v1/queues/work/_repair?timeout_seconds=0", NULL, NULL);
    CHECK_STR(r.body, "{\"ok\":true,\"quarantined\":0,\"requeued\":0}");
    client_free(&r);
    r = req("POST", "/v1/queues/work/claim?limit=0", NULL, NULL);
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("POST", "/v1/queues/work/jobs", "application/json", "[{\"id\":\"bad\"}]");
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("POST", "/v1/queues/empty/claim", NULL, NULL);
    CHECK_INT(r.status, 204);
    client_free(&r);
}

/* A body in canonical form takes the queue's byte path, any other the tree
 * path: the answers must not tell them apart. */
TEST(queue_answers_do_not_depend_on_how_the_body_is_spelled)
{
    static const char compact[] =
        "[{\"id\":\"018bcfe5-6800-7000-8000-00000000000a\",\"payload\":{\"to\":\"a/b\","
        "\"n\":1,\"u\":\"caf\xc3\xa9\"}},{\"id\":\"018bcfe5-6801-7000-8000-00000000000b\","
        "\"payload\":[1,2]},{\"id\":\"018bcfe5-6802-7000-8000-00000000000c\",\"k\":{\"d\":"
        "[true,null,\"x\\\"y\"]}}]";
    static const char spaced[] =
        "[ {\"id\": \"018bcfe5-6800-7000-8000-00000000000a\", \"payload\": {\"to\": \"a\\/b\","
        " \"n\": 1, \"u\": \"caf\\u00e9\"}},\n {\"id\": \"018bcfe5-6801-7000-8000-00000000000b\","
        " \"payload\": [1, 2]}, {\"id\": \"018bcfe5-6802-7000-8000-00000000000c\", \"k\": {\"d\":"
        " [true, null, \"x\\\"y\"]}} ]";
    const char *names[2] = {"compact", "spaced"}, *bodies[2] = {compact, spaced};
    char *ids[2], *claims[2], *rest[2];
    for (int i = 0; i < 2; i++) {
        char path[96];
        snprintf(path, sizeof path, "/v1/queues/%s/jobs", names[i]);
        client_resp r = req("POST", path, "application/json", bodies[i]);
        CHECK_INT(r.status, 201);
        ids[i] = strdup(r.body ? r.body : "");
        client_free(&r);
        snprintf(path, sizeof path, "/v1/queues/%s/claim?limit=2", names[i]);
        r = req("POST", path, NULL, NULL);
        CHECK_INT(r.status, 200);
        claims[i] = strdup(r.body ? r.body : "");
        client_free(&r);
        r = req("POST", path, NULL, NULL);
        rest[i] = strdup(r.body ? r.body : "");
        client_free(&r);
    }
    CHECK_STR(ids[0], "{\"ids\":[\"018bcfe5-6800-7000-8000-00000000000a\","
                      "\"018bcfe5-6801-7000-8000-00000000000b\","
                      "\"018bcfe5-6802-7000-8000-00000000000c\"]}");
    CHECK_STR(ids[1], ids[0]);
    CHECK_STR(claims[0], "{\"jobs\":[{\"id\":\"018bcfe5-6800-7000-8000-00000000000a\",\"payload\":"
                         "{\"to\":\"a/b\",\"n\":1,\"u\":\"caf\xc3\xa9\"}},"
                         "{\"id\":\"018bcfe5-6801-7000-8000-00000000000b\",\"payload\":[]}]}");
    CHECK_STR(claims[1], claims[0]);
    CHECK_STR(rest[1], rest[0]);
    CHECK_PREFIX(rest[0], "{\"jobs\":[{\"id\":\"018bcfe5-6802-7000-8000-00000000000c\",\"payload\":"
                          "{\"id\":\"018bcfe5-6802-7000-8000-00000000000c\",\"k\":");
    for (int i = 0; i < 2; i++) {
        free(ids[i]);
        free(claims[i]);
        free(rest[i]);
    }
    /* completes: the same ids spelled two ways, then bad ones */
    static const char done_compact[] = "{\"ids\":[\"018bcfe5-6800-7000-8000-00000000000a\","
                                       "\"018bcfe5-6802-7000-8000-00000000000c\","
                                       "\"018bcfe5-6800-7000-8000-00000000000a\"]}";
    static const char done_spaced[] = "{ \"ids\": [\"018bcfe5-6800-7000-8000-00000000000a\", "
                                      "\"018bcfe5-6802-7000-8000-00000000000c\","
                                      " \"018bcfe5-6800-7000-8000-00000000000a\"] }";
    client_resp r = req("POST", "/v1/queues/compact/complete", "application/json", done_compact);
    CHECK_STR(r.body, "{\"completed\":2}");
    client_free(&r);
    r = req("POST", "/v1/queues/spaced/complete", "application/json", done_spaced);
    CHECK_STR(r.body, "{\"completed\":2}");
    client_free(&r);
    r = req("POST", "/v1/queues/compact/complete", "application/json",
            "{\"ids\":[\"018bcfe5-6800-7000-8000-00000000000Z\"]}");
    CHECK_INT(r.status, 400);
    CHECK(r.body && strstr(r.body, "Id 0: Invalid UUIDv7 value.") != NULL);
    client_free(&r);
    r = req("POST", "/v1/queues/compact/complete", "application/json", "{\"ids\":7}");
    CHECK_INT(r.status, 400);
    CHECK(r.body && strstr(r.body, "ids must be an array") != NULL);
    client_free(&r);
    r = req("POST", "/v1/queues/missing/complete", "application/json", done_compact);
    CHECK_INT(r.status, 404);
    client_free(&r);
    r = req("GET", "/v1/queues/compact", NULL, NULL);
    CHECK_PREFIX(r.body, "{\"pending\":0,\"processing\":1,\"done\":2,");
    client_free(&r);
    /* bad jobs in canonical form create no queue either */
    r = req("POST", "/v1/queues/never/jobs", "application/json",
            "[{\"a\":1},{\"id\":\"018bcfe5-6800-7000-8000-00000000000Z\"}]");
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("GET", "/v1/queues/never", NULL, NULL);
    CHECK_INT(r.status, 404);
    client_free(&r);
    r = req("POST", "/v1/queues/none/jobs", "application/json", "[]");
    CHECK_INT(r.status, 201);
    CHECK_STR(r.body, "{\"ids\":[]}");
    client_free(&r);
}

typedef struct claimer {
    long status;
    char id[40];
} claimer;

static void *claim_waiting(void *p)
{
    claimer *c = p;
    client_resp r = req("POST", "/v1/queues/many/claim?wait_ms=20000", NULL, NULL);
    c->status = r.status;
    json_t *v = body_of(&r);
    const char *id =
        json_string_value(json_object_get(json_array_get(json_object_get(v, "jobs"), 0), "id"));
    snprintf(c->id, sizeof c->id, "%s", id ? id : "");
    json_decref(v);
    client_free(&r);
    return NULL;
}

static void *enqueue_later(void *p)
{
    (void)p;
    usleep(300 * 1000);
    client_resp r = req("POST", "/v1/queues/lp/jobs", "application/json", "{\"late\":true}");
    client_free(&r);
    return NULL;
}

TEST(long_poll_wakes_on_enqueue_and_times_out)
{
    /* nothing arrives: 204 after the wait */
    client_resp r = req("POST", "/v1/queues/lp/claim?wait_ms=200", NULL, NULL);
    CHECK_INT(r.status, 204);
    client_free(&r);
    /* an enqueue during a long wait answers it with the job */
    pthread_t t;
    pthread_create(&t, NULL, enqueue_later, NULL);
    r = req("POST", "/v1/queues/lp/claim?wait_ms=20000", NULL, NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"late\":true") != NULL);
    client_free(&r);
    pthread_join(t, NULL);
    /* parked claims hold no thread: 40 of them (the pool has 32 workers)
     * still leave room for the enqueue that answers them all */
    enum { W = 40 };
    pthread_t ws[W];
    claimer c[W];
    for (int i = 0; i < W; i++) {
        memset(&c[i], 0, sizeof c[i]);
        pthread_create(&ws[i], NULL, claim_waiting, &c[i]);
    }
    usleep(300 * 1000);
    buf jobs = BUF_INIT;
    buf_appendc(&jobs, '[');
    for (int i = 0; i < W; i++)
        buf_printf(&jobs, "%s{\"n\":%d}", i ? "," : "", i);
    buf_appendc(&jobs, ']');
    r = req("POST", "/v1/queues/many/jobs", "application/json", jobs.data);
    CHECK_INT(r.status, 201);
    client_free(&r);
    buf_free(&jobs);
    int got = 0;
    for (int i = 0; i < W; i++) {
        pthread_join(ws[i], NULL);
        if (c[i].status == 200)
            got++;
        for (int k = 0; k < i; k++)
            CHECK(c[i].id[0] == '\0' || strcmp(c[i].id, c[k].id) != 0);
    }
    CHECK_INT(got, W);
}

/* Every line of a stream is byte for byte what GET of its id answers
 * (a record's row built from the tree), whether the stream handed the
 * line's data out as it is (a canonical put) or decoded it: storhd's
 * appends and bulk rows of every form, deletes, and a log storh and odd
 * writers wrote (its spellings, a key after data, data twice). */
static void check_stream_rows(const char *stream, const char *query, int want_rows)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/logs/%s%s", stream, query);
    client_resp r = req("GET", path, NULL, NULL);
    CHECK_INT(r.status, 200);
    CHECK_INT(lines(r.body), want_rows);
    for (const char *l = r.body; *l;) {
        const char *nl = strchr(l, '\n');
        CHECK(nl != NULL);
        if (!nl)
            break;
        CHECK_PREFIX(l, "{\"id\":\"");
        char id[UUID7_LEN + 1];
        snprintf(id, sizeof id, "%.36s", l + 7);
        snprintf(path, sizeof path, "/v1/logs/%s/%s", stream, id);
        client_resp g = req("GET", path, NULL, NULL);
        CHECK_INT(g.status, 200);
        if (g.len != (size_t)(nl - l) || memcmp(g.body, l, g.len)) {
            fprintf(stderr, "stream row: %.*s\nGET:        %s\n", (int)(nl - l), l, g.body);
            CHECK(false);
        }
        client_free(&g);
        l = nl + 1;
    }
    client_free(&r);
}

TEST(log_stream_rows_are_the_records_as_get_answers)
{
    const char *forms[] = {
        "{\"kind\":\"post\",\"status\":\"published\",\"n\":1}",
        "{\"a\":{\"b\":[1,2,{\"c\":null}],\"e\":[]},\"t\":true,\"neg\":-7}",
        "{\"s\":\"tab\\tq\\\"b\\\\s/ é\",\"nl\":\"a\\nb\"}",
        "{\"r\":1.5,\"status\":\"published\",\"x\":1.0}",
        "{\"u\":\"\\u00e9\\u2028\\/\"}",
        "{\"0\":\"int key\",\"k\":\"v\"}",
        "{\"nested\":{\"0\":\"a\",\"1\":\"b\"},\"empty\":{}}",
        "{}",
        "{\"big\":12345678901234567890}",
        "{\"ctl\":\"\\u0001\", \"spaced\" : [ 1 , 2 ] }",
    };
    enum { NF = sizeof forms / sizeof *forms };
    char first[UUID7_LEN + 1] = "";
    for (int i = 0; i < NF; i++) {
        client_resp r = req("POST", "/v1/logs/rawrows", "application/json", forms[i]);
        CHECK_INT(r.status, 201);
        json_t *v = body_of(&r);
        if (i == 3)
            snprintf(first, sizeof first, "%s", json_string_value(json_object_get(v, "id")));
        json_decref(v);
        client_free(&r);
    }
    buf bulk = BUF_INIT;
    for (int i = 0; i < NF; i++) {
        buf_appends(&bulk, forms[i]);
        buf_appendc(&bulk, '\n');
    }
    client_resp r = req("POST", "/v1/logs/rawrows/_bulk", "application/x-ndjson", bulk.data);
    CHECK_INT(r.status, 200);
    client_free(&r);
    buf_free(&bulk);
    char path[128];
    snprintf(path, sizeof path, "/v1/logs/rawrows/%s", first);
    r = req("DELETE", path, NULL, NULL);
    CHECK_INT(r.status, 204);
    client_free(&r);
    check_stream_rows("rawrows", "", 2 * NF - 1);
    check_stream_rows("rawrows", "?limit=5", 5);
    check_stream_rows("rawrows", "?eq.status=published", 3);

    /* a log another writer left: storh's spellings and odd lines */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/phprows/segments", d.root);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    const char *env[] = {
        "{\"op\":\"put\",\"id\":\"018bcfe5-6800-7000-8000-000000000001\",\"data\":{\"kind\":"
        "\"post\",\"r\":1.5,\"big\":1.0e+20,\"s\":\"a/\\\"b\\\\c\\né\"}}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6801-7000-8000-000000000002\",\"data\":{\"nested\":{"
        "\"x\":[1,2,{\"y\":null}],\"e\":[]},\"t\":true,\"f\":false}}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6802-7000-8000-000000000003\",\"data\":[\"a\",\"b\"]}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6803-7000-8000-000000000004\",\"data\":[]}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6804-7000-8000-000000000005\",\"data\":{\"5\":\"x\","
        "\"k\":\"v\"}}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6805-7000-8000-000000000006\",\"data\":{\"a\":1},"
        "\"x\":2}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6806-7000-8000-000000000007\",\"data\":{\"a\":1},"
        "\"data\":{\"b\":2}}",
        "{\"id\":\"018bcfe5-6807-7000-8000-000000000008\",\"op\":\"put\",\"data\":{\"a\":1}}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6808-7000-8000-000000000009\",\"data\":{\"a\":1} }",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6809-7000-8000-00000000000a\",\"data\":{\"a\":\"x\"}}",
        "{\"op\":\"delete\",\"id\":\"018bcfe5-6809-7000-8000-00000000000a\"}",
    };
    buf seg = BUF_INIT;
    for (size_t i = 0; i < sizeof env / sizeof *env; i++)
        frame_encode(&seg, env[i], strlen(env[i]));
    snprintf(p, sizeof p, "%s/phprows/segments/seg-000001.ndjson", d.root);
    CHECK_INT(fsx_write_file(p, seg.data, seg.len, false, NULL), 0);
    buf_free(&seg);
    static const char manifest[] =
        "{\"nextSegment\":2,\"sealed\":[],\"active\":{\"file\":\"seg-000001.ndjson\",\"max\":null,"
        "\"min\":null,\"records\":0,\"ordered\":true}}";
    snprintf(p, sizeof p, "%s/phprows/manifest.jsonc", d.root);
    CHECK_INT(fsx_write_file(p, manifest, strlen(manifest), false, NULL), 0);
    check_stream_rows("phprows", "", 9);
}

/* The i of a stream row {"id":..,"data":{"i":n,..}}, or -1. */
static int row_i(const char *p, size_t n, char id[UUID7_LEN + 1])
{
    json_t *row = json_loadb(p, n, 0, NULL);
    json_t *v = json_object_get(json_object_get(row, "data"), "i");
    int i = json_is_integer(v) ? (int)json_integer_value(v) : -1;
    const char *s = json_string_value(json_object_get(row, "id"));
    if (id && s && strlen(s) == UUID7_LEN)
        memcpy(id, s, UUID7_LEN + 1);
    json_decref(row);
    return i;
}

/* A slow client's NDJSON stream stays open across a POST _compact (with
 * deletes before it, so the outputs differ from the segments it was
 * reading): every record is in it once, in log order, and none deleted
 * before it began. */
TEST(log_stream_read_slowly_across_a_compaction)
{
    enum { N = 30000 };
    buf body = BUF_INIT;
    for (int i = 0; i < N; i++)
        buf_printf(&body, "{\"i\":%d,\"pad\":\"%080d\"}\n", i, i);
    client_resp r;
    client_do(d.base, "POST", "/v1/logs/slowread/_bulk", "application/x-ndjson", body.data,
              body.len, NULL, 1000, &r);
    CHECK_INT(r.status, 200);
    client_free(&r);
    buf_free(&body);
    static char ids[N][UUID7_LEN + 1];
    r = req("GET", "/v1/logs/slowread", NULL, NULL);
    for (char *p = r.body, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
        char id[UUID7_LEN + 1];
        int i = row_i(p, (size_t)(nl - p), id);
        if (i >= 0 && i < N)
            memcpy(ids[i], id, sizeof id);
    }
    client_free(&r);
    char path[128];
    for (int i = 5; i < N; i += 97) { /* before the read */
        snprintf(path, sizeof path, "/v1/logs/slowread/%s", ids[i]);
        r = req("DELETE", path, NULL, NULL);
        CHECK_INT(r.status, 204);
        client_free(&r);
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_INT(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    const char *get = "GET /v1/logs/slowread HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    CHECK(write(fd, get, strlen(get)) == (ssize_t)strlen(get));
    buf in = BUF_INIT;
    char chunk[4096];
    ssize_t got;
    while (in.len < 64 * 1024 && (got = read(fd, chunk, sizeof chunk)) > 0)
        buf_append(&in, chunk, (size_t)got);
    for (int i = 7; i < N; i += 89) { /* after the read began: either way */
        snprintf(path, sizeof path, "/v1/logs/slowread/%s", ids[i]);
        r = req("DELETE", path, NULL, NULL);
        client_free(&r);
    }
    r = req("POST", "/v1/logs/slowread/_compact", NULL, NULL);
    CHECK_INT(r.status, 200);
    client_free(&r);
    while ((got = read(fd, chunk, sizeof chunk)) > 0)
        buf_append(&in, chunk, (size_t)got);
    close(fd);
    buf_appendc(&in, '\0');
    char *p = strstr(in.data, "\r\n\r\n");
    CHECK(p != NULL && !strncmp(in.data, "HTTP/1.", 7) && strstr(in.data, " 200 ") != NULL);
    static char seen[N];
    int last = -1, bad = 0;
    for (char *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
        if (nl == p || (nl - p == 1 && *p == '\r'))
            continue;
        int i = row_i(p, (size_t)(nl - p), NULL);
        if (i <= last || i % 97 == 5)
            bad++; /* out of order, twice, deleted before the read, or not a row */
        else
            seen[i] = 1, last = i;
    }
    CHECK_INT(bad, 0);
    int missing = 0;
    for (int i = 0; i < N; i++)
        missing += !seen[i] && i % 97 != 5 && i % 89 != 7;
    CHECK_INT(missing, 0);
    buf_free(&in);
}

static const test_case tests[] = {
    TEST_ENTRY(log_append_get_delete_stream),
    TEST_ENTRY(log_bulk_is_all_or_nothing),
    TEST_ENTRY(concurrent_appends_all_land),
    TEST_ENTRY(queue_flow),
    TEST_ENTRY(queue_answers_do_not_depend_on_how_the_body_is_spelled),
    TEST_ENTRY(long_poll_wakes_on_enqueue_and_times_out),
    TEST_ENTRY(log_stream_rows_are_the_records_as_get_answers),
    TEST_ENTRY(log_stream_read_slowly_across_a_compaction),
};

DAEMON_TEST_MAIN(d, tests)
