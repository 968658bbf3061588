/* test_crash: storhd is killed with SIGKILL at random points while writer
 * threads put, overwrite and delete documents, append log records, enqueue,
 * claim and complete jobs over HTTP; then it is restarted on the same root.
 * Ten more writer threads only create (PUT and POST), overwrite and delete
 * documents, so the document writes are published in groups of several
 * (group commit, each --doc-sync mode in turn) when the kills hit; the test
 * checks that groups formed.
 * Every acknowledged write must be there and readable (a document shows its
 * last acknowledged version, or a later one that was in flight), nothing
 * deleted comes back, no completed job is pending again, and every store
 * verifies clean. Every other kill, a torn write is injected before the
 * restart, as a power cut can leave one: a half-written temp file of the
 * dead process in a DocStore shard, an old orphaned temp file, and half a
 * framed line at the end of the active log segment and of queue.log.
 *
 * A SIGKILL keeps the page cache, so this proves crash consistency of the
 * process; the injected tails stand in for what a power cut can leave.
 * STORHD_CRASH_KILLS: kill points (default 20; scripts/hardening.sh runs 250). */
#include <curl/curl.h>
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../support/idset.h"
#include "../test.h"
#include "../tmpdir.h"
#include "uuid7.h"

#define WRITERS 16
#define MIXED_WRITERS 6 /* the others write documents only, so their writes share groups */
#define DOCS "cdocs"
#define LOG "clog"
#define QUEUE "cjobs"

typedef struct doc_entry {
    char id[UUID7_LEN + 1];
    long acked;   /* n of the last acknowledged PUT, -1 if none */
    long pending; /* n of a PUT sent but not acknowledged, -1 if none */
    bool deleted, delete_pending;
} doc_entry;

typedef struct log_entry {
    char id[UUID7_LEN + 1];
    long n;
} log_entry;

/* What one writer did; only its thread touches it while writers run. */
typedef struct ledger {
    int w;
    unsigned long long rng;
    long seq;
    doc_entry *docs;
    size_t ndocs, capdocs;
    log_entry *logs;
    size_t nlogs, caplogs;
    size_t logs_checked; /* logs below this index were checked already */
    size_t docs_checked_upto;
    idset enqueued, completed, complete_tried;
} ledger;

static daemon_proc d;
static char root[PATH_MAX];
static ledger ledgers[WRITERS];
static atomic_bool stop_writers;
static long long checked_writes, torn_injected, kills_survived, temps_swept;
static double group_ops, groups; /* from /metrics just before each kill */

static unsigned long long rnd(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static long call(const char *method, const char *path, const char *body, json_t **out)
{
    return client_json(d.base, method, path, body, out);
}

static void body_of(char *out, size_t cap, int w, long n)
{
    snprintf(out, cap, "{\"w\":%d,\"n\":%ld,\"pad\":\"%0200d\"}", w, n, 0);
}

static doc_entry *new_doc(ledger *l)
{
    if (l->ndocs == l->capdocs) {
        l->capdocs = l->capdocs * 2 + 64;
        l->docs = realloc(l->docs, l->capdocs * sizeof *l->docs);
    }
    doc_entry *e = &l->docs[l->ndocs++];
    memset(e, 0, sizeof *e);
    uuid7_generate(e->id, -1, NULL);
    e->acked = e->pending = -1;
    return e;
}

/* One write; false when the server is gone. */
static bool write_one(ledger *l)
{
    char path[160], body[320];
    long n = ++l->seq;
    body_of(body, sizeof body, l->w, n);
    unsigned op = (unsigned)(rnd(&l->rng) % 10);
    if (l->w >= MIXED_WRITERS) /* documents only */
        op %= 5;
    if (op == 2 && l->w >= MIXED_WRITERS) { /* a new document under a server-made id */
        json_t *r = NULL;
        long st = call("POST", "/v1/docs/" DOCS, body, &r);
        const char *id = json_string_value(json_object_get(r, "id"));
        if (st == 201 && id) { /* one not acknowledged is in doubt: not checked */
            doc_entry *e = new_doc(l);
            snprintf(e->id, sizeof e->id, "%s", id);
            e->acked = n;
        }
        json_decref(r);
        return st != 0;
    }
    if (op <= 3 || l->ndocs == 0) { /* put: a new document, or a new version */
        doc_entry *e = op == 3 && l->ndocs ? &l->docs[rnd(&l->rng) % l->ndocs] : NULL;
        /* only a document in a known state gets a new version: after a write
         * in doubt its state is one of two, and the check knows both */
        if (e && (e->acked < 0 || e->pending >= 0 || e->deleted || e->delete_pending))
            e = NULL;
        if (!e)
            e = new_doc(l);
        e->pending = n;
        snprintf(path, sizeof path, "/v1/docs/" DOCS "/%s", e->id);
        long st = call("PUT", path, body, NULL);
        if (st == 200 || st == 201) {
            e->acked = n;
            e->pending = -1;
        }
        return st != 0;
    }
    if (op == 4) { /* delete one of ours */
        doc_entry *e = &l->docs[rnd(&l->rng) % l->ndocs];
        if (e->deleted || e->delete_pending || e->acked < 0 || e->pending >= 0)
            return true;
        e->delete_pending = true;
        snprintf(path, sizeof path, "/v1/docs/" DOCS "/%s", e->id);
        long st = call("DELETE", path, NULL, NULL);
        if (st == 204) {
            e->deleted = true;
            e->delete_pending = false;
        }
        return st != 0;
    }
    if (op <= 7) { /* log append */
        json_t *r = NULL;
        long st = call("POST", "/v1/logs/" LOG, body, &r);
        const char *id = json_string_value(json_object_get(r, "id"));
        if (st == 201 && id) {
            if (l->nlogs == l->caplogs) {
                l->caplogs = l->caplogs * 2 + 64;
                l->logs = realloc(l->logs, l->caplogs * sizeof *l->logs);
            }
            snprintf(l->logs[l->nlogs].id, UUID7_LEN + 1, "%s", id);
            l->logs[l->nlogs++].n = n;
        }
        json_decref(r);
        return st != 0;
    }
    if (op == 8) { /* enqueue */
        json_t *r = NULL;
        long st = call("POST", "/v1/queues/" QUEUE "/jobs", body, &r);
        const char *id = json_string_value(json_array_get(json_object_get(r, "ids"), 0));
        if (st == 201 && id)
            idset_add(&l->enqueued, id);
        json_decref(r);
        return st != 0;
    }
    /* claim one job and complete it */
    json_t *r = NULL;
    long st = call("POST", "/v1/queues/" QUEUE "/claim?limit=1", NULL, &r);
    const char *id =
        json_string_value(json_object_get(json_array_get(json_object_get(r, "jobs"), 0), "id"));
    if (st == 200 && id) {
        char job[UUID7_LEN + 1];
        snprintf(job, sizeof job, "%s", id);
        idset_add(&l->complete_tried, job);
        snprintf(path, sizeof path, "/v1/queues/" QUEUE "/jobs/%s/complete", job);
        st = call("POST", path, NULL, NULL);
        if (st == 200)
            idset_add(&l->completed, job);
    }
    json_decref(r);
    return st != 0;
}

static void *writer(void *arg)
{
    ledger *l = arg;
    while (!atomic_load(&stop_writers) && write_one(l))
        ;
    return NULL;
}

/* ---- checks after a restart ---- */

static bool check_doc(const doc_entry *e)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/docs/" DOCS "/%s", e->id);
    json_t *r = NULL;
    long st = call("GET", path, NULL, &r);
    long n =
        st == 200 ? (long)json_integer_value(json_object_get(json_object_get(r, "data"), "n")) : -1;
    json_decref(r);
    bool ok;
    if (e->deleted)
        ok = st == 404;
    else if (st == 404)
        ok = e->acked < 0 || e->delete_pending; /* never acknowledged, or deleted in flight */
    else
        ok = st == 200 && (n == e->acked || (e->pending >= 0 && n == e->pending));
    if (!ok)
        fprintf(stderr, "doc %s: status %ld n %ld, acked %ld pending %ld deleted %d/%d\n", e->id,
                st, n, e->acked, e->pending, e->deleted, e->delete_pending);
    return ok;
}

static bool check_log(const log_entry *e)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/logs/" LOG "/%s", e->id);
    json_t *r = NULL;
    long st = call("GET", path, NULL, &r);
    long n = (long)json_integer_value(json_object_get(json_object_get(r, "data"), "n"));
    json_decref(r);
    if (st != 200 || n != e->n)
        fprintf(stderr, "log %s: status %ld n %ld, want %ld\n", e->id, st, n, e->n);
    return st == 200 && n == e->n;
}

/* The store verifies clean; before it ever acknowledged a write it may not
 * exist yet (404). */
static void check_verify(const char *path, bool must_exist)
{
    client_resp r;
    client_do(d.base, "GET", path, NULL, NULL, 0, NULL, 0, &r);
    if (must_exist || r.status != 404)
        CHECK_PREFIX(r.body, "{\"ok\":true,\"errors\":[]");
    client_free(&r);
}

/* Checks what was acknowledged since the last check (all of it when full). */
static void check_acked(bool full)
{
    bool docs = false, logs = false, jobs = false;
    for (int w = 0; w < WRITERS; w++) {
        for (size_t i = 0; i < ledgers[w].ndocs; i++)
            docs = docs || ledgers[w].docs[i].acked >= 0;
        logs = logs || ledgers[w].nlogs > 0;
        jobs = jobs || ledgers[w].enqueued.n > 0;
    }
    for (int w = 0; w < WRITERS; w++) {
        ledger *l = &ledgers[w];
        for (size_t i = full ? 0 : l->docs_checked_upto; i < l->ndocs; i++, checked_writes++)
            CHECK(check_doc(&l->docs[i]));
        l->docs_checked_upto = l->ndocs;
        for (size_t i = full ? 0 : l->logs_checked; i < l->nlogs; i++, checked_writes++)
            CHECK(check_log(&l->logs[i]));
        l->logs_checked = l->nlogs;
    }
    check_verify("/v1/docs/" DOCS "/_verify", docs);
    check_verify("/v1/logs/" LOG "/_verify", logs);
    check_verify("/v1/queues/" QUEUE "/_verify", jobs);
}

/* Requeues every processing job and claims them all: no acknowledged job
 * may be missing, none completed may come back. */
static void check_queue(void)
{
    CHECK_INT(call("POST", "/v1/queues/" QUEUE "/requeue", "{\"timeout_seconds\":0}", NULL), 200);
    idset claimed = {0};
    for (;;) {
        json_t *r = NULL;
        long st = call("POST", "/v1/queues/" QUEUE "/claim?limit=1000", NULL, &r);
        size_t i;
        json_t *job;
        json_array_foreach(json_object_get(r, "jobs"), i, job)
            idset_add(&claimed, json_string_value(json_object_get(job, "id")));
        json_decref(r);
        if (st != 200)
            break;
    }
    /* jobs are claimed by any writer: completions are pooled */
    idset tried = {0}, done = {0};
    for (int w = 0; w < WRITERS; w++) {
        const ledger *l = &ledgers[w];
        for (size_t i = 0; i < l->complete_tried.n; i++)
            idset_add(&tried, l->complete_tried.id[i]);
        for (size_t i = 0; i < l->completed.n; i++)
            idset_add(&done, l->completed.id[i]);
    }
    idset_sort(&claimed);
    idset_sort(&tried);
    long lost = 0, back = 0;
    for (int w = 0; w < WRITERS; w++) {
        const ledger *l = &ledgers[w];
        for (size_t i = 0; i < l->enqueued.n; i++, checked_writes++)
            if (!idset_has(&claimed, l->enqueued.id[i]) && !idset_has(&tried, l->enqueued.id[i]))
                lost++;
    }
    for (size_t i = 0; i < done.n; i++, checked_writes++)
        if (idset_has(&claimed, done.id[i]))
            back++;
    idset_free(&tried);
    idset_free(&done);
    CHECK_INT(lost, 0);
    CHECK_INT(back, 0);
    idset_free(&claimed);
}

/* ---- torn writes ---- */

static bool first_entry(const char *dir, bool want_dir, char *out, size_t cap)
{
    DIR *dh = opendir(dir);
    struct dirent *de;
    bool found = false;
    while (dh && !found && (de = readdir(dh))) {
        if (de->d_name[0] == '.')
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode) == want_dir) {
            snprintf(out, cap, "%s", p);
            found = true;
        }
    }
    if (dh)
        closedir(dh);
    return found;
}

/* Appends the first half of the file's last line, without its LF. */
static bool tear_tail(const char *path)
{
    FILE *f = fopen(path, "r+");
    if (!f)
        return false;
    char line[8192], last[8192] = "";
    while (fgets(line, sizeof line, f))
        if (strchr(line, '\n'))
            snprintf(last, sizeof last, "%s", line);
    size_t half = strlen(last) / 2;
    bool ok = half > 0 && fseek(f, 0, SEEK_END) == 0 && fwrite(last, 1, half, f) == half;
    return fclose(f) == 0 && ok;
}

static char temp_dead[PATH_MAX], temp_old[PATH_MAX];

/* The dead process's half-written record and an old orphaned temp file,
 * half lines at the end of the active segment and of queue.log. */
static void inject_torn(pid_t dead)
{
    char dir[PATH_MAX], shard[PATH_MAX], name[256] = "";
    snprintf(dir, sizeof dir, "%s/" DOCS "/.storh/writers", root);
    DIR *dh = opendir(dir);
    struct dirent *de;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%d.", (int)dead);
    while (dh && (de = readdir(dh)))
        if (!strncmp(de->d_name, prefix, strlen(prefix)))
            snprintf(name, sizeof name, "%s", de->d_name);
    if (dh)
        closedir(dh);
    snprintf(dir, sizeof dir, "%s/" DOCS "/data", root);
    temp_dead[0] = temp_old[0] = '\0';
    /* only a life that wrote a document has a marker to name the temp after */
    if (name[0] && first_entry(dir, true, shard, sizeof shard)) {
        snprintf(temp_dead, sizeof temp_dead, "%s/.%s.999999.tmp", shard, name);
        FILE *f = fopen(temp_dead, "w");
        CHECK(f != NULL);
        if (f) {
            fputs("{\"w\":0,\"n\":12,\"pad\":\"00000", f);
            fclose(f);
        }
        snprintf(temp_old, sizeof temp_old, "%s/.manifest.jsonc.0123456789ab.tmp", shard);
        f = fopen(temp_old, "w");
        CHECK(f != NULL);
        if (f) {
            fputs("{\"nextSeg", f);
            fclose(f);
            struct timeval old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
            utimes(temp_old, old);
        }
    }
    char manifest[PATH_MAX], seg[PATH_MAX], queue[PATH_MAX];
    snprintf(manifest, sizeof manifest, "%s/" LOG "/manifest.jsonc", root);
    json_t *m = json_load_file(manifest, 0, NULL);
    const char *active = json_string_value(json_object_get(json_object_get(m, "active"), "file"));
    if (active) {
        snprintf(seg, sizeof seg, "%s/" LOG "/segments/%s", root, active);
        tear_tail(seg);
    }
    json_decref(m);
    snprintf(queue, sizeof queue, "%s/" QUEUE "/queue.log", root);
    tear_tail(queue);
    torn_injected++;
}

/* After a restart and the first reads: the sweep removed both temp files. */
static void check_swept(void)
{
    if (temp_dead[0]) {
        CHECK(access(temp_dead, F_OK) != 0);
        CHECK(access(temp_old, F_OK) != 0);
        temps_swept += 2;
    }
    temp_dead[0] = temp_old[0] = '\0';
}

static const char *const extra[] = {"--log-segment-bytes", "4096", NULL};
/* pairs of kills in turn with each way of making a group durable */
static const char *const extra_fsync[] = {"--log-segment-bytes", "4096", "--doc-sync=fsync", NULL};
static const char *const extra_syncfs[] = {"--log-segment-bytes", "4096", "--doc-sync=syncfs",
                                           NULL};
static const char *const *const modes[] = {extra, extra_fsync, extra_syncfs};

TEST(acknowledged_writes_survive_kills)
{
    const char *env = getenv("STORHD_CRASH_KILLS");
    int kills = env ? atoi(env) : 20;
    unsigned long long seed = (unsigned long long)time(NULL) * 2654435761u + (unsigned)getpid();
    printf("crash: %d kill points, seed %llu\n", kills, seed);
    for (int w = 0; w < WRITERS; w++) {
        ledgers[w].w = w;
        ledgers[w].rng = seed + (unsigned long long)w * 7919 + 1;
    }
    for (int k = 0; k < kills; k++) {
        CHECK_INT(daemon_start(&d, root, modes[(k / 2) % 3]), 0);
        check_acked(false);
        check_swept();
        atomic_store(&stop_writers, false);
        pthread_t th[WRITERS];
        for (int w = 0; w < WRITERS; w++)
            pthread_create(&th[w], NULL, writer, &ledgers[w]);
        struct timespec ts = {0, (long)(20 + rnd(&seed) % 280) * 1000000L};
        nanosleep(&ts, NULL);
        client_resp m;
        if (client_do(d.base, "GET", "/metrics", NULL, NULL, 0, NULL, 0, &m) == 0 && m.body) {
            static const char sum[] = "\nstorhd_doc_group_size_sum ",
                              count[] = "\nstorhd_doc_group_size_count ";
            const char *p = strstr(m.body, sum), *q = strstr(m.body, count);
            group_ops += p ? atof(p + sizeof sum - 1) : 0;
            groups += q ? atof(q + sizeof count - 1) : 0;
        }
        client_free(&m);
        pid_t dead = d.pid;
        daemon_kill(&d);
        atomic_store(&stop_writers, true);
        for (int w = 0; w < WRITERS; w++)
            pthread_join(th[w], NULL);
        kills_survived++;
        if (k % 2 == 1)
            inject_torn(dead);
    }
    CHECK_INT(daemon_start(&d, root, extra), 0);
    check_acked(true);
    check_swept();
    check_queue();
    check_verify("/v1/queues/" QUEUE "/_verify", true);
    CHECK_INT(daemon_stop(&d), 0);
    CHECK(group_ops > groups); /* document writes were published in groups of several */
    printf("crash: %.0f document writes published in %.0f groups before the kills\n", group_ops,
           groups);
    long long docs = 0, logs = 0, jobs = 0;
    for (int w = 0; w < WRITERS; w++) {
        docs += (long long)ledgers[w].ndocs;
        logs += (long long)ledgers[w].nlogs;
        jobs += (long long)ledgers[w].enqueued.n;
    }
    printf("crash: %lld kills survived, %lld torn writes injected (%lld temp files swept); %lld "
           "documents, %lld log records, %lld jobs acknowledged; %lld checks of acknowledged "
           "writes, %d failed\n",
           kills_survived, torn_injected, temps_swept, docs, logs, jobs, checked_writes,
           test_failures);
}

static const test_case cases[] = {
    TEST_ENTRY(acknowledged_writes_survive_kills),
};

static int run_cases(int argc, char **argv);

int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, cases);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!tmpdir_make(root))
        return 2;
    int rc = run_cases(argc, argv);
    if (rc == 0) {
        snprintf(d.root, sizeof d.root, "%s", root);
        daemon_cleanup(&d); /* the root and the SQLite mirror beside it */
    } else {
        fprintf(stderr, "kept the root for a look: %s\n", root);
    }
    for (int w = 0; w < WRITERS; w++) {
        free(ledgers[w].docs);
        free(ledgers[w].logs);
        idset_free(&ledgers[w].enqueued);
        idset_free(&ledgers[w].completed);
        idset_free(&ledgers[w].complete_tried);
    }
    curl_global_cleanup();
    return rc;
}

TEST_MAIN_NAMED(run_cases, cases)
