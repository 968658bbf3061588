/* test_openapi: the document service/openapi.c builds from the route table:
 * every route is an operation with a unique operationId, every $ref
 * resolves, every operation answers the statuses its inputs can cause, and
 * the served text is plain JSON of that document (not the record encoding,
 * which would turn {} into []). */
#include <string.h>

#include "../test.h"
#include "openapi.h"
#include "routes.h"

static json_t *build(void)
{
    size_t n;
    const route *t = routes_table(&n);
    storh_err err = {0};
    json_t *doc = openapi_build(t, n, "test", &err);
    if (!doc)
        fprintf(stderr, "openapi_build: %s\n", err.msg);
    return doc;
}

static json_t *op_of(json_t *doc, const route *r)
{
    char m[8];
    size_t k = 0;
    for (; r->method[k] && k < sizeof m - 1; k++)
        m[k] = (char)(r->method[k] - 'A' + 'a');
    m[k] = '\0';
    return json_object_get(json_object_get(json_object_get(doc, "paths"), r->pattern), m);
}

TEST(every_route_is_one_operation)
{
    json_t *doc = build();
    CHECK(doc != NULL);
    size_t n;
    const route *t = routes_table(&n);
    json_t *ids = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *op = op_of(doc, &t[i]);
        CHECK(op != NULL);
        const char *id = json_string_value(json_object_get(op, "operationId"));
        CHECK(id != NULL);
        CHECK(json_object_get(ids, id) == NULL);
        json_object_set_new(ids, id, json_true());
    }
    CHECK_INT(json_object_size(ids), n);
    CHECK_STR(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    json_decref(ids);
    json_decref(doc);
}

static void check_refs(json_t *doc, json_t *v, int *refs)
{
    if (json_is_object(v)) {
        const char *ref = json_string_value(json_object_get(v, "$ref"));
        if (ref) {
            CHECK_PREFIX(ref, "#/components/");
            char path[200];
            snprintf(path, sizeof path, "%s", ref + 2);
            json_t *node = doc;
            for (char *save = NULL, *p = strtok_r(path, "/", &save); p && node;
                 p = strtok_r(NULL, "/", &save))
                node = json_object_get(node, p);
            if (!node)
                fprintf(stderr, "unresolved %s\n", ref);
            CHECK(node != NULL);
            (*refs)++;
        }
        const char *k;
        json_t *x;
        json_object_foreach (v, k, x)
            check_refs(doc, x, refs);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach (v, i, x)
            check_refs(doc, x, refs);
    }
}

TEST(every_ref_resolves)
{
    json_t *doc = build();
    int refs = 0;
    check_refs(doc, doc, &refs);
    CHECK(refs > 200);
    json_decref(doc);
}

static bool has(json_t *op, const char *status)
{
    return json_object_get(json_object_get(op, "responses"), status) != NULL;
}

TEST(statuses_follow_the_inputs)
{
    json_t *doc = build();
    size_t n;
    const route *t = routes_table(&n);
    for (size_t i = 0; i < n; i++) {
        const route *r = &t[i];
        json_t *op = op_of(doc, r);
        bool input = strchr(r->pattern, '{') || r->query || r->body != ROUTE_BODY_NONE;
        bool guarded = !strncmp(r->pattern, "/v1/", 4) || !strncmp(r->pattern, "/rpc/", 5);
        CHECK(has(op, "500") && has(op, "503"));
        CHECK(!input || has(op, "400"));
        CHECK(!guarded || has(op, "401"));
        CHECK(!(guarded && r->scope) || has(op, "403"));
        CHECK(r->body == ROUTE_BODY_NONE || (has(op, "413") && has(op, "415")));
        CHECK(r->body == ROUTE_BODY_NONE || json_object_get(op, "requestBody"));
        bool ok2xx = false;
        const char *st;
        json_t *x;
        json_object_foreach (json_object_get(op, "responses"), st, x)
            ok2xx |= st[0] == '2';
        CHECK(ok2xx);
        /* the bearer requirement carries the route's scope */
        json_t *sec = json_array_get(json_object_get(op, "security"), 0);
        CHECK(guarded == (sec != NULL));
        if (guarded && r->scope)
            CHECK_STR(json_string_value(json_array_get(json_object_get(sec, "bearer"), 0)),
                      r->scope);
    }
    json_decref(doc);
}

TEST(served_text_is_plain_json)
{
    size_t len;
    const char *text = routes_openapi(&len);
    CHECK(text != NULL);
    CHECK_INT(strlen(text), len);
    json_t *served = json_loadb(text, len, 0, NULL);
    json_t *doc = build();
    json_t *info = json_object_get(served, "info");
    json_object_set_new(info, "version", json_string("test"));
    CHECK(json_equal(served, doc));
    /* the media types of request bodies are objects, as the spec says */
    CHECK(strstr(text, "\"application/json\":[]") == NULL);
    CHECK(strstr(text, "\"application/json\":{\"schema\"") != NULL);
    json_decref(served);
    json_decref(doc);
}

TEST(a_missing_component_is_an_error)
{
    static const route bad[] = {
        {.method = "GET", .pattern = "/x", .op = "x", .summary = "x", .res = "200:NoSuchSchema"}};
    storh_err err = {0};
    CHECK(openapi_build(bad, 1, "t", &err) == NULL);
    CHECK(strstr(err.msg, "NoSuchSchema") != NULL);
    static const route noop[] = {{.method = "GET", .pattern = "/x", .summary = "x", .res = "200"}};
    CHECK(openapi_build(noop, 1, "t", &err) == NULL);
    CHECK(strstr(err.msg, "operationId") != NULL);
}

static const test_case tests[] = {
    TEST_ENTRY(every_route_is_one_operation),    TEST_ENTRY(every_ref_resolves),
    TEST_ENTRY(statuses_follow_the_inputs),      TEST_ENTRY(served_text_is_plain_json),
    TEST_ENTRY(a_missing_component_is_an_error),
};
TEST_MAIN(tests)
