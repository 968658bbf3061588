/* The DocStore routes over real HTTP against a running storhd. */
#include <curl/curl.h>
#include <jansson.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/snapshot.h"
#include "../test.h"
#include "buf.h"
#include "fsx.h"

static daemon_proc d;

static client_resp req(const char *method, const char *path, const char *ctype, const char *body)
{
    return daemon_req(&d, method, path, ctype, body);
}

static json_t *parse(const client_resp *r)
{
    return json_loadb(r->body, r->len, 0, NULL);
}

static const char *error_code(const client_resp *r, char *out, size_t cap)
{
    json_t *v = parse(r);
    const char *c = json_string_value(json_object_get(json_object_get(v, "error"), "code"));
    snprintf(out, cap, "%s", c ? c : "(none)");
    json_decref(v);
    return out;
}

TEST(create_get_put_delete)
{
    client_resp r = req("POST", "/v1/docs/pages", "application/json",
                        "{\"title\":\"H\\u00e9/llo\",\"n\":1.0,\"tags\":[\"a\"]}");
    CHECK_INT(r.status, 201);
    json_t *v = parse(&r);
    char id[64] = "";
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(v, "id")));
    CHECK_INT(strlen(id), 36);
    json_decref(v);
    char loc[128], want[128], etag[64];
    snprintf(want, sizeof want, "/v1/docs/pages/%s", id);
    CHECK_STR(client_header(&r, "Location", loc, sizeof loc), want);
    client_free(&r);

    char path[128];
    snprintf(path, sizeof path, "/v1/docs/pages/%s", id);
    r = req("GET", path, NULL, NULL);
    CHECK_INT(r.status, 200);
    char expect[256];
    snprintf(expect, sizeof expect,
             "{\"id\":\"%s\",\"data\":{\"title\":\"Hé/llo\",\"n\":1.0,\"tags\":[\"a\"]}}\n", id);
    CHECK_STR(r.body, expect);
    CHECK(client_header(&r, "ETag", etag, sizeof etag) != NULL);
    client_free(&r);

    char inm[96];
    snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
    client_do(d.base, "GET", path, NULL, NULL, 0, inm, 0, &r);
    CHECK_INT(r.status, 304);
    CHECK_INT(r.len, 0);
    client_free(&r);

    r = req("PUT", path, "application/json", "{\"title\":\"second\"}");
    CHECK_INT(r.status, 200);
    client_free(&r);
    client_do(d.base, "GET", path, NULL, NULL, 0, inm, 0, &r);
    CHECK_INT(r.status, 200); /* the content changed, so the old ETag no longer matches */
    CHECK(strstr(r.body, "\"second\"") != NULL);
    client_free(&r);

    r = req("PUT", "/v1/docs/pages/018bcfe5-6800-7000-8000-2d5dba6274da", "application/json",
            "{\"k\":1}");
    CHECK_INT(r.status, 201);
    client_free(&r);

    r = req("DELETE", path, NULL, NULL);
    CHECK_INT(r.status, 204);
    client_free(&r);
    r = req("DELETE", path, NULL, NULL);
    CHECK_INT(r.status, 404);
    client_free(&r);
    r = req("GET", path, NULL, NULL);
    CHECK_INT(r.status, 404);
    char code[64];
    CHECK_STR(error_code(&r, code, sizeof code), "not_found");
    client_free(&r);
}

TEST(record_file_is_canonical_storh_bytes)
{
    const char *id = "018bcfe5-6800-7000-8000-2d5dba6274da";
    client_resp r =
        req("PUT", "/v1/docs/compat/018bcfe5-6800-7000-8000-2d5dba6274da", "application/json",
            "{\"title\":\"H\\u00e9/llo\",\"n\":1.0,\"e\":{},\"o\":{\"a\":null},"
            "\"big\":1e20,\"u\":\"\\ud83d\\ude00\",\"ctl\":\"a\\tb\\u0001\"}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/compat/data/2d/%s.jsonc", d.root, id);
    buf b = BUF_INIT;
    CHECK_INT(fsx_read_all(file, &b, NULL), 0);
    CHECK_STR(b.data, "{\"id\":\"018bcfe5-6800-7000-8000-2d5dba6274da\",\"data\":{\"title\":"
                      "\"Hé/llo\",\"n\":1.0,\"e\":[],\"o\":{\"a\":null},\"big\":1.0e+20,"
                      "\"u\":\"😀\",\"ctl\":\"a\\tb\\u0001\"}}\n");
    buf_free(&b);
}

TEST(hand_written_jsonc_record_is_served)
{
    const char *id = "018bcfe5-6800-7000-8000-c35dba6274da";
    char dir[PATH_MAX], file[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/handmade/data/c3", d.root);
    fsx_mkdirs(dir, false, NULL);
    snprintf(file, sizeof file, "%s/%s.jsonc", dir, id);
    FILE *f = fopen(file, "w");
    fprintf(f,
            "// written by a person\n{\n  \"id\": \"%s\",\n  \"data\": {\n"
            "    \"kind\": \"page\", /* trailing comma next */\n    \"n\": 2,\n  },\n}\n",
            id);
    fclose(f);
    char path[128];
    snprintf(path, sizeof path, "/v1/docs/handmade/%s", id);
    client_resp r = req("GET", path, NULL, NULL);
    CHECK_INT(r.status, 200);
    char want[160];
    snprintf(want, sizeof want, "{\"id\":\"%s\",\"data\":{\"kind\":\"page\",\"n\":2}}\n", id);
    CHECK_STR(r.body, want);
    client_free(&r);
    r = req("GET", "/v1/docs/handmade/_export", NULL, NULL);
    CHECK_STR(r.body, want);
    client_free(&r);
}

/* A GET answers from the record cache's encoded bytes, shared by
 * reference: repeats are byte-identical, and a file another process
 * publishes (temp + rename, same size) or removes is seen at once. */
TEST(cached_answer_follows_out_of_band_writes)
{
    const char *id = "018bcfe5-6800-7000-8000-e15dba6274da";
    char path[128], file[PATH_MAX], tmp[PATH_MAX + 8], etag[64], etag2[64], inm[96];
    snprintf(path, sizeof path, "/v1/docs/cachedans/%s", id);
    client_resp r = req("PUT", path, "application/json", "{\"v\":\"aaaa\"}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    char want[160];
    snprintf(want, sizeof want, "{\"id\":\"%s\",\"data\":{\"v\":\"aaaa\"}}\n", id);
    for (int i = 0; i < 3; i++) { /* a miss, then answers from the cached bytes */
        r = req("GET", path, NULL, NULL);
        CHECK_INT(r.status, 200);
        CHECK_STR(r.body, want);
        CHECK(client_header(&r, "ETag", i ? etag2 : etag, sizeof etag) != NULL);
        if (i)
            CHECK_STR(etag2, etag);
        client_free(&r);
    }
    snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
    client_do(d.base, "GET", path, NULL, NULL, 0, inm, 0, &r);
    CHECK_INT(r.status, 304);
    client_free(&r);

    snprintf(file, sizeof file, "%s/cachedans/data/e1/%s.jsonc", d.root, id);
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "{\"id\":\"%s\",\"data\":{\"v\":\"bbbb\"}}\n", id); /* the same size */
        fclose(f);
    }
    CHECK_INT(rename(tmp, file), 0);
    snprintf(want, sizeof want, "{\"id\":\"%s\",\"data\":{\"v\":\"bbbb\"}}\n", id);
    client_do(d.base, "GET", path, NULL, NULL, 0, inm, 0, &r);
    CHECK_INT(r.status, 200); /* the old ETag no longer matches */
    CHECK_STR(r.body, want);
    CHECK(client_header(&r, "ETag", etag2, sizeof etag2) != NULL);
    CHECK(strcmp(etag2, etag) != 0);
    client_free(&r);
    r = req("GET", path, NULL, NULL);
    CHECK_STR(r.body, want);
    client_free(&r);

    CHECK_INT(unlink(file), 0);
    r = req("GET", path, NULL, NULL);
    CHECK_INT(r.status, 404);
    client_free(&r);
}

TEST(bad_inputs_change_nothing)
{
    client_resp r = req("POST", "/v1/docs/guarded", "application/json", "{\"keep\":true}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    char *before = snapshot_tree(d.root);
    char code[64];

    r = req("POST", "/v1/docs/guarded", "application/json", "{\"a\":");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "line 1") != NULL);
    client_free(&r);

    r = req("POST", "/v1/docs/guarded", "text/plain", "{\"a\":1}");
    CHECK_INT(r.status, 415);
    CHECK_STR(error_code(&r, code, sizeof code), "unsupported_media_type");
    client_free(&r);

    r = req("POST", "/v1/docs/guarded", NULL, "{\"a\":1}");
    CHECK_INT(r.status, 415);
    client_free(&r);

    r = req("POST", "/v1/docs/guarded", "application/json", "[1,2]");
    CHECK_INT(r.status, 400);
    client_free(&r);

    size_t big = 2 * 1024 * 1024;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    huge[0] = '{';
    memcpy(huge + big - 9, "\"a\":1}  ", 8);
    huge[big] = '\0';
    r = req("POST", "/v1/docs/guarded", "application/json", huge);
    CHECK_INT(r.status, 413);
    CHECK_STR(error_code(&r, code, sizeof code), "payload_too_large");
    client_free(&r);
    /* the same body without Content-Length: cut off while it streams in */
    client_do(d.base, "POST", "/v1/docs/guarded", "application/json", huge, big, NULL, 65536, &r);
    CHECK_INT(r.status, 413);
    client_free(&r);
    free(huge);

    r = req("PUT", "/v1/docs/guarded/not-a-uuid", "application/json", "{\"a\":1}");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "UUIDv7") != NULL);
    client_free(&r);
    r = req("PUT", "/v1/docs/guarded/018bcfe5-6800-6000-8000-2d5dba6274da", "application/json",
            "{\"a\":1}");
    CHECK_INT(r.status, 400); /* version 6 */
    client_free(&r);

    const char *traversal[] = {
        "/v1/docs/../x",
        "/v1/docs/..%2Fx",
        "/v1/docs/a%2Fb", /* decoded, "a/b" would route to {collection}/{id}: 405 */
        "/v1/docs/a%2fb",
        "/v1/docs/%2E%2E",
        "/v1/docs/a.b",
        "/v1/docs/a%00b",
        "/v1/docs/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    for (size_t i = 0; i < sizeof traversal / sizeof traversal[0]; i++) {
        r = req("POST", traversal[i], "application/json", "{\"a\":1}");
        if (r.status != 400)
            fprintf(stderr, "path %s -> %ld\n", traversal[i], r.status);
        CHECK_INT(r.status, 400);
        client_free(&r);
    }

    /* a bulk body with one bad line in the middle writes none of its rows */
    r = req("POST", "/v1/docs/guarded/_bulk", "application/x-ndjson",
            "{\"a\":1}\n{\"b\":2}\n{oops}\n{\"c\":3}\n");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "Line 3") != NULL);
    client_free(&r);
    r = req("POST", "/v1/docs/fresh/_bulk", "application/x-ndjson", "{\"a\":1}\n[1]\n");
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("POST", "/v1/docs/guarded/_bulk", "application/x-ndjson",
            "{\"id\":\"bad\",\"data\":{}}\n");
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("POST", "/v1/docs/guarded/_bulk", "application/json", "{\"a\":1}\n");
    CHECK_INT(r.status, 415);
    client_free(&r);

    r = req("GET", "/v1/docs/guarded?limit=0", NULL, NULL);
    CHECK_INT(r.status, 400);
    client_free(&r);
    r = req("GET", "/v1/docs/guarded?nope=1", NULL, NULL);
    CHECK_INT(r.status, 400);
    client_free(&r);

    char *after = snapshot_tree(d.root);
    CHECK_STR(after, before);
    free(before);
    free(after);
}

TEST(bulk_export_and_stream_filters)
{
    /* 3000 rows sent chunked in 700-byte pieces, so lines straddle chunks */
    buf body = BUF_INIT;
    for (int i = 0; i < 3000; i++)
        buf_printf(&body, "{\"i\":%d,\"kind\":\"%s\"}\n", i, i % 3 == 0 ? "page" : "post");
    buf_appends(&body,
                "{\"id\":\"018bcfe5-6800-7000-8000-0b5dba6274da\",\"data\":{\"kind\":\"x\"}}");
    client_resp r;
    client_do(d.base, "POST", "/v1/docs/bulk/_bulk", "application/x-ndjson", body.data, body.len,
              NULL, 700, &r);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"written\":3001}");
    client_free(&r);
    buf_free(&body);

    r = req("GET", "/v1/docs/bulk/_export", NULL, NULL);
    CHECK_INT(r.status, 200);
    int lines = 0;
    const char *prev = NULL;
    bool ordered = true;
    for (char *p = r.body; (p = strchr(p, '\n')); p++) {
        const char *line = prev ? prev + 1 : r.body;
        if (prev && strncmp(line, "{\"id\":\"", 7) == 0 && strncmp(line - (p - line), line, 0) < 0)
            ordered = false;
        prev = p;
        lines++;
    }
    CHECK_INT(lines, 3001);
    CHECK(ordered);
    /* id order: the explicit 2023 id sorts first */
    CHECK_PREFIX(r.body, "{\"id\":\"018bcfe5-6800-7000-8000-0b5dba6274da\"");
    client_free(&r);

    r = req("GET", "/v1/docs/bulk?eq.kind=page&limit=5", NULL, NULL);
    CHECK_INT(r.status, 200);
    lines = 0;
    for (char *p = r.body; (p = strchr(p, '\n')); p++)
        lines++;
    CHECK_INT(lines, 5);
    CHECK(strstr(r.body, "\"post\"") == NULL);
    client_free(&r);

    r = req("GET", "/v1/docs/bulk?eq.i=3", NULL, NULL);
    CHECK(strstr(r.body, "{\"i\":3,\"kind\":\"page\"}") != NULL);
    CHECK_INT(strchr(r.body, '\n') - r.body + 1, (long)r.len);
    client_free(&r);
    r = req("GET", "/v1/docs/bulk?eq.i=%223%22", NULL, NULL); /* the string "3" matches nothing */
    CHECK_INT(r.len, 0);
    client_free(&r);

    r = req("GET", "/v1/docs/bulk?until_ms=1700000000000", NULL, NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "0b5dba6274da") != NULL);
    CHECK_INT(strchr(r.body, '\n') - r.body + 1, (long)r.len);
    client_free(&r);

    r = req("GET", "/v1/docs/bulk?after=018bcfe5-6800-7000-8000-0b5dba6274da&limit=1", NULL, NULL);
    CHECK(strstr(r.body, "0b5dba6274da") == NULL);
    CHECK(strstr(r.body, "\"i\":0,") != NULL);
    client_free(&r);

    r = req("GET", "/v1/docs/bulk/_stats", NULL, NULL);
    CHECK_PREFIX(r.body, "{\"records\":3001,");
    client_free(&r);
    r = req("GET", "/v1/docs/bulk/_health", NULL, NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,\"errors\":[]");
    client_free(&r);

    /* importJsonl rows keep their bytes */
    r = req("POST", "/v1/docs/imported/_bulk?mode=import", "application/x-ndjson",
            "{\"data\": {\"k\": 1}, \"id\": \"018bcfe5-6800-7000-8000-1a5dba6274da\"}\n\n");
    CHECK_STR(r.body, "{\"written\":1}");
    client_free(&r);
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/imported/data/1a/018bcfe5-6800-7000-8000-1a5dba6274da.jsonc",
             d.root);
    buf b = BUF_INIT;
    fsx_read_all(file, &b, NULL);
    CHECK_STR(b.data, "{\"data\": {\"k\": 1}, \"id\": \"018bcfe5-6800-7000-8000-1a5dba6274da\"}\n");
    buf_free(&b);
}

TEST(methods_and_unknown_routes)
{
    client_resp r = req("PUT", "/v1/docs/pages/018bcfe5-6800-7000-8000-2d5dba6274da",
                        "application/json", "{\"title\":\"head\"}");
    CHECK(r.status == 200 || r.status == 201);
    client_free(&r);
    r = req("PATCH", "/v1/docs/pages", "application/json", "{}");
    CHECK_INT(r.status, 405);
    char allow[64];
    CHECK_STR(client_header(&r, "Allow", allow, sizeof allow), "POST, GET");
    client_free(&r);
    r = req("GET", "/v1/nothing", NULL, NULL);
    CHECK_INT(r.status, 404);
    CHECK(strncmp(r.body, "{\"error\":{\"status\":404,\"code\":\"not_found\",\"message\":", 52) ==
          0);
    client_free(&r);
    r = req("HEAD", "/v1/docs/pages/018bcfe5-6800-7000-8000-2d5dba6274da", NULL, NULL);
    CHECK_INT(r.status, 200);
    client_free(&r);
}

/* Streams and unindexed queries decide their filters on the record bytes
 * where those are canonical; files another writer left in other forms (\u
 * escapes, spaces, a float) are decoded and decided as before: the rows
 * are the same either way. */
static void handmade(const char *coll, const char *id, const char *data)
{
    char dir[PATH_MAX], file[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s/data/%.2s", d.root, coll, id + 24);
    fsx_mkdirs(dir, false, NULL);
    snprintf(file, sizeof file, "%s/%s.jsonc", dir, id);
    FILE *f = fopen(file, "w");
    fprintf(f, "{\"id\":\"%s\",\"data\":%s}\n", id, data);
    fclose(f);
}

TEST(filters_decided_on_record_bytes)
{
    static const char *const rows[][2] = {
        /* written by storhd: canonical */
        {"018bcfe5-6800-7000-8000-a15dba6274da", "{\"kind\":\"page\",\"n\":1}"},
        {"018bcfe5-6800-7000-8000-a25dba6274da", "{\"kind\":\"post\",\"n\":2}"},
        {"018bcfe5-6800-7000-8000-a35dba6274da", "{\"n\":3,\"kind\":\"page\"}"},
        {"018bcfe5-6800-7000-8000-a45dba6274da", "{\"kind\":[\"page\"],\"n\":4}"},
        {"018bcfe5-6800-7000-8000-a55dba6274da", "{\"kind\":\"page\\n\",\"n\":5}"},
        {"018bcfe5-6800-7000-8000-a65dba6274da", "{\"kinds\":\"page\",\"n\":6}"},
        {"018bcfe5-6800-7000-8000-a75dba6274da", "{\"kind\":\"pagex\",\"n\":7}"},
        {"018bcfe5-6800-7000-8000-a85dba6274da", "{\"kind\":1,\"n\":8}"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "/v1/docs/bytes/%s", rows[i][0]);
        client_resp r = req("PUT", path, "application/json", rows[i][1]);
        CHECK(r.status == 200 || r.status == 201);
        client_free(&r);
    }
    /* written by hand: not what the encoder writes */
    handmade("bytes", "018bcfe5-6800-7000-8000-b15dba6274da", "{\"kind\":\"p\\u0061ge\",\"n\":9}");
    handmade("bytes", "018bcfe5-6800-7000-8000-b25dba6274da", "{ \"kind\" : \"page\", \"n\":10 }");
    handmade("bytes", "018bcfe5-6800-7000-8000-b35dba6274da", "{\"kind\":1.0,\"n\":11}");
    handmade("bytes", "018bcfe5-6800-7000-8000-b45dba6274da", "{\"k\\u0069nd\":\"page\",\"n\":12}");

    client_resp r = req("GET", "/v1/docs/bytes?eq.kind=page", NULL, NULL);
    CHECK_INT(r.status, 200);
    CHECK_STR(
        r.body,
        "{\"id\":\"018bcfe5-6800-7000-8000-a15dba6274da\",\"data\":{\"kind\":\"page\",\"n\":1}}\n"
        "{\"id\":\"018bcfe5-6800-7000-8000-a35dba6274da\",\"data\":{\"n\":3,\"kind\":\"page\"}}\n"
        "{\"id\":\"018bcfe5-6800-7000-8000-b15dba6274da\",\"data\":{\"kind\":\"page\",\"n\":9}}\n"
        "{\"id\":\"018bcfe5-6800-7000-8000-b25dba6274da\",\"data\":{\"kind\":\"page\",\"n\":10}}\n"
        "{\"id\":\"018bcfe5-6800-7000-8000-b45dba6274da\",\"data\":{\"kind\":\"page\",\"n\":12}}"
        "\n");
    client_free(&r);
    /* 1 is an integer: the float 1.0 is not === to it */
    r = req("GET", "/v1/docs/bytes?eq.kind=1", NULL, NULL);
    CHECK_STR(r.body,
              "{\"id\":\"018bcfe5-6800-7000-8000-a85dba6274da\",\"data\":{\"kind\":1,\"n\":8}}\n");
    client_free(&r);
    r = req("GET", "/v1/docs/bytes?eq.kind=page&eq.n=3", NULL, NULL);
    CHECK_STR(
        r.body,
        "{\"id\":\"018bcfe5-6800-7000-8000-a35dba6274da\",\"data\":{\"n\":3,\"kind\":\"page\"}}\n");
    client_free(&r);
    r = req("GET", "/v1/docs/bytes?eq.kind=page&limit=2&after=018bcfe5-6800-7000-8000-a15dba6274da",
            NULL, NULL);
    CHECK_PREFIX(r.body, "{\"id\":\"018bcfe5-6800-7000-8000-a35dba6274da\"");
    CHECK(strstr(r.body, "b15dba6274da") != NULL && strstr(r.body, "b25dba6274da") == NULL);
    client_free(&r);

    /* _query without an index: the ids of the rows each where selects */
    static const char *const wheres[][2] = {
        {"[{\"field\":\"kind\",\"op\":\"eq\",\"value\":\"page\"}]", "a1 a3 b1 b2 b4"},
        {"[{\"field\":\"kind\",\"op\":\"neq\",\"value\":\"page\"}]", "a2 a4 a5 a6 a7 a8 b3"},
        {"[{\"field\":\"kind\",\"op\":\"eq\",\"value\":[\"page\"]}]", "a4"},
        {"[{\"field\":\"kind\",\"op\":\"in\",\"value\":[\"post\",1]}]", "a2 a8"},
        {"[{\"field\":\"kind\",\"op\":\"eq\",\"value\":1.0}]", "b3"},
        {"[{\"field\":\"kind\",\"op\":\"prefix\",\"value\":\"pag\"}]", "a1 a3 a5 a7 b1 b2 b4"},
        {"[{\"field\":\"kind\",\"op\":\"missing\"}]", "a6"},
        {"[{\"field\":\"n\",\"op\":\"between\",\"value\":[3,5]}]", "a3 a4 a5"},
        {"[{\"field\":\"n\",\"op\":\"gt\",\"value\":10}]", "b3 b4"},
        {"[{\"or\":[[{\"field\":\"n\",\"op\":\"lt\",\"value\":2}],[{\"field\":\"kind\",\"op\":"
         "\"eq\",\"value\":\"post\"}]]}]",
         "a1 a2"},
        {"[{\"field\":\"id\",\"op\":\"eq\",\"value\":\"018bcfe5-6800-7000-8000-b25dba6274da\"}]",
         "b2"},
    };
    for (size_t w = 0; w < sizeof wheres / sizeof wheres[0]; w++) {
        char body[512];
        snprintf(body, sizeof body, "{\"where\":%s}", wheres[w][0]);
        r = req("POST", "/v1/docs/bytes/_query", "application/json", body);
        CHECK_INT(r.status, 200);
        json_t *v = parse(&r);
        buf got = BUF_INIT;
        size_t i;
        json_t *rec;
        json_array_foreach (json_object_get(v, "records"), i, rec) {
            const char *id = json_string_value(json_object_get(rec, "id"));
            buf_printf(&got, "%s%.2s", i ? " " : "", id ? id + 24 : "??");
        }
        if (!got.data || strcmp(got.data, wheres[w][1]))
            fprintf(stderr, "where %s\n", wheres[w][0]);
        CHECK_STR(got.data ? got.data : "", wheres[w][1]);
        buf_free(&got);
        json_decref(v);
        client_free(&r);
    }
}

static const test_case tests[] = {
    TEST_ENTRY(create_get_put_delete),
    TEST_ENTRY(record_file_is_canonical_storh_bytes),
    TEST_ENTRY(hand_written_jsonc_record_is_served),
    TEST_ENTRY(cached_answer_follows_out_of_band_writes),
    TEST_ENTRY(bad_inputs_change_nothing),
    TEST_ENTRY(bulk_export_and_stream_filters),
    TEST_ENTRY(methods_and_unknown_routes),
    TEST_ENTRY(filters_decided_on_record_bytes),
};

DAEMON_TEST_MAIN(d, tests)
