/* http_req: what a handler reads of its request (http.h): the router's
 * path params, the query arguments, the headers, the verified claims, the
 * buffered body and the handler's per-request state. */
#include <microhttpd.h>
#include <string.h>

#include "http.h"
#include "http_int.h"
#include "sjson.h"

service *http_service(http_req *req)
{
    return req->svc;
}

registry_holder *http_engines(http_req *req)
{
    return &req->engines;
}

const char *http_param(http_req *req, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < req->m.nparams; i++)
        if (req->m.params[i].name_len == n && !memcmp(req->m.params[i].name, name, n))
            return req->m.params[i].value;
    return NULL;
}

const char *http_query(http_req *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

typedef struct each_ctx {
    void (*fn)(void *, const char *, const char *);
    void *ctx;
} each_ctx;

static enum MHD_Result each_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
    (void)kind;
    each_ctx *e = cls;
    e->fn(e->ctx, k, v ? v : "");
    return MHD_YES;
}

void http_query_each(http_req *req, void (*fn)(void *ctx, const char *k, const char *v), void *ctx)
{
    each_ctx e = {fn, ctx};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, each_arg, &e);
}

const char *http_header(http_req *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const json_t *http_claims(http_req *req)
{
    return req->claims;
}

const buf *http_body(http_req *req)
{
    return &req->body;
}

void http_set_state(http_req *req, void *state, void (*free_fn)(void *))
{
    req->state = state;
    req->state_free = free_fn;
}

void *http_state(http_req *req)
{
    return req->state;
}

json_t *http_body_object(http_req *req)
{
    storh_err err;
    json_t *v = sjson_decode(req->body.data ? req->body.data : "", req->body.len, &err);
    if (!v) {
        http_reply_error(req, 400, "Request body: %s", err.msg);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        http_reply_error(req, 400, "Request body must be a JSON object.");
        return NULL;
    }
    return v;
}
