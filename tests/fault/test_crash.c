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
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/crashkit.h"
#include "../support/daemon.h"
#include "../support/idset.h"
#include "../test.h"
#include "uuid7.h"

#define WRITERS 16
#define MIXED_WRITERS 6 /* the others write documents only, so their writes share groups */
#define DOCS "cdocs"
#define LOG "clog"
#define QUEUE "cjobs"

static daemon_proc d;
static char root[PATH_MAX];
static crashkit_ledger ledgers[WRITERS];
/* what check_acked checked already, per writer */
static size_t docs_checked[WRITERS], logs_checked[WRITERS];
static crashkit_crew crew;
static long long checked_writes, torn_injected, kills_survived, temps_swept;
static double group_ops, groups; /* from /metrics just before each kill */

static void body_of(char *out, size_t cap, int w, long n)
{
    snprintf(out, cap, "{\"w\":%d,\"n\":%ld,\"pad\":\"%0200d\"}", w, n, 0);
}

/* One write; false when the server is gone. */
static bool write_one(void *arg)
{
    crashkit_ledger *l = arg;
    char body[320];
    long n = ++l->seq;
    body_of(body, sizeof body, l->w, n);
    unsigned op = (unsigned)(crashkit_rnd(&l->rng) % 10);
    if (l->w >= MIXED_WRITERS) /* documents only */
        op %= 5;
    if (op == 2 && l->w >= MIXED_WRITERS) { /* a new document under a server-made id */
        json_t *r = NULL;
        long st = crashkit_call(d.base, "POST", "/v1/docs/" DOCS, body, &r);
        const char *id = json_string_value(json_object_get(r, "id"));
        if (st == 201 && id) { /* one not acknowledged is in doubt: not checked */
            crashkit_doc *e = crashkit_new_doc(l);
            snprintf(e->id, sizeof e->id, "%s", id);
            e->acked = n;
        }
        json_decref(r);
        return st != 0;
    }
    if (op <= 3 || l->ndocs == 0) /* put: a new document, or a new version */
        return crashkit_put_doc(d.base, l, DOCS, body, n, op == 3);
    if (op == 4) /* delete one of ours */
        return crashkit_delete_doc(d.base, l, DOCS);
    if (op <= 7)
        return crashkit_append_log(d.base, l, LOG, body, n);
    if (op == 8)
        return crashkit_enqueue(d.base, l, QUEUE, body, 1, NULL);
    return crashkit_claim_complete(d.base, l, QUEUE, NULL, NULL);
}

/* ---- checks after a restart ---- */

static bool check_doc(const crashkit_doc *e)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/docs/" DOCS "/%s", e->id);
    json_t *r = NULL;
    long st = crashkit_call(d.base, "GET", path, NULL, &r);
    long n =
        st == 200 ? (long)json_integer_value(json_object_get(json_object_get(r, "data"), "n")) : -1;
    json_decref(r);
    if (st != 200 && st != 404)
        fprintf(stderr, "doc %s: status %ld\n", e->id, st);
    return (st == 200 || st == 404) && crashkit_doc_ok(e, st == 200, n);
}

static bool check_log(const crashkit_log *e)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/logs/" LOG "/%s", e->id);
    json_t *r = NULL;
    long st = crashkit_call(d.base, "GET", path, NULL, &r);
    long n = (long)json_integer_value(json_object_get(json_object_get(r, "data"), "n"));
    json_decref(r);
    if (st != 200 || n != e->n)
        fprintf(stderr, "log %s: status %ld n %ld, want %ld\n", e->id, st, n, e->n);
    return st == 200 && n == e->n;
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
        crashkit_ledger *l = &ledgers[w];
        for (size_t i = full ? 0 : docs_checked[w]; i < l->ndocs; i++, checked_writes++)
            CHECK(check_doc(&l->docs[i]));
        docs_checked[w] = l->ndocs;
        for (size_t i = full ? 0 : logs_checked[w]; i < l->nlogs; i++, checked_writes++)
            CHECK(check_log(&l->logs[i]));
        logs_checked[w] = l->nlogs;
    }
    /* a store verifies clean; before it ever acknowledged a write it may
     * not exist yet (404) */
    CHECK(crashkit_verify_ok(d.base, "/v1/docs/" DOCS "/_verify", docs));
    CHECK(crashkit_verify_ok(d.base, "/v1/logs/" LOG "/_verify", logs));
    CHECK(crashkit_verify_ok(d.base, "/v1/queues/" QUEUE "/_verify", jobs));
}

/* Requeues every processing job and claims them all: no acknowledged job
 * may be missing, none completed may come back. */
static void check_queue(void)
{
    idset claimed = {0};
    CHECK_INT(crashkit_claim_all(d.base, QUEUE, &claimed, NULL, NULL), 200);
    /* jobs are claimed by any writer: completions are pooled */
    idset tried = {0}, done = {0};
    crashkit_pool_completions(ledgers, WRITERS, sizeof ledgers[0], &tried, &done);
    long lost = 0, back = 0;
    for (int w = 0; w < WRITERS; w++) {
        const crashkit_ledger *l = &ledgers[w];
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
    int kills = crashkit_env_int("STORHD_CRASH_KILLS", 20);
    unsigned long long seed = crashkit_seed(NULL);
    printf("crash: %d kill points, seed %llu\n", kills, seed);
    for (int w = 0; w < WRITERS; w++) {
        ledgers[w].w = w;
        ledgers[w].rng = seed + (unsigned long long)w * 7919 + 1;
    }
    for (int k = 0; k < kills; k++) {
        CHECK_INT(daemon_start(&d, root, modes[(k / 2) % 3]), 0);
        check_acked(false);
        check_swept();
        crashkit_crew_start(&crew, WRITERS, write_one, ledgers, sizeof ledgers[0]);
        crashkit_sleep_ms((long)(20 + crashkit_rnd(&seed) % 280));
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
        crashkit_crew_stop(&crew);
        kills_survived++;
        if (k % 2 == 1)
            inject_torn(dead);
    }
    CHECK_INT(daemon_start(&d, root, extra), 0);
    check_acked(true);
    check_swept();
    check_queue();
    CHECK(crashkit_verify_ok(d.base, "/v1/queues/" QUEUE "/_verify", true));
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

static int setup(void)
{
    return crashkit_root_make(root);
}

static int teardown(int rc)
{
    for (int w = 0; w < WRITERS; w++)
        crashkit_ledger_free(&ledgers[w]);
    return crashkit_root_done(root, rc);
}

CRASHKIT_MAIN(cases, setup, teardown)
