/* test_docstore_recovery: what an open finishes or drops after a writer
 * died (its temps, its bulk committed or not, staged the old way or the
 * new, over existing records, rows whose stage is gone), and a bulk whose
 * commit record's directory sync fails. The store's files: test_docstore. */
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "buf.h"
#include "docstore.h"
#include "fsx.h"
#include "storh_err.h"
#include "uuid7.h"

static char root[PATH_MAX];

#include "../support/dockit.h"
#include "../support/js.h"

static docstore *open_store(const char *name)
{
    return dockit_open(root, name);
}

TEST(open_sweeps_dead_writers_temps)
{
    char dir[PATH_MAX], p[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/sweep/data/ab", root);
    fsx_mkdirs(dir, false, NULL);
    snprintf(p, sizeof p, "%s/sweep/.storh/writers", root);
    fsx_mkdirs(p, false, NULL);
    /* pid 0x7ffffffe is never alive */
    dockit_touch("%s/sweep/.storh/writers/2147483646.deadbeef", root);
    dockit_touch("%s/.2147483646.deadbeef.1.tmp", dir);
    dockit_touch("%s/.%d.cafebabe.1.tmp", dir, (int)getpid());
    docstore *ds = open_store("sweep");
    CHECK_INT(dockit_count_files(dir, ".tmp"), 1); /* ours (alive) kept, the dead one gone */
    snprintf(p, sizeof p, "%s/sweep/.storh/writers", root);
    CHECK_INT(dockit_count_files(p, "."), 0);
    docstore_close(ds);
}

/* A writer process that stages rows rows of {"bulk": i} into name, row i
 * with ids[i] (row dup, when not -1, with ids[3]), and commits: ended by
 * the fault point fault (STORH_FAULT) or, with fault NULL, before its
 * commit, staged and never committed. Checks that it died there. */
static void bulk_killed(const char *name, const char *fault, char (*ids)[UUID7_LEN + 1], int rows,
                        int dup)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (fault)
            setenv("STORH_FAULT", fault, 1);
        docstore *c = open_store(name);
        docstore_stage *st;
        char id[UUID7_LEN + 1];
        if (!c || docstore_stage_begin(c, &st, NULL))
            _exit(1);
        for (int i = 0; i < rows; i++) {
            json_t *d = json_pack("{si}", "bulk", i);
            docstore_stage_put(st, ids[i == dup ? 3 : i], d, id, NULL);
            json_decref(d);
        }
        if (!fault) /* staged, never committed */
            _exit(86);
        docstore_stage_commit(st, NULL, NULL);
        _exit(1); /* the fault point ends it before */
    }
    int wst = -1;
    waitpid(pid, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 86);
}

/* A bulk whose writer died in the middle of its renames is finished by the
 * next open, except for a row another writer replaced in between (it is
 * newer), and an id written twice ends with its later row; an uncommitted
 * one is dropped, and so is one killed while writing its commit record
 * (with the record's temp). */
TEST(open_finishes_a_dead_writers_bulk)
{
    enum { ROWS = 12 };
    char ids[ROWS][UUID7_LEN + 1];
    for (int i = 0; i < ROWS; i++)
        CHECK_INT(uuid7_generate(ids[i], -1, NULL), 0);
    /* 0: killed among its renames; 1: staged, never committed; 2: killed
     * while writing its commit record (its temp is left) */
    for (int variant = 0; variant < 3; variant++) {
        const char *name = variant == 2 ? "dead-committing"
                           : variant    ? "dead-uncommitted"
                                        : "dead-committed";
        /* row 9 takes row 3's id: 3 twice */
        bulk_killed(name,
                    variant == 1 ? NULL
                    : variant    ? "docstore.bulk.committing"
                                 : "docstore.bulk.renamed@4",
                    ids, ROWS, 9);
        /* another writer replaces row 7 before anyone opens the collection
         * again: this instance's open runs the recovery, so write by hand */
        char p[PATH_MAX], d[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s/data/%.2s/%s.jsonc", root, name, ids[7] + 24, ids[7]);
        fsx_dirname(p, d, sizeof d);
        fsx_mkdirs(d, false, NULL);
        char rec[128];
        snprintf(rec, sizeof rec, "{\"id\":\"%s\",\"data\":{\"other\":1}}\n", ids[7]);
        FILE *f = fopen(p, "w");
        fputs(rec, f);
        fclose(f);
        docstore *ds = open_store(name);
        for (int i = 0; i < ROWS; i++) {
            json_t *data = NULL;
            int rc = docstore_get(ds, ids[i], &data, NULL, NULL);
            if (i == 7) {
                CHECK(rc == 0 && json_integer_value(json_object_get(data, "other")) == 1);
            } else if (variant || i == 9) {
                CHECK_INT(rc, STORH_ENOTFOUND);
            } else { /* the later of the two rows of id 3 */
                CHECK(rc == 0 &&
                      json_integer_value(json_object_get(data, "bulk")) == (i == 3 ? 9 : i));
            }
            json_decref(data);
        }
        char stage[PATH_MAX];
        snprintf(stage, sizeof stage, "%s/%s/.storh/bulk", root, name);
        CHECK_INT(dockit_count_files(stage, ""), 0);
        snprintf(stage, sizeof stage, "%s/%s/data", root, name);
        CHECK_INT(dockit_count_files(stage, ".row"), 0); /* every staged row renamed or dropped */
        docstore_close(ds);
    }
}

/* Rows left in a shard by stages that are gone (a power cut kept a row's
 * name and lost its lock's, or an unlink failed) are removed by the next
 * open after a writer died; a live stage's rows, and a stage begun after
 * the open listed .storh/bulk, are not. */
TEST(open_sweeps_rows_whose_stage_is_gone)
{
    const char *name = "orphans";
    docstore *ds = open_store(name);
    json_t *d = json_pack("{si}", "i", 1);
    char id[UUID7_LEN + 1], p[PATH_MAX], shard[PATH_MAX];
    CHECK_INT(docstore_put(ds, NULL, d, id, NULL, NULL), 0);
    json_decref(d);
    docstore_close(ds);
    snprintf(shard, sizeof shard, "%s/%s/data/%.2s", root, name, id + 24);
    /* gone: no lock file, no commit record; alive: its lock held here */
    dockit_touch("%s/.2147483646.deadbeef.7.0.row", shard);
    dockit_touch("%s/.2147483646.deadbeef.7.12.row", shard);
    dockit_touch("%s/.%d.cafebabe.9.0.row", shard, (int)getpid());
    snprintf(p, sizeof p, "%s/%s/.storh/bulk", root, name);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    snprintf(p, sizeof p, "%s/%s/.storh/bulk/%d.cafebabe.9.lock", root, name, (int)getpid());
    int lfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    CHECK(lfd >= 0 && flock(lfd, LOCK_EX) == 0);
    /* no writer died: nothing is looked for */
    ds = open_store(name);
    CHECK_INT(dockit_count_files(shard, ".row"), 3);
    docstore_close(ds);
    /* a writer died (its marker stale): the gone stage's rows go */
    dockit_touch("%s/%s/.storh/writers/2147483646.deadbeef", root, name);
    ds = open_store(name);
    CHECK_INT(dockit_count_files(shard, ".row"), 1);
    CHECK_INT(dockit_count_files(shard, "cafebabe.9.0.row"), 1);
    CHECK_INT(dockit_count_files(shard, ".jsonc"), 1);
    docstore_close(ds);
    close(lfd);
}

/* A bulk whose commit record was renamed into place but whose directory's
 * sync failed is refused whole. Variant 0: the record is taken back (unlinked,
 * the directory synced), then the rows dropped: an error, then no record of
 * it, no row, no stage file. 1: the same, killed after its fourth dropped row:
 * the record went first, so the next open finds nothing to roll forward in
 * part. 2: every sync fails, so the record's removal is not durable: the
 * stage is left whole, the collection refuses writes, and the next open
 * drops it whole (its record is gone). */
TEST(bulk_whose_commit_sync_fails_is_refused_whole)
{
    enum { ROWS = 12 };
    static const char *const names[3] = {"commit-sync", "commit-sync-crash", "commit-sync-keep"};
    for (int variant = 0; variant < 3; variant++) {
        const char *name = names[variant];
        char ids[ROWS][UUID7_LEN + 1], p[PATH_MAX];
        for (int i = 0; i < ROWS; i++)
            CHECK_INT(uuid7_generate(ids[i], -1, NULL), 0);
        pid_t pid = variant == 1 ? fork() : 0;
        if (pid == 0) {
            char fail[64];
            snprintf(fail, sizeof fail, "bulksync:%s%s", name, variant == 2 ? "" : "@1");
            setenv("STORH_FAULT_FAIL", fail, 1);
            if (variant == 1)
                setenv("STORH_FAULT", "docstore.bulk.dropped@4", 1);
            docstore *c = open_store(name);
            docstore_stage *st;
            char id[UUID7_LEN + 1];
            CHECK(c != NULL && docstore_stage_begin(c, &st, NULL) == 0);
            for (int i = 0; i < ROWS; i++) {
                json_t *d = json_pack("{si}", "bulk", i);
                CHECK_INT(docstore_stage_put(st, ids[i], d, id, NULL), 0);
                json_decref(d);
            }
            storh_err err = {0};
            size_t written = 99;
            int rc = docstore_stage_commit(st, &written, &err);
            if (variant == 1)
                _exit(1); /* the fault point ends it before */
            unsetenv("STORH_FAULT_FAIL");
            CHECK(rc != 0 && strstr(err.msg, "sync") != NULL);
            CHECK_INT((int)written, 0);
            json_t *d = json_pack("{si}", "after", 1);
            CHECK_INT(docstore_put(c, NULL, d, id, NULL, NULL) == 0, variant == 0);
            json_decref(d);
            snprintf(p, sizeof p, "%s/%s/data", root, name);
            CHECK_INT(dockit_count_files(p, ".row"), variant == 2 ? ROWS : 0);
            docstore_close(c);
        } else {
            int wst = -1;
            waitpid(pid, &wst, 0);
            CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 86);
            snprintf(p, sizeof p, "%s/%s/data", root, name);
            CHECK(dockit_count_files(p, ".row") > 0); /* killed while dropping them */
        }
        docstore *ds = open_store(name);
        for (int i = 0; i < ROWS; i++) {
            json_t *data = NULL;
            CHECK_INT(docstore_get(ds, ids[i], &data, NULL, NULL), STORH_ENOTFOUND);
            json_decref(data);
        }
        snprintf(p, sizeof p, "%s/%s/data", root, name);
        CHECK_INT(dockit_count_files(p, ".row"), 0);
        CHECK_INT(dockit_count_files(p, ".jsonc"), variant == 0); /* the put after it */
        snprintf(p, sizeof p, "%s/%s/.storh/bulk", root, name);
        CHECK_INT(dockit_count_files(p, ""), 0);
        docstore_close(ds);
    }
}

/* A bulk staged and committed by a build that kept its rows under
 * .storh/bulk/rows/<shard>/ (its commit record names no "staged"), its
 * writer dead among the renames: the next open finishes it from there. */
TEST(open_finishes_a_bulk_staged_the_old_way)
{
    const char *name = "old-stage", *stage = "2147483646.deadbeef.1";
    char ids[3][UUID7_LEN + 1], p[PATH_MAX], d[PATH_MAX];
    for (int i = 0; i < 3; i++)
        CHECK_INT(uuid7_generate(ids[i], -1, NULL), 0);
    buf j = BUF_INIT;
    buf_append(&j, "{\"rows\":[", 9);
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s/.storh/bulk/rows/%.2s/%s.%d", root, name, ids[i] + 24, stage,
                 i);
        fsx_dirname(p, d, sizeof d);
        CHECK_INT(fsx_mkdirs(d, false, NULL), 0);
        FILE *f = fopen(p, "w");
        fprintf(f, "{\"id\":\"%s\",\"data\":{\"old\":%d}}\n", ids[i], i);
        fclose(f);
        struct stat st;
        CHECK_INT(stat(p, &st), 0);
        buf_printf(&j, "%s[\"data/%.2s/%s.jsonc\",null,%lld]", i ? "," : "", ids[i] + 24, ids[i],
                   (long long)st.st_ino);
    }
    buf_append(&j, "]}", 2);
    snprintf(p, sizeof p, "%s/%s/.storh/bulk/%s.journal.jsonc", root, name, stage);
    FILE *f = fopen(p, "w");
    fwrite(j.data, 1, j.len, f);
    fclose(f);
    buf_free(&j);
    dockit_touch("%s/%s/.storh/bulk/%s.lock", root, name, stage);
    docstore *ds = open_store(name);
    CHECK(ds != NULL);
    for (int i = 0; i < 3; i++) {
        json_t *data = NULL;
        CHECK_INT(docstore_get(ds, ids[i], &data, NULL, NULL), 0);
        CHECK_INT(json_integer_value(json_object_get(data, "old")), i);
        json_decref(data);
    }
    snprintf(p, sizeof p, "%s/%s/.storh/bulk", root, name);
    CHECK_INT(dockit_count_files(p, ""), 0);
    docstore_close(ds);
}

/* A dead writer's committed bulk over records that exist (its commit
 * record holds what each record path held, found through the shard
 * directories' descriptors) is finished on open: the rows whose records
 * nobody touched since land, the one another writer replaced keeps theirs. */
TEST(open_finishes_a_dead_writers_bulk_over_existing_records)
{
    enum { ROWS = 8 };
    const char *name = "dead-over-existing";
    char ids[ROWS][UUID7_LEN + 1];
    docstore *ds = open_store(name);
    CHECK(ds != NULL);
    for (int i = 0; i < ROWS; i++) {
        json_t *d = json_pack("{si}", "old", i);
        CHECK_INT(docstore_put(ds, NULL, d, ids[i], NULL, NULL), 0);
        json_decref(d);
    }
    docstore_close(ds);
    bulk_killed(name, "docstore.bulk.renamed@2", ids, ROWS, -1);
    /* another writer replaces row 5 (not renamed yet) before the open */
    char p[PATH_MAX], rec[128], tmp[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/data/%.2s/%s.jsonc", root, name, ids[5] + 24, ids[5]);
    snprintf(tmp, sizeof tmp, "%s.other", p);
    snprintf(rec, sizeof rec, "{\"id\":\"%s\",\"data\":{\"other\":1}}\n", ids[5]);
    FILE *f = fopen(tmp, "w");
    fputs(rec, f);
    fclose(f);
    CHECK_INT(rename(tmp, p), 0);
    ds = open_store(name);
    for (int i = 0; i < ROWS; i++) {
        json_t *data = NULL;
        CHECK_INT(docstore_get(ds, ids[i], &data, NULL, NULL), 0);
        if (i == 5)
            CHECK_INT(json_integer_value(json_object_get(data, "other")), 1);
        else
            CHECK_INT(json_integer_value(json_object_get(data, "bulk")), i);
        json_decref(data);
    }
    char stage[PATH_MAX];
    snprintf(stage, sizeof stage, "%s/%s/.storh/bulk", root, name);
    CHECK_INT(dockit_count_files(stage, ""), 0);
    docstore_close(ds);
}

static const test_case tests[] = {
    TEST_ENTRY(open_sweeps_dead_writers_temps),
    TEST_ENTRY(open_finishes_a_dead_writers_bulk),
    TEST_ENTRY(open_sweeps_rows_whose_stage_is_gone),
    TEST_ENTRY(bulk_whose_commit_sync_fails_is_refused_whole),
    TEST_ENTRY(open_finishes_a_bulk_staged_the_old_way),
    TEST_ENTRY(open_finishes_a_dead_writers_bulk_over_existing_records),
};

TMPDIR_TEST_MAIN(root, tests)
