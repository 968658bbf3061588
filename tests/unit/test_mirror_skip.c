/* The SQL mirror's memo of record files (mmemo): a push or a flush leaves a
 * record unread when its file has the state it had when the mirror last
 * read it and its row holds the hash it had then. These cases change
 * records behind the mirror's back (over SQLite) and check that every
 * change is still pushed: a same-size rewrite in the same second (in
 * place, or replaced by rename), a deleted file, rows changed by another
 * writer of the table; and that rows made from canonical bytes equal rows
 * made from decoded records. */
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docstore.h"
#include "mirror.h"
#include "sjson.h"

static char root[PATH_MAX];

#include "../support/mirrorkit.h"

#define R1 "018bcfe5-6800-7000-8000-0000000000e1"
#define R2 "018bcfe5-6800-7000-8000-0000000000e2"

static const char *COLS = "{\"sk\":{\"kind\":\"doc\",\"schema\":{\"fields\":{"
                          "\"slug\":{\"type\":\"string\",\"unique\":true},"
                          "\"v\":{\"type\":\"int\"},\"f\":{\"type\":\"float\"},"
                          "\"b\":{\"type\":\"bool\"}}}}}";

static mirror *make(void)
{
    return mirrorkit_sqlite(root, COLS);
}

/* The text of the first column of sql's first row, "" when none. */
static void row_text(mirror *m, const char *sql, const char *id, char *out, size_t n)
{
    mparam p = {MPARAM_TEXT, id, id ? strlen(id) : 0, 0, 0};
    char *v = NULL;
    mirror_scalar(m, sql, id ? &p : NULL, id ? 1 : 0, &v, NULL);
    snprintf(out, n, "%s", v ? v : "");
    free(v);
}

static long long row_int(mirror *m, const char *sql, const char *id)
{
    char v[64];
    row_text(m, sql, id, v, sizeof v);
    return v[0] ? atoll(v) : -1;
}

/* Pushes and returns the totals (a new object). */
static json_t *push(mirror *m, const mirror_coll *c, docstore *ds)
{
    mirror_source src = {.ds = ds};
    json_t *t = json_object();
    storh_err err;
    int rc = mirror_push(m, c, &src, t, &err);
    if (rc)
        fprintf(stderr, "push: %s\n", err.msg);
    CHECK_INT(rc, 0);
    return t;
}

/* A fresh collection and mirror with R1 {a, 1} and R2 {b, 1} pushed twice
 * (the second push finds both unchanged and leaves them unread). */
static mirror *setup(const char *name, docstore **ds, const mirror_coll **c)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mirror *m = make();
    if (!m)
        return NULL;
    storh_err err;
    *c = mirror_find(m, "sk", false, &err);
    mirror_uninstall(m, *c, NULL);
    docstore_open(dir, "sk", ds, NULL);
    mirrorkit_put(*ds, R1, "{\"slug\":\"a\",\"v\":1}");
    mirrorkit_put(*ds, R2, "{\"slug\":\"b\",\"v\":1}");
    json_t *t = push(m, *c, *ds);
    CHECK_INT(mirrorkit_total(t, "inserted"), 2);
    json_decref(t);
    t = push(m, *c, *ds);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 2);
    json_decref(t);
    return m;
}

static void record_path(docstore *ds, const char *id, char *out)
{
    snprintf(out, PATH_MAX, "%s/data/%c%c/%s.jsonc", docstore_dir(ds), id[24], id[25], id);
}

/* The canonical bytes of id with data {"slug":slug,"v":v}. */
static void record_bytes(const char *id, const char *slug, int v, char *out, size_t n)
{
    snprintf(out, n, "{\"id\":\"%s\",\"data\":{\"slug\":\"%s\",\"v\":%d}}\n", id, slug, v);
}

static void pause_tick(void)
{
    /* past the kernel's coarse clock tick, well within the second */
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Rewrites the file of id in place (same inode, same size) and puts its
 * mtime back to what it was: only its ctime tells. */
static void rewrite_in_place(docstore *ds, const char *id, int v)
{
    char path[PATH_MAX], bytes[256];
    struct stat before;
    record_path(ds, id, path);
    CHECK_INT(stat(path, &before), 0);
    record_bytes(id, "a", v, bytes, sizeof bytes);
    CHECK_INT((long long)strlen(bytes), (long long)before.st_size);
    pause_tick();
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    CHECK_INT(write(fd, bytes, strlen(bytes)), (long long)strlen(bytes));
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    CHECK_INT(futimens(fd, times), 0);
    close(fd);
    struct stat after;
    CHECK_INT(stat(path, &after), 0);
    CHECK_INT((long long)after.st_ino, (long long)before.st_ino);
    CHECK_INT((long long)after.st_size, (long long)before.st_size);
    CHECK_INT((long long)after.st_mtim.tv_sec, (long long)before.st_mtim.tv_sec);
    CHECK_INT((long long)after.st_mtim.tv_nsec, (long long)before.st_mtim.tv_nsec);
}

TEST(push_sees_same_size_rewrite_in_place)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("inplace", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    rewrite_in_place(ds, R1, 2);
    json_t *t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "updated"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 1);
    json_decref(t);
    CHECK_INT(row_int(m, "SELECT \"v\" FROM \"t_sk\" WHERE \"id\" = ?", R1), 2);
    docstore_close(ds);
    mirror_free(m);
}

/* Replaced by rename, as storh publishes, right away (no tick waited for),
 * the same size and the same mtime: the inode tells. */
TEST(push_sees_same_size_replace)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("replace", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    char path[PATH_MAX], tmp[PATH_MAX + 8], bytes[256];
    struct stat before;
    record_path(ds, R1, path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK_INT(stat(path, &before), 0);
    record_bytes(R1, "a", 3, bytes, sizeof bytes);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK(fd >= 0);
    CHECK_INT(write(fd, bytes, strlen(bytes)), (long long)before.st_size);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    CHECK_INT(futimens(fd, times), 0);
    close(fd);
    CHECK_INT(rename(tmp, path), 0);
    json_t *t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "updated"), 1);
    json_decref(t);
    CHECK_INT(row_int(m, "SELECT \"v\" FROM \"t_sk\" WHERE \"id\" = ?", R1), 3);
    docstore_close(ds);
    mirror_free(m);
}

TEST(push_drops_deleted_record)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("deleted", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    char path[PATH_MAX];
    record_path(ds, R2, path);
    CHECK_INT(unlink(path), 0); /* out of band, as another process may */
    json_t *t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "deleted"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 1);
    json_decref(t);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\"", NULL), 1);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\" WHERE \"id\" = ?", R2), 0);
    /* and put back with the same bytes: pushed again */
    mirrorkit_put(ds, R2, "{\"slug\":\"b\",\"v\":1}");
    t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "inserted"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 1);
    json_decref(t);
    docstore_close(ds);
    mirror_free(m);
}

TEST(flush_sees_same_size_rewrite)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("flush", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    storh_err err;
    mirror_source src = {.ds = ds};
    json_t *ids = json_pack("[ss]", R1, R2), *out = NULL;
    CHECK_INT(mirror_flush(m, c, &src, ids, &out, &err), 0); /* both current */
    CHECK_INT(mirrorkit_total(out, "upserted"), 2);
    json_decref(out);
    rewrite_in_place(ds, R1, 4);
    char path[PATH_MAX];
    record_path(ds, R2, path);
    CHECK_INT(unlink(path), 0);
    CHECK_INT(mirror_flush(m, c, &src, ids, &out, &err), 0);
    CHECK_INT(mirrorkit_total(out, "upserted"), 1);
    CHECK_INT(mirrorkit_total(out, "deleted"), 1);
    json_decref(out);
    json_decref(ids);
    CHECK_INT(row_int(m, "SELECT \"v\" FROM \"t_sk\" WHERE \"id\" = ?", R1), 4);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\"", NULL), 1);
    docstore_close(ds);
    mirror_free(m);
}

/* Another writer of the table (PHP storh, another storhd) changed rows the
 * memo knows the files of: the rows' hashes decide, so they are repaired. */
TEST(push_repairs_rows_another_writer_changed)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("other", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/mirror.sqlite", root);
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    CHECK_INT(
        sqlite3_exec(db,
                     "UPDATE \"t_sk\" SET \"v\" = 99, \"data\" = '{\"slug\":\"a\",\"v\":99}', "
                     "\"hash\" = '00000000000000000000000000000000' WHERE \"slug\" = 'a'; "
                     "DELETE FROM \"t_sk\" WHERE \"slug\" = 'b';",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    json_t *t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "updated"), 1);
    CHECK_INT(mirrorkit_total(t, "inserted"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 0);
    json_decref(t);
    CHECK_INT(row_int(m, "SELECT \"v\" FROM \"t_sk\" WHERE \"id\" = ?", R1), 1);
    CHECK(mirrorkit_verify(m, c, ds) >= 0);
    docstore_close(ds);
    mirror_free(m);
}

/* A row made from a canonical record's bytes is the row made from its
 * decoded data: the same hash, data text and typed values, for records
 * the byte path takes and for those it leaves to the decoder (escapes in
 * a typed string, floats, a list, a file that is not canonical). */
TEST(rows_from_bytes_equal_rows_from_data)
{
    static const char *datas[] = {
        "{\"slug\":\"plain\",\"v\":-12,\"f\":3,\"b\":true,\"more\":{\"x\":[1,\"y\"]}}",
        "{\"slug\":\"q\\\"uote\",\"v\":1,\"f\":0.5,\"b\":false}",
        "{\"slug\":\"t\\tab\",\"v\":\"no\",\"f\":\"no\",\"b\":1,\"k\":null}",
        "[1,2,3]",
        "{\"slug\":\"ünï\",\"v\":123456789012345678,\"b\":null}",
    };
    size_t n = sizeof datas / sizeof datas[0];
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/rows", root);
    mirror *m = make();
    CHECK(m != NULL);
    if (!m)
        return;
    storh_err err;
    const mirror_coll *c = mirror_find(m, "sk", false, &err);
    mirror_uninstall(m, c, NULL);
    docstore *ds = NULL;
    docstore_open(dir, "sk", &ds, NULL);
    char id[64];
    for (size_t i = 0; i < n; i++) {
        snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012zx", 0x200 + i);
        mirrorkit_put(ds, id, datas[i]);
    }
    /* one more, written by hand in a form that is not canonical */
    snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012zx", 0x200 + n);
    char path[PATH_MAX];
    record_path(ds, id, path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "{ \"id\": \"%s\", \"data\": { \"slug\": \"loose\", \"v\": 7 } }\n", id);
        fclose(f);
    }
    json_t *t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "inserted"), (long long)n + 1);
    json_decref(t);
    for (size_t i = 0; i <= n; i++) {
        snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012zx", 0x200 + i);
        json_t *d = i < n ? js(datas[i]) : js("{\"slug\":\"loose\",\"v\":7}");
        char want[33], got[128], text[512];
        mirror_hash(d, want);
        row_text(m, "SELECT \"hash\" FROM \"t_sk\" WHERE \"id\" = ?", id, got, sizeof got);
        CHECK_STR(got, want);
        buf b = BUF_INIT;
        sjson_encode(&b, d, 0, NULL);
        row_text(m, "SELECT \"data\" FROM \"t_sk\" WHERE \"id\" = ?", id, text, sizeof text);
        CHECK_STR(text, b.data);
        buf_free(&b);
        /* the typed columns, as the decoded data gives them */
        json_t *slug = json_object_get(d, "slug"), *v = json_object_get(d, "v");
        json_t *fl = json_object_get(d, "f"), *bo = json_object_get(d, "b");
        row_text(m, "SELECT COALESCE(\"slug\", '<null>') FROM \"t_sk\" WHERE \"id\" = ?", id, got,
                 sizeof got);
        CHECK_STR(got, json_is_string(slug) ? json_string_value(slug) : "<null>");
        row_text(m,
                 "SELECT COALESCE(CAST(\"v\" AS TEXT) || ':' || typeof(\"v\"), '<null>') FROM "
                 "\"t_sk\" WHERE \"id\" = ?",
                 id, got, sizeof got);
        char exp[64];
        if (json_is_integer(v))
            snprintf(exp, sizeof exp, "%lld:integer", (long long)json_integer_value(v));
        else
            snprintf(exp, sizeof exp, "<null>");
        CHECK_STR(got, exp);
        row_text(m,
                 "SELECT CASE WHEN \"f\" IS NULL THEN '<null>' ELSE printf('%.3f', \"f\") || ':' "
                 "|| typeof(\"f\") END FROM \"t_sk\" WHERE \"id\" = ?",
                 id, got, sizeof got);
        if (json_is_number(fl))
            snprintf(exp, sizeof exp, "%.3f:real", json_number_value(fl));
        else
            snprintf(exp, sizeof exp, "<null>");
        CHECK_STR(got, exp);
        row_text(m, "SELECT COALESCE(CAST(\"b\" AS TEXT), '<null>') FROM \"t_sk\" WHERE \"id\" = ?",
                 id, got, sizeof got);
        CHECK_STR(got, json_is_boolean(bo) ? (json_is_true(bo) ? "1" : "0") : "<null>");
        json_decref(d);
    }
    mirror_uninstall(m, c, NULL);
    docstore_close(ds);
    mirror_free(m);
}

/* The id of record i of the many-records store (all in one shard). */
static void many_id(int i, char *out, size_t n)
{
    snprintf(out, n, "018bcfe5-6800-7000-8000-%012x", 0x1000 + i);
}

/* A fresh mirror (*m, its collection *c) and store under name holding n
 * records written by one bulk: record i with id idf(i) and data
 * {"slug": "<prefix><i>", "v": i}. NULL when the mirror cannot be made. */
static docstore *bulk_store(const char *name, int n, void (*idf)(int, char *, size_t), char prefix,
                            mirror **m, const mirror_coll **c)
{
    char dir[PATH_MAX], id[64], data[96];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    *m = make();
    CHECK(*m != NULL);
    if (!*m)
        return NULL;
    storh_err err;
    *c = mirror_find(*m, "sk", false, &err);
    mirror_uninstall(*m, *c, NULL);
    docstore *ds = NULL;
    docstore_open(dir, "sk", &ds, NULL);
    docstore_stage *st = NULL;
    CHECK_INT(docstore_stage_begin(ds, &st, &err), 0);
    for (int i = 0; i < n; i++) {
        idf(i, id, sizeof id);
        snprintf(data, sizeof data, "{\"slug\":\"%c%d\",\"v\":%d}", prefix, i, i);
        json_t *d = js(data);
        char out[UUID7_LEN + 1];
        CHECK_INT(docstore_stage_put(st, id, d, out, &err), 0);
        json_decref(d);
    }
    CHECK_INT(docstore_stage_commit(st, NULL, &err), 0);
    return ds;
}

/* Behind the mirror's back: records from, from + step, ... below n get
 * v = -i (changed), and records gone, gone + gstep, ... lose their file. */
static void change_and_delete(docstore *ds, void (*idf)(int, char *, size_t), char prefix, int n,
                              int from, int step, int gone, int gstep)
{
    char id[64], data[96], path[PATH_MAX];
    for (int i = from; i < n; i += step) {
        idf(i, id, sizeof id);
        snprintf(data, sizeof data, "{\"slug\":\"%c%d\",\"v\":%d}", prefix, i, -i);
        mirrorkit_put(ds, id, data);
    }
    for (int i = gone; i < n; i += gstep) {
        idf(i, id, sizeof id);
        record_path(ds, id, path);
        CHECK_INT(unlink(path), 0);
    }
}

/* Enough records for the push to read ahead on its reader thread: rows
 * changed, deleted and unchanged all counted, and a record that does not
 * decode fails the push mid-walk and leaves the table as it was. */
TEST(push_reads_ahead_many_records)
{
    enum { N = 600 };
    char id[64], path[PATH_MAX];
    mirror *m;
    const mirror_coll *c;
    docstore *ds = bulk_store("many", N, many_id, 'm', &m, &c);
    if (!ds)
        return;
    storh_err err;
    json_t *t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "inserted"), N);
    json_decref(t);
    change_and_delete(ds, many_id, 'm', N, 50, 50, 7, 100); /* 11 changed, 6 deleted */
    /* one record that does not decode, half way */
    many_id(301, id, sizeof id);
    record_path(ds, id, path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"id\":", f);
        fclose(f);
    }
    mirror_source src = {.ds = ds};
    t = json_object();
    CHECK(mirror_push(m, c, &src, t, &err) != 0);
    json_decref(t);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\"", NULL), N);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\" WHERE \"v\" < 0", NULL), 0);
    CHECK_INT(unlink(path), 0);
    t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "updated"), 11);
    CHECK_INT(mirrorkit_total(t, "deleted"), 7); /* 6 deleted and the one that did not decode */
    CHECK_INT(mirrorkit_total(t, "inserted"), 0);
    CHECK_INT(mirrorkit_total(t, "unchanged"), N - 7 - 11);
    json_decref(t);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\"", NULL), N - 7);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\" WHERE \"v\" < 0", NULL), 11);
    t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "unchanged"), N - 7);
    json_decref(t);
    mirror_uninstall(m, c, NULL);
    docstore_close(ds);
    mirror_free(m);
}

/* The id of record i of the big store: its shard (the 25th and 26th
 * characters) i's low byte, so the records fill every shard. */
static void big_id(int i, char *out, size_t n)
{
    snprintf(out, n, "018bcfe5-6800-7000-8000-%02x%010x", i & 255, i);
}

/* The data the store's listing gives for id (the stream's: of two files
 * of one id, the one walked later), encoded; "" when none. */
static void streamed(docstore *ds, const char *id, char *out, size_t n)
{
    docstore_iter *it = NULL;
    snprintf(out, n, "%s", "");
    CHECK_INT(docstore_iter_open(ds, NULL, &it, NULL), 0);
    const char *k;
    json_t *d;
    int rc;
    while ((rc = docstore_iter_next(it, &k, &d, NULL)) == 1) {
        if (!strcmp(k, id)) {
            char *t = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
            snprintf(out, n, "%s", t ? t : "");
            free(t);
        }
        json_decref(d);
    }
    docstore_iter_close(it);
}

/* A store big enough for a push of unchanged records to judge its files
 * on two threads (recfile_list_open_split): changes and deletions still
 * pushed; a copy of a record in another shard makes it list again in one
 * walk, and the row is then what the listing gives for that id. */
TEST(push_judges_big_stores_on_two_threads)
{
    enum { N = 5000 };
    char id[64];
    mirror *m;
    const mirror_coll *c;
    docstore *ds = bulk_store("big", N, big_id, 'g', &m, &c);
    if (!ds)
        return;
    json_t *t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "inserted"), N);
    json_decref(t);
    t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "unchanged"), N);
    json_decref(t);
    change_and_delete(ds, big_id, 'g', N, 3, 500, 11, 1000); /* 10 changed, 5 deleted */
    t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "updated"), 10);
    CHECK_INT(mirrorkit_total(t, "deleted"), 5);
    CHECK_INT(mirrorkit_total(t, "unchanged"), N - 15);
    json_decref(t);
    /* record 40's bytes, changed, also in the shard of record 41 (no SQL
     * between the pushes: a query drops the rows a push keeps, and only a
     * push that kept them judges files as it lists them) */
    big_id(40, id, sizeof id);
    char other[64], copy[PATH_MAX], bytes[256], want[256], got[256];
    big_id(41, other, sizeof other);
    snprintf(copy, sizeof copy, "%s/data/%c%c/%s.jsonc", docstore_dir(ds), other[24], other[25],
             id);
    snprintf(bytes, sizeof bytes, "{\"id\":\"%s\",\"data\":{\"slug\":\"g40\",\"v\":4040}}\n", id);
    FILE *f = fopen(copy, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(bytes, f);
        fclose(f);
    }
    streamed(ds, id, want, sizeof want);
    CHECK(want[0] != '\0');
    t = push(m, c, ds);
    CHECK_INT(mirrorkit_total(t, "updated") + mirrorkit_total(t, "unchanged"), N - 5);
    json_decref(t);
    row_text(m, "SELECT \"data\" FROM \"t_sk\" WHERE \"id\" = ?", id, got, sizeof got);
    json_t *gj = js(got);
    char *gs = json_dumps(gj, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(gs, want);
    free(gs);
    json_decref(gj);
    /* the copy gone: the record's own file again */
    CHECK_INT(unlink(copy), 0);
    t = push(m, c, ds);
    json_decref(t);
    CHECK_INT(row_int(m, "SELECT \"v\" FROM \"t_sk\" WHERE \"id\" = ?", id), 40);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\" WHERE \"v\" < 0", NULL), 10);
    CHECK_INT(row_int(m, "SELECT COUNT(*) FROM \"t_sk\"", NULL), N - 5);
    mirror_uninstall(m, c, NULL);
    docstore_close(ds);
    mirror_free(m);
}

static const test_case tests[] = {
    TEST_ENTRY(push_sees_same_size_rewrite_in_place),
    TEST_ENTRY(push_sees_same_size_replace),
    TEST_ENTRY(push_drops_deleted_record),
    TEST_ENTRY(flush_sees_same_size_rewrite),
    TEST_ENTRY(push_repairs_rows_another_writer_changed),
    TEST_ENTRY(rows_from_bytes_equal_rows_from_data),
    TEST_ENTRY(push_reads_ahead_many_records),
    TEST_ENTRY(push_judges_big_stores_on_two_threads),
};

TMPDIR_TEST_MAIN(root, tests)
