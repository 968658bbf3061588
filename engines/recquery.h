/* recquery: storh's RecordQuery (FORMAT.md 5.7), the streaming filter of
 * DocStore and SegmentedLog streams: after(id), an inclusive millisecond time
 * range on the id, strict equality on top-level fields, and a limit. The
 * query owns the values it is given (it takes its own references). */
#ifndef STORH_RECQUERY_H
#define STORH_RECQUERY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storh_err.h"
#include "uuid7.h"

typedef struct recquery {
    bool has_after;
    char after[UUID7_LEN + 1];
    bool has_from, has_until;
    char min_id[UUID7_LEN + 1]; /* uuid7_min_for_ms(from) */
    char max_id[UUID7_LEN + 1]; /* uuid7_max_for_ms(until) */
    json_t *where;              /* object: field -> scalar or null */
    size_t limit;               /* 0 = none */
} recquery;

void recquery_init(recquery *q);
void recquery_clear(recquery *q);
int recquery_after(recquery *q, const char *id, size_t len, storh_err *err);
/* Either bound may be absent (has_* false). */
int recquery_time_range(recquery *q, bool has_from, int64_t from_ms, bool has_until,
                        int64_t until_ms, storh_err *err);
/* value is borrowed; the query keeps its own reference. */
int recquery_where_equal(recquery *q, const char *field, json_t *value, storh_err *err);
int recquery_limit(recquery *q, long long n, storh_err *err);
/* The id conditions (after, time range). */
bool recquery_match_id(const recquery *q, const char *id, size_t len);
/* The field conditions. */
bool recquery_match_data(const recquery *q, const json_t *data);
/* storh's strict equality (===) of two decoded values. */
bool recquery_strict_equal(const json_t *a, const json_t *b);

#endif
