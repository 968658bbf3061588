#include "h_docs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apierr.h"
#include "bulkspool.h"
#include "docstore.h"
#include "http.h"
#include "ndjson.h"
#include "reqparse.h"
#include "sjson.h"
#include "uuid7.h"

docstore *h_docs_store(http_req *req, bool fail_mode)
{
    docstore *ds = NULL;
    storh_err err;
    if (registry_docstore(http_service(req)->reg, http_engines(req), http_param(req, "collection"),
                          &ds, &err)) {
        if (fail_mode)
            http_fail_storh(req, &err);
        else
            http_reply_storh(req, &err);
        return NULL;
    }
    return ds;
}

/* Replies with the canonical record, its ETag and, for 201, its Location. */
static int reply_record(http_req *req, int status, const char *id, const json_t *data)
{
    buf b = BUF_INIT;
    storh_err err;
    if (docstore_encode_record(&b, id, data, &err)) {
        buf_free(&b);
        return http_reply_storh(req, &err);
    }
    char etag[20];
    rcache_etag_of(b.data, b.len, etag);
    http_reply_bytes(req, status, "application/json", b.data, b.len);
    http_header_add(req, "ETag", etag);
    if (status == 201) {
        char loc[160];
        snprintf(loc, sizeof loc, "/v1/docs/%s/%s", http_param(req, "collection"), id);
        http_header_add(req, "Location", loc);
    }
    buf_free(&b);
    return 0;
}

static int put_common(http_req *req, const char *id)
{
    docstore *ds = h_docs_store(req, false);
    if (!ds)
        return 0;
    json_t *data = http_body_object(req);
    if (!data)
        return 0;
    char out_id[UUID7_LEN + 1];
    bool existed = false;
    storh_err err;
    int rc = docstore_put(ds, id, data, out_id, &existed, &err);
    if (rc)
        http_reply_storh(req, &err);
    else
        reply_record(req, (id && existed) ? 200 : 201, out_id, data);
    json_decref(data);
    return 0;
}

int h_docs_create(http_req *req)
{
    return put_common(req, NULL);
}

int h_docs_put(http_req *req)
{
    return put_common(req, http_param(req, "id"));
}

static bool etag_matches(const char *header, const char *etag)
{
    if (!header)
        return false;
    if (!strcmp(header, "*"))
        return true;
    /* a comma separated list, weak or strong */
    const char *p = header;
    size_t n = strlen(etag);
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!strncmp(p, "W/", 2))
            p += 2;
        if (!strncmp(p, etag, n) && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
            return true;
        while (*p && *p != ',')
            p++;
    }
    return false;
}

/* The cached answer bytes go out by reference (held until MHD frees the
 * response), so a hit neither encodes, hashes nor copies the record. */
int h_docs_get(http_req *req)
{
    docstore *ds = h_docs_store(req, false);
    if (!ds)
        return 0;
    rcache_blob *rec;
    storh_err err;
    if (docstore_get_answer(ds, http_param(req, "id"), &rec, &err))
        return http_reply_storh(req, &err);
    char etag[sizeof rec->etag];
    memcpy(etag, rec->etag, sizeof etag);
    if (etag_matches(http_header(req, "If-None-Match"), etag)) {
        rcache_blob_release(rec);
        http_reply_empty(req, 304);
    } else {
        http_reply_held(req, 200, "application/json", rec->data, rec->len, rcache_blob_release,
                        rec);
    }
    http_header_add(req, "ETag", etag);
    return 0;
}

int h_docs_delete(http_req *req)
{
    docstore *ds = h_docs_store(req, false);
    if (!ds)
        return 0;
    bool existed = false;
    storh_err err;
    if (docstore_delete(ds, http_param(req, "id"), &existed, &err))
        return http_reply_storh(req, &err);
    if (!existed)
        return http_reply_error(req, 404, "Record not found: %s", http_param(req, "id"));
    return http_reply_empty(req, 204);
}

/* ---- streamed reads: GET list and _export ---- */

typedef struct list_state {
    docstore_iter *it;
    recquery q;
} list_state;

static void list_free(void *p)
{
    list_state *s = p;
    docstore_iter_close(s->it);
    recquery_clear(&s->q);
    free(s);
}

static int list_fill(void *p, buf *out, size_t max, storh_err *err)
{
    list_state *s = p;
    while (out->len < max) {
        const char *id, *raw;
        size_t rawlen;
        json_t *data;
        int rc = docstore_iter_next_raw(s->it, &id, &raw, &rawlen, &data, err);
        if (rc == 0)
            return 1;
        if (rc < 0)
            return rc; /* a truncated transfer, never a silent gap */
        if (raw) {     /* the file is its canonical row: passed on as it is */
            buf_append(out, raw, rawlen);
            if (buf_failed(out))
                return storh_err_oom(err);
            continue;
        }
        size_t mark = out->len;
        rc = docstore_encode_record(out, id, data, err);
        json_decref(data);
        if (rc) {
            out->len = mark; /* only whole rows before the abort */
            return rc;
        }
    }
    return 0;
}

static int start_stream(http_req *req, bool with_query)
{
    docstore *ds = h_docs_store(req, false);
    if (!ds)
        return 0;
    list_state *s = calloc(1, sizeof *s);
    if (!s)
        return http_reply_error(req, 503, "Out of memory.");
    recquery_init(&s->q);
    storh_err err;
    if (with_query && reqparse_recquery(req, &s->q, &err)) {
        list_free(s);
        return http_reply_storh(req, &err);
    }
    if (docstore_iter_open(ds, &s->q, &s->it, &err)) {
        list_free(s);
        return http_reply_storh(req, &err);
    }
    return http_reply_stream(req, 200, "application/x-ndjson", list_fill, s, list_free);
}

int h_docs_list(http_req *req)
{
    return start_stream(req, true);
}

int h_docs_export(http_req *req)
{
    return start_stream(req, false);
}

int h_docs_reply_op(http_req *req, int (*fn)(docstore *, json_t **, storh_err *))
{
    docstore *ds = h_docs_store(req, false);
    if (!ds)
        return 0;
    json_t *out;
    storh_err err;
    if (fn(ds, &out, &err))
        return http_reply_storh(req, &err);
    return http_reply_owned(req, 200, out);
}

int h_docs_stats(http_req *req)
{
    return h_docs_reply_op(req, docstore_stats);
}

int h_docs_health(http_req *req)
{
    return h_docs_reply_op(req, docstore_health);
}

/* ---- _bulk: NDJSON rows staged as they arrive, published at the end ---- */

typedef struct bulk_state {
    docstore_stage *st;
    ndjson_lines lines;
    bool import;
    bulkspool spool; /* active: the collection did not exist, the body is checked and spooled */
} bulk_state;

static void bulk_free(void *p)
{
    bulk_state *b = p;
    docstore_stage_abort(b->st); /* no-op after a commit */
    ndjson_lines_free(&b->lines);
    bulkspool_close(&b->spool);
    free(b);
}

/* The checks the stage makes of a row when its collection has no schema
 * and no index yet (it does not exist): the row's shape and its id. */
static int bulk_check_row(void *ctx, http_req *req, const char *p, size_t n, size_t lineno)
{
    const bulk_state *b = ctx;
    storh_err err;
    json_t *row = sjson_decode(p, n, &err);
    int rc = row ? 0 : STORH_EINVAL;
    if (row && !json_is_object(row) && !(b->import && json_is_array(row))) {
        rc = storh_err_set(&err, STORH_EINVAL, "%s",
                           b->import ? "JSONL import rows must be objects."
                                     : "Bulk rows must be JSON objects.");
    } else if (json_is_object(row)) {
        const json_t *id = json_object_get(row, "id");
        if (json_is_string(id) && !uuid7_is_valid(json_string_value(id), json_string_length(id)))
            rc = storh_err_set(&err, STORH_EINVAL, "Invalid UUIDv7 value.");
    }
    json_decref(row);
    if (rc)
        return http_fail(req, apierr_status(rc), "Line %zu: %s", lineno, err.msg);
    return 0;
}

static int bulk_row(void *ctx, http_req *req, const char *p, size_t n, size_t lineno)
{
    bulk_state *b = ctx;
    char id[UUID7_LEN + 1];
    storh_err err;
    int rc;
    if (b->import) {
        rc = docstore_stage_import_line(b->st, p, n, id, &err);
    } else {
        json_t *row = sjson_decode(p, n, &err);
        rc = row ? docstore_stage_element(b->st, row, id, &err) : STORH_EINVAL;
        json_decref(row);
    }
    if (rc) {
        docstore_stage_abort(b->st);
        b->st = NULL;
        return http_fail(req, apierr_status(rc), "Line %zu: %s", lineno, err.msg);
    }
    return 0;
}

int h_docs_bulk_begin(http_req *req)
{
    const char *mode = http_query(req, "mode");
    if (mode && strcmp(mode, "put") && strcmp(mode, "import"))
        return http_fail(req, 400, "Query parameter mode: must be put or import.");
    docstore *ds = h_docs_store(req, true);
    if (!ds)
        return -1;
    bulk_state *b = calloc(1, sizeof *b);
    if (!b)
        return http_fail(req, 503, "Out of memory.");
    b->spool.fd = -1;
    b->import = mode && !strcmp(mode, "import");
    http_set_state(req, b, bulk_free);
    size_t max = http_service(req)->cfg.max_body;
    storh_err err;
    if (!docstore_exists(ds)) { /* created at the end, so a refused bulk creates nothing */
        ndjson_lines_init(&b->lines, max, bulk_check_row, b);
        if (bulkspool_open(&b->spool, http_service(req)->cfg.root, &err))
            return http_fail_storh(req, &err);
        return 0;
    }
    ndjson_lines_init(&b->lines, max, bulk_row, b);
    if (docstore_stage_begin(ds, &b->st, &err))
        return http_fail_storh(req, &err);
    return 0;
}

int h_docs_bulk_body(http_req *req, const char *data, size_t len)
{
    bulk_state *b = http_state(req);
    return bulkspool_feed(&b->spool, &b->lines, req, data, len);
}

/* The body of a new collection's bulk, checked whole: staged now through
 * the row path of an existing collection (its first row creates it). */
static int bulk_stage_pending(http_req *req, bulk_state *b)
{
    docstore *ds = h_docs_store(req, true);
    if (!ds)
        return -1;
    storh_err err;
    ndjson_lines_free(&b->lines);
    ndjson_lines_init(&b->lines, http_service(req)->cfg.max_body, bulk_row, b);
    if (docstore_stage_begin(ds, &b->st, &err))
        return http_fail_storh(req, &err);
    return bulkspool_replay(&b->spool, &b->lines, req);
}

int h_docs_bulk_end(http_req *req)
{
    bulk_state *b = http_state(req);
    if (bulkspool_active(&b->spool) && bulk_stage_pending(req, b))
        return 0;
    size_t written = 0, staged = docstore_stage_count(b->st);
    storh_err err;
    int rc = docstore_stage_commit(b->st, &written, &err);
    b->st = NULL;
    return http_reply_bulk(req, rc, written, staged, &err);
}
