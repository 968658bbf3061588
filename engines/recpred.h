/* recpred: a query's conditions compiled to run on a record's canonical
 * bytes (its data as sjson_encode writes it: what docstore_encode_record
 * puts in record files and reccanon recognises) without decoding them: the
 * top-level members are found by scanning the object, and strict equality
 * (PHP ===) is byte equality of canonical encodings, which is one-to-one on
 * PHP values once floats are left out. Whatever the bytes cannot decide for
 * sure (floats, compares across containers, strings with escapes in a range
 * compare, bytes that are not canonical) answers RECPRED_UNSURE, and the
 * caller decodes and asks query_match or recquery_match_data. A predicate
 * is immutable once compiled and may be shared between threads. */
#ifndef STORH_RECPRED_H
#define STORH_RECPRED_H

#include <stddef.h>

#include "query.h"
#include "recquery.h"

#define RECPRED_NO 0
#define RECPRED_YES 1
#define RECPRED_UNSURE (-1)

typedef struct recpred recpred;

/* q's where (its groups), as query_match decides it. NULL when q has no
 * condition, when a condition cannot be decided on bytes (a float operand,
 * an integer-like field name, ...) or memory ran out: use query_match.
 * Caller frees with recpred_free. */
recpred *recpred_from_query(const query *q);
/* A recquery's field equalities, as recquery_match_data decides them (its
 * id conditions stay with recquery_match_id). NULL when it has none or they
 * cannot be compiled. Caller frees with recpred_free. */
recpred *recpred_from_recquery(const recquery *q);
void recpred_free(recpred *p);

/* Decides p on data, bytes the caller knows to be canonical (it encoded
 * them with sjson_encode, or reccanon accepted the record they come from).
 * id as query_match's (NULL: "id" is looked up in data like any field). */
int recpred_match_data(const recpred *p, const char *id, const char *data, size_t len);
/* Decides p on a record file's bytes, checking as it scans that they are
 * canonical for id (a valid UUIDv7): RECPRED_UNSURE when they are not. */
int recpred_match_record(const recpred *p, const char *id, const char *bytes, size_t len);

/* As recpred_match_record for bytes reccanon_is_canonical accepted already
 * (the caller checked them for its own use). */
int recpred_match_canonical(const recpred *p, const char *id, const char *bytes, size_t len);

#endif
