/* query: storh's QueryBuilder semantics (FORMAT.md 5) over decoded records:
 * conditions in disjunctive groups, the twelve operators with storh's strict
 * equality and cross-type compare(), stable orderBy, cursor and limit, and
 * the JSON query body of the REST API:
 *   {"where":[{"field":"kind","op":"eq","value":"page"},
 *             {"or":[[...conditions...],[...]]}],
 *    "orderBy":[{"field":"at","dir":"desc"}], "limit":50, "cursor":ID,
 *    "count":true, "explain":true}
 * "where" is the AND of its items and an "or" item the OR of its lists; the
 * whole is expanded to storh's groups (at most QUERY_MAX_GROUPS). A query
 * owns its values. */
#ifndef STORH_QUERY_H
#define STORH_QUERY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "storh_err.h"
#include "uuid7.h"

#define QUERY_MAX_GROUPS 64

typedef enum {
    QOP_EQ,
    QOP_NEQ,
    QOP_IN,
    QOP_NOTIN,
    QOP_GT,
    QOP_GTE,
    QOP_LT,
    QOP_LTE,
    QOP_BETWEEN,
    QOP_EXISTS,
    QOP_MISSING,
    QOP_PREFIX
} qop;

typedef struct qcond {
    char *field;
    qop op;
    json_t *value; /* the operand; for in/notIn the list; for between [a,b] */
} qcond;

typedef struct qgroup {
    qcond *c;
    size_t n;
} qgroup;

typedef struct query {
    qgroup *groups; /* a record matches if some group has all conditions true */
    size_t ngroups;
    char *order_field; /* NULL: the store's own order */
    bool desc;
    size_t limit; /* 0 = none */
    bool has_cursor;
    char cursor[UUID7_LEN + 1];
    bool count, explain;
} query;

/* Parses the REST body into q (zeroed first). Messages name the bad part,
 * e.g. "where[1].op: unsupported operator". */
int query_parse(const json_t *body, query *q, storh_err *err);
/* Parses only a "where" array (for /v1/filter). */
int query_parse_where(const json_t *where, query *q, storh_err *err);
void query_free(query *q);
const char *query_op_name(qop op);

/* The record matches (id may be NULL for rows without one: then "id" is
 * looked up in data like any field). Cursor is not checked here. */
bool query_match(const query *q, const char *id, const json_t *data);
/* Whether condition c holds for the value v of its field (NULL: the field
 * is missing), exactly as query_match decides it. */
bool query_cond_value(const qcond *c, const json_t *v);
/* storh's compare(a, b): only the sign matters. NULL means null. */
int query_compare(const json_t *a, const json_t *b);
/* PHP === on decoded values. */
bool query_strict_equal(const json_t *a, const json_t *b);

/* Sorts rows ({"id","data"} objects) stably by q's orderBy. */
void query_sort(const query *q, json_t *rows);
/* The answer to q over the matching rows ({"id","data"} objects, in the
 * store's order; stolen): {"count":n} when counting, else the rows sorted
 * and cut at the limit as {"records","next_cursor"}, where next_cursor is
 * the last id when cursor_ok (the rows are in ascending id order) and the
 * limit was reached, else null. */
json_t *query_result(const query *q, json_t *rows, bool cursor_ok);
/* True if every group has a condition that (pred says) an index can serve. */
bool query_every_group(const query *q, bool (*pred)(const qcond *c, void *ctx), void *ctx);

#endif
