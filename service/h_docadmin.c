#include "h_docadmin.h"

#include <string.h>

#include "docstore.h"
#include "h_docs.h"
#include "h_logs.h"
#include "http.h"
#include "logquery.h"
#include "query.h"
#include "reqparse.h"

/* Parses the body as a query; replies 400 itself on failure. */
static bool body_query(http_req *req, query *q)
{
    json_t *body = http_body_object(req);
    if (!body)
        return false;
    storh_err err;
    int rc = query_parse(body, q, &err);
    json_decref(body);
    if (rc) {
        http_reply_storh(req, &err);
        return false;
    }
    return true;
}

int h_docs_query(http_req *req)
{
    docstore *ds = h_docs_store(req, false);
    query q;
    if (!ds || !body_query(req, &q))
        return 0;
    storh_err err;
    /* from the index in id order: the records' cached bytes, no trees */
    buf b = BUF_INIT;
    bool served;
    int rc = docstore_query_answer(ds, &q, &b, &served, &err);
    if (!rc && served) {
        query_free(&q);
        return http_reply_take(req, 200, "application/json", b.data, b.len); /* takes b */
    }
    buf_free(&b);
    json_t *out;
    if (!rc)
        rc = docstore_query(ds, &q, &out, &err);
    query_free(&q);
    if (rc)
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}

int h_logs_query(http_req *req)
{
    logset ls;
    if (!h_logs_set(req, &ls))
        return 0;
    query q;
    if (!body_query(req, &q)) {
        logset_free(&ls);
        return 0;
    }
    json_t *out;
    storh_err err;
    int rc = logquery_run(&ls, &q, &out, &err);
    query_free(&q);
    logset_free(&ls);
    if (rc)
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}

int h_docs_indexes_get(http_req *req)
{
    docstore *ds = h_docs_store(req, false);
    return ds ? http_reply_owned(req, 200, docstore_indexes(ds)) : 0;
}

int h_docs_indexes_put(http_req *req)
{
    bool rebuild;
    storh_err perr;
    if (reqparse_bool(req, "rebuild", true, &rebuild, &perr))
        return http_reply_storh(req, &perr);
    docstore *ds = h_docs_store(req, false);
    json_t *body = ds ? http_body_object(req) : NULL;
    if (!body)
        return 0;
    json_t *out;
    storh_err err;
    int rc = docstore_define_indexes(ds, body, rebuild, &out, &err);
    json_decref(body);
    return rc ? http_reply_storh(req, &err) : http_reply_owned(req, 200, out);
}

int h_docs_schema_get(http_req *req)
{
    docstore *ds = h_docs_store(req, false);
    return ds ? http_reply_owned(req, 200, docstore_schema(ds)) : 0;
}

int h_docs_schema_put(http_req *req)
{
    docstore *ds = h_docs_store(req, false);
    json_t *body = ds ? http_body_object(req) : NULL;
    if (!body)
        return 0;
    json_t *out;
    storh_err err;
    int rc = docstore_set_schema(ds, body, &out, &err);
    json_decref(body);
    return rc ? http_reply_storh(req, &err) : http_reply_owned(req, 200, out);
}

int h_docs_verify(http_req *req)
{
    return h_docs_reply_op(req, docstore_health);
}

int h_docs_repair(http_req *req)
{
    return h_docs_reply_op(req, docstore_repair);
}

int h_docs_reindex(http_req *req)
{
    return h_docs_reply_op(req, docstore_reindex);
}

int h_docs_compact(http_req *req)
{
    return h_docs_reply_op(req, docstore_compact);
}

int h_filter(http_req *req)
{
    json_t *body = http_body_object(req);
    if (!body)
        return 0;
    json_t *rows = json_object_get(body, "rows");
    json_t *where = json_object_get(body, "where");
    if (!json_is_array(rows) || (where && !json_is_array(where))) {
        json_decref(body);
        return http_reply_error(req, 400, "Body needs \"rows\": [...] and \"where\": [...].");
    }
    query q;
    memset(&q, 0, sizeof q);
    storh_err err;
    if (where && query_parse_where(where, &q, &err)) {
        json_decref(body);
        return http_reply_storh(req, &err);
    }
    json_t *out = json_array();
    size_t i;
    json_t *row;
    json_array_foreach (rows, i, row) {
        if (query_match(&q, NULL, row))
            json_array_append(out, row);
    }
    query_free(&q);
    json_decref(body);
    return http_reply_owned(req, 200, json_pack("{so}", "rows", out));
}
