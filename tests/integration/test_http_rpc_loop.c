/* The page RPC's paths (issue 19), each case its own storhd and ctest test
 * against a real PostgreSQL (STORHD_TEST_PG): a response-cache hit is
 * answered on the event loop while every work-pool thread is blocked in
 * PostgreSQL, and identical concurrent misses make one PostgreSQL call; a
 * statement over --rpc-timeout is cancelled and answered 504, and a
 * saturated pool answers 503 with Retry-After (its queue full, or no
 * connection free within --rpc-queue-timeout). Calls are held in PostgreSQL
 * by an advisory lock the test owns (no timing): loop_gate() counts itself
 * in a sequence, then waits for the lock. */
#include <curl/curl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/jwtkit.h"
#include "../test.h"
#include "../tmpdir.h"

static char dir[PATH_MAX];
static daemon_proc d;
static const char *pg;
static char *token;
static int workers; /* storhd's work pool */

static const char fixture[] =
    "CREATE SEQUENCE IF NOT EXISTS loop_gate_calls;"
    "CREATE OR REPLACE FUNCTION loop_gate(a jsonb) RETURNS TABLE(k bigint, tenant text) "
    "LANGUAGE plpgsql VOLATILE AS $$ BEGIN PERFORM nextval('loop_gate_calls'); "
    "PERFORM pg_advisory_xact_lock_shared(190019); RETURN QUERY SELECT (a->>'k')::bigint, "
    "current_setting('request.jwt.claims', true)::jsonb->>'tenant'; END $$;"
    "CREATE OR REPLACE FUNCTION loop_sleep(a jsonb) RETURNS TABLE(s float8, slept bool) "
    "LANGUAGE sql VOLATILE AS $$ SELECT (a->>'s')::float8, true FROM pg_sleep((a->>'s')::float8) "
    "$$;"
    "CREATE OR REPLACE FUNCTION loop_fail(a jsonb) RETURNS TABLE(x int) LANGUAGE plpgsql AS $$ "
    "BEGIN RAISE EXCEPTION 'loop_fail %', a->>'state' USING ERRCODE = a->>'state'; END $$;"
    "DROP FUNCTION IF EXISTS loop_missing(jsonb);";

static long long sql_value(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    long long n = PQresultStatus(r) == PGRES_TUPLES_OK ? atoll(PQgetvalue(r, 0, 0)) : -1;
    if (n < 0)
        fprintf(stderr, "%s: %s\n", sql, PQresultErrorMessage(r));
    PQclear(r);
    return n;
}

static client_resp call(const char *fn, const char *body)
{
    char hdrs[4200], path[128];
    snprintf(hdrs, sizeof hdrs, "Authorization: Bearer %s", token);
    snprintf(path, sizeof path, "/rpc/%s", fn);
    client_resp r;
    memset(&r, 0, sizeof r);
    client_do(d.base, "POST", path, "application/json", body, strlen(body), hdrs, 0, &r);
    return r;
}

typedef struct caller {
    pthread_t t;
    char body[64];
    client_resp r;
    atomic_int *finished;
} caller;

static void *call_thread(void *p)
{
    caller *c = p;
    c->r = call("loop_gate", c->body);
    atomic_fetch_add(c->finished, 1);
    return NULL;
}

/* Polls until sql returns want (a wait for a state, bounded only to fail
 * instead of hanging). */
static bool wait_value(PGconn *c, const char *sql, long long want)
{
    for (int i = 0; i < 1200; i++) {
        if (sql_value(c, sql) == want)
            return true;
        usleep(50 * 1000);
    }
    return false;
}

static long long metric(const char *name)
{
    client_resp r;
    memset(&r, 0, sizeof r);
    client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r);
    char want[128]; /* a sample line, not the # HELP line */
    snprintf(want, sizeof want, "\n%s ", name);
    const char *at = r.body ? strstr(r.body, want) : NULL;
    long long v = at ? atoll(at + strlen(want)) : -1;
    client_free(&r);
    return v;
}

#define WAITING_SQL                                                                                \
    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE "         \
    "'%loop_gate%'"

/* One held call more than storhd has PostgreSQL connections and pool
 * threads (ctest runs this case with --workers 2 --rpc-pool 2): every
 * connection waits in PostgreSQL and one call is queued for one; a cached
 * page must still answer, before any held call does. */
TEST(hit_while_pool_blocked)
{
    client_resp r = call("loop_gate", "{\"k\":1}");
    CHECK_INT(r.status, 200);
    char hdr[64];
    CHECK_STR(client_header(&r, "X-Cache", hdr, sizeof hdr), "miss");
    client_free(&r);
    PGconn *c = PQconnectdb(pg);
    CHECK_INT(sql_value(c, "SELECT 1 FROM pg_advisory_lock(190019)"), 1);
    atomic_int finished = 0;
    int n = workers + 1, in_pg = 2; /* --rpc-pool 2 */
    caller *held = calloc((size_t)n, sizeof *held);
    for (int i = 0; i < n; i++) {
        held[i].finished = &finished;
        snprintf(held[i].body, sizeof held[i].body, "{\"k\":%d}", 100 + i);
        pthread_create(&held[i].t, NULL, call_thread, &held[i]);
    }
    /* both connections are inside PostgreSQL, waiting for the lock */
    CHECK(wait_value(c, WAITING_SQL, in_pg));
    r = call("loop_gate", "{\"k\":1}");
    CHECK_INT(r.status, 200);
    CHECK_STR(client_header(&r, "X-Cache", hdr, sizeof hdr), "hit");
    CHECK(r.body && strstr(r.body, "\"k\":1") != NULL);
    client_free(&r);
    /* the held calls are still pending: the hit did not need the pool */
    CHECK_INT(atomic_load(&finished), 0);
    CHECK_INT(sql_value(c, WAITING_SQL), in_pg);
    CHECK_INT(sql_value(c, "SELECT pg_advisory_unlock(190019)::int"), 1);
    for (int i = 0; i < n; i++) {
        pthread_join(held[i].t, NULL);
        CHECK_INT(held[i].r.status, 200);
        CHECK_STR(client_header(&held[i].r, "X-Cache", hdr, sizeof hdr), "miss");
        client_free(&held[i].r);
    }
    free(held);
    PQfinish(c);
}

/* 32 identical misses at once: one PostgreSQL call, one answer for all. */
TEST(single_flight_32)
{
    PGconn *c = PQconnectdb(pg);
    CHECK_INT(sql_value(c, "SELECT 1 FROM pg_advisory_lock(190019)"), 1);
    long long before = sql_value(c, "SELECT nextval('loop_gate_calls')");
    atomic_int finished = 0;
    enum { N = 32 };
    caller *cs = calloc(N, sizeof *cs);
    for (int i = 0; i < N; i++) {
        cs[i].finished = &finished;
        snprintf(cs[i].body, sizeof cs[i].body, "{\"k\":7}");
        pthread_create(&cs[i].t, NULL, call_thread, &cs[i]);
    }
    /* one call waits in PostgreSQL and the 31 others wait for it */
    CHECK(wait_value(c, WAITING_SQL, 1));
    for (int i = 0; i < 1200 && metric("storhd_rpc_coalesced_total") < N - 1; i++)
        usleep(50 * 1000);
    CHECK_INT(metric("storhd_rpc_coalesced_total"), N - 1);
    CHECK_INT(atomic_load(&finished), 0);
    CHECK_INT(sql_value(c, "SELECT pg_advisory_unlock(190019)::int"), 1);
    char etag0[64] = "", etag[64];
    for (int i = 0; i < N; i++) {
        pthread_join(cs[i].t, NULL);
        CHECK_INT(cs[i].r.status, 200);
        CHECK_STR(cs[i].r.body, "[{\"k\":7,\"tenant\":\"5\"}]");
        CHECK(client_header(&cs[i].r, "ETag", etag, sizeof etag) != NULL);
        if (!etag0[0])
            snprintf(etag0, sizeof etag0, "%s", etag);
        CHECK_STR(etag, etag0);
        client_free(&cs[i].r);
    }
    free(cs);
    /* the sequence moved by this test's own nextval and by one call */
    CHECK_INT(sql_value(c, "SELECT nextval('loop_gate_calls')") - before, 2);
    PQfinish(c);
}

/* The cache is found by the argument bytes as sent (no parse on a
 * repeat), by the canonical arguments (other spacing), and
 * never across the scope claims: the same bytes with another tenant's
 * token are a miss. */
TEST(hit_by_bytes_and_by_canonical_args)
{
    const char *order[][2] = {{"{\"k\":11,\"z\":[1,2]}", "miss"},
                              {"{\"k\":11,\"z\":[1,2]}", "hit"},
                              {"{ \"k\": 11, \"z\": [1, 2] }", "hit"},
                              {"{ \"k\": 11, \"z\": [1, 2] }", "hit"}};
    char hdr[64];
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        client_resp r = call("loop_gate", order[i][0]);
        CHECK_INT(r.status, 200);
        CHECK_STR(client_header(&r, "X-Cache", hdr, sizeof hdr), order[i][1]);
        CHECK_STR(r.body, "[{\"k\":11,\"tenant\":\"5\"}]");
        client_free(&r);
    }
    char claims[200];
    snprintf(claims, sizeof claims,
             "{\"sub\":\"t\",\"tenant\":\"6\",\"scope\":\"*\",\"aud\":\"storhd\",\"exp\":%lld}",
             (long long)time(NULL) + 3600);
    char *mine = token;
    token = jwtkit_mint(claims, JWT_ALG_RS256, NULL, NULL);
    for (int i = 0; i < 2; i++) {
        client_resp r = call("loop_gate", order[0][0]);
        CHECK_INT(r.status, 200);
        CHECK_STR(client_header(&r, "X-Cache", hdr, sizeof hdr), i ? "hit" : "miss");
        CHECK_STR(r.body, "[{\"k\":11,\"tenant\":\"6\"}]");
        client_free(&r);
    }
    free(token);
    token = mine;
}

static long long metric_until(const char *name, long long want)
{
    for (int i = 0; i < 1200 && metric(name) != want; i++)
        usleep(50 * 1000);
    return metric(name);
}

#define TIMEOUTS "storhd_pg_pool_total{event=\"timeout\"}"
#define REJECTED "storhd_pg_pool_total{event=\"rejected\"}"
#define WAITS "storhd_pg_pool_total{event=\"wait\"}"

/* A call that PostgreSQL would run for 30 s, with --rpc-timeout 300 and a
 * pool of one: 504 naming the timeout, the statement gone from PostgreSQL
 * (cancelled, not left running), and the one connection serves the next
 * call. */
TEST(statement_timeout)
{
    client_resp r = call("loop_sleep", "{\"s\":30}");
    CHECK_INT(r.status, 504);
    json_t *e = r.body ? json_loads(r.body, 0, NULL) : NULL;
    CHECK_STR(json_string_value(json_object_get(json_object_get(e, "error"), "code")), "timeout");
    CHECK(strstr(json_string_value(json_object_get(json_object_get(e, "error"), "message")),
                 "--rpc-timeout") != NULL);
    json_decref(e);
    client_free(&r);
    PGconn *c = PQconnectdb(pg);
    CHECK_INT(sql_value(c, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND "
                           "query LIKE '%loop_sleep%' AND pid <> pg_backend_pid()"),
              0);
    PQfinish(c);
    CHECK_INT(metric(TIMEOUTS), 1);
    r = call("loop_gate", "{\"k\":3}");
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "[{\"k\":3,\"tenant\":\"5\"}]");
    client_free(&r);
    r = call("loop_sleep", "{\"s\":0}");
    CHECK_INT(r.status, 200);
    client_free(&r);
}

/* A pool of one, a queue of one: one call holds the connection, one waits
 * for it, and a third (other arguments: no single-flight) is refused at
 * once with 503 and Retry-After; the two others then complete. */
TEST(saturated_queue_full)
{
    PGconn *c = PQconnectdb(pg);
    CHECK_INT(sql_value(c, "SELECT 1 FROM pg_advisory_lock(190019)"), 1);
    atomic_int finished = 0;
    caller held[2];
    memset(held, 0, sizeof held);
    for (int i = 0; i < 2; i++) {
        held[i].finished = &finished;
        snprintf(held[i].body, sizeof held[i].body, "{\"k\":%d}", 201 + i);
        pthread_create(&held[i].t, NULL, call_thread, &held[i]);
        if (i == 0)
            CHECK(wait_value(c, WAITING_SQL, 1));
    }
    CHECK_INT(metric_until(WAITS, 1), 1);
    client_resp r = call("loop_gate", "{\"k\":203}");
    CHECK_INT(r.status, 503);
    char hdr[64];
    CHECK_STR(client_header(&r, "Retry-After", hdr, sizeof hdr), "1");
    CHECK(r.body && strstr(r.body, "calls wait already") != NULL);
    client_free(&r);
    CHECK_INT(metric(REJECTED), 1);
    CHECK_INT(atomic_load(&finished), 0);
    CHECK_INT(sql_value(c, "SELECT pg_advisory_unlock(190019)::int"), 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(held[i].t, NULL);
        CHECK_INT(held[i].r.status, 200);
        client_free(&held[i].r);
    }
    PQfinish(c);
}

/* A pool of one held in PostgreSQL, --rpc-queue-timeout 200: a second call
 * waits, then gets 503 with Retry-After; the held one completes. */
TEST(saturated_wait_timeout)
{
    PGconn *c = PQconnectdb(pg);
    CHECK_INT(sql_value(c, "SELECT 1 FROM pg_advisory_lock(190019)"), 1);
    atomic_int finished = 0;
    caller held;
    memset(&held, 0, sizeof held);
    held.finished = &finished;
    snprintf(held.body, sizeof held.body, "{\"k\":301}");
    pthread_create(&held.t, NULL, call_thread, &held);
    CHECK(wait_value(c, WAITING_SQL, 1));
    client_resp r = call("loop_gate", "{\"k\":302}");
    CHECK_INT(r.status, 503);
    char hdr[64];
    CHECK_STR(client_header(&r, "Retry-After", hdr, sizeof hdr), "1");
    CHECK(r.body && strstr(r.body, "stayed busy for 200 ms") != NULL);
    client_free(&r);
    CHECK_INT(metric(WAITS), 1);
    CHECK_INT(metric(REJECTED), 1);
    CHECK_INT(atomic_load(&finished), 0);
    CHECK_INT(sql_value(c, "SELECT pg_advisory_unlock(190019)::int"), 1);
    pthread_join(held.t, NULL);
    CHECK_INT(held.r.status, 200);
    client_free(&held.r);
    PQfinish(c);
}

/* The error of a call, mapped as mirror/pgerr.h says: what the function
 * raises is 400 with its message, a query_canceled 504, a connection
 * exception (class 08) 503 with Retry-After, a function that does not
 * exist 400 (it cannot be prepared); each answered at once, and the pool
 * serves the next call. */
TEST(error_mapping)
{
    const struct {
        const char *fn, *body;
        long status;
        const char *code, *says;
    } cases[] = {
        {"loop_fail", "{\"state\":\"22023\"}", 400, "bad_request", "loop_fail 22023"},
        {"loop_fail", "{\"state\":\"57014\"}", 504, "timeout", "--rpc-timeout"},
        {"loop_fail", "{\"state\":\"08006\"}", 503, "unavailable", "PostgreSQL is unavailable"},
        {"loop_missing", "{}", 400, "bad_request", "Could not prepare loop_missing"},
        {"loop_gate", "{\"k\":501}", 200, NULL, "\"k\":501"},
    };
    for (int round = 0; round < 2; round++) /* fresh connections, then prepared ones */
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            client_resp r = call(cases[i].fn, cases[i].body);
            CHECK_INT(r.status, cases[i].status);
            CHECK(r.body && strstr(r.body, cases[i].says) != NULL);
            if (cases[i].code) {
                json_t *e = r.body ? json_loads(r.body, 0, NULL) : NULL;
                CHECK_STR(json_string_value(json_object_get(json_object_get(e, "error"), "code")),
                          cases[i].code);
                json_decref(e);
            }
            char hdr[64];
            if (cases[i].status == 503)
                CHECK_STR(client_header(&r, "Retry-After", hdr, sizeof hdr), "1");
            client_free(&r);
        }
}

#define STORHD_BACKENDS "FROM pg_stat_activity WHERE application_name = 'storhd'"

/* storhd's backends killed (pg_terminate_backend) while idle: a call
 * answers on a new connection (or, if it still found the dead one, fails
 * cleanly and the next answers); killed while a call runs in one: that
 * call is 503 with Retry-After at once, and the next call answers. */
TEST(broken_connection_recovered)
{
    client_resp r = call("loop_gate", "{\"k\":401}");
    CHECK_INT(r.status, 200);
    client_free(&r);
    PGconn *c = PQconnectdb(pg);
    CHECK(sql_value(c, "SELECT count(pg_terminate_backend(pid)) " STORHD_BACKENDS) >= 1);
    CHECK(wait_value(c, "SELECT count(*) " STORHD_BACKENDS, 0));
    /* the first call may still find a connection whose end is not read
     * yet: then it fails cleanly (503, Retry-After), and the next answers */
    r = call("loop_gate", "{\"k\":402}");
    char hdr[64];
    if (r.status != 200) {
        CHECK_INT(r.status, 503);
        CHECK(r.body && strstr(r.body, "PostgreSQL is unavailable") != NULL);
        CHECK_STR(client_header(&r, "Retry-After", hdr, sizeof hdr), "1");
        client_free(&r);
        r = call("loop_gate", "{\"k\":402}");
    }
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "[{\"k\":402,\"tenant\":\"5\"}]");
    client_free(&r);
    CHECK_INT(sql_value(c, "SELECT 1 FROM pg_advisory_lock(190019)"), 1);
    atomic_int finished = 0;
    caller held;
    memset(&held, 0, sizeof held);
    held.finished = &finished;
    snprintf(held.body, sizeof held.body, "{\"k\":403}");
    pthread_create(&held.t, NULL, call_thread, &held);
    CHECK(wait_value(c, WAITING_SQL, 1));
    CHECK(sql_value(c, "SELECT count(pg_terminate_backend(pid)) " STORHD_BACKENDS) >= 1);
    pthread_join(held.t, NULL);
    CHECK_INT(held.r.status, 503);
    CHECK(held.r.body && strstr(held.r.body, "PostgreSQL is unavailable") != NULL);
    CHECK_STR(client_header(&held.r, "Retry-After", hdr, sizeof hdr), "1");
    client_free(&held.r);
    CHECK_INT(sql_value(c, "SELECT pg_advisory_unlock(190019)::int"), 1);
    r = call("loop_gate", "{\"k\":404}");
    CHECK_INT(r.status, 200);
    client_free(&r);
    PQfinish(c);
}

static const test_case tests[] = {
    TEST_ENTRY(error_mapping),          TEST_ENTRY(broken_connection_recovered),
    TEST_ENTRY(hit_while_pool_blocked), TEST_ENTRY(single_flight_32),
    TEST_ENTRY(statement_timeout),      TEST_ENTRY(saturated_queue_full),
    TEST_ENTRY(saturated_wait_timeout), TEST_ENTRY(hit_by_bytes_and_by_canonical_args),
};

/* The storhd options a case runs with, after the common ones. */
static const struct {
    const char *name;
    const char *args[8];
} case_args[] = {
    {"hit_while_pool_blocked", {"--rpc-pool", "2", NULL}},
    {"statement_timeout", {"--rpc-pool", "1", "--rpc-timeout", "300", NULL}},
    {"saturated_queue_full",
     {"--rpc-pool", "1", "--rpc-queue", "1", "--rpc-queue-timeout", "60000", NULL}},
    {"saturated_wait_timeout",
     {"--rpc-pool", "1", "--rpc-queue", "8", "--rpc-queue-timeout", "200", NULL}},
};

static int run_cases(int argc, char **argv);
int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, tests);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pg = getenv("STORHD_TEST_PG");
    if (!pg) {
        fprintf(stderr, "STORHD_TEST_PG is not set: scripts/testpg.sh starts a cluster for this\n");
        return 1;
    }
    if (!tmpdir_make(dir) || jwtkit_init(dir) != 0)
        return 2;
    PGconn *c = PQconnectdb(pg);
    PGresult *res = PQexec(c, fixture);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        fprintf(stderr, "fixture: %s\n", PQresultErrorMessage(res));
        return 1;
    }
    PQclear(res);
    PQfinish(c);
    char claims[200];
    snprintf(claims, sizeof claims,
             "{\"sub\":\"t\",\"tenant\":\"5\",\"scope\":\"*\",\"aud\":\"storhd\",\"exp\":%lld}",
             (long long)time(NULL) + 3600);
    token = jwtkit_mint(claims, JWT_ALG_RS256, NULL, NULL);
    /* two pool threads for the blocked-pool case, the default otherwise */
    workers = argc > 1 && !strcmp(argv[1], "hit_while_pool_blocked") ? 2 : 32;
    char wbuf[16];
    snprintf(wbuf, sizeof wbuf, "%d", workers);
    /* one HTTP loop thread, which then drives PostgreSQL itself; ctest runs
     * the cases again with two (MHD's thread pool, and the RPC's own I/O
     * thread): STORHD_RPC_TEST_THREADS */
    const char *threads = getenv("STORHD_RPC_TEST_THREADS");
    const char *extra[24] = {"--rpc-conninfo",
                             pg,
                             "--rpc-functions",
                             "loop_gate,loop_sleep,loop_fail,loop_missing",
                             "--rpc-cache-ttl",
                             "600",
                             "--jwt-public-key",
                             jwtkit_pub_path(),
                             "--jwt-audience",
                             "storhd",
                             "--workers",
                             wbuf,
                             "--threads",
                             threads ? threads : "1",
                             NULL};
    size_t n = 0;
    while (extra[n])
        n++;
    for (size_t i = 0; argc > 1 && i < sizeof case_args / sizeof case_args[0]; i++)
        if (!strcmp(argv[1], case_args[i].name))
            for (size_t j = 0; case_args[i].args[j]; j++)
                extra[n++] = case_args[i].args[j];
    if (daemon_start(&d, NULL, extra) != 0) {
        fprintf(stderr, "could not start storhd\n");
        return 1;
    }
    int rc = run_cases(argc, argv);
    if (daemon_stop(&d) != 0)
        rc = 1;
    daemon_cleanup(&d);
    tmpdir_remove(dir);
    free(token);
    jwtkit_free();
    curl_global_cleanup();
    return rc;
}
TEST_MAIN_NAMED(run_cases, tests)
