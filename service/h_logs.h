/* h_logs: the /v1/logs handlers over the segmented log: append (one or
 * NDJSON bulk), get, delete, filtered NDJSON streams across partitions, and
 * compact / retain / stats / verify / repair. Writes run on the worker pool
 * and share fsyncs. */
#ifndef STORHD_H_LOGS_H
#define STORHD_H_LOGS_H

#include <stdbool.h>
#include <stddef.h>

#include "logset.h"

typedef struct http_req http_req;

/* The logs a read of this request's stream covers (every partition of a
 * partitioned stream), through the registry; false when it has replied
 * (404, 500). Free with logset_free. */
bool h_logs_set(http_req *req, logset *ls);

int h_logs_append(http_req *req);
int h_logs_get(http_req *req);
int h_logs_delete(http_req *req);
int h_logs_list(http_req *req);
int h_logs_compact(http_req *req);
int h_logs_retain(http_req *req);
int h_logs_stats(http_req *req);
int h_logs_verify(http_req *req);
int h_logs_repair(http_req *req);
int h_logs_bulk_begin(http_req *req);
int h_logs_bulk_body(http_req *req, const char *data, size_t len);
int h_logs_bulk_end(http_req *req);

#endif
