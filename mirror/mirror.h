/* mirror: storh's SqlMirror (FORMAT.md 8) over a driver: tables
 * <prefix><name> with id, hash (xxh128 of the canonical data), typed columns
 * from an optional schema (indexed as the schema says) and data (TEXT on
 * SQLite, JSONB on PostgreSQL). push diffs by hash in one transaction per
 * collection and rolls back on any failure; flush(ids) gives read-your-
 * writes; pull restores (never deletes local records; all rows of a pull
 * are published together, after the unique checks); verify reports
 * missing, stale and orphaned rows; rebuild empties and pushes.
 *
 * The mirror reads its collections through a source (a docstore or a log the
 * caller resolves), so this layer needs no registry. Calls are serialised
 * per mirror (one connection). */
#ifndef STORHD_MIRROR_H
#define STORHD_MIRROR_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "docstore.h"
#include "mdriver.h"
#include "schema.h"
#include "logset.h"
#include "seglog.h"

typedef struct mirror_coll {
    char *name;
    char *table;
    bool is_log;
    schema sch;              /* typed columns; may be empty */
    unsigned long long mark; /* mirror_writes() when its last good push began */
    struct mmemo *memo;      /* its record files as last read (mmemo.h); lazily */
    struct mkept *kept;      /* its table's rows as its last push left them (mirror_int.h) */
} mirror_coll;

typedef struct mirror_source {
    docstore *ds; /* exactly one of ds and log */
    seglog *log;  /* where a pull writes (a partitioned stream's current partition) */
    logset logs;  /* what reads see: every partition of a partitioned stream */
} mirror_source;

typedef struct mirror {
    char *name;
    char *driver;
    char *target; /* sqlite path or libpq conninfo */
    char *prefix;
    int push_every;  /* seconds, 0 = no background push */
    mirror_coll **c; /* each allocated once: pointers handed out stay valid */
    size_t n;
    bool all_docs; /* "collections": "*" */
    mdriver *db;   /* connected lazily, reconnected after a failure */
    pthread_mutex_t mu;
    /* counters for /metrics */
    unsigned long long rows_pushed, pushes, failures;
    double push_seconds;
    int last_push_ok;                  /* 1, 0, or -1 before the first push */
    double last_push_at, last_good_at; /* epoch seconds, 0 = never */
} mirror;

/* What /metrics shows of a mirror, read under its mutex. lag is the record
 * writes this process made (documents put or deleted, log appends) since the
 * oldest of its collections' last successful push began: an estimate of
 * what the mirror is missing (it also counts writes to collections that are
 * not mirrored, and misses writes made by other processes). */
typedef struct mirror_stats {
    unsigned long long rows_pushed, pushes, failures, lag;
    double push_seconds, last_push_at, last_good_at;
    int last_push_ok;
} mirror_stats;

/* Builds a mirror from its config object:
 *   {"driver":"sqlite","path":"..."} or {"driver":"postgres","conninfo":"..."},
 *   "prefix":"storh_", "push_every_seconds":N,
 *   "collections": {"pages":{"kind":"doc","schema":{...}}, "events":{"kind":"log"}}
 *   or "collections": "*" (every DocStore collection, no typed columns). */
int mirror_new(const char *name, const json_t *cfg, mirror **out, storh_err *err);
void mirror_free(mirror *m);
/* The collection entry for name (for "*" mirrors one is added on demand). */
const mirror_coll *mirror_find(mirror *m, const char *name, bool is_log, storh_err *err);
/* A snapshot of the declared collections: {name: is_log, ...}. New ref. */
json_t *mirror_collections(mirror *m);
void mirror_snapshot(mirror *m, mirror_stats *out);
/* The record writes of this process so far (the clock mirror lag counts in). */
unsigned long long mirror_writes(void);
/* The DDL install() runs (exposed for tests). */
int mirror_ddl(const mirror *m, const mirror_coll *c, json_t **stmts, storh_err *err);

int mirror_install(mirror *m, const mirror_coll *c, storh_err *err);
int mirror_uninstall(mirror *m, const mirror_coll *c, storh_err *err);
/* Adds to *totals {"inserted","updated","deleted","unchanged"}. */
int mirror_push(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                storh_err *err);
int mirror_flush(mirror *m, const mirror_coll *c, const mirror_source *src, const json_t *ids,
                 json_t **out, storh_err *err);
int mirror_rebuild(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                   storh_err *err);
/* Adds to *totals {"written","unchanged"}. */
int mirror_pull(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                storh_err *err);
/* {"records","rows","missing","stale","orphaned"} and error strings. */
int mirror_verify(mirror *m, const mirror_coll *c, const mirror_source *src, json_t **stats,
                  json_t *errors, storh_err *err);
/* Runs a read-only SQL statement with parameters for tests and bench:
 * returns the first column of the first row as a new string (or NULL). */
int mirror_scalar(mirror *m, const char *sql, const mparam *p, int np, char **out, storh_err *err);
/* The hash of data as the mirror stores it (32 lowercase hex). */
void mirror_hash(const json_t *data, char out[33]);

#endif
