/* reqparse: the query-string readers handlers share: integers with bounds,
 * booleans, and storh's RecordQuery (after, limit, from_ms, until_ms,
 * eq.FIELD) with a message that names the bad parameter. */
#ifndef STORHD_REQPARSE_H
#define STORHD_REQPARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "recquery.h"

typedef struct http_req http_req;

/* *out = the integer in query arg key, or dflt when absent. false (and a
 * message) when it is not an integer in [min, max]. */
bool reqparse_int(http_req *req, const char *key, long long dflt, long long min, long long max,
                  long long *out, char *msg, size_t cap);
bool reqparse_bool(http_req *req, const char *key, bool dflt, bool *out, char *msg, size_t cap);
/* Fills q from every query argument; any other argument is an error. */
bool reqparse_recquery(http_req *req, recquery *q, char *msg, size_t cap);
/* Parses a full decimal integer. */
bool reqparse_ll(const char *v, long long *out);

#endif
