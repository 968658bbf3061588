/* The sqlite driver: one connection, statements prepared per call from a
 * small cache keyed by SQL text (push runs the same few statements many
 * times), WAL journal, and full synchronous commits. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "mdriver.h"

#define STMT_CACHE 16

typedef struct sq_driver {
    mdriver base;
    sqlite3 *db;
    struct {
        char *sql;
        sqlite3_stmt *st;
    } cache[STMT_CACHE];
    int next;
} sq_driver;

static int fail(sq_driver *d, storh_err *err, const char *what)
{
    return storh_err_set(err, STORH_EIO, "SQL mirror statement failed: %s: %s", what,
                         sqlite3_errmsg(d->db));
}

static sqlite3_stmt *prepared(sq_driver *d, const char *sql, storh_err *err)
{
    for (int i = 0; i < STMT_CACHE; i++)
        if (d->cache[i].sql && !strcmp(d->cache[i].sql, sql)) {
            sqlite3_reset(d->cache[i].st);
            sqlite3_clear_bindings(d->cache[i].st);
            return d->cache[i].st;
        }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail(d, err, "prepare");
        return NULL;
    }
    int k = d->next++ % STMT_CACHE;
    if (d->cache[k].st) {
        sqlite3_finalize(d->cache[k].st);
        free(d->cache[k].sql);
    }
    d->cache[k].sql = strdup(sql);
    d->cache[k].st = st;
    return st;
}

static int bind(sq_driver *d, sqlite3_stmt *st, const mparam *p, int np, storh_err *err)
{
    for (int i = 0; i < np; i++) {
        int rc;
        switch (p[i].type) {
        case MPARAM_NULL:
            rc = sqlite3_bind_null(st, i + 1);
            break;
        case MPARAM_TEXT:
            /* the bytes outlive the statement's run: prepared() clears the
             * bindings before the statement runs again */
            rc = sqlite3_bind_text(st, i + 1, p[i].text, (int)p[i].len, SQLITE_STATIC);
            break;
        case MPARAM_INT:
        case MPARAM_BOOL:
            rc = sqlite3_bind_int64(st, i + 1, p[i].i);
            break;
        default:
            rc = sqlite3_bind_double(st, i + 1, p[i].d);
        }
        if (rc != SQLITE_OK)
            return fail(d, err, "bind");
    }
    return 0;
}

static int sq_query(mdriver *md, const char *sql, const mparam *p, int np, mrow_fn fn, void *ctx,
                    storh_err *err)
{
    sq_driver *d = (sq_driver *)md;
    sqlite3_stmt *st = prepared(d, sql, err);
    if (!st)
        return STORH_EIO;
    int rc = bind(d, st, p, np, err);
    while (!rc) {
        int s = sqlite3_step(st);
        if (s == SQLITE_DONE)
            break;
        if (s != SQLITE_ROW) {
            rc = s == SQLITE_CONSTRAINT
                     ? storh_err_set(err, STORH_ECONFLICT, "SQL mirror statement failed: %s",
                                     sqlite3_errmsg(d->db))
                     : fail(d, err, "step");
            break;
        }
        if (!fn)
            continue;
        int n = sqlite3_column_count(st);
        const char *vals[32];
        size_t lens[32];
        if (n > 32)
            n = 32;
        for (int i = 0; i < n; i++) {
            vals[i] = (const char *)sqlite3_column_text(st, i);
            lens[i] = (size_t)sqlite3_column_bytes(st, i);
        }
        if ((rc = fn(ctx, n, vals, lens)))
            break;
    }
    sqlite3_reset(st);
    return rc;
}

static int sq_exec(mdriver *md, const char *sql, const mparam *p, int np, storh_err *err)
{
    return sq_query(md, sql, p, np, NULL, NULL, err);
}

static void sq_close(mdriver *md)
{
    sq_driver *d = (sq_driver *)md;
    for (int i = 0; i < STMT_CACHE; i++) {
        if (d->cache[i].st)
            sqlite3_finalize(d->cache[i].st);
        free(d->cache[i].sql);
    }
    sqlite3_close(d->db);
    free(d);
}

static const mdriver_ops sq_ops = {
    .name = "sqlite",
    .quote = '"',
    .has_table_sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
    .begin_write_sql = "BEGIN IMMEDIATE",
    .data_version_sql = "PRAGMA data_version",
    .exec = sq_exec,
    .query = sq_query,
    .close = sq_close,
};

int mdriver_sqlite_open(const char *path, mdriver **out, storh_err *err)
{
    sq_driver *d = calloc(1, sizeof *d);
    if (!d)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    d->base.ops = &sq_ops;
    if (sqlite3_open_v2(path, &d->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        int rc = storh_err_set(err, STORH_EUNAVAIL, "Could not open SQLite mirror %s: %s", path,
                               d->db ? sqlite3_errmsg(d->db) : "out of memory");
        sqlite3_close(d->db);
        free(d);
        return rc;
    }
    sqlite3_busy_timeout(d->db, 10000);
    /* durable commits: WAL with a full sync of the log at each commit */
    char *msg = NULL;
    if (sqlite3_exec(d->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL,
                     &msg) != SQLITE_OK) {
        int rc =
            storh_err_set(err, STORH_EIO, "SQL mirror statement failed: %s", msg ? msg : "pragma");
        sqlite3_free(msg);
        sq_close(&d->base);
        return rc;
    }
    *out = &d->base;
    return 0;
}
