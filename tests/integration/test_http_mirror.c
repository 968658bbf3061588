/* /v1/mirror over real HTTP, on the embedded default SQLite mirror. */
#include <curl/curl.h>
#include <jansson.h>

#include "../support/client.h"
#include "../support/daemon.h"
#include "../test.h"

static daemon_proc d;

static client_resp req(const char *method, const char *path, const char *body)
{
    client_resp r;
    client_do(d.base, method, path, body ? "application/json" : NULL, body, body ? strlen(body) : 0,
              NULL, 0, &r);
    return r;
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

static const test_case tests[] = {
    {"push_verify_flush_pull", push_verify_flush_pull},
};

static int run(int argc, char **argv);
int main(int argc, char **argv)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (daemon_start(&d, NULL, NULL) != 0) {
        fprintf(stderr, "could not start storhd\n");
        return 1;
    }
    int rc = run(argc, argv);
    if (daemon_stop(&d) != 0)
        rc = 1;
    daemon_cleanup(&d);
    curl_global_cleanup();
    return rc;
}
#define main run
TEST_MAIN(tests)
