#include "openapi.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char openapi_components_json[];
extern const size_t openapi_components_len;

#define MAX_STATUSES 16

static const struct {
    int status;
    const char *what;
} error_text[] = {
    {400, "Bad request: a bad name or id in the path, a bad query parameter, malformed JSON "
          "(with line and column) or a body the route does not take. Nothing changed."},
    {401, "No bearer token, or one that does not verify (when auth is configured)."},
    {403, "The token lacks the route's scope."},
    {404, "Not found: the record, log, queue, mirror or function does not exist."},
    {409, "Conflict: a unique index already holds the value, or the job is not processing."},
    {413, "The body, or one NDJSON line, is over --max-body (also when sent chunked)."},
    {415, "The Content-Type is not the route's media type."},
    {422, "The record violates the collection's schema (the message names the field)."},
    {500, "Internal error (I/O or corrupt data); nothing was acknowledged."},
    {503, "Out of memory or descriptors, the open-engine budget full, a dependency unavailable, "
          "or the page RPC's PostgreSQL pool saturated; retry after Retry-After."},
    {504, "The page RPC's PostgreSQL call ran over --rpc-timeout and was cancelled."},
    {507, "The disk is full; nothing was written."},
};

static const struct {
    const char *prefix, *tag, *what;
} tags[] = {
    {"/v1/docs/", "docs", "The DocStore: one record per file, indexes, queries, maintenance."},
    {"/v1/filter", "docs", NULL},
    {"/v1/logs/", "logs", "The segmented log: appends, streams, queries, retention."},
    {"/v1/queues/", "queues", "The job queue: enqueue, claim (long poll), complete, requeue."},
    {"/v1/mirror", "mirror", "SQL mirrors of the collections (SQLite, PostgreSQL)."},
    {"/rpc/", "rpc", "The JWT-guarded page RPC into PostgreSQL."},
    {"/", "system", "Liveness, readiness, metrics, this document, UUIDv7 ids."},
};

static const char *tag_of(const char *pattern)
{
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (!strncmp(pattern, tags[i].prefix, strlen(tags[i].prefix)))
            return tags[i].tag;
    return "system";
}

static json_t *ref(const char *kind, const char *name, size_t len)
{
    char s[160];
    snprintf(s, sizeof s, "#/components/%s/%.*s", kind, (int)len, name);
    return json_pack("{ss}", "$ref", s);
}

/* A reference to components/<kind>/<name>, or an error when it is missing. */
static json_t *ref_checked(json_t *comps, const char *kind, const char *name, size_t len,
                           const route *r, storh_err *err)
{
    json_t *set = json_object_get(comps, kind);
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)len, name);
    if (!json_object_get(set, key)) {
        storh_err_set(err, STORH_EINVAL, "%s %s names %s '%s', which is not in components.json",
                      r->method, r->pattern, kind, key);
        return NULL;
    }
    return ref(kind, name, len);
}

static json_t *parameters(json_t *comps, const route *r, storh_err *err)
{
    json_t *out = json_array();
    for (const char *p = strchr(r->pattern, '{'); p; p = strchr(p + 1, '{')) {
        const char *e = strchr(p, '}');
        json_t *x = e ? ref_checked(comps, "parameters", p + 1, (size_t)(e - p - 1), r, err) : NULL;
        if (!x)
            goto fail;
        json_array_append_new(out, x);
    }
    for (const char *p = r->query; p && *p;) {
        size_t n = strcspn(p, " ");
        json_t *x = ref_checked(comps, "parameters", p, n, r, err);
        if (!x)
            goto fail;
        json_array_append_new(out, x);
        p += n + (p[n] == ' ');
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

static json_t *request_body(json_t *comps, const route *r, storh_err *err)
{
    json_t *schema = ref_checked(comps, "schemas", r->req, strlen(r->req), r, err);
    if (!schema)
        return NULL;
    bool nd = r->body == ROUTE_BODY_NDJSON;
    return json_pack("{sbsss{s{so}}}", "required", r->body != ROUTE_BODY_JSON_OPT, "description",
                     nd ? "NDJSON, one row per line, streamed (never buffered whole); a bad line "
                          "anywhere (reported as \"Line N: ...\") leaves the store as it was."
                     : r->body == ROUTE_BODY_JSON_OPT ? "JSON; an empty body takes the defaults."
                                                      : "JSON.",
                     "content", nd ? "application/x-ndjson" : "application/json", "schema", schema);
}

static const char *success_text(int status)
{
    switch (status) {
    case 201:
        return "Created.";
    case 204:
        return "No content (a claim: no job became pending within wait_ms).";
    case 304:
        return "Not modified: If-None-Match matched the ETag.";
    default:
        return "OK.";
    }
}

/* One token of route.res: "STATUS[:SCHEMA][+HEADER...]". */
static json_t *response(json_t *comps, const route *r, const char *tok, size_t len, int *status,
                        storh_err *err)
{
    char t[128];
    snprintf(t, sizeof t, "%.*s", (int)len, tok);
    char *end;
    long st = strtol(t, &end, 10);
    if (st < 100 || st > 599 || (*end && *end != ':' && *end != '+')) {
        storh_err_set(err, STORH_EINVAL, "%s %s: bad status token '%s'", r->method, r->pattern, t);
        return NULL;
    }
    *status = (int)st;
    char *hdrs = strchr(end, '+');
    if (hdrs)
        *hdrs++ = '\0';
    const char *schema = *end == ':' ? end + 1 : NULL;
    if (st >= 400 && !schema)
        return ref("responses", t, strlen(t));
    json_t *o = json_pack("{ss}", "description",
                          st >= 400 ? "The body says what failed." : success_text((int)st));
    if (schema && !strcmp(schema, "text")) {
        json_object_set_new(o, "content",
                            json_pack("{s{s{ss}}}", "text/plain", "schema", "type", "string"));
    } else if (schema) {
        bool nd = !strncmp(schema, "ndjson:", 7);
        const char *name = nd ? schema + 7 : schema;
        json_t *s = ref_checked(comps, "schemas", name, strlen(name), r, err);
        if (!s) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(
            o, "content",
            json_pack("{s{so}}", nd ? "application/x-ndjson" : "application/json", "schema", s));
        if (nd)
            json_object_set_new(
                o, "description",
                json_string("A stream of rows, one JSON value per line, chunked. A stream that "
                            "fails midway is cut without its last chunk: the client sees a "
                            "transfer error, never a complete-looking short stream."));
    }
    json_t *h = json_object();
    for (char *x = hdrs; x && *x;) {
        char *next = strchr(x, '+');
        if (next)
            *next++ = '\0';
        json_t *hr = ref_checked(comps, "headers", x, strlen(x), r, err);
        if (!hr) {
            json_decref(h);
            json_decref(o);
            return NULL;
        }
        json_object_set_new(h, x, hr);
        x = next;
    }
    if (json_object_size(h))
        json_object_set_new(o, "headers", h);
    else
        json_decref(h);
    return o;
}

static void add_status(int *list, int *n, int status)
{
    for (int i = 0; i < *n; i++)
        if (list[i] == status)
            return;
    if (*n < MAX_STATUSES)
        list[(*n)++] = status;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static json_t *responses(json_t *comps, const route *r, bool guarded, storh_err *err)
{
    json_t *declared = json_object();
    int statuses[MAX_STATUSES], n = 0;
    for (const char *p = r->res; *p;) {
        size_t len = strcspn(p, " ");
        int st;
        json_t *x = response(comps, r, p, len, &st, err);
        if (!x) {
            json_decref(declared);
            return NULL;
        }
        char key[8];
        snprintf(key, sizeof key, "%d", st);
        json_object_set_new(declared, key, x);
        add_status(statuses, &n, st);
        p += len + (p[len] == ' ');
    }
    /* what the HTTP layer answers before or around the handler */
    if (strchr(r->pattern, '{') || r->query || r->body != ROUTE_BODY_NONE)
        add_status(statuses, &n, 400);
    if (guarded)
        add_status(statuses, &n, 401);
    if (guarded && r->scope)
        add_status(statuses, &n, 403);
    if (r->body != ROUTE_BODY_NONE) {
        add_status(statuses, &n, 413);
        add_status(statuses, &n, 415);
    }
    add_status(statuses, &n, 500);
    add_status(statuses, &n, 503);
    qsort(statuses, (size_t)n, sizeof statuses[0], cmp_int);
    json_t *out = json_object();
    for (int i = 0; i < n; i++) {
        char key[8];
        snprintf(key, sizeof key, "%d", statuses[i]);
        json_t *x = json_object_get(declared, key);
        json_object_set_new(out, key, x ? json_incref(x) : ref("responses", key, strlen(key)));
    }
    json_decref(declared);
    return out;
}

static json_t *operation(json_t *comps, const route *r, storh_err *err)
{
    if (!r->op || !r->summary || !r->res) {
        storh_err_set(err, STORH_EINVAL, "%s %s: operationId, summary and res are required",
                      r->method, r->pattern);
        return NULL;
    }
    bool guarded = r->auth == ROUTE_AUTH_TOKEN;
    json_t *params = parameters(comps, r, err);
    json_t *resp = params ? responses(comps, r, guarded, err) : NULL;
    json_t *body = resp && r->req ? request_body(comps, r, err) : NULL;
    if (!params || !resp || (r->req && !body)) {
        json_decref(params);
        json_decref(resp);
        return NULL;
    }
    json_t *op = json_pack("{sss[s]ssso}", "operationId", r->op, "tags", tag_of(r->pattern),
                           "summary", r->summary, "parameters", params);
    if (body)
        json_object_set_new(op, "requestBody", body);
    json_object_set_new(op, "responses", resp);
    json_t *sec = json_array();
    if (guarded)
        json_array_append_new(sec, json_pack("{s[s*]}", "bearer", r->scope));
    json_object_set_new(op, "security", sec);
    if (r->scope)
        json_object_set_new(op, "x-scope", json_string(r->scope));
    return op;
}

/* components/responses: one per error status, the error object with an
 * example of that status. */
static json_t *error_responses(void)
{
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof error_text / sizeof error_text[0]; i++) {
        int st = error_text[i].status;
        char key[8];
        snprintf(key, sizeof key, "%d", st);
        json_t *ex = json_pack("{s{siss}}", "error", "status", st, "message", error_text[i].what);
        static const char *const codes[] = {"bad_request",
                                            "unauthorized",
                                            "forbidden",
                                            "not_found",
                                            "conflict",
                                            "payload_too_large",
                                            "unsupported_media_type",
                                            "schema_violation",
                                            "internal_error",
                                            "unavailable",
                                            "timeout",
                                            "insufficient_storage"};
        json_object_set_new(json_object_get(ex, "error"), "code", json_string(codes[i]));
        json_t *o = json_pack("{sss{s{s{ss}so}}}", "description", error_text[i].what, "content",
                              "application/json", "schema", "$ref", "#/components/schemas/Error",
                              "example", ex);
        if (st == 401)
            json_object_set_new(o, "headers",
                                json_pack("{s{ss}}", "WWW-Authenticate", "$ref",
                                          "#/components/headers/WWW-Authenticate"));
        if (st == 503)
            json_object_set_new(
                o, "headers",
                json_pack("{s{ss}}", "Retry-After", "$ref", "#/components/headers/Retry-After"));
        json_object_set_new(out, key, o);
    }
    return out;
}

static json_t *tag_list(void)
{
    json_t *out = json_array();
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (tags[i].what)
            json_array_append_new(
                out, json_pack("{ssss}", "name", tags[i].tag, "description", tags[i].what));
    return out;
}

json_t *openapi_build(const route *table, size_t n, const char *version, storh_err *err)
{
    json_error_t jerr;
    json_t *comps = json_loadb(openapi_components_json, openapi_components_len, 0, &jerr);
    if (!comps) {
        storh_err_set(err, STORH_EINVAL, "components.json line %d: %s", jerr.line, jerr.text);
        return NULL;
    }
    json_object_set_new(comps, "responses", error_responses());
    json_t *paths = json_object();
    for (size_t i = 0; i < n; i++) {
        const route *r = &table[i];
        json_t *op = operation(comps, r, err);
        if (!op) {
            json_decref(paths);
            json_decref(comps);
            return NULL;
        }
        json_t *item = json_object_get(paths, r->pattern);
        if (!item) {
            item = json_object();
            json_object_set_new(paths, r->pattern, item);
        }
        char method[8];
        size_t k = 0;
        for (; k < sizeof method - 1 && r->method[k]; k++)
            method[k] = (char)tolower((unsigned char)r->method[k]);
        method[k] = '\0';
        json_object_set_new(item, method, op);
    }
    json_t *servers =
        json_pack("[{sssss{s{ss}s{s[ss]ssss}}}]", "url", "{scheme}://{host}", "description",
                  "A storhd (scripts/run.sh listens on 127.0.0.1:8080)", "variables", "host",
                  "default", "127.0.0.1:8080", "scheme", "enum", "http", "https", "default", "http",
                  "description", "https behind a TLS-terminating proxy");
    json_t *info = json_pack(
        "{sssssss{ssss}}", "title", "storhd", "version", version, "description",
        "Durable file-first records over HTTP: a document store with indexes, a segmented log, a "
        "job queue, SQL mirrors and a JWT-guarded page RPC into PostgreSQL. Bodies are JSON, "
        "bulk bodies and streams NDJSON (the schema of an application/x-ndjson media type is "
        "the schema of one line). Every error is the Error object. Records are returned in "
        "storh's canonical form (an empty object as []).",
        "contact", "name", "storhd", "url", "https://github.com/inline0/storh");
    return json_pack("{sssososososo}", "openapi", "3.1.0", "info", info, "servers", servers, "tags",
                     tag_list(), "paths", paths, "components", comps);
}
