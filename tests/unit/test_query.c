#include "../test.h"
#include "query.h"
#include "sjson.h"

#include "../support/js.h"

/* Does data match the single condition {field, op, value}? */
static int m(const char *data, const char *cond)
{
    char body[512];
    snprintf(body, sizeof body, "{\"where\":[%s]}", cond);
    json_t *b = js(body), *d = js(data);
    query q;
    storh_err err;
    int r = -1;
    if (query_parse(b, &q, &err) == 0) {
        r = query_match(&q, "018bcfe5-6800-7000-8000-000000000000", d);
        query_free(&q);
    } else {
        fprintf(stderr, "parse %s: %s\n", cond, err.msg);
    }
    json_decref(b);
    json_decref(d);
    return r;
}

#define C(f, op, v) "{\"field\":\"" f "\",\"op\":\"" op "\",\"value\":" v "}"
#define CN(f, op) "{\"field\":\"" f "\",\"op\":\"" op "\"}"

TEST(equality_is_strict)
{
    CHECK_INT(m("{\"n\":1}", C("n", "eq", "1")), 1);
    CHECK_INT(m("{\"n\":1}", C("n", "eq", "1.0")), 0);   /* int vs float */
    CHECK_INT(m("{\"n\":\"1\"}", C("n", "eq", "1")), 0); /* string vs int */
    CHECK_INT(m("{\"n\":null}", C("n", "eq", "null")), 1);
    CHECK_INT(m("{}", C("n", "eq", "null")), 0); /* missing is not null */
    CHECK_INT(m("{\"a\":[1,2]}", C("a", "eq", "[1,2]")), 1);
    CHECK_INT(m("{\"a\":{\"x\":1,\"y\":2}}", C("a", "eq", "{\"y\":2,\"x\":1}")), 0); /* order */
    CHECK_INT(m("{\"a\":{}}", C("a", "eq", "[]")), 1); /* PHP: both empty arrays */
    CHECK_INT(m("{\"n\":1}", C("n", "neq", "1")), 0);
    CHECK_INT(m("{}", C("n", "neq", "1")), 1); /* missing counts as different */
    CHECK_INT(m("{\"n\":2}", C("n", "in", "[1,2]")), 1);
    CHECK_INT(m("{\"n\":2.0}", C("n", "in", "[1,2]")), 0);
    CHECK_INT(m("{}", C("n", "in", "[null]")), 0);
    CHECK_INT(m("{}", C("n", "notIn", "[1]")), 1);
    CHECK_INT(m("{\"n\":1}", C("n", "notIn", "[1]")), 0);
    CHECK_INT(m("{\"n\":1}", C("id", "eq", "\"018bcfe5-6800-7000-8000-000000000000\"")), 1);
}

TEST(ordering_operators_and_compare)
{
    CHECK_INT(m("{\"n\":5}", C("n", "gt", "4.5")), 1); /* int vs float numerically */
    CHECK_INT(m("{\"n\":5}", C("n", "gte", "5")), 1);
    CHECK_INT(m("{\"n\":5}", C("n", "lt", "5")), 0);
    CHECK_INT(m("{\"n\":5}", C("n", "lte", "5.0")), 1);
    CHECK_INT(m("{}", C("n", "lt", "5")), 0); /* missing never compares */
    CHECK_INT(m("{\"s\":\"abc\"}", C("s", "gt", "\"abb\"")), 1);
    CHECK_INT(m("{\"s\":\"B\"}", C("s", "lt", "\"a\"")), 1); /* byte order */
    CHECK_INT(m("{\"b\":true}", C("b", "gt", "false")), 1);
    CHECK_INT(m("{\"n\":3}", C("n", "between", "[3,5]")), 1);
    CHECK_INT(m("{\"n\":6}", C("n", "between", "[3,5]")), 0);
    /* cross-type order: strings < negatives < numbers < lists < false < null < true < objects */
    CHECK_INT(m("{\"v\":null}", C("v", "gt", "5")), 1);
    CHECK_INT(m("{\"v\":true}", C("v", "gt", "5")), 1);
    CHECK_INT(m("{\"v\":\"abc\"}", C("v", "lt", "-3")), 1);
    CHECK_INT(m("{\"v\":[1]}", C("v", "lt", "[1,2]")), 1);
    json_t *a = js("[1]"), *b = js("[1,2]"), *n = json_null(), *five = json_integer(5);
    CHECK(query_compare(a, b) < 0);
    CHECK(query_compare(n, five) > 0);
    CHECK(query_compare(NULL, n) == 0);
    json_decref(a);
    json_decref(b);
    json_decref(five);
}

TEST(exists_missing_prefix)
{
    CHECK_INT(m("{\"n\":null}", CN("n", "exists")), 1);
    CHECK_INT(m("{}", CN("n", "exists")), 0);
    CHECK_INT(m("{}", CN("n", "missing")), 1);
    CHECK_INT(m("{}", CN("id", "exists")), 1); /* the record id always exists */
    CHECK_INT(m("{\"s\":\"hello\"}", C("s", "prefix", "\"he\"")), 1);
    CHECK_INT(m("{\"s\":\"hello\"}", C("s", "prefix", "\"lo\"")), 0);
    CHECK_INT(m("{\"s\":5}", C("s", "prefix", "\"5\"")), 0); /* strings only */
}

TEST(groups_expand_and_errors_name_the_place)
{
    json_t *b =
        js("{\"where\":[{\"field\":\"k\",\"op\":\"eq\",\"value\":1},{\"or\":[[{\"field\":\"a\","
           "\"op\":\"eq\",\"value\":1}],[{\"field\":\"b\",\"op\":\"eq\",\"value\":1}]]}]}");
    query q;
    CHECK_INT(query_parse(b, &q, NULL), 0);
    CHECK_INT(q.ngroups, 2); /* k AND (a OR b) = (k AND a) OR (k AND b) */
    CHECK_INT(q.groups[0].n, 2);
    json_t *d1 = js("{\"k\":1,\"b\":1}"), *d2 = js("{\"a\":1,\"b\":1}");
    CHECK(query_match(&q, NULL, d1));
    CHECK(!query_match(&q, NULL, d2));
    json_decref(d1);
    json_decref(d2);
    query_free(&q);
    json_decref(b);
    struct {
        const char *body, *msg;
    } bad[] = {
        {"{\"where\":[{\"field\":\"k\",\"op\":\"like\",\"value\":1}]}",
         "where[0].op: Unsupported query operator: like"},
        {"{\"where\":[{\"field\":\" \",\"op\":\"eq\",\"value\":1}]}",
         "where[0].field: Query field cannot be empty."},
        {"{\"where\":[{\"field\":\"k\",\"op\":\"in\",\"value\":1}]}",
         "where[0].value: in needs an array."},
        {"{\"limit\":0}", "limit: Query limit must be at least 1."},
        {"{\"orderBy\":[{\"field\":\"k\",\"dir\":\"up\"}]}",
         "orderBy[0].dir: Query order direction must be asc or desc."},
        {"{\"cursor\":\"nope\"}", "cursor: Invalid UUIDv7 value."},
        {"{\"wher\":[]}",
         "Unknown query key 'wher' (where, orderBy, limit, cursor, count, explain)."},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *j = js(bad[i].body);
        storh_err err;
        CHECK_INT(query_parse(j, &q, &err), STORH_EINVAL);
        CHECK_STR(err.msg, bad[i].msg);
        json_decref(j);
    }
}

TEST(stable_sort_and_desc_ties)
{
    json_t *rows = js("[{\"id\":\"a\",\"data\":{\"k\":2}},{\"id\":\"b\",\"data\":{\"k\":1}},"
                      "{\"id\":\"c\",\"data\":{\"k\":2}},{\"id\":\"d\",\"data\":{}}]");
    json_t *b = js("{\"orderBy\":[{\"field\":\"k\",\"dir\":\"desc\"}]}");
    query q;
    CHECK_INT(query_parse(b, &q, NULL), 0);
    query_sort(&q, rows);
    const char *want[] = {"d", "a", "c", "b"}; /* missing = null sorts high; ties keep order */
    for (int i = 0; i < 4; i++)
        CHECK_STR(json_string_value(json_object_get(json_array_get(rows, (size_t)i), "id")),
                  want[i]);
    query_free(&q);
    json_decref(b);
    json_decref(rows);
}

/* compare() across types, as storh's (checked by hand against
 * Storh\QueryCondition::compare for every pair of 17 values): strings <
 * numbers < lists and empty maps < false < null < true < non-empty maps. */
TEST(cross_type_compare_order)
{
    json_t *v[] = {json_stringn("\0", 1),
                   json_string("abc"),
                   json_integer(-3),
                   json_real(2.5),
                   json_real(1e20),
                   json_pack("[i]", 1),
                   json_array(),
                   json_false(),
                   json_null(),
                   json_true(),
                   json_pack("{si}", "a", 1)};
    size_t n = sizeof v / sizeof v[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            int c = query_compare(v[i], v[j]);
            int want = i < j ? -1 : i > j;
            if ((c > 0) - (c < 0) != want) {
                fprintf(stderr, "compare(#%zu, #%zu) = %d\n", i, j, c);
                test_failures++;
            }
        }
    for (size_t i = 0; i < n; i++)
        json_decref(v[i]);
}

static const test_case tests[] = {
    TEST_ENTRY(cross_type_compare_order),
    TEST_ENTRY(equality_is_strict),
    TEST_ENTRY(ordering_operators_and_compare),
    TEST_ENTRY(exists_missing_prefix),
    TEST_ENTRY(groups_expand_and_errors_name_the_place),
    TEST_ENTRY(stable_sort_and_desc_ties),
};
TEST_MAIN(tests)
