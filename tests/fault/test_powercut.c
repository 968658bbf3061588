/* test_powercut: storhd runs on powerfs (tests/powerfs), a filesystem that
 * forgets what was not made durable. Writer threads put, overwrite and
 * delete indexed documents, write documents in bulk, append, bulk-append
 * and delete log records, enqueue jobs one at a time and as arrays, claim
 * and complete them, compact the log and push the SQLite mirror (which
 * lives on the mount too); storhd is SIGKILLed at a random point and the
 * power is cut: the backing directory is rewritten to the strict durable
 * state (every other cut) or a randomized one (torn pages, un-synced
 * directory operations kept or dropped). storhd restarts on what is left.
 *
 * After every cut: every acknowledged write is there (a document at its
 * last acknowledged version or the one in flight), nothing deleted or
 * completed comes back, every store verifies clean without a repair, the
 * index definitions are kept, the SQLite mirror passes integrity_check and
 * a push + verify. What a cut left becomes the new known state.
 *
 * STORHD_POWERCUT_CUTS: number of cuts (default 24; scripts/hardening.sh
 * runs 400, half strict, half randomized); STORHD_POWERCUT_SEED replays a
 * run's writers, sleeps and cut states (the printed seed; thread timing
 * still varies). Every multi-row write is checked all or nothing (docjournal,
 * qstage, the log's bulk segment): whole once acknowledged, and whole or
 * absent while it was in flight at a cut. */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../powerfs/pfmount.h"
#include "../powerfs/pfsyncfs.h"
#include "client.h"
#include "../support/crashkit.h"
#include "../support/daemon.h"
#include "../support/idset.h"
#include "../test.h"
#include "../tmpdir.h"
#include "uuid7.h"

#define WRITERS 4
#define DOCS "pdocs"
#define LOG "plog"
#define QUEUE "pjobs"
#define BULK_DOCS 8
#define BULK_LOGS 12
#define BATCH_JOBS 3

typedef char id_t37[UUID7_LEN + 1];

/* A multi-row write: documents [first, first + k) of the ledger, or log
 * records / jobs whose data carry "b": b. expect: rows known to be there
 * (k once acknowledged), -1 while in flight. */
typedef struct group {
    long b;
    size_t first;
    int k, expect;
    bool retired; /* checked once after it was settled: its rows live on alone */
} group;

/* A job of a queue array that a writer claimed, with its array's b. */
typedef struct bjob {
    id_t37 id;
    long b;
} bjob;

/* A writer's single writes (k, first: crashkit_pool_completions reads it
 * there) and its multi-row ones. */
typedef struct ledger {
    crashkit_ledger k;
    group *dbulk, *lbulk, *qbatch;
    size_t ndbulk, nlbulk, nqbatch, capdbulk, caplbulk, capqbatch;
    bjob *bjobs;
    size_t nbjobs, capbjobs;
} ledger;

static pfmount pm;
static pfsync_relay relay;
static daemon_proc d;
static char scratch[PATH_MAX], root[PATH_MAX], mirror_db[PATH_MAX];
static ledger ledgers[WRITERS];
static crashkit_crew crew;
static bool indexes_acked;
static long long checked, partial_bulk, dropped_files, torn_pages;
static atomic_long pushes, compactions, dbulk_sent, dbulk_acked, lbulk_acked, qbatch_acked;

static long call(const char *method, const char *path, const char *body, json_t **out)
{
    return crashkit_call(d.base, method, path, body, out);
}

static long ndjson(const char *path, const char *body, size_t len)
{
    client_resp r;
    long st = client_do(d.base, "POST", path, "application/x-ndjson", body, len, NULL, 0, &r) == 0
                  ? r.status
                  : 0;
    if (st >= 500) {
        atomic_fetch_add(&crashkit_5xx, 1);
        fprintf(stderr, "POST %s: %ld %.300s\n", path, st, r.body);
    }
    client_free(&r);
    return st;
}

static group *new_group(group **v, size_t *n, size_t *cap, long b, int k)
{
    *v = crashkit_grow(*v, cap, *n, sizeof **v);
    group *g = &(*v)[(*n)++];
    *g = (group){b, 0, k, -1, false};
    return g;
}

/* ---- writers ---- */

static bool put_doc(ledger *l, long n, bool overwrite)
{
    char body[320];
    snprintf(body, sizeof body, "{\"w\":%d,\"n\":%ld,\"pad\":\"%0150d\"}", l->k.w, n, 0);
    return crashkit_put_doc(d.base, &l->k, DOCS, body, n, overwrite);
}

static bool bulk_docs(ledger *l, long n)
{
    group *g = new_group(&l->dbulk, &l->ndbulk, &l->capdbulk, n, BULK_DOCS);
    atomic_fetch_add(&dbulk_sent, 1);
    g->first = l->k.ndocs;
    char body[BULK_DOCS * 300];
    size_t len = 0;
    for (int i = 0; i < BULK_DOCS; i++) {
        crashkit_doc *e = crashkit_new_doc(&l->k);
        e->pending = n;
        len += (size_t)snprintf(body + len, sizeof body - len,
                                "{\"id\":\"%s\",\"data\":{\"w\":%d,\"n\":%ld,\"i\":%d}}\n", e->id,
                                l->k.w, n, i);
    }
    long st = ndjson("/v1/docs/" DOCS "/_bulk", body, len);
    if (st == 200) {
        atomic_fetch_add(&dbulk_acked, 1);
        g->expect = BULK_DOCS;
        for (int i = 0; i < BULK_DOCS; i++) {
            l->k.docs[g->first + (size_t)i].acked = n;
            l->k.docs[g->first + (size_t)i].pending = -1;
        }
    }
    return st != 0;
}

static bool append_log(ledger *l, long n)
{
    char body[320];
    snprintf(body, sizeof body, "{\"w\":%d,\"n\":%ld,\"pad\":\"%0150d\"}", l->k.w, n, 0);
    return crashkit_append_log(d.base, &l->k, LOG, body, n);
}

static bool delete_log(ledger *l)
{
    if (!l->k.nlogs)
        return true;
    crashkit_log *e = &l->k.logs[crashkit_rnd(&l->k.rng) % l->k.nlogs];
    if (e->deleted || e->delete_pending)
        return true;
    e->delete_pending = true;
    char path[160];
    snprintf(path, sizeof path, "/v1/logs/" LOG "/%s", e->id);
    long st = call("DELETE", path, NULL, NULL);
    if (st >= 200 && st < 300) {
        e->deleted = true;
        e->delete_pending = false;
    }
    return st != 0;
}

static bool bulk_logs(ledger *l, long n)
{
    group *g = new_group(&l->lbulk, &l->nlbulk, &l->caplbulk, n * 10 + l->k.w, BULK_LOGS);
    char body[BULK_LOGS * 100];
    size_t len = 0;
    for (int i = 0; i < BULK_LOGS; i++)
        len += (size_t)snprintf(body + len, sizeof body - len,
                                "{\"w\":%d,\"n\":%ld,\"b\":%ld,\"i\":%d}\n", l->k.w, n, g->b, i);
    long st = ndjson("/v1/logs/" LOG "/_bulk", body, len);
    if (st == 200) {
        atomic_fetch_add(&lbulk_acked, 1);
        g->expect = BULK_LOGS;
    }
    return st != 0;
}

static bool enqueue(ledger *l, long n, bool batch)
{
    char body[512];
    group *g = NULL;
    if (batch) {
        g = new_group(&l->qbatch, &l->nqbatch, &l->capqbatch, n * 10 + l->k.w, BATCH_JOBS);
        size_t len = (size_t)snprintf(body, sizeof body, "[");
        for (int i = 0; i < BATCH_JOBS; i++)
            len += (size_t)snprintf(body + len, sizeof body - len, "%s{\"w\":%d,\"b\":%ld}",
                                    i ? "," : "", l->k.w, g->b);
        snprintf(body + len, sizeof body - len, "]");
    } else {
        snprintf(body, sizeof body, "{\"w\":%d,\"n\":%ld}", l->k.w, n);
    }
    bool acked;
    bool up = crashkit_enqueue(d.base, &l->k, QUEUE, body, batch ? BATCH_JOBS : 1, &acked);
    if (g && acked) {
        atomic_fetch_add(&qbatch_acked, 1);
        g->expect = BATCH_JOBS;
    }
    return up;
}

/* A claimed job of a queue array: remembered with its array's b. */
static void note_bjob(void *ctx, const char *id, const json_t *job)
{
    ledger *l = ctx;
    json_t *b = json_object_get(json_object_get(job, "payload"), "b");
    if (b) {
        l->bjobs = crashkit_grow(l->bjobs, &l->capbjobs, l->nbjobs, sizeof *l->bjobs);
        snprintf(l->bjobs[l->nbjobs].id, sizeof l->bjobs[l->nbjobs].id, "%s", id);
        l->bjobs[l->nbjobs++].b = (long)json_integer_value(b);
    }
}

/* One write; false when the server is gone. */
static bool write_one(void *arg)
{
    ledger *l = arg;
    long n = ++l->k.seq;
    unsigned op = (unsigned)(crashkit_rnd(&l->k.rng) % 24);
    if (op <= 5 || l->k.ndocs == 0)
        return put_doc(l, n, op >= 4);
    switch (op) {
    case 6:
        return crashkit_delete_doc(d.base, &l->k, DOCS);
    case 7:
    case 8:
    case 9:
        return append_log(l, n);
    case 10:
        return delete_log(l);
    case 11:
    case 12:
        return enqueue(l, n, op == 12);
    case 13:
    case 14:
    case 15:
        return crashkit_claim_complete(d.base, &l->k, QUEUE, note_bjob, l);
    case 16:
        return bulk_docs(l, n);
    case 17:
        return bulk_logs(l, n);
    case 18: /* a roll happens every few appends (4 KiB segments); compaction rewrites them */
        if (l->k.w == 0) {
            atomic_fetch_add(&compactions, 1);
            return call("POST", "/v1/logs/" LOG "/_compact", NULL, NULL) != 0;
        }
        return append_log(l, n);
    case 19:
        if (l->k.w == 1) {
            atomic_fetch_add(&pushes, 1);
            return call("POST", "/v1/mirror/push", NULL, NULL) != 0;
        }
        return append_log(l, n);
    default:
        return put_doc(l, n, true);
    }
}

/* ---- what a cut left ---- */

typedef struct seen {
    id_t37 id;
    long n, b; /* b: the multi-row write it came with, -1 if none */
} seen;

typedef struct seen_set {
    seen *v;
    size_t n, cap;
} seen_set;

static int cmp_seen(const void *a, const void *b)
{
    return strcmp(((const seen *)a)->id, ((const seen *)b)->id);
}

static const seen *seen_get(const seen_set *s, const char *id)
{
    seen key;
    snprintf(key.id, sizeof key.id, "%s", id);
    return s->n ? bsearch(&key, s->v, s->n, sizeof *s->v, cmp_seen) : NULL;
}

/* Every record of a stream of {"id","data"} lines (an export, a log listing). */
static void read_all(const char *path, seen_set *out)
{
    client_resp r;
    memset(out, 0, sizeof *out);
    CHECK_INT(client_do(d.base, "GET", path, NULL, NULL, 0, NULL, 0, &r), 0);
    /* 404: the store does not exist (yet); every acknowledged record is then missed */
    if (r.status != 404)
        CHECK_INT(r.status, 200);
    for (char *line = r.status == 200 ? r.body : NULL, *nl; line && *line;
         line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        json_t *j = json_loadb(line, nl ? (size_t)(nl - line) : strlen(line), 0, NULL);
        json_t *data = json_object_get(j, "data");
        const char *id = json_string_value(json_object_get(j, "id"));
        CHECK(id != NULL);
        if (id) {
            out->v = crashkit_grow(out->v, &out->cap, out->n, sizeof *out->v);
            seen *s = &out->v[out->n++];
            snprintf(s->id, sizeof s->id, "%s", id);
            s->n = (long)json_integer_value(json_object_get(data, "n"));
            json_t *b = json_object_get(data, "b");
            s->b = b ? (long)json_integer_value(b) : -1;
        }
        json_decref(j);
    }
    client_free(&r);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, cmp_seen);
}

/* A multi-row write found with `have` of its rows: all of them once
 * acknowledged, the same as last time once seen, and none or all while it
 * was in flight. */
static void check_group(group *g, int have, const char *what)
{
    if (g->expect >= 0) {
        checked++;
        if (have != g->expect)
            fprintf(stderr, "%s %ld: %d rows, want %d\n", what, g->b, have, g->expect);
        CHECK_INT(have, g->expect);
    } else if (have != 0 && have != g->k) {
        partial_bulk++;
        fprintf(stderr, "%s %ld in flight: %d of %d rows\n", what, g->b, have, g->k);
        CHECK(!"a multi-row write was found in part");
    }
    g->expect = have;
}

static void check_docs(void)
{
    seen_set s;
    read_all("/v1/docs/" DOCS "/_export", &s);
    for (int w = 0; w < WRITERS; w++) {
        ledger *l = &ledgers[w];
        for (size_t i = 0; i < l->ndbulk; i++) {
            group *g = &l->dbulk[i];
            int have = 0;
            /* acknowledged rows are checked one by one below (a writer may
             * have written them again since); in flight: all or none */
            if (g->retired || g->expect >= 0)
                continue;
            g->retired = true;
            for (int k = 0; k < g->k; k++) {
                const seen *x = seen_get(&s, l->k.docs[g->first + (size_t)k].id);
                have += x && x->n == g->b;
            }
            check_group(g, have, "documents _bulk");
        }
        for (size_t i = 0; i < l->k.ndocs; i++) {
            crashkit_doc *e = &l->k.docs[i];
            const seen *x = seen_get(&s, e->id);
            if (e->acked >= 0 || e->deleted)
                checked++;
            CHECK(crashkit_doc_ok(e, x != NULL, x ? x->n : -1));
            /* what the cut left is the known state now */
            e->acked = x ? x->n : -1;
            e->deleted = !x && (e->deleted || e->delete_pending);
            e->pending = -1;
            e->delete_pending = false;
        }
    }
    free(s.v);
}

static void check_logs(void)
{
    seen_set s;
    read_all("/v1/logs/" LOG, &s);
    for (int w = 0; w < WRITERS; w++) {
        ledger *l = &ledgers[w];
        for (size_t i = 0; i < l->k.nlogs; i++) {
            crashkit_log *e = &l->k.logs[i];
            const seen *x = seen_get(&s, e->id);
            bool ok = e->deleted ? !x : (x ? x->n == e->n : e->delete_pending);
            checked++;
            if (!ok)
                fprintf(stderr, "log %s: %s, n %ld deleted %d/%d\n", e->id, x ? "there" : "absent",
                        e->n, e->deleted, e->delete_pending);
            CHECK(ok);
            e->deleted = !x;
            e->delete_pending = false;
        }
        for (size_t i = 0; i < l->nlbulk; i++) {
            int have = 0;
            for (size_t k = 0; k < s.n; k++)
                have += s.v[k].b == l->lbulk[i].b;
            check_group(&l->lbulk[i], have, "log _bulk");
        }
    }
    free(s.v);
}

/* A claimed job of a queue array, with its array's b. */
static void note_batch(void *ctx, const json_t *job)
{
    seen_set *batch = ctx;
    json_t *b = json_object_get(json_object_get(job, "payload"), "b");
    if (b) {
        batch->v = crashkit_grow(batch->v, &batch->cap, batch->n, sizeof *batch->v);
        snprintf(batch->v[batch->n].id, UUID7_LEN + 1, "%s",
                 json_string_value(json_object_get(job, "id")));
        batch->v[batch->n++].b = (long)json_integer_value(b);
    }
}

/* Claims every job (after requeueing them all): every acknowledged job is
 * there unless its completion was tried, no completed one comes back;
 * then they are requeued for the writers. */
static void check_queue(void)
{
    idset claimed = {0};
    seen_set batch = {0};
    long st0 = crashkit_claim_all(d.base, QUEUE, &claimed, note_batch, &batch);
    if (st0 != 404) /* 404: never written to; an acknowledged job is then missed */
        CHECK_INT(st0, 200);
    idset tried = {0}, done = {0};
    crashkit_pool_completions(ledgers, WRITERS, sizeof ledgers[0], &tried, &done);
    long lost = 0, back = 0;
    for (int w = 0; w < WRITERS; w++) {
        ledger *l = &ledgers[w];
        for (size_t i = 0; i < l->k.enqueued.n; i++) {
            const char *id = l->k.enqueued.id[i];
            if (idset_has(&done, id))
                continue;
            checked++;
            if (!idset_has(&claimed, id) && !idset_has(&tried, id)) {
                fprintf(stderr, "job %s: lost\n", id);
                lost++;
            }
        }
        for (size_t i = 0; i < l->k.completed.n; i++, checked++)
            if (idset_has(&claimed, l->k.completed.id[i])) {
                fprintf(stderr, "job %s: completed, and back\n", l->k.completed.id[i]);
                back++;
            }
        for (size_t i = 0; i < l->nqbatch; i++) {
            group *g = &l->qbatch[i];
            if (g->retired)
                continue;
            g->retired = true;
            /* its jobs: pending now, or claimed by a writer before the cut */
            int have = 0;
            for (size_t k = 0; k < batch.n; k++)
                have += batch.v[k].b == g->b;
            for (int v = 0; v < WRITERS; v++)
                for (size_t k = 0; k < ledgers[v].nbjobs; k++)
                    have += ledgers[v].bjobs[k].b == g->b &&
                            !idset_has(&claimed, ledgers[v].bjobs[k].id);
            bool in_flight = g->expect < 0;
            check_group(g, have, "queue array");
            for (size_t k = 0; in_flight && k < batch.n; k++)
                if (batch.v[k].b == g->b)
                    idset_add(&l->k.enqueued, batch.v[k].id);
        }
        /* a completion in doubt: done if its job is gone, pending again if not */
        for (size_t i = 0; i < l->k.complete_tried.n; i++)
            if (!idset_has(&claimed, l->k.complete_tried.id[i]) &&
                !idset_has(&done, l->k.complete_tried.id[i]))
                idset_add(&l->k.completed, l->k.complete_tried.id[i]);
        l->k.complete_tried.n = 0;
    }
    CHECK_INT(lost, 0);
    CHECK_INT(back, 0);
    if (st0 != 404)
        CHECK_INT(call("POST", "/v1/queues/" QUEUE "/requeue", "{\"timeout_seconds\":0}", NULL),
                  200);
    idset_free(&claimed);
    idset_free(&tried);
    idset_free(&done);
    free(batch.v);
}

/* a store that never acknowledged a write may not exist (404) */
static void check_verify(const char *path)
{
    CHECK(crashkit_verify_ok(d.base, path, false));
}

/* Before storhd opens it: the mirror's SQLite file is a sound database. */
static void check_mirror_file(void)
{
    struct stat st;
    if (stat(mirror_db, &st) != 0)
        return;
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open_v2(mirror_db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *q = NULL;
    CHECK_INT(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL), SQLITE_OK);
    CHECK_INT(sqlite3_step(q), SQLITE_ROW);
    const char *res = (const char *)sqlite3_column_text(q, 0);
    if (!res || strcmp(res, "ok"))
        fprintf(stderr, "mirror integrity_check: %s\n", res ? res : "(null)");
    CHECK_STR(res, "ok");
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static void check_indexes(void)
{
    if (!indexes_acked)
        return;
    json_t *r = NULL;
    CHECK_INT(call("GET", "/v1/docs/" DOCS "/_indexes", NULL, &r), 200);
    CHECK_INT(json_array_size(json_object_get(r, "fields")), 2);
    checked++;
    json_decref(r);
}

/* mirror: also push and verify (a full scan of the collection twice, so
 * after every fourth cut and the last; integrity_check runs after each) */
static void check_all(bool mirror)
{
    check_docs();
    check_logs();
    check_queue();
    check_indexes();
    check_verify("/v1/docs/" DOCS "/_verify");
    check_verify("/v1/logs/" LOG "/_verify");
    check_verify("/v1/queues/" QUEUE "/_verify");
    if (!mirror)
        return;
    /* the mirror takes a push on what is left and agrees with it */
    CHECK_INT(call("POST", "/v1/mirror/push", NULL, NULL), 200);
    check_verify("/v1/mirror/verify");
}

static int install_relay(void)
{
    return pfsync_child_install(&relay);
}

static const char *const extra[] = {"--log-segment-bytes", "4096", NULL};

TEST(acknowledged_writes_survive_power_cuts)
{
    int cuts = crashkit_env_int("STORHD_POWERCUT_CUTS", 24);
    unsigned long long seed = crashkit_seed("STORHD_POWERCUT_SEED");
    printf("powercut: %d cuts, seed %llu, multi-row writes checked all-or-nothing\n", cuts, seed);
    for (int w = 0; w < WRITERS; w++) {
        ledgers[w].k.w = w;
        ledgers[w].k.rng = seed + (unsigned long long)w * 7919 + 1;
    }
    int strict = 0, randomized = 0;
    for (int k = 0; k <= cuts; k++) {
        check_mirror_file();
        if (daemon_start(&d, root, extra) != 0) {
            CHECK(!"storhd did not start on what the cut left");
            return;
        }
        if (k == 0) {
            indexes_acked =
                call("PUT", "/v1/docs/" DOCS "/_indexes",
                     "{\"fields\":[{\"field\":\"w\"},{\"field\":\"n\",\"range\":true}]}",
                     NULL) == 200;
            CHECK(indexes_acked);
        }
        check_all(k % 4 == 1 || k == cuts);
        if (k == cuts || test_failures)
            break;
        crashkit_crew_start(&crew, WRITERS, write_one, ledgers, sizeof ledgers[0]);
        crashkit_sleep_ms((long)(30 + crashkit_rnd(&seed) % 370));
        daemon_kill(&d);
        crashkit_crew_stop(&crew);
        char cmd[64];
        if (k % 2 == 0) {
            snprintf(cmd, sizeof cmd, "cut strict");
            strict++;
        } else {
            snprintf(cmd, sizeof cmd, "cut %llu", crashkit_rnd(&seed) | 1);
            randomized++;
        }
        CHECK_INT(pfmount_cmd(&pm, cmd), 0);
        dropped_files += pfmount_stat(&pm, "cut_dropped");
        torn_pages += pfmount_stat(&pm, "cut_torn");
    }
    CHECK_INT(daemon_stop(&d), 0);
    CHECK_INT(atomic_load(&crashkit_5xx), 0); /* a kill ends a request without an answer */
    long long docs = 0, logs = 0, jobs = 0;
    for (int w = 0; w < WRITERS; w++) {
        for (size_t i = 0; i < ledgers[w].k.ndocs; i++)
            docs += ledgers[w].k.docs[i].acked >= 0 || ledgers[w].k.docs[i].deleted;
        logs += (long long)ledgers[w].k.nlogs;
        jobs += (long long)ledgers[w].k.enqueued.n;
    }
    printf("powercut: %d strict and %d randomized cuts survived (%lld files dropped, %lld pages "
           "torn; %ld syncfs relayed, %ld compactions, %ld mirror pushes); %lld documents, %lld "
           "log records, %lld jobs, %ld multi-row writes acknowledged (%ld documents _bulk of "
           "%ld sent, %ld log _bulk, %ld queue arrays); %lld checks of acknowledged writes, %d "
           "failed; %lld multi-row writes in flight found in part; %ld answers 5xx\n",
           strict, randomized, dropped_files, torn_pages, atomic_load(&relay.relayed),
           atomic_load(&compactions), atomic_load(&pushes), docs, logs, jobs,
           atomic_load(&dbulk_acked) + atomic_load(&lbulk_acked) + atomic_load(&qbatch_acked),
           atomic_load(&dbulk_acked), atomic_load(&dbulk_sent), atomic_load(&lbulk_acked),
           atomic_load(&qbatch_acked), checked, test_failures, partial_bulk,
           atomic_load(&crashkit_5xx));
}

static const test_case cases[] = {
    TEST_ENTRY(acknowledged_writes_survive_power_cuts),
};

/* The powerfs mount the root lives on, and the syncfs relay into it. */
static int setup(void)
{
    if (!pfmount_scratch(scratch))
        return 2;
    if (pfmount_start(&pm, scratch) != 0) {
        fprintf(stderr, "could not mount powerfs (needs root and /dev/fuse)\n");
        tmpdir_remove(scratch);
        return 1;
    }
    snprintf(root, sizeof root, "%s/data", pm.mnt);
    snprintf(mirror_db, sizeof mirror_db, "%s.mirror.sqlite", root);
    CHECK_INT(pfsync_relay_start(&relay, &pm), 0);
    daemon_pre_exec = install_relay;
    return 0;
}

static int teardown(int rc)
{
    daemon_kill(&d);
    pfsync_relay_stop(&relay);
    if (pfmount_stop(&pm) != 0)
        rc = 1;
    if (rc == 0)
        tmpdir_remove(scratch);
    else
        fprintf(stderr, "kept the backing directory for a look: %s\n", pm.backing);
    for (int w = 0; w < WRITERS; w++) {
        ledger *l = &ledgers[w];
        crashkit_ledger_free(&l->k);
        free(l->dbulk);
        free(l->lbulk);
        free(l->qbatch);
        free(l->bjobs);
    }
    return rc;
}

CRASHKIT_MAIN(cases, setup, teardown)
