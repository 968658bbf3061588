/* reccanon: record bytes passed on as they are only when decoding and
 * encoding them again gives the same bytes. */
#include <jansson.h>
#include <stdint.h>

#include "../test.h"
#include "docstore.h"
#include "reccanon.h"
#include "sjson.h"

static const char *ID = "0190a0f3-5c1e-7a2b-8c3d-4e5f60718293";

/* The bytes the store would write for data_json under ID. */
static bool canonical(const char *data_json, buf *out)
{
    buf_reset(out);
    json_t *d = sjson_decode(data_json, strlen(data_json), NULL);
    if (!d)
        return false;
    int rc = docstore_encode_record(out, ID, d, NULL);
    json_decref(d);
    return rc == 0;
}

/* The property: reccanon says yes only if jansson's decode + the encoder
 * give the same bytes, and its own tree is jansson's. */
static bool roundtrips(const char *bytes, size_t len)
{
    json_t *root = sjson_loadb(bytes, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    json_t *d = json_object_get(root, "data");
    buf b = BUF_INIT;
    bool same = d && docstore_encode_record(&b, ID, d, NULL) == 0 && b.len == len &&
                memcmp(b.data, bytes, len) == 0;
    json_t *mine = reccanon_decode(bytes, len, ID);
    same = same && mine && json_typeof(mine) == json_typeof(d) && json_equal(mine, d);
    json_decref(mine);
    json_decref(root);
    buf_free(&b);
    return same;
}

static bool is_canon(const char *s)
{
    return reccanon_is_canonical(s, strlen(s), ID);
}

static char rec[4096];

static const char *R(const char *data)
{
    snprintf(rec, sizeof rec, "{\"id\":\"%s\",\"data\":%s}\n", ID, data);
    return rec;
}

TEST(encoder_output_is_recognised)
{
    const char *cases[] = {
        "{\"kind\":\"page\",\"status\":\"live\",\"bucket\":7,\"slug\":\"item-7\"}",
        "{\"a\":[1,2,3],\"b\":{\"c\":null,\"d\":true,\"e\":false},\"f\":-12}",
        "[1,\"two\",[3],{\"x\":\"y\"}]",
        "[]",
        "{\"t\\\"q\\\\b\":\"line\\nbreak\\ttab\\rcr\"}",
        "{\"u\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 /slash\"}",
        "{\"n\":999999999999999999,\"m\":-999999999999999999,\"z\":0}",
    };
    buf b = BUF_INIT;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK(canonical(cases[i], &b));
        CHECK(reccanon_is_canonical(b.data, b.len, ID));
        CHECK(roundtrips(b.data, b.len));
    }
    buf_free(&b);
}

TEST(what_it_is_not_sure_of_is_refused)
{
    /* each of these either re-encodes differently or needs the decoder */
    const char *no[] = {
        "{\"a\":1.5}",                    /* floats */
        "{\"a\":1e3}",                    /* exponents */
        "{\"a\":-0}",                     /* -0 encodes as 0 */
        "{\"a\":007}",                    /* not JSON */
        "{\"a\":1234567890123456789012}", /* outside int64: a float */
        "{}",                             /* encodes as [] */
        "{\"a\":{}}",                     /* same, nested */
        "{\"0\":\"x\"}",                  /* integer keys: PHP's list/map duality */
        "{\"a\":1,\"a\":2}",              /* duplicate keys */
        "{\"a\":\"\\u00e9\"}",            /* \\u escapes */
        "{\"a\":\"\\/\"}",                /* an escape the encoder does not write */
        "{\"a\":\"\xe2\x80\xa8\"}",       /* U+2028 is written escaped */
        "{\"a\":\"\xc3\"}",               /* broken UTF-8 */
        "{\"a\":\"\xed\xa0\x80\"}",       /* a surrogate */
        "{\"a\":\"\xc0\xaf\"}",           /* overlong */
        "{\"a\": 1}",                     /* whitespace */
        "{\"a\":1,}",                     /* JSONC trailing comma */
        "\"scalar\"",                     /* data that is no object or list */
        "{\"a\":tru}",
        "{\"a\":[1,2}",
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        if (is_canon(R(no[i])))
            fprintf(stderr, "accepted: %s\n", no[i]);
        CHECK(!is_canon(R(no[i])));
        CHECK(reccanon_decode(rec, strlen(rec), ID) == NULL);
    }
    /* the frame: id, key order, the newline */
    char s[256];
    snprintf(s, sizeof s, "{\"id\":\"%s\",\"data\":[1]}", ID);
    CHECK(!is_canon(s));
    snprintf(s, sizeof s, "{\"data\":[1],\"id\":\"%s\"}\n", ID);
    CHECK(!is_canon(s));
    snprintf(s, sizeof s, "{\"id\":\"%s\",\"data\":[1]}\n\n", ID);
    CHECK(!is_canon(s));
    CHECK(
        !reccanon_is_canonical(R("[1]"), strlen(R("[1]")), "0190a0f3-5c1e-7a2b-8c3d-4e5f60718294"));
    /* deep nesting is left to the decoder */
    char deep[512] = "";
    for (int i = 0; i < 100; i++)
        strcat(deep, "[");
    for (int i = 0; i < 100; i++)
        strcat(deep, "]");
    CHECK(!is_canon(R(deep)));
}

/* Every byte string it accepts round-trips: single-byte mutations of
 * canonical records (the decoder is the judge). */
TEST(accepted_bytes_roundtrip)
{
    buf b = BUF_INIT;
    CHECK(
        canonical("{\"k\":\"v\\n\xc3\xa9\",\"n\":[1,-2,true,null,{\"x\":\"0\"}],\"s\":\"a\"}", &b));
    static const char alphabet[] = "{}[]\":,0123456789-.eE\\/ntfrubalsx \xc3\xa9\xe2\x80\xa8";
    size_t accepted = 0, tried = 0;
    char *m = malloc(b.len + 1);
    for (size_t pos = 0; pos < b.len; pos++) {
        for (size_t a = 0; a < sizeof alphabet - 1; a++) {
            memcpy(m, b.data, b.len);
            m[pos] = alphabet[a];
            tried++;
            if (reccanon_is_canonical(m, b.len, ID)) {
                accepted++;
                if (!roundtrips(m, b.len))
                    fprintf(stderr, "accepted but not canonical: %.*s", (int)b.len, m);
                CHECK(roundtrips(m, b.len));
            }
        }
    }
    CHECK(accepted > 0 && accepted < tried);
    free(m);
    buf_free(&b);
}

/* Strings long enough for the 16-byte scan: every byte value at every
 * position of a 40-byte string, and multi-byte characters (one refused:
 * U+2028) at each position; accepted exactly when decode + encode give the
 * same bytes. */
TEST(long_strings_every_byte_at_every_position)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyz0123456789ABCD";
    char data[128], *r = malloc(512);
    long differ = 0, accepted = 0;
    for (size_t pos = 0; pos < sizeof plain - 1; pos++)
        for (int c = 1; c < 256; c++) {
            char str[sizeof plain];
            memcpy(str, plain, sizeof plain);
            str[pos] = (char)c;
            snprintf(data, sizeof data, "{\"key\":\"%s\",\"n\":1}", str);
            int n = snprintf(r, 512, "{\"id\":\"%s\",\"data\":%s}\n", ID, data);
            bool yes = reccanon_is_canonical(r, (size_t)n, ID);
            accepted += yes;
            if (yes != roundtrips(r, (size_t)n))
                differ++;
        }
    static const char *const chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                        "\xe2\x80\xa8"};
    for (size_t pos = 0; pos < sizeof plain - 1; pos++)
        for (size_t k = 0; k < sizeof chars / sizeof *chars; k++) {
            int n = snprintf(r, 512, "{\"id\":\"%s\",\"data\":{\"key\":\"%.*s%s%s\"}}\n", ID,
                             (int)pos, plain, chars[k], plain + pos);
            bool yes = reccanon_is_canonical(r, (size_t)n, ID);
            CHECK(yes == (k != 3));
            if (yes != roundtrips(r, (size_t)n))
                differ++;
        }
    CHECK_INT(differ, 0);
    CHECK(accepted > 40 * 90); /* the printable ASCII bytes but '"' and '\' */
    free(r);
}

/* The projection an index build reads equals the full decode's fields. */
TEST(projection_matches_the_decode)
{
    const char *fields[] = {"kind", "n", "s", "nested", "missing"};
    const char *datas[] = {
        "{\"kind\":\"page\",\"n\":-42,\"s\":\"caf\xc3\xa9\\n\",\"nested\":{\"a\":[1,true]},"
        "\"other\":null}",
        "{\"kind\":null,\"n\":true,\"s\":false,\"x\":\"y\"}",
        "{\"kind\":999999999999999999,\"n\":-999999999999999999,\"s\":0,\"nested\":-7}",
        "{\"kind\":10,\"n\":-1,\"s\":9}",
        "[1,2,3]",
    };
    buf b = BUF_INIT;
    for (size_t i = 0; i < sizeof datas / sizeof *datas; i++) {
        CHECK(canonical(datas[i], &b));
        json_t *full, *p = reccanon_project(b.data, b.len, ID, fields, 5);
        CHECK(p != NULL);
        CHECK(docstore_decode_record(b.data, b.len, ID, &full, NULL) == 0);
        CHECK(json_is_object(p) == json_is_object(full));
        for (size_t f = 0; json_is_object(full) && f < 5; f++) {
            json_t *a = json_object_get(full, fields[f]), *c = json_object_get(p, fields[f]);
            CHECK((a == NULL) == (c == NULL));
            CHECK(!a || (json_typeof(a) == json_typeof(c) && json_equal(a, c)));
        }
        CHECK(json_object_get(p, "other") == NULL && json_object_get(p, "x") == NULL);
        json_decref(p);
        json_decref(full);
    }
    CHECK(reccanon_project(R("{\"kind\":1.5}"), strlen(R("{\"kind\":1.5}")), ID, fields, 5) ==
          NULL);
    buf_free(&b);
}

static const test_case tests[] = {
    TEST_ENTRY(projection_matches_the_decode),
    TEST_ENTRY(encoder_output_is_recognised),
    TEST_ENTRY(what_it_is_not_sure_of_is_refused),
    TEST_ENTRY(accepted_bytes_roundtrip),
    TEST_ENTRY(long_strings_every_byte_at_every_position),
};
TEST_MAIN(tests)
