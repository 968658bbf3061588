/* h_docs: the /v1/docs handlers. Each parses the request, calls one docstore
 * function and renders the result; records are rendered in storh's canonical
 * form ({"id","data"}, the same bytes as the record file). */
#ifndef STORHD_H_DOCS_H
#define STORHD_H_DOCS_H

#include <stdbool.h>
#include <stddef.h>

#include "docstore.h"

typedef struct http_req http_req;

int h_docs_create(http_req *req);
int h_docs_put(http_req *req);
int h_docs_get(http_req *req);
int h_docs_delete(http_req *req);
int h_docs_list(http_req *req);
int h_docs_export(http_req *req);
int h_docs_stats(http_req *req);
int h_docs_health(http_req *req);
int h_docs_bulk_begin(http_req *req);
int h_docs_bulk_body(http_req *req, const char *data, size_t len);
int h_docs_bulk_end(http_req *req);

/* Shared with h_docadmin. The collection the route names, through the
 * registry; on failure it replies itself (with fail_mode, fails the streamed
 * request) and returns NULL. */
docstore *h_docs_store(http_req *req, bool fail_mode);
/* Replies 200 with the JSON fn renders for the route's collection, or with
 * fn's error. */
int h_docs_reply_op(http_req *req, int (*fn)(docstore *, json_t **, storh_err *));

#endif
