/* test_tenants: thousands of tenants on one storhd with few descriptors.
 *
 * tenants_under_budget: storhd under a descriptor limit of 256 and a 64 MiB
 * total record cache. Logs, queues and collections are created round robin
 * (STORHD_TENANTS of each, default 200; scripts/hardening.sh runs 5000),
 * three records each, then every one is read back and every job claimed:
 * every answer is 2xx with the right data, engines stay within their budget,
 * descriptors leave the connections' share free, and RSS stays under the
 * cache budget plus RSS_SLACK (more under sanitizers).
 *
 * over_limit_503: a budget too small to serve. Two parked long-poll claims
 * hold the only two engines: a write to a third answers 503 with Retry-After
 * naming the budget (never 500) and /readyz says degraded; once the claims
 * end the write succeeds. Then, with a limit of 64 descriptors and
 * --max-open-engines set far above it, creating logs, queues and
 * collections runs the descriptors short: idle engines are shed and the
 * engine budget lowered to what fits, every answer is 2xx or 503 with
 * Retry-After naming RLIMIT_NOFILE (never 500), and everything acknowledged
 * reads back afterwards; once the load is gone every refused write goes
 * through when retried.
 *
 * php_writer_while_evicted (registered when configured with STORH_PHP_DIR,
 * the PHP storh checkout): PHP storh appends to a log with small segments
 * while storhd, with 4 open engines at most, appends to the same log
 * between appends to 12 others, so the log is closed and reopened between
 * each of its writes. Every record of both writers reads back once, through
 * storhd and through PHP, the writes interleaved, and _verify is clean. */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/metrictext.h"
#include "../test.h"

#define NOFILE 256
#define CACHE_TOTAL (64L << 20)
#if defined(__SANITIZE_ADDRESS__)
#define RSS_SLACK (1024L << 20) /* ASan's shadow memory and quarantine */
#else
#define RSS_SLACK (96L << 20)
#endif
#define PER_TENANT 3
#define STR_(x) #x
#define STR(x) STR_(x)

static daemon_proc d;

/* ---- one keep-alive connection for the bulk of the traffic ---- */

typedef struct resp {
    long status;
    char *body;
    size_t len;
    char retry_after[32];
} resp;

static size_t collect(char *data, size_t s, size_t n, void *u)
{
    resp *r = u;
    char *p = realloc(r->body, r->len + s * n + 1);
    if (!p)
        return 0;
    memcpy(p + r->len, data, s * n);
    r->body = p;
    r->len += s * n;
    p[r->len] = '\0';
    return s * n;
}

static size_t header(char *data, size_t s, size_t n, void *u)
{
    resp *r = u;
    if (s * n > 13 && !strncasecmp(data, "Retry-After:", 12))
        snprintf(r->retry_after, sizeof r->retry_after, "%.*s", (int)strcspn(data + 13, "\r\n"),
                 data + 13);
    return s * n;
}

static CURL *conn;

static resp call(const char *method, const char *path, const char *json)
{
    resp r = {0};
    if (!conn)
        conn = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "%s%s", d.base, path);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_reset(conn);
    curl_easy_setopt(conn, CURLOPT_URL, url);
    curl_easy_setopt(conn, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(conn, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(conn, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(conn, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(conn, CURLOPT_HEADERFUNCTION, header);
    curl_easy_setopt(conn, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(conn, CURLOPT_TIMEOUT, 60L);
    if (json) {
        curl_easy_setopt(conn, CURLOPT_POSTFIELDS, json);
        curl_easy_setopt(conn, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
    }
    if (curl_easy_perform(conn) != CURLE_OK)
        r.status = 0;
    else
        curl_easy_getinfo(conn, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(h);
    if (!r.body)
        r.body = calloc(1, 1);
    return r;
}

static void done(resp *r)
{
    free(r->body);
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && atol(v) > 0 ? atol(v) : def;
}

static void limit_fds(rlim_t n)
{
    struct rlimit rl = {n, n};
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
}

static long rss_bytes(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

static long fds_of(pid_t pid)
{
    char cmd[96];
    snprintf(cmd, sizeof cmd, "ls /proc/%d/fd | wc -l", (int)pid);
    FILE *p = popen(cmd, "r");
    long n = -1;
    if (p && fscanf(p, "%ld", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

/* Engines within their budget, room left for connections, RSS bounded. */
static void check_budgets(const char *when)
{
    resp m = call("GET", "/metrics", NULL);
    CHECK_INT(m.status, 200);
    double open = metrictext_value(m.body, "storhd_engines_open{kind=\"docs\"}") +
                  metrictext_value(m.body, "storhd_engines_open{kind=\"log\"}") +
                  metrictext_value(m.body, "storhd_engines_open{kind=\"queue\"}");
    double budget = metrictext_value(m.body, "storhd_engines_budget");
    double conn_fds = metrictext_value(m.body, "storhd_fds_budget{use=\"connections\"}");
    long fds = fds_of(d.pid), rss = rss_bytes(d.pid);
    if (open > budget || fds + conn_fds > NOFILE || rss > CACHE_TOTAL + RSS_SLACK)
        fprintf(stderr, "%s: engines %g of %g, fds %ld (+%g for connections) of %d, rss %ld\n",
                when, open, budget, fds, conn_fds, NOFILE, rss);
    CHECK(budget > 0 && open <= budget);
    CHECK(fds > 0 && fds + conn_fds <= NOFILE);
    CHECK(rss > 0 && rss <= CACHE_TOTAL + RSS_SLACK);
    done(&m);
}

static bool is_2xx(long s)
{
    return s >= 200 && s < 300;
}

TEST(tenants_under_budget)
{
    limit_fds(NOFILE);
    const char *extra[] = {"--cache-bytes-total", "67108864", "--access-log=false", NULL};
    if (daemon_start(&d, NULL, extra) != 0) {
        CHECK(!"storhd started");
        return;
    }
    long n = env_long("STORHD_TENANTS", 200);
    char(*ids)[PER_TENANT][40] = calloc((size_t)n, sizeof *ids);
    long bad = 0;
    char path[160], body[160];
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < PER_TENANT; k++) {
            snprintf(path, sizeof path, "/v1/logs/log%05ld", i);
            snprintf(body, sizeof body, "{\"tenant\":%ld,\"n\":%d}", i, k);
            resp r = call("POST", path, body);
            bad += r.status != 201;
            done(&r);
            snprintf(path, sizeof path, "/v1/docs/docs%05ld", i);
            r = call("POST", path, body);
            json_t *j = json_loads(r.body, 0, NULL);
            const char *id = json_string_value(json_object_get(j, "id"));
            snprintf(ids[i][k], sizeof ids[i][k], "%s", id ? id : "");
            bad += r.status != 201 || !id;
            json_decref(j);
            done(&r);
        }
        snprintf(path, sizeof path, "/v1/queues/queue%05ld/jobs", i);
        snprintf(body, sizeof body,
                 "[{\"tenant\":%ld,\"n\":0},{\"tenant\":%ld,\"n\":1},"
                 "{\"tenant\":%ld,\"n\":2}]",
                 i, i, i);
        resp r = call("POST", path, body);
        bad += r.status != 201;
        done(&r);
        if (i % 500 == 499)
            check_budgets("writing");
    }
    CHECK_INT(bad, 0);
    check_budgets("after writing");

    long wrong = 0;
    for (long i = 0; i < n; i++) {
        snprintf(path, sizeof path, "/v1/logs/log%05ld", i);
        resp r = call("GET", path, NULL);
        const char *line = r.body;
        for (int k = 0; k < PER_TENANT && line; k++) {
            json_t *j = json_loadb(line, strcspn(line, "\n"), 0, NULL);
            json_t *data = json_object_get(j, "data");
            wrong += json_integer_value(json_object_get(data, "tenant")) != i ||
                     json_integer_value(json_object_get(data, "n")) != k;
            json_decref(j);
            line = strchr(line, '\n');
            line = line ? line + 1 : NULL;
        }
        wrong += r.status != 200 || !line || *line;
        done(&r);
        for (int k = 0; k < PER_TENANT; k++) {
            snprintf(path, sizeof path, "/v1/docs/docs%05ld/%s", i, ids[i][k]);
            r = call("GET", path, NULL);
            snprintf(body, sizeof body, "\"data\":{\"tenant\":%ld,\"n\":%d}", i, k);
            wrong += r.status != 200 || !strstr(r.body, body);
            done(&r);
        }
        snprintf(path, sizeof path, "/v1/queues/queue%05ld/claim?limit=10", i);
        r = call("POST", path, NULL);
        json_t *j = json_loads(r.body, 0, NULL);
        json_t *jobs = json_object_get(j, "jobs");
        wrong += r.status != 200 || json_array_size(jobs) != PER_TENANT;
        for (size_t k = 0; k < json_array_size(jobs); k++) {
            json_t *p = json_object_get(json_array_get(jobs, k), "payload");
            wrong += json_integer_value(json_object_get(p, "tenant")) != i;
        }
        json_decref(j);
        done(&r);
        if (i % 500 == 499)
            check_budgets("reading");
    }
    CHECK_INT(wrong, 0);
    check_budgets("after reading");
    resp m = call("GET", "/metrics", NULL);
    double evictions = metrictext_value(m.body, "storhd_engine_events_total{event=\"eviction\"}");
    double reopens = metrictext_value(m.body, "storhd_engine_events_total{event=\"reopen\"}");
    printf("%ld tenants: %g evictions, %g reopens, rss %ld MiB, fds %ld\n", n, evictions, reopens,
           rss_bytes(d.pid) >> 20, fds_of(d.pid));
    CHECK(n < 100 || (evictions > 0 && reopens > 0));
    done(&m);
    free(ids);
    curl_easy_cleanup(conn);
    conn = NULL;
    CHECK_INT(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

/* ---- a budget too small ---- */

typedef struct claim_arg {
    const char *queue;
    long status;
} claim_arg;

static void *claim_thread(void *p)
{
    claim_arg *a = p;
    char path[128];
    snprintf(path, sizeof path, "/v1/queues/%s/claim?wait_ms=3000", a->queue);
    a->status = client_json(d.base, "POST", path, NULL, NULL);
    return NULL;
}

static double held_now(void)
{
    client_resp r;
    double v = -1;
    if (client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r) == 0)
        v = metrictext_value(r.body, "storhd_engines_held");
    client_free(&r);
    return v;
}

static long readyz(void)
{
    return client_json(d.base, "GET", "/readyz", NULL, NULL);
}

static void full_budget(void)
{
    const char *extra[] = {"--max-open-engines", "2", "--access-log=false", NULL};
    if (daemon_start(&d, NULL, extra) != 0) {
        CHECK(!"storhd started");
        return;
    }
    CHECK_INT(client_json(d.base, "POST", "/v1/queues/qa/jobs", "{}", NULL), 201);
    CHECK_INT(client_json(d.base, "POST", "/v1/queues/qb/jobs", "{}", NULL), 201);
    CHECK_INT(client_json(d.base, "POST", "/v1/queues/qa/claim", NULL, NULL), 200);
    CHECK_INT(client_json(d.base, "POST", "/v1/queues/qb/claim", NULL, NULL), 200);
    claim_arg a = {"qa", 0}, b = {"qb", 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, claim_thread, &a);
    pthread_create(&tb, NULL, claim_thread, &b);
    for (int i = 0; i < 200 && held_now() < 2; i++)
        usleep(10000);
    CHECK(held_now() == 2);
    resp r = call("POST", "/v1/logs/third", "{\"x\":1}");
    CHECK_INT(r.status, 503);
    CHECK_STR(r.retry_after, "1");
    CHECK(strstr(r.body, "--max-open-engines") != NULL);
    done(&r);
    r = call("GET", "/v1/docs/third/_stats", NULL);
    CHECK_INT(r.status, 503);
    done(&r);
    CHECK_INT(readyz(), 503);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_INT(a.status, 204); /* the parked claims were served, not cut */
    CHECK_INT(b.status, 204);
    r = call("POST", "/v1/logs/third", "{\"x\":1}");
    CHECK_INT(r.status, 201);
    done(&r);
    long ready = 0;
    for (int i = 0; i < 150 && (ready = readyz()) != 200; i++)
        usleep(100000);
    CHECK_INT(ready, 200);
    curl_easy_cleanup(conn);
    conn = NULL;
    CHECK_INT(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

static void out_of_descriptors(void)
{
    limit_fds(64);
    const char *extra[] = {"--max-open-engines", "1000", "--workers",          "2",
                           "--threads",          "1",    "--access-log=false", NULL};
    if (daemon_start(&d, NULL, extra) != 0) {
        CHECK(!"storhd started");
        return;
    }
    enum { N = 60 };
    static const char *const kinds[] = {"/v1/logs/l%02d", "/v1/queues/q%02d/jobs",
                                        "/v1/docs/d%02d"};
    bool acked[3][N] = {{false}};
    long ok = 0, unavailable = 0, other = 0;
    char path[128];
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 3; k++) {
            snprintf(path, sizeof path, kinds[k], i);
            resp r = call("POST", path, "{\"x\":1}");
            if (is_2xx(r.status)) {
                ok++;
                acked[k][i] = true;
            } else if (r.status == 503 && r.retry_after[0] && strstr(r.body, "RLIMIT_NOFILE")) {
                unavailable++;
            } else {
                other++;
                fprintf(stderr, "%s: %ld %s\n", path, r.status, r.body);
            }
            done(&r);
        }
    resp m = call("GET", "/metrics", NULL);
    double budget = metrictext_value(m.body, "storhd_engines_budget");
    done(&m);
    printf("with 64 descriptors: %ld written, %ld answered 503, engine budget learned: %g\n", ok,
           unavailable, budget);
    CHECK(budget > 0 && budget < 60); /* the descriptors ran short and it was lowered */
    CHECK_INT(other, 0);
    CHECK(ok > 0);
    /* load gone: everything acknowledged is there */
    long missing = 0;
    for (int i = 0; i < N; i++) {
        if (acked[0][i]) {
            snprintf(path, sizeof path, "/v1/logs/l%02d", i);
            resp r = call("GET", path, NULL);
            missing += r.status != 200 || !strstr(r.body, "\"x\":1");
            done(&r);
        }
        if (acked[1][i]) {
            snprintf(path, sizeof path, "/v1/queues/q%02d", i);
            resp r = call("GET", path, NULL);
            missing += r.status != 200;
            done(&r);
        }
    }
    CHECK_INT(missing, 0);
    /* and what was refused goes through now */
    long refused = 0;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 3; k++)
            if (!acked[k][i]) {
                snprintf(path, sizeof path, kinds[k], i);
                resp r = call("POST", path, "{\"x\":1}");
                if (!is_2xx(r.status))
                    fprintf(stderr, "%s retried: %ld %s\n", path, r.status, r.body);
                refused += !is_2xx(r.status);
                done(&r);
            }
    CHECK_INT(refused, 0);
    curl_easy_cleanup(conn);
    conn = NULL;
    CHECK_INT(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

TEST(over_limit_503)
{
    limit_fds(NOFILE);
    full_budget();
    out_of_descriptors();
}

/* ---- PHP storh writing a log storhd keeps evicting ---- */

#define PHP_SEGMENT 4096
#define PHP_N 300

static const char php_script[] =
    "<?php\n"
    "require getenv('STORH_PHP_DIR') . '/vendor/autoload.php';\n"
    "[, $root, $name, $n, $segment, $mode] = $argv;\n"
    "$log = new Storh\\SegmentedLogStore($root, $name, (int)$segment);\n"
    "if ($mode === 'write') {\n"
    "    for ($i = 0; $i < (int)$n; $i++)\n"
    "        $log->put(['php' => $i]);\n"
    "    echo \"written\\n\";\n"
    "} else {\n"
    "    $seen = [];\n"
    "    foreach ($log->stream() as $r)\n"
    "        $seen[] = json_encode($r->data());\n"
    "    echo count($seen), ' ', count(array_unique($seen)), \"\\n\";\n"
    "}\n";

/* Runs the PHP side (mode write or count) in the background; read with
 * php_end. */
static FILE *php_begin(const char *script, const char *mode)
{
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "php %s %s shared %d %d %s", script, d.root, PHP_N, PHP_SEGMENT,
             mode);
    return popen(cmd, "r");
}

static void php_end(FILE *p, char *out, size_t cap)
{
    out[0] = '\0';
    if (!p)
        return;
    if (!fgets(out, (int)cap, p))
        out[0] = '\0';
    CHECK_INT(pclose(p), 0);
}

TEST(php_writer_while_evicted)
{
    if (!getenv("STORH_PHP_DIR")) {
        CHECK(!"STORH_PHP_DIR names the PHP storh checkout");
        return;
    }
    const char *extra[] = {"--max-open-engines", "4", "--log-segment-bytes", STR(PHP_SEGMENT),
                           "--access-log=false", NULL};
    if (daemon_start(&d, NULL, extra) != 0) {
        CHECK(!"storhd started");
        return;
    }
    char script[PATH_MAX + 16], line[128], path[64], body[64];
    snprintf(script, sizeof script, "%s/writer.php", d.root);
    FILE *f = fopen(script, "w");
    CHECK(f && fputs(php_script, f) >= 0 && fclose(f) == 0);
    resp r = call("POST", "/v1/logs/shared", "{\"c\":-1}"); /* the log exists for PHP */
    CHECK_INT(r.status, 201);
    done(&r);
    FILE *php = php_begin(script, "write");
    CHECK(php != NULL);
    long bad = 0;
    for (int i = 0; i < PHP_N; i++) {
        snprintf(body, sizeof body, "{\"c\":%d}", i);
        r = call("POST", "/v1/logs/shared", body);
        bad += r.status != 201;
        done(&r);
        for (int k = 0; k < 4; k++) { /* more than the budget: shared is evicted */
            snprintf(path, sizeof path, "/v1/logs/other%02d", (i * 4 + k) % 12);
            r = call("POST", path, body);
            bad += r.status != 201;
            done(&r);
        }
    }
    php_end(php, line, sizeof line);
    CHECK_STR(line, "written\n");
    CHECK_INT(bad, 0);

    /* every record of both writers once, the two interleaved */
    r = call("GET", "/v1/logs/shared", NULL);
    CHECK_INT(r.status, 200);
    static bool c_seen[PHP_N + 1], php_seen[PHP_N];
    long dup = 0, other = 0, switches = 0;
    int last = -1; /* 0: storhd's, 1: PHP's */
    for (const char *l = r.body; *l;) {
        json_t *j = json_loadb(l, strcspn(l, "\n"), 0, NULL);
        json_t *data = json_object_get(j, "data");
        json_t *c = json_object_get(data, "c"), *p = json_object_get(data, "php");
        json_int_t v = json_integer_value(c ? c : p);
        if (c && v >= -1 && v < PHP_N) {
            dup += c_seen[v + 1];
            c_seen[v + 1] = true;
        } else if (p && v >= 0 && v < PHP_N) {
            dup += php_seen[v];
            php_seen[v] = true;
        } else {
            other++;
        }
        int who = p != NULL;
        switches += last >= 0 && who != last;
        last = who;
        json_decref(j);
        l += strcspn(l, "\n");
        l += *l == '\n';
    }
    done(&r);
    long missing = 0;
    for (int i = 0; i < PHP_N; i++)
        missing += !c_seen[i + 1] + !php_seen[i];
    printf("storhd and PHP storh: %ld missing, %ld twice, %ld switches between writers\n", missing,
           dup, switches);
    CHECK_INT(missing, 0);
    CHECK_INT(dup, 0);
    CHECK_INT(other, 0);
    CHECK(switches >= 2); /* the writers overlapped */
    r = call("GET", "/v1/logs/shared/_verify", NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"ok\":true") != NULL);
    done(&r);
    r = call("GET", "/metrics", NULL);
    double reopens = metrictext_value(r.body, "storhd_engine_events_total{event=\"reopen\"}");
    printf("%g reopens\n", reopens);
    CHECK(reopens >= PHP_N);
    done(&r);
    php_end(php_begin(script, "count"), line, sizeof line);
    snprintf(body, sizeof body, "%d %d\n", 2 * PHP_N + 1, 2 * PHP_N + 1);
    CHECK_STR(line, body); /* PHP reads them all too, each once */
    curl_easy_cleanup(conn);
    conn = NULL;
    CHECK_INT(daemon_stop(&d), 0);
    daemon_cleanup(&d);
}

static const test_case tests[] = {
    TEST_ENTRY(tenants_under_budget),
    TEST_ENTRY(over_limit_503),
    TEST_ENTRY(php_writer_while_evicted),
};

static int run_cases(int argc, char **argv);
TEST_MAIN_NAMED(run_cases, tests)

int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, tests);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = run_cases(argc, argv);
    curl_global_cleanup();
    return rc;
}
