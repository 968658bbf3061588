/* docindex_int: what the files of the docindex module share (docindex.c
 * keys, definitions and paths; docindex_files.c equality and range files;
 * docindex_write.c maintenance; docindex_lookup.c lookups; docindex_build.c
 * rebuild and verify; docindex_swap.c the rebuild's tree). Nothing outside
 * them includes it. */
#ifndef STORH_DOCINDEX_INT_H
#define STORH_DOCINDEX_INT_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "buf.h"
#include "docindex.h"
#include "idmap.h"
#include "storh_err.h"

#define RANGE_STRIDE 256

/* The manifest's bytes for the definitions held (appended to out) and its
 * path; after it is published elsewhere, docindex_manifest_saved records
 * the file's state so that docindex_refresh does not read it back. */
int docindex_manifest_encode(const docindex *ix, buf *out, char *path, storh_err *err);
void docindex_manifest_saved(docindex *ix);

/* The file of an equality entry, a compound bucket, a range field. */
int docindex_eq_path(const docindex *ix, const char *field, const char *vk, char *out,
                     storh_err *err);
int docindex_compound_path(const docindex *ix, const char *l, const char *r, const char *ck,
                           char *out, storh_err *err);
int docindex_range_path(const docindex *ix, const char *field, const char *suffix, char *out,
                        storh_err *err);

/* A rebuild's tree, written beside the live entries/ and swapped in whole
 * (docindex_swap.c). begin clears what a crashed build left there and
 * makes it anew; path moves p, a path under entries/ as the functions above
 * make it, to the same place in the build's tree; in swaps the complete,
 * durable tree in and removes the old one; drop removes a failed build's. */
int docindex_swap_begin(const docindex *ix, bool sync_parents, storh_err *err);
int docindex_swap_path(const docindex *ix, char *p, storh_err *err);
int docindex_swap_in(const docindex *ix, storh_err *err);
void docindex_swap_drop(const docindex *ix);

/* Equality and compound entry files. */
int docindex_read_entry(const char *path, const char *key, json_t **ids, long long *count,
                        storh_err *err);
int docindex_read_entry_ids(const char *path, const char *key, json_t **ids, storh_err *err);
/* An entry file's bytes (FORMAT.md): {"field","key","count","value","ids"};
 * value NULL for a compound bucket. Appends to out. */
int docindex_encode_entry(buf *out, const char *field, const char *key, const json_t *value,
                          json_t *ids, storh_err *err);
int docindex_write_entry(const char *path, const char *field, const char *key, const json_t *value,
                         json_t *ids, storh_err *err);
int docindex_entry_change(const char *path, const char *field, const char *key, const json_t *value,
                          const char *id, bool add, storh_err *err);

/* Where a record's index changes go: a single write makes each durable at
 * once (docindex_write.c), a group keeps them until it is staged
 * (docindex_batch.c). */
typedef struct docindex_sink {
    /* a line for the delta file of a range field */
    int (*delta)(void *ctx, const char *field, const char *path, const buf *line, storh_err *err);
    /* id added to or removed from the entry file at path (an equality key,
     * or a compound bucket: value NULL) */
    int (*entry)(void *ctx, const char *path, const char *field, const char *key,
                 const json_t *value, const char *id, bool add, storh_err *err);
    void *ctx;
} docindex_sink;
/* Walks the index files a record's data touches (each indexed field, and
 * each pair of plain fields as a compound bucket) and hands every change to
 * sink, adding id (add) or removing it; stops at the first error. */
int docindex_record_changes(docindex *ix, const char *id, const json_t *data, bool add,
                            const docindex_sink *sink, storh_err *err);

/* An entry file in memory: its "count" member and its ids, sorted, each
 * IDMAP_KEY bytes (no NUL). Shared: release what docindex_entry_ids gave. */
typedef struct dix_ids {
    _Atomic long refs;
    size_t n;
    long long count;
    char (*id)[IDMAP_KEY];
} dix_ids;

/* What every publish or append changes in a file (as rcache.h's STAT);
 * all zero: no such file. */
typedef struct docindex_fstate {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
} docindex_fstate;
/* Reads path into b with the state of the file the bytes came from;
 * STORH_ENOTFOUND (err untouched) when there is none. */
int docindex_read_state(const char *path, buf *b, docindex_fstate *st, storh_err *err);

docindex_mem *docindex_mem_new(void);
void docindex_mem_free(docindex_mem *m);
/* The entry file at path whose key must be key (a missing file, or one of
 * another key, holds none), from memory while the file is unchanged. */
int docindex_entry_ids(docindex *ix, const char *path, const char *key, dix_ids **out,
                       storh_err *err);
void docindex_ids_release(dix_ids *ids);
/* Shares d's ids when s is empty, else adds them (then sort s). */
int docindex_idset_add_entry(docindex_idset *s, dix_ids *d, storh_err *err);

typedef struct rentry {
    char *rk, *vk;
    json_t *value;
} rentry;

/* The effective (id -> entry) set of a range field: main file, then delta. */
typedef struct rset {
    idmap ids; /* id -> rentry */
} rset;

void docindex_rset_free(rset *s);
void docindex_rset_apply_line(rset *s, const json_t *line);
int docindex_rset_load(docindex *ix, const char *field, rset *s, storh_err *err);
/* The same, with the states of the main file and the delta read (st[0],
 * st[1]). */
int docindex_rset_load_states(docindex *ix, const char *field, rset *s, docindex_fstate st[2],
                              storh_err *err);
/* The effective set of a range field from memory while its two files are
 * unchanged (docindex_mem.c); give it back with docindex_range_release. */
typedef struct docindex_range docindex_range;
int docindex_range_get(docindex *ix, const char *field, docindex_range **out, const rset **s,
                       storh_err *err);
void docindex_range_release(docindex_range *r);
void docindex_range_line(buf *out, const char *rk, const json_t *value, const char *add,
                         const char *remove);
/* Appends data to a delta file (created with its directories if missing),
 * after completing or cutting a torn tail; fsynced with sync, else the
 * caller owes the barrier, and the directory fsync when *created. */
int docindex_append(const char *path, const char *data, size_t len, bool sync, bool *created,
                    storh_err *err);
int docindex_append_synced(const char *path, const char *data, size_t len, storh_err *err);

static inline bool docindex_is_plain(const idxdef *d)
{
    return !d->unique && !d->range;
}

#endif
