#include "../test.h"
#include "config.h"
#include "route.h"

static int h(http_req *r)
{
    (void)r;
    return 0;
}

static const route table[] = {
    {.method = "GET",
     .pattern = "/v1/docs/{collection}",
     .handler = h,
     .body = ROUTE_BODY_NONE,
     .summary = "list"},
    {.method = "POST",
     .pattern = "/v1/docs/{collection}",
     .handler = h,
     .body = ROUTE_BODY_JSON,
     .summary = "create"},
    {.method = "GET",
     .pattern = "/v1/docs/{collection}/_export",
     .handler = h,
     .body = ROUTE_BODY_NONE,
     .summary = "export"},
    {.method = "GET",
     .pattern = "/v1/docs/{collection}/{id}",
     .handler = h,
     .body = ROUTE_BODY_NONE,
     .summary = "get"},
    {.method = "DELETE",
     .pattern = "/v1/docs/{collection}/{id}",
     .handler = h,
     .body = ROUTE_BODY_NONE,
     .summary = "delete"},
};
#define N (sizeof table / sizeof table[0])

/* The match points into the path it was given: the copy outlives it (one
 * match is looked at at a time). */
static char copy[256];

static int find(const char *method, const char *path, route_match *m)
{
    snprintf(copy, sizeof copy, "%s", path);
    return route_find(table, N, method, copy, m);
}

TEST(literal_beats_param)
{
    route_match m;
    CHECK_INT(find("GET", "/v1/docs/pages/_export", &m), 0);
    CHECK_STR(table[m.index].summary, "export");
    CHECK_INT(find("GET", "/v1/docs/pages/018bcfe5-6800-7000-8000-2d5dba6274da", &m), 0);
    CHECK_STR(table[m.index].summary, "get");
    CHECK_INT(m.nparams, 2);
    CHECK_STR(m.params[0].value, "pages");
    CHECK_INT(find("HEAD", "/v1/docs/pages", &m), 0); /* HEAD is served by GET */
    CHECK_STR(table[m.index].summary, "list");
}

TEST(not_found_and_not_allowed)
{
    route_match m;
    CHECK_INT(find("GET", "/v1/docs", &m), 404);
    CHECK_INT(find("GET", "/v1/docs/pages/", &m), 404);
    CHECK_INT(find("GET", "/v1/docs/a/b/c", &m), 404);
    CHECK_INT(find("GET", "nope", &m), 404);
    CHECK_INT(find("PATCH", "/v1/docs/pages", &m), 405);
    CHECK_STR(m.allow, "GET, POST");
    CHECK_INT(find("PUT", "/v1/docs/pages/_export", &m), 405);
}

TEST(params_are_validated)
{
    route_match m;
    char msg[160];
    CHECK_INT(find("GET", "/v1/docs/pa.ges/_export", &m), 0);
    CHECK(!route_check_params(&m, msg, sizeof msg));
    CHECK(strstr(msg, "collection") != NULL);
    CHECK_INT(find("GET", "/v1/docs/pages/not-a-uuid", &m), 0);
    CHECK(!route_check_params(&m, msg, sizeof msg));
    CHECK(strstr(msg, "UUIDv7") != NULL);
    CHECK(route_valid_name("a-Z_09"));
    CHECK(!route_valid_name(""));
    CHECK(!route_valid_name(".."));
    CHECK(!route_valid_name("a/b"));
    char n65[66];
    memset(n65, 'a', 65);
    n65[65] = '\0';
    CHECK(!route_valid_name(n65));
    n65[64] = '\0';
    CHECK(route_valid_name(n65));
}

TEST(config_precedence)
{
    setenv("STORHD_MAX_BODY", "2048", 1);
    setenv("STORHD_THREADS", "3", 1);
    char *argv[] = {"storhd", "--threads", "7", "--listen", "[::1]:9001", NULL};
    config cfg;
    CHECK_INT(config_load(&cfg, 5, argv), 0);
    CHECK_INT(cfg.max_body, 2048); /* from the environment */
    CHECK_INT(cfg.threads, 7);     /* the flag wins */
    CHECK_STR(cfg.listen_host, "::1");
    CHECK_INT(cfg.listen_port, 9001);
    CHECK(config_listen_is_loopback(&cfg));
    config_free(&cfg);
    unsetenv("STORHD_MAX_BODY");
    unsetenv("STORHD_THREADS");
    char *bad[] = {"storhd", "--listen", "example.org:80", NULL};
    CHECK_INT(config_load(&cfg, 3, bad), -1);
    config_free(&cfg);
    char *bad2[] = {"storhd", "--threads", "zero", NULL};
    CHECK_INT(config_load(&cfg, 3, bad2), -1);
    config_free(&cfg);
    char *wide[] = {"storhd", "--listen", "0.0.0.0:80", NULL};
    CHECK_INT(config_load(&cfg, 3, wide), 0);
    CHECK(!config_listen_is_loopback(&cfg));
    config_free(&cfg);
}

static const test_case tests[] = {
    TEST_ENTRY(literal_beats_param),
    TEST_ENTRY(not_found_and_not_allowed),
    TEST_ENTRY(params_are_validated),
    TEST_ENTRY(config_precedence),
};
TEST_MAIN(tests)
