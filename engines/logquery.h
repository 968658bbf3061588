/* logquery: QueryBuilder execution on a segmented log (FORMAT.md 5): a scan
 * of the live records in log order (the log has no secondary indexes), with
 * storh's fast count paths (no conditions, or id = x). */
#ifndef STORH_LOGQUERY_H
#define STORH_LOGQUERY_H

#include <jansson.h>

#include "query.h"
#include "seglog.h"

/* *out: {"records":[...],"next_cursor":id|null}, {"count":n} or explain. */
int logquery_run(seglog *s, const query *q, json_t **out, storh_err *err);

#endif
