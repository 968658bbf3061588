#include "h_system.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "budget.h"
#include "http.h"
#include "metrics.h"
#include "routes.h"
#include "rpc.h"
#include "uuid7.h"
#include "wstats.h"

#define UUID_MAX_COUNT 1000

int h_healthz(http_req *req)
{
    json_t *o = json_pack("{ss}", "status", "ok");
    return http_reply_owned(req, 200, o);
}

/* On the worker pool: pinging PostgreSQL may block for its connect timeout. */
int h_readyz(http_req *req)
{
    service *svc = http_service(req);
    const char *root = svc->cfg.root;
    json_t *checks = json_object();
    bool ok = true;
    struct statvfs vfs;
    if (access(root, W_OK) != 0) {
        json_object_set_new(checks, "root", json_string(strerror(errno)));
        ok = false;
    } else if (statvfs(root, &vfs) == 0 && vfs.f_bavail == 0) {
        json_object_set_new(checks, "root", json_string("no space left"));
        ok = false;
    } else {
        json_object_set_new(checks, "root", json_string("ok"));
    }
    /* a store whose fsync failed refuses writes until a restart: name them */
    wstats_store bad[16];
    size_t nbad = wstats_poisoned_list(bad, sizeof bad / sizeof bad[0]);
    if (nbad) {
        buf b = BUF_INIT;
        buf_appends(&b, "refusing writes after a failed fsync (restart storhd):");
        for (size_t i = 0; i < nbad && i < sizeof bad / sizeof bad[0]; i++)
            buf_printf(&b, "%s %s %s (%s)", i ? "," : "", wstats_kind_name(bad[i].kind),
                       bad[i].name, strerror(bad[i].errnum));
        if (nbad > sizeof bad / sizeof bad[0])
            buf_printf(&b, " and %zu more", nbad - sizeof bad / sizeof bad[0]);
        json_object_set_new(checks, "stores", json_stringn(b.data, b.len));
        buf_free(&b);
        ok = false;
    } else {
        json_object_set_new(checks, "stores", json_string("ok"));
    }
    if (svc->rpc) { /* the page RPC cannot answer without its PostgreSQL */
        bool up = rpc_reachable(svc->rpc);
        json_object_set_new(checks, "postgres", json_string(up ? "ok" : "unreachable"));
        ok = ok && up;
    }
    char cause[256];
    bool degraded = budget_degraded(cause, sizeof cause);
    /* a limit hit in the last seconds: out of rotation until load drops */
    if (degraded)
        json_object_set_new(checks, "resources", json_string(cause));
    json_t *o = json_pack("{sssO}", "status",
                          degraded ? "degraded"
                          : ok     ? "ready"
                                   : "not_ready",
                          "checks", checks);
    ok = ok && !degraded;
    json_decref(checks);
    return http_reply_owned(req, ok ? 200 : 503, o);
}

int h_metrics(http_req *req)
{
    buf b = BUF_INIT;
    metrics_render(&b, http_service(req));
    http_reply_bytes(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
    buf_free(&b);
    return 0;
}

int h_openapi(http_req *req)
{
    size_t len;
    const char *doc = routes_openapi(&len);
    if (!doc)
        return http_reply_error(req, 500, "The OpenAPI document could not be built.");
    return http_reply_bytes(req, 200, "application/json", doc, len);
}

int h_uuid_new(http_req *req)
{
    long n = 1;
    const char *c = http_query(req, "count");
    if (c) {
        char *end;
        errno = 0;
        n = strtol(c, &end, 10);
        if (errno || end == c || *end || n < 1 || n > UUID_MAX_COUNT)
            return http_reply_error(req, 400, "Query parameter count: must be 1..%d.",
                                    UUID_MAX_COUNT);
    }
    json_t *ids = json_array();
    for (long i = 0; i < n; i++) {
        char id[UUID7_LEN + 1];
        storh_err err;
        if (uuid7_generate(id, -1, &err)) {
            json_decref(ids);
            return http_reply_storh(req, &err);
        }
        json_array_append_new(ids, json_string(id));
    }
    json_t *o = json_pack("{so}", "ids", ids);
    return http_reply_owned(req, 200, o);
}

int h_uuid_check(http_req *req)
{
    const char *id = http_param(req, "uuid");
    int64_t ms;
    json_t *o = uuid7_timestamp(id, strlen(id), &ms, NULL) == 0
                    ? json_pack("{sbsI}", "valid", 1, "timestamp_ms", (json_int_t)ms)
                    : json_pack("{sb}", "valid", 0);
    return http_reply_owned(req, 200, o);
}
