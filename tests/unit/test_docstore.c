/* test_docstore: the document store's files as storh lays them out: puts,
 * gets of hand-written and canonical files, stages, imports, streams,
 * a dead writer's temps and bulks finished on open, collections.
 * The record cache fed by writes: test_docstore_cache. */
#include <dirent.h>
#include <stdarg.h>
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
#include "rcache.h"
#include "recfile.h"
#include "query.h"
#include "storh_err.h"
#include "uuid7.h"
#include "sjson.h"

static char root[PATH_MAX];

#include "../support/js.h"

static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            n += count_files(p, suffix);
        else if (strstr(de->d_name, suffix))
            n++;
    }
    closedir(d);
    return n;
}

/* An empty file at the path fmt makes (its directory there already). */
static void touch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void touch(const char *fmt, ...)
{
    char p[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p, sizeof p, fmt, ap);
    va_end(ap);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
}

static docstore *open_store(const char *name)
{
    docstore *ds = NULL;
    storh_err err;
    if (docstore_open(root, name, &ds, &err) != 0)
        fprintf(stderr, "open: %s\n", err.msg);
    return ds;
}

TEST(put_writes_canonical_bytes_at_storh_path)
{
    docstore *ds = open_store("pages");
    json_t *data = js("{\"title\":\"H\\u00e9/llo\",\"n\":1.0,\"e\":{},\"o\":{\"a\":null},"
                      "\"big\":1e20,\"ctl\":\"a\\tb\\u0001\"}");
    char id[37];
    bool existed = true;
    storh_err err;
    CHECK_INT(docstore_put(ds, "018bcfe5-6800-7000-8000-2d5dba6274da", data, id, &existed, &err),
              0);
    CHECK(!existed);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/pages/data/2d/018bcfe5-6800-7000-8000-2d5dba6274da.jsonc",
             root);
    buf b = BUF_INIT;
    CHECK_INT(fsx_read_all(path, &b, NULL), 0);
    CHECK_STR(b.data, "{\"id\":\"018bcfe5-6800-7000-8000-2d5dba6274da\",\"data\":{\"title\":"
                      "\"Hé/llo\",\"n\":1.0,\"e\":[],\"o\":{\"a\":null},\"big\":1.0e+20,"
                      "\"ctl\":\"a\\tb\\u0001\"}}\n");
    /* marker registered, no temp left behind */
    snprintf(path, sizeof path, "%s/pages/.storh/writers", root);
    CHECK_INT(count_files(path, "."), 1);
    snprintf(path, sizeof path, "%s/pages", root);
    CHECK_INT(count_files(path, ".tmp"), 0);
    CHECK_INT(docstore_put(ds, id, data, id, &existed, &err), 0);
    CHECK(existed);
    json_decref(data);
    buf_free(&b);
    docstore_close(ds);
    snprintf(path, sizeof path, "%s/pages/.storh/writers", root);
    CHECK_INT(count_files(path, "."), 0);
}

TEST(get_reads_hand_written_jsonc)
{
    char dir[PATH_MAX], path[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/hand/data/aa", root);
    fsx_mkdirs(dir, false, NULL);
    const char *id = "018bcfe5-6800-7000-8000-aa5dba6274db";
    snprintf(path, sizeof path, "%s/%s.jsonc", dir, id);
    const char *text = "// edited by hand\n{\n  \"id\": \"018bcfe5-6800-7000-8000-aa5dba6274db\",\n"
                       "  \"data\": {\"kind\": \"page\", /* note */ \"tags\": [1, 2,],},\n}\n";
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    docstore *ds = open_store("hand");
    json_t *data = NULL;
    storh_err err;
    CHECK_INT(docstore_get(ds, id, &data, NULL, &err), 0);
    if (data) {
        CHECK_STR(json_string_value(json_object_get(data, "kind")), "page");
        CHECK_INT(json_array_size(json_object_get(data, "tags")), 2);
        json_decref(data);
    }
    /* a record whose id does not match its file is corrupt */
    snprintf(path, sizeof path, "%s/018bcfe5-6800-7000-8000-aa0000000000.jsonc", dir);
    f = fopen(path, "w");
    fputs("{\"id\":\"018bcfe5-6800-7000-8000-aa5dba6274db\",\"data\":{}}\n", f);
    fclose(f);
    CHECK_INT(docstore_get(ds, "018bcfe5-6800-7000-8000-aa0000000000", &data, NULL, &err),
              STORH_ECORRUPT);
    CHECK_INT(docstore_get(ds, "018bcfe5-6800-7000-8000-bb0000000000", &data, NULL, &err),
              STORH_ENOTFOUND);
    CHECK_INT(docstore_get(ds, "../etc/passwd", &data, NULL, &err), STORH_EINVAL);
    json_t *h;
    CHECK_INT(docstore_health(ds, &h, NULL), 0);
    CHECK(json_is_false(json_object_get(h, "ok")));
    CHECK_INT(json_integer_value(json_object_get(json_object_get(h, "stats"), "corrupt")), 1);
    CHECK_STR(json_string_value(json_array_get(json_object_get(h, "errors"), 0)),
              "Corrupt records: 1");
    json_decref(h);
    docstore_close(ds);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* The answer of a get (what GET sends) from files: a canonical file's own
 * bytes, anything else (JSONC, spaces) encoded canonically; a file whose
 * id is not its name's is corrupt either way; with and without a cache. */
static void answers_from_files(bool cached)
{
    const char *name = cached ? "ans_c" : "ans_n";
    char dir[PATH_MAX], path[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s/data/aa", root, name);
    fsx_mkdirs(dir, false, NULL);
    const char *a = "018bcfe5-6800-7000-8000-aa5dba6274db",
               *b = "018bcfe5-6801-7000-8000-aa5dba6274dc",
               *c = "018bcfe5-6802-7000-8000-aa5dba6274dd";
    char canon[256];
    snprintf(canon, sizeof canon, "{\"id\":\"%s\",\"data\":{\"kind\":\"page\",\"n\":1}}\n", a);
    snprintf(path, sizeof path, "%s/%s.jsonc", dir, a);
    write_text(path, canon);
    snprintf(path, sizeof path, "%s/%s.jsonc", dir, b);
    write_text(path, "// by hand\n{ \"id\": \"018bcfe5-6801-7000-8000-aa5dba6274dc\",\n"
                     "  \"data\": {\"kind\": \"page\", \"tags\": [1, 2,],} }\n");
    snprintf(path, sizeof path, "%s/%s.jsonc", dir, c);
    write_text(path, canon); /* a's record under c's name */
    docstore *ds = open_store(name);
    if (cached)
        docstore_set_cache(ds, RCACHE_STAT, 100, 1 << 20, NULL);
    for (int pass = 0; pass < 2; pass++) { /* a miss, then (cached) a hit */
        rcache_blob *ans = NULL;
        storh_err err;
        CHECK_INT(docstore_get_answer(ds, a, &ans, &err), 0);
        if (ans) {
            CHECK_INT((int)ans->len, (int)strlen(canon));
            CHECK(!memcmp(ans->data, canon, ans->len));
        }
        rcache_blob_release(ans);
        ans = NULL;
        CHECK_INT(docstore_get_answer(ds, b, &ans, &err), 0);
        if (ans)
            CHECK_STR(ans->data, "{\"id\":\"018bcfe5-6801-7000-8000-aa5dba6274dc\","
                                 "\"data\":{\"kind\":\"page\",\"tags\":[1,2]}}\n");
        rcache_blob_release(ans);
        ans = NULL;
        CHECK_INT(docstore_get_answer(ds, c, &ans, &err), STORH_ECORRUPT);
        CHECK(ans == NULL);
    }
    docstore_close(ds);
}

TEST(get_answers_files_as_they_are_when_canonical)
{
    answers_from_files(false);
}

TEST(get_answers_files_as_they_are_when_canonical_cached)
{
    answers_from_files(true);
}

TEST(stage_abort_changes_nothing)
{
    docstore *ds = open_store("bulk");
    docstore_stage *st;
    char id[37];
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    for (int i = 0; i < 20; i++) {
        json_t *d = json_pack("{si}", "i", i);
        CHECK_INT(docstore_stage_put(st, NULL, d, id, NULL), 0);
        json_decref(d);
    }
    char dir[PATH_MAX], stage[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/bulk/data", root);
    snprintf(stage, sizeof stage, "%s/bulk/.storh/bulk", root);
    /* the stage's lock file, and the rows beside the records they become,
     * as names no listing takes for records */
    CHECK_INT(count_files(stage, ""), 1);
    CHECK_INT(count_files(dir, ".row"), 20);
    CHECK_INT(count_files(dir, ".jsonc"), 0);
    recfile_list l;
    CHECK_INT(recfile_list_open(dir, &l), 0);
    CHECK_INT(l.n, 0);
    recfile_list_free(&l);
    docstore_iter *it;
    const char *got;
    json_t *gd;
    CHECK_INT(docstore_iter_open(ds, NULL, &it, NULL), 0);
    CHECK_INT(docstore_iter_next(it, &got, &gd, NULL), 0);
    docstore_iter_close(it);
    docstore_stage_abort(st);
    CHECK_INT(count_files(stage, ""), 0);
    CHECK_INT(count_files(dir, ""), 0); /* no row left (empty shards may stay) */
    /* and a commit publishes them all */
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    for (int i = 0; i < 20; i++) {
        json_t *d = json_pack("{si}", "i", i);
        CHECK_INT(docstore_stage_put(st, NULL, d, id, NULL), 0);
        json_decref(d);
    }
    size_t n = 0;
    CHECK_INT(docstore_stage_commit(st, &n, NULL), 0);
    CHECK_INT(n, 20);
    CHECK_INT(count_files(dir, ".jsonc"), 20);
    CHECK_INT(count_files(dir, ".tmp"), 0);
    CHECK_INT(count_files(dir, ".row"), 0);
    CHECK_INT(count_files(stage, ""), 0); /* the stage and its commit record are gone */
    docstore_close(ds);
}

TEST(import_rows_follow_storh)
{
    docstore *ds = open_store("imp");
    docstore_stage *st;
    char id[37];
    storh_err err;
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    const char *verbatim =
        "{\"data\": {\"k\": 1}, \"id\": \"018bcfe5-6800-7000-8000-1a5dba6274da\"}";
    CHECK_INT(docstore_stage_import_line(st, verbatim, strlen(verbatim), id, &err), 0);
    CHECK_STR(id, "018bcfe5-6800-7000-8000-1a5dba6274da");
    const char *extra = "{\"id\":\"018bcfe5-6800-7000-8000-1b5dba6274da\",\"x\":1,\"5\":2}";
    CHECK_INT(docstore_stage_import_line(st, extra, strlen(extra), id, &err), 0);
    CHECK_INT(docstore_stage_import_line(st, "   \r\n", 5, id, &err), 0);
    CHECK_STR(id, "");
    CHECK_INT(docstore_stage_import_line(st, "\"str\"", 5, id, &err), STORH_EINVAL);
    CHECK_STR(err.msg, "JSONL import rows must be objects.");
    CHECK_INT(docstore_stage_commit(st, NULL, NULL), 0);
    buf b = BUF_INIT;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/imp/data/1a/018bcfe5-6800-7000-8000-1a5dba6274da.jsonc", root);
    CHECK_INT(fsx_read_all(path, &b, NULL), 0);
    CHECK_STR(b.data, "{\"data\": {\"k\": 1}, \"id\": \"018bcfe5-6800-7000-8000-1a5dba6274da\"}\n");
    buf_reset(&b);
    snprintf(path, sizeof path, "%s/imp/data/1b/018bcfe5-6800-7000-8000-1b5dba6274da.jsonc", root);
    CHECK_INT(fsx_read_all(path, &b, NULL), 0);
    CHECK_STR(b.data, "{\"id\":\"018bcfe5-6800-7000-8000-1b5dba6274da\",\"data\":{\"id\":"
                      "\"018bcfe5-6800-7000-8000-1b5dba6274da\",\"x\":1}}\n");
    json_t *d;
    CHECK_INT(docstore_get(ds, "018bcfe5-6800-7000-8000-1a5dba6274da", &d, NULL, NULL), 0);
    CHECK_INT(json_integer_value(json_object_get(d, "k")), 1);
    json_decref(d);
    buf_free(&b);
    docstore_close(ds);
}

TEST(stream_order_filters_and_delete)
{
    docstore *ds = open_store("str");
    const char *ids[] = {
        "018bcfe5-6802-7000-8000-005dba6274da", "018bcfe5-6800-7000-8000-ff5dba6274da",
        "018bcfe5-6801-7000-8000-aa5dba6274da", "018BCFE5-6803-7000-8000-115dba6274da"};
    for (int i = 0; i < 4; i++) {
        json_t *d = json_pack("{sssi}", "kind", i % 2 ? "page" : "post", "i", i);
        char id[37];
        CHECK_INT(docstore_put(ds, ids[i], d, id, NULL, NULL), 0);
        json_decref(d);
    }
    docstore_iter *it;
    const char *id;
    json_t *d;
    const char *want[] = {ids[3], ids[1], ids[2], ids[0]}; /* byte order: uppercase first */
    CHECK_INT(docstore_iter_open(ds, NULL, &it, NULL), 0);
    for (int i = 0; i < 4; i++) {
        CHECK_INT(docstore_iter_next(it, &id, &d, NULL), 1);
        CHECK_STR(id, want[i]);
        json_decref(d);
    }
    CHECK_INT(docstore_iter_next(it, &id, &d, NULL), 0);
    docstore_iter_close(it);

    recquery q;
    recquery_init(&q);
    json_t *page = json_string("page");
    CHECK_INT(recquery_where_equal(&q, "kind", page, NULL), 0);
    json_decref(page);
    /* lowercase bounds: the uppercase id falls outside the window */
    CHECK_INT(recquery_time_range(&q, true, INT64_C(1700000000000), false, 0, NULL), 0);
    CHECK_INT(docstore_iter_open(ds, &q, &it, NULL), 0);
    d = NULL;
    CHECK_INT(docstore_iter_next(it, &id, &d, NULL), 1);
    CHECK_STR(id, ids[1]);
    json_decref(d);
    CHECK_INT(docstore_iter_next(it, &id, &d, NULL), 0);
    docstore_iter_close(it);
    recquery_clear(&q);

    bool existed;
    CHECK_INT(docstore_delete(ds, ids[2], &existed, NULL), 0);
    CHECK(existed);
    CHECK_INT(docstore_delete(ds, ids[2], &existed, NULL), 0);
    CHECK(!existed);
    json_t *stats;
    CHECK_INT(docstore_stats(ds, &stats, NULL), 0);
    CHECK_INT(json_integer_value(json_object_get(stats, "records")), 3);
    json_decref(stats);

    char out[PATH_MAX];
    size_t n;
    snprintf(out, sizeof out, "%s/export/str.jsonl", root);
    CHECK_INT(docstore_export_jsonl(ds, out, &n, NULL), 0);
    CHECK_INT(n, 3);
    docstore_close(ds);
}

TEST(open_sweeps_dead_writers_temps)
{
    char dir[PATH_MAX], p[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/sweep/data/ab", root);
    fsx_mkdirs(dir, false, NULL);
    snprintf(p, sizeof p, "%s/sweep/.storh/writers", root);
    fsx_mkdirs(p, false, NULL);
    /* pid 0x7ffffffe is never alive */
    touch("%s/sweep/.storh/writers/2147483646.deadbeef", root);
    touch("%s/.2147483646.deadbeef.1.tmp", dir);
    touch("%s/.%d.cafebabe.1.tmp", dir, (int)getpid());
    docstore *ds = open_store("sweep");
    CHECK_INT(count_files(dir, ".tmp"), 1); /* ours (alive) kept, the dead one gone */
    snprintf(p, sizeof p, "%s/sweep/.storh/writers", root);
    CHECK_INT(count_files(p, "."), 0);
    docstore_close(ds);
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
        pid_t pid = fork();
        if (pid == 0) {
            if (variant != 1)
                setenv("STORH_FAULT",
                       variant ? "docstore.bulk.committing" : "docstore.bulk.renamed@4", 1);
            docstore *c = open_store(name);
            docstore_stage *st;
            char id[UUID7_LEN + 1];
            if (!c || docstore_stage_begin(c, &st, NULL))
                _exit(1);
            for (int i = 0; i < ROWS; i++) {
                json_t *d = json_pack("{si}", "bulk", i);
                docstore_stage_put(st, ids[i == 9 ? 3 : i], d, id, NULL); /* 3 twice */
                json_decref(d);
            }
            if (variant == 1) /* staged, never committed */
                _exit(86);
            docstore_stage_commit(st, NULL, NULL);
            _exit(1); /* the fault point ends it before */
        }
        int wst = -1;
        waitpid(pid, &wst, 0);
        CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 86);
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
        CHECK_INT(count_files(stage, ""), 0);
        snprintf(stage, sizeof stage, "%s/%s/data", root, name);
        CHECK_INT(count_files(stage, ".row"), 0); /* every staged row renamed or dropped */
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
    touch("%s/.2147483646.deadbeef.7.0.row", shard);
    touch("%s/.2147483646.deadbeef.7.12.row", shard);
    touch("%s/.%d.cafebabe.9.0.row", shard, (int)getpid());
    snprintf(p, sizeof p, "%s/%s/.storh/bulk", root, name);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    snprintf(p, sizeof p, "%s/%s/.storh/bulk/%d.cafebabe.9.lock", root, name, (int)getpid());
    int lfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    CHECK(lfd >= 0 && flock(lfd, LOCK_EX) == 0);
    /* no writer died: nothing is looked for */
    ds = open_store(name);
    CHECK_INT(count_files(shard, ".row"), 3);
    docstore_close(ds);
    /* a writer died (its marker stale): the gone stage's rows go */
    touch("%s/%s/.storh/writers/2147483646.deadbeef", root, name);
    ds = open_store(name);
    CHECK_INT(count_files(shard, ".row"), 1);
    CHECK_INT(count_files(shard, "cafebabe.9.0.row"), 1);
    CHECK_INT(count_files(shard, ".jsonc"), 1);
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
            CHECK_INT(count_files(p, ".row"), variant == 2 ? ROWS : 0);
            docstore_close(c);
        } else {
            int wst = -1;
            waitpid(pid, &wst, 0);
            CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 86);
            snprintf(p, sizeof p, "%s/%s/data", root, name);
            CHECK(count_files(p, ".row") > 0); /* killed while dropping them */
        }
        docstore *ds = open_store(name);
        for (int i = 0; i < ROWS; i++) {
            json_t *data = NULL;
            CHECK_INT(docstore_get(ds, ids[i], &data, NULL, NULL), STORH_ENOTFOUND);
            json_decref(data);
        }
        snprintf(p, sizeof p, "%s/%s/data", root, name);
        CHECK_INT(count_files(p, ".row"), 0);
        CHECK_INT(count_files(p, ".jsonc"), variant == 0); /* the put after it */
        snprintf(p, sizeof p, "%s/%s/.storh/bulk", root, name);
        CHECK_INT(count_files(p, ""), 0);
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
    touch("%s/%s/.storh/bulk/%s.lock", root, name, stage);
    docstore *ds = open_store(name);
    CHECK(ds != NULL);
    for (int i = 0; i < 3; i++) {
        json_t *data = NULL;
        CHECK_INT(docstore_get(ds, ids[i], &data, NULL, NULL), 0);
        CHECK_INT(json_integer_value(json_object_get(data, "old")), i);
        json_decref(data);
    }
    snprintf(p, sizeof p, "%s/%s/.storh/bulk", root, name);
    CHECK_INT(count_files(p, ""), 0);
    docstore_close(ds);
}

/* An exported line (the canonical record of its id) imported into a plain
 * collection becomes its record file byte for byte without a decode; with
 * a schema or an index it is decoded, validated and indexed as any row. */
TEST(import_of_canonical_lines_is_schema_and_index_checked)
{
    const char *a = "{\"id\":\"018bcfe5-6800-7000-8000-2a5dba6274da\",\"data\":{\"k\":1,"
                    "\"s\":\"x\"}}";
    const char *b = "{\"id\":\"018bcfe5-6800-7000-8000-2b5dba6274da\",\"data\":[1,2]}";
    const char *bad_id = "{\"id\":\"018bcfe5-6800-0000-8000-2c5dba6274da\",\"data\":{\"k\":1}}";
    docstore *ds = open_store("canon");
    docstore_stage *st;
    char id[37];
    storh_err err;
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    CHECK_INT(docstore_stage_import_line(st, a, strlen(a), id, &err), 0);
    CHECK_STR(id, "018bcfe5-6800-7000-8000-2a5dba6274da");
    CHECK_INT(docstore_stage_import_line(st, b, strlen(b), id, &err), 0);
    CHECK_INT(docstore_stage_import_line(st, bad_id, strlen(bad_id), id, &err), STORH_EINVAL);
    CHECK_INT(docstore_stage_commit(st, NULL, NULL), 0);
    buf got = BUF_INIT;
    char path[PATH_MAX], want[256];
    snprintf(path, sizeof path, "%s/canon/data/2a/018bcfe5-6800-7000-8000-2a5dba6274da.jsonc",
             root);
    CHECK_INT(fsx_read_all(path, &got, NULL), 0);
    snprintf(want, sizeof want, "%s\n", a);
    CHECK_STR(got.data, want);
    json_t *d;
    CHECK_INT(docstore_get(ds, "018bcfe5-6800-7000-8000-2b5dba6274da", &d, NULL, NULL), 0);
    CHECK(json_is_array(d) && json_array_size(d) == 2);
    json_decref(d);
    /* a schema the line breaks: refused, nothing staged */
    json_t *sch = js("{\"fields\":{\"k\":{\"type\":\"string\"}}}"), *out = NULL;
    CHECK_INT(docstore_set_schema(ds, sch, &out, NULL), 0);
    json_decref(sch);
    json_decref(out);
    const char *c = "{\"id\":\"018bcfe5-6800-7000-8000-2d5dba6274da\",\"data\":{\"k\":1}}";
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    CHECK_INT(docstore_stage_import_line(st, c, strlen(c), id, &err), STORH_ESCHEMA);
    CHECK_INT((int)docstore_stage_count(st), 0);
    docstore_stage_abort(st);
    docstore_close(ds);
    /* an index: the imported row is found through it */
    ds = open_store("canon-ix");
    json_t *defs = js("{\"fields\":[{\"field\":\"s\"}]}");
    CHECK_INT(docstore_define_indexes(ds, defs, true, &out, NULL), 0);
    json_decref(defs);
    json_decref(out);
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    CHECK_INT(docstore_stage_import_line(st, a, strlen(a), id, &err), 0);
    CHECK_INT(docstore_stage_commit(st, NULL, NULL), 0);
    json_t *qb = js("{\"where\":[{\"field\":\"s\",\"op\":\"eq\",\"value\":\"x\"}],"
                    "\"explain\":true}");
    query q;
    CHECK_INT(query_parse(qb, &q, NULL), 0);
    CHECK_INT(docstore_query(ds, &q, &out, NULL), 0);
    CHECK_STR(json_string_value(json_object_get(out, "plan")), "index_scan");
    json_decref(out);
    query_free(&q);
    json_decref(qb);
    qb = js("{\"where\":[{\"field\":\"s\",\"op\":\"eq\",\"value\":\"x\"}],\"count\":true}");
    CHECK_INT(query_parse(qb, &q, NULL), 0);
    CHECK_INT(docstore_query(ds, &q, &out, NULL), 0);
    CHECK_INT(json_integer_value(json_object_get(out, "count")), 1);
    json_decref(out);
    query_free(&q);
    json_decref(qb);
    buf_free(&got);
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
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STORH_FAULT", "docstore.bulk.renamed@2", 1);
        docstore *c = open_store(name);
        docstore_stage *st;
        char id[UUID7_LEN + 1];
        if (!c || docstore_stage_begin(c, &st, NULL))
            _exit(1);
        for (int i = 0; i < ROWS; i++) {
            json_t *d = json_pack("{si}", "bulk", i);
            docstore_stage_put(st, ids[i], d, id, NULL);
            json_decref(d);
        }
        docstore_stage_commit(st, NULL, NULL);
        _exit(1); /* the fault point ends it before */
    }
    int wst = -1;
    waitpid(pid, &wst, 0);
    CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 86);
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
    CHECK_INT(count_files(stage, ""), 0);
    docstore_close(ds);
}

/* fsx_mkdirs goes up to the deepest directory that exists, then down:
 * every missing level made, existing ones fine, a file on the way an
 * error that makes nothing. */
TEST(mkdirs_makes_every_missing_level)
{
    char p[PATH_MAX], f[PATH_MAX];
    storh_err err;
    snprintf(p, sizeof p, "%s/mk/a/b/c", root);
    CHECK_INT(fsx_mkdirs(p, false, &err), 0);
    struct stat st;
    CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK_INT(fsx_mkdirs(p, true, &err), 0); /* there already */
    snprintf(p, sizeof p, "%s/mk/a//d///e/", root);
    CHECK_INT(fsx_mkdirs(p, true, &err), 0);
    snprintf(p, sizeof p, "%s/mk/a/d/e", root);
    CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
    snprintf(f, sizeof f, "%s/mk/file", root);
    FILE *fp = fopen(f, "w");
    fclose(fp);
    snprintf(p, sizeof p, "%s/mk/file/x/y", root);
    CHECK(fsx_mkdirs(p, false, &err) < 0);
    CHECK(strstr(err.msg, "Could not create storage directory") != NULL);
    snprintf(p, sizeof p, "%s/mk/file/x", root);
    CHECK(stat(p, &st) != 0);
    CHECK(fsx_mkdirs("", false, &err) < 0);
}

/* What a collection is, decided in one place: a name directory holding
 * data/, with a name the API can address; sorted by name. */
TEST(collections_are_the_name_dirs_with_data)
{
    char r[PATH_MAX], p[PATH_MAX];
    snprintf(r, sizeof r, "%s/collroot", root);
    json_t *names = NULL;
    CHECK_INT(docstore_collections(r, &names, NULL), 0); /* no root yet */
    CHECK_INT(json_array_size(names), 0);
    json_decref(names);
    static const char *const dirs[] = {"zeta/data", "alpha/data", "log_only/segments",
                                       "bad.name/data", "mid-1/data"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", r, dirs[i]);
        CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    }
    snprintf(p, sizeof p, "%s/file_data", r); /* data must be a directory */
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    snprintf(p, sizeof p, "%s/file_data/data", r);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    CHECK_INT(docstore_collections(r, &names, NULL), 0);
    char *got = json_dumps(names, JSON_COMPACT);
    CHECK_STR(got, "[\"alpha\",\"mid-1\",\"zeta\"]");
    free(got);
    json_decref(names);
}

/* A bulk staged while the collection had no index keeps no decoded rows;
 * an index defined before its commit still sees every row (read back from
 * the staged temps): entries for all, and a unique clash refused. */
TEST(bulk_staged_before_an_index_commits_against_it)
{
    docstore *ds = open_store("late_index");
    storh_err err;
    docstore_stage *st;
    char id[UUID7_LEN + 1];
    CHECK(docstore_stage_begin(ds, &st, &err) == 0);
    for (int i = 0; i < 3; i++) {
        char row[64];
        snprintf(row, sizeof row, "{\"slug\":\"s%d\",\"kind\":\"k\"}", i);
        json_t *d = js(row);
        CHECK(docstore_stage_put(st, NULL, d, id, &err) == 0);
        json_decref(d);
    }
    json_t *defs = js("{\"fields\":[{\"field\":\"kind\"}]}"), *out = NULL;
    CHECK(docstore_define_indexes(ds, defs, true, &out, &err) == 0);
    json_decref(defs);
    json_decref(out);
    size_t written = 0;
    CHECK(docstore_stage_commit(st, &written, &err) == 0);
    CHECK_INT(written, 3);
    json_t *stats = NULL;
    CHECK(docstore_health(ds, &stats, &err) == 0);
    CHECK(json_is_true(json_object_get(stats, "ok"))); /* no index drift */
    json_decref(stats);

    /* a unique index defined after staging refuses the clash */
    CHECK(docstore_stage_begin(ds, &st, &err) == 0);
    json_t *d = js("{\"slug\":\"s1\"}");
    CHECK(docstore_stage_put(st, NULL, d, id, &err) == 0);
    json_decref(d);
    defs = js("{\"fields\":[{\"field\":\"slug\",\"unique\":true}]}");
    CHECK(docstore_define_indexes(ds, defs, true, &out, &err) == 0);
    json_decref(defs);
    json_decref(out);
    CHECK(docstore_stage_commit(st, &written, &err) == STORH_ECONFLICT);
    CHECK_INT(docstore_count_files(ds), 3);
    docstore_close(ds);
}

static const test_case tests[] = {
    TEST_ENTRY(bulk_staged_before_an_index_commits_against_it),
    TEST_ENTRY(put_writes_canonical_bytes_at_storh_path),
    TEST_ENTRY(get_reads_hand_written_jsonc),
    TEST_ENTRY(get_answers_files_as_they_are_when_canonical),
    TEST_ENTRY(get_answers_files_as_they_are_when_canonical_cached),
    TEST_ENTRY(stage_abort_changes_nothing),
    TEST_ENTRY(import_rows_follow_storh),
    TEST_ENTRY(stream_order_filters_and_delete),
    TEST_ENTRY(open_sweeps_dead_writers_temps),
    TEST_ENTRY(open_finishes_a_dead_writers_bulk),
    TEST_ENTRY(open_finishes_a_bulk_staged_the_old_way),
    TEST_ENTRY(open_sweeps_rows_whose_stage_is_gone),
    TEST_ENTRY(bulk_whose_commit_sync_fails_is_refused_whole),
    TEST_ENTRY(collections_are_the_name_dirs_with_data),
    TEST_ENTRY(open_finishes_a_dead_writers_bulk_over_existing_records),
    TEST_ENTRY(mkdirs_makes_every_missing_level),
    TEST_ENTRY(import_of_canonical_lines_is_schema_and_index_checked),
};

TMPDIR_TEST_MAIN(root, tests)
