/* test_atomic: a multi-row write is all or nothing across a SIGKILL. For
 * each kind (a log _bulk of 20,000 lines, a documents _bulk of 3,000 rows,
 * 50 of them replacing earlier documents and moving their entries in an
 * equality and a range index, a queue enqueue of 2,000 jobs) storhd is killed while the write is in
 * flight, in three ways taken in turn: at a fault point of the commit (STORH_FAULT, some at their
 * Nth hit, so in the middle of the renames), the moment the write's first
 * file change shows on disk (the test watches the directory), and after a
 * random delay within the write's measured duration. For documents, every
 * other fault kill is followed by a second one in the middle of the
 * recovery that finishes the bulk. After the restart the write is either
 * wholly there or wholly absent (wholly there when it was acknowledged),
 * the earlier writes are intact, the stage files are gone and the store
 * verifies clean.
 *
 * STORHD_ATOMIC_TRIALS: kills per kind (default 10). */
#include <curl/curl.h>
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"
#include "../tmpdir.h"
#include "buf.h"
#include "uuid7.h"

#define LOG_ROWS 20000
#define DOC_ROWS 3000
#define DOC_PREP 50
#define JOB_ROWS 2000
#define LOG_PREP 20
#define JOB_PREP 5

enum { KIND_LOG, KIND_DOCS, KIND_QUEUE };
enum { KILL_FAULT, KILL_WATCH, KILL_TIMED, KILL_MODES };

typedef struct kind_def {
    const char *name;
    const char *path;  /* the write's URL path */
    const char *ctype; /* its Content-Type */
    const char *faults[3];
    long rows, prep;
} kind_def;

static const kind_def kinds[] = {
    [KIND_LOG] = {"log",
                  "/v1/logs/alog/_bulk",
                  "application/x-ndjson",
                  {"seglog.bulk.spooled", "seglog.bulk.renamed", "seglog.bulk.manifest"},
                  LOG_ROWS,
                  LOG_PREP},
    [KIND_DOCS] = {"docs",
                   "/v1/docs/adocs/_bulk",
                   "application/x-ndjson",
                   {"docstore.bulk.committed", "docstore.bulk.renamed@",
                    "docstore.bulk.committing"},
                   DOC_ROWS,
                   DOC_PREP},
    [KIND_QUEUE] = {"queue",
                    "/v1/queues/aq/jobs",
                    "application/json",
                    {"queue.batch.staged", "queue.batch.written", NULL},
                    JOB_ROWS,
                    JOB_PREP},
};

static daemon_proc d;
static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static unsigned long long rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static long call(const char *method, const char *path, const char *body, json_t **out)
{
    return client_json(d.base, method, path, body, out);
}

static long long int_at(const char *path, const char *key)
{
    json_t *v = NULL;
    long st = call("GET", path, NULL, &v);
    long long n = st == 200 && json_is_integer(json_object_get(v, key))
                      ? json_integer_value(json_object_get(v, key))
                      : -1;
    if (n < 0)
        fprintf(stderr, "GET %s: %ld\n", path, st);
    json_decref(v);
    return n;
}

static bool verifies(const char *path)
{
    json_t *v = NULL;
    long st = call("GET", path, NULL, &v);
    bool ok = st == 200 && json_is_true(json_object_get(v, "ok"));
    if (!ok) {
        char *s = v ? json_dumps(v, 0) : NULL;
        fprintf(stderr, "GET %s: %ld %s\n", path, st, s ? s : "");
        free(s);
    }
    json_decref(v);
    return ok;
}

static long long doc_count(const char *field, const char *value_json)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"where\":[{\"field\":\"%s\",\"op\":\"eq\",\"value\":%s}],\"count\":true}", field,
             value_json);
    json_t *v = NULL;
    long st = call("POST", "/v1/docs/adocs/_query", body, &v);
    long long n = st == 200 && json_is_integer(json_object_get(v, "count"))
                      ? json_integer_value(json_object_get(v, "count"))
                      : -1;
    json_decref(v);
    return n;
}

/* ---------- the earlier writes and the multi-row write ---------- */

static char prep_ids[DOC_PREP][UUID7_LEN + 1];

/* Single writes (none goes through a bulk path), acknowledged. */
static bool prepare(int kind)
{
    bool ok = true;
    if (kind == KIND_LOG) {
        for (int i = 0; ok && i < LOG_PREP; i++)
            ok = call("POST", "/v1/logs/alog", "{\"p\":1}", NULL) == 201;
    } else if (kind == KIND_DOCS) {
        ok = call("PUT", "/v1/docs/adocs/_indexes",
                  "{\"fields\":[{\"field\":\"g\"},{\"field\":\"k\",\"range\":true}]}", NULL) == 200;
        for (int i = 0; ok && i < DOC_PREP; i++) {
            json_t *v = NULL;
            char body[64];
            snprintf(body, sizeof body, "{\"p\":1,\"k\":%d,\"g\":%d}", i, i % 10);
            ok = call("POST", "/v1/docs/adocs", body, &v) == 201 &&
                 json_is_string(json_object_get(v, "id"));
            if (ok)
                snprintf(prep_ids[i], sizeof prep_ids[i], "%s",
                         json_string_value(json_object_get(v, "id")));
            json_decref(v);
        }
    } else {
        for (int i = 0; ok && i < JOB_PREP; i++)
            ok = call("POST", "/v1/queues/aq/jobs", "{\"p\":1}", NULL) == 201;
    }
    return ok;
}

static void build_body(int kind, const char *tag, buf *b)
{
    buf_reset(b);
    if (kind == KIND_LOG) {
        for (int i = 0; i < LOG_ROWS; i++)
            buf_printf(b, "{\"b\":\"%s\",\"i\":%d,\"pad\":\"%032d\"}\n", tag, i, i);
    } else if (kind == KIND_DOCS) {
        for (int i = 0; i < DOC_ROWS; i++) {
            if (i < DOC_PREP)
                buf_printf(b, "{\"id\":\"%s\",\"data\":{\"b\":\"%s\",\"k\":%d,\"g\":%d}}\n",
                           prep_ids[i], tag, i, i % 10);
            else
                buf_printf(b, "{\"b\":\"%s\",\"n\":%d,\"pad\":\"%0100d\"}\n", tag, i, i);
        }
    } else {
        buf_appendc(b, '[');
        for (int i = 0; i < JOB_ROWS; i++)
            buf_printf(b, "%s{\"b\":\"%s\",\"i\":%d,\"pad\":\"%0300d\"}", i ? "," : "", tag, i, i);
        buf_appendc(b, ']');
    }
}

typedef struct sender {
    pthread_t th;
    int kind;
    const buf *body;
    _Atomic long status; /* -1 while the request runs */
    double ms;
} sender;

static void *send_body(void *arg)
{
    sender *s = arg;
    client_resp r = {0};
    double t0 = now_ms();
    int rc = client_do(d.base, "POST", kinds[s->kind].path, kinds[s->kind].ctype, s->body->data,
                       s->body->len, NULL, 0, &r);
    s->status = rc == 0 ? r.status : 0;
    s->ms = now_ms() - t0;
    client_free(&r);
    return NULL;
}

/* ---------- watching for the write's first change on disk ---------- */

static int count_entries(const char *dir, const char *prefix)
{
    DIR *dd = opendir(dir);
    if (!dd)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(dd)))
        if (!strncmp(de->d_name, prefix, strlen(prefix)))
            n++;
    closedir(dd);
    return n;
}

/* What the write changes first, summed: sizes and names of the log's
 * segments; queue.log's size and its stage files; for documents the
 * modification times of data/ and its shard directories (a row staged or
 * renamed in them) and any commit record under .storh/bulk. */
static unsigned long long dir_sum(const char *dir, bool sizes, bool mtimes, const char *need)
{
    DIR *dd = opendir(dir);
    if (!dd)
        return 0;
    unsigned long long sum = 0;
    struct dirent *de;
    while ((de = readdir(dd))) {
        if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
            continue;
        char p[PATH_MAX];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s%s", dir, de->d_name, need ? need : "");
        if (stat(p, &st) != 0)
            continue;
        sum += 1000003;
        if (sizes)
            sum += (unsigned long long)st.st_size;
        if (mtimes)
            sum += (unsigned long long)st.st_mtim.tv_sec * 1000000000ULL +
                   (unsigned long long)st.st_mtim.tv_nsec;
    }
    closedir(dd);
    return sum;
}

static unsigned long long fingerprint(int kind)
{
    char dir[PATH_MAX];
    struct stat st;
    if (kind == KIND_LOG) {
        snprintf(dir, sizeof dir, "%s/alog/segments", d.root);
        return dir_sum(dir, true, false, NULL);
    }
    if (kind == KIND_QUEUE) {
        snprintf(dir, sizeof dir, "%s/aq", d.root);
        return dir_sum(dir, true, false, NULL);
    }
    snprintf(dir, sizeof dir, "%s/adocs/.storh/bulk", d.root);
    unsigned long long sum = dir_sum(dir, false, false, "/journal.jsonc");
    snprintf(dir, sizeof dir, "%s/adocs/data", d.root);
    if (stat(dir, &st) == 0)
        sum += (unsigned long long)st.st_mtim.tv_nsec + dir_sum(dir, false, true, NULL);
    return sum;
}

/* Polls until the write changes its store's files, or the request ends.
 * true when it saw a change. */
static bool watch(int kind, unsigned long long base, sender *s, double deadline)
{
    while (now_ms() < deadline && s->status == -1)
        if (fingerprint(kind) != base)
            return true;
    return false;
}

/* ---------- one trial ---------- */

typedef struct tally {
    int trials, whole, absent, acked, fault_kills, watch_hits, timed, recovery_kills;
} tally;

static bool start(const char *root, const char *fault)
{
    if (fault)
        setenv("STORH_FAULT", fault, 1);
    int rc = daemon_start(&d, root, NULL);
    unsetenv("STORH_FAULT");
    return rc == 0;
}

/* The write's rows found after the restart: -1 when the store is not
 * consistent with either outcome. */
static long found_rows(int kind, const char *tag)
{
    if (kind == KIND_LOG) {
        long long n = int_at("/v1/logs/alog/_stats", "records");
        return n < LOG_PREP ? -1 : (long)(n - LOG_PREP);
    }
    if (kind == KIND_QUEUE) {
        long long n = int_at("/v1/queues/aq", "pending");
        return n < JOB_PREP ? -1 : (long)(n - JOB_PREP);
    }
    char tagj[64];
    snprintf(tagj, sizeof tagj, "\"%s\"", tag);
    long long n = doc_count("b", tagj), p = doc_count("p", "1");
    long long records = int_at("/v1/docs/adocs/_stats", "records");
    /* all: the 50 earlier documents replaced; none: all 50 as they were */
    if (n == DOC_ROWS && p == 0 && records == DOC_ROWS)
        return DOC_ROWS;
    if (n == 0 && p == DOC_PREP && records == DOC_PREP)
        return 0;
    fprintf(stderr, "docs: %lld of the bulk, %lld earlier, %lld records\n", n, p, records);
    return n < 0 ? -1 : (long)n;
}

/* Prints every entry under dir, down to depth levels below it (what a
 * check of leftover stages found). */
static void list_left(const char *dir, int depth)
{
    DIR *dd = opendir(dir);
    struct dirent *de;
    while (dd && (de = readdir(dd))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        fprintf(stderr, "left: %s/%s\n", dir, de->d_name);
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (depth > 1)
            list_left(p, depth - 1);
    }
    if (dd)
        closedir(dd);
}

static bool no_stages_left(int kind)
{
    char dir[PATH_MAX];
    if (kind == KIND_DOCS) { /* .storh/bulk empty, no staged row in a shard */
        snprintf(dir, sizeof dir, "%s/adocs/.storh/bulk", d.root);
        if (count_entries(dir, "") != 2)
            return false;
        snprintf(dir, sizeof dir, "%s/adocs/data", d.root);
        DIR *dd = opendir(dir);
        struct dirent *de;
        bool none = true;
        while (none && dd && (de = readdir(dd))) {
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            none = de->d_name[0] == '.' || count_entries(p, ".") == 2; /* "." and ".." */
        }
        if (dd)
            closedir(dd);
        return none;
    }
    if (kind == KIND_QUEUE) {
        snprintf(dir, sizeof dir, "%s/aq", d.root);
        return count_entries(dir, "queue.batch-") == 0;
    }
    snprintf(dir, sizeof dir, "%s/alog/.storh", d.root);
    return count_entries(dir, ".") == 2; /* no spool: only . and .. start with a dot */
}

static void trial(int kind, int t, double duration_ms, tally *ty)
{
    const kind_def *k = &kinds[kind];
    int mode = t % KILL_MODES;
    char fault[96] = "";
    bool recovery_kill = false;
    if (mode == KILL_FAULT) {
        int nf = k->faults[2] ? 3 : 2;
        const char *f = k->faults[(t / KILL_MODES) % nf];
        if (f[strlen(f) - 1] == '@')
            snprintf(fault, sizeof fault, "%s%llu", f, 1 + rnd() % k->rows);
        else
            snprintf(fault, sizeof fault, "%s", f);
        recovery_kill = kind == KIND_DOCS && (t / KILL_MODES) % 2 == 1;
    }
    char root[PATH_MAX];
    if (!tmpdir_make(root)) {
        CHECK(!"scratch root");
        return;
    }
    char tag[32];
    snprintf(tag, sizeof tag, "t%d-%llx", t, rnd() % 0xffffff);
    CHECK(start(root, fault[0] ? fault : NULL));
    CHECK(prepare(kind));
    buf body = BUF_INIT;
    build_body(kind, tag, &body);
    unsigned long long base = fingerprint(kind);
    sender s = {.kind = kind, .body = &body, .status = -1};
    double t0 = now_ms();
    pthread_create(&s.th, NULL, send_body, &s);
    if (mode == KILL_FAULT) {
        /* it ends itself at the fault point, before the request ends */
        int st = 0;
        pid_t w = 0;
        while ((w = waitpid(d.pid, &st, WNOHANG)) == 0 && s.status == -1)
            sleep_us(1000);
        if (w == 0) /* answered: give it a moment, else the point was missed */
            for (int i = 0; i < 500 && (w = waitpid(d.pid, &st, WNOHANG)) == 0; i++)
                sleep_us(1000);
        if (w == d.pid)
            d.pid = 0;
        else
            daemon_kill(&d);
        if (!(w > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 86))
            fprintf(stderr, "%s trial %d: fault point %s not reached\n", k->name, t, fault);
        CHECK(w > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 86);
        ty->fault_kills++;
    } else if (mode == KILL_WATCH) {
        if (watch(kind, base, &s, t0 + 60000)) {
            if ((t / KILL_MODES) % 2) /* else at once */
                sleep_us((long)(rnd() % 3000));
            ty->watch_hits++;
        }
        daemon_kill(&d);
    } else {
        sleep_us((long)(rnd() % (unsigned long long)(duration_ms * 1000 + 1)));
        daemon_kill(&d);
        ty->timed++;
    }
    pthread_join(s.th, NULL);
    bool acked = s.status >= 200 && s.status < 300;
    if (recovery_kill) {
        /* the bulk is finished by the open of its collection: kill that */
        char rf[96];
        snprintf(rf, sizeof rf, "docstore.bulk.recovering@%llu", 1 + rnd() % 200);
        CHECK(start(root, rf));
        json_t *v = NULL;
        call("GET", "/v1/docs/adocs/_stats", NULL, &v);
        json_decref(v);
        daemon_kill(&d);
        ty->recovery_kills++;
    }
    CHECK(start(root, NULL));
    long n = found_rows(kind, tag);
    if (n != 0 && n != k->rows)
        fprintf(stderr, "%s trial %d (%s): %ld of %ld rows after the restart\n", k->name, t,
                fault[0]             ? fault
                : mode == KILL_WATCH ? "watched"
                                     : "timed",
                n, k->rows);
    CHECK(n == 0 || n == k->rows);
    if (acked)
        CHECK_INT(n, k->rows);
    ty->trials++;
    ty->whole += n == k->rows;
    ty->absent += n == 0;
    ty->acked += acked;
    char vp[64];
    snprintf(vp, sizeof vp, "%s/_verify",
             kind == KIND_LOG    ? "/v1/logs/alog"
             : kind == KIND_DOCS ? "/v1/docs/adocs"
                                 : "/v1/queues/aq");
    CHECK(verifies(vp));
    bool clean = no_stages_left(kind);
    if (!clean) { /* name what was left, for the next look */
        char left[PATH_MAX];
        snprintf(left, sizeof left, "%s/%s", d.root,
                 kind == KIND_DOCS    ? "adocs"
                 : kind == KIND_QUEUE ? "aq"
                                      : "alog/.storh");
        list_left(left, 3);
    }
    CHECK(clean);
    /* and the store takes the same write again */
    sender again = {.kind = kind, .body = &body, .status = -1};
    if (kind != KIND_DOCS) {
        send_body(&again);
        CHECK(again.status == 200 || again.status == 201);
    }
    CHECK_INT(daemon_stop(&d), 0);
    buf_free(&body);
    tmpdir_remove(root);
}

/* An acknowledged write, timed: the span the timed kills draw from. */
static double calibrate(int kind)
{
    char root[PATH_MAX];
    if (!tmpdir_make(root) || !start(root, NULL))
        return 500;
    CHECK(prepare(kind));
    buf body = BUF_INIT;
    build_body(kind, "cal", &body);
    sender s = {.kind = kind, .body = &body, .status = -1};
    send_body(&s);
    CHECK(s.status == 200 || s.status == 201);
    CHECK_INT(found_rows(kind, "cal"), kinds[kind].rows);
    CHECK_INT(daemon_stop(&d), 0);
    buf_free(&body);
    tmpdir_remove(root);
    return s.ms;
}

static void run_kind(int kind)
{
    const char *e = getenv("STORHD_ATOMIC_TRIALS");
    int trials = e && atoi(e) > 0 ? atoi(e) : 10;
    rng ^= (unsigned long long)time(NULL) * 0x2545f4914f6cdd1dULL + (unsigned long long)kind;
    double ms = calibrate(kind);
    tally ty = {0};
    for (int t = 0; t < trials; t++)
        trial(kind, t, ms, &ty);
    printf("atomic %s: %d kills (%d at fault points, %d the moment the write showed on disk, "
           "%d timed within its %.0f ms, %d more during recovery): %d whole (%d acknowledged), "
           "%d absent, %d in part\n",
           kinds[kind].name, ty.trials, ty.fault_kills, ty.watch_hits, ty.timed, ms,
           ty.recovery_kills, ty.whole, ty.acked, ty.absent, ty.trials - ty.whole - ty.absent);
}

TEST(atomic_log_bulk)
{
    run_kind(KIND_LOG);
}

TEST(atomic_docs_bulk)
{
    run_kind(KIND_DOCS);
}

TEST(atomic_queue_enqueue)
{
    run_kind(KIND_QUEUE);
}

static const test_case tests[] = {
    TEST_ENTRY(atomic_log_bulk),
    TEST_ENTRY(atomic_docs_bulk),
    TEST_ENTRY(atomic_queue_enqueue),
};

static int run_cases(int argc, char **argv);
int main(int argc, char **argv)
{
    TEST_LIST_EXIT(argc, argv, tests);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = run_cases(argc, argv);
    curl_global_cleanup();
    return rc;
}
TEST_MAIN_NAMED(run_cases, tests)
