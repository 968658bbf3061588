/* Group commit of single-document writes over real HTTP: concurrent POST,
 * PUT and DELETE requests each get their own answer (a unique conflict 409,
 * a schema violation 422 fail alone, never their neighbours), everything
 * acknowledged is there, and /metrics reports the groups. */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/metrictext.h"
#include "../test.h"

#define CLIENTS 24

static daemon_proc d;

typedef struct client {
    int i;
    pthread_barrier_t *start;
    long status;
    char id[64];
    pthread_t th;
} client;

static void *post_one(void *arg)
{
    client *c = arg;
    char body[128];
    /* every third wants the same unique email, every fourth breaks the schema */
    if (c->i % 4 == 1)
        snprintf(body, sizeof body, "{\"title\":%d,\"email\":\"bad-%d\"}", c->i, c->i);
    else if (c->i % 3 == 0)
        snprintf(body, sizeof body, "{\"title\":\"t%d\",\"email\":\"same\"}", c->i);
    else
        snprintf(body, sizeof body, "{\"title\":\"t%d\",\"email\":\"own-%d\"}", c->i, c->i);
    pthread_barrier_wait(c->start);
    json_t *r = NULL;
    c->status = client_json(d.base, "POST", "/v1/docs/grp", body, &r);
    const char *id = json_string_value(json_object_get(r, "id"));
    snprintf(c->id, sizeof c->id, "%s", id ? id : "");
    json_decref(r);
    return NULL;
}

TEST(concurrent_posts_keep_their_own_outcomes)
{
    CHECK_INT(client_json(d.base, "PUT", "/v1/docs/grp/_schema",
                          "{\"fields\":{\"title\":{\"type\":\"string\",\"required\":true},"
                          "\"email\":{\"type\":\"string\",\"unique\":true}}}",
                          NULL),
              200);
    client_resp m0;
    client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &m0);
    double acked0 = metrictext_value(m0.body, "storhd_doc_group_acked_total");
    client_free(&m0);

    static client cs[CLIENTS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, CLIENTS);
    for (int i = 0; i < CLIENTS; i++) {
        cs[i] = (client){.i = i, .start = &start};
        pthread_create(&cs[i].th, NULL, post_one, &cs[i]);
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(cs[i].th, NULL);
    pthread_barrier_destroy(&start);
    int created = 0, same_won = 0, conflicts = 0, invalid = 0;
    for (int i = 0; i < CLIENTS; i++) {
        client *c = &cs[i];
        if (i % 4 == 1) {
            CHECK_INT(c->status, 422);
            invalid++;
        } else if (i % 3 == 0) {
            CHECK(c->status == 201 || c->status == 409);
            same_won += c->status == 201;
            conflicts += c->status == 409;
        } else {
            CHECK_INT(c->status, 201);
        }
        if (c->status != 201)
            continue;
        created++;
        char path[128];
        snprintf(path, sizeof path, "/v1/docs/grp/%s", c->id);
        CHECK_INT(client_json(d.base, "GET", path, NULL, NULL), 200);
    }
    CHECK_INT(same_won, 1);
    CHECK_INT(invalid, CLIENTS / 4);
    json_t *stats = NULL;
    CHECK_INT(client_json(d.base, "GET", "/v1/docs/grp/_stats", NULL, &stats), 200);
    CHECK_INT(json_integer_value(json_object_get(stats, "records")), created);
    json_decref(stats);
    json_t *verify = NULL;
    CHECK_INT(client_json(d.base, "GET", "/v1/docs/grp/_verify", NULL, &verify), 200);
    CHECK(json_is_true(json_object_get(verify, "ok")));
    json_decref(verify);

    client_resp m;
    client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &m);
    /* the 422s never reach a group; the 409s are in one but not acknowledged */
    CHECK_INT(metrictext_value(m.body, "storhd_doc_group_acked_total") - acked0, created);
    CHECK(metrictext_value(m.body, "storhd_doc_group_size_count") >= 1);
    CHECK(metrictext_value(m.body, "storhd_doc_group_size_sum") >= created + conflicts);
    CHECK(metrictext_value(m.body, "storhd_doc_group_wait_seconds_count") >= created + conflicts);
    CHECK(metrictext_value(m.body, "storhd_doc_group_fsyncs_per_write") > 0);
    CHECK(strstr(m.body, "storhd_doc_group_size_bucket{le=\"+Inf\"}") != NULL);
    client_free(&m);
}

typedef struct putter {
    const char *id;
    int n;
    long status;
    pthread_barrier_t *start;
    pthread_t th;
} putter;

static void *put_or_delete(void *arg)
{
    putter *p = arg;
    char path[128], body[64];
    snprintf(path, sizeof path, "/v1/docs/grp2/%s", p->id);
    snprintf(body, sizeof body, "{\"n\":%d}", p->n);
    pthread_barrier_wait(p->start);
    p->status =
        client_json(d.base, p->n < 0 ? "DELETE" : "PUT", path, p->n < 0 ? NULL : body, NULL);
    return NULL;
}

/* PUTs and DELETEs of a few ids at once: every answer is one the order of
 * application explains (one 201 per id before any 200; a 204 only for a
 * record that was there), and the final state matches the answers. */
TEST(concurrent_puts_and_deletes_answer_in_order)
{
    static const char *ids[3] = {"018bcfe5-6800-7000-8000-2d5dba6274da",
                                 "018bcfe5-6800-7000-8000-2d5dba6274db",
                                 "018bcfe5-6800-7000-8000-2d5dba6274dc"};
    static putter ps[CLIENTS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, CLIENTS);
    for (int i = 0; i < CLIENTS; i++) {
        ps[i] = (putter){.id = ids[i % 3], .n = i < 3 ? i : (i % 5 == 0 ? -1 : i), .start = &start};
        pthread_create(&ps[i].th, NULL, put_or_delete, &ps[i]);
    }
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(ps[i].th, NULL);
    pthread_barrier_destroy(&start);
    for (int k = 0; k < 3; k++) {
        int created = 0, deleted = 0;
        for (int i = k; i < CLIENTS; i += 3) {
            if (ps[i].n < 0) {
                CHECK(ps[i].status == 204 || ps[i].status == 404);
                deleted += ps[i].status == 204;
            } else {
                CHECK(ps[i].status == 201 || ps[i].status == 200);
                created += ps[i].status == 201;
            }
        }
        /* from absent, each 201 starts a life of the record and each 204
         * ends one: they alternate */
        CHECK(created == deleted || created == deleted + 1);
        char path[128];
        snprintf(path, sizeof path, "/v1/docs/grp2/%s", ids[k]);
        long st = client_json(d.base, "GET", path, NULL, NULL);
        CHECK_INT(st, created > deleted ? 200 : 404);
    }
}

static const test_case tests[] = {
    TEST_ENTRY(concurrent_posts_keep_their_own_outcomes),
    TEST_ENTRY(concurrent_puts_and_deletes_answer_in_order),
};

DAEMON_TEST_MAIN(d, tests)
