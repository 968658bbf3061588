#include "crashkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../tmpdir.h"
#include "client.h"
#include "daemon.h"

/* ---- the ledger ---- */

unsigned long long crashkit_rnd(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

void *crashkit_grow(void *p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return p;
    *cap = *cap * 2 + 64;
    void *q = realloc(p, *cap * size);
    if (!q)
        abort();
    return q;
}

crashkit_doc *crashkit_new_doc(crashkit_ledger *l)
{
    l->docs = crashkit_grow(l->docs, &l->capdocs, l->ndocs, sizeof *l->docs);
    crashkit_doc *e = &l->docs[l->ndocs++];
    memset(e, 0, sizeof *e);
    uuid7_generate(e->id, -1, NULL);
    e->acked = e->pending = -1;
    return e;
}

void crashkit_ledger_free(crashkit_ledger *l)
{
    free(l->docs);
    free(l->logs);
    idset_free(&l->enqueued);
    idset_free(&l->completed);
    idset_free(&l->complete_tried);
    memset(l, 0, sizeof *l);
}

/* ---- writes ---- */

atomic_long crashkit_5xx;

long crashkit_call(const char *base, const char *method, const char *path, const char *body,
                   json_t **out)
{
    long st = client_json(base, method, path, body, out);
    if (st >= 500) {
        atomic_fetch_add(&crashkit_5xx, 1);
        fprintf(stderr, "%s %s: %ld\n", method, path, st);
    }
    return st;
}

bool crashkit_put_doc(const char *base, crashkit_ledger *l, const char *coll, const char *body,
                      long n, bool overwrite)
{
    crashkit_doc *e = overwrite && l->ndocs ? &l->docs[crashkit_rnd(&l->rng) % l->ndocs] : NULL;
    if (e && (e->acked < 0 || e->pending >= 0 || e->deleted || e->delete_pending))
        e = NULL;
    if (!e)
        e = crashkit_new_doc(l);
    e->pending = n;
    char path[160];
    snprintf(path, sizeof path, "/v1/docs/%s/%s", coll, e->id);
    long st = crashkit_call(base, "PUT", path, body, NULL);
    if (st == 200 || st == 201) {
        e->acked = n;
        e->pending = -1;
    }
    return st != 0;
}

bool crashkit_delete_doc(const char *base, crashkit_ledger *l, const char *coll)
{
    crashkit_doc *e = &l->docs[crashkit_rnd(&l->rng) % l->ndocs];
    if (e->deleted || e->delete_pending || e->acked < 0 || e->pending >= 0)
        return true;
    e->delete_pending = true;
    char path[160];
    snprintf(path, sizeof path, "/v1/docs/%s/%s", coll, e->id);
    long st = crashkit_call(base, "DELETE", path, NULL, NULL);
    if (st == 204) {
        e->deleted = true;
        e->delete_pending = false;
    }
    return st != 0;
}

bool crashkit_append_log(const char *base, crashkit_ledger *l, const char *log, const char *body,
                         long n)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/logs/%s", log);
    json_t *r = NULL;
    long st = crashkit_call(base, "POST", path, body, &r);
    const char *id = json_string_value(json_object_get(r, "id"));
    if (st == 201 && id) {
        l->logs = crashkit_grow(l->logs, &l->caplogs, l->nlogs, sizeof *l->logs);
        crashkit_log *e = &l->logs[l->nlogs++];
        memset(e, 0, sizeof *e);
        snprintf(e->id, sizeof e->id, "%s", id);
        e->n = n;
    }
    json_decref(r);
    return st != 0;
}

bool crashkit_enqueue(const char *base, crashkit_ledger *l, const char *queue, const char *body,
                      size_t count, bool *acked)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/queues/%s/jobs", queue);
    json_t *r = NULL;
    long st = crashkit_call(base, "POST", path, body, &r);
    json_t *list = json_object_get(r, "ids");
    if (acked)
        *acked = false;
    if (st == 201 && json_array_size(list) == count) {
        size_t i;
        json_t *id;
        json_array_foreach (list, i, id)
            idset_add(&l->enqueued, json_string_value(id));
        if (acked)
            *acked = true;
    }
    json_decref(r);
    return st != 0;
}

bool crashkit_claim_complete(const char *base, crashkit_ledger *l, const char *queue,
                             void (*on_claim)(void *ctx, const char *id, const json_t *job),
                             void *ctx)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/queues/%s/claim?limit=1", queue);
    json_t *r = NULL;
    long st = crashkit_call(base, "POST", path, NULL, &r);
    json_t *first = json_array_get(json_object_get(r, "jobs"), 0);
    const char *id = json_string_value(json_object_get(first, "id"));
    if (st == 200 && id) {
        char job[UUID7_LEN + 1];
        snprintf(job, sizeof job, "%s", id);
        if (on_claim)
            on_claim(ctx, job, first);
        idset_add(&l->complete_tried, job);
        snprintf(path, sizeof path, "/v1/queues/%s/jobs/%s/complete", queue, job);
        st = crashkit_call(base, "POST", path, NULL, NULL);
        if (st == 200)
            idset_add(&l->completed, job);
    }
    json_decref(r);
    return st != 0;
}

/* ---- writer threads ---- */

static void *crew_thread(void *arg)
{
    crashkit_hand *h = arg;
    while (!atomic_load(&h->crew->stop) && h->crew->one(h->ledger))
        ;
    return NULL;
}

void crashkit_crew_start(crashkit_crew *c, int n, bool (*one)(void *ledger), void *ledgers,
                         size_t stride)
{
    if (n > CRASHKIT_MAX_WRITERS)
        abort();
    c->one = one;
    c->n = n;
    atomic_store(&c->stop, false);
    for (int i = 0; i < n; i++) {
        c->hand[i] = (crashkit_hand){c, (char *)ledgers + (size_t)i * stride};
        if (pthread_create(&c->th[i], NULL, crew_thread, &c->hand[i]) != 0)
            abort();
    }
}

void crashkit_crew_stop(crashkit_crew *c)
{
    atomic_store(&c->stop, true);
    for (int i = 0; i < c->n; i++)
        pthread_join(c->th[i], NULL);
    c->n = 0;
}

/* ---- checks ---- */

bool crashkit_doc_ok(const crashkit_doc *e, bool there, long n)
{
    bool ok;
    if (e->deleted)
        ok = !there;
    else if (!there)
        ok = e->acked < 0 || e->delete_pending; /* never acknowledged, or deleted in flight */
    else
        ok = n == e->acked || (e->pending >= 0 && n == e->pending);
    if (!ok)
        fprintf(stderr, "doc %s: %s n %ld, acked %ld pending %ld deleted %d/%d\n", e->id,
                there ? "there" : "absent", there ? n : -1, e->acked, e->pending, e->deleted,
                e->delete_pending);
    return ok;
}

bool crashkit_verify_ok(const char *base, const char *path, bool must_exist)
{
    static const char clean[] = "{\"ok\":true,\"errors\":[]";
    client_resp r;
    if (client_do(base, "GET", path, NULL, NULL, 0, NULL, 0, &r) != 0) {
        fprintf(stderr, "%s: no answer\n", path);
        client_free(&r);
        return false;
    }
    bool ok =
        (!must_exist && r.status == 404) || (r.body && !strncmp(r.body, clean, sizeof clean - 1));
    if (!ok)
        fprintf(stderr, "%s: %ld %.400s\n", path, r.status, r.body ? r.body : "");
    client_free(&r);
    return ok;
}

long crashkit_claim_all(const char *base, const char *queue, idset *claimed,
                        void (*each)(void *ctx, const json_t *job), void *ctx)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/queues/%s/requeue", queue);
    long requeued = crashkit_call(base, "POST", path, "{\"timeout_seconds\":0}", NULL);
    snprintf(path, sizeof path, "/v1/queues/%s/claim?limit=1000", queue);
    for (;;) {
        json_t *r = NULL;
        long st = crashkit_call(base, "POST", path, NULL, &r);
        size_t i;
        json_t *job;
        json_array_foreach (json_object_get(r, "jobs"), i, job) {
            idset_add(claimed, json_string_value(json_object_get(job, "id")));
            if (each)
                each(ctx, job);
        }
        json_decref(r);
        if (st != 200)
            break;
    }
    idset_sort(claimed);
    return requeued;
}

void crashkit_pool_completions(const void *ledgers, int n, size_t stride, idset *tried, idset *done)
{
    for (int w = 0; w < n; w++) {
        const crashkit_ledger *l =
            (const crashkit_ledger *)(const void *)((const char *)ledgers + (size_t)w * stride);
        for (size_t i = 0; i < l->complete_tried.n; i++)
            idset_add(tried, l->complete_tried.id[i]);
        for (size_t i = 0; i < l->completed.n; i++)
            idset_add(done, l->completed.id[i]);
    }
    idset_sort(tried);
    idset_sort(done);
}

/* ---- the run ---- */

int crashkit_env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v ? atoi(v) : dflt;
}

unsigned long long crashkit_seed(const char *name)
{
    const char *v = name ? getenv(name) : NULL;
    if (v)
        return strtoull(v, NULL, 10);
    return (unsigned long long)time(NULL) * 2654435761u + (unsigned)getpid();
}

void crashkit_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int crashkit_root_make(char root[PATH_MAX])
{
    return tmpdir_make(root) ? 0 : 2;
}

int crashkit_root_done(const char *root, int rc)
{
    if (rc == 0) {
        daemon_proc d = {0};
        snprintf(d.root, sizeof d.root, "%s", root);
        daemon_cleanup(&d); /* the root and the SQLite mirror beside it */
    } else {
        fprintf(stderr, "kept the root for a look: %s\n", root);
    }
    return rc;
}
