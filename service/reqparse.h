/* reqparse: the query-string readers handlers share: integers with bounds,
 * booleans, and storh's RecordQuery (after, limit, from_ms, until_ms,
 * eq.FIELD). Each returns 0, or STORH_EINVAL (400) with a message in err
 * that names the bad parameter. */
#ifndef STORHD_REQPARSE_H
#define STORHD_REQPARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "recquery.h"
#include "storh_err.h"

typedef struct http_req http_req;

/* *out = the integer in query arg key, or dflt when absent; STORH_EINVAL
 * when it is not an integer in [min, max]. */
int reqparse_int(http_req *req, const char *key, long long dflt, long long min, long long max,
                 long long *out, storh_err *err);
int reqparse_bool(http_req *req, const char *key, bool dflt, bool *out, storh_err *err);
/* Fills q from every query argument; any other argument is an error. */
int reqparse_recquery(http_req *req, recquery *q, storh_err *err);
/* Parses a full decimal integer. */
bool reqparse_ll(const char *v, long long *out);

#endif
