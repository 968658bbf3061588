/* test_poison: a store whose fsync fails refuses writes until a restart,
 * and says so: storhd runs with STORH_FAULT_FAIL=fsync:doomed (every group-
 * commit fsync of the store named doomed reports EIO). The failed append is
 * not acknowledged, later appends to that store are refused, other stores
 * keep working, /readyz turns 503 naming the store, and /metrics counts it.
 * With two open engines at most, writes to other stores evict the idle
 * engines, but not the poisoned one: its writes stay refused (a reopen
 * would take them again). A restart without the fault makes the store
 * writable and /readyz green. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"

static daemon_proc d;

static client_resp call(const char *method, const char *path, const char *body)
{
    return daemon_json(&d, method, path, body);
}

/* Set once the first case has poisoned "doomed" in this storhd. */
static int doomed_poisoned;

TEST(failed_fsync_poisons_the_store_and_readyz_names_it)
{
    doomed_poisoned = 1;
    client_resp r = call("GET", "/readyz", NULL);
    CHECK_INT(r.status, 200);
    client_free(&r);
    r = call("POST", "/v1/logs/doomed", "{\"n\":1}");
    CHECK(r.status >= 500); /* never acknowledged */
    client_free(&r);
    r = call("POST", "/v1/logs/doomed", "{\"n\":2}");
    CHECK(r.status >= 500);
    CHECK(strstr(r.body, "refused until storhd is restarted") != NULL);
    client_free(&r);
    r = call("POST", "/v1/logs/fine", "{\"n\":1}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    r = call("POST", "/v1/queues/jobs/jobs", "{\"n\":1}");
    CHECK_INT(r.status, 201);
    client_free(&r);

    r = call("GET", "/readyz", NULL);
    CHECK_INT(r.status, 503);
    CHECK(strstr(r.body, "\"status\":\"not_ready\"") != NULL);
    CHECK(strstr(r.body, "\"stores\":\"refusing writes after a failed fsync (restart storhd): "
                         "log doomed (Input/output error)\"") != NULL);
    CHECK(strstr(r.body, "\"root\":\"ok\"") != NULL);
    client_free(&r);

    r = call("GET", "/metrics", NULL);
    CHECK(strstr(r.body, "\nstorhd_stores_refusing_writes 1\n") != NULL);
    CHECK(strstr(r.body, "\nstorhd_store_refusing_writes{kind=\"log\",store=\"doomed\"} 1\n") !=
          NULL);
    client_free(&r);
}

/* The metric line's value (after "name "), -1 if absent. */
static long long metric(const char *body, const char *name)
{
    char key[160];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(body, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

TEST(evictions_keep_the_poisoned_store_open_and_refusing)
{
    if (!doomed_poisoned) /* run alone: poison "doomed" first */
        failed_fsync_poisons_the_store_and_readyz_names_it();
    for (int i = 0; i < 6; i++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/logs/other%d", i);
        client_resp r = call("POST", path, "{\"n\":1}");
        CHECK_INT(r.status, 201);
        client_free(&r);
    }
    client_resp r = call("GET", "/metrics", NULL);
    CHECK(metric(r.body, "storhd_engine_events_total{event=\"eviction\"}") >= 5);
    CHECK_INT(metric(r.body, "storhd_engines_budget"), 2);
    client_free(&r);
    r = call("POST", "/v1/logs/doomed", "{\"n\":4}");
    CHECK(r.status >= 500);
    CHECK(strstr(r.body, "refused until storhd is restarted") != NULL);
    client_free(&r);
    r = call("GET", "/metrics", NULL); /* doomed was never closed, so never reopened */
    CHECK_INT(metric(r.body, "storhd_engine_events_total{event=\"reopen\"}"), 0);
    client_free(&r);
    r = call("GET", "/v1/logs/other5/_stats", NULL);
    CHECK_INT(r.status, 200);
    client_free(&r);
}

TEST(restart_without_the_fault_serves_the_store_again)
{
    if (!doomed_poisoned) /* run alone: poison "doomed" first */
        failed_fsync_poisons_the_store_and_readyz_names_it();
    char root[PATH_MAX];
    snprintf(root, sizeof root, "%s", d.root);
    CHECK_INT(daemon_stop(&d), 0);
    unsetenv("STORH_FAULT_FAIL");
    CHECK_INT(daemon_start(&d, root, NULL), 0);
    client_resp r = call("POST", "/v1/logs/doomed", "{\"n\":3}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    r = call("GET", "/readyz", NULL);
    CHECK_INT(r.status, 200);
    client_free(&r);
    r = call("GET", "/metrics", NULL);
    CHECK(strstr(r.body, "\nstorhd_stores_refusing_writes 0\n") != NULL);
    client_free(&r);
}

#define DOC_WRITERS 16

typedef struct doc_writer {
    const daemon_proc *d;
    pthread_barrier_t *start;
    int i;
    long status;
    pthread_t th;
} doc_writer;

static void *post_doc(void *arg)
{
    doc_writer *w = arg;
    char body[64];
    snprintf(body, sizeof body, "{\"w\":%d}", w->i);
    pthread_barrier_wait(w->start);
    client_resp r = daemon_json(w->d, "POST", "/v1/docs/ddoomed", body);
    w->status = r.status;
    client_free(&r);
    return NULL;
}

/* Grouped document writes: a failed sync fails every write of its group
 * (none acknowledged, none visible), poisons the collection (later writes,
 * a DELETE included, refused; /readyz names it), other collections keep
 * working. Its own storhd, so the order of the cases above does not matter. */
TEST(failed_doc_sync_fails_every_write_of_its_group)
{
    daemon_proc dd;
    setenv("STORH_FAULT_FAIL", "fsync:ddoomed", 1);
    int started = daemon_start(&dd, NULL, NULL);
    setenv("STORH_FAULT_FAIL", "fsync:doomed", 1);
    CHECK_INT(started, 0);
    if (started)
        return;
    static doc_writer ws[DOC_WRITERS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, DOC_WRITERS);
    for (int i = 0; i < DOC_WRITERS; i++) {
        ws[i] = (doc_writer){.d = &dd, .start = &start, .i = i};
        pthread_create(&ws[i].th, NULL, post_doc, &ws[i]);
    }
    for (int i = 0; i < DOC_WRITERS; i++) {
        pthread_join(ws[i].th, NULL);
        CHECK_INT(ws[i].status, 500); /* EIO: never acknowledged */
    }
    pthread_barrier_destroy(&start);
    client_resp r = daemon_json(&dd, "GET", "/metrics", NULL);
    CHECK_INT(metric(r.body, "storhd_doc_group_acked_total"), 0);
    CHECK(metric(r.body, "storhd_doc_group_size_count") >= 1);
    CHECK(metric(r.body, "storhd_doc_group_size_count") < DOC_WRITERS); /* groups formed */
    CHECK(strstr(r.body, "\nstorhd_store_refusing_writes{kind=\"doc\",store=\"ddoomed\"} 1\n") !=
          NULL);
    client_free(&r);
    r = daemon_json(&dd, "PUT", "/v1/docs/ddoomed/018bcfe5-6800-7000-8000-2d5dba6274da",
                    "{\"w\":1}");
    CHECK_INT(r.status, 500);
    CHECK(strstr(r.body, "refused until storhd is restarted") != NULL);
    client_free(&r);
    r = daemon_json(&dd, "DELETE", "/v1/docs/ddoomed/018bcfe5-6800-7000-8000-2d5dba6274da", NULL);
    CHECK_INT(r.status, 500);
    client_free(&r);
    r = daemon_json(&dd, "GET", "/v1/docs/ddoomed/_export", NULL);
    CHECK(r.status == 200 || r.status == 404);
    CHECK(r.status == 404 || r.len == 0); /* nothing of the failed group is visible */
    client_free(&r);
    r = daemon_json(&dd, "POST", "/v1/docs/fine", "{\"w\":1}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    r = daemon_json(&dd, "GET", "/readyz", NULL);
    CHECK_INT(r.status, 503);
    CHECK(strstr(r.body, "doc ddoomed (Input/output error)") != NULL);
    client_free(&r);
    CHECK_INT(daemon_stop(&dd), 0);
    daemon_cleanup(&dd);
}

static const test_case tests[] = {
    {"failed_fsync_poisons_the_store_and_readyz_names_it",
     failed_fsync_poisons_the_store_and_readyz_names_it},
    {"evictions_keep_the_poisoned_store_open_and_refusing",
     evictions_keep_the_poisoned_store_open_and_refusing},
    {"restart_without_the_fault_serves_the_store_again",
     restart_without_the_fault_serves_the_store_again},
    {"failed_doc_sync_fails_every_write_of_its_group",
     failed_doc_sync_fails_every_write_of_its_group},
};

static int run_cases(int argc, char **argv);

int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, tests);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    setenv("STORH_FAULT_FAIL", "fsync:doomed", 1);
    static const char *const small[] = {"--max-open-engines", "2", NULL};
    if (daemon_start(&d, NULL, small) != 0) {
        fprintf(stderr, "could not start storhd\n");
        return 1;
    }
    int rc = run_cases(argc, argv);
    if (daemon_stop(&d) != 0)
        rc = 1;
    daemon_cleanup(&d);
    curl_global_cleanup();
    return rc;
}
TEST_MAIN_NAMED(run_cases, tests)
