/* mdriver: the small driver interface the SQL mirror speaks: statements
 * with bound parameters (never spliced into SQL), row callbacks, and
 * transactions. Drivers: sqlite (sqlite3, the embedded default) and
 * postgres (libpq). A driver owns its connection; mdriver_close frees it. */
#ifndef STORHD_MDRIVER_H
#define STORHD_MDRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storh_err.h"

typedef enum { MPARAM_NULL, MPARAM_TEXT, MPARAM_INT, MPARAM_REAL, MPARAM_BOOL } mparam_type;

typedef struct mparam {
    mparam_type type;
    const char *text; /* MPARAM_TEXT: bytes, len below */
    size_t len;
    int64_t i; /* MPARAM_INT, MPARAM_BOOL (0/1) */
    double d;  /* MPARAM_REAL */
} mparam;

/* A row: ncols text values (NULL for SQL NULL) and their lengths. Return 0 to
 * go on, non-zero to stop (the value is returned by mdriver_query). */
typedef int (*mrow_fn)(void *ctx, int ncols, const char *const *vals, const size_t *lens);

typedef struct mdriver mdriver;

typedef struct mdriver_ops {
    const char *name;
    char quote; /* identifier quote */
    /* a row when the table named by the one text parameter exists */
    const char *has_table_sql;
    /* starts a transaction that will write: SQLite takes its write lock at
     * once (BEGIN IMMEDIATE), so a transaction that read first cannot fail
     * with a stale snapshot when another process wrote in between */
    const char *begin_write_sql;
    /* one integer that changes when another connection committed since
     * this one last looked, and not for this one's own commits (SQLite's
     * PRAGMA data_version); NULL when the database tells no such thing */
    const char *data_version_sql;
    int (*exec)(mdriver *d, const char *sql, const mparam *p, int np, storh_err *err);
    int (*query)(mdriver *d, const char *sql, const mparam *p, int np, mrow_fn fn, void *ctx,
                 storh_err *err);
    void (*close)(mdriver *d);
} mdriver_ops;

struct mdriver {
    const mdriver_ops *ops;
};

/* Opens a driver: "sqlite" with a file path, "postgres" with a libpq
 * conninfo. Failures to connect are STORH_EUNAVAIL. */
int mdriver_open(const char *driver, const char *target, mdriver **out, storh_err *err);
int mdriver_sqlite_open(const char *path, mdriver **out, storh_err *err);
int mdriver_pg_open(const char *conninfo, mdriver **out, storh_err *err);

static inline int mdriver_exec(mdriver *d, const char *sql, const mparam *p, int np, storh_err *err)
{
    return d->ops->exec(d, sql, p, np, err);
}
static inline int mdriver_query(mdriver *d, const char *sql, const mparam *p, int np, mrow_fn fn,
                                void *ctx, storh_err *err)
{
    return d->ops->query(d, sql, p, np, fn, ctx, err);
}
static inline int mdriver_begin_write(mdriver *d, storh_err *err)
{
    return d->ops->exec(d, d->ops->begin_write_sql, NULL, 0, err);
}
static inline void mdriver_close(mdriver *d)
{
    if (d)
        d->ops->close(d);
}

#endif
