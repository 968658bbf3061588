/* An index rebuild (reindex, repair, a define that changes definitions)
 * that fails or is cut by a crash: the entries that stood before it keep
 * serving, whole, until a complete new tree takes their place. */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/snapshot.h"
#include "../test.h"
#include "../tmpdir.h"
#include "docstore.h"
#include "fsx.h"
#include "query.h"

static char root[PATH_MAX];

#include "../support/dockit.h"
#include "../support/js.h"

#define DEFS "{\"fields\":[{\"field\":\"slug\",\"unique\":true},{\"field\":\"kind\"}]}"
#define FIRST "018bcfe5-6800-7000-8000-2d5dba6274da"

/* A store whose kind "bulk" entry lists rows ids (about 40 bytes each),
 * and whose first record holds the unique slug "a". */
static docstore *indexed_store(const char *name, int rows)
{
    docstore *ds = dockit_open(root, name);
    CHECK(ds != NULL);
    json_t *defs = js(DEFS), *out = NULL;
    CHECK_INT(docstore_define_indexes(ds, defs, true, &out, NULL), 0);
    json_decref(out);
    json_decref(defs);
    char id[37];
    for (int i = 0; i < rows; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"slug\":\"s%d\",\"kind\":\"bulk\"}", i);
        json_t *d = js(i ? body : "{\"slug\":\"a\",\"kind\":\"bulk\"}");
        CHECK_INT(docstore_put(ds, i ? NULL : FIRST, d, id, NULL, NULL), 0);
        json_decref(d);
    }
    return ds;
}

static char *entries_snapshot(const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/.storh/indexes/entries", root, name);
    return snapshot_tree(p);
}

/* The indexes still answer: the unique slug is enforced and they agree
 * with a scan of the records. */
static void check_serving(docstore *ds)
{
    json_t *d = js("{\"slug\":\"a\"}");
    char id[37];
    storh_err err;
    CHECK_INT(docstore_put(ds, NULL, d, id, NULL, &err), STORH_ECONFLICT);
    json_decref(d);
    json_t *h = NULL;
    CHECK_INT(docstore_health(ds, &h, NULL), 0);
    CHECK(json_is_true(json_object_get(h, "ok")));
    json_decref(h);
}

/* A write of the new tree fails (a file over RLIMIT_FSIZE, as a full disk
 * would): the rebuild is refused and the old entries stand as they were. */
TEST(failed_rebuild_keeps_the_old_entries)
{
    docstore *ds = indexed_store("full", 300);
    char *before = entries_snapshot("full");
    struct rlimit was, small;
    CHECK_INT(getrlimit(RLIMIT_FSIZE, &was), 0);
    small = was;
    small.rlim_cur = 8192; /* the bulk entry is about 12 KiB */
    signal(SIGXFSZ, SIG_IGN);
    CHECK_INT(setrlimit(RLIMIT_FSIZE, &small), 0);
    storh_err err;
    int rc = docstore_reindex(ds, NULL, &err);
    CHECK_INT(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, SIG_DFL);
    CHECK(rc != 0);
    char *after = entries_snapshot("full");
    CHECK_STR(after, before);
    check_serving(ds);
    char swap[PATH_MAX];
    snprintf(swap, sizeof swap, "%s/full/.storh/indexes/.entries.swap", root);
    CHECK(access(swap, F_OK) != 0); /* the failed build's tree is gone */
    CHECK_INT(docstore_reindex(ds, NULL, NULL), 0);
    check_serving(ds);
    free(before);
    free(after);
    docstore_close(ds);
}

/* Killed while the new tree is published, or right after it is swapped
 * in: entries/ holds a whole tree (the same bytes: the records did not
 * change), never none, for any reader that comes next (storh reads the
 * files as they are). */
TEST(crashed_rebuild_leaves_a_whole_tree)
{
    static const char *const cuts[] = {"pubset.rename@1", "pubset.rename@2", "docindex.swapped"};
    for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
        char name[16];
        snprintf(name, sizeof name, "cut%zu", c);
        docstore *ds = indexed_store(name, 3);
        docstore_close(ds);
        char *before = entries_snapshot(name);
        pid_t pid = fork();
        if (pid == 0) {
            setenv("STORH_FAULT", cuts[c], 1);
            docstore *k = dockit_open(root, name);
            if (k)
                docstore_reindex(k, NULL, NULL);
            _exit(0); /* the fault point was not reached */
        }
        int status = -1;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 86);
        char *after = entries_snapshot(name);
        CHECK_STR(after, before);
        free(before);
        free(after);
        ds = dockit_open(root, name);
        check_serving(ds);
        docstore_close(ds);
    }
}

/* What a crashed build left beside the entries (its tree, or the old one
 * it had swapped out) is removed by the next build. */
TEST(next_rebuild_removes_a_leftover_tree)
{
    docstore *ds = indexed_store("left", 3);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/left/.storh/indexes/.entries.swap/eq/6b696e64", root);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    dockit_touch("%s/stale.jsonc", p);
    CHECK_INT(docstore_reindex(ds, NULL, NULL), 0);
    snprintf(p, sizeof p, "%s/left/.storh/indexes/.entries.swap", root);
    CHECK(access(p, F_OK) != 0);
    check_serving(ds);
    docstore_close(ds);
}

/* The records whose slug is slug, by a query the index answers. */
static long slug_count(docstore *ds, const char *slug)
{
    char body[128];
    snprintf(body, sizeof body, "{\"where\":[{\"field\":\"slug\",\"op\":\"eq\",\"value\":\"%s\"}]}",
             slug);
    json_t *b = js(body), *out = NULL;
    query q;
    long n = -1;
    if (query_parse(b, &q, NULL) == 0) {
        if (docstore_query(ds, &q, &out, NULL) == 0)
            n = (long)json_array_size(json_object_get(out, "records"));
        query_free(&q);
    }
    json_decref(out);
    json_decref(b);
    return n;
}

/* This process has cached the absence of a unique value's entry (validated
 * by the watch over its dir) when another storhd process rebuilds and is
 * killed right after it swapped its tree in. The watch stays on the old
 * dir, now beside the entries, and sees nothing more: a cache trusting it
 * would miss the value once written, and let a second record take it. The
 * swap is seen by the watch over the indexes dir. */
TEST(other_process_swap_is_seen_by_the_entry_cache)
{
    docstore *ds = indexed_store("seen", 1);
    CHECK_INT(slug_count(ds, "z"), 0);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STORH_FAULT", "docindex.swapped", 1);
        docstore *k = dockit_open(root, "seen");
        if (k)
            docstore_reindex(k, NULL, NULL);
        _exit(0);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 86);
    json_t *d = js("{\"slug\":\"z\"}");
    char id[37];
    storh_err err;
    CHECK_INT(docstore_put(ds, NULL, d, id, NULL, NULL), 0);
    CHECK_INT(slug_count(ds, "z"), 1);
    CHECK_INT(docstore_put(ds, NULL, d, id, NULL, &err), STORH_ECONFLICT);
    docstore_stage *st;
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    CHECK_INT(docstore_stage_put(st, NULL, d, id, NULL), 0);
    CHECK_INT(docstore_stage_commit(st, NULL, &err), STORH_ECONFLICT);
    json_decref(d);
    check_serving(ds);
    docstore_close(ds);
}

static const test_case tests[] = {
    TEST_ENTRY(failed_rebuild_keeps_the_old_entries),
    TEST_ENTRY(crashed_rebuild_leaves_a_whole_tree),
    TEST_ENTRY(next_rebuild_removes_a_leftover_tree),
    TEST_ENTRY(other_process_swap_is_seen_by_the_entry_cache),
};

TMPDIR_TEST_MAIN(root, tests)
