#include "routes.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "h_docadmin.h"
#include "h_docs.h"
#include "h_logs.h"
#include "h_mirror.h"
#include "h_queues.h"
#include "h_rpc.h"
#include "h_system.h"
#include "openapi.h"

#define DOCS "/v1/docs/{collection}"
#define LOGS "/v1/logs/{stream}"
#define QUEUES "/v1/queues/{queue}"

/* One route: method, pattern, handler, then designated fields (route.h). */
#define ROUTE(m, p, h, ...)                                                                        \
    {                                                                                              \
        .method = m, .pattern = p, .handler = h, __VA_ARGS__                                       \
    }
#define BULK(first, chunk) .on_begin = first, .on_body = chunk, .body = ROUTE_BODY_NDJSON
#define JSON_BODY .body = ROUTE_BODY_JSON
/* on the work pool: it writes, waits on a lock or a mutex, or scans */
#define POOL .run = ROUTE_RUN_POOL
/* on the side pool: probes and operator reads that may wait or scan */
#define SIDE .run = ROUTE_RUN_SIDE
/* answered without a token even when JWT auth is on (probes, scrapes) */
#define PUBLIC .auth = ROUTE_AUTH_NONE
#define LIST_QUERY "after limit from_ms until_ms eq"

static const route table[] = {
    ROUTE("GET", "/healthz", h_healthz, PUBLIC, .op = "getHealth", .summary = "Process is alive.",
          .res = "200:Health"),
    ROUTE("GET", "/readyz", h_readyz, SIDE, PUBLIC, .op = "getReady",
          .summary = "Storage root writable (and dependencies reachable).",
          .res = "200:Ready 503:NotReady"),
    ROUTE("GET", "/metrics", h_metrics, SIDE, PUBLIC, .op = "getMetrics",
          .summary = "Prometheus metrics (text format 0.0.4).", .res = "200:text"),
    ROUTE("GET", "/openapi.json", h_openapi, PUBLIC, .op = "getOpenApi",
          .summary = "This API described as OpenAPI 3.1.", .res = "200:OpenApi"),
    ROUTE("GET", "/v1/uuid", h_uuid_new, .op = "newUuids",
          .summary = "New monotonic UUIDv7 ids (?count=1..1000).", .query = "count",
          .res = "200:UuidList"),
    ROUTE("GET", "/v1/uuid/{uuid}", h_uuid_check, .op = "checkUuid",
          .summary = "Validate a UUIDv7 and read its timestamp.", .res = "200:UuidCheck"),
    ROUTE("POST", "/rpc/{function}", h_rpc, JSON_BODY, .run = ROUTE_RUN_LOOP_FIRST,
          .on_loop = h_rpc_hit, .op = "callRpc",
          .summary = "Call an allow-listed PostgreSQL function with a JSON object of arguments -> "
                     "rows.",
          .query = "if_none_match", .req = "RpcArgs",
          .res = "200:RpcRows+ETag+Cache-Control+X-Cache 304+ETag 404 503+Retry-After 504"),
    ROUTE("POST", "/v1/mirror/install", h_mirror_install, POOL, .scope = "mirror:admin",
          .op = "installMirror", .summary = "Create the mirror tables (?mirror=, ?collection=).",
          .query = "mirror mirror_collection", .res = "200:MirrorTables 404"),
    ROUTE("DELETE", "/v1/mirror", h_mirror_uninstall, POOL, .scope = "mirror:admin",
          .op = "uninstallMirror", .summary = "Drop the mirror tables.",
          .query = "mirror mirror_collection", .res = "200:MirrorDropped 404"),
    ROUTE("POST", "/v1/mirror/push", h_mirror_push, POOL, .scope = "mirror:admin",
          .op = "pushMirror",
          .summary = "Push changes by content hash, one transaction per collection "
                     "(?collection=).",
          .query = "mirror mirror_collection", .res = "200:PushReport 404"),
    ROUTE("POST", "/v1/mirror/flush", h_mirror_flush, POOL, JSON_BODY, .scope = "mirror:admin",
          .op = "flushMirror",
          .summary = "Write these ids now: {collection, ids} -> {upserted, deleted}.",
          .query = "mirror", .req = "Flush", .res = "200:Flushed 404"),
    ROUTE("POST", "/v1/mirror/pull", h_mirror_pull, POOL, .scope = "mirror:admin",
          .op = "pullMirror",
          .summary = "Restore records from the mirror (never deletes local records).",
          .query = "mirror mirror_collection", .res = "200:PullReport 404 507"),
    ROUTE("GET", "/v1/mirror/verify", h_mirror_verify, POOL, .scope = "mirror:admin",
          .op = "verifyMirror", .summary = "Missing, stale and orphaned rows per collection.",
          .query = "mirror mirror_collection", .res = "200:MirrorCheck 404"),
    ROUTE("POST", "/v1/mirror/rebuild", h_mirror_rebuild, POOL, .scope = "mirror:admin",
          .op = "rebuildMirror", .summary = "Empty the tables, then push.",
          .query = "mirror mirror_collection", .res = "200:PushReport 404"),
    ROUTE("POST", "/v1/filter", h_filter, JSON_BODY, .op = "filterRows",
          .summary = "Filter posted rows with a where list: {rows:[...], where:[...]} -> {rows}.",
          .req = "FilterRequest", .res = "200:FilterResult"),
    ROUTE("POST", DOCS, h_docs_create, POOL, JSON_BODY, .scope = "docs:write", .op = "createDoc",
          .summary = "Create a record with a new id; body = data object.", .req = "DataIn",
          .res = "201:Record+ETag+Location 409 422 507"),
    ROUTE("GET", DOCS, h_docs_list, .scope = "docs:read", .op = "listDocs",
          .summary = "Stream records as NDJSON (after, limit, from_ms, until_ms, eq.FIELD). A "
                     "stream that fails midway ends without the terminating chunk (a client "
                     "error), never as a complete body.",
          .query = LIST_QUERY, .res = "200:ndjson:Record"),
    ROUTE("POST", DOCS "/_bulk", h_docs_bulk_end, POOL, BULK(h_docs_bulk_begin, h_docs_bulk_body),
          .scope = "docs:write", .op = "bulkDocs",
          .summary = "Write NDJSON rows (data objects or {id,data}); ?mode=import for importJsonl "
                     "rows.",
          .query = "mode", .req = "BulkRow", .res = "200:BulkResult 409 422 507"),
    ROUTE("GET", DOCS "/_export", h_docs_export, .scope = "docs:read", .op = "exportDocs",
          .summary = "Export every record as NDJSON in id order. A stream that fails midway ends "
                     "without the terminating chunk (a client error), never as a complete body.",
          .res = "200:ndjson:Record"),
    ROUTE("GET", DOCS "/_stats", h_docs_stats, SIDE, .scope = "docs:read", .op = "getDocStats",
          .summary = "Record count, bytes, corrupt records, indexes.",
          .res = "200:CollectionStats"),
    ROUTE("GET", DOCS "/_health", h_docs_health, SIDE, .scope = "docs:read", .op = "getDocHealth",
          .summary = "Health of the collection: ok, errors, stats.", .res = "200:CollectionCheck"),
    ROUTE("POST", DOCS "/_query", h_docs_query, POOL, JSON_BODY, .scope = "docs:read",
          .op = "queryDocs",
          .summary = "Query: where (eq neq in notIn gt gte lt lte between exists missing prefix, "
                     "or groups), orderBy, limit, cursor, count, explain.",
          .req = "Query", .res = "200:QueryResult"),
    ROUTE("GET", DOCS "/_indexes", h_docs_indexes_get, .scope = "docs:read", .op = "getDocIndexes",
          .summary = "Index definitions.", .res = "200:Indexes"),
    ROUTE("PUT", DOCS "/_indexes", h_docs_indexes_put, POOL, JSON_BODY, .scope = "docs:admin",
          .op = "putDocIndexes",
          .summary =
              "Add index definitions {fields:[{field,unique,range}]}; rebuilds when changed.",
          .query = "rebuild", .req = "Indexes", .res = "200:IndexesChanged 409 507"),
    ROUTE("GET", DOCS "/_schema", h_docs_schema_get, .scope = "docs:read", .op = "getDocSchema",
          .summary = "The collection's schema.", .res = "200:Schema"),
    ROUTE("PUT", DOCS "/_schema", h_docs_schema_put, POOL, JSON_BODY, .scope = "docs:admin",
          .op = "putDocSchema",
          .summary = "Set the schema {fields:{name:{type,required,index,unique,range}}}; 422 on "
                     "violations.",
          .req = "Schema", .res = "200:Schema 409 422 507"),
    ROUTE("GET", DOCS "/_verify", h_docs_verify, POOL, .scope = "docs:read", .op = "verifyDocs",
          .summary = "Corrupt records and index drift against a full scan.",
          .res = "200:CollectionCheck"),
    ROUTE("POST", DOCS "/_repair", h_docs_repair, POOL, .scope = "docs:admin", .op = "repairDocs",
          .summary = "Quarantine corrupt records to .storh/corrupt/, rebuild indexes.",
          .res = "200:DocRepair 507"),
    ROUTE("POST", DOCS "/_reindex", h_docs_reindex, POOL, .scope = "docs:admin",
          .op = "reindexDocs", .summary = "Rebuild every index entry from the records.",
          .res = "200:IndexCounts 507"),
    ROUTE("POST", DOCS "/_compact", h_docs_compact, POOL, .scope = "docs:admin",
          .op = "compactDocs",
          .summary = "storh's compact(): a report, nothing to do for per-file records.",
          .res = "200:DocCompact"),
    ROUTE("GET", DOCS "/{id}", h_docs_get, .scope = "docs:read", .op = "getDoc",
          .summary = "Read one record (ETag, If-None-Match -> 304).", .query = "if_none_match",
          .res = "200:Record+ETag 304+ETag 404"),
    ROUTE("PUT", DOCS "/{id}", h_docs_put, POOL, JSON_BODY, .scope = "docs:write", .op = "putDoc",
          .summary = "Write a record under an explicit id (200 replaced, 201 new).",
          .req = "DataIn", .res = "200:Record+ETag 201:Record+ETag+Location 409 422 507"),
    ROUTE("DELETE", DOCS "/{id}", h_docs_delete, POOL, .scope = "docs:write", .op = "deleteDoc",
          .summary = "Delete a record (204, 404 when absent).", .res = "204 404 507"),

    ROUTE("POST", LOGS, h_logs_append, POOL, JSON_BODY, .scope = "logs:write", .op = "appendLog",
          .summary = "Append one record (201 {id,data}); durable on return, fsyncs shared.",
          .req = "DataIn", .res = "201:Record 507"),
    ROUTE("GET", LOGS, h_logs_list, .scope = "logs:read", .op = "listLog",
          .summary = "Stream live records in log order as NDJSON (after, limit, from_ms, until_ms, "
                     "eq.FIELD). A stream that fails midway ends without the terminating chunk (a "
                     "client error), never as a complete body.",
          .query = LIST_QUERY, .res = "200:ndjson:Record 404"),
    ROUTE("POST", LOGS "/_bulk", h_logs_bulk_end, POOL, BULK(h_logs_bulk_begin, h_logs_bulk_body),
          .scope = "logs:write", .op = "bulkLog",
          .summary = "Append NDJSON rows; all or nothing, one fsync.", .req = "LogRow",
          .res = "200:BulkResult 507"),
    ROUTE("POST", LOGS "/_query", h_logs_query, POOL, JSON_BODY, .scope = "logs:read",
          .op = "queryLog",
          .summary = "Query the live records (same body as docs _query; a scan in log order).",
          .req = "Query", .res = "200:QueryResult 404"),
    ROUTE("POST", LOGS "/_compact", h_logs_compact, POOL, .scope = "logs:admin", .op = "compactLog",
          .summary = "Compact sealed segments (drops superseded versions and tombstones).",
          .res = "200:LogCompact 404 507"),
    ROUTE("POST", LOGS "/_retain", h_logs_retain, POOL, JSON_BODY, .scope = "logs:admin",
          .op = "retainLog",
          .summary =
              "Delete records older than {older_than_days} (or older_than_ms), then compact.",
          .req = "Retain", .res = "200:Retained 404 507"),
    ROUTE("GET", LOGS "/_stats", h_logs_stats, SIDE, .scope = "logs:read", .op = "getLogStats",
          .summary = "segments, records, deleted, bytes.", .res = "200:LogStats 404"),
    ROUTE("GET", LOGS "/_verify", h_logs_verify, POOL, .scope = "logs:read", .op = "verifyLog",
          .summary = "Bad lines, state drift: {ok, errors, stats}.", .res = "200:LogCheck 404"),
    ROUTE("POST", LOGS "/_repair", h_logs_repair, POOL, .scope = "logs:admin", .op = "repairLog",
          .summary = "Quarantine bad lines to .storh/corrupt/ and recover.",
          .res = "200:LogRepair 404 507"),
    ROUTE("GET", LOGS "/{id}", h_logs_get, .scope = "logs:read", .op = "getLogRecord",
          .summary = "Read one live record.", .res = "200:Record 404"),
    ROUTE("DELETE", LOGS "/{id}", h_logs_delete, POOL, .scope = "logs:write",
          .op = "deleteLogRecord", .summary = "Append a tombstone (204; 404 when not live).",
          .res = "204 404 507"),

    ROUTE("POST", QUEUES "/jobs", h_queues_enqueue, POOL, JSON_BODY, .scope = "queues:write",
          .op = "enqueueJobs", .summary = "Enqueue one job (object) or many (array) -> 201 {ids}.",
          .req = "Enqueue", .res = "201:UuidList 507"),
    ROUTE("POST", QUEUES "/claim", h_queues_claim, POOL, .scope = "queues:write", .op = "claimJobs",
          .summary = "Claim up to limit jobs (200 {jobs}, 204 none); wait_ms long-polls.",
          .query = "claim_limit wait_ms", .res = "200:Claimed 204 507"),
    ROUTE("POST", QUEUES "/jobs/{id}/complete", h_queues_complete_one, POOL,
          .scope = "queues:write", .op = "completeJob",
          .summary = "Complete one processing job (?keep_done=true|false).", .query = "keep_done",
          .res = "200:Completed 404 409 507"),
    ROUTE("POST", QUEUES "/complete", h_queues_complete_many, POOL, JSON_BODY,
          .scope = "queues:write", .op = "completeJobs",
          .summary = "Complete {ids:[...]} (?keep_done).", .query = "keep_done",
          .req = "CompleteIds", .res = "200:Completed 404 409 507"),
    ROUTE("POST", QUEUES "/requeue", h_queues_requeue, POOL, .body = ROUTE_BODY_JSON_OPT,
          .scope = "queues:write", .op = "requeueJobs",
          .summary = "Requeue jobs processing for at least {timeout_seconds}.", .req = "Requeue",
          .res = "200:Requeued 404 507"),
    ROUTE("POST", QUEUES "/purge", h_queues_purge, POOL, .body = ROUTE_BODY_JSON_OPT,
          .scope = "queues:write", .op = "purgeJobs",
          .summary = "Purge done jobs older than {older_than_seconds} (0: all).", .req = "Purge",
          .res = "200:Purged 404 507"),
    ROUTE("GET", QUEUES, h_queues_stats, POOL, .scope = "queues:read", .op = "getQueueStats",
          .summary = "pending, processing, done, bytes.", .res = "200:QueueStats 404"),
    ROUTE("GET", QUEUES "/_verify", h_queues_verify, POOL, .scope = "queues:read",
          .op = "verifyQueue", .summary = "Bad lines, state drift: {ok, errors, stats}.",
          .res = "200:QueueCheck 404"),
    ROUTE("POST", QUEUES "/_repair", h_queues_repair, POOL, .scope = "queues:admin",
          .op = "repairQueue",
          .summary = "Quarantine bad lines, requeue jobs processing > timeout_seconds (3600).",
          .query = "repair_timeout", .res = "200:QueueRepair 404 507"),
};

const route *routes_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

static char *openapi_text;
static size_t openapi_len;
static pthread_once_t openapi_once = PTHREAD_ONCE_INIT;

static void build_openapi(void)
{
    storh_err err;
    json_t *doc = openapi_build(table, sizeof table / sizeof table[0], STORHD_VERSION, &err);
    if (!doc) {
        fprintf(stderr, "storhd: the OpenAPI document: %s\n", err.msg);
        return;
    }
    /* plain jansson: the canonical record encoder would turn {} into [] */
    openapi_text = json_dumps(doc, JSON_COMPACT);
    openapi_len = openapi_text ? strlen(openapi_text) : 0;
    json_decref(doc);
}

const char *routes_openapi(size_t *len)
{
    pthread_once(&openapi_once, build_openapi);
    *len = openapi_len;
    return openapi_text;
}
