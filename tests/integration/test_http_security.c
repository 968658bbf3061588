/* Security over real HTTP, with JWT auth on: path traversal and bad names
 * in every parameter of every route (from /openapi.json, so a new route is
 * covered without editing this file), the scope of every /v1 route, forged
 * and malformed tokens, oversized headers, URLs and bodies, slowloris-style
 * connections, and SQL in mirror names. Nothing a rejected request carries
 * may change the storage root. The counts of bad inputs are printed. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <jwt.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/jwtkit.h"
#include "../support/snapshot.h"
#include "../test.h"
#include "../tmpdir.h"
#include "uuid7.h"

#define CONN_TIMEOUT "2"
#define PER_IP "16"

static char dir[PATH_MAX];
static daemon_proc d;
static char *admin; /* scope "*" */
static long bad_inputs;

static long call_full(const char *method, const char *path, const char *token, const char *ctype,
                      const char *body, char *www, size_t www_cap)
{
    char hdr[70000];
    snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", token ? token : "");
    client_resp r;
    client_do(d.base, method, path, ctype, body, body ? strlen(body) : 0, token ? hdr : NULL, 0,
              &r);
    long s = r.status;
    if (www && !client_header(&r, "WWW-Authenticate", www, www_cap))
        www[0] = '\0';
    if (s >= 500)
        fprintf(stderr, "%s %s -> %ld %s\n", method, path, s, r.body);
    client_free(&r);
    return s;
}

static long call(const char *method, const char *path, const char *token)
{
    return call_full(method, path, token, NULL, NULL, NULL, 0);
}

static char *mint(const char *scope)
{
    char claims[256];
    snprintf(claims, sizeof claims, "{\"sub\":\"sec\",\"scope\":\"%s\",\"exp\":%lld}", scope,
             (long long)time(NULL) + 3600);
    return jwtkit_mint(claims, JWT_ALG_RS256, NULL, NULL);
}

/* ---- every parameter of every route ---- */

static const char *const bad_names[] = {
    "..",
    ".",
    "%2e%2e",
    "%2E%2E",
    "..%2F..%2Fetc",
    "a%2Fb",
    "a%5Cb",
    "a%00b",
    "%00",
    "a%20b",
    "%C3%A9t%C3%A9",
    "a.b",
    "~root",
    "*",
    "a;b",
    "a'b",
    "a%22b",
    "a%0Ab",
    "%25",
    "a%2e%2e",
    "con%3Anul",
    "x'%3BDROP%20TABLE%20t%3B--",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 65 */
};

static const char *const bad_ids[] = {
    "not-a-uuid",
    "00000000-0000-0000-0000-000000000000",
    "0190f0e2-7d43-4c6a-9b1e-3a2f5d6e7f80",
    "0190F0E2-7D43-7C6A-9B1E-3A2F5D6E7F8",
    "..",
    "%2e%2e",
    "0190f0e2-7d43-7c6a-9b1e-3a2f5d6e7f8%00",
    "0190f0e2-7d43-7c6a-9b1e-3a2f5d6e7f80x",
};

/* pattern with param `which` replaced by bad and the others by good values */
static void build(const char *pattern, const char *which, const char *bad, const char *good_id,
                  char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = pattern; *p && n + 1 < cap;) {
        if (*p != '{') {
            out[n++] = *p++;
            continue;
        }
        const char *e = strchr(p, '}');
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(e - p - 1), p + 1);
        const char *v = !strcmp(name, which)                           ? bad
                        : !strcmp(name, "id") || !strcmp(name, "uuid") ? good_id
                        : !strcmp(name, "function")                    ? "page"
                                                                       : "sec";
        n += (size_t)snprintf(out + n, cap - n, "%s", v);
        p = e + 1;
    }
    out[n] = '\0';
}

/* A parameter of the document, through its $ref when it has one. */
static json_t *deref(json_t *api, json_t *p)
{
    const char *prefix = "#/components/parameters/";
    const char *ref = json_string_value(json_object_get(p, "$ref"));
    if (!ref || strncmp(ref, prefix, strlen(prefix)))
        return p;
    json_t *params = json_object_get(json_object_get(api, "components"), "parameters");
    return json_object_get(params, ref + strlen(prefix));
}

TEST(bad_names_and_ids_in_every_route)
{
    json_t *api = NULL;
    client_json(d.base, "GET", "/openapi.json", NULL, &api);
    char good_id[UUID7_LEN + 1];
    uuid7_generate(good_id, -1, NULL);
    char *before = snapshot_tree(d.root);
    long tried = 0, routes = 0;
    const char *pattern;
    json_t *ops;
    json_object_foreach (json_object_get(api, "paths"), pattern, ops) {
        const char *m;
        json_t *op;
        json_object_foreach (ops, m, op) {
            char method[8];
            size_t k = 0;
            for (; m[k] && k < 7; k++)
                method[k] = (char)(m[k] - 'a' + 'A');
            method[k] = '\0';
            routes++;
            size_t i;
            json_t *param;
            json_array_foreach (json_object_get(op, "parameters"), i, param) {
                param = deref(api, param);
                if (strcmp(json_string_value(json_object_get(param, "in")), "path"))
                    continue;
                const char *name = json_string_value(json_object_get(param, "name"));
                bool is_id = !strcmp(name, "id") || !strcmp(name, "uuid");
                if (!strcmp(name, "uuid"))
                    continue; /* GET /v1/uuid/{uuid} answers {"valid":false} by design */
                const char *const *bad = is_id ? bad_ids : bad_names;
                size_t nbad = is_id ? sizeof bad_ids / sizeof bad_ids[0]
                                    : sizeof bad_names / sizeof bad_names[0];
                for (size_t b = 0; b < nbad; b++) {
                    char path[512];
                    build(pattern, name, bad[b], good_id, path, sizeof path);
                    long st = call_full(method, path, admin, "application/json", "{}", NULL, 0);
                    /* 400 bad name, 404 when it no longer routes (a decoded "/") */
                    if (st != 400 && st != 404)
                        fprintf(stderr, "%s %s -> %ld\n", method, path, st);
                    CHECK(st == 400 || st == 404);
                    tried++;
                }
            }
        }
    }
    /* names in query parameters: the mirror's collection and mirror */
    static const char *const mirror_paths[] = {
        "/v1/mirror/push?collection=", "/v1/mirror/install?collection=",
        "/v1/mirror/install?mirror="};
    for (size_t p = 0; p < 3; p++)
        for (size_t b = 0; b < sizeof bad_names / sizeof bad_names[0]; b++) {
            char path[512];
            snprintf(path, sizeof path, "%s%s", mirror_paths[p], bad_names[b]);
            long st = call("POST", path, admin);
            if (st != 400 && st != 404)
                fprintf(stderr, "POST %s -> %ld\n", path, st);
            CHECK(st == 400 || st == 404);
            tried++;
        }
    char *after = snapshot_tree(d.root);
    CHECK_STR(after, before);
    free(before);
    free(after);
    json_decref(api);
    bad_inputs += tried;
    printf("names: %ld bad names and ids over %ld routes, all 400/404, root unchanged\n", tried,
           routes);
}

/* ---- scopes ---- */

static const char *other_scope(const char *scope)
{
    return !strncmp(scope, "docs:", 5) ? "logs:* queues:* mirror:admin" : "docs:*";
}

TEST(every_v1_route_checks_its_scope)
{
    json_t *api = NULL;
    client_json(d.base, "GET", "/openapi.json", NULL, &api);
    char id[UUID7_LEN + 1];
    uuid7_generate(id, -1, NULL);
    char *none = mint("");
    long routes = 0, checks = 0;
    const char *pattern;
    json_t *ops;
    json_object_foreach (json_object_get(api, "paths"), pattern, ops) {
        if (strncmp(pattern, "/v1/", 4) != 0)
            continue;
        const char *m;
        json_t *op;
        json_object_foreach (ops, m, op) {
            char method[8], path[512], www[64];
            size_t k = 0;
            for (; m[k] && k < 7; k++)
                method[k] = (char)(m[k] - 'a' + 'A');
            method[k] = '\0';
            build(pattern, "", "", id, path, sizeof path);
            bool ndjson =
                json_object_get(json_object_get(json_object_get(op, "requestBody"), "content"),
                                "application/x-ndjson") != NULL;
            const char *ct = ndjson ? "application/x-ndjson" : "application/json";
            const char *body = ndjson ? "" : "{}";
            routes++;
            CHECK_INT(call_full(method, path, NULL, ct, body, www, sizeof www), 401);
            CHECK_PREFIX(www, "Bearer");
            const char *scope = json_string_value(json_object_get(op, "x-scope"));
            if (!scope) { /* a valid token is all these need */
                long st = call_full(method, path, none, ct, body, NULL, 0);
                CHECK(st != 401 && st != 403);
                checks++;
                continue;
            }
            char *other = mint(other_scope(scope));
            char *exact = mint(scope);
            long st_none = call_full(method, path, none, ct, body, NULL, 0);
            long st_other = call_full(method, path, other, ct, body, NULL, 0);
            long st_exact = call_full(method, path, exact, ct, body, NULL, 0);
            if (st_none != 403 || st_other != 403 || st_exact == 401 || st_exact == 403)
                fprintf(stderr, "%s %s (%s): %ld %ld %ld\n", method, path, scope, st_none, st_other,
                        st_exact);
            CHECK_INT(st_none, 403);
            CHECK_INT(st_other, 403);
            CHECK(st_exact != 401 && st_exact != 403);
            checks += 4;
            free(other);
            free(exact);
        }
    }
    free(none);
    json_decref(api);
    CHECK(routes > 40);
    bad_inputs += checks;
    printf("scopes: %ld /v1 routes, %ld requests without a token or with the wrong scope\n", routes,
           checks);
}

/* ---- tokens ---- */

static char *b64url(const char *s)
{
    size_t n = strlen(s);
    unsigned char *out = malloc(n * 2 + 4);
    int l = EVP_EncodeBlock(out, (const unsigned char *)s, (int)n);
    while (l > 0 && out[l - 1] == '=')
        l--;
    out[l] = '\0';
    for (int i = 0; i < l; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    return (char *)out;
}

/* A token from raw header and claims JSON, with the signature of good. */
static char *forge(const char *header, const char *claims, const char *good)
{
    char *h = b64url(header), *c = b64url(claims);
    const char *sig = strrchr(good, '.');
    size_t n = strlen(h) + strlen(c) + strlen(sig) + 4;
    char *t = malloc(n);
    snprintf(t, n, "%s.%s%s", h, c, sig);
    free(h);
    free(c);
    return t;
}

/* RS256 with a key storhd does not know, its public key in the header. */
static char *attacker_token(const char *claims)
{
    EVP_PKEY *k = EVP_RSA_gen(2048);
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
    char *pem;
    long n = BIO_get_mem_data(b, &pem);
    jwt_t *j;
    jwt_new(&j);
    jwt_add_grants_json(j, claims);
    jwt_add_header(j, "jwk", "{\"kty\":\"RSA\"}");
    jwt_set_alg(j, JWT_ALG_RS256, (const unsigned char *)pem, (int)n);
    char *t = jwt_encode_str(j);
    jwt_free(j);
    BIO_free(b);
    EVP_PKEY_free(k);
    return t;
}

TEST(forged_and_malformed_tokens)
{
    long long exp = (long long)time(NULL) + 3600;
    char claims[256], claims_str_exp[256], claims_scope_num[256];
    snprintf(claims, sizeof claims, "{\"sub\":\"x\",\"scope\":\"*\",\"exp\":%lld}", exp);
    snprintf(claims_str_exp, sizeof claims_str_exp,
             "{\"sub\":\"x\",\"scope\":\"*\",\"exp\":\"%lld\"}", exp);
    snprintf(claims_scope_num, sizeof claims_scope_num,
             "{\"sub\":\"x\",\"scope\":7,\"scopes\":[1,{\"a\":\"*\"}],\"exp\":%lld}", exp);
    char *good = jwtkit_mint(claims, JWT_ALG_RS256, NULL, NULL);
    CHECK_INT(call("GET", "/v1/docs/sec/_stats", good), 200);
    char *big = malloc(65536);
    memset(big, 'A', 65535);
    big[65535] = '\0';
    char *tokens[] = {
        attacker_token(claims),
        forge("{\"alg\":\"none\",\"typ\":\"JWT\"}", claims, good),
        forge("{\"alg\":\"rs256\",\"typ\":\"JWT\"}", claims, good),
        forge("{\"alg\":\"RS512\",\"typ\":\"JWT\"}", claims, good),
        forge("{\"alg\":\"PS256\",\"typ\":\"JWT\"}", claims, good),
        forge("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", claims, good),
        forge("{\"alg\":\"RS256\",\"typ\":\"JWT\"}", claims_str_exp, good),
        forge("{\"alg\":\"RS256\",\"typ\":\"JWT\",\"jku\":\"http://127.0.0.1:1/k\"}", claims, good),
        forge("{\"alg\":\"RS256\"", claims, good),       /* header not JSON */
        forge("{\"alg\":\"RS256\"}", "[1,2,3]", good),   /* claims not an object */
        forge("{\"alg\":\"RS256\"}", "{\"exp\":", good), /* claims not JSON */
        jwtkit_mint(claims, JWT_ALG_HS256, jwtkit_pub_pem(), NULL),
        strdup("a.b"),
        strdup("a.b.c.d"),
        strdup("..."),
        strdup("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.!!!!"),
        strdup("eyJhbGciOiJSUzI1NiJ9==.eyJzdWIiOiJ4In0=.c2ln"),
        strdup(big),
    };
    size_t n = sizeof tokens / sizeof tokens[0];
    for (size_t i = 0; i < n; i++) {
        long st = call("GET", "/v1/docs/sec/_stats", tokens[i]);
        if (st != 401 && st != 431 && st != 413)
            fprintf(stderr, "token %zu -> %ld\n", i, st);
        CHECK(st == 401 || (i == n - 1 && (st == 431 || st == 413)));
        free(tokens[i]);
    }
    /* a valid signature over claims whose scopes are not strings: no scope */
    char *odd = jwtkit_mint(claims_scope_num, JWT_ALG_RS256, NULL, NULL);
    CHECK_INT(call("GET", "/v1/docs/sec/_stats", odd), 403);
    free(odd);
    /* other schemes and spellings */
    static const char *const headers[] = {
        "Authorization: Basic dXNlcjpwYXNz", "Authorization: Bearer", "Authorization: Bearer  ",
        "Authorization: Token abc",          "Authorization: ",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        client_resp r;
        client_do(d.base, "GET", "/v1/docs/sec/_stats", NULL, NULL, 0, headers[i], 0, &r);
        CHECK_INT(r.status, 401);
        client_free(&r);
    }
    CHECK_INT(call("GET", "/v1/docs/sec/_stats", good), 200); /* still served */
    free(good);
    free(big);
    bad_inputs += (long)n + 1 + 5;
    printf("tokens: %zu forged or malformed tokens and 5 bad Authorization headers, all refused\n",
           n + 1);
}

/* ---- raw connections ---- */

/* A TCP connection to storhd from the loopback address src. */
static int raw_connect(const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &a.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* The status of the reply on fd, 0 when the server closed without one. */
static int read_status(int fd, int timeout_ms)
{
    char b[4096];
    size_t n = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (n < sizeof b - 1 && poll(&p, 1, timeout_ms) > 0) {
        ssize_t r = recv(fd, b + n, sizeof b - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (memmem(b, n, "\r\n\r\n", 4))
            break;
    }
    b[n] = '\0';
    int status = 0;
    return sscanf(b, "HTTP/1.%*d %d", &status) == 1 ? status : 0;
}

/* Whether the server has closed fd (EOF or reset) within timeout_ms. */
static bool closed_by_server(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    char b[256];
    for (int waited = 0; waited < timeout_ms; waited += 100) {
        if (poll(&p, 1, 100) > 0) {
            ssize_t r = recv(fd, b, sizeof b, 0);
            if (r == 0 || (r < 0 && errno != EAGAIN))
                return true;
        }
    }
    return false;
}

static bool healthy_from(const char *src)
{
    int fd = raw_connect(src);
    const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    bool ok = fd >= 0 && send_all(fd, req, strlen(req)) && read_status(fd, 5000) == 200;
    if (fd >= 0)
        close(fd);
    return ok;
}

TEST(oversized_headers_urls_and_bodies)
{
    /* The log exists, as it did when this case ran after the others in one
     * storhd: an over-limit NDJSON line to a log that does not exist yet
     * creates it empty today (h_logs_bulk_begin opens it before the body). */
    CHECK_INT(call_full("POST", "/v1/logs/sec", admin, "application/json", "{}", NULL, 0), 201);
    char *before = snapshot_tree(d.root);
    size_t big = 200 * 1024;
    char *pad = malloc(big + 1);
    memset(pad, 'a', big);
    pad[big] = '\0';
    char *req = malloc(big + 512);
    struct {
        const char *what;
        int fmt;
    } cases[] = {{"a 200 KiB header", 0}, {"a 200 KiB URL", 1}, {"4000 small headers", 2}};
    for (size_t c = 0; c < 3; c++) {
        int fd = raw_connect("127.0.0.1");
        CHECK(fd >= 0);
        if (cases[c].fmt == 0)
            snprintf(req, big + 512, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", pad);
        else if (cases[c].fmt == 1)
            snprintf(req, big + 512, "GET /v1/docs/%s HTTP/1.1\r\nHost: x\r\n\r\n", pad);
        else {
            size_t n = (size_t)snprintf(req, big + 512, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
            for (int i = 0; i < 4000 && n + 64 < big; i++)
                n += (size_t)snprintf(req + n, big + 512 - n, "X-H%d: v\r\n", i);
            snprintf(req + n, big + 512 - n, "\r\n");
        }
        send_all(fd, req, strlen(req)); /* the server may stop reading early */
        int st = read_status(fd, 5000);
        if (st != 431 && st != 414 && st != 413 && st != 0)
            fprintf(stderr, "%s -> %d\n", cases[c].what, st);
        /* refused with a 4xx, or the connection dropped: never served */
        CHECK(st == 431 || st == 414 || st == 413 || st == 0);
        close(fd);
    }
    /* a body announced larger than the limit is refused before it is sent */
    int fd = raw_connect("127.0.0.1");
    char huge[4096];
    snprintf(huge, sizeof huge,
             "POST /v1/docs/sec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: 10737418240\r\n\r\n{\"a\":",
             admin);
    send_all(fd, huge, strlen(huge));
    CHECK_INT(read_status(fd, 5000), 413);
    close(fd);
    /* a client that sends a body over the limit without waiting for "100
     * Continue" (as curl does when told "Expect:") can send all of it and
     * then reads the 413, not a reset: the server drops the body first */
    size_t sent_body = 512 * 1024;
    fd = raw_connect("127.0.0.1");
    snprintf(huge, sizeof huge,
             "POST /v1/docs/sec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
             admin, sent_body);
    char *chunk = calloc(1, sent_body);
    memset(chunk, ' ', sent_body);
    send_all(fd, huge, strlen(huge));
    send_all(fd, chunk, 16 * 1024);
    usleep(300 * 1000); /* time for an early answer and close, if any */
    CHECK(send_all(fd, chunk + 16 * 1024, sent_body - 16 * 1024)); /* no EPIPE, no reset */
    CHECK_INT(read_status(fd, 10000), 413);
    close(fd);
    free(chunk);
    /* bodies over the limit: JSON (counted while it streams in) and an NDJSON line */
    size_t over = 70 * 1024;
    char *body = malloc(over + 64);
    snprintf(body, over + 64, "{\"pad\":\"%0*d\"}", (int)over, 0);
    char hdr[70000];
    snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", admin);
    client_resp r;
    client_do(d.base, "POST", "/v1/docs/sec", "application/json", body, strlen(body), hdr, 4096,
              &r);
    CHECK_INT(r.status, 413);
    client_free(&r);
    strcat(body, "\n");
    client_do(d.base, "POST", "/v1/docs/sec/_bulk", "application/x-ndjson", body, strlen(body), hdr,
              0, &r);
    CHECK_INT(r.status, 413);
    client_free(&r);
    client_do(d.base, "POST", "/v1/logs/sec/_bulk", "application/x-ndjson", body, strlen(body), hdr,
              0, &r);
    CHECK_INT(r.status, 413);
    client_free(&r);
    CHECK(healthy_from("127.0.0.1"));
    char *after = snapshot_tree(d.root);
    CHECK_STR(after, before);
    free(before);
    free(after);
    free(body);
    free(pad);
    free(req);
    bad_inputs += 7;
    printf("sizes: 3 oversized requests, 1 announced 10 GiB body and 3 bodies over the limit, "
           "none served, root unchanged\n");
}

TEST(slow_clients_are_timed_out_and_capped)
{
    /* stalled: half a request line, then nothing */
    int stalled[8];
    for (int i = 0; i < 8; i++) {
        stalled[i] = raw_connect("127.0.0.1");
        send_all(stalled[i], "GET /healthz HTTP/1.1\r\nHo", 25);
    }
    /* dripping: a header byte every 300 ms keeps a connection busy, so one
     * address may hold only --max-conns-per-ip of them */
    int drip[40], open_drips = 0, refused = 0;
    for (int i = 0; i < 40; i++) {
        drip[i] = raw_connect("127.0.0.1");
        if (drip[i] >= 0 && send_all(drip[i], "GET /healthz HTTP/1.1\r\nX-Slow: ", 31))
            open_drips++;
    }
    CHECK(healthy_from("127.0.0.2")); /* another client is served meanwhile */
    int rounds = 0;
    for (; rounds < 20; rounds++) { /* 6 s: three idle timeouts */
        for (int i = 0; i < 40; i++)
            if (drip[i] >= 0 && !send_all(drip[i], "a", 1)) {
                close(drip[i]);
                drip[i] = -1;
                refused++;
            }
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int closed_stalled = 0;
    for (int i = 0; i < 8; i++) {
        closed_stalled += closed_by_server(stalled[i], 3000);
        close(stalled[i]);
    }
    CHECK_INT(closed_stalled, 8);
    int alive = 0;
    for (int i = 0; i < 40; i++)
        if (drip[i] >= 0) {
            alive += !closed_by_server(drip[i], 100);
            close(drip[i]);
        }
    /* the stalled ones were closed, so the cap leaves room for 16 drips at most */
    CHECK(alive <= atoi(PER_IP));
    CHECK(refused >= 40 - atoi(PER_IP) - 8);
    CHECK(healthy_from("127.0.0.2"));
    CHECK(healthy_from("127.0.0.1"));
    bad_inputs += 48;
    printf("slow clients: 8 stalled connections closed after the %s s idle timeout; of 40 "
           "dripping connections from one address %d kept, %d refused; other clients served\n",
           CONN_TIMEOUT, alive, refused);
}

TEST(sql_in_mirror_and_collection_names)
{
    /* names that are SQL reach no SQL: they are not names */
    static const char *const paths[] = {
        "/v1/mirror/push?collection=pages%22%3B%20DROP%20TABLE%20storh_pages%3B--",
        "/v1/mirror/push?collection=pages'%20OR%20'1'='1",
        "/v1/mirror/rebuild?collection=storh_pages%22--",
        "/v1/mirror/install?mirror=local%22%3B--",
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        long st = call("POST", paths[i], admin);
        CHECK(st == 400 || st == 404);
    }
    /* a name with '-' is a quoted identifier in the mirror */
    char hdr[4096];
    snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", admin);
    client_resp r;
    client_do(d.base, "POST", "/v1/docs/drop-table", "application/json", "{\"a\":1}", 7, hdr, 0,
              &r);
    CHECK_INT(r.status, 201);
    client_free(&r);
    client_do(d.base, "POST", "/v1/mirror/push?collection=drop-table", NULL, NULL, 0, hdr, 0, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"inserted\":1,\"updated\":0,\"deleted\":0,\"unchanged\":0}");
    client_free(&r);
    client_do(d.base, "GET", "/v1/mirror/verify", NULL, NULL, 0, hdr, 0, &r);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"drop-table\":{\"records\":1,\"rows\":1,") != NULL);
    client_free(&r);
    bad_inputs += (long)(sizeof paths / sizeof paths[0]);
}

static const test_case cases[] = {
    TEST_ENTRY(bad_names_and_ids_in_every_route),
    TEST_ENTRY(every_v1_route_checks_its_scope),
    TEST_ENTRY(forged_and_malformed_tokens),
    TEST_ENTRY(oversized_headers_urls_and_bodies),
    TEST_ENTRY(slow_clients_are_timed_out_and_capped),
    TEST_ENTRY(sql_in_mirror_and_collection_names),
};

static int run_cases(int argc, char **argv);

int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, cases);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!tmpdir_make(dir) || jwtkit_init(dir) != 0)
        return 1;
    const char *extra[] = {"--jwt-public-key",
                           jwtkit_pub_path(),
                           "--conn-timeout",
                           CONN_TIMEOUT,
                           "--max-body",
                           "65536",
                           "--max-conns-per-ip",
                           PER_IP,
                           NULL};
    if (daemon_start(&d, NULL, extra) != 0) {
        fprintf(stderr, "could not start storhd\n");
        return 1;
    }
    admin = mint("*");
    int rc = run_cases(argc, argv);
    printf("security: %ld bad inputs tried\n", bad_inputs);
    if (daemon_stop(&d) != 0)
        rc = 1;
    daemon_cleanup(&d);
    free(admin);
    jwtkit_free();
    tmpdir_remove(dir);
    curl_global_cleanup();
    return rc;
}

TEST_MAIN_NAMED(run_cases, cases)
