#include "routes.h"

#include <ctype.h>
#include <pthread.h>
#include <string.h>

#include "h_docadmin.h"
#include "h_docs.h"
#include "h_logs.h"
#include "h_mirror.h"
#include "h_queues.h"
#include "h_rpc.h"
#include "h_system.h"

#define DOCS "/v1/docs/{collection}"
#define LOGS "/v1/logs/{stream}"
#define QUEUES "/v1/queues/{queue}"

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
    {"POST", "/rpc/{function}", h_rpc, NULL, NULL, ROUTE_BODY_JSON, NULL,
     "Call an allow-listed PostgreSQL function with a JSON object of arguments -> rows."},
    {"POST", "/v1/mirror/install", h_mirror_install, NULL, NULL, ROUTE_BODY_NONE, "mirror:admin",
     "Create the mirror tables (?mirror=, ?collection=)."},
    {"DELETE", "/v1/mirror", h_mirror_uninstall, NULL, NULL, ROUTE_BODY_NONE, "mirror:admin",
     "Drop the mirror tables."},
    {"POST", "/v1/mirror/push", h_mirror_push, NULL, NULL, ROUTE_BODY_NONE, "mirror:admin",
     "Push changes by content hash, one transaction per collection (?collection=)."},
    {"POST", "/v1/mirror/flush", h_mirror_flush, NULL, NULL, ROUTE_BODY_JSON, "mirror:admin",
     "Write these ids now: {collection, ids} -> {upserted, deleted}."},
    {"POST", "/v1/mirror/pull", h_mirror_pull, NULL, NULL, ROUTE_BODY_NONE, "mirror:admin",
     "Restore records from the mirror (never deletes local records)."},
    {"GET", "/v1/mirror/verify", h_mirror_verify, NULL, NULL, ROUTE_BODY_NONE, "mirror:admin",
     "Missing, stale and orphaned rows per collection."},
    {"POST", "/v1/mirror/rebuild", h_mirror_rebuild, NULL, NULL, ROUTE_BODY_NONE, "mirror:admin",
     "Empty the tables, then push."},
    {"POST", "/v1/filter", h_filter, NULL, NULL, ROUTE_BODY_JSON, NULL,
     "Filter posted rows with a where list: {rows:[...], where:[...]} -> {rows}."},
    {"POST", DOCS, h_docs_create, NULL, NULL, ROUTE_BODY_JSON, "docs:write",
     "Create a record with a new id; body = data object."},
    {"GET", DOCS, h_docs_list, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Stream records as NDJSON (after, limit, from_ms, until_ms, eq.FIELD). A stream that fails "
     "midway ends without the terminating chunk (a client error), never as a complete body."},
    {"POST", DOCS "/_bulk", h_docs_bulk_end, h_docs_bulk_begin, h_docs_bulk_body, ROUTE_BODY_NDJSON,
     "docs:write",
     "Write NDJSON rows (data objects or {id,data}); ?mode=import for importJsonl rows."},
    {"GET", DOCS "/_export", h_docs_export, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Export every record as NDJSON in id order. A stream that fails midway ends without the "
     "terminating chunk (a client error), never as a complete body."},
    {"GET", DOCS "/_stats", h_docs_stats, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Record count, bytes, corrupt records, indexes."},
    {"GET", DOCS "/_health", h_docs_health, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Health of the collection: ok, errors, stats."},
    {"POST", DOCS "/_query", h_docs_query, NULL, NULL, ROUTE_BODY_JSON, "docs:read",
     "Query: where (eq neq in notIn gt gte lt lte between exists missing prefix, or groups), "
     "orderBy, limit, cursor, count, explain."},
    {"GET", DOCS "/_indexes", h_docs_indexes_get, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Index definitions."},
    {"PUT", DOCS "/_indexes", h_docs_indexes_put, NULL, NULL, ROUTE_BODY_JSON, "docs:admin",
     "Add index definitions {fields:[{field,unique,range}]}; rebuilds when changed."},
    {"GET", DOCS "/_schema", h_docs_schema_get, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "The collection's schema."},
    {"PUT", DOCS "/_schema", h_docs_schema_put, NULL, NULL, ROUTE_BODY_JSON, "docs:admin",
     "Set the schema {fields:{name:{type,required,index,unique,range}}}; 422 on violations."},
    {"GET", DOCS "/_verify", h_docs_verify, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Corrupt records and index drift against a full scan."},
    {"POST", DOCS "/_repair", h_docs_repair, NULL, NULL, ROUTE_BODY_NONE, "docs:admin",
     "Quarantine corrupt records to .storh/corrupt/, rebuild indexes."},
    {"POST", DOCS "/_reindex", h_docs_reindex, NULL, NULL, ROUTE_BODY_NONE, "docs:admin",
     "Rebuild every index entry from the records."},
    {"POST", DOCS "/_compact", h_docs_compact, NULL, NULL, ROUTE_BODY_NONE, "docs:admin",
     "storh's compact(): a report, nothing to do for per-file records."},
    {"GET", DOCS "/{id}", h_docs_get, NULL, NULL, ROUTE_BODY_NONE, "docs:read",
     "Read one record (ETag, If-None-Match -> 304)."},
    {"PUT", DOCS "/{id}", h_docs_put, NULL, NULL, ROUTE_BODY_JSON, "docs:write",
     "Write a record under an explicit id (200 replaced, 201 new)."},
    {"DELETE", DOCS "/{id}", h_docs_delete, NULL, NULL, ROUTE_BODY_NONE, "docs:write",
     "Delete a record (204, 404 when absent)."},

    {"POST", LOGS, h_logs_append, NULL, NULL, ROUTE_BODY_JSON, "logs:write",
     "Append one record (201 {id,data}); durable on return, fsyncs shared."},
    {"GET", LOGS, h_logs_list, NULL, NULL, ROUTE_BODY_NONE, "logs:read",
     "Stream live records in log order as NDJSON (after, limit, from_ms, until_ms, eq.FIELD). A "
     "stream that fails midway ends without the terminating chunk (a client error)."},
    {"POST", LOGS "/_bulk", h_logs_bulk_end, h_logs_bulk_begin, h_logs_bulk_body, ROUTE_BODY_NDJSON,
     "logs:write", "Append NDJSON rows; all or nothing, one fsync."},
    {"POST", LOGS "/_query", h_logs_query, NULL, NULL, ROUTE_BODY_JSON, "logs:read",
     "Query the live records (same body as docs _query; a scan in log order)."},
    {"POST", LOGS "/_compact", h_logs_compact, NULL, NULL, ROUTE_BODY_NONE, "logs:admin",
     "Compact sealed segments (drops superseded versions and tombstones)."},
    {"POST", LOGS "/_retain", h_logs_retain, NULL, NULL, ROUTE_BODY_JSON, "logs:admin",
     "Delete records older than {older_than_days} (or older_than_ms), then compact."},
    {"GET", LOGS "/_stats", h_logs_stats, NULL, NULL, ROUTE_BODY_NONE, "logs:read",
     "segments, records, deleted, bytes."},
    {"GET", LOGS "/_verify", h_logs_verify, NULL, NULL, ROUTE_BODY_NONE, "logs:read",
     "Bad lines, state drift: {ok, errors, stats}."},
    {"POST", LOGS "/_repair", h_logs_repair, NULL, NULL, ROUTE_BODY_NONE, "logs:admin",
     "Quarantine bad lines to .storh/corrupt/ and recover."},
    {"GET", LOGS "/{id}", h_logs_get, NULL, NULL, ROUTE_BODY_NONE, "logs:read",
     "Read one live record."},
    {"DELETE", LOGS "/{id}", h_logs_delete, NULL, NULL, ROUTE_BODY_NONE, "logs:write",
     "Append a tombstone (204; 404 when not live)."},

    {"POST", QUEUES "/jobs", h_queues_enqueue, NULL, NULL, ROUTE_BODY_JSON, "queues:write",
     "Enqueue one job (object) or many (array) -> 201 {ids}."},
    {"POST", QUEUES "/claim", h_queues_claim, NULL, NULL, ROUTE_BODY_NONE, "queues:write",
     "Claim up to limit jobs (200 {jobs}, 204 none); wait_ms long-polls."},
    {"POST", QUEUES "/jobs/{id}/complete", h_queues_complete_one, NULL, NULL, ROUTE_BODY_NONE,
     "queues:write", "Complete one processing job (?keep_done=true|false)."},
    {"POST", QUEUES "/complete", h_queues_complete_many, NULL, NULL, ROUTE_BODY_JSON,
     "queues:write", "Complete {ids:[...]} (?keep_done)."},
    {"POST", QUEUES "/requeue", h_queues_requeue, NULL, NULL, ROUTE_BODY_JSON_OPT, "queues:write",
     "Requeue jobs processing for at least {timeout_seconds}."},
    {"POST", QUEUES "/purge", h_queues_purge, NULL, NULL, ROUTE_BODY_JSON_OPT, "queues:write",
     "Purge done jobs older than {older_than_seconds} (0: all)."},
    {"GET", QUEUES, h_queues_stats, NULL, NULL, ROUTE_BODY_NONE, "queues:read",
     "pending, processing, done, bytes."},
    {"GET", QUEUES "/_verify", h_queues_verify, NULL, NULL, ROUTE_BODY_NONE, "queues:read",
     "Bad lines, state drift: {ok, errors, stats}."},
    {"POST", QUEUES "/_repair", h_queues_repair, NULL, NULL, ROUTE_BODY_NONE, "queues:admin",
     "Quarantine bad lines, requeue jobs processing > timeout_seconds (3600)."},
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
