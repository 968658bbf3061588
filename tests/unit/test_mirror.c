/* The SQL mirror against SQLite and a real PostgreSQL (STORHD_TEST_PG, a
 * libpq conninfo, which scripts/test.sh provides; without it the test
 * fails rather than skips). Each PostgreSQL case works in its own schema
 * (ctest runs the cases in parallel against one cluster, and they share
 * table names). */
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docstore.h"
#include "mirror.h"
#include "sjson.h"

static char root[PATH_MAX];
static const char *driver; /* the driver of the current pass */

#include "../support/mirrorkit.h"

static char pg_schema[64];

static bool pg_exec(const char *sql)
{
    PGconn *c = PQconnectdb(getenv("STORHD_TEST_PG"));
    PGresult *r = PQstatus(c) == CONNECTION_OK ? PQexec(c, sql) : NULL;
    bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "%s: %s\n", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    return ok;
}

static void pg_drop_schema(void)
{
    char sql[128];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", pg_schema);
    pg_exec(sql);
}

/* STORHD_TEST_PG with search_path set to this process's own schema,
 * created on the first call; NULL when there is no cluster or no schema. */
static const char *pg_conninfo(void)
{
    static char conninfo[1024];
    const char *pg = getenv("STORHD_TEST_PG");
    if (conninfo[0] || !pg)
        return conninfo[0] ? conninfo : NULL;
    char sql[160];
    snprintf(pg_schema, sizeof pg_schema, "test_mirror_%ld", (long)getpid());
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s", pg_schema,
             pg_schema);
    if (!pg_exec(sql))
        return NULL;
    atexit(pg_drop_schema);
    snprintf(conninfo, sizeof conninfo, "%s options='-csearch_path=%s'", pg, pg_schema);
    return conninfo;
}

static mirror *make(const char *collections)
{
    if (!strcmp(driver, "sqlite"))
        return mirrorkit_sqlite(root, collections);
    char cfg[2048];
    const char *pg = pg_conninfo();
    snprintf(cfg, sizeof cfg,
             "{\"driver\":\"postgres\",\"conninfo\":\"%s\",\"prefix\":\"t_\","
             "\"collections\":%s}",
             pg ? pg : "", collections);
    json_t *c = js(cfg);
    mirror *m = NULL;
    storh_err err;
    if (mirror_new("test", c, &m, &err))
        fprintf(stderr, "mirror: %s\n", err.msg);
    json_decref(c);
    return m;
}

static const char *PAGES = "{\"pages\":{\"kind\":\"doc\",\"schema\":{\"fields\":{"
                           "\"slug\":{\"type\":\"string\",\"unique\":true},"
                           "\"kind\":{\"type\":\"string\",\"index\":true},"
                           "\"views\":{\"type\":\"int\",\"range\":true},"
                           "\"score\":{\"type\":\"float\"},\"active\":{\"type\":\"bool\"},"
                           "\"author\":{\"type\":\"string\"}}}},"
                           "\"authors\":{\"kind\":\"doc\",\"schema\":{\"fields\":{"
                           "\"handle\":{\"type\":\"string\",\"unique\":true}}}}}";

static docstore *store(const char *name)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s-root", root, driver);
    docstore *ds = NULL;
    docstore_open(dir, name, &ds, NULL);
    return ds;
}

#define P1 "018bcfe5-6800-7000-8000-000000000001"
#define P2 "018bcfe5-6800-7000-8000-000000000002"
#define P3 "018bcfe5-6800-7000-8000-000000000003"
#define A1 "018bcfe5-6800-7000-8000-0000000000a1"

static void full_pass(void)
{
    mirror *m = make(PAGES);
    CHECK(m != NULL);
    if (!m)
        return;
    storh_err err;
    const mirror_coll *pages = mirror_find(m, "pages", false, &err);
    const mirror_coll *authors = mirror_find(m, "authors", false, &err);
    mirror_uninstall(m, pages, NULL);
    mirror_uninstall(m, authors, NULL);
    json_t *ddl;
    mirror_ddl(m, pages, &ddl, NULL);
    if (!strcmp(driver, "sqlite"))
        CHECK_STR(json_string_value(json_array_get(ddl, 0)),
                  "CREATE TABLE IF NOT EXISTS \"t_pages\" (\"id\" TEXT NOT NULL PRIMARY KEY, "
                  "\"hash\" TEXT NOT NULL, \"slug\" TEXT, \"kind\" TEXT, \"views\" INTEGER, "
                  "\"score\" REAL, \"active\" INTEGER, \"author\" TEXT, \"data\" TEXT NOT NULL)");
    else
        CHECK_STR(json_string_value(json_array_get(ddl, 0)),
                  "CREATE TABLE IF NOT EXISTS \"t_pages\" (\"id\" TEXT NOT NULL PRIMARY KEY, "
                  "\"hash\" TEXT NOT NULL, \"slug\" TEXT, \"kind\" TEXT, \"views\" BIGINT, "
                  "\"score\" DOUBLE PRECISION, \"active\" BOOLEAN, \"author\" TEXT, \"data\" "
                  "JSONB NOT NULL)");
    CHECK_STR(json_string_value(json_array_get(ddl, 1)),
              "CREATE UNIQUE INDEX IF NOT EXISTS \"t_pages_slug_idx\" ON \"t_pages\" (\"slug\")");
    json_decref(ddl);
    CHECK_INT(mirror_install(m, pages, &err), 0);
    CHECK_INT(mirror_install(m, authors, &err), 0);

    docstore *ps = store("pages"), *as = store("authors");
    mirrorkit_put(ps, P1,
                  "{\"slug\":\"home\",\"kind\":\"page\",\"views\":3,\"score\":2,\"active\":true,"
                  "\"author\":\"ann\"}");
    mirrorkit_put(ps, P2, "{\"slug\":\"about\",\"kind\":\"page\",\"views\":9,\"author\":\"bob\"}");
    mirrorkit_put(ps, P3,
                  "{\"slug\":\"news\",\"kind\":\"post\",\"views\":\"many\",\"author\":\"ann\"}");
    mirrorkit_put(as, A1, "{\"handle\":\"ann\",\"name\":\"Ann\"}");
    mirror_source psrc = {.ds = ps}, asrc = {.ds = as};
    json_t *t = json_object();
    CHECK_INT(mirror_push(m, pages, &psrc, t, &err), 0);
    CHECK_INT(mirror_push(m, authors, &asrc, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 4);
    json_decref(t);
    t = json_object();
    CHECK_INT(mirror_push(m, pages, &psrc, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 3); /* no change: nothing written */
    CHECK_INT(mirrorkit_total(t, "inserted") + mirrorkit_total(t, "updated") +
                  mirrorkit_total(t, "deleted"),
              0);
    json_decref(t);
    /* typed columns: a wrong type is NULL */
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_pages\" WHERE \"views\" IS NULL"), 1);
    CHECK_INT(mirrorkit_scalar(m, "SELECT \"views\" FROM \"t_pages\" WHERE \"slug\" = 'about'"), 9);
    char *hash = NULL;
    mirror_scalar(m, "SELECT \"hash\" FROM \"t_pages\" WHERE \"slug\" = 'home'", NULL, 0, &hash,
                  NULL);
    char want[33];
    json_t *home =
        js("{\"slug\":\"home\",\"kind\":\"page\",\"views\":3,\"score\":2,\"active\":true,"
           "\"author\":\"ann\"}");
    mirror_hash(home, want);
    CHECK_STR(hash, want);
    free(hash);
    json_decref(home);
    json_t *vec = js("{\"slug\":\"home\",\"kind\":\"page\",\"views\":3,\"score\":2,\"active\":true,"
                     "\"x\":\"y/z\"}");
    mirror_hash(vec, want);
    CHECK_STR(want, "6420e4c428b5b50cd0fc5f509a304c79"); /* storh's example */
    json_decref(vec);

    /* a SQL join over two mirrored collections */
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_pages\" p JOIN \"t_authors\" a ON "
                                  "a.\"handle\" = p.\"author\""),
              2);

    /* a push that fails midway (a unique conflict in the mirror) changes nothing */
    mirrorkit_put(ps, P2, "{\"slug\":\"home\",\"kind\":\"page\",\"views\":10,\"author\":\"bob\"}");
    long long before =
        mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_pages\" WHERE \"slug\" = 'about'");
    t = json_object();
    CHECK_INT(mirror_push(m, pages, &psrc, t, &err), STORH_ECONFLICT);
    json_decref(t);
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_pages\" WHERE \"slug\" = 'about'"),
              before);
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_pages\""), 3);
    mirrorkit_put(ps, P2, "{\"slug\":\"about\",\"kind\":\"page\",\"views\":10,\"author\":\"bob\"}");

    /* flush: read-your-writes for a few ids */
    bool existed;
    docstore_delete(ps, P3, &existed, NULL);
    json_t *ids = json_pack("[sss]", P2, P3, P2), *out = NULL;
    CHECK_INT(mirror_flush(m, pages, &psrc, ids, &out, &err), 0);
    CHECK_INT(mirrorkit_total(out, "upserted"), 1);
    CHECK_INT(mirrorkit_total(out, "deleted"), 1);
    json_decref(out);
    json_decref(ids);
    CHECK_INT(mirrorkit_scalar(m, "SELECT \"views\" FROM \"t_pages\" WHERE \"slug\" = 'about'"),
              10);

    /* verify: a row edited by hand is stale; a stray row is orphaned */
    mparam p = {MPARAM_TEXT, P1, strlen(P1), 0, 0};
    char *ignored = NULL;
    mirror_scalar(m,
                  !strcmp(driver, "sqlite")
                      ? "UPDATE \"t_pages\" SET \"hash\" = 'x' WHERE \"id\" = ?"
                      : "UPDATE \"t_pages\" SET \"hash\" = 'x' WHERE \"id\" = $1",
                  &p, 1, &ignored, NULL);
    json_t *errors = json_array(), *stats;
    CHECK_INT(mirror_verify(m, pages, &psrc, &stats, errors, &err), 0);
    CHECK_INT(mirrorkit_total(stats, "stale"), 1);
    CHECK_STR(json_string_value(json_array_get(errors, 0)), "pages: 1 stale mirror row(s).");
    json_decref(stats);
    json_decref(errors);
    t = json_object();
    CHECK_INT(mirror_rebuild(m, pages, &psrc, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 2);
    json_decref(t);
    errors = json_array();
    CHECK_INT(mirror_verify(m, pages, &psrc, &stats, errors, &err), 0);
    CHECK_INT(json_array_size(errors), 0);
    json_decref(stats);
    json_decref(errors);

    /* pull restores a deleted store */
    docstore_close(ps);
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%s-root/pages'", root, driver);
    CHECK_INT(system(cmd), 0);
    ps = store("pages");
    psrc.ds = ps;
    t = json_object();
    CHECK_INT(mirror_pull(m, pages, &psrc, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "written"), 2);
    json_decref(t);
    json_t *d = NULL;
    CHECK_INT(docstore_get(ps, P2, &d, NULL, NULL), 0);
    CHECK_INT(json_integer_value(json_object_get(d, "views")), 10);
    json_decref(d);
    t = json_object();
    CHECK_INT(mirror_pull(m, pages, &psrc, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 2); /* nothing rewritten the second time */
    json_decref(t);
    CHECK_INT(mirror_uninstall(m, pages, &err), 0);
    CHECK_INT(mirror_uninstall(m, authors, &err), 0);
    /* verify after uninstall: a finding, not a failure */
    errors = json_array();
    CHECK_INT(mirror_verify(m, pages, &psrc, &stats, errors, &err), 0);
    CHECK_STR(json_string_value(json_array_get(errors, 0)),
              "pages: the mirror table t_pages is not installed.");
    CHECK_INT(mirrorkit_total(stats, "missing"), 2);
    json_decref(stats);
    json_decref(errors);
    docstore_close(ps);
    docstore_close(as);
    mirror_free(m);
}

TEST(bad_configs_are_refused)
{
    const char *bad[] = {
        "{\"driver\":\"mysql\",\"path\":\"x\",\"collections\":\"*\"}",
        "{\"driver\":\"sqlite\",\"collections\":\"*\"}",
        "{\"driver\":\"sqlite\",\"path\":\"x\",\"prefix\":\"a;drop\",\"collections\":\"*\"}",
        "{\"driver\":\"sqlite\",\"path\":\"x\",\"collections\":{\"a b\":{}}}",
        "{\"driver\":\"sqlite\",\"path\":\"x\",\"collections\":{\"p\":{\"schema\":{\"fields\":{"
        "\"id\":{\"type\":\"string\"}}}}}}",
        "{\"driver\":\"sqlite\",\"path\":\"x\",\"collections\":{\"p\":{\"schema\":{\"fields\":{"
        "\"x\\\"y\":{\"type\":\"string\"}}}}}}",
        "{\"driver\":\"sqlite\",\"path\":\"x\",\"collections\":{\"a-b\":{},\"a_b\":{}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *c = js(bad[i]);
        mirror *m = NULL;
        storh_err err;
        CHECK_INT(mirror_new("x", c, &m, &err), STORH_EINVAL);
        json_decref(c);
    }
}

/* ---- flush skips rows that are current; rebuild is one transaction ---- */

static const char *FL = "{\"fl\":{\"kind\":\"doc\",\"schema\":{\"fields\":{"
                        "\"slug\":{\"type\":\"string\",\"unique\":true},"
                        "\"v\":{\"type\":\"int\"}}}}}";

#define F1 "018bcfe5-6800-7000-8000-0000000000f1"
#define F2 "018bcfe5-6800-7000-8000-0000000000f2"
#define F3 "018bcfe5-6800-7000-8000-0000000000f3"

/* The slug of the row of id, or "" when there is none. */
static void row_slug(mirror *m, const char *id, char out[64])
{
    mparam p = {MPARAM_TEXT, id, strlen(id), 0, 0};
    char *v = NULL;
    mirror_scalar(m,
                  !strcmp(driver, "sqlite") ? "SELECT \"slug\" FROM \"t_fl\" WHERE \"id\" = ?"
                                            : "SELECT \"slug\" FROM \"t_fl\" WHERE \"id\" = $1",
                  &p, 1, &v, NULL);
    snprintf(out, 64, "%s", v ? v : "");
    free(v);
}

/* A mirror with F1 {a, 1} and F2 {b, 1} pushed; *ds the store. */
static mirror *fl_setup(docstore **ds, const mirror_coll **c)
{
    mirror *m = make(FL);
    if (!m)
        return NULL;
    storh_err err;
    *c = mirror_find(m, "fl", false, &err);
    mirror_uninstall(m, *c, NULL);
    CHECK_INT(mirror_install(m, *c, &err), 0);
    *ds = store("fl");
    mirrorkit_put(*ds, F1, "{\"slug\":\"a\",\"v\":1}");
    mirrorkit_put(*ds, F2, "{\"slug\":\"b\",\"v\":1}");
    mirror_source src = {.ds = *ds};
    json_t *t = json_object();
    CHECK_INT(mirror_push(m, *c, &src, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 2);
    json_decref(t);
    return m;
}

static void flush_pass(void)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = fl_setup(&ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    storh_err err;
    /* F1's row is edited by hand behind its hash: a flush that skips rows
     * whose hash matches the record leaves it as it is */
    mparam p = {MPARAM_TEXT, F1, strlen(F1), 0, 0};
    char *ignored = NULL;
    CHECK_INT(mirror_scalar(m,
                            !strcmp(driver, "sqlite")
                                ? "UPDATE \"t_fl\" SET \"slug\" = 'kept' WHERE \"id\" = ?"
                                : "UPDATE \"t_fl\" SET \"slug\" = 'kept' WHERE \"id\" = $1",
                            &p, 1, &ignored, &err),
              0);
    free(ignored);
    mirrorkit_put(ds, F2, "{\"slug\":\"b2\",\"v\":2}"); /* changed: flushed */
    mirrorkit_put(ds, F3, "{\"slug\":\"c\",\"v\":3}");  /* new: flushed */
    mirror_source src = {.ds = ds};
    json_t *ids = json_pack("[ssss]", F1, F2, F3, "018bcfe5-6800-7000-8000-0000000000f9"), *out;
    CHECK_INT(mirror_flush(m, c, &src, ids, &out, &err), 0);
    CHECK_INT(mirrorkit_total(out, "upserted"), 3); /* every id whose row now matches its record */
    CHECK_INT(mirrorkit_total(out, "deleted"), 1);  /* no record, no row: nothing to delete */
    json_decref(out);
    char slug[64];
    row_slug(m, F1, slug);
    CHECK_STR(slug, "kept");
    row_slug(m, F2, slug);
    CHECK_STR(slug, "b2");
    row_slug(m, F3, slug);
    CHECK_STR(slug, "c");
    CHECK_INT(mirrorkit_scalar(m, "SELECT \"v\" FROM \"t_fl\" WHERE \"slug\" = 'b2'"), 2);
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_fl\""), 3);
    /* the rows written carry the record's hash: a push finds them current */
    json_t *t = json_object();
    CHECK_INT(mirror_push(m, c, &src, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 3);
    CHECK_INT(mirrorkit_total(t, "inserted") + mirrorkit_total(t, "updated") +
                  mirrorkit_total(t, "deleted"),
              0);
    json_decref(t);
    /* a deleted record: its row goes */
    bool existed;
    docstore_delete(ds, F3, &existed, NULL);
    CHECK_INT(mirror_flush(m, c, &src, ids, &out, &err), 0);
    CHECK_INT(mirrorkit_total(out, "upserted"), 2);
    CHECK_INT(mirrorkit_total(out, "deleted"), 2);
    json_decref(out);
    row_slug(m, F3, slug);
    CHECK_STR(slug, "");
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_fl\""), 2);
    json_decref(ids);
    mirror_uninstall(m, c, NULL);
    docstore_close(ds);
    mirror_free(m);
}

static void rebuild_pass(void)
{
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = fl_setup(&ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    storh_err err;
    /* F2 takes F1's unique slug: the rebuild's inserts fail, and the table
     * keeps every row it had (it is emptied in the same transaction) */
    mirrorkit_put(ds, F2, "{\"slug\":\"a\",\"v\":5}");
    mirror_source src = {.ds = ds};
    json_t *t = json_object();
    CHECK_INT(mirror_rebuild(m, c, &src, t, &err), STORH_ECONFLICT);
    json_decref(t);
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_fl\""), 2);
    char slug[64];
    row_slug(m, F2, slug);
    CHECK_STR(slug, "b");
    /* fixed, the rebuild writes every row again */
    mirrorkit_put(ds, F2, "{\"slug\":\"b\",\"v\":5}");
    t = json_object();
    CHECK_INT(mirror_rebuild(m, c, &src, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 2);
    CHECK_INT(mirrorkit_total(t, "updated") + mirrorkit_total(t, "deleted") +
                  mirrorkit_total(t, "unchanged"),
              0);
    json_decref(t);
    CHECK_INT(mirrorkit_scalar(m, "SELECT \"v\" FROM \"t_fl\" WHERE \"slug\" = 'b'"), 5);
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_fl\""), 2);
    mirror_uninstall(m, c, NULL);
    docstore_close(ds);
    mirror_free(m);
}

static bool need_pg(void)
{
    if (getenv("STORHD_TEST_PG"))
        return true;
    fprintf(stderr, "STORHD_TEST_PG is not set: scripts/test.sh starts a cluster for this\n");
    CHECK(getenv("STORHD_TEST_PG") != NULL);
    return false;
}

/* Each pass against each driver: one runner, and below one case per pass
 * and driver, each its own ctest test (named by its TEST line). */
static void on_driver(const char *drv, void (*pass)(void))
{
    driver = drv;
    if (!strcmp(drv, "postgres") && !need_pg())
        return;
    pass();
}

TEST(sqlite_mirror)
{
    on_driver("sqlite", full_pass);
}

TEST(postgres_mirror)
{
    on_driver("postgres", full_pass);
}

TEST(flush_skips_current_rows_sqlite)
{
    on_driver("sqlite", flush_pass);
}

TEST(flush_skips_current_rows_postgres)
{
    on_driver("postgres", flush_pass);
}

TEST(rebuild_is_one_transaction_sqlite)
{
    on_driver("sqlite", rebuild_pass);
}

TEST(rebuild_is_one_transaction_postgres)
{
    on_driver("postgres", rebuild_pass);
}

/* A table of more typed columns than a row takes straight from a record's
 * canonical bytes (MROW_TYPED): its records are decoded instead, and the
 * rows hold the same values, on push, flush and rebuild. */
TEST(wide_schema_rows_sqlite)
{
    driver = "sqlite";
    enum { COLS = 40 };
    char cfg[4096] = "{\"wide\":{\"kind\":\"doc\",\"schema\":{\"fields\":{";
    for (int i = 0; i < COLS; i++)
        snprintf(cfg + strlen(cfg), sizeof cfg - strlen(cfg), "%s\"c%d\":{\"type\":\"int\"}",
                 i ? "," : "", i);
    strcat(cfg, "}}}}");
    mirror *m = make(cfg);
    CHECK(m != NULL);
    if (!m)
        return;
    storh_err err;
    const mirror_coll *c = mirror_find(m, "wide", false, &err);
    CHECK_INT(mirror_install(m, c, &err), 0);
    docstore *ds = store("wide");
    const char *ids[] = {P1, P2, P3};
    for (int r = 0; r < 3; r++) {
        char data[1024] = "{";
        for (int i = 0; i < COLS; i++)
            snprintf(data + strlen(data), sizeof data - strlen(data), "%s\"c%d\":%d", i ? "," : "",
                     i, r * 100 + i);
        strcat(data, "}");
        mirrorkit_put(ds, ids[r], data);
    }
    mirror_source src = {.ds = ds};
    json_t *t = json_object();
    CHECK_INT(mirror_push(m, c, &src, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 3);
    char *v = NULL;
    mparam p = {MPARAM_TEXT, P2, strlen(P2), 0, 0};
    /* the last column, and the sum of every column of a row */
    CHECK_INT(mirror_scalar(m, "SELECT \"c39\" FROM \"t_wide\" WHERE \"id\" = ?", &p, 1, &v, NULL),
              0);
    CHECK_STR(v ? v : "", "139");
    free(v);
    char sum[1024] = "SELECT ";
    for (int i = 0; i < COLS; i++)
        snprintf(sum + strlen(sum), sizeof sum - strlen(sum), "%s\"c%d\"", i ? " + " : "", i);
    strcat(sum, " FROM \"t_wide\" WHERE \"id\" = ?");
    CHECK_INT(mirror_scalar(m, sum, &p, 1, &v, NULL), 0);
    CHECK_STR(v ? v : "", "4780"); /* 40 * 100 + (0 + ... + 39) */
    free(v);
    /* a flush of a changed record, then a rebuild: the same columns */
    mirrorkit_put(ds, P2, "{\"c39\":7}");
    json_t *ids2 = json_pack("[s]", P2), *fo = NULL;
    CHECK_INT(mirror_flush(m, c, &src, ids2, &fo, &err), 0);
    json_decref(ids2);
    json_decref(fo);
    CHECK_INT(mirror_scalar(m, "SELECT \"c39\" FROM \"t_wide\" WHERE \"id\" = ?", &p, 1, &v, NULL),
              0);
    CHECK_STR(v ? v : "", "7");
    free(v);
    CHECK_INT(mirror_rebuild(m, c, &src, t, &err), 0);
    CHECK_INT(mirror_scalar(m,
                            "SELECT COALESCE(\"c0\", 'null') || ',' || \"c39\" || ',' || "
                            "COALESCE(\"c1\", 'null') "
                            "FROM \"t_wide\" WHERE \"id\" = ?",
                            &p, 1, &v, NULL),
              0);
    CHECK_STR(v ? v : "", "null,7,null");
    free(v);
    json_decref(t);
    mirror_uninstall(m, c, NULL);
    docstore_close(ds);
    mirror_free(m);
}

/* ---- another process writing the same SQLite file ---- */

typedef struct side_writer {
    char path[PATH_MAX];
    atomic_bool stop;
    long commits, failures;
} side_writer;

/* Commits small transactions into the mirror's SQLite file as fast as it
 * can, as another process mirroring into it would. */
static void *side_write(void *arg)
{
    side_writer *w = arg;
    sqlite3 *db = NULL;
    if (sqlite3_open(w->path, &db) != SQLITE_OK) {
        w->failures++;
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 10000);
    sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS side (x INTEGER)", NULL, NULL, NULL);
    while (!atomic_load(&w->stop)) {
        if (sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO side VALUES (1); COMMIT;", NULL, NULL,
                         NULL) == SQLITE_OK)
            w->commits++;
        else
            w->failures++;
        usleep(200);
    }
    sqlite3_close(db);
    return NULL;
}

/* A push reads the table's hashes, then writes: with the write lock taken
 * only at the first write, another process committing in between left the
 * push on a stale snapshot (SQLITE_BUSY, no wait). It must wait its turn. */
TEST(push_waits_for_another_writer_sqlite)
{
    driver = "sqlite";
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = fl_setup(&ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    char id[64], data[64];
    for (int i = 0; i < 40; i++) {
        snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012x", 0x100 + i);
        snprintf(data, sizeof data, "{\"slug\":\"s%d\",\"v\":0}", i);
        mirrorkit_put(ds, id, data);
    }
    mirror_source src = {.ds = ds};
    storh_err err;
    json_t *t = json_object();
    CHECK_INT(mirror_push(m, c, &src, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "inserted"), 40);
    json_decref(t);
    side_writer w = {.stop = false};
    snprintf(w.path, sizeof w.path, "%s/mirror.sqlite", root);
    pthread_t th;
    CHECK_INT(pthread_create(&th, NULL, side_write, &w), 0);
    for (int round = 1; round <= 10; round++) {
        for (int i = 0; i < 40; i += 8) { /* every push has rows to update */
            snprintf(id, sizeof id, "018bcfe5-6800-7000-8000-%012x", 0x100 + i);
            snprintf(data, sizeof data, "{\"slug\":\"s%d\",\"v\":%d}", i, round);
            mirrorkit_put(ds, id, data);
        }
        t = json_object();
        int rc = mirror_push(m, c, &src, t, &err);
        if (rc)
            fprintf(stderr, "push %d: %s\n", round, err.msg);
        CHECK_INT(rc, 0);
        CHECK_INT(mirrorkit_total(t, "updated"), 5);
        json_decref(t);
    }
    atomic_store(&w.stop, true);
    pthread_join(th, NULL);
    CHECK_INT(w.failures, 0);
    CHECK(w.commits > 0);
    CHECK_INT(mirrorkit_scalar(m, "SELECT \"v\" FROM \"t_fl\" WHERE \"slug\" = 's8'"), 10);
    mirror_uninstall(m, c, NULL);
    docstore_close(ds);
    mirror_free(m);
}

/* ---- a record PHP storh rewrites is flushed (STORH_PHP_DIR) ---- */

static const char php_put[] = "<?php\n"
                              "require getenv('STORH_PHP_DIR') . '/vendor/autoload.php';\n"
                              "[, $root, $id] = $argv;\n"
                              "$s = new Storh\\DocPerFileStore($root, 'fl');\n"
                              "$s->put(['slug' => 'php', 'v' => 7], $id);\n";

TEST(flush_sees_php_writes)
{
    if (!getenv("STORH_PHP_DIR")) {
        CHECK(!"STORH_PHP_DIR names the PHP storh checkout");
        return;
    }
    driver = "sqlite";
    docstore *ds = NULL;
    const mirror_coll *c = NULL;
    mirror *m = fl_setup(&ds, &c);
    CHECK(m != NULL);
    if (!m)
        return;
    char script[PATH_MAX], cmd[PATH_MAX * 3];
    snprintf(script, sizeof script, "%s/put.php", root);
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(php_put, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "php '%s' '%s/sqlite-root' %s", script, root, F1);
    CHECK_INT(system(cmd), 0);
    storh_err err;
    mirror_source src = {.ds = ds};
    json_t *ids = json_pack("[ss]", F1, F2), *out;
    CHECK_INT(mirror_flush(m, c, &src, ids, &out, &err), 0);
    CHECK_INT(mirrorkit_total(out, "upserted"), 2);
    json_decref(out);
    json_decref(ids);
    char slug[64];
    row_slug(m, F1, slug);
    CHECK_STR(slug, "php");
    CHECK_INT(mirrorkit_scalar(m, "SELECT \"v\" FROM \"t_fl\" WHERE \"slug\" = 'php'"), 7);
    json_t *t = json_object();
    CHECK_INT(mirror_push(m, c, &src, t, &err), 0);
    CHECK_INT(mirrorkit_total(t, "unchanged"), 2);
    json_decref(t);
    mirror_uninstall(m, c, NULL);
    docstore_close(ds);
    mirror_free(m);
}

static const test_case tests[] = {
    TEST_ENTRY(sqlite_mirror),
    TEST_ENTRY(postgres_mirror),
    TEST_ENTRY(bad_configs_are_refused),
    TEST_ENTRY(flush_skips_current_rows_sqlite),
    TEST_ENTRY(flush_skips_current_rows_postgres),
    TEST_ENTRY(rebuild_is_one_transaction_sqlite),
    TEST_ENTRY(rebuild_is_one_transaction_postgres),
    TEST_ENTRY(push_waits_for_another_writer_sqlite),
    TEST_ENTRY(wide_schema_rows_sqlite),
};

/* run only when named: registered with -DSTORH_PHP_DIR */
static const test_case named[] = {
    TEST_ENTRY(flush_sees_php_writes),
};

TMPDIR_TEST_MAIN_WITH_NAMED(root, tests, named)
