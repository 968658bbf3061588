/* /v1/mirror over real HTTP, on the embedded default SQLite mirror. */
#include <curl/curl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"

static daemon_proc d;

static client_resp req(const char *method, const char *path, const char *body)
{
    return daemon_json(&d, method, path, body);
}

TEST(push_verify_flush_pull)
{
    char ids[3][40];
    for (int i = 0; i < 3; i++) {
        char b[64];
        snprintf(b, sizeof b, "{\"n\":%d}", i);
        client_resp r = req("POST", "/v1/docs/pages", b);
        json_t *v = json_loadb(r.body, r.len, 0, NULL);
        snprintf(ids[i], sizeof ids[i], "%s", json_string_value(json_object_get(v, "id")));
        json_decref(v);
        client_free(&r);
    }
    client_resp r = req("POST", "/v1/mirror/install", NULL);
    CHECK_STR(r.body, "{\"tables\":[\"storh_pages\"]}");
    client_free(&r);
    r = req("POST", "/v1/mirror/push", NULL);
    CHECK_STR(r.body, "{\"inserted\":3,\"updated\":0,\"deleted\":0,\"unchanged\":0}");
    client_free(&r);
    r = req("POST", "/v1/mirror/push?collection=pages", NULL);
    CHECK_STR(r.body, "{\"inserted\":0,\"updated\":0,\"deleted\":0,\"unchanged\":3}");
    client_free(&r);
    r = req("GET", "/v1/mirror/verify", NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,\"errors\":[],\"stats\":{\"pages\":{\"records\":3,");
    client_free(&r);
    char path[128];
    snprintf(path, sizeof path, "/v1/docs/pages/%s", ids[0]);
    r = req("DELETE", path, NULL);
    client_free(&r);
    r = req("GET", "/v1/mirror/verify", NULL);
    CHECK_PREFIX(r.body, "{\"ok\":false,\"errors\":[\"pages: 1 orphaned mirror row(s).\"]");
    client_free(&r);
    char body[160];
    snprintf(body, sizeof body, "{\"collection\":\"pages\",\"ids\":[\"%s\"]}", ids[0]);
    r = req("POST", "/v1/mirror/flush", body);
    CHECK_STR(r.body, "{\"upserted\":0,\"deleted\":1}");
    client_free(&r);
    r = req("POST", "/v1/mirror/flush", "{\"collection\":\"pages\",\"ids\":[\"nope\"]}");
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("POST", "/v1/mirror/pull", NULL);
    CHECK_STR(r.body, "{\"written\":0,\"unchanged\":2}");
    client_free(&r);
    r = req("POST", "/v1/mirror/rebuild", NULL);
    CHECK_STR(r.body, "{\"inserted\":2,\"updated\":0,\"deleted\":0,\"unchanged\":0}");
    client_free(&r);
    r = req("POST", "/v1/mirror/push?collection=../x", NULL);
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("POST", "/v1/mirror/push?mirror=nosuch", NULL);
    CHECK_INT(r.status, 404);
    client_free(&r);
    r = req("GET", "/metrics", NULL);
    CHECK(strstr(r.body, "storhd_mirror_rows_pushed_total{mirror=\"default\"} 5") != NULL);
    client_free(&r);
    r = req("DELETE", "/v1/mirror", NULL);
    CHECK_STR(r.body, "{\"dropped\":[\"storh_pages\"]}");
    client_free(&r);
}

/* A mirror with push_every_seconds pushes by itself. */
TEST(background_push)
{
    char cfg[PATH_MAX], body[PATH_MAX + 200];
    snprintf(cfg, sizeof cfg, "%s.bg.json", d.root);
    snprintf(body, sizeof body,
             "{\"mirrors\":{\"bg\":{\"driver\":\"sqlite\",\"path\":\"%s.bg.sqlite\","
             "\"collections\":\"*\",\"push_every_seconds\":1}}}",
             d.root);
    FILE *f = fopen(cfg, "w");
    fputs(body, f);
    fclose(f);
    daemon_proc bg;
    const char *extra[] = {"--config", cfg, NULL};
    CHECK_INT(daemon_start(&bg, NULL, extra), 0);
    client_resp r;
    client_do(bg.base, "POST", "/v1/docs/auto", "application/json", "{\"a\":1}", 7, NULL, 0, &r);
    CHECK_INT(r.status, 201);
    client_free(&r);
    /* the loop pushes every second; give it up to 20 s on a loaded machine */
    bool ok = false;
    for (int i = 0; i < 200 && !ok; i++) {
        client_do(bg.base, "GET", "/v1/mirror/verify", NULL, NULL, 0, NULL, 0, &r);
        ok = strstr(r.body, "\"ok\":true") != NULL && strstr(r.body, "\"rows\":1") != NULL;
        client_free(&r);
        if (!ok)
            usleep(100 * 1000);
    }
    CHECK(ok);
    client_do(bg.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r);
    CHECK(strstr(r.body, "storhd_mirror_pushes_total{mirror=\"bg\"}") != NULL);
    client_free(&r);
    CHECK_INT(daemon_stop(&bg), 0);
    daemon_cleanup(&bg);
    char rm[PATH_MAX * 2];
    snprintf(rm, sizeof rm, "rm -f '%s' '%s.bg.sqlite' '%s.bg.sqlite-wal' '%s.bg.sqlite-shm'", cfg,
             d.root, d.root, d.root);
    CHECK_INT(system(rm), 0);
}

static const test_case tests[] = {
    TEST_ENTRY(push_verify_flush_pull),
    TEST_ENTRY(background_push),
};

DAEMON_TEST_MAIN(d, tests)
