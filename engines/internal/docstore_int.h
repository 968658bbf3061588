/* docstore_int: the docstore's state, shared by the modules that make up
 * the DocStore (docstore.c open/close, cache and reads, docwrite.c stages,
 * puts and deletes, doclist.c listing and export, docquery.c queries,
 * docmaint.c maintenance, docgroup.c group commits). Nothing outside those
 * files includes it. */
#ifndef STORH_DOCSTORE_INT_H
#define STORH_DOCSTORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "docgroup.h"
#include "docindex.h"
#include "docstore.h"
#include "fsx.h"
#include "rcache.h"
#include "schema.h"

struct docstore {
    char *dir;
    size_t dirlen;
    pthread_mutex_t mu; /* commits, deletes and the lazy set-up below */
    atomic_bool ready;  /* collection dir exists and our marker is registered */
    char identity[32];  /* <pid>.<8hex>, also the record temp prefix */
    atomic_ulong tmp_seq;
    /* index definitions and schema: read under ixlock (shared), changed
     * under mu plus ixlock (exclusive) */
    pthread_rwlock_t ixlock;
    docindex ix;
    schema sch;
    rcache *cache; /* NULL: no record cache */
    docgroup grp;  /* single-document writes, published in groups */
};

/* Under mu: creates the collection and registers our writer marker, once
 * (sets ready). */
int docstore_prepare_locked(docstore *ds, storh_err *err);
/* The record's path; id must be a valid UUIDv7. */
void docstore_record_path(const docstore *ds, const char *id, char *out);
/* The collection lock: mu for threads, flock for other processes. */
int docstore_lock(docstore *ds, fsx_lock *l, storh_err *err);
void docstore_unlock(docstore *ds, fsx_lock *l);
/* The current record of id for index maintenance: *old NULL when there is
 * none; a corrupt file is an error. Under the collection lock. */
int docstore_old_record(docstore *ds, const char *id, json_t **old, storh_err *err);
/* Reads and decodes the record file of id without the cache. */
int docstore_read_record(docstore *ds, const char *id, json_t **data, storh_err *err);
/* A batch of gets (a query's candidates) validated against one drain of
 * the cache's watch, made by docstore_batch_begin: docstore_get otherwise. */
void docstore_batch_begin(docstore *ds);
int docstore_batch_get(docstore *ds, const char *id, json_t **data, storh_err *err);
/* docstore_get_answer, validated as docstore_batch_get is. */
int docstore_batch_get_answer(docstore *ds, const char *id, rcache_blob **out, storh_err *err);
/* The iterator (with no query) may hand out only these top-level fields of
 * each record's data (borrowed; must outlive it): what an index build
 * reads, without decoding the rest. */
void docstore_iter_fields(docstore_iter *it, const char *const *fields, size_t n);
/* Under the lock: rebuilds every index entry from the records on disk;
 * *out (may be NULL) = {"fields","entries"}. */
int docstore_reindex_locked(docstore *ds, json_t **out, storh_err *err);

#endif
