/* docstore: storh's DocPerFileStore (FORMAT.md 2): one JSON record per file
 * at <root>/<coll>/data/<id[24..25]>/<id>.jsonc, published by temp + fsync +
 * rename + directory fsync under the collection's flock write lock.
 *
 * Writes go through a stage: each row is encoded and written to its own
 * fsynced temp file as it arrives (so a bulk body is never held in memory),
 * and nothing becomes visible until docstore_stage_commit renames the temps
 * under the lock and fsyncs the touched directories. Aborting a stage (bad
 * row, client gone) removes its temps: a failed request changes nothing.
 *
 *   begin --put/element/import_line--> staged --commit--> published
 *                                        \--abort--> nothing on disk
 *
 * A docstore is shared by threads: reads take no lock (atomic rename is
 * enough), commits serialise on a mutex plus the flock that excludes other
 * processes (PHP storh included). */
#ifndef STORH_DOCSTORE_H
#define STORH_DOCSTORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "rcache.h"
#include "recquery.h"
#include "storh_err.h"
#include "uuid7.h"

typedef struct docstore docstore;
typedef struct docstore_stage docstore_stage;
typedef struct docstore_iter docstore_iter;

/* Opens <root>/<name>. Nothing is created until the first write. The caller
 * closes it with docstore_close. name is used as given: validate it first. */
int docstore_open(const char *root, const char *name, docstore **out, storh_err *err);
void docstore_close(docstore *ds);
const char *docstore_dir(const docstore *ds);
/* Whether the collection exists on disk (its first write creates it). */
bool docstore_exists(const docstore *ds);

/* The canonical record bytes {"id":"..","data":..}\n appended to out. */
int docstore_encode_record(buf *out, const char *id, const json_t *data, storh_err *err);
/* Decodes record file bytes as storh does (strict, then JSONC; id must be a
 * valid UUIDv7 equal to expect_id). *data is a new reference. */
int docstore_decode_record(const char *bytes, size_t len, const char *expect_id, json_t **data,
                           storh_err *err);

/* STORH_ENOTFOUND when absent, STORH_ECORRUPT for a bad file. *data is a new
 * reference (caller decrefs). raw, if non-NULL, receives the file bytes. */
int docstore_get(docstore *ds, const char *id, json_t **data, buf *raw, storh_err *err);
/* The record's canonical bytes (docstore_encode_record) and their ETag,
 * held until rcache_blob_release; from the record cache, validated as
 * docstore_get validates, without encoding or copying once cached. */
int docstore_get_answer(docstore *ds, const char *id, rcache_blob **out, storh_err *err);
/* A record's canonical bytes from the record cache, for a reader walking a
 * listing of the files (a mirror's feed), with the state of the file they
 * are; validated as a listing's lookups, against a drain of the watch made
 * when drain is true (once per run of lookups). path: the record's file.
 * 1 with *blob (a new reference) and *st set; 0: not cached, or not as
 * bytes (read the file). */
int docstore_cached_file(docstore *ds, const char *id, const char *path, bool drain,
                         rcache_blob **blob, struct stat *st);
/* *existed tells whether there was a record; deleting nothing is not an error. */
int docstore_delete(docstore *ds, const char *id, bool *existed, storh_err *err);
/* put = a stage of one, published with its concurrent neighbours (one
 * group, docgroup.h). id NULL -> generated. out_id receives the id;
 * *existed whether a record was replaced. Once durable, the record's bytes
 * stay in the record cache (if any), validated as any entry. */
int docstore_put(docstore *ds, const char *id, json_t *data, char out_id[UUID7_LEN + 1],
                 bool *existed, storh_err *err);
/* put and delete are published in groups with concurrent writes to the
 * collection (docgroup.h): mode 0 fsyncs a group's temps, then its
 * directories, in parallel; 1 covers each step with one syncfs(2); 2 picks
 * by the size of the group (the default where syncfs reports writeback
 * errors, Linux >= 5.8). */
void docstore_set_group_sync(docstore *ds, int mode);

int docstore_stage_begin(docstore *ds, docstore_stage **out, storh_err *err);
/* Stages data under id (NULL -> generated). data is borrowed. */
int docstore_stage_put(docstore_stage *st, const char *id, json_t *data, char out_id[UUID7_LEN + 1],
                       storh_err *err);
/* putMany element rule: string "id" is used; an object/array "data" is the
 * data (other keys dropped); otherwise the whole element is the data. */
int docstore_stage_element(docstore_stage *st, json_t *elem, char out_id[UUID7_LEN + 1],
                           storh_err *err);
/* importJsonl row rule: a two-key {"id","data"} row is stored verbatim. */
int docstore_stage_import_line(docstore_stage *st, const char *line, size_t len,
                               char out_id[UUID7_LEN + 1], storh_err *err);
size_t docstore_stage_count(const docstore_stage *st);
/* Publishes every staged row in order and frees the stage. On failure the
 * rows renamed so far stay (each is whole), the rest are removed. With a
 * record cache, the rows' bytes stay in it once durable (up to the room
 * it has free, or a quarter of its bounds: rcache_bulk_share), as a put's
 * do. */
int docstore_stage_commit(docstore_stage *st, size_t *written, storh_err *err);
/* Removes the staged temps and frees the stage. */
void docstore_stage_abort(docstore_stage *st);
/* Stream in id byte order (FORMAT.md 2.1), filtered by q (borrowed; may be
 * NULL; must outlive the iterator). Caller frees with docstore_iter_close. */
int docstore_iter_open(docstore *ds, const recquery *q, docstore_iter **out, storh_err *err);
/* 1 = a record (id points into the iterator, *data new reference), 0 = end,
 * <0 = this record is unreadable (id names it; the next call moves on). */
int docstore_iter_next(docstore_iter *it, const char **id, json_t **data, storh_err *err);
/* As docstore_iter_next, but a record file that holds exactly its canonical
 * encoding (docstore_encode_record's bytes) is handed out as it is when the
 * query needs no data: *raw and *len then point into the iterator (valid
 * until the next call) and *data is NULL; otherwise *raw is NULL and *data
 * a new reference. */
int docstore_iter_next_raw(docstore_iter *it, const char **id, const char **raw, size_t *len,
                           json_t **data, storh_err *err);
void docstore_iter_close(docstore_iter *it);
struct recpred;
/* Records whose canonical bytes p (recpred_from_query; borrowed, may be
 * NULL; must outlive the iterator) rejects are skipped without being
 * decoded: the caller still decides on what it is given (query_match). */
void docstore_iter_prefilter(docstore_iter *it, const struct recpred *p);

/* Record files in the collection (a listing, nothing is read). */
size_t docstore_count_files(docstore *ds);
/* Sum of the sizes of every record file the iterator lists. */
long long docstore_iter_bytes(docstore_iter *it);

/* The DocStore collections under root (FORMAT.md 2: every <root>/<name>
 * whose <name>/data is a directory, name being [A-Za-z0-9_-]{1,64}), in
 * name order. The one place that decides what a collection is: the mirror's
 * "*" and every other caller ask here. *names: new array of strings. */
int docstore_collections(const char *root, json_t **names, storh_err *err);

/* exportJsonl to a file; *count rows written. */
int docstore_export_jsonl(docstore *ds, const char *path, size_t *count, storh_err *err);
/* stats(): {"records","bytes","corrupt","indexes"}; new reference. */
int docstore_stats(docstore *ds, json_t **out, storh_err *err);
/* health() = verify(): {"ok","errors","stats"} with index drift checked
 * against a full scan; new reference. */
int docstore_health(docstore *ds, json_t **out, storh_err *err);
/* repair(): sweep temps, quarantine corrupt records to .storh/corrupt/,
 * rebuild indexes: {"ok":true,"quarantined":n,"reindexed":{...}}. */
int docstore_repair(docstore *ds, json_t **out, storh_err *err);
/* reindex(): {"fields":n,"entries":n}. */
int docstore_reindex(docstore *ds, json_t **out, storh_err *err);
/* compact(): a no-op report {"ok":true,"records":n}. */
int docstore_compact(docstore *ds, json_t **out, storh_err *err);

/* Record cache: mode is an rcache_mode (STAT, HASH, TRUST). */
int docstore_set_cache(docstore *ds, int mode, size_t max_entries, size_t max_bytes,
                       storh_err *err);

/* Index definitions as {"fields":[{"field","unique","range"}]}. */
json_t *docstore_indexes(docstore *ds);
/* ORs definitions in ({"fields":[...]} as above); rebuilds the entries when
 * they changed and rebuild is true. *out = {"changed":b,"fields":[...]}. */
int docstore_define_indexes(docstore *ds, const json_t *body, bool rebuild, json_t **out,
                            storh_err *err);
/* The schema as JSON ({"fields":{}} when none). */
json_t *docstore_schema(docstore *ds);
/* Replaces the schema (stored in .storh/schema.jsonc) and merges its index
 * flags into the definitions (rebuilding when they changed). */
int docstore_set_schema(docstore *ds, const json_t *body, json_t **out, storh_err *err);

/* QueryBuilder over the store (FORMAT.md 5): *out is {"records":[...],
 * "next_cursor":id|null}, {"count":n} or the explain() plan. */
struct query;
int docstore_query(docstore *ds, const struct query *q, json_t **out, storh_err *err);
/* The records answer of q as the bytes docstore_query's would encode to,
 * appended to out, when q is served in id order from the index (no count,
 * explain or orderBy; its candidates from the index files): each row is
 * its record's canonical bytes from the record cache, decided on those
 * bytes where recpred can, so no tree is built for it. *served false
 * (out untouched): ask docstore_query. */
int docstore_query_answer(docstore *ds, const struct query *q, buf *out, bool *served,
                          storh_err *err);

#endif
