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

#include "buf.h"
#include "mirror.h"

#define DELETE_CHUNK 500
#define INSERT_BATCH 100 /* rows per multi-row INSERT */

typedef struct row_stmt {
    buf sql;
    int ncols; /* id, hash, typed..., data */
} row_stmt;

typedef int (*each_fn)(void *ctx, const char *id, const json_t *data, storh_err *err);

/* mirror.c */
int mirror__connect_db(mirror *m, storh_err *err);
bool mirror__is_pg(const mirror *m);
const char *mirror__col_type(const mirror *m, const schema_field *f);
int mirror__exec_stmts(mirror *m, json_t *stmts, storh_err *err);
int mirror__settle(mirror *m, int rc);
/* mirror_hash of data whose canonical encoding is text */
void mirror__hash_text(const char *text, size_t len, char out[33]);

/* mirror_push.c */
int mirror__collect_pair(void *ctx, int n, const char *const *v, const size_t *l);
int mirror__each_record(const mirror_source *src, each_fn fn, void *ctx, storh_err *err);
int mirror__source_get(const mirror_source *src, const char *id, json_t **data, storh_err *err);
void mirror__add_total(json_t *totals, const char *k, long v);

#endif
