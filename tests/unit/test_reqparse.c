/* test_reqparse: the query-string readers (integers with bounds, booleans,
 * RecordQuery arguments), each bad argument a STORH_EINVAL naming it and
 * good ones landing in the recquery. The request is a stand-in that holds
 * only query arguments: the binary links reqparse.c alone, not http.c. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "http.h"
#include "reqparse.h"

struct http_req {
    const char *const *args; /* key, value, key, value, ..., NULL */
};

const char *http_query(http_req *req, const char *key)
{
    for (const char *const *a = req->args; a && a[0]; a += 2)
        if (!strcmp(a[0], key))
            return a[1];
    return NULL;
}

void http_query_each(http_req *req, void (*fn)(void *ctx, const char *k, const char *v), void *ctx)
{
    for (const char *const *a = req->args; a && a[0]; a += 2)
        fn(ctx, a[0], a[1]);
}

#define REQ(...) (&(http_req){(const char *const[]){__VA_ARGS__, NULL}})
#define NOARGS (&(http_req){NULL})

TEST(ll_takes_whole_decimal_integers_only)
{
    long long n = 7;
    CHECK(reqparse_ll("0", &n) && n == 0);
    CHECK(reqparse_ll("-42", &n) && n == -42);
    CHECK(reqparse_ll("9223372036854775807", &n) && n == INT64_MAX);
    CHECK(reqparse_ll("-9223372036854775808", &n) && n == INT64_MIN);
    n = 7;
    CHECK(!reqparse_ll("", &n));
    CHECK(!reqparse_ll("12x", &n));
    CHECK(!reqparse_ll("1.5", &n));
    CHECK(!reqparse_ll("0x10", &n));
    CHECK(!reqparse_ll("1 ", &n));
    CHECK(!reqparse_ll("abc", &n));
    CHECK(!reqparse_ll("9223372036854775808", &n)); /* overflow */
    CHECK(!reqparse_ll("-9223372036854775809", &n));
    CHECK_INT(n, 7); /* a refused value leaves *out alone */
}

TEST(int_defaults_bounds_and_names_the_parameter)
{
    long long n = 0;
    storh_err err = {0};
    CHECK_INT(reqparse_int(NOARGS, "limit", 50, 1, 1000, &n, &err), 0);
    CHECK_INT(n, 50);
    /* the bounds are inclusive */
    CHECK_INT(reqparse_int(REQ("limit", "1"), "limit", 50, 1, 1000, &n, &err), 0);
    CHECK_INT(n, 1);
    CHECK_INT(reqparse_int(REQ("limit", "1000"), "limit", 50, 1, 1000, &n, &err), 0);
    CHECK_INT(n, 1000);
    CHECK_INT(reqparse_int(REQ("limit", "0"), "limit", 50, 1, 1000, &n, &err), STORH_EINVAL);
    CHECK_INT(err.code, STORH_EINVAL);
    CHECK_STR(err.msg, "Query parameter limit: must be an integer from 1 to 1000.");
    CHECK_INT(reqparse_int(REQ("limit", "1001"), "limit", 50, 1, 1000, &n, &err), STORH_EINVAL);
    CHECK_INT(reqparse_int(REQ("limit", "ten"), "limit", 50, 1, 1000, &n, &err), STORH_EINVAL);
    CHECK_INT(reqparse_int(REQ("limit", ""), "limit", 50, 1, 1000, &n, &err), STORH_EINVAL);
    CHECK_INT(reqparse_int(REQ("limit", "99999999999999999999"), "limit", 50, 1, 1000, &n, &err),
              STORH_EINVAL);
    /* other arguments are not this one */
    CHECK_INT(reqparse_int(REQ("other", "x"), "wait", -1, -1, 60, &n, &err), 0);
    CHECK_INT(n, -1);
    CHECK_INT(reqparse_int(REQ("wait", "-2"), "wait", -1, -1, 60, &n, &err), STORH_EINVAL);
    CHECK_STR(err.msg, "Query parameter wait: must be an integer from -1 to 60.");
}

TEST(bool_takes_true_false_one_zero)
{
    bool b = false;
    storh_err err;
    CHECK_INT(reqparse_bool(NOARGS, "sync", true, &b, &err), 0);
    CHECK(b);
    CHECK_INT(reqparse_bool(REQ("sync", "false"), "sync", true, &b, &err), 0);
    CHECK(!b);
    CHECK_INT(reqparse_bool(REQ("sync", "1"), "sync", false, &b, &err), 0);
    CHECK(b);
    CHECK_INT(reqparse_bool(REQ("sync", "0"), "sync", true, &b, &err), 0);
    CHECK(!b);
    CHECK_INT(reqparse_bool(REQ("sync", "true"), "sync", false, &b, &err), 0);
    CHECK(b);
    const char *bad[] = {"yes", "TRUE", "", "2", "true "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(reqparse_bool(REQ("sync", bad[i]), "sync", false, &b, &err), STORH_EINVAL);
        CHECK_STR(err.msg, "Query parameter sync: must be true or false.");
    }
}

#define ID1 "018bcfe5-6800-7000-8000-000000000001"

TEST(recquery_fills_every_argument)
{
    recquery q;
    recquery_init(&q);
    storh_err err;
    CHECK_INT(reqparse_recquery(REQ("after", ID1, "limit", "25", "from_ms", "1000", "until_ms",
                                    "2000", "eq.kind", "page", "eq.n", "2", "eq.ok", "true",
                                    "eq.none", "null", "eq.s", "\"7\"", "eq.obj", "{\"a\":1}"),
                                &q, &err),
              0);
    CHECK(q.has_after);
    CHECK_STR(q.after, ID1);
    CHECK_INT(q.limit, 25);
    CHECK(q.has_from && q.has_until);
    CHECK(strcmp(q.min_id, q.max_id) < 0);
    /* a JSON scalar where it parses as one, else the text itself */
    CHECK_STR(json_string_value(json_object_get(q.where, "kind")), "page");
    CHECK(json_is_integer(json_object_get(q.where, "n")));
    CHECK_INT(json_integer_value(json_object_get(q.where, "n")), 2);
    CHECK(json_is_true(json_object_get(q.where, "ok")));
    CHECK(json_is_null(json_object_get(q.where, "none")));
    CHECK_STR(json_string_value(json_object_get(q.where, "s")), "7");
    CHECK_STR(json_string_value(json_object_get(q.where, "obj")), "{\"a\":1}");
    recquery_clear(&q);

    /* no arguments: an empty query */
    recquery_init(&q);
    CHECK_INT(reqparse_recquery(NOARGS, &q, &err), 0);
    CHECK(!q.has_after && !q.has_from && !q.has_until);
    CHECK_INT(q.limit, 0);
    recquery_clear(&q);

    /* an inverted range is no error: it matches nothing */
    recquery_init(&q);
    CHECK_INT(reqparse_recquery(REQ("from_ms", "2000", "until_ms", "1000"), &q, &err), 0);
    CHECK(strcmp(q.min_id, q.max_id) > 0);
    recquery_clear(&q);

    /* one bound of the time range alone */
    recquery_init(&q);
    CHECK_INT(reqparse_recquery(REQ("until_ms", "5000"), &q, &err), 0);
    CHECK(!q.has_from && q.has_until);
    recquery_clear(&q);
}

/* reqparse_recquery on args must fail with STORH_EINVAL and a message
 * starting with want. */
static void refused(http_req *req, const char *want)
{
    recquery q;
    recquery_init(&q);
    storh_err err = {0};
    CHECK_INT(reqparse_recquery(req, &q, &err), STORH_EINVAL);
    CHECK_INT(err.code, STORH_EINVAL);
    CHECK_PREFIX(err.msg, want);
    recquery_clear(&q);
}

TEST(recquery_refuses_bad_arguments_by_name)
{
    refused(REQ("after", "not-an-id"), "Query parameter after: ");
    refused(REQ("limit", "0"), "Query parameter limit: must be an integer >= 1.");
    refused(REQ("limit", "-5"), "Query parameter limit: must be an integer >= 1.");
    refused(REQ("limit", "x"), "Query parameter limit: must be an integer >= 1.");
    refused(REQ("from_ms", "yesterday"), "Query parameter from_ms: must be an integer.");
    refused(REQ("until_ms", "1.5"), "Query parameter until_ms: must be an integer.");
    refused(REQ("from_ms", "-1"), "Time range: Time range is outside the 48-bit range.");
    refused(REQ("until_ms", "281474976710656"), "Time range: "); /* 2^48 */
    refused(REQ("sort", "id"), "Unknown query parameter 'sort' (use after, limit, from_ms, "
                               "until_ms, eq.FIELD).");
    refused(REQ("eq.", "x"), "Query parameter eq.: ");
    /* the first bad argument is the one named, even with good ones around */
    refused(REQ("limit", "10", "bogus", "1", "limit", "0"), "Unknown query parameter 'bogus'");
    /* a long unknown name is cut, not overflowed */
    char longk[300];
    memset(longk, 'k', sizeof longk - 1);
    longk[sizeof longk - 1] = 0;
    refused(REQ(longk, "1"), "Unknown query parameter 'kkkk");
}

static const test_case tests[] = {
    TEST_ENTRY(ll_takes_whole_decimal_integers_only),
    TEST_ENTRY(int_defaults_bounds_and_names_the_parameter),
    TEST_ENTRY(bool_takes_true_false_one_zero),
    TEST_ENTRY(recquery_fills_every_argument),
    TEST_ENTRY(recquery_refuses_bad_arguments_by_name),
};

TEST_MAIN(tests)
