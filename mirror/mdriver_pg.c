/* The postgres driver: one libpq connection; statements are prepared once
 * per SQL text (a small cache) and run with text parameters, so values are
 * never spliced into SQL. A lost connection is reported as STORH_EUNAVAIL and
 * retried (reset) on the next call. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mdriver.h"
#include "pgerr.h"

#define STMT_CACHE 32
#define MAX_PARAMS 32768

typedef struct pg_driver {
    mdriver base;
    PGconn *conn;
    char *sql[STMT_CACHE];
    int next;
} pg_driver;

static void forget_statements(pg_driver *d)
{
    for (int i = 0; i < STMT_CACHE; i++) {
        free(d->sql[i]);
        d->sql[i] = NULL;
    }
}

static int conn_ok(pg_driver *d, storh_err *err)
{
    if (PQstatus(d->conn) == CONNECTION_OK)
        return 0;
    PQreset(d->conn); /* the server may be back */
    forget_statements(d);
    if (PQstatus(d->conn) == CONNECTION_OK)
        return 0;
    return storh_err_set(err, STORH_EUNAVAIL, "PostgreSQL is unavailable: %s",
                         PQerrorMessage(d->conn));
}

static int result_error(pg_driver *d, PGresult *r, storh_err *err)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    int code =
        state && !strcmp(state, "23505") ? STORH_ECONFLICT : pgerr_code(d->conn, r, STORH_EIO);
    storh_err_set(err, code, "SQL mirror statement failed: %s",
                  r ? PQresultErrorMessage(r) : PQerrorMessage(d->conn));
    PQclear(r);
    return code;
}

/* The name of a prepared statement for sql, preparing it on first use. */
static const char *prepared(pg_driver *d, const char *sql, int np, storh_err *err, int *rc)
{
    static __thread char name[16];
    for (int i = 0; i < STMT_CACHE; i++)
        if (d->sql[i] && !strcmp(d->sql[i], sql)) {
            snprintf(name, sizeof name, "s%d", i);
            return name;
        }
    int k = d->next++ % STMT_CACHE;
    snprintf(name, sizeof name, "s%d", k);
    if (d->sql[k]) {
        char dealloc[40];
        snprintf(dealloc, sizeof dealloc, "DEALLOCATE %s", name);
        PQclear(PQexec(d->conn, dealloc));
        free(d->sql[k]);
        d->sql[k] = NULL;
    }
    PGresult *r = PQprepare(d->conn, name, sql, np, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        *rc = result_error(d, r, err);
        return NULL;
    }
    PQclear(r);
    d->sql[k] = strdup(sql);
    return name;
}

static int pg_query(mdriver *md, const char *sql, const mparam *p, int np, mrow_fn fn, void *ctx,
                    storh_err *err)
{
    pg_driver *d = (pg_driver *)md;
    int rc = conn_ok(d, err);
    if (rc)
        return rc;
    if (np > MAX_PARAMS)
        return storh_err_set(err, STORH_EINVAL, "Too many SQL parameters.");
    /* text-format parameters are NUL-terminated strings: every value the
     * mirror binds holds no NUL (canonical JSON escapes it as \u0000), but
     * a value taken from inside a record's bytes (p[i].len bytes of a
     * longer buffer) is copied to end it */
    const char **vals = calloc((size_t)np + 1, sizeof *vals);
    char(*nums)[32] = calloc((size_t)np + 1, sizeof *nums);
    char **copies = calloc((size_t)np + 1, sizeof *copies);
    if (!vals || !nums || !copies) {
        free(vals);
        free(nums);
        free(copies);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    for (int i = 0; i < np && !rc; i++) {
        switch (p[i].type) {
        case MPARAM_NULL:
            vals[i] = NULL;
            break;
        case MPARAM_TEXT:
            vals[i] = p[i].text;
            if (p[i].text[p[i].len] != '\0' &&
                !(vals[i] = copies[i] = strndup(p[i].text, p[i].len)))
                rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            break;
        case MPARAM_INT:
            snprintf(nums[i], sizeof nums[i], "%lld", (long long)p[i].i);
            vals[i] = nums[i];
            break;
        case MPARAM_BOOL:
            vals[i] = p[i].i ? "true" : "false";
            break;
        default:
            snprintf(nums[i], sizeof nums[i], "%.17g", p[i].d);
            vals[i] = nums[i];
        }
    }
    PGresult *r = NULL;
    if (rc) {
        /* a copy failed: nothing is sent */
    } else if (np == 0 && !fn) {
        r = PQexec(d->conn, sql); /* DDL and transaction control */
    } else if (np > 64) {
        /* a one-off multi-row statement: not worth a prepared slot */
        r = PQexecParams(d->conn, sql, np, NULL, vals, NULL, NULL, 0);
    } else {
        const char *name = prepared(d, sql, np, err, &rc);
        if (name)
            r = PQexecPrepared(d->conn, name, np, vals, NULL, NULL, 0);
    }
    for (int i = 0; i < np; i++)
        free(copies[i]);
    free(copies);
    free(vals);
    free(nums);
    if (!r && rc)
        return rc;
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        return result_error(d, r, err);
    int rows = PQntuples(r), cols = PQnfields(r);
    if (cols > 32)
        cols = 32;
    for (int i = 0; fn && i < rows && !rc; i++) {
        const char *v[32];
        size_t l[32];
        for (int c = 0; c < cols; c++) {
            v[c] = PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
            l[c] = (size_t)PQgetlength(r, i, c);
        }
        rc = fn(ctx, cols, v, l);
    }
    PQclear(r);
    return rc;
}

static int pg_exec(mdriver *md, const char *sql, const mparam *p, int np, storh_err *err)
{
    return pg_query(md, sql, p, np, NULL, NULL, err);
}

static void pg_close(mdriver *md)
{
    pg_driver *d = (pg_driver *)md;
    forget_statements(d);
    PQfinish(d->conn);
    free(d);
}

static const mdriver_ops pg_ops = {
    .name = "postgres",
    .quote = '"',
    .has_table_sql = "SELECT 1 FROM pg_catalog.pg_tables WHERE tablename = $1 AND schemaname = "
                     "ANY (pg_catalog.current_schemas(false))",
    .begin_write_sql = "BEGIN",
    .exec = pg_exec,
    .query = pg_query,
    .close = pg_close,
};

int mdriver_pg_open(const char *conninfo, mdriver **out, storh_err *err)
{
    pg_driver *d = calloc(1, sizeof *d);
    if (!d)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    d->base.ops = &pg_ops;
    d->conn = PQconnectdb(conninfo);
    if (PQstatus(d->conn) != CONNECTION_OK) {
        int rc = storh_err_set(err, STORH_EUNAVAIL, "PostgreSQL is unavailable: %s",
                               PQerrorMessage(d->conn));
        pg_close(&d->base);
        return rc;
    }
    PQclear(PQexec(d->conn, "SET client_min_messages TO warning"));
    *out = &d->base;
    return 0;
}
