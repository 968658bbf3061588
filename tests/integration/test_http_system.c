/* The service's own routes and start-up rules, over real HTTP. */
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"
#include "uuid7.h"

static daemon_proc d;

static client_resp get(const char *path)
{
    return daemon_req(&d, "GET", path, NULL, NULL);
}

TEST(health_and_ready)
{
    client_resp r = get("/healthz");
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"status\":\"ok\"}");
    client_free(&r);
    r = get("/readyz");
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"status\":\"ready\",\"checks\":{\"root\":\"ok\",\"stores\":\"ok\"}}");
    client_free(&r);
}

TEST(openapi_lists_every_route)
{
    client_resp r = get("/openapi.json");
    CHECK_INT(r.status, 200);
    json_t *doc = json_loadb(r.body, r.len, 0, NULL);
    json_t *paths = json_object_get(doc, "paths");
    const char *expect[][2] = {
        {"/healthz", "get"},
        {"/readyz", "get"},
        {"/metrics", "get"},
        {"/openapi.json", "get"},
        {"/v1/uuid", "get"},
        {"/v1/uuid/{uuid}", "get"},
        {"/v1/docs/{collection}", "post"},
        {"/v1/docs/{collection}", "get"},
        {"/v1/docs/{collection}/_bulk", "post"},
        {"/v1/docs/{collection}/_export", "get"},
        {"/v1/docs/{collection}/_stats", "get"},
        {"/v1/docs/{collection}/_health", "get"},
        {"/v1/docs/{collection}/{id}", "get"},
        {"/v1/docs/{collection}/{id}", "put"},
        {"/v1/docs/{collection}/{id}", "delete"},
        {"/v1/logs/{stream}", "post"},
        {"/v1/logs/{stream}", "get"},
        {"/v1/logs/{stream}/_bulk", "post"},
        {"/v1/logs/{stream}/_compact", "post"},
        {"/v1/logs/{stream}/_retain", "post"},
        {"/v1/logs/{stream}/_stats", "get"},
        {"/v1/logs/{stream}/_verify", "get"},
        {"/v1/logs/{stream}/_repair", "post"},
        {"/v1/logs/{stream}/{id}", "get"},
        {"/v1/logs/{stream}/{id}", "delete"},
        {"/v1/queues/{queue}/jobs", "post"},
        {"/v1/queues/{queue}/claim", "post"},
        {"/v1/queues/{queue}/jobs/{id}/complete", "post"},
        {"/v1/queues/{queue}/complete", "post"},
        {"/v1/queues/{queue}/requeue", "post"},
        {"/v1/queues/{queue}/purge", "post"},
        {"/v1/queues/{queue}", "get"},
        {"/v1/queues/{queue}/_verify", "get"},
        {"/v1/queues/{queue}/_repair", "post"},
        {"/v1/filter", "post"},
        {"/v1/docs/{collection}/_query", "post"},
        {"/v1/docs/{collection}/_indexes", "get"},
        {"/v1/docs/{collection}/_indexes", "put"},
        {"/v1/docs/{collection}/_schema", "get"},
        {"/v1/docs/{collection}/_schema", "put"},
        {"/v1/docs/{collection}/_verify", "get"},
        {"/v1/docs/{collection}/_repair", "post"},
        {"/v1/docs/{collection}/_reindex", "post"},
        {"/v1/docs/{collection}/_compact", "post"},
        {"/v1/logs/{stream}/_query", "post"},
        {"/v1/mirror/install", "post"},
        {"/v1/mirror", "delete"},
        {"/v1/mirror/push", "post"},
        {"/v1/mirror/flush", "post"},
        {"/v1/mirror/pull", "post"},
        {"/v1/mirror/verify", "get"},
        {"/v1/mirror/rebuild", "post"},
        {"/rpc/{function}", "post"},
    };
    size_t ops = 0;
    const char *k;
    json_t *v;
    json_object_foreach (paths, k, v)
        ops += json_object_size(v);
    CHECK_INT(ops, sizeof expect / sizeof expect[0]);
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        json_t *op = json_object_get(json_object_get(paths, expect[i][0]), expect[i][1]);
        if (!op)
            fprintf(stderr, "missing %s %s\n", expect[i][1], expect[i][0]);
        CHECK(op != NULL);
        CHECK(json_is_string(json_object_get(op, "operationId")));
        CHECK(json_object_size(json_object_get(op, "responses")) >= 2);
    }
    CHECK_STR(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    /* plain JSON, not the record encoding: an empty object stays {} */
    CHECK(strstr(r.body, "\"security\":[]") != NULL);
    CHECK(strstr(r.body, "\"application/json\":[]") == NULL);
    json_decref(doc);
    client_free(&r);
}

TEST(metrics_count_requests)
{
    client_resp r = get("/healthz");
    client_free(&r);
    r = get("/v1/docs/m/018bcfe5-6800-7000-8000-2d5dba6274da"); /* a 404 */
    client_free(&r);
    /* a request is counted when MHD reports it complete, which may be just
     * after the client has its reply: scrape until it shows (up to 5 s) */
    const char *want = "storhd_http_requests_total{route=\"/v1/docs/{collection}/{id}\","
                       "method=\"GET\",status=\"404\"} 1";
    r = get("/metrics");
    for (int i = 0; i < 100 && !strstr(r.body, want); i++) {
        client_free(&r);
        usleep(50 * 1000);
        r = get("/metrics");
    }
    CHECK_INT(r.status, 200);
    char ct[80];
    CHECK_STR(client_header(&r, "Content-Type", ct, sizeof ct),
              "text/plain; version=0.0.4; charset=utf-8");
    CHECK(strstr(r.body, "storhd_http_requests_total{route=\"/healthz\",method=\"GET\","
                         "status=\"200\"}") != NULL);
    CHECK(strstr(r.body, want) != NULL);
    CHECK(strstr(r.body, "storhd_http_request_duration_seconds_bucket{route=\"/healthz\","
                         "method=\"GET\",le=\"+Inf\"}") != NULL);
    CHECK(strstr(r.body, "process_cpu_seconds_total ") != NULL);
    CHECK(strstr(r.body, "process_resident_memory_bytes ") != NULL);
    CHECK(strstr(r.body, "process_open_fds ") != NULL);
    CHECK(strstr(r.body, "storhd_engine_operations_total{op=\"fsync_file\"}") != NULL);
    client_free(&r);
}

TEST(uuid_routes)
{
    client_resp r = get("/v1/uuid?count=50");
    CHECK_INT(r.status, 200);
    json_t *v = json_loadb(r.body, r.len, 0, NULL);
    json_t *ids = json_object_get(v, "ids");
    CHECK_INT(json_array_size(ids), 50);
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const char *id = json_string_value(json_array_get(ids, i));
        CHECK(uuid7_is_valid(id, strlen(id)));
        if (i)
            CHECK(strcmp(json_string_value(json_array_get(ids, i - 1)), id) < 0);
    }
    json_decref(v);
    client_free(&r);
    r = get("/v1/uuid?count=0");
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = get("/v1/uuid?count=1001");
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = get("/v1/uuid/018bcfe5-6800-7234-9678-9abcdef011fe");
    CHECK_STR(r.body, "{\"valid\":true,\"timestamp_ms\":1700000000000}");
    client_free(&r);
    r = get("/v1/uuid/nope");
    CHECK_STR(r.body, "{\"valid\":false}");
    client_free(&r);
}

static int run_cli(const char *const *argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execv(STORHD_BIN, (char *const *)argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(command_line)
{
    const char *help[] = {STORHD_BIN, "--help", NULL};
    CHECK_INT(run_cli(help), 0);
    const char *ver[] = {STORHD_BIN, "--version", NULL};
    CHECK_INT(run_cli(ver), 0);
    const char *bad[] = {STORHD_BIN, "--no-such-flag", NULL};
    CHECK_INT(run_cli(bad), 2);
    /* no JWT key: a non-loopback address needs --insecure-no-auth */
    const char *wide[] = {STORHD_BIN, "--root", d.root, "--listen", "0.0.0.0:1", NULL};
    CHECK_INT(run_cli(wide), 2);
}

TEST(small_body_limit_from_env)
{
    daemon_proc small;
    setenv("STORHD_MAX_BODY", "64", 1);
    int rc = daemon_start(&small, NULL, NULL);
    unsetenv("STORHD_MAX_BODY");
    CHECK_INT(rc, 0);
    if (rc)
        return;
    client_resp r;
    const char *ok = "{\"a\":1}";
    client_do(small.base, "POST", "/v1/docs/s", "application/json", ok, strlen(ok), NULL, 0, &r);
    CHECK_INT(r.status, 201);
    client_free(&r);
    char big[200];
    memset(big, ' ', sizeof big);
    big[0] = '{';
    big[sizeof big - 1] = '}';
    client_do(small.base, "POST", "/v1/docs/s", "application/json", big, sizeof big, NULL, 0, &r);
    CHECK_INT(r.status, 413);
    client_free(&r);
    /* an NDJSON line over the limit is 413 too; the body as a whole may be larger */
    char rows[400];
    size_t n = 0;
    for (int i = 0; i < 20; i++)
        n += (size_t)snprintf(rows + n, sizeof rows - n, "{\"i\":%d}\n", i);
    client_do(small.base, "POST", "/v1/docs/s/_bulk", "application/x-ndjson", rows, n, NULL, 0, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"written\":20}");
    client_free(&r);
    big[sizeof big - 1] = '\n';
    client_do(small.base, "POST", "/v1/docs/s/_bulk", "application/x-ndjson", big, sizeof big, NULL,
              0, &r);
    CHECK_INT(r.status, 413);
    client_free(&r);
    CHECK_INT(daemon_stop(&small), 0);
    daemon_cleanup(&small);
}

/* A second storhd told to listen on a port in use exits with an error; it
 * must not share the port with the first and take half its connections. */
TEST(busy_port_is_refused)
{
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", d.port);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execl(STORHD_BIN, STORHD_BIN, "--root", d.root, "--listen", listen, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    pid_t w = 0;
    for (int i = 0; i < 300 && w == 0; i++) { /* 30 s: it should exit at once */
        w = waitpid(pid, &st, WNOHANG);
        if (w == 0)
            usleep(100 * 1000);
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    CHECK(w == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    client_resp r = get("/healthz"); /* the first server is untouched */
    CHECK_INT(r.status, 200);
    client_free(&r);
}

static const test_case tests[] = {
    TEST_ENTRY(health_and_ready),       TEST_ENTRY(openapi_lists_every_route),
    TEST_ENTRY(metrics_count_requests), TEST_ENTRY(uuid_routes),
    TEST_ENTRY(command_line),           TEST_ENTRY(small_body_limit_from_env),
    TEST_ENTRY(busy_port_is_refused),
};

DAEMON_TEST_MAIN(d, tests)
