/* docindex: storh's DocStore index files (FORMAT.md 2.3-2.7) under
 * <coll>/.storh/indexes: the manifest of definitions, equality files per
 * value, automatic two-field compound buckets, and range files (a sorted
 * main file with sparse checkpoints, plus an append-only delta that only a
 * rebuild folds in). Byte-compatible with storh's writers: readers there
 * search raw text for key orders and compact spellings.
 *
 * The caller holds the collection write lock around every mutation. Lookups
 * read the files as they are: renames keep the others whole, and a delta
 * line is read only once its LF is there (writers append concurrently). */
#ifndef STORH_DOCINDEX_H
#define STORH_DOCINDEX_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "buf.h"
#include "query.h"
#include "storh_err.h"

typedef struct idxdef {
    char *field;
    bool unique, range;
} idxdef;

typedef struct docindex_mem docindex_mem;

typedef struct docindex {
    char dir[PATH_MAX]; /* <coll>/.storh/indexes */
    idxdef *defs;       /* sorted by field, byte order */
    size_t n;
    struct stat manifest_st;
    docindex_mem *mem; /* entry files in memory (docindex_mem.c); NULL: none */
} docindex;

/* Loads the manifest of coll_dir (none: no definitions). */
int docindex_load(docindex *ix, const char *coll_dir, storh_err *err);
void docindex_free(docindex *ix);
/* Reloads if another writer changed the manifest since. */
int docindex_refresh(docindex *ix, storh_err *err);
bool docindex_active(const docindex *ix);
const idxdef *docindex_def(const docindex *ix, const char *field);
/* ORs defs into the definitions held in memory (there is no way to drop a
 * flag, as in storh); *changed tells whether anything changed. The
 * manifest is written by docindex_save, or by a build finished with
 * save_defs; docindex_reload drops what was not written. */
int docindex_merge(docindex *ix, const idxdef *defs, size_t n, bool *changed, storh_err *err);
int docindex_save(docindex *ix, storh_err *err);
int docindex_reload(docindex *ix, storh_err *err);

/* Whether v is indexed at all: null, bool, int, float or string. */
bool docindex_indexable(const json_t *v);
void docindex_value_key(const json_t *v, buf *out);
void docindex_range_key(const json_t *v, buf *out);
void docindex_compound_key(const json_t *a, const json_t *b, buf *out);
/* The compound key of two value keys (docindex_value_key's bytes). */
void docindex_compound_key_of(const char *ka, size_t la, const char *kb, size_t lb, buf *out);
/* Sorts an array of id strings in byte order and drops duplicates. */
void docindex_sort_ids(json_t *ids);
/* PHP's sprintf('%.17G') (exposed for tests). */
void docindex_g17(double v, char out[40]);

/* STORH_ECONFLICT ("Unique index violation on field: f") when a unique
 * field of data already belongs to another id. */
int docindex_check_unique(docindex *ix, const char *id, const json_t *data, storh_err *err);
/* Replaces old's entries by new's for id (either may be NULL). */
int docindex_update(docindex *ix, const char *id, const json_t *old, const json_t *nw,
                    storh_err *err);

/* The index changes of a group of writes (docgroup), under the collection
 * lock: unique checks and updates see the group's earlier changes; then
 * stage writes every changed entry file's new content to a temp and
 * appends the range lines, none synced (*files: what the caller makes
 * durable); then publish renames the temps over the entries (or unlinks
 * emptied ones) without directory fsyncs (*dirs: what the caller syncs
 * before acknowledging). The arrays belong to the batch. Free unlinks the
 * temps of an unpublished batch. */
typedef struct docindex_batch docindex_batch;
int docindex_batch_begin(docindex *ix, docindex_batch **out, storh_err *err);
int docindex_batch_check_unique(docindex_batch *b, const char *id, const json_t *data,
                                storh_err *err);
int docindex_batch_update(docindex_batch *b, const char *id, const json_t *old, const json_t *nw,
                          storh_err *err);
int docindex_batch_stage(docindex_batch *b, const char ***files, size_t *n, storh_err *err);
int docindex_batch_publish(docindex_batch *b, char (**dirs)[PATH_MAX], size_t *n, storh_err *err);
void docindex_batch_free(docindex_batch *b);

/* Process-wide totals of the entry files kept in memory (tests): lookups,
 * and those answered on the watch of their directory without a stat. */
typedef struct docindex_mem_stats {
    uint64_t lookups, watched;
} docindex_mem_stats;
void docindex_mem_totals(docindex_mem_stats *out);

/* Rebuild: delete entries/, then add every record, then write files. */
typedef struct docindex_build docindex_build;
int docindex_build_begin(docindex *ix, docindex_build **out, storh_err *err);
int docindex_build_add(docindex_build *b, const char *id, const json_t *data, storh_err *err);
/* save_defs: the manifest is published with the build's files, renamed
 * last, so that a reader sees the new definitions only with their entries. */
int docindex_build_finish(docindex_build *b, bool save_defs, storh_err *err);
void docindex_build_abort(docindex_build *b);

/* A sorted set of record ids without duplicates, each DOCINDEX_ID bytes
 * (no NUL): owned, or shared with an entry file kept in memory (ref). */
#define DOCINDEX_ID 36
typedef struct docindex_idset {
    const char (*id)[DOCINDEX_ID];
    size_t n;
    char (*own)[DOCINDEX_ID];
    size_t cap;
    struct dix_ids *ref;
} docindex_idset;
#define DOCINDEX_IDSET_INIT                                                                        \
    {                                                                                              \
        0                                                                                          \
    }
void docindex_idset_free(docindex_idset *s);
/* Adds an id (then the set must be put in order with idset_sort). */
int docindex_idset_push(docindex_idset *s, const char *id, storh_err *err);
void docindex_idset_sort(docindex_idset *s);
/* a becomes a & b, or a | b. */
int docindex_idset_intersect(docindex_idset *a, const docindex_idset *b, storh_err *err);
int docindex_idset_union(docindex_idset *a, const docindex_idset *b, storh_err *err);

/* Candidate ids for a condition an index can serve (eq/in with scalar or
 * null values on any indexed field; gt, gte, lt, lte, between, prefix on a
 * range field): *ids (empty on entry) gets them, sorted; false if no index
 * serves c. For a range field these are exactly the entries whose value
 * satisfies c (query_cond_value). STORH_ECORRUPT: an index file that does
 * not parse. */
bool docindex_serves(const docindex *ix, const qcond *c);
int docindex_candidates(docindex *ix, const qcond *c, docindex_idset *ids, storh_err *err);
/* count() of one eq/in condition on an equality field from the files'
 * "count" members alone (storh's fast path); *served false otherwise. */
int docindex_count(docindex *ix, const qcond *c, long long *count, bool *served, storh_err *err);
/* Ids of the compound bucket of two plain equality fields. */
int docindex_compound_ids(docindex *ix, const char *f1, const json_t *v1, const char *f2,
                          const json_t *v2, docindex_idset *ids, bool *served, storh_err *err);
/* verify(): compares the files with the records a full scan found (added
 * with docindex_build_add to a build that is then passed here instead of
 * finished). Appends storh's error strings to errors. */
int docindex_verify_against(docindex_build *expected, json_t *errors, storh_err *err);

#endif
