/* /metrics against Prometheus' own strict parser: storhd with JWT auth, the
 * page RPC on a real PostgreSQL (STORHD_TEST_PG, from scripts/testpg.sh) and
 * its SQLite mirror gets traffic on every route family, then a scrape must
 * pass `promtool check metrics` (Debian package prometheus) and hold every
 * family a service owner alerts on, each declared once before its samples. */
#include <curl/curl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/jwtkit.h"
#include "../support/metrictext.h"
#include "../test.h"
#include "../tmpdir.h"
#include "buf.h"

static char dir[PATH_MAX];
static daemon_proc d;
static char *token;

static long call(const char *method, const char *path, const char *ctype, const char *body,
                 const char *tok, client_resp *keep)
{
    char hdr[4096];
    snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", tok);
    client_resp r;
    client_do(d.base, method, path, body ? (ctype ? ctype : "application/json") : NULL, body,
              body ? strlen(body) : 0, tok ? hdr : NULL, 0, &r);
    long s = r.status;
    if (keep)
        *keep = r;
    else
        client_free(&r);
    return s;
}

static char *scrape(void)
{
    client_resp r;
    client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r);
    char *body = r.status == 200 ? strdup(r.body) : NULL;
    client_free(&r);
    return body;
}

/* promtool's verdict on text: its exit status (0 = accepted). */
static int promtool(const char *text)
{
    char path[PATH_MAX + 16], cmd[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/scrape.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "promtool check metrics < '%s' 1>&2", path);
    return system(cmd);
}

static void traffic(void)
{
    client_resp r;
    /* system routes and ids */
    call("GET", "/healthz", NULL, NULL, NULL, NULL);
    call("GET", "/readyz", NULL, NULL, NULL, NULL);
    call("GET", "/openapi.json", NULL, NULL, NULL, NULL);
    CHECK_INT(call("GET", "/v1/uuid?count=2", NULL, NULL, token, &r), 200);
    json_t *ids = json_loadb(r.body, r.len, 0, NULL);
    client_free(&r);
    const char *id = json_string_value(json_array_get(json_object_get(ids, "ids"), 0));
    char p[256];
    snprintf(p, sizeof p, "/v1/uuid/%s", id);
    CHECK_INT(call("GET", p, NULL, NULL, token, NULL), 200);
    /* documents and their maintenance */
    snprintf(p, sizeof p, "/v1/docs/pages/%s", id);
    CHECK_INT(call("PUT", p, NULL, "{\"title\":\"a\",\"n\":1}", token, NULL), 201);
    CHECK_INT(call("POST", "/v1/docs/pages", NULL, "{\"title\":\"b\",\"n\":2}", token, NULL), 201);
    for (int i = 0; i < 3; i++)
        CHECK_INT(call("GET", p, NULL, NULL, token, NULL), 200);
    CHECK_INT(call("POST", "/v1/docs/pages/_bulk", "application/x-ndjson",
                   "{\"title\":\"c\",\"n\":3}\n{\"title\":\"d\",\"n\":4}\n", token, NULL),
              200);
    static const char *const doc_gets[] = {"/v1/docs/pages",          "/v1/docs/pages/_export",
                                           "/v1/docs/pages/_stats",   "/v1/docs/pages/_health",
                                           "/v1/docs/pages/_indexes", "/v1/docs/pages/_schema",
                                           "/v1/docs/pages/_verify"};
    for (size_t i = 0; i < sizeof doc_gets / sizeof doc_gets[0]; i++)
        CHECK_INT(call("GET", doc_gets[i], NULL, NULL, token, NULL), 200);
    CHECK_INT(call("PUT", "/v1/docs/pages/_indexes", NULL,
                   "{\"fields\":[{\"field\":\"n\",\"range\":true}]}", token, NULL),
              200);
    CHECK_INT(call("POST", "/v1/docs/pages/_query", NULL, "{\"limit\":2}", token, NULL), 200);
    CHECK_INT(call("POST", "/v1/docs/pages/_reindex", NULL, NULL, token, NULL), 200);
    CHECK_INT(call("POST", "/v1/filter", NULL, "{\"rows\":[{\"a\":1}],\"where\":[]}", token, NULL),
              200);
    CHECK_INT(call("DELETE", p, NULL, NULL, token, NULL), 204);
    /* logs */
    CHECK_INT(call("POST", "/v1/logs/events", NULL, "{\"kind\":\"x\"}", token, NULL), 201);
    CHECK_INT(call("POST", "/v1/logs/events/_bulk", "application/x-ndjson",
                   "{\"kind\":\"y\"}\n{\"kind\":\"z\"}\n", token, NULL),
              200);
    CHECK_INT(call("GET", "/v1/logs/events", NULL, NULL, token, NULL), 200);
    CHECK_INT(call("GET", "/v1/logs/events/_stats", NULL, NULL, token, NULL), 200);
    CHECK_INT(call("POST", "/v1/logs/events/_query", NULL, "{\"limit\":1}", token, NULL), 200);
    /* queues */
    CHECK_INT(call("POST", "/v1/queues/work/jobs", NULL, "[{\"n\":1},{\"n\":2}]", token, NULL),
              201);
    CHECK_INT(call("POST", "/v1/queues/work/claim?limit=1", NULL, NULL, token, &r), 200);
    json_t *claimed = json_loadb(r.body, r.len, 0, NULL);
    client_free(&r);
    const char *jid = json_string_value(
        json_object_get(json_array_get(json_object_get(claimed, "jobs"), 0), "id"));
    char body[200];
    snprintf(body, sizeof body, "{\"ids\":[\"%s\"]}", jid ? jid : "");
    CHECK_INT(call("POST", "/v1/queues/work/complete", NULL, body, token, NULL), 200);
    json_decref(claimed);
    CHECK_INT(call("GET", "/v1/queues/work", NULL, NULL, token, NULL), 200);
    /* the page RPC: a miss, then a hit of the response cache */
    for (int i = 0; i < 2; i++)
        CHECK_INT(call("POST", "/rpc/page", NULL, "{\"limit\":5}", token, NULL), 200);
    /* the mirror */
    CHECK_INT(call("POST", "/v1/mirror/push", NULL, NULL, token, NULL), 200);
    CHECK_INT(call("GET", "/v1/mirror/verify", NULL, NULL, token, NULL), 200);
    /* auth: a token that fails verification, and none at all */
    CHECK_INT(call("GET", "/v1/docs/pages", NULL, NULL, "not.a.token", NULL), 401);
    CHECK_INT(call("GET", "/v1/docs/pages", NULL, NULL, NULL, NULL), 401);
    CHECK_INT(call("GET", "/no/such/route", NULL, NULL, NULL, NULL), 404);
    json_decref(ids);
}

/* Whether every sample of text follows its family's TYPE line and no
 * family is declared twice; want names families that must be there. */
static bool families_once(const char *text, const char *const *want, size_t nwant)
{
    bool ok = true;
    json_t *seen = json_object();
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char name[160];
        if (sscanf(line, "# TYPE %159s", name) == 1) {
            if (json_object_get(seen, name)) {
                fprintf(stderr, "second TYPE line for %s\n", name);
                ok = false;
            }
            json_object_set_new(seen, name, json_true());
        } else if (line[0] != '#' && len) {
            size_t n = strcspn(line, "{ ");
            snprintf(name, sizeof name, "%.*s", (int)n, line);
            bool declared = json_object_get(seen, name) != NULL;
            static const char *const suffix[] = {"_bucket", "_sum", "_count"};
            for (size_t s = 0; s < 3 && !declared; s++) {
                size_t sl = strlen(suffix[s]);
                if (n > sl && !strcmp(name + n - sl, suffix[s])) {
                    name[n - sl] = '\0';
                    declared = json_object_get(seen, name) != NULL;
                }
            }
            if (!declared) {
                fprintf(stderr, "sample before its TYPE line: %.*s\n", (int)len, line);
                ok = false;
            }
        }
        line += len + (end ? 1 : 0);
    }
    for (size_t i = 0; i < nwant; i++)
        if (!json_object_get(seen, want[i])) {
            fprintf(stderr, "family missing: %s\n", want[i]);
            ok = false;
        }
    json_decref(seen);
    return ok;
}

TEST(promtool_accepts_a_scrape_after_traffic_on_every_route_family)
{
    traffic();
    char *text = scrape();
    CHECK(text != NULL);
    if (!text)
        return;
    CHECK_INT(promtool(text), 0);
    static const char *const want[] = {
        "storhd_http_requests_total",
        "storhd_http_request_duration_seconds",
        "storhd_http_bytes_in_total",
        "storhd_http_bytes_out_total",
        "storhd_engine_operations_total",
        "storhd_group_commit_batch_writes",
        "storhd_stores_refusing_writes",
        "storhd_store_refusing_writes",
        "storhd_queue_jobs",
        "storhd_longpoll_parked",
        "storhd_cache_total",
        "storhd_cache_entries",
        "storhd_cache_bytes",
        "storhd_jwt_rejected_total",
        "storhd_pg_pool",
        "storhd_pg_pool_total",
        "storhd_rpc_calls_total",
        "storhd_rpc_seconds_total",
        "storhd_mirror_rows_pushed_total",
        "storhd_mirror_unpushed_writes",
        "storhd_mirror_last_push_success",
        "storhd_mirror_last_push_timestamp_seconds",
        "storhd_mirror_last_success_timestamp_seconds",
        "storhd_root_filesystem_avail_bytes",
        "storhd_root_filesystem_size_bytes",
        "process_cpu_seconds_total",
    };
    CHECK(families_once(text, want, sizeof want / sizeof want[0]));
    /* the three caches share one family */
    CHECK(strstr(text, "storhd_cache_total{cache=\"record\",event=\"hit\"}") != NULL);
    CHECK(strstr(text, "storhd_cache_total{cache=\"response\",event=\"hit\"} 1\n") != NULL);
    CHECK(strstr(text, "storhd_cache_total{cache=\"jwt\",event=\"hit\"}") != NULL);
    CHECK(strstr(text, "\nstorhd_jwt_rejected_total 1\n") != NULL);
    CHECK(strstr(text, "\nstorhd_rpc_calls_total 2\n") != NULL);
    CHECK(strstr(text, "storhd_mirror_last_push_success{mirror=\"default\"} 1\n") != NULL);
    /* every write was pushed: the push came after the last of them */
    CHECK(strstr(text, "storhd_mirror_unpushed_writes{mirror=\"default\"} 0\n") != NULL);
    CHECK(strstr(text, "storhd_group_commit_batch_writes_count{kind=\"log\"} 0\n") == NULL);
    CHECK(strstr(text, "storhd_group_commit_batch_writes_count{kind=\"queue\"} 0\n") == NULL);
    free(text);
    /* a write after the push is counted as not yet pushed */
    CHECK_INT(call("POST", "/v1/docs/pages", NULL, "{\"title\":\"e\"}", token, NULL), 201);
    text = scrape();
    CHECK(text && strstr(text, "storhd_mirror_unpushed_writes{mirror=\"default\"} 1\n") != NULL);
    free(text);
}

TEST(promtool_rejects_a_family_split_in_two)
{
    /* the shape /metrics had before: a second TYPE line for one family */
    const char *bad = "# HELP storhd_cache_total Lookups.\n# TYPE storhd_cache_total counter\n"
                      "storhd_cache_total{cache=\"record\",event=\"hit\"} 1\n"
                      "# HELP storhd_cache_total Lookups.\n# TYPE storhd_cache_total counter\n"
                      "storhd_cache_total{cache=\"jwt\",event=\"hit\"} 1\n";
    CHECK(promtool(bad) != 0);
}

static void *parked_claim(void *arg)
{
    (void)arg;
    call("POST", "/v1/queues/idle/claim?wait_ms=10000", NULL, NULL, token, NULL);
    return NULL;
}

TEST(a_parked_claim_is_counted_until_a_job_wakes_it)
{
    pthread_t th;
    pthread_create(&th, NULL, parked_claim, NULL);
    bool seen = false;
    for (int i = 0; i < 100 && !seen; i++) { /* up to 5 s */
        char *text = scrape();
        seen = text && strstr(text, "\nstorhd_longpoll_parked 1\n");
        free(text);
        if (!seen)
            usleep(50 * 1000);
    }
    CHECK(seen);
    CHECK_INT(call("POST", "/v1/queues/idle/jobs", NULL, "{\"n\":1}", token, NULL), 201);
    pthread_join(th, NULL);
    char *text = scrape();
    CHECK(text && strstr(text, "\nstorhd_longpoll_parked 0\n"));
    free(text);
}

/* storhd runs with --heap-release-idle 1: after bulk queue calls (an
 * enqueue of 25,000 jobs, 5.5 MB of body) the heap keeps what they freed
 * (their blocks of megabytes are not mappings of their own), and a second
 * without an API request gives it back, scrapes or not. Under a wrapper
 * (valgrind, memcheck.sh) or ASan, whose heaps are not glibc's, only the
 * release is checked. */
TEST(the_heap_goes_back_after_a_quiet_spell)
{
    char *text = scrape();
    double keep = metrictext_value(text, "storhd_heap_keep_bytes"),
           r0 = metrictext_value(text, "storhd_heap_releases_total");
    free(text);
#if defined(__SANITIZE_ADDRESS__)
    CHECK(keep == 0); /* ASan's allocator takes no glibc policy */
#else
    CHECK(keep == 32 << 20);
#endif
    CHECK(r0 >= 0);
    buf body = BUF_INIT;
    for (int round = 0; round < 2; round++) {
        buf_reset(&body);
        buf_appendc(&body, '[');
        for (int i = 0; i < 25000; i++)
            buf_printf(&body, "%s{\"n\":%d,\"pad\":\"%0200d\"}", i ? "," : "", i, i);
        buf_appendc(&body, ']');
        CHECK_INT(call("POST", "/v1/queues/heap/jobs", NULL, body.data, token, NULL), 201);
        for (int k = 0; k < 25; k++) /* claims of the most one may claim */
            CHECK_INT(call("POST", "/v1/queues/heap/claim?limit=1000", NULL, NULL, token, NULL),
                      200);
    }
    buf_free(&body);
    text = scrape();
    double rss1 = metrictext_value(text, "process_resident_memory_bytes");
    free(text);
    /* scraped four times a second meanwhile: probes and scrapes are no work,
     * they must not hold the release off */
    double r = r0, rss2 = -1;
    for (int i = 0; i < 60 && r <= r0; i++) {
        usleep(250 * 1000);
        text = scrape();
        r = metrictext_value(text, "storhd_heap_releases_total");
        rss2 = metrictext_value(text, "process_resident_memory_bytes");
        free(text);
    }
    CHECK(r > r0);
#if defined(__SANITIZE_ADDRESS__)
    (void)rss1; /* ASan's allocator keeps its own pages: no RSS to compare */
    (void)rss2;
#else
    if (getenv("STORHD_TEST_WRAPPER")) /* valgrind's heap, not glibc's */
        return;
    /* the claims' lines, notes and answers, and the bodies, went back */
    if (!(rss2 > 0 && rss2 + (8 << 20) <= rss1))
        fprintf(stderr, "rss before the quiet spell %.0f, after %.0f\n", rss1, rss2);
    CHECK(rss2 > 0 && rss2 + (8 << 20) <= rss1);
#endif
}

static const test_case tests[] = {
    {"promtool_accepts_a_scrape_after_traffic_on_every_route_family",
     promtool_accepts_a_scrape_after_traffic_on_every_route_family},
    TEST_ENTRY(promtool_rejects_a_family_split_in_two),
    {"a_parked_claim_is_counted_until_a_job_wakes_it",
     a_parked_claim_is_counted_until_a_job_wakes_it},
    TEST_ENTRY(the_heap_goes_back_after_a_quiet_spell),
};

static int load_fixture(const char *pg)
{
    buf sql = BUF_INIT;
    FILE *f = fopen(STORHD_SOURCE_DIR "/deploy/postgres/fixture.sql", "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        buf_appends(&sql, line);
    if (f)
        fclose(f);
    PGconn *c = PQconnectdb(pg);
    PGresult *res = PQexec(c, sql.data ? sql.data : "");
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!rc)
        fprintf(stderr, "fixture: %s\n", PQresultErrorMessage(res));
    PQclear(res);
    PQfinish(c);
    buf_free(&sql);
    return rc ? 0 : -1;
}

static int run_cases(int argc, char **argv);

int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, tests);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const char *pg = getenv("STORHD_TEST_PG");
    if (!pg) {
        fprintf(stderr, "STORHD_TEST_PG is not set: scripts/test.sh starts a cluster for this\n");
        return 1;
    }
    if (!tmpdir_make(dir) || jwtkit_init(dir) != 0 || load_fixture(pg) != 0)
        return 1;
    char claims[200];
    snprintf(claims, sizeof claims,
             "{\"sub\":\"t\",\"tenant\":3,\"role\":\"reader\",\"scope\":\"*\",\"aud\":\"storhd\","
             "\"exp\":%lld}",
             (long long)time(NULL) + 3600);
    token = jwtkit_mint(claims, JWT_ALG_RS256, NULL, NULL);
    const char *extra[] = {"--rpc-conninfo",
                           pg,
                           "--rpc-functions",
                           "page",
                           "--rpc-cache-ttl",
                           "60",
                           "--jwt-public-key",
                           jwtkit_pub_path(),
                           "--jwt-audience",
                           "storhd",
                           "--heap-release-idle",
                           "1",
                           "--max-body",
                           "8388608",
                           NULL};
    if (daemon_start(&d, NULL, extra) != 0) {
        fprintf(stderr, "could not start storhd\n");
        return 1;
    }
    int rc = run_cases(argc, argv);
    if (daemon_stop(&d) != 0)
        rc = 1;
    daemon_cleanup(&d);
    free(token);
    tmpdir_remove(dir);
    jwtkit_free();
    curl_global_cleanup();
    return rc;
}
TEST_MAIN_NAMED(run_cases, tests)
