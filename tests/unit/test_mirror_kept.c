/* The SQLite mirror's kept rows (mirror_int.h, mkept): a push on the same
 * connection takes the table's id/hash rows its last good push left
 * instead of reading the table, unless PRAGMA data_version says another
 * connection committed since, or something else on the connection wrote
 * (flush, install, uninstall, scalar) or the last push failed. Each case
 * writes the table behind a push that would otherwise take kept rows and
 * checks that the next push still makes the table equal the records
 * (mirror_verify reads it on the mirror's own connection, so the checks
 * themselves drop nothing). */
#include <sqlite3.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docstore.h"
#include "mirror.h"
#include "sjson.h"

static char root[PATH_MAX];

#include "../support/mirrorkit.h"

#define K1 "018bcfe5-6800-7000-8000-0000000000a1"
#define K2 "018bcfe5-6800-7000-8000-0000000000a2"
#define K3 "018bcfe5-6800-7000-8000-0000000000a3"

static const char *COLS =
    "{\"kp\":{\"kind\":\"doc\",\"schema\":{\"fields\":{"
    "\"slug\":{\"type\":\"string\",\"unique\":true},\"v\":{\"type\":\"int\"}}}}}";

static mirror *make(void)
{
    return mirrorkit_sqlite(root, COLS);
}

/* Pushes (rc must be want) and returns the totals (a new object). */
static json_t *push_rc(mirror *m, const mirror_coll *c, docstore *ds, int want)
{
    mirror_source src = {.ds = ds};
    json_t *t = json_object();
    storh_err err;
    int rc = mirror_push(m, c, &src, t, &err);
    if (rc != want)
        fprintf(stderr, "push: %s\n", err.msg);
    CHECK_INT(rc, want);
    return t;
}

/* The table is what the records say: no row missing, stale or orphaned. */
static void check_verified(mirror *m, const mirror_coll *c, docstore *ds)
{
    CHECK(mirrorkit_verify(m, c, ds) >= 0);
}

/* A statement on a connection of its own (another writer of the file). */
static void other_exec(const char *sql)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/mirror.sqlite", root);
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A fresh collection and mirror with K1 {a, 1} and K2 {b, 1} pushed twice:
 * the second push took the rows the first one kept. */
static mirror *setup(const char *name, docstore **ds, const mirror_coll **c)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mirror *m = make();
    if (!m)
        return NULL;
    storh_err err;
    *c = mirror_find(m, "kp", false, &err);
    mirror_uninstall(m, *c, NULL);
    docstore_open(dir, "kp", ds, NULL);
    mirrorkit_put(*ds, K1, "{\"slug\":\"a\",\"v\":1}");
    mirrorkit_put(*ds, K2, "{\"slug\":\"b\",\"v\":1}");
    json_t *t = push_rc(m, *c, *ds, 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 2);
    json_decref(t);
    t = push_rc(m, *c, *ds, 0);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 2);
    json_decref(t);
    return m;
}

static void teardown(mirror *m, docstore *ds)
{
    docstore_close(ds);
    mirror_free(m);
}

/* Inserts, updates and deletes of one push of N rows are what the next
 * push takes. N records written in one stage (a bulk). */
static void follow(const char *name, int N)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup(name, &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    char id[64], data[96], path[PATH_MAX];
    docstore_stage *st = NULL;
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    for (int i = 0; st && i < N; i++) {
        snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012x", 0x1000 + i);
        snprintf(data, sizeof data, "m%d", i);
        json_t *d = json_pack("{sssi}", "slug", data, "v", i);
        char out[UUID7_LEN + 1];
        CHECK_INT(docstore_stage_put(st, id, d, out, NULL), 0);
        json_decref(d);
    }
    if (st)
        CHECK_INT(docstore_stage_commit(st, NULL, NULL), 0);
    json_t *t = push_rc(m, c, ds, 0);
    CHECK(c->kept != NULL); /* the rows the push wrote, kept for the next */
    CHECK_INT(mirrorkit_total(t, "inserted"), N);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 2);
    json_decref(t);
    int changed = (N + 29) / 30, deleted = (N - 7 + 49) / 50;
    for (int i = 0; i < N; i += 30) { /* changed */
        snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012x", 0x1000 + i);
        snprintf(data, sizeof data, "{\"slug\":\"m%d\",\"v\":%d}", i, -i - 1);
        mirrorkit_put(ds, id, data);
    }
    for (int i = 7; i < N; i += 50) { /* deleted */
        snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012x", 0x1000 + i);
        snprintf(path, sizeof path, "%s/data/%c%c/%s.jsonc", docstore_dir(ds), id[24], id[25], id);
        CHECK_INT(unlink(path), 0);
    }
    mirrorkit_put(ds, K3, "{\"slug\":\"c\",\"v\":3}");
    t = push_rc(m, c, ds, 0);
    CHECK_INT(mirrorkit_total(t, "updated"), changed);
    CHECK_INT(mirrorkit_total(t, "deleted"), deleted);
    CHECK_INT(mirrorkit_total(t, "inserted"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), N + 2 - changed - deleted);
    CHECK(c->kept != NULL);
    json_decref(t);
    t = push_rc(m, c, ds, 0);
    CHECK_INT(mirrorkit_total(t, "unchanged"), N + 3 - deleted);
    CHECK_INT(mirrorkit_total(t, "inserted") + mirrorkit_total(t, "updated") +
                  mirrorkit_total(t, "deleted"),
              0);
    json_decref(t);
    check_verified(m, c, ds);
    teardown(m, ds);
}

TEST(kept_rows_follow_each_push)
{
    follow("follow", 300);
}

/* Rows enough that the kept rows are built on a thread of their own while
 * the COMMIT syncs (KEEPER_MIN in mirror_push.c) */
TEST(kept_rows_built_beside_the_commit_follow_each_push)
{
    follow("follow-big", 5000);
}

/* Another connection adds a row and rewrites one: the version tells. */
TEST(push_sees_another_connection)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("other", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    other_exec("INSERT INTO \"t_kp\" (\"id\", \"hash\", \"data\") VALUES "
               "('018bcfe5-6800-7000-8000-0000000000ff', '00000000000000000000000000000000', "
               "'{}'); UPDATE \"t_kp\" SET \"hash\" = '11111111111111111111111111111111' "
               "WHERE \"slug\" = 'a';");
    json_t *t = push_rc(m, c, ds, 0);
    CHECK_INT(mirrorkit_total(t, "deleted"), 1);
    CHECK_INT(mirrorkit_total(t, "updated"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 1);
    json_decref(t);
    check_verified(m, c, ds);
    teardown(m, ds);
}

/* A flush writes rows on the push's own connection (the version stays):
 * a row it inserted for a record deleted since is deleted by the push. */
TEST(push_after_flush_sees_its_rows)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("flush", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    mirrorkit_put(ds, K3, "{\"slug\":\"c\",\"v\":3}");
    mirror_source src = {.ds = ds};
    json_t *ids = json_pack("[s]", K3), *out = NULL;
    storh_err err;
    CHECK_INT(mirror_flush(m, c, &src, ids, &out, &err), 0);
    CHECK_INT(mirrorkit_total(out, "upserted"), 1);
    json_decref(out);
    json_decref(ids);
    bool existed = false;
    CHECK_INT(docstore_delete(ds, K3, &existed, NULL), 0);
    json_t *t = push_rc(m, c, ds, 0);
    CHECK_INT(mirrorkit_total(t, "deleted"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 2);
    json_decref(t);
    check_verified(m, c, ds);
    teardown(m, ds);
}

/* The table dropped and made again by the same mirror: every row again. */
TEST(push_after_uninstall_inserts_all)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("uninstall", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    storh_err err;
    CHECK_INT(mirror_uninstall(m, c, &err), 0);
    CHECK_INT(mirror_install(m, c, &err), 0);
    json_t *t = push_rc(m, c, ds, 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 2);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 0);
    json_decref(t);
    check_verified(m, c, ds);
    teardown(m, ds);
}

/* A statement run through the mirror (mirror_scalar) may write. */
TEST(push_after_scalar_write_repairs)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("scalar", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    mparam p = {MPARAM_TEXT, K1, strlen(K1), 0, 0};
    char *v = NULL;
    storh_err err;
    CHECK_INT(
        mirror_scalar(m, "UPDATE \"t_kp\" SET \"hash\" = 'x' WHERE \"id\" = ?", &p, 1, &v, &err),
        0);
    free(v);
    json_t *t = push_rc(m, c, ds, 0);
    CHECK_INT(mirrorkit_total(t, "updated"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 1);
    json_decref(t);
    check_verified(m, c, ds);
    teardown(m, ds);
}

/* A push that fails (a unique slug taken twice) rolls back: the next one
 * reads the table as it is. */
TEST(push_after_failed_push)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("failed", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    mirrorkit_put(ds, K3, "{\"slug\":\"c\",\"v\":3}");
    mirrorkit_put(ds, K2, "{\"slug\":\"a\",\"v\":2}"); /* K1's slug */
    json_t *t = push_rc(m, c, ds, STORH_ECONFLICT);
    json_decref(t);
    mirrorkit_put(ds, K2, "{\"slug\":\"b2\",\"v\":2}");
    t = push_rc(m, c, ds, 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 1);
    CHECK_INT(mirrorkit_total(t, "updated"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 1);
    json_decref(t);
    check_verified(m, c, ds);
    teardown(m, ds);
}

/* A rebuild empties the table and inserts every row: the push after it
 * takes what the rebuild kept. */
TEST(push_after_rebuild)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = setup("rebuild", &ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    mirror_source src = {.ds = ds};
    json_t *t = json_object();
    storh_err err;
    CHECK_INT(mirror_rebuild(m, c, &src, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 2);
    json_decref(t);
    mirrorkit_put(ds, K1, "{\"slug\":\"a\",\"v\":5}");
    t = push_rc(m, c, ds, 0);
    CHECK_INT(mirrorkit_total(t, "updated"), 1);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 1);
    json_decref(t);
    check_verified(m, c, ds);
    teardown(m, ds);
}

static const test_case tests[] = {
    TEST_ENTRY(kept_rows_follow_each_push),
    TEST_ENTRY(kept_rows_built_beside_the_commit_follow_each_push),
    TEST_ENTRY(push_sees_another_connection),
    TEST_ENTRY(push_after_flush_sees_its_rows),
    TEST_ENTRY(push_after_uninstall_inserts_all),
    TEST_ENTRY(push_after_scalar_write_repairs),
    TEST_ENTRY(push_after_failed_push),
    TEST_ENTRY(push_after_rebuild),
};

TMPDIR_TEST_MAIN(root, tests)
