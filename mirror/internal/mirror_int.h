/* mirror_int: the helpers the mirror's modules share: mirror.c (config,
 * collections, DDL, install), mirror_push.c (push, flush, rebuild) and
 * mirror_pull.c (pull, verify, scalar). Included only by those files.
 *
 * The connection, one per mirror, used under m->mu:
 *   none --mirror__connect_db (first call, or after a drop)--> connected
 *   connected --a call fails with STORH_EUNAVAIL (mirror__settle)--> none
 *   connected --any other failure (mirror__settle)--> connected, the
 *       transaction rolled back and m->failures counted
 * A push or a flush is one transaction (BEGIN, rows, COMMIT; ROLLBACK on
 * any failure), so the mirror never holds half of one; rebuild empties the
 * table and pushes in that one transaction too. */
#ifndef STORHD_MIRROR_INT_H
#define STORHD_MIRROR_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "buf.h"
#include "idmap.h"
#include "mirror.h"

#define DELETE_CHUNK 500
#define INSERT_BATCH 100 /* rows per multi-row INSERT */
/* typed columns a row takes from canonical bytes (a table with more
 * decodes each record: a push's ring holds a thousand rows, so a row stays
 * small) */
#define MROW_TYPED 16
#define FLUSH_TYPED 64               /* typed columns a flush binds */
#define FLUSH_COLS (FLUSH_TYPED + 3) /* with id, hash and data */

typedef struct row_stmt {
    buf sql;
    int ncols; /* id, hash, typed..., data */
} row_stmt;

typedef int (*each_fn)(void *ctx, const char *id, const json_t *data, storh_err *err);

/* One record's row (mirror_rows.c): from a canonical record file's bytes
 * (data NULL: raw holds the file, the data text is raw[doff, doff+dlen),
 * typed values are raw's spans, vlen 0 = absent), or from decoded data
 * (text holds its canonical encoding). Buffers are kept across records. */
typedef struct mrow {
    buf id; /* NUL-terminated */
    buf raw;
    json_t *data;
    buf text;
    size_t doff, dlen;
    uint32_t voff[MROW_TYPED], vlen[MROW_TYPED];
    char hash[33];
} mrow;

/* A row of the table as push reads it: its hash, whether that is a hash
 * this mirror makes (32 hex digits), whether a record claimed it and
 * whether a file of its id went into the feed's listing. */
typedef struct have_row {
    char hash[32];
    bool ok, seen, listed;
} have_row;
/* Clears every row's seen and listed (mirror_push.c): a walk starts again.
 * The map's values are written, not its shape. */
void mirror__rows_unmark(const idmap *rows);

/* The rows of a collection's table (id -> have_row) as its last good push
 * left them, kept where the driver tells whether another connection
 * changed the database since (SQLite's PRAGMA data_version, which our own
 * commits leave as it is): the next push on the same connection takes
 * them instead of reading the table when the version is still the one it
 * read under its write lock. Whatever else writes on the connection drops
 * them (flush, install, uninstall, scalar, a new connection), and so does
 * a push that fails; dropped rows keep their memory for the next push's
 * map (freeing a map of many rows made a flush measurably slower). Used
 * under the mirror's mutex. */
typedef struct mkept {
    idmap rows;
    long long version;
    bool valid; /* false: dropped, rows is only memory to reuse */
} mkept;

/* An item of a push's feed (mirror_feed.c): a record's row, the end, or
 * an error (rc; its message is mirror__feed_error's: the walk ends at its
 * first error). have: the table's row of the record's id, NULL when none
 * (or not a 36-byte id). */
typedef enum { MFEED_ROW, MFEED_END, MFEED_ERR } mfeed_kind;
typedef struct mfeed_item {
    mfeed_kind kind;
    int rc;
    have_row *have;
    mrow r;
} mfeed_item;
typedef struct mfeed mfeed;

/* mirror.c */
int mirror__connect_db(mirror *m, storh_err *err);
bool mirror__is_pg(const mirror *m);
const char *mirror__col_type(const mirror *m, const schema_field *f);
int mirror__exec_stmts(mirror *m, json_t *stmts, storh_err *err);
int mirror__settle(mirror *m, int rc);
/* Drops the rows kept of c's table (c NULL: of every table). */
void mirror__kept_drop(mirror *m, const mirror_coll *c);
/* Frees them (mirror_free). */
void mirror__kept_free(mirror *m);
/* mirror_hash of data whose canonical encoding is text */
void mirror__hash_text(const char *text, size_t len, char out[33]);

/* mirror_push.c */
int mirror__collect_pair(void *ctx, int n, const char *const *v, const size_t *l);
int mirror__each_record(const mirror_source *src, each_fn fn, void *ctx, storh_err *err);
int mirror__source_get(const mirror_source *src, const char *id, json_t **data, storh_err *err);
void mirror__add_total(json_t *totals, const char *k, long v);
/* The mirror's memo of c's record files (mmemo.h); NULL for a log. */
struct mmemo *mirror__memo(mirror *m, const mirror_coll *c);

/* mirror_feed.c: the records of ds in id order, read ahead. Opening
 * starts the listing; rows (id -> have_row) is only read, and only after
 * mirror__feed_start (until then the caller fills it) unless complete says
 * it is complete already: then each file is stated as it is listed and a
 * record known unchanged never enters the listing. memo (NULL: none) is
 * the feed's until closed. */
int mirror__feed_open(const mirror *m, const mirror_coll *c, docstore *ds, const idmap *rows,
                      bool complete, struct mmemo *memo, mfeed **out, storh_err *err);
/* rows is complete: the reader may take records. */
void mirror__feed_start(mfeed *f);
/* The next item, the push's until the next call (the end repeats). A
 * record known unchanged is no item: the feed marks its row seen. */
mfeed_item *mirror__feed_next(mfeed *f);
/* The records the feed's listing holds, once it gave its first item. */
size_t mirror__feed_listed(const mfeed *f);
/* The error of the item MFEED_ERR the feed gave. */
const storh_err *mirror__feed_error(const mfeed *f);
/* Stops the reader and frees the feed: the records it knew unchanged. */
long mirror__feed_close(mfeed *f);

/* mirror_rows.c */
void mirror__row_free(mrow *r);
/* The row of data under id (data is referenced, not copied). */
int mirror__row_data(mrow *r, const char *id, const json_t *data, storh_err *err);
/* Reads the record file at path, relative to dirfd (AT_FDCWD: as it is;
 * its state into *st) and makes its row: from its bytes when they are
 * canonical, else decoded as a record of id (a file that does not decode
 * is an error, as a stream reports it). */
int mirror__row_file(const mirror *m, const mirror_coll *c, mrow *r, int dirfd, const char *path,
                     const char *id, struct stat *st, storh_err *err);
/* The row of record id whose file holds bytes (len of them; copied), as
 * mirror__row_file makes it from the file. */
int mirror__row_bytes(const mirror *m, const mirror_coll *c, mrow *r, const char *id,
                      const char *bytes, size_t len, storh_err *err);
/* The row's parameters in insert order (2 + typed + 1 of them). */
int mirror__row_params(const mirror *m, const mirror_coll *c, const mrow *r, mparam *p);

#endif
