#include "routes.h"

#include <ctype.h>
#include <pthread.h>
#include <string.h>

#include "h_docs.h"
#include "h_system.h"

#define DOCS "/v1/docs/{collection}"

static const route table[] = {
    {"GET", "/healthz", h_healthz, NULL, NULL, ROUTE_BODY_NONE, NULL, "Process is alive."},
    {"GET", "/readyz", h_readyz, NULL, NULL, ROUTE_BODY_NONE, NULL,
     "Storage root writable (and dependencies reachable)."},
    {"GET", "/metrics", h_metrics, NULL, NULL, ROUTE_BODY_NONE, NULL,
     "Prometheus metrics (text format 0.0.4)."},
    {"GET", "/openapi.json", h_openapi, NULL, NULL, ROUTE_BODY_NONE, NULL,
     "This API described as OpenAPI 3."},
    {"GET", "/v1/uuid", h_uuid_new, NULL, NULL, ROUTE_BODY_NONE, NULL,
     "New monotonic UUIDv7 ids (?count=1..1000)."},
    {"GET", "/v1/uuid/{uuid}", h_uuid_check, NULL, NULL, ROUTE_BODY_NONE, NULL,
     "Validate a UUIDv7 and read its timestamp."},
    {"POST", DOCS, h_docs_create, NULL, NULL, ROUTE_BODY_JSON, "docs:write",
     "Create a record with a new id; body = data object."},
    {"GET", DOCS, h_docs_list, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Stream records as NDJSON (after, limit, from_ms, until_ms, eq.FIELD)."},
    {"POST", DOCS "/_bulk", h_docs_bulk_end, h_docs_bulk_begin, h_docs_bulk_body, ROUTE_BODY_NDJSON,
     "docs:write",
     "Write NDJSON rows (data objects or {id,data}); ?mode=import for importJsonl rows."},
    {"GET", DOCS "/_export", h_docs_export, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Export every record as NDJSON in id order."},
    {"GET", DOCS "/_stats", h_docs_stats, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Record count, bytes, corrupt records, indexes."},
    {"GET", DOCS "/_health", h_docs_health, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Health of the collection: ok, errors, stats."},
    {"GET", DOCS "/{id}", h_docs_get, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Read one record (ETag, If-None-Match -> 304)."},
    {"PUT", DOCS "/{id}", h_docs_put, NULL, NULL, ROUTE_BODY_JSON, "docs:write",
     "Write a record under an explicit id (200 replaced, 201 new)."},
    {"DELETE", DOCS "/{id}", h_docs_delete, NULL, NULL, ROUTE_BODY_NONE, "docs:write",
     "Delete a record (204, 404 when absent)."},
};

const route *routes_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

static json_t *openapi_doc;
static pthread_once_t openapi_once = PTHREAD_ONCE_INIT;

static json_t *path_params(const char *pattern)
{
    json_t *params = json_array();
    for (const char *p = strchr(pattern, '{'); p; p = strchr(p + 1, '{')) {
        const char *e = strchr(p, '}');
        if (!e)
            break;
        json_t *name = json_stringn(p + 1, (size_t)(e - p - 1));
        json_array_append_new(params, json_pack("{sosssbs{ss}}", "name", name, "in", "path",
                                                "required", 1, "schema", "type", "string"));
    }
    return params;
}

static void build_openapi(void)
{
    json_t *paths = json_object();
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const route *r = &table[i];
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
        json_t *op = json_pack("{sssos{s{ss}}}", "summary", r->summary, "parameters",
                               path_params(r->pattern), "responses", "default", "description",
                               "JSON body, or {\"error\":{status,code,message}}");
        if (r->scope)
            json_object_set_new(op, "x-scope", json_string(r->scope));
        if (r->body != ROUTE_BODY_NONE) {
            const char *ct =
                r->body == ROUTE_BODY_NDJSON ? "application/x-ndjson" : "application/json";
            json_object_set_new(
                op, "requestBody",
                json_pack("{sbs{s{}}}", "required", r->body != ROUTE_BODY_JSON_OPT, "content", ct));
        }
        json_object_set_new(item, method, op);
    }
    openapi_doc = json_pack("{sss{ssss}so}", "openapi", "3.0.3", "info", "title", "storhd",
                            "version", STORHD_VERSION, "paths", paths);
}

const json_t *routes_openapi(void)
{
    pthread_once(&openapi_once, build_openapi);
    return openapi_doc;
}
