#include <math.h>

#include <stdint.h>

#include "../test.h"
#include "docindex.h"
#include "sjson.h"

static char *enc(const char *json, unsigned flags)
{
    static buf b;
    buf_reset(&b);
    json_t *v = sjson_decode(json, strlen(json), NULL);
    if (!v)
        return NULL;
    int rc = sjson_encode(&b, v, flags, NULL);
    json_decref(v);
    return rc ? NULL : b.data;
}

static const char *dbl(double v)
{
    static char out[32];
    sjson_format_double(v, out);
    return out;
}

TEST(floats_as_php_writes_them)
{
    CHECK_STR(dbl(1.0), "1.0");
    CHECK_STR(dbl(100.0), "100.0");
    CHECK_STR(dbl(0.1), "0.1");
    CHECK_STR(dbl(0.1 + 0.2), "0.30000000000000004");
    CHECK_STR(dbl(1.0 / 3), "0.3333333333333333");
    CHECK_STR(dbl(0.0001), "0.0001");
    CHECK_STR(dbl(1e-5), "1.0e-5");
    CHECK_STR(dbl(-1.5e-10), "-1.5e-10");
    CHECK_STR(dbl(1e16), "10000000000000000.0");
    CHECK_STR(dbl(1e17), "1.0e+17");
    CHECK_STR(dbl(1.2345678901234568e17), "1.2345678901234568e+17");
    CHECK_STR(dbl(1e20), "1.0e+20");
    CHECK_STR(dbl(-0.0), "-0.0");
    CHECK_STR(dbl(5e-324), "5.0e-324");
    CHECK_STR(dbl(123.456), "123.456");
}

static const char *g17(double v)
{
    static char out[32];
    sjson_format_g17(v, out);
    return out;
}

/* The expectations are PHP 8.2's sprintf('%.17G', v). */
TEST(g17_as_php_sprintf_writes_it)
{
    CHECK_STR(g17(0.1), "0.10000000000000001");
    CHECK_STR(g17(1e17), "1.0E+17");
    CHECK_STR(g17(1e16), "10000000000000000");
    CHECK_STR(g17(1.5), "1.5");
    CHECK_STR(g17(0.0001), "0.0001");
    CHECK_STR(g17(0.00001), "1.0000000000000001E-5");
    CHECK_STR(g17(-0.0), "-0");
    CHECK_STR(g17(0.0), "0");
    CHECK_STR(g17(123456789012345678.0), "1.2345678901234568E+17");
    CHECK_STR(g17(1.0 / 3), "0.33333333333333331");
    CHECK_STR(g17(-2.5e-300), "-2.5E-300");
    CHECK_STR(g17(1.7976931348623157e308), "1.7976931348623157E+308");
    CHECK_STR(g17(5e-324), "4.9406564584124654E-324");
}

/* docindex keeps its own copy of the %.17G printer until it calls this one:
 * both must agree on every finite double, or index keys would change. */
TEST(g17_agrees_with_the_docindex_key_printer)
{
    uint64_t x = 0x9E3779B97F4A7C15u;
    int mismatches = 0;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        uint64_t bits = x;
        if (i % 2) /* also short decimals, not only random bit patterns */
            v = (double)(int64_t)(x % 2000001) / 1000.0 * ((i % 3) ? 1 : 1e-9);
        else
            memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        char a[40], b[32];
        docindex_g17(v, a);
        sjson_format_g17(v, b);
        if (strcmp(a, b) != 0 && mismatches++ < 5)
            fprintf(stderr, "  %.17g: docindex %s, sjson %s\n", v, a, b);
    }
    CHECK_INT(mismatches, 0);
}

TEST(strings_and_escapes)
{
    CHECK_STR(
        enc("{\"t\":\"H\\u00e9/llo\",\"u\":\"\\ud83d\\ude00\",\"c\":\"a\\tb\\u0001\\u001f\"}", 0),
        "{\"t\":\"Hé/llo\",\"u\":\"😀\",\"c\":\"a\\tb\\u0001\\u001f\"}");
    CHECK_STR(enc("[\"\\u2028\\u2029\\u007f\\\"\\\\\\b\\f\\n\\r\"]", 0),
              "[\"\\u2028\\u2029\x7f\\\"\\\\\\b\\f\\n\\r\"]");
}

/* Every byte that needs care found at every place of a long string,
 * whether the word-at-a-time scan or the byte loop meets it first. */
TEST(escapes_at_every_offset_of_a_long_string)
{
    static const char *const raw[] = {
        "\"",           "\\",           "\n",   "\x01",     "\x1f", "\xe2\x80\xa8",
        "\xe2\x80\xa9", "\xe2\x82\xac", "\x7f", "\xc3\xa9", " "};
    static const char *const want[] = {"\\\"",    "\\\\",     "\\n",     "\\u0001",
                                       "\\u001f", "\\u2028",  "\\u2029", "\xe2\x82\xac",
                                       "\x7f",    "\xc3\xa9", " "};
    const char *plain = "abcdefghijklmnopqrstuvwxyz0123456789";
    buf b = BUF_INIT;
    for (size_t k = 0; k < sizeof raw / sizeof raw[0]; k++)
        for (int at = 0; at <= 30; at++) {
            char in[64], expect[80];
            int n = snprintf(in, sizeof in, "%.*s%s%s", at, plain, raw[k], plain + at);
            snprintf(expect, sizeof expect, "\"%.*s%s%s\"", at, plain, want[k], plain + at);
            buf_reset(&b);
            sjson_encode_string(&b, in, (size_t)n);
            CHECK_STR(b.data, expect);
        }
    buf_free(&b);
}

TEST(php_list_map_duality)
{
    CHECK_STR(enc("{\"e\":{},\"l\":{\"0\":\"a\",\"1\":\"b\"},\"m\":{\"1\":\"a\",\"0\":\"b\"}}", 0),
              "{\"e\":[],\"l\":[\"a\",\"b\"],\"m\":{\"1\":\"a\",\"0\":\"b\"}}");
    CHECK_STR(enc("{\"a\":1,\"b\":2,\"a\":3}", 0), "{\"a\":3,\"b\":2}");
    CHECK_STR(enc("{\"n\":1.0,\"i\":1,\"big\":1e20,\"x\":1E2}", 0),
              "{\"n\":1.0,\"i\":1,\"big\":1.0e+20,\"x\":100.0}");
    CHECK(sjson_is_int_key("0", 1));
    CHECK(sjson_is_int_key("-5", 2));
    CHECK(sjson_is_int_key("9223372036854775807", 19));
    CHECK(!sjson_is_int_key("9223372036854775808", 19));
    CHECK(sjson_is_int_key("-9223372036854775808", 20));
    CHECK(!sjson_is_int_key("-0", 2));
    CHECK(!sjson_is_int_key("05", 2));
    CHECK(!sjson_is_int_key("1.0", 3));
    CHECK(!sjson_is_int_key(" 1", 2));
}

TEST(pretty_style)
{
    CHECK_STR(enc("{\"fields\":[{\"field\":\"at\",\"unique\":false}],\"e\":[]}", SJSON_PRETTY),
              "{\n    \"fields\": [\n        {\n            \"field\": \"at\",\n"
              "            \"unique\": false\n        }\n    ],\n    \"e\": []\n}");
    buf b = BUF_INIT;
    json_t *empty = json_object();
    CHECK_INT(sjson_encode_doc(&b, empty, SJSON_PRETTY, NULL), 0);
    CHECK_STR(b.data, "{}\n");
    json_decref(empty);
    buf_free(&b);
}

TEST(depth_limit)
{
    json_t *v = json_array(), *cur = v;
    for (int i = 0; i < SJSON_MAX_DEPTH + 1; i++) {
        json_t *n = json_array();
        json_array_append_new(cur, n);
        cur = n;
    }
    buf b = BUF_INIT;
    storh_err err;
    CHECK_INT(sjson_encode(&b, v, 0, &err), STORH_EINVAL);
    json_decref(v);
    buf_free(&b);
}

static json_t *jc(const char *s, storh_err *err)
{
    return sjson_decode_jsonc_object(s, strlen(s), err);
}

TEST(jsonc_reader)
{
    storh_err err;
    json_t *v = jc("// header\n{\n  \"a\": 1, /* inline */\n  \"s\": \"// not a comment\",\n"
                   "  \"l\": [1, 2,],\n}\n",
                   &err);
    CHECK(v != NULL);
    if (v) {
        CHECK_INT(json_integer_value(json_object_get(v, "a")), 1);
        CHECK_STR(json_string_value(json_object_get(v, "s")), "// not a comment");
        CHECK_INT(json_array_size(json_object_get(v, "l")), 2);
        json_decref(v);
    }
    v = jc("  {}  ", &err);
    CHECK(v && json_object_size(v) == 0);
    json_decref(v);
    CHECK(jc("{\"1\":\"x\"}", &err) == NULL);
    CHECK_STR(err.msg, "JSONC document must decode to an object.");
    CHECK(jc("{\"0\":\"zero\"}", &err) == NULL);
    CHECK(jc("[]", &err) == NULL);
    CHECK(jc("{\"a\":1 /* unterminated", &err) == NULL);
    CHECK(jc("{'a':1}", &err) == NULL);
    buf b = BUF_INIT;
    const char *src = "{\"a\":/*x\ny*/1}";
    sjson_strip_jsonc(&b, src, strlen(src));
    CHECK_STR(b.data, "{\"a\":   \n 1}");
    buf_free(&b);
}

/* Integers beyond int64 decode as floats, as PHP's json_decode reads them
 * (outputs checked against php -r json_encode(json_decode(...))). */
TEST(big_integers_decode_as_floats)
{
    CHECK_STR(enc("{\"big\":12345678901234567890,\"neg\":-9223372036854775809}", 0),
              "{\"big\":1.2345678901234567e+19,\"neg\":-9.223372036854776e+18}");
    CHECK_STR(enc("[9223372036854775807,-9223372036854775808,9223372036854775808,-0,"
                  "100000000000000000000]",
                  0),
              "[9223372036854775807,-9223372036854775808,9.223372036854776e+18,0,1.0e+20]");
    CHECK_STR(
        enc("{\"k\\\"99999999999999999999\":\"12345678901234567890\",\"x\":[99999999999999999999]}",
            0),
        "{\"k\\\"99999999999999999999\":\"12345678901234567890\",\"x\":[1.0e+20]}");
    json_t *v = sjson_decode("[1,12345678901234567890]", 24, NULL);
    CHECK(json_is_integer(json_array_get(v, 0)) && json_is_real(json_array_get(v, 1)));
    json_decref(v);
    storh_err err;
    CHECK(sjson_decode("[1e400]", 7, &err) == NULL); /* a real overflow stays an error */
    CHECK(sjson_decode("[12345678901234567890", 21, &err) == NULL);
    const char *jc = "{\"a\": 12345678901234567890, // c\n}";
    v = sjson_decode_jsonc_object(jc, strlen(jc), &err);
    CHECK(json_is_real(json_object_get(v, "a")));
    json_decref(v);
}

static const test_case tests[] = {
    TEST_ENTRY(floats_as_php_writes_them),
    TEST_ENTRY(g17_as_php_sprintf_writes_it),
    TEST_ENTRY(g17_agrees_with_the_docindex_key_printer),
    TEST_ENTRY(strings_and_escapes),
    TEST_ENTRY(escapes_at_every_offset_of_a_long_string),
    TEST_ENTRY(php_list_map_duality),
    TEST_ENTRY(pretty_style),
    TEST_ENTRY(depth_limit),
    TEST_ENTRY(jsonc_reader),
    TEST_ENTRY(big_integers_decode_as_floats),
};
TEST_MAIN(tests)
