/* The page RPC against a real PostgreSQL (STORHD_TEST_PG, and for the
 * kill/restart case STORHD_TEST_PG_DIR and STORHD_TEST_PG_PORT, which
 * scripts/test.sh provides; without them the test fails rather than skips). */
#include <curl/curl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/jwtkit.h"
#include "../test.h"
#include "../tmpdir.h"
#include "buf.h"

static char dir[PATH_MAX];
static daemon_proc d;
static const char *pg;

static long long sql_count(const char *sql)
{
    PGconn *c = PQconnectdb(pg);
    PGresult *r = PQexec(c, sql);
    long long n = PQresultStatus(r) == PGRES_TUPLES_OK ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    PQfinish(c);
    return n;
}

static char *token_for(int tenant)
{
    char claims[160];
    snprintf(claims, sizeof claims,
             "{\"sub\":\"t\",\"tenant\":%d,\"role\":\"reader\",\"scope\":\"*\",\"aud\":"
             "\"storhd\",\"exp\":%lld}",
             tenant, (long long)time(NULL) + 3600);
    return jwtkit_mint(claims, JWT_ALG_RS256, NULL, NULL);
}

/* About 1 KiB of arguments, as in the reference workload. */
static char *args(int limit, const char *extra)
{
    static char b[2048];
    char pad[901];
    memset(pad, 'x', 900);
    pad[900] = '\0';
    snprintf(b, sizeof b, "{\"limit\":%d,\"pad\":\"%s\"%s%s}", limit, pad, extra ? "," : "",
             extra ? extra : "");
    return b;
}

static client_resp call(const char *fn, const char *token, const char *body, const char *inm)
{
    char hdrs[4200], path[128];
    snprintf(hdrs, sizeof hdrs, "Authorization: Bearer %s%s%s", token ? token : "",
             inm ? "\nIf-None-Match: " : "", inm ? inm : "");
    snprintf(path, sizeof path, "/rpc/%s", fn);
    client_resp r;
    client_do(d.base, "POST", path, "application/json", body, strlen(body), token ? hdrs : NULL, 0,
              &r);
    return r;
}

static bool all_tenant(const client_resp *r, int tenant, size_t *n)
{
    json_t *rows = json_loadb(r->body, r->len, 0, NULL);
    *n = json_array_size(rows);
    bool ok = json_is_array(rows);
    size_t i;
    json_t *row;
    json_array_foreach (rows, i, row)
        ok = ok && json_integer_value(json_object_get(row, "tenant")) == tenant;
    json_decref(rows);
    return ok;
}

TEST(rows_cache_and_etag)
{
    char *t7 = token_for(7), *t8 = token_for(8);
    client_resp r = call("page", t7, args(100, NULL), NULL);
    CHECK_INT(r.status, 200);
    size_t n;
    CHECK(all_tenant(&r, 7, &n));
    CHECK_INT(n, 100);
    char hdr[64], etag[64];
    CHECK_STR(client_header(&r, "X-Cache", hdr, sizeof hdr), "miss");
    CHECK(client_header(&r, "ETag", etag, sizeof etag) != NULL);
    CHECK_STR(client_header(&r, "Cache-Control", hdr, sizeof hdr), "private, max-age=1");
    client_free(&r);
    r = call("page", t7, args(100, NULL), NULL);
    CHECK_STR(client_header(&r, "X-Cache", hdr, sizeof hdr), "hit");
    char etag2[64];
    CHECK_STR(client_header(&r, "ETag", etag2, sizeof etag2), etag);
    client_free(&r);
    /* the claims scope the cache: tenant 8 is not served tenant 7's rows */
    r = call("page", t8, args(100, NULL), NULL);
    CHECK_STR(client_header(&r, "X-Cache", hdr, sizeof hdr), "miss");
    CHECK(all_tenant(&r, 8, &n));
    client_free(&r);
    /* entries expire after the TTL */
    usleep(1300 * 1000);
    r = call("page", t7, args(100, NULL), NULL);
    CHECK_STR(client_header(&r, "X-Cache", hdr, sizeof hdr), "miss");
    client_free(&r);
    /* a conditional request with the ETag of the same rows */
    r = call("page", t7, args(100, NULL), etag);
    CHECK_INT(r.status, 304);
    CHECK_INT(r.len, 0);
    client_free(&r);
    free(t7);
    free(t8);
}

TEST(bad_calls)
{
    char *t7 = token_for(7);
    client_resp r = call("page", NULL, args(10, NULL), NULL);
    CHECK_INT(r.status, 401);
    client_free(&r);
    r = call("page", "not.a.token", args(10, NULL), NULL);
    CHECK_INT(r.status, 401);
    client_free(&r);
    /* every rejection reaches neither PostgreSQL nor the cache */
    long long now = (long long)time(NULL);
    char c[6][200];
    snprintf(c[0], sizeof c[0], "{\"tenant\":7,\"aud\":\"storhd\",\"exp\":%lld}", now - 3600);
    snprintf(c[1], sizeof c[1], "{\"tenant\":7,\"aud\":\"storhd\",\"exp\":%lld,\"nbf\":%lld}",
             now + 7200, now + 3600);
    snprintf(c[2], sizeof c[2], "{\"tenant\":7,\"aud\":\"elsewhere\",\"exp\":%lld}", now + 600);
    snprintf(c[3], sizeof c[3], "{\"tenant\":7,\"aud\":\"storhd\",\"exp\":%lld}", now + 600);
    char *bad[] = {
        jwtkit_mint(c[0], JWT_ALG_RS256, NULL, NULL),             /* expired */
        jwtkit_mint(c[1], JWT_ALG_RS256, NULL, NULL),             /* not yet valid */
        jwtkit_mint(c[2], JWT_ALG_RS256, NULL, NULL),             /* wrong aud */
        jwtkit_mint(c[3], JWT_ALG_NONE, NULL, NULL),              /* alg none */
        jwtkit_mint(c[3], JWT_ALG_HS256, jwtkit_pub_pem(), NULL), /* HS256, public key as secret */
        jwtkit_mint(c[3], JWT_ALG_RS256, NULL, NULL),             /* bad signature, below */
    };
    size_t last = strlen(bad[5]);
    bad[5][last - 3] = bad[5][last - 3] == 'Q' ? 'R' : 'Q';
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = call("page", bad[i], args(10, NULL), NULL);
        if (r.status != 401)
            fprintf(stderr, "bad token %zu -> %ld\n", i, r.status);
        CHECK_INT(r.status, 401);
        client_free(&r);
        free(bad[i]);
    }
    const char *names[] = {"nope", "page;drop%20table%20rpc_items", "pg_sleep", "%22page%22",
                           "PAGE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        r = call(names[i], t7, args(10, NULL), NULL);
        CHECK_INT(r.status, 404);
        client_free(&r);
    }
    /* injection in the arguments: they are a bound jsonb parameter */
    char claims[128];
    snprintf(claims, sizeof claims, "{\"scope\":\"*\",\"aud\":\"storhd\",\"exp\":%lld}",
             (long long)time(NULL) + 600);
    char *anon = jwtkit_mint(claims, JWT_ALG_RS256, NULL, NULL);
    r = call("page", anon, "{\"tenant\":\"1; DROP TABLE rpc_items; --\",\"limit\":5}", NULL);
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = call("page", anon, "{\"tenant\":\"1' OR '1'='1\"}", NULL);
    CHECK_INT(r.status, 400);
    client_free(&r);
    CHECK_INT(sql_count("SELECT count(*) FROM rpc_items"), 10000);
    r = call("page", t7, "[1,2]", NULL);
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = call("page", t7, "{\"limit\":", NULL);
    CHECK_INT(r.status, 400);
    client_free(&r);
    free(anon);
    free(t7);
}

TEST(postgres_down_then_back)
{
    const char *pgdir = getenv("STORHD_TEST_PG_DIR"), *port = getenv("STORHD_TEST_PG_PORT");
    CHECK(pgdir && port);
    if (!pgdir || !port)
        return;
    char cmd[PATH_MAX * 2];
    char *t = token_for(3);
    snprintf(cmd, sizeof cmd, "%s/scripts/pg.sh stop '%s'", STORHD_SOURCE_DIR, pgdir);
    CHECK_INT(system(cmd), 0);
    client_resp r = call("page", t, args(7, "\"n\":1"), NULL);
    CHECK_INT(r.status, 503);
    CHECK(strstr(r.body, "PostgreSQL is unavailable") != NULL);
    char ra[16];
    CHECK_STR(client_header(&r, "Retry-After", ra, sizeof ra), "1");
    client_free(&r);
    client_do(d.base, "GET", "/readyz", NULL, NULL, 0, NULL, 0, &r); /* not ready without it */
    CHECK_INT(r.status, 503);
    CHECK_STR(
        r.body,
        "{\"status\":\"not_ready\",\"checks\":{\"root\":\"ok\",\"stores\":\"ok\",\"postgres\":"
        "\"unreachable\"}}");
    client_free(&r);
    snprintf(cmd, sizeof cmd, "%s/scripts/pg.sh start '%s' %s >/dev/null", STORHD_SOURCE_DIR, pgdir,
             port);
    CHECK_INT(system(cmd), 0);
    client_do(d.base, "GET", "/readyz", NULL, NULL, 0, NULL, 0, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"status\":\"ready\",\"checks\":{\"root\":\"ok\",\"stores\":\"ok\","
                      "\"postgres\":\"ok\"}}");
    client_free(&r);
    r = call("page", t, args(7, "\"n\":2"), NULL);
    CHECK_INT(r.status, 200);
    size_t n;
    CHECK(all_tenant(&r, 3, &n));
    CHECK_INT(n, 7);
    client_free(&r);
    r = call("page", t, args(7, "\"n\":3"), NULL);
    CHECK_INT(r.status, 200);
    client_free(&r);
    free(t);
    client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r);
    CHECK(strstr(r.body, "storhd_pg_pool{state=\"size\"} 8") != NULL);
    CHECK(strstr(r.body, "storhd_cache_total{cache=\"response\",event=\"hit\"}") != NULL);
    client_free(&r);
}

/* A series' value in /metrics, -1 when absent. */
static long long metric(const char *series)
{
    client_resp r;
    client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r);
    char line[256];
    snprintf(line, sizeof line, "\n%s ", series);
    const char *p = r.status == 200 && r.body ? strstr(r.body, line) : NULL;
    long long v = p ? atoll(p + strlen(line)) : -1;
    client_free(&r);
    return v;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Hits are sent from the cache entry's own bytes (held, not copied): the
 * same bytes as the miss, many times, and a 304 in between; the response
 * cache's bytes are in /metrics, and hits do not grow them. The cache's TTL
 * is 1 s here: only calls well inside it are expected to hit. */
TEST(hits_from_the_entry_and_cache_bytes)
{
    const char *bytes = "storhd_cache_bytes{cache=\"response\"}";
    const char *entries = "storhd_cache_entries{cache=\"response\"}";
    /* relative to what the cases before it left (all cases share one
     * server when the suite runs in one process, as under memcheck); an
     * argument no other case sends makes the call a new entry */
    const char *probe = "\"probe\":\"cache_bytes\"";
    long long base = metric(bytes), base_held = metric(entries);
    CHECK(base >= 0 && base_held >= 0);
    char *t7 = token_for(7);
    double t0 = mono_s();
    client_resp miss = call("page", t7, args(100, probe), NULL);
    CHECK_INT(miss.status, 200);
    char etag[64], hdr[64];
    CHECK(client_header(&miss, "ETag", etag, sizeof etag) != NULL);
    long long cached = metric(bytes), held = metric(entries);
    /* the answer, its keys and their bookkeeping */
    CHECK(cached - base >= (long long)miss.len);
    CHECK(cached - base < 2 * (long long)miss.len + 8192);
    CHECK(held - base_held >= 1);
    int hits = 0;
    for (int i = 0; i < 20 && mono_s() - t0 < 0.6; i++) {
        client_resp r = call("page", t7, args(100, probe), i == 10 ? etag : NULL);
        if (i == 10) {
            CHECK_INT(r.status, 304);
            CHECK_INT(r.len, 0);
        } else {
            CHECK_INT(r.status, 200);
            CHECK_INT(r.len, miss.len);
            CHECK(r.body && !memcmp(r.body, miss.body, miss.len));
        }
        const char *xc = client_header(&r, "X-Cache", hdr, sizeof hdr);
        hits += xc && !strcmp(xc, "hit");
        client_free(&r);
    }
    if (mono_s() - t0 < 0.6) { /* nothing expired: every call was a hit */
        CHECK_INT(hits, 20);
        CHECK_INT(metric(bytes), cached);
        CHECK_INT(metric(entries), held);
    }
    client_free(&miss);
    free(t7);
}

static const test_case tests[] = {
    TEST_ENTRY(rows_cache_and_etag),
    TEST_ENTRY(hits_from_the_entry_and_cache_bytes),
    TEST_ENTRY(bad_calls),
    TEST_ENTRY(postgres_down_then_back),
};

static int run_cases(int argc, char **argv);
int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, tests);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pg = getenv("STORHD_TEST_PG");
    if (!pg) {
        fprintf(stderr, "STORHD_TEST_PG is not set: scripts/test.sh starts a cluster for this\n");
        return 1;
    }
    if (!tmpdir_make(dir) || jwtkit_init(dir) != 0)
        return 2;
    /* load the reference fixture */
    buf sql = BUF_INIT;
    FILE *f = fopen(STORHD_SOURCE_DIR "/deploy/postgres/fixture.sql", "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f))
        buf_appends(&sql, line);
    if (f)
        fclose(f);
    PGconn *c = PQconnectdb(pg);
    PGresult *res = PQexec(c, sql.data ? sql.data : "");
    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "fixture: %s\n", PQresultErrorMessage(res));
        return 1;
    }
    PQclear(res);
    PQfinish(c);
    buf_free(&sql);
    const char *extra[] = {"--rpc-conninfo",
                           pg,
                           "--rpc-functions",
                           "page",
                           "--rpc-cache-ttl",
                           "1",
                           "--jwt-public-key",
                           jwtkit_pub_path(),
                           "--jwt-audience",
                           "storhd",
                           "--jwt-leeway",
                           "0",
                           NULL};
    if (daemon_start(&d, NULL, extra) != 0) {
        fprintf(stderr, "could not start storhd\n");
        return 1;
    }
    int rc = run_cases(argc, argv);
    if (daemon_stop(&d) != 0)
        rc = 1;
    daemon_cleanup(&d);
    tmpdir_remove(dir);
    jwtkit_free();
    curl_global_cleanup();
    return rc;
}
TEST_MAIN_NAMED(run_cases, tests)
