/* Range indexes against the full scan over real HTTP: bounds and values of
 * every type (negative, float, +-2^62, strings with U+0000, null, bools),
 * the order of ties, half-written delta lines and a second process writing
 * through the engine library while storhd answers queries. An index-served
 * answer must be byte-identical to the scan's. */
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"
#include "buf.h"
#include "docstore.h"

static daemon_proc d;

static client_resp req(const char *method, const char *path, const char *body)
{
    return daemon_json(&d, method, path, body);
}

/* POST/PUT with a jansson body (stolen). */
static client_resp req_json(const char *method, const char *path, json_t *body)
{
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    client_resp r = req(method, path, s);
    free(s);
    return r;
}

static void define(const char *coll, const char *fields)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/docs/%s/_indexes", coll);
    client_resp r = req("PUT", path, fields);
    CHECK_INT(r.status, 200);
    client_free(&r);
}

/* Writes data under id into coll; returns the status. */
static long put(const char *coll, const char *id, json_t *data)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/docs/%s/%s", coll, id);
    client_resp r = req_json("PUT", path, data);
    long st = r.status;
    if (st != 200 && st != 201)
        fprintf(stderr, "PUT %s: %ld %s\n", path, st, r.body);
    client_free(&r);
    return st;
}

static void reindex(const char *coll)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/docs/%s/_reindex", coll);
    client_resp r = req("POST", path, NULL);
    CHECK_INT(r.status, 200);
    client_free(&r);
}

/* count ids into out (cap 64), from a query's records; -1 on an error. */
static int query_ids(const char *coll, json_t *body, char ids[][40], int cap)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/docs/%s/_query", coll);
    client_resp r = req_json("POST", path, body);
    json_t *v = json_loadb(r.body, r.len, 0, NULL);
    json_t *recs = json_object_get(v, "records");
    int n = r.status == 200 && json_is_array(recs) ? (int)json_array_size(recs) : -1;
    if (n < 0)
        fprintf(stderr, "query %s: %ld %s\n", coll, r.status, r.body);
    for (int i = 0; i < n && i < cap; i++)
        snprintf(ids[i], 40, "%s",
                 json_string_value(json_object_get(json_array_get(recs, i), "id")));
    json_decref(v);
    client_free(&r);
    return n;
}

static json_t *cond(const char *field, const char *op, json_t *value)
{
    return json_pack("{ssssso}", "field", field, "op", op, "value", value);
}

static long long count_where(const char *coll, json_t *c)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/docs/%s/_query", coll);
    client_resp r = req_json("POST", path, json_pack("{s[o]sb}", "where", c, "count", 1));
    json_t *v = json_loadb(r.body, r.len, 0, NULL);
    long long n = json_is_integer(json_object_get(v, "count"))
                      ? json_integer_value(json_object_get(v, "count"))
                      : -1;
    if (n < 0)
        fprintf(stderr, "count %s: %ld %s\n", coll, r.status, r.body);
    json_decref(v);
    client_free(&r);
    return n;
}

static void new_ids(char ids[][40], int n)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/uuid?count=%d", n);
    client_resp r = req("GET", path, NULL);
    json_t *v = json_loadb(r.body, r.len, 0, NULL);
    json_t *list = json_is_array(v) ? v : json_object_get(v, "ids");
    CHECK_INT(json_array_size(list), n);
    for (int i = 0; i < n; i++)
        snprintf(ids[i], 40, "%s", json_string_value(json_array_get(list, (size_t)i)));
    json_decref(v);
    client_free(&r);
}

/* Issue 22 case 3: negative bounds on a range and a unique+range index. */
TEST(negative_bounds)
{
    static const char *colls[] = {"neg", "negu", "negplain"};
    define("neg", "{\"fields\":[{\"field\":\"v\",\"range\":true}]}");
    define("negu", "{\"fields\":[{\"field\":\"v\",\"range\":true,\"unique\":true}]}");
    static const int vals[] = {-30, -10, -2, 0, 5, 10, 20};
    char ids[7][40];
    new_ids(ids, 7);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 7; i++)
            CHECK(put(colls[c], ids[i], json_pack("{si}", "v", vals[i])) / 100 == 2);
    for (int pass = 0; pass < 2; pass++) { /* delta only, then the rebuilt main file */
        for (int c = 0; c < 3; c++) {
            const char *k = colls[c];
            CHECK_INT(count_where(k, cond("v", "gte", json_integer(-5))), 5);
            CHECK_INT(count_where(k, cond("v", "gte", json_integer(-10))), 6);
            CHECK_INT(count_where(k, cond("v", "between", json_pack("[ii]", -10, 10))), 5);
            CHECK_INT(count_where(k, cond("v", "gt", json_integer(-100))), 7);
            CHECK_INT(count_where(k, cond("v", "lt", json_integer(-2))), 2);
            CHECK_INT(count_where(k, cond("v", "lte", json_real(-2.5))), 2);
            CHECK_INT(count_where(k, cond("v", "gt", json_real(-2.5))), 5);
            CHECK_INT(count_where(k, cond("v", "eq", json_integer(-10))), 1);
            char got[8][40];
            int n =
                query_ids(k,
                          json_pack("{s[o]s[{ssss}]}", "where", cond("v", "gte", json_integer(-5)),
                                    "orderBy", "field", "v", "dir", "asc"),
                          got, 8);
            CHECK_INT(n, 5);
            if (n == 5) {
                CHECK_STR(got[0], ids[2]); /* -2 first */
                CHECK_STR(got[4], ids[6]);
            }
        }
        reindex("neg");
        reindex("negu");
    }
    client_resp r = req("POST", "/v1/docs/neg/_query",
                        "{\"where\":[{\"field\":\"v\",\"op\":\"gte\",\"value\":-5}],"
                        "\"explain\":true}");
    CHECK(strstr(r.body, "\"index_used\":true") != NULL);
    client_free(&r);
}

/* Issue 22 case 4: a string with U+0000 in a range-indexed field. */
TEST(nul_in_range_field)
{
    define("nul", "{\"fields\":[{\"field\":\"r\",\"range\":true},{\"field\":\"p\"}]}");
    client_resp r = req("POST", "/v1/docs/nul", "{\"r\":\"nul\\u0000byte\",\"p\":\"a\\u0000\"}");
    CHECK_INT(r.status, 201);
    client_free(&r);
    r = req("POST", "/v1/docs/nul", "{\"r\":\"nul\"}");
    client_free(&r);
    for (int pass = 0; pass < 2; pass++) {
        CHECK_INT(count_where("nul", cond("r", "prefix", json_string("nul"))), 2);
        CHECK_INT(count_where("nul", cond("r", "prefix", json_stringn("nul\0", 4))), 1);
        CHECK_INT(count_where("nul", cond("r", "gte", json_string("n"))), 2);
        CHECK_INT(count_where("nul", cond("r", "gt", json_string("nul"))), 1);
        CHECK_INT(count_where("nul", cond("r", "eq", json_stringn("nul\0byte", 8))), 1);
        CHECK_INT(count_where("nul", cond("p", "eq", json_stringn("a\0", 2))), 1);
        r = req("GET", "/v1/docs/nul/_verify", NULL);
        CHECK_PREFIX(r.body, "{\"ok\":true,");
        client_free(&r);
        reindex("nul");
    }
}

static void check_order(const char *coll, json_t *body, const char ids[][40], const int *want,
                        int n)
{
    char got[8][40];
    char *text = json_dumps(body, JSON_COMPACT);
    int k = query_ids(coll, body, got, 8);
    CHECK_INT(k, n);
    for (int i = 0; i < n && i < k; i++)
        if (strcmp(got[i], ids[want[i]]) != 0) {
            fprintf(stderr, "%s %s: position %d is not k=%d\n", coll, text, i, want[i] + 1);
            test_failures++;
            break;
        }
    free(text);
}

/* Issue 22 case 5: equal sort values come in ascending id order, in asc and
 * desc, served from the index or a scan, on cursor pages too. */
TEST(tie_order)
{
    static const char *colls[] = {"ties", "tiesu", "tiesplain"};
    define("ties", "{\"fields\":[{\"field\":\"score\",\"range\":true}]}");
    define("tiesu", "{\"fields\":[{\"field\":\"score\",\"range\":true},{\"field\":\"k\","
                    "\"unique\":true,\"range\":true}]}");
    static const int scores[] = {10, 20, 20, 20, 30, 30, 5};
    char ids[7][40];
    new_ids(ids, 7);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 7; i++)
            put(colls[c], ids[i], json_pack("{sisi}", "k", i + 1, "score", scores[i]));
    /* k-1 indices: desc = 30s (k5,k6), then 20s (k2,k3,k4) */
    static const int desc[] = {4, 5, 1, 2, 3}, asc[] = {6, 0, 1, 2, 3};
    static const int page_desc[] = {4, 5, 2, 3, 6}; /* ids after k2: k3..k7 */
    static const int page_asc[] = {6, 2, 3, 4, 5};
    for (int pass = 0; pass < 2; pass++) {
        for (int c = 0; c < 3; c++) {
            const char *k = colls[c];
            check_order(k,
                        json_pack("{s[o]s[{ssss}]si}", "where",
                                  cond("score", "gte", json_integer(0)), "orderBy", "field",
                                  "score", "dir", "desc", "limit", 5),
                        ids, desc, 5);
            check_order(k,
                        json_pack("{s[o]s[{ssss}]si}", "where",
                                  cond("score", "gte", json_integer(0)), "orderBy", "field",
                                  "score", "dir", "asc", "limit", 5),
                        ids, asc, 5);
            check_order(
                k,
                json_pack("{s[{ssss}]si}", "orderBy", "field", "score", "dir", "desc", "limit", 5),
                ids, desc, 5);
            check_order(k,
                        json_pack("{s[o]s[{ssss}]ss}", "where",
                                  cond("score", "between", json_pack("[ii]", 0, 100)), "orderBy",
                                  "field", "score", "dir", "desc", "cursor", ids[1]),
                        ids, page_desc, 5);
            check_order(k,
                        json_pack("{s[o]s[{ssss}]ss}", "where",
                                  cond("score", "lt", json_integer(100)), "orderBy", "field",
                                  "score", "dir", "asc", "cursor", ids[1]),
                        ids, page_asc, 5);
        }
        reindex("ties");
        reindex("tiesu");
    }
}

/* A writer that died mid-append leaves a delta tail without its LF: readers
 * ignore it; the next writer cuts it (torn) or completes it (whole line). */
TEST(half_written_delta_line)
{
    define("torn", "{\"fields\":[{\"field\":\"r\",\"range\":true}]}");
    char ids[3][40];
    new_ids(ids, 3);
    put("torn", ids[0], json_pack("{si}", "r", 5));
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/torn/.storh/indexes/entries/range/72.delta.jsonl", d.root);
    FILE *f = fopen(p, "a");
    fputs("{\"key\":\"n-0000000", f);
    fclose(f);
    CHECK_INT(count_where("torn", cond("r", "gte", json_integer(0))), 1);
    CHECK(put("torn", ids[1], json_pack("{si}", "r", 7)) == 201);
    buf b = BUF_INIT;
    f = fopen(p, "r");
    char chunk[4096];
    size_t got;
    while (f && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, got);
    if (f)
        fclose(f);
    CHECK(b.data && strstr(b.data, "n-0000000{") == NULL); /* the torn bytes are gone */
    CHECK(b.data && b.len > 0 && b.data[b.len - 1] == '\n');
    CHECK_INT(count_where("torn", cond("r", "gte", json_integer(0))), 2);
    /* a whole line without its LF: absent until a writer completes it */
    f = fopen(p, "a");
    fprintf(f,
            "{\"key\":\"n-00000000000000005d000000\",\"value\":5,\"count\":-1,\"ids\":[],"
            "\"remove\":[\"%s\"]}",
            ids[0]);
    fclose(f);
    char got_ids[4][40];
    json_t *q = json_pack("{s[o]}", "where", cond("r", "gte", json_integer(0)));
    CHECK_INT(query_ids("torn", q, got_ids, 4), 2);
    CHECK(put("torn", ids[2], json_pack("{si}", "r", 9)) == 201);
    /* now the hand-written removal applies: the index forgets ids[0] */
    q = json_pack("{s[o]}", "where", cond("r", "gte", json_integer(0)));
    CHECK_INT(query_ids("torn", q, got_ids, 4), 2);
    client_resp r = req("GET", "/v1/docs/torn/_verify", NULL);
    CHECK_PREFIX(r.body, "{\"ok\":false,");
    client_free(&r);
    reindex("torn");
    CHECK_INT(count_where("torn", cond("r", "gte", json_integer(0))), 3);
    buf_free(&b);
}

/* ---- randomized: index-served answers against a scan ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int rnd_in(int lo, int hi)
{
    return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}

static const char *const strs[] = {"", "a", "ab", "a\0b", "b", "-5", "10", "nul\0byte", "nul", "z"};
static const size_t strl[] = {0, 1, 2, 3, 1, 2, 2, 8, 3, 1};

/* A value of any indexable type; NULL (missing) when missing_ok. */
static json_t *rnd_value(bool missing_ok)
{
    int t = rnd_in(0, 99);
    if (t < 30)
        return json_integer(rnd_in(-50, 50));
    if (t < 42)
        return json_real(rnd_in(-400, 400) / 8.0);
    if (t < 45) {
        static const double f[] = {0.1, -1.5e-10, 1e20, -1e20, 2.0000001, -0.0, 48.0, 1e-7};
        return json_real(f[rnd_in(0, 7)]);
    }
    if (t < 52) {
        static const json_int_t big[] = {(json_int_t)1 << 62,
                                         -((json_int_t)1 << 62),
                                         ((json_int_t)1 << 62) + 1,
                                         -((json_int_t)1 << 62) - 1,
                                         ((json_int_t)1 << 53) + 1,
                                         INT64_MAX,
                                         INT64_MIN + 1,
                                         100000000000000000};
        return json_integer(big[rnd_in(0, 7)]);
    }
    if (t < 72) {
        int i = rnd_in(0, 9);
        return json_stringn(strs[i], strl[i]);
    }
    if (t < 77)
        return json_null();
    if (t < 87)
        return json_boolean(rnd_in(0, 1));
    return missing_ok ? NULL : json_integer(rnd_in(-5, 5));
}

/* A bound: any value, now and then an array or object. */
static json_t *rnd_bound(void)
{
    switch (rnd_in(0, 39)) {
    case 0:
        return json_pack("[i]", rnd_in(-5, 5));
    case 1:
        return json_pack("{si}", "a", 1);
    case 2:
        return json_array();
    default:
        return rnd_value(false);
    }
}

static const char *const rfields[] = {"v", "s", "u", "k"};

static json_t *rnd_record(int i)
{
    json_t *o = json_object();
    for (int f = 0; f < 4; f++) {
        if (f == 2) { /* u: unique, of every type */
            switch (i % 5) {
            case 0:
                json_object_set_new(o, "u", json_integer(i - 150));
                break;
            case 1:
                json_object_set_new(o, "u", json_real(i - 150.75));
                break;
            case 2:
                json_object_set_new(o, "u", json_sprintf("u%03d\xc3\xa9", i));
                break;
            case 3:
                json_object_set_new(o, "u", json_integer(((json_int_t)1 << 62) - i * 3));
                break;
            default:
                if (i < 10) /* only two values: a few bools and one null */
                    json_object_set_new(o, "u", i == 4 ? json_true() : json_null());
            }
            continue;
        }
        json_t *v = rnd_value(true);
        if (v)
            json_object_set_new(o, rfields[f], v);
    }
    return o;
}

static const char *const ops[] = {"eq", "gt", "gte", "lt", "lte", "between", "prefix", "in"};

static json_t *rnd_cond(void)
{
    const char *field = rfields[rnd_in(0, 3)];
    const char *op = ops[rnd_in(0, 7)];
    json_t *v;
    if (!strcmp(op, "between"))
        v = json_pack("[oo]", rnd_bound(), rnd_bound());
    else if (!strcmp(op, "prefix")) {
        int i = rnd_in(0, 9);
        v = json_stringn(strs[i], strl[i] > 2 ? strl[i] - 1 : strl[i]);
    } else if (!strcmp(op, "in"))
        v = json_pack("[oo]", rnd_bound(), rnd_bound());
    else
        v = rnd_bound();
    return cond(field, op, v);
}

static json_t *rnd_query(char ids[][40], int n)
{
    json_t *where = json_array();
    int shape = rnd_in(0, 9);
    json_array_append_new(where, rnd_cond());
    if (shape >= 6)
        json_array_append_new(where, rnd_cond());
    if (shape == 9)
        json_array_append_new(where, json_pack("{s[[o][o]]}", "or", rnd_cond(), rnd_cond()));
    json_t *q = json_pack("{so}", "where", where);
    if (rnd_in(0, 9) < 6) {
        static const char *const of[] = {"v", "s", "u", "k", "id"};
        json_object_set_new(
            q, "orderBy",
            json_pack("[{ssss}]", "field", of[rnd_in(0, 4)], "dir", rnd_in(0, 1) ? "desc" : "asc"));
    }
    if (rnd_in(0, 9) < 6)
        json_object_set_new(q, "limit", json_integer(rnd_in(1, 40)));
    if (rnd_in(0, 9) < 3)
        json_object_set_new(q, "cursor", json_string(ids[rnd_in(0, n - 1)]));
    if (rnd_in(0, 9) == 0)
        json_object_set_new(q, "count", json_true());
    return q;
}

/* Runs count queries against both collections; returns the mismatches. */
static int compare_phase(const char *phase, char ids[][40], int n, int count, int *served)
{
    int bad = 0;
    for (int i = 0; i < count; i++) {
        json_t *q = rnd_query(ids, n);
        char *text = json_dumps(q, JSON_COMPACT);
        client_resp a = req("POST", "/v1/docs/rix/_query", text);
        client_resp b = req("POST", "/v1/docs/rplain/_query", text);
        if (a.status != 200 || b.status != 200 || strcmp(a.body, b.body) != 0) {
            if (bad < 5)
                fprintf(stderr, "%s: %s\n  index: %ld %.300s\n  scan:  %ld %.300s\n", phase, text,
                        a.status, a.body, b.status, b.body);
            bad++;
        }
        json_object_set_new(q, "explain", json_true());
        json_object_del(q, "count");
        client_resp e = req_json("POST", "/v1/docs/rix/_query", q);
        if (strstr(e.body, "\"index_used\":true"))
            (*served)++;
        client_free(&e);
        client_free(&a);
        client_free(&b);
        free(text);
    }
    return bad;
}

TEST(randomized_index_equals_scan)
{
    unsigned seed = 22;
    const char *env = getenv("STORHD_TEST_SEED");
    if (env)
        seed = (unsigned)strtoul(env, NULL, 10);
    printf("randomized_index_equals_scan seed=%u (STORHD_TEST_SEED)\n", seed);
    rng_state = 0x9e3779b97f4a7c15ull ^ seed;
    define("rix", "{\"fields\":[{\"field\":\"v\",\"range\":true},{\"field\":\"s\",\"range\":"
                  "true},{\"field\":\"u\",\"range\":true,\"unique\":true},{\"field\":\"k\","
                  "\"range\":true}]}");
    enum { N = 300 };
    static char ids[N][40];
    new_ids(ids, N);
    buf rows = BUF_INIT;
    for (int i = 0; i < N; i++) {
        json_t *row = json_pack("{ssso}", "id", ids[i], "data", rnd_record(i));
        char *s = json_dumps(row, JSON_COMPACT);
        buf_appends(&rows, s);
        buf_appendc(&rows, '\n');
        free(s);
        json_decref(row);
    }
    for (int c = 0; c < 2; c++) {
        client_resp r;
        client_do(d.base, "POST", c ? "/v1/docs/rplain/_bulk" : "/v1/docs/rix/_bulk",
                  "application/x-ndjson", rows.data, rows.len, NULL, 0, &r);
        CHECK_INT(r.status, 200);
        client_free(&r);
    }
    buf_free(&rows);
    int served = 0, bad = 0;
    bad += compare_phase("delta", ids, N, 200, &served);
    reindex("rix");
    bad += compare_phase("main", ids, N, 200, &served);
    /* updates and deletes: removal lines carry the old values */
    for (int i = 0; i < 60; i++) {
        int at = rnd_in(0, N - 1);
        char path[2][160];
        snprintf(path[0], sizeof path[0], "/v1/docs/rix/%s", ids[at]);
        snprintf(path[1], sizeof path[1], "/v1/docs/rplain/%s", ids[at]);
        if (rnd_in(0, 3) == 0) {
            for (int c = 0; c < 2; c++) {
                client_resp r = req("DELETE", path[c], NULL);
                client_free(&r);
            }
        } else {
            json_t *rec = rnd_record(at);
            for (int c = 0; c < 2; c++) {
                client_resp r = req_json("PUT", path[c], json_incref(rec));
                CHECK(r.status / 100 == 2);
                client_free(&r);
            }
            json_decref(rec);
        }
    }
    bad += compare_phase("main+delta", ids, N, 200, &served);
    printf("randomized_index_equals_scan: 600 queries, %d index-served, %d differ\n", served, bad);
    CHECK_INT(bad, 0);
    CHECK(served > 400);
    client_resp r = req("GET", "/v1/docs/rix/_verify", NULL);
    CHECK_PREFIX(r.body, "{\"ok\":true,");
    client_free(&r);
}

/* ---- another process writing while storhd answers ---- */

static int writer_child(const char *root, int writes)
{
    docstore *ds;
    storh_err err;
    if (docstore_open(root, "conc", &ds, &err) != 0)
        return 1;
    buf big = BUF_INIT;
    for (int i = 0; i < 12000; i++)
        buf_appendc(&big, (char)('a' + i % 26));
    for (int i = 0; i < writes; i++) {
        json_t *v;
        if (i % 4 == 0) /* a line of several pages: readers can see it half-written */
            v = json_stringn(big.data, big.len - (size_t)(i % 7));
        else if (i % 4 == 1)
            v = json_stringn("w\0x", 3);
        else
            v = json_integer(i % 3 ? i : -i);
        json_t *data = json_pack("{so}", "r", v);
        char id[UUID7_LEN + 1];
        bool existed;
        if (docstore_put(ds, NULL, data, id, &existed, &err) != 0) {
            json_decref(data);
            fprintf(stderr, "writer: %s\n", err.msg);
            return 1;
        }
        json_decref(data);
    }
    buf_free(&big);
    docstore_close(ds);
    return 0;
}

static json_t *conc_query(int i, bool scan)
{
    json_t *c;
    switch (i % 4) {
    case 0:
        c = cond("r", "gte", json_integer(-100));
        break;
    case 1:
        c = cond("r", "prefix", json_string("abc"));
        break;
    case 2:
        c = cond("r", "eq", json_stringn("w\0x", 3));
        break;
    default:
        c = cond("r", "between", json_pack("[ss]", "a", "x"));
    }
    /* an OR group no index serves makes the same query a full scan */
    json_t *where = scan ? json_pack("[{s[[o][{ssss}]]}]", "or", c, "field", "none", "op", "exists")
                         : json_pack("[o]", c);
    return json_pack("{sosb}", "where", where, "count", 1);
}

TEST(concurrent_writer_and_queries)
{
    define("conc", "{\"fields\":[{\"field\":\"r\",\"range\":true}]}");
    pid_t pid = fork();
    if (pid == 0)
        _exit(writer_child(d.root, 400));
    int queries = 0, failures = 0, st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        char path[] = "/v1/docs/conc/_query";
        client_resp r = req_json("POST", path, conc_query(queries, false));
        if (r.status != 200) {
            if (failures < 3)
                fprintf(stderr, "query during writes: %ld %s\n", r.status, r.body);
            failures++;
        }
        client_free(&r);
        queries++;
        if (w == pid)
            break;
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("concurrent_writer_and_queries: %d queries during 400 writes, %d failed\n", queries,
           failures);
    CHECK_INT(failures, 0);
    for (int i = 0; i < 4; i++) {
        client_resp a = req_json("POST", "/v1/docs/conc/_query", conc_query(i, false));
        client_resp b = req_json("POST", "/v1/docs/conc/_query", conc_query(i, true));
        CHECK_INT(a.status, 200);
        CHECK_STR(a.body, b.body);
        client_free(&a);
        client_free(&b);
    }
    CHECK_INT(count_where("conc", cond("r", "exists", json_null())), 400);
}

static const test_case tests[] = {
    TEST_ENTRY(negative_bounds),
    TEST_ENTRY(nul_in_range_field),
    TEST_ENTRY(tie_order),
    TEST_ENTRY(half_written_delta_line),
    TEST_ENTRY(randomized_index_equals_scan),
    TEST_ENTRY(concurrent_writer_and_queries),
};

DAEMON_TEST_MAIN(d, tests)
