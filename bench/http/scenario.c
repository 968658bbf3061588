#include "scenario.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

static int write_text(const char *path, const char *text, char *msg, size_t cap)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        snprintf(msg, cap, "could not write %s", path);
        return -1;
    }
    return 0;
}

static void plan_init(const scenario *sc, const scenario_ctx *ctx, scenario_plan *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->paths, sizeof p->paths, "%s/%s.paths", ctx->dir, sc->name);
    p->wrk.method = sc->method;
    p->wrk.paths = p->paths;
    p->wrk.tokens = ctx->tokens;
    p->wrk.ctype = "application/json";
}

/* A JSON object of about ctx->arg_bytes once "{u}" (a number of up to 13
 * digits) is substituted, written as the plan's body template. */
static int write_body(const scenario *sc, const scenario_ctx *ctx, scenario_plan *p,
                      const char *req, char *msg, size_t cap)
{
    json_t *o = json_pack("{sisIss}", "limit", 100, "trial", (json_int_t)ctx->salt, "req", req);
    char *bare = json_dumps(o, JSON_COMPACT);
    size_t used = strlen(bare) + strlen(",\"pad\":\"\"") + 10 - strlen(req);
    size_t padn = ctx->arg_bytes > used ? ctx->arg_bytes - used : 0;
    char *pad = malloc(padn + 1);
    memset(pad, 'x', padn);
    pad[padn] = '\0';
    json_object_set_new(o, "pad", json_string(pad));
    char *text = json_dumps(o, JSON_COMPACT);
    snprintf(p->body, sizeof p->body, "%s/%s.body", ctx->dir, sc->name);
    int rc = text ? write_text(p->body, text, msg, cap) : -1;
    p->wrk.body = p->body;
    free(text);
    free(pad);
    free(bare);
    json_decref(o);
    return rc;
}

/* A worker's loop on the queue "trial" (trial.lua): enqueue, claim, complete. */
static int prep_queue_cycle(const scenario *sc, const scenario_ctx *ctx, scenario_plan *p,
                            char *msg, size_t cap)
{
    (void)sc;
    (void)ctx;
    (void)msg;
    (void)cap;
    p->wrk.queue = "trial";
    return 0;
}

static const char *auth_header(const scenario_ctx *ctx, char *out, size_t cap)
{
    if (!ctx->token)
        return NULL;
    snprintf(out, cap, "Authorization: Bearer %s", ctx->token);
    return out;
}

/* Stores ctx->records records under ids the API hands out, with one _bulk
 * request, and makes their paths the plan. */
static int prep_doc_get(const scenario *sc, const scenario_ctx *ctx, scenario_plan *p, char *msg,
                        size_t cap)
{
    char hdr[8192], path[64];
    const char *auth = auth_header(ctx, hdr, sizeof hdr);
    json_t *ids = json_array();
    for (int have = 0; have < ctx->records;) {
        int n = ctx->records - have > 1000 ? 1000 : ctx->records - have;
        snprintf(path, sizeof path, "/v1/uuid?count=%d", n);
        client_resp r;
        json_t *got = NULL;
        if (client_do(ctx->base, "GET", path, NULL, NULL, 0, auth, 0, &r) == 0 && r.status == 200)
            got = json_loadb(r.body, r.len, 0, NULL);
        client_free(&r);
        json_t *arr = json_object_get(got, "ids");
        if (!json_is_array(arr)) {
            json_decref(got);
            json_decref(ids);
            snprintf(msg, cap, "GET %s%s failed", ctx->base, path);
            return -1;
        }
        json_array_extend(ids, arr);
        json_decref(got);
        have += n;
    }
    char *rows = NULL;
    size_t rows_len = 0;
    FILE *nd = open_memstream(&rows, &rows_len);
    FILE *paths = fopen(p->paths, "w");
    size_t i;
    json_t *id;
    json_array_foreach (ids, i, id) {
        json_t *row = json_pack("{sOs{sssssIs[ss]ss}}", "id", id, "data", "title", "Trial record",
                                "kind", "page", "n", (json_int_t)i, "tags", "trial", "http", "body",
                                "A record the doc-get scenario reads back by id.");
        char *text = json_dumps(row, JSON_COMPACT);
        fprintf(nd, "%s\n", text);
        free(text);
        json_decref(row);
        if (paths)
            fprintf(paths, "/v1/docs/trial/%s\n", json_string_value(id));
    }
    fclose(nd);
    json_decref(ids);
    int ok = paths && fclose(paths) == 0;
    client_resp r;
    ok = ok && client_do(ctx->base, "POST", "/v1/docs/trial/_bulk", "application/x-ndjson", rows,
                         rows_len, auth, 0, &r) == 0;
    ok = ok && r.status == 200;
    if (!ok)
        snprintf(msg, cap, "storing %d records for %s failed (status %ld)", ctx->records, sc->name,
                 r.status);
    client_free(&r);
    free(rows);
    return ok ? 0 : -1;
}

/* doc-post-ix: the collection gets an equality index on "req" (a new value
 * per request, so every write creates an equality file; not unique, as the
 * warm-up and the measured run send the same values) and a range index on
 * "limit" (every write appends a line to its delta): the index updates each
 * create causes are published with it. */
static int prep_doc_post_ix(const scenario *sc, const scenario_ctx *ctx, scenario_plan *p,
                            char *msg, size_t cap)
{
    (void)p;
    char hdr[8192];
    const char *auth = auth_header(ctx, hdr, sizeof hdr);
    const char *defs = "{\"fields\":[{\"field\":\"req\"},"
                       "{\"field\":\"limit\",\"range\":true}]}";
    client_resp r = {0};
    int ok = client_do(ctx->base, "PUT", "/v1/docs/trial/_indexes", "application/json", defs,
                       strlen(defs), auth, 0, &r) == 0 &&
             r.status == 200;
    if (!ok)
        snprintf(msg, cap, "defining the indexes of %s failed (status %ld)", sc->name, r.status);
    client_free(&r);
    return ok ? 0 : -1;
}

static const scenario table[] = {
    {"rpc-miss", "page RPC, cache miss", "POST", "/rpc/{function}",
     "POST /rpc/page with a 1 KiB JSON argument that no earlier request sent, so every call "
     "goes to PostgreSQL (page() returns 100 rows of the token's tenant)",
     true, "/rpc/page", "{u}", NULL, 0},
    {"rpc-hit", "page RPC, cache hit", "POST", "/rpc/{function}",
     "POST /rpc/page with one 1 KiB argument per token (10 argument sets), so after the first "
     "round every call is served from the response cache",
     true, "/rpc/page", "{k}", NULL, 0},
    {"doc-get", "DocStore read", "GET", "/v1/docs/{collection}/{id}",
     "GET /v1/docs/trial/{id} over the stored records in turn (STAT-validated record cache)", false,
     NULL, NULL, prep_doc_get, 0},
    {"log-post", "log append", "POST", "/v1/logs/{stream}",
     "POST /v1/logs/trial with a 1 KiB JSON record, acknowledged after fsync (group commit)", false,
     "/v1/logs/trial", "event", NULL, 0},
    {"doc-post", "DocStore create", "POST", "/v1/docs/{collection}",
     "POST /v1/docs/trial with a 1 KiB JSON record: one file per record, published in groups "
     "with the concurrent writes (group commit)",
     false, "/v1/docs/trial", "record", NULL, 0},
    {"doc-post-1", "DocStore create, one connection", "POST", "/v1/docs/{collection}",
     "doc-post from a single connection, one request after the other: the rate group commit "
     "is compared with",
     false, "/v1/docs/trial", "record", NULL, 1},
    {"doc-post-ix", "DocStore create, indexed", "POST", "/v1/docs/{collection}",
     "doc-post on a collection with an equality index on \"req\" (a new value per request) and a "
     "range index on \"limit\": every create also writes an equality file and a range delta line",
     false, "/v1/docs/trial", "{u}", prep_doc_post_ix, 0},
    {"doc-post-ix-1", "DocStore create, indexed, one connection", "POST", "/v1/docs/{collection}",
     "doc-post-ix from a single connection, one request after the other", false, "/v1/docs/trial",
     "{u}", prep_doc_post_ix, 1},
    {"queue-cycle", "queue worker loop", "POST", "/v1/queues/{queue}/*",
     "A worker's loop on /v1/queues/trial: enqueue a 1 KiB job, claim one, complete what was "
     "claimed (keep_done=false); every event fsynced (group commit); the depth stays bounded",
     false, "/v1/queues/trial/jobs", "job", prep_queue_cycle, 0},
};

int scenario_prepare(const scenario *sc, const scenario_ctx *ctx, scenario_plan *p, char *msg,
                     size_t cap)
{
    plan_init(sc, ctx, p);
    if (sc->path) {
        char line[256];
        snprintf(line, sizeof line, "%s\n", sc->path);
        if (write_text(p->paths, line, msg, cap) != 0 ||
            write_body(sc, ctx, p, sc->req, msg, cap) != 0)
            return -1;
    }
    return sc->prepare ? sc->prepare(sc, ctx, p, msg, cap) : 0;
}

const scenario *scenario_find(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, name))
            return &table[i];
    return NULL;
}

const scenario *scenario_all(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}
