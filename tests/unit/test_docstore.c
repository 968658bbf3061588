/* test_docstore: the document store's files as storh lays them out: puts,
 * gets of hand-written and canonical files, stages, imports, streams,
 * collections. A dead writer's temps and bulks finished on open, and bulks
 * whose commit fails: test_docstore_recovery. The record cache fed by
 * writes: test_docstore_cache. */
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

#include "../support/dockit.h"
#include "../support/js.h"

static docstore *open_store(const char *name)
{
    return dockit_open(root, name);
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
    CHECK_INT(dockit_count_files(path, "."), 1);
    snprintf(path, sizeof path, "%s/pages", root);
    CHECK_INT(dockit_count_files(path, ".tmp"), 0);
    CHECK_INT(docstore_put(ds, id, data, id, &existed, &err), 0);
    CHECK(existed);
    json_decref(data);
    buf_free(&b);
    docstore_close(ds);
    snprintf(path, sizeof path, "%s/pages/.storh/writers", root);
    CHECK_INT(dockit_count_files(path, "."), 0);
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
    CHECK_INT(dockit_count_files(stage, ""), 1);
    CHECK_INT(dockit_count_files(dir, ".row"), 20);
    CHECK_INT(dockit_count_files(dir, ".jsonc"), 0);
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
    CHECK_INT(dockit_count_files(stage, ""), 0);
    CHECK_INT(dockit_count_files(dir, ""), 0); /* no row left (empty shards may stay) */
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
    CHECK_INT(dockit_count_files(dir, ".jsonc"), 20);
    CHECK_INT(dockit_count_files(dir, ".tmp"), 0);
    CHECK_INT(dockit_count_files(dir, ".row"), 0);
    CHECK_INT(dockit_count_files(stage, ""), 0); /* the stage and its commit record are gone */
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
    TEST_ENTRY(collections_are_the_name_dirs_with_data),
    TEST_ENTRY(mkdirs_makes_every_missing_level),
    TEST_ENTRY(import_of_canonical_lines_is_schema_and_index_checked),
};

TMPDIR_TEST_MAIN(root, tests)
