/* logquery: QueryBuilder execution on a segmented log (FORMAT.md 5): a scan
 * of the live records in log order (the log has no secondary indexes), with
 * storh's fast count paths (no conditions, or id = x). It runs over a
 * logset, so a partitioned stream is queried across all its partitions. */
#ifndef STORH_LOGQUERY_H
#define STORH_LOGQUERY_H

#include <jansson.h>

#include "query.h"
#include "logset.h"

/* *out: {"records":[...],"next_cursor":id|null}, {"count":n} or explain. */
int logquery_run(const logset *ls, const query *q, json_t **out, storh_err *err);

#endif
