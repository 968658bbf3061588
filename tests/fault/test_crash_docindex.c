/* test_crash_docindex: storhd dies while concurrent POSTs to an indexed
 * collection are published in groups (group commit with the index updates
 * batched into the group's durability step): at the fault point between the
 * durable index temps and their renames (docgroup.index.staged), or by a
 * SIGKILL at a random moment. After each restart on the same root:
 * - every acknowledged record is there, and its unique value is taken (a
 *   new record with it gets 409): its index entry was durable before its
 *   answer;
 * - every index file parses (entry files whole, every complete delta line),
 *   as PHP storh reading the root at any moment needs;
 * - after _reindex, _verify is clean (writes in flight may have left their
 *   records without entries, as a single write cut short always could).
 * One ctest test per way of dying; each runs every --doc-sync mode in turn.
 * STORHD_CRASH_DOCINDEX_KILLS: kills per test (default 6). */
#include <curl/curl.h>
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"
#include "../tmpdir.h"

#define WRITERS 16
#define MAX_ACKED 4096

static daemon_proc d;
static char root[PATH_MAX];

typedef struct ledger {
    int w;
    long seq;
    char (*acked)[32]; /* the "req" values answered 201 */
    size_t nacked, checked;
    pthread_t th;
} ledger;

static ledger ledgers[WRITERS];
static atomic_bool stop_writers;

static void *writer(void *arg)
{
    ledger *l = arg;
    while (!atomic_load(&stop_writers) && l->nacked < MAX_ACKED) {
        char req[32], body[256];
        long n = ++l->seq;
        snprintf(req, sizeof req, "r%d-%ld", l->w, n);
        snprintf(body, sizeof body, "{\"req\":\"%s\",\"kind\":\"k%ld\",\"w\":%d,\"n\":%ld}", req,
                 n % 3, l->w, n);
        long st = client_json(d.base, "POST", "/v1/docs/ix", body, NULL);
        if (st == 201)
            memcpy(l->acked[l->nacked++], req, sizeof req);
        else if (st == 0)
            break; /* the server is gone */
        else
            fprintf(stderr, "POST %s: status %ld\n", req, st);
    }
    return NULL;
}

/* Every index file parses: entry files whole, delta lines up to the last
 * LF (a line without its LF is one being appended or torn, which readers
 * skip). Temps (dot files) are not index files. */
static void check_files(const char *dir, int *files)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    struct dirent *de;
    while ((de = readdir(dh))) {
        if (de->d_name[0] == '.')
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            check_files(p, files);
            continue;
        }
        size_t nl = strlen(de->d_name);
        FILE *f = fopen(p, "rb");
        CHECK(f != NULL);
        if (!f)
            continue;
        char *text = malloc((size_t)st.st_size + 1);
        size_t len = fread(text, 1, (size_t)st.st_size, f);
        fclose(f);
        text[len] = '\0';
        if (nl > 6 && !strcmp(de->d_name + nl - 6, ".jsonc")) {
            json_t *o = json_loadb(text, len, 0, NULL);
            if (!json_is_object(o))
                fprintf(stderr, "index file does not parse: %s\n", p);
            CHECK(json_is_object(o));
            json_decref(o);
            (*files)++;
        } else if (nl > 6 && !strcmp(de->d_name + nl - 6, ".jsonl")) {
            for (char *line = text, *lf; (lf = strchr(line, '\n')); line = lf + 1) {
                json_t *o = json_loadb(line, (size_t)(lf - line), JSON_ALLOW_NUL, NULL);
                if (!json_is_object(o))
                    fprintf(stderr, "range line does not parse: %s\n", p);
                CHECK(json_is_object(o));
                json_decref(o);
            }
            (*files)++;
        }
        free(text);
    }
    closedir(dh);
}

/* The acknowledged records are there and hold their unique values. */
static long long check_acked(void)
{
    long long checked = 0;
    for (int w = 0; w < WRITERS; w++) {
        ledger *l = &ledgers[w];
        for (size_t i = l->checked; i < l->nacked; i++) {
            char q[160];
            snprintf(q, sizeof q,
                     "{\"where\":[{\"field\":\"req\",\"op\":\"eq\",\"value\":\"%s\"}]}",
                     l->acked[i]);
            json_t *r = NULL;
            long st = client_json(d.base, "POST", "/v1/docs/ix/_query", q, &r);
            json_t *items = json_object_get(r, "records");
            bool found = st == 200 && json_array_size(items) == 1;
            if (!found)
                fprintf(stderr, "acked %s: query status %ld, %zu found\n", l->acked[i], st,
                        json_array_size(items));
            CHECK(found);
            json_decref(r);
            char body[128];
            snprintf(body, sizeof body, "{\"req\":\"%s\"}", l->acked[i]);
            CHECK_INT(client_json(d.base, "POST", "/v1/docs/ix", body, NULL), 409);
            checked++;
        }
        l->checked = l->nacked;
    }
    return checked;
}

static const char *const mode_fsync[] = {"--doc-sync=fsync", NULL};
static const char *const mode_syncfs[] = {"--doc-sync=syncfs", NULL};
static const char *const mode_auto[] = {"--doc-sync=auto", NULL};
static const char *const *const modes[] = {mode_auto, mode_fsync, mode_syncfs};

static void kills(bool at_fault_point)
{
    const char *env = getenv("STORHD_CRASH_DOCINDEX_KILLS");
    int n = env ? atoi(env) : 6;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    printf("crash_docindex: %d kills, seed %u\n", n, seed);
    /* each case on a root of its own: the cases also run one after the
     * other in one process (scripts/memcheck.sh), and reuse unique values */
    char croot[PATH_MAX];
    snprintf(croot, sizeof croot, "%s/%s", root, at_fault_point ? "fault" : "random");
    CHECK_INT(mkdir(croot, 0755), 0);
    for (int w = 0; w < WRITERS; w++) {
        ledgers[w] = (ledger){.w = w};
        ledgers[w].acked = malloc(MAX_ACKED * sizeof *ledgers[w].acked);
    }
    CHECK_INT(daemon_start(&d, croot, NULL), 0);
    CHECK_INT(client_json(d.base, "PUT", "/v1/docs/ix/_indexes",
                          "{\"fields\":[{\"field\":\"req\",\"unique\":true},{\"field\":\"kind\"},"
                          "{\"field\":\"w\"},{\"field\":\"n\",\"range\":true}]}",
                          NULL),
              200);
    CHECK_INT(daemon_stop(&d), 0);
    long long checked = 0;
    int fault_hits = 0, files = 0;
    for (int k = 0; k < n; k++) {
        char fault[64];
        if (at_fault_point) {
            snprintf(fault, sizeof fault, "docgroup.index.staged@%d", 2 + rand_r(&seed) % 20);
            setenv("STORH_FAULT", fault, 1);
        }
        int rc = daemon_start(&d, croot, modes[k % 3]);
        unsetenv("STORH_FAULT");
        CHECK_INT(rc, 0);
        if (rc)
            break;
        atomic_store(&stop_writers, false);
        for (int w = 0; w < WRITERS; w++)
            pthread_create(&ledgers[w].th, NULL, writer, &ledgers[w]);
        if (at_fault_point) { /* it ends itself; give it up to 20 s */
            for (int t = 0; t < 200 && kill(d.pid, 0) == 0; t++) {
                int status;
                if (waitpid(d.pid, &status, WNOHANG) == d.pid) {
                    fault_hits += WIFEXITED(status) && WEXITSTATUS(status) == 86;
                    d.pid = 0;
                    break;
                }
                struct timespec ts = {0, 100000000L};
                nanosleep(&ts, NULL);
            }
        } else {
            struct timespec ts = {0, (long)(50 + rand_r(&seed) % 400) * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (d.pid > 0)
            daemon_kill(&d);
        atomic_store(&stop_writers, true);
        for (int w = 0; w < WRITERS; w++)
            pthread_join(ledgers[w].th, NULL);
        CHECK_INT(daemon_start(&d, croot, modes[(k + 1) % 3]), 0);
        char ixdir[PATH_MAX];
        snprintf(ixdir, sizeof ixdir, "%s/ix/.storh/indexes", croot);
        check_files(ixdir, &files);
        checked += check_acked();
        CHECK_INT(client_json(d.base, "POST", "/v1/docs/ix/_reindex", NULL, NULL), 200);
        client_resp r;
        client_do(d.base, "GET", "/v1/docs/ix/_verify", NULL, NULL, 0, NULL, 0, &r);
        CHECK_PREFIX(r.body, "{\"ok\":true,\"errors\":[]");
        client_free(&r);
        CHECK_INT(daemon_stop(&d), 0);
    }
    if (at_fault_point)
        CHECK(fault_hits > 0);
    CHECK(checked > 0);
    printf("crash_docindex: %d kills (%d at the fault point), %lld acknowledged writes checked, "
           "%d index files parsed\n",
           n, fault_hits, checked, files);
    for (int w = 0; w < WRITERS; w++)
        free(ledgers[w].acked);
}

TEST(kill_between_index_sync_and_renames)
{
    kills(true);
}

TEST(kill_at_random_moments)
{
    kills(false);
}

static const test_case cases[] = {
    TEST_ENTRY(kill_between_index_sync_and_renames),
    TEST_ENTRY(kill_at_random_moments),
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
        daemon_cleanup(&d);
    } else {
        fprintf(stderr, "kept the root for a look: %s\n", root);
    }
    curl_global_cleanup();
    return rc;
}

TEST_MAIN_NAMED(run_cases, cases)
