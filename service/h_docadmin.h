/* h_docadmin: the DocStore's query and maintenance routes: _query,
 * _indexes, _schema, _verify, _repair, _reindex, _compact; and /v1/filter,
 * the in-memory predicate filter over posted rows. */
#ifndef STORHD_H_DOCADMIN_H
#define STORHD_H_DOCADMIN_H

typedef struct http_req http_req;

int h_docs_query(http_req *req);
int h_docs_indexes_get(http_req *req);
int h_docs_indexes_put(http_req *req);
int h_docs_schema_get(http_req *req);
int h_docs_schema_put(http_req *req);
int h_docs_verify(http_req *req);
int h_docs_repair(http_req *req);
int h_docs_reindex(http_req *req);
int h_docs_compact(http_req *req);
int h_filter(http_req *req);
int h_logs_query(http_req *req);

#endif
