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
#include <stdbool.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "../support/crashkit.h"
#include "../support/daemon.h"
#include "../test.h"

#define WRITERS 16
#define MAX_ACKED 4096

static daemon_proc d;
static char root[PATH_MAX];

/* Each writer's acknowledged POSTs: a document per 201, its n the one of
 * its unique "req" value (r<w>-<n>). */
static crashkit_ledger ledgers[WRITERS];
static size_t checked_upto[WRITERS];
static crashkit_crew crew;

static void req_of(char *out, size_t cap, int w, long n)
{
    snprintf(out, cap, "r%d-%ld", w, n);
}

static bool write_one(void *arg)
{
    crashkit_ledger *l = arg;
    if (l->ndocs >= MAX_ACKED)
        return false;
    char req[32], body[256];
    long n = ++l->seq;
    req_of(req, sizeof req, l->w, n);
    snprintf(body, sizeof body, "{\"req\":\"%s\",\"kind\":\"k%ld\",\"w\":%d,\"n\":%ld}", req, n % 3,
             l->w, n);
    json_t *r = NULL;
    long st = crashkit_call(d.base, "POST", "/v1/docs/ix", body, &r);
    if (st == 201) {
        crashkit_doc *e = crashkit_new_doc(l);
        const char *id = json_string_value(json_object_get(r, "id"));
        if (id)
            snprintf(e->id, sizeof e->id, "%s", id);
        e->acked = n;
    } else if (st != 0) {
        fprintf(stderr, "POST %s: status %ld\n", req, st);
    }
    json_decref(r);
    return st != 0; /* 0: the server is gone */
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
        crashkit_ledger *l = &ledgers[w];
        for (size_t i = checked_upto[w]; i < l->ndocs; i++) {
            char req[32], q[160];
            req_of(req, sizeof req, l->w, l->docs[i].acked);
            snprintf(q, sizeof q,
                     "{\"where\":[{\"field\":\"req\",\"op\":\"eq\",\"value\":\"%s\"}]}", req);
            json_t *r = NULL;
            long st = client_json(d.base, "POST", "/v1/docs/ix/_query", q, &r);
            json_t *items = json_object_get(r, "records");
            bool found = st == 200 && json_array_size(items) == 1;
            if (!found)
                fprintf(stderr, "acked %s: query status %ld, %zu found\n", req, st,
                        json_array_size(items));
            CHECK(found);
            json_decref(r);
            char body[128];
            snprintf(body, sizeof body, "{\"req\":\"%s\"}", req);
            CHECK_INT(client_json(d.base, "POST", "/v1/docs/ix", body, NULL), 409);
            checked++;
        }
        checked_upto[w] = l->ndocs;
    }
    return checked;
}

static const char *const mode_fsync[] = {"--doc-sync=fsync", NULL};
static const char *const mode_syncfs[] = {"--doc-sync=syncfs", NULL};
static const char *const mode_auto[] = {"--doc-sync=auto", NULL};
static const char *const *const modes[] = {mode_auto, mode_fsync, mode_syncfs};

static void kills(bool at_fault_point)
{
    int n = crashkit_env_int("STORHD_CRASH_DOCINDEX_KILLS", 6);
    unsigned long long seed = crashkit_seed(NULL);
    printf("crash_docindex: %d kills, seed %llu\n", n, seed);
    /* each case on a root of its own: the cases also run one after the
     * other in one process (scripts/memcheck.sh), and reuse unique values */
    char croot[PATH_MAX];
    snprintf(croot, sizeof croot, "%s/%s", root, at_fault_point ? "fault" : "random");
    CHECK_INT(mkdir(croot, 0755), 0);
    for (int w = 0; w < WRITERS; w++) {
        crashkit_ledger_free(&ledgers[w]);
        ledgers[w].w = w;
        checked_upto[w] = 0;
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
            snprintf(fault, sizeof fault, "docgroup.index.staged@%d",
                     2 + (int)(crashkit_rnd(&seed) % 20));
            setenv("STORH_FAULT", fault, 1);
        }
        int rc = daemon_start(&d, croot, modes[k % 3]);
        unsetenv("STORH_FAULT");
        CHECK_INT(rc, 0);
        if (rc)
            break;
        crashkit_crew_start(&crew, WRITERS, write_one, ledgers, sizeof ledgers[0]);
        if (at_fault_point) { /* it ends itself; give it up to 20 s */
            for (int t = 0; t < 200 && kill(d.pid, 0) == 0; t++) {
                int status;
                if (waitpid(d.pid, &status, WNOHANG) == d.pid) {
                    fault_hits += WIFEXITED(status) && WEXITSTATUS(status) == 86;
                    d.pid = 0;
                    break;
                }
                crashkit_sleep_ms(100);
            }
        } else {
            crashkit_sleep_ms((long)(50 + crashkit_rnd(&seed) % 400));
        }
        if (d.pid > 0)
            daemon_kill(&d);
        crashkit_crew_stop(&crew);
        CHECK_INT(daemon_start(&d, croot, modes[(k + 1) % 3]), 0);
        char ixdir[PATH_MAX];
        snprintf(ixdir, sizeof ixdir, "%s/ix/.storh/indexes", croot);
        check_files(ixdir, &files);
        checked += check_acked();
        CHECK_INT(client_json(d.base, "POST", "/v1/docs/ix/_reindex", NULL, NULL), 200);
        CHECK(crashkit_verify_ok(d.base, "/v1/docs/ix/_verify", true));
        CHECK_INT(daemon_stop(&d), 0);
    }
    if (at_fault_point)
        CHECK(fault_hits > 0);
    CHECK(checked > 0);
    printf("crash_docindex: %d kills (%d at the fault point), %lld acknowledged writes checked, "
           "%d index files parsed\n",
           n, fault_hits, checked, files);
    for (int w = 0; w < WRITERS; w++)
        crashkit_ledger_free(&ledgers[w]);
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
