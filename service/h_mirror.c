#include "h_mirror.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accesslog.h"
#include "fsx.h"
#include "http.h"
#include "mirror.h"
#include "route.h"

typedef struct pusher {
    pthread_t th;
    service *svc;
    mirror *m;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
} pusher;

static pusher *pushers;
static size_t npushers;

/* ---- resolving what a request is about ---- */

static mirror *mirror_for(http_req *req)
{
    service *svc = http_service(req);
    const char *name = http_query(req, "mirror");
    for (size_t i = 0; i < svc->nmirrors; i++)
        if (!name || !strcmp(svc->mirrors[i]->name, name))
            return svc->mirrors[i];
    http_reply_error(req, 404, name ? "No such mirror: %s" : "No mirror is configured.%s",
                     name ? name : "");
    return NULL;
}

/* Release with source_done. A log is created if missing (a pull may
 * restore into it); reads see every partition. Every engine is held by h
 * until registry_release. */
static int source_for(service *svc, registry_holder *h, const mirror_coll *c, mirror_source *src,
                      storh_err *err)
{
    memset(src, 0, sizeof *src);
    if (!c->is_log)
        return registry_docstore(svc->reg, h, c->name, &src->ds, err);
    seglog_opts o;
    int rc = config_log_opts(&svc->cfg, c->name, &o, err);
    rc = rc ? rc : registry_seglog(svc->reg, h, c->name, &o, true, &src->log, err);
    return rc ? rc : registry_logset(svc->reg, h, c->name, &o, &src->logs, err);
}

static void source_done(mirror_source *src)
{
    logset_free(&src->logs);
}

/* The collections a call covers: ?collection=NAME, or every one of the
 * mirror (for "*": every DocStore collection under the root, as
 * docstore_collections finds them). *names: new reference. */
static int collections_of(service *svc, mirror *m, const char *only, json_t **names, storh_err *err)
{
    json_t *out = *names = json_array();
    if (!out)
        return storh_err_oom(err);
    if (only)
        return json_array_append_new(out, json_string(only)) ? storh_err_oom(err) : 0;
    json_t *declared = mirror_collections(m);
    const char *dn;
    json_t *dv;
    json_object_foreach (declared, dn, dv)
        json_array_append_new(out, json_string(dn));
    json_decref(declared);
    if (!m->all_docs)
        return 0;
    json_t *docs;
    int rc = docstore_collections(svc->cfg.root, &docs, err);
    if (rc)
        return rc;
    size_t i, k;
    json_t *v, *have;
    json_array_foreach (docs, i, v) {
        bool seen = false;
        json_array_foreach (out, k, have)
            seen = seen || json_equal(have, v);
        if (!seen)
            json_array_append(out, v);
    }
    json_decref(docs);
    return 0;
}

typedef int (*coll_op)(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *acc,
                       storh_err *err);

/* Runs op for each collection the request covers; acc collects results. */
static int each_collection(http_req *req, coll_op op, json_t *acc)
{
    service *svc = http_service(req);
    mirror *m = mirror_for(req);
    if (!m)
        return -1;
    const char *only = http_query(req, "collection");
    if (only && !route_valid_name(only))
        return http_reply_error(req, 400, "Query parameter collection: not a valid name."), -1;
    json_t *names;
    storh_err err;
    if (collections_of(svc, m, only, &names, &err)) {
        json_decref(names);
        return http_reply_storh(req, &err), -1;
    }
    size_t i;
    json_t *v;
    int rc = 0;
    json_array_foreach (names, i, v) {
        const char *name = json_string_value(v);
        json_t *declared = mirror_collections(m);
        bool is_log = json_is_true(json_object_get(declared, name));
        json_decref(declared);
        const mirror_coll *c = mirror_find(m, name, is_log, &err);
        mirror_source src = {0};
        /* one collection held at a time: a push over every collection must
         * not need room for all of them */
        registry_holder h = {0};
        bool failed = !c || source_for(svc, &h, c, &src, &err) || op(m, c, &src, acc, &err);
        source_done(&src);
        registry_release(svc->reg, &h);
        if (failed) {
            http_reply_storh(req, &err);
            rc = -1;
            break;
        }
    }
    json_decref(names);
    return rc;
}

static int op_install(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *acc,
                      storh_err *err)
{
    (void)src;
    int rc = mirror_install(m, c, err);
    if (!rc)
        json_array_append_new(json_object_get(acc, "tables"), json_string(c->table));
    return rc;
}

int h_mirror_install(http_req *req)
{
    json_t *acc = json_pack("{s[]}", "tables");
    if (each_collection(req, op_install, acc) == 0)
        http_reply_json(req, 200, acc);
    json_decref(acc);
    return 0;
}

static int op_uninstall(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *acc,
                        storh_err *err)
{
    (void)src;
    int rc = mirror_uninstall(m, c, err);
    if (!rc)
        json_array_append_new(json_object_get(acc, "dropped"), json_string(c->table));
    return rc;
}

int h_mirror_uninstall(http_req *req)
{
    json_t *acc = json_pack("{s[]}", "dropped");
    if (each_collection(req, op_uninstall, acc) == 0)
        http_reply_json(req, 200, acc);
    json_decref(acc);
    return 0;
}

static int totals_work(http_req *req, coll_op op, const char *const *keys)
{
    json_t *acc = json_object();
    for (; *keys; keys++)
        json_object_set_new(acc, *keys, json_integer(0));
    if (each_collection(req, op, acc) == 0)
        http_reply_json(req, 200, acc);
    json_decref(acc);
    return 0;
}

static const char *const push_keys[] = {"inserted", "updated", "deleted", "unchanged", NULL};
static const char *const pull_keys[] = {"written", "unchanged", NULL};

int h_mirror_push(http_req *req)
{
    return totals_work(req, mirror_push, push_keys);
}

int h_mirror_rebuild(http_req *req)
{
    return totals_work(req, mirror_rebuild, push_keys);
}

int h_mirror_pull(http_req *req)
{
    return totals_work(req, mirror_pull, pull_keys);
}

static int op_verify(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *acc,
                     storh_err *err)
{
    json_t *stats;
    int rc = mirror_verify(m, c, src, &stats, json_object_get(acc, "errors"), err);
    if (!rc)
        json_object_set_new(json_object_get(acc, "stats"), c->name, stats);
    return rc;
}

int h_mirror_verify(http_req *req)
{
    json_t *acc = json_pack("{s[]s{}}", "errors", "stats");
    if (each_collection(req, op_verify, acc) == 0) {
        json_t *out = json_pack(
            "{sbsOsO}", "ok", json_array_size(json_object_get(acc, "errors")) == 0, "errors",
            json_object_get(acc, "errors"), "stats", json_object_get(acc, "stats"));
        http_reply_owned(req, 200, out);
    }
    json_decref(acc);
    return 0;
}

int h_mirror_flush(http_req *req)
{
    json_t *body = http_body_object(req);
    if (!body)
        return 0;
    service *svc = http_service(req);
    const char *name = json_string_value(json_object_get(body, "collection"));
    mirror *m = mirror_for(req);
    storh_err err;
    const mirror_coll *c = NULL;
    mirror_source src = {0};
    json_t *out = NULL;
    if (!m) {
    } else if (!name || !route_valid_name(name)) {
        http_reply_error(req, 400, "Body: collection must be a collection name.");
    } else if (!(c = mirror_find(m, name, false, &err)) ||
               source_for(svc, http_engines(req), c, &src, &err) ||
               mirror_flush(m, c, &src, json_object_get(body, "ids"), &out, &err)) {
        http_reply_storh(req, &err);
    } else {
        http_reply_owned(req, 200, out);
    }
    source_done(&src);
    json_decref(body);
    return 0;
}

/* ---- background push ---- */

static void push_all(service *svc, mirror *m)
{
    json_t *names;
    storh_err lerr;
    if (collections_of(svc, m, NULL, &names, &lerr)) {
        accesslog_event("background push failed",
                        json_pack("{ssss}", "mirror", m->name, "error", lerr.msg));
        json_decref(names);
        return;
    }
    json_t *acc = json_object();
    size_t i;
    json_t *v;
    json_array_foreach (names, i, v) {
        storh_err err;
        json_t *declared = mirror_collections(m);
        bool is_log = json_is_true(json_object_get(declared, json_string_value(v)));
        json_decref(declared);
        const mirror_coll *c = mirror_find(m, json_string_value(v), is_log, &err);
        mirror_source src = {0};
        registry_holder h = {0};
        bool failed =
            !c || source_for(svc, &h, c, &src, &err) || mirror_push(m, c, &src, acc, &err);
        source_done(&src);
        registry_release(svc->reg, &h);
        if (failed)
            accesslog_event("background push failed",
                            json_pack("{ssssss}", "mirror", m->name, "collection",
                                      json_string_value(v), "error", err.msg));
    }
    json_decref(acc);
    json_decref(names);
}

static void *push_loop(void *p)
{
    pusher *ps = p;
    pthread_mutex_lock(&ps->mu);
    while (!ps->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += ps->m->push_every;
        pthread_cond_timedwait(&ps->cv, &ps->mu, &ts);
        if (ps->stop)
            break;
        pthread_mutex_unlock(&ps->mu);
        push_all(ps->svc, ps->m);
        pthread_mutex_lock(&ps->mu);
    }
    pthread_mutex_unlock(&ps->mu);
    return NULL;
}

int h_mirror_setup(service *svc)
{
    json_t *cfg = svc->cfg.mirrors;
    json_t *owned = NULL;
    if (!cfg) { /* the embedded default: an SQLite file beside the root */
        char path[PATH_MAX];
        fsx_pathf(path, NULL, "%s.mirror.sqlite", svc->cfg.root);
        owned = cfg = json_pack("{s{sssssssi}}", "default", "driver", "sqlite", "path", path,
                                "collections", "*", "push_every_seconds", 0);
    }
    size_t n = json_object_size(cfg);
    svc->mirrors = calloc(n + 1, sizeof *svc->mirrors);
    pushers = calloc(n + 1, sizeof *pushers);
    const char *name;
    json_t *mc;
    int rc = 0;
    json_object_foreach (cfg, name, mc) {
        storh_err err;
        mirror *m;
        if (mirror_new(name, mc, &m, &err)) {
            fprintf(stderr, "storhd: config: %s\n", err.msg);
            rc = -1;
            break;
        }
        svc->mirrors[svc->nmirrors++] = m;
        if (m->push_every > 0) {
            pusher *ps = &pushers[npushers++];
            ps->svc = svc;
            ps->m = m;
            pthread_mutex_init(&ps->mu, NULL);
            pthread_cond_init(&ps->cv, NULL);
            pthread_create(&ps->th, NULL, push_loop, ps);
        }
    }
    json_decref(owned);
    return rc;
}

void h_mirror_teardown(service *svc)
{
    for (size_t i = 0; i < npushers; i++) {
        pthread_mutex_lock(&pushers[i].mu);
        pushers[i].stop = true;
        pthread_cond_signal(&pushers[i].cv);
        pthread_mutex_unlock(&pushers[i].mu);
        pthread_join(pushers[i].th, NULL);
    }
    free(pushers);
    pushers = NULL;
    npushers = 0;
    for (size_t i = 0; i < svc->nmirrors; i++)
        mirror_free(svc->mirrors[i]);
    free(svc->mirrors);
    svc->mirrors = NULL;
    svc->nmirrors = 0;
}
