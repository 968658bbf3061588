#include "h_rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "rpc.h"

static int rpc_work(http_req *req)
{
    service *svc = http_service(req);
    const char *fn = http_param(req, "function");
    json_t *args = http_body_object(req);
    if (!args)
        return 0;
    rpc_result res;
    storh_err err;
    int rc = rpc_call(svc->rpc, fn, args, http_claims(req), &res, &err);
    json_decref(args);
    if (rc)
        return http_reply_storh(req, &err);
    const char *inm = http_header(req, "If-None-Match");
    if (inm && !strcmp(inm, res.etag))
        http_reply_empty(req, 304);
    else
        http_reply_bytes(req, 200, "application/json", res.body, res.len);
    http_header_add(req, "ETag", res.etag);
    char cc[64];
    if (svc->cfg.rpc_cache_ttl > 0)
        snprintf(cc, sizeof cc, "private, max-age=%d", svc->cfg.rpc_cache_ttl);
    else
        snprintf(cc, sizeof cc, "no-store");
    http_header_add(req, "Cache-Control", cc);
    http_header_add(req, "X-Cache", res.cached ? "hit" : "miss");
    free(res.body);
    return 0;
}

int h_rpc(http_req *req)
{
    service *svc = http_service(req);
    const char *fn = http_param(req, "function");
    if (!svc->rpc)
        return http_reply_error(req, 404, "The page RPC is not configured (--rpc-conninfo).");
    if (!rpc_allowed(svc->rpc, fn)) /* the name never reaches SQL unless allow-listed */
        return http_reply_error(req, 404, "No such rpc function.");
    http_defer(req, rpc_work);
    return 0;
}
