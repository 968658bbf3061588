#include "h_rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "rpc.h"

/* The answer of a call, from the cache or from PostgreSQL: 304 when the
 * client holds this ETag, the rows otherwise. Takes res->body (a cache hit's
 * is sent from the entry's bytes, held, not copied). */
static int reply(http_req *req, rpc_result *res)
{
    service *svc = http_service(req);
    const char *inm = http_header(req, "If-None-Match");
    if (inm && !strcmp(inm, res->etag)) {
        http_reply_empty(req, 304);
        if (res->hold)
            rpc_release(res->hold);
        else
            free(res->body);
    } else if (res->hold) {
        http_reply_held(req, 200, "application/json", res->body, res->len, rpc_release, res->hold);
    } else {
        http_reply_take(req, 200, "application/json", res->body, res->len);
    }
    http_header_add(req, "ETag", res->etag);
    char cc[64];
    if (svc->cfg.rpc_cache_ttl > 0)
        snprintf(cc, sizeof cc, "private, max-age=%d", svc->cfg.rpc_cache_ttl);
    else
        snprintf(cc, sizeof cc, "no-store");
    http_header_add(req, "Cache-Control", cc);
    http_header_add(req, "X-Cache", res->cached ? "hit" : "miss");
    return 0;
}

/* The checks that need no PostgreSQL; false when they replied. */
static bool callable(http_req *req)
{
    service *svc = http_service(req);
    if (!svc->rpc)
        return http_reply_error(req, 404, "The page RPC is not configured (--rpc-conninfo)."),
               false;
    if (!rpc_allowed(svc->rpc, http_param(req, "function"))) /* never reaches SQL otherwise */
        return http_reply_error(req, 404, "No such rpc function."), false;
    return true;
}

static void key_free(void *k)
{
    rpc_key_free(k);
}

/* The call of this request: made by h_rpc_hit on the loop and kept for
 * h_rpc, or made here (a token verified on the pool); NULL when it replied. */
static rpc_key *key_of(http_req *req)
{
    rpc_key *k = http_state(req);
    if (k)
        return k;
    json_t *args = http_body_object(req);
    if (!args)
        return NULL;
    storh_err err;
    const buf *raw = http_body(req);
    int rc = rpc_key_new(http_service(req)->rpc, http_param(req, "function"), args, raw->data,
                         raw->len, http_claims(req), &k, &err);
    json_decref(args);
    if (rc) {
        http_reply_storh(req, &err);
        return NULL;
    }
    http_set_state(req, k, key_free);
    return k;
}

int h_rpc_hit(http_req *req)
{
    if (!callable(req))
        return 0;
    rpc_result res;
    const buf *raw = http_body(req); /* a repeat of a cached call: no parse */
    if (rpc_cached_raw(http_service(req)->rpc, http_param(req, "function"), raw->data, raw->len,
                       http_claims(req), &res))
        return reply(req, &res);
    rpc_key *k = key_of(req);
    if (!k)
        return 0;
    return rpc_cached(http_service(req)->rpc, k, &res) ? reply(req, &res) : 1;
}

int h_rpc(http_req *req)
{
    if (!http_state(req) && !callable(req))
        return 0;
    rpc_key *k = key_of(req);
    if (!k)
        return 0;
    rpc_result res = {0};
    storh_err err;
    if (rpc_call(http_service(req)->rpc, k, &res, &err)) {
        http_reply_storh(req, &err);
        if (err.code == STORH_EUNAVAIL) /* saturated, or PostgreSQL away */
            http_header_add(req, "Retry-After", "1");
        return 0;
    }
    return reply(req, &res);
}
