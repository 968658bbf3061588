/* JWT auth on /v1 over real HTTP: RS256 only, exp/nbf/iss/aud, scopes, a
 * JWKS with kid, and the cache counters. Keys and tokens are made here. */
#include <curl/curl.h>
#include <jansson.h>
#include <jwt.h>
#include <stdbool.h>
#include <time.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/jwtkit.h"
#include "../test.h"
#include "../tmpdir.h"

static char dir[PATH_MAX], jwks_path[PATH_MAX];
static daemon_proc d, dj;

static char *claims_with(const char *scope, long long exp_delta, long long nbf_delta,
                         const char *iss, const char *aud)
{
    static char buf[512];
    long long now = (long long)time(NULL);
    snprintf(buf, sizeof buf,
             "{\"sub\":\"tester\",\"scope\":\"%s\",\"exp\":%lld,\"nbf\":%lld,\"iss\":\"%s\","
             "\"aud\":\"%s\"}",
             scope, now + exp_delta, now + nbf_delta, iss, aud);
    return buf;
}

static long call(daemon_proc *p, const char *method, const char *path, const char *token,
                 const char *body)
{
    char hdr[4096];
    snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", token ? token : "");
    client_resp r;
    client_do(p->base, method, path, body ? "application/json" : NULL, body,
              body ? strlen(body) : 0, token ? hdr : NULL, 0, &r);
    long s = r.status;
    if (getenv("AUTH_TEST_DEBUG"))
        fprintf(stderr, "%s %s -> %ld %s\n", method, path, s, r.body);
    client_free(&r);
    return s;
}

TEST(tokens_are_checked)
{
    char *ok = jwtkit_mint(claims_with("docs:read docs:write", 3600, -10, "storhd-test", "storhd"),
                           JWT_ALG_RS256, NULL, NULL);
    CHECK_INT(call(&d, "POST", "/v1/docs/pages", ok, "{\"a\":1}"), 201);
    CHECK_INT(call(&d, "GET", "/v1/docs/pages", ok, NULL), 200);
    CHECK_INT(call(&d, "GET", "/v1/docs/pages", NULL, NULL), 401);
    CHECK_INT(call(&d, "GET", "/healthz", NULL, NULL), 200); /* not under /v1 */
    CHECK_INT(call(&d, "GET", "/metrics", NULL, NULL), 200);
    struct {
        const char *name;
        char *token;
    } bad[] = {
        {"malformed", strdup("abc.def")},
        {"expired", jwtkit_mint(claims_with("docs:read", -3600, -7200, "storhd-test", "storhd"),
                                JWT_ALG_RS256, NULL, NULL)},
        {"not yet valid", jwtkit_mint(claims_with("docs:read", 7200, 3600, "storhd-test", "storhd"),
                                      JWT_ALG_RS256, NULL, NULL)},
        {"wrong aud", jwtkit_mint(claims_with("docs:read", 3600, -10, "storhd-test", "other"),
                                  JWT_ALG_RS256, NULL, NULL)},
        {"wrong iss", jwtkit_mint(claims_with("docs:read", 3600, -10, "evil", "storhd"),
                                  JWT_ALG_RS256, NULL, NULL)},
        {"alg none", jwtkit_mint(claims_with("docs:read", 3600, -10, "storhd-test", "storhd"),
                                 JWT_ALG_NONE, NULL, NULL)},
        {"HS256 with the public key",
         jwtkit_mint(claims_with("docs:read", 3600, -10, "storhd-test", "storhd"), JWT_ALG_HS256,
                     jwtkit_pub_pem(), NULL)},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long s = call(&d, "GET", "/v1/docs/pages", bad[i].token, NULL);
        if (s != 401)
            fprintf(stderr, "%s -> %ld\n", bad[i].name, s);
        CHECK_INT(s, 401);
        free(bad[i].token);
    }
    /* a signature that does not match: change one character of it */
    char *forged = strdup(ok);
    size_t n = strlen(forged);
    forged[n - 5] = forged[n - 5] == 'A' ? 'B' : 'A';
    CHECK_INT(call(&d, "GET", "/v1/docs/pages", forged, NULL), 401);
    free(forged);
    /* scopes: read-only cannot write; logs:* covers logs:write */
    char *ro = jwtkit_mint(claims_with("docs:read", 3600, -10, "storhd-test", "storhd"),
                           JWT_ALG_RS256, NULL, NULL);
    CHECK_INT(call(&d, "POST", "/v1/docs/pages", ro, "{\"a\":1}"), 403);
    CHECK_INT(call(&d, "POST", "/v1/logs/ev", ro, "{\"a\":1}"), 403);
    char *logs = jwtkit_mint(claims_with("logs:*", 3600, -10, "storhd-test", "storhd"),
                             JWT_ALG_RS256, NULL, NULL);
    CHECK_INT(call(&d, "POST", "/v1/logs/ev", logs, "{\"a\":1}"), 201);
    CHECK_INT(call(&d, "POST", "/v1/mirror/push", logs, NULL), 403);
    free(ro);
    free(logs);
    /* repeated use is served by the cache */
    for (int i = 0; i < 5; i++)
        call(&d, "GET", "/v1/docs/pages", ok, NULL);
    client_resp r;
    client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &r);
    const char *hits = strstr(r.body, "storhd_cache_total{cache=\"jwt\",event=\"hit\"} ");
    CHECK(hits && atoi(hits + strlen("storhd_cache_total{cache=\"jwt\",event=\"hit\"} ")) >= 5);
    CHECK(strstr(r.body, "storhd_jwt_rejected_total ") != NULL);
    client_free(&r);
    free(ok);
}

TEST(jwks_keys_by_kid)
{
    char *k1 = jwtkit_mint(claims_with("*", 3600, -10, "x", "y"), JWT_ALG_RS256, NULL, "k1");
    char *k2 = jwtkit_mint(claims_with("*", 3600, -10, "x", "y"), JWT_ALG_RS256, NULL, "k2");
    CHECK_INT(call(&dj, "POST", "/v1/docs/j", k1, "{\"a\":1}"), 201);
    CHECK_INT(call(&dj, "POST", "/v1/docs/j", k2, "{\"a\":1}"), 401); /* unknown kid */
    free(k1);
    free(k2);
}

static const test_case tests[] = {
    TEST_ENTRY(tokens_are_checked),
    TEST_ENTRY(jwks_keys_by_kid),
};

static int run_cases(int argc, char **argv);
int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, tests);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!tmpdir_make(dir))
        return 2;
    if (jwtkit_init(dir) != 0)
        return 2;
    snprintf(jwks_path, sizeof jwks_path, "%s/jwks.json", dir);
    jwtkit_write_jwks(jwks_path, "k1");
    const char *a1[] = {"--jwt-public-key",
                        jwtkit_pub_path(),
                        "--jwt-issuer",
                        "storhd-test",
                        "--jwt-audience",
                        "storhd",
                        "--jwt-leeway",
                        "0",
                        NULL};
    const char *a2[] = {"--jwks", jwks_path, NULL};
    if (daemon_start(&d, NULL, a1) != 0 || daemon_start(&dj, NULL, a2) != 0) {
        fprintf(stderr, "could not start storhd\n");
        return 1;
    }
    int rc = run_cases(argc, argv);
    if (daemon_stop(&d) != 0 || daemon_stop(&dj) != 0)
        rc = 1;
    daemon_cleanup(&d);
    daemon_cleanup(&dj);
    tmpdir_remove(dir);
    jwtkit_free();
    curl_global_cleanup();
    return rc;
}
TEST_MAIN_NAMED(run_cases, tests)
