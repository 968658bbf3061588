/* mirror_pull: reads from the SQL mirror: pull (restore rows into the
 * local store, published together), verify (missing, stale and orphaned
 * rows) and a scalar query for tests and bench. */
#include "mirror.h"

#include <stdio.h>
#include <string.h>

#include "sjson.h"
#include "mirror_int.h"

typedef struct pull_ctx {
    const mirror_source *src;
    docstore_stage *st; /* restored rows, published together at the end */
    seglog_batch *lb;
    const char *table;
    long written, unchanged;
    storh_err *err;
    int rc;
} pull_ctx;

static int pull_row(void *p, int n, const char *const *v, const size_t *l)
{
    pull_ctx *x = p;
    if (n < 2 || !v[0] || !v[1])
        return x->rc = storh_err_set(x->err, STORH_ECORRUPT,
                                     "SQL mirror pull read a malformed row from: %s", x->table);
    if (!uuid7_is_valid(v[0], l[0]))
        return x->rc = storh_err_set(x->err, STORH_EINVAL,
                                     "SQL mirror pull requires UUIDv7 row ids, got: %.64s", v[0]);
    json_t *data = sjson_decode(v[1], l[1], NULL);
    if (!data)
        return x->rc = storh_err_set(x->err, STORH_ECORRUPT,
                                     "SQL mirror pull found invalid JSON for id %s in %s", v[0],
                                     x->table);
    if (!json_is_object(data) && !json_is_array(data)) {
        json_decref(data);
        return x->rc = storh_err_set(x->err, STORH_ECORRUPT,
                                     "SQL mirror pull found a non-array data row for id %s in %s",
                                     v[0], x->table);
    }
    json_t *local = NULL;
    int g = mirror__source_get(x->src, v[0], &local, NULL);
    /* same data: unchanged (compared as values, since PostgreSQL's jsonb
     * keeps its own key order) */
    if (g == 0 &&
        (json_equal(local, data) || (json_is_array(local) && json_array_size(local) == 0 &&
                                     json_is_object(data) && json_object_size(data) == 0))) {
        x->unchanged++;
    } else {
        char id[UUID7_LEN + 1];
        int rc;
        if (x->st) {
            rc = docstore_stage_put(x->st, v[0], data, id, x->err);
        } else {
            json_t *row = json_pack("{sssO}", "id", v[0], "data", data);
            rc = seglog_batch_element(x->lb, row, id, x->err);
            json_decref(row);
        }
        if (rc) {
            json_decref(local);
            json_decref(data);
            return x->rc = rc;
        }
        x->written++;
    }
    json_decref(local);
    json_decref(data);
    return 0;
}

int mirror_pull(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = mirror__connect_db(m, err);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT \"id\", \"data\" FROM \"%s\" ORDER BY \"id\"", c->table);
    pull_ctx x = {src, NULL, NULL, c->table, 0, 0, err, 0};
    if (!rc)
        rc = src->ds ? docstore_stage_begin(src->ds, &x.st, err)
                     : seglog_batch_begin(src->log, &x.lb, err);
    if (!rc)
        rc = mdriver_query(m->db, sql, NULL, 0, pull_row, &x, err);
    if (x.rc)
        rc = x.rc;
    /* all restored rows become visible together, or none does */
    if (!rc && x.st)
        rc = docstore_stage_commit(x.st, NULL, err);
    else if (!rc && x.lb)
        rc = seglog_batch_commit(x.lb, NULL, err);
    else {
        docstore_stage_abort(x.st);
        seglog_batch_abort(x.lb);
    }
    if (!rc) {
        mirror__add_total(totals, "written", x.written);
        mirror__add_total(totals, "unchanged", x.unchanged);
    }
    rc = mirror__settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

typedef struct verify_ctx {
    json_t *rows;
    long records, missing, stale;
} verify_ctx;

static int verify_one(void *p, const char *id, const json_t *data, storh_err *err)
{
    (void)err;
    verify_ctx *x = p;
    x->records++;
    json_t *have = json_object_get(x->rows, id);
    if (!have) {
        x->missing++;
        return 0;
    }
    char hash[33];
    mirror_hash(data, hash);
    if (strcmp(json_string_value(have), hash))
        x->stale++;
    json_object_del(x->rows, id);
    return 0;
}

static int found_row(void *ctx, int n, const char *const *v, const size_t *l)
{
    (void)n;
    (void)v;
    (void)l;
    *(bool *)ctx = true;
    return 0;
}

int mirror_verify(mirror *m, const mirror_coll *c, const mirror_source *src, json_t **stats,
                  json_t *errors, storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = mirror__connect_db(m, err);
    verify_ctx x = {json_object(), 0, 0, 0};
    /* an uninstalled table is a finding (every record missing), not a failure */
    bool installed = false;
    mparam name = {MPARAM_TEXT, c->table, strlen(c->table), 0, 0};
    if (!rc)
        rc = mdriver_query(m->db, m->db->ops->has_table_sql, &name, 1, found_row, &installed, err);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT \"id\", \"hash\" FROM \"%s\"", c->table);
    if (!rc && installed)
        rc = mdriver_query(m->db, sql, NULL, 0, mirror__collect_pair, x.rows, err);
    rc = mirror__settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    if (!rc)
        rc = mirror__each_record(src, verify_one, &x, err);
    long orphaned = (long)json_object_size(x.rows);
    json_decref(x.rows);
    if (rc)
        return rc;
    char msg[200];
    if (!installed) {
        snprintf(msg, sizeof msg, "%s: the mirror table %s is not installed.", c->name, c->table);
        json_array_append_new(errors, json_string(msg));
    }
    if (x.missing) {
        snprintf(msg, sizeof msg, "%s: %ld record(s) missing from the mirror.", c->name, x.missing);
        json_array_append_new(errors, json_string(msg));
    }
    if (x.stale) {
        snprintf(msg, sizeof msg, "%s: %ld stale mirror row(s).", c->name, x.stale);
        json_array_append_new(errors, json_string(msg));
    }
    if (orphaned) {
        snprintf(msg, sizeof msg, "%s: %ld orphaned mirror row(s).", c->name, orphaned);
        json_array_append_new(errors, json_string(msg));
    }
    *stats =
        json_pack("{sIsIsIsIsI}", "records", (json_int_t)x.records, "rows",
                  (json_int_t)(x.records - x.missing + orphaned), "missing", (json_int_t)x.missing,
                  "stale", (json_int_t)x.stale, "orphaned", (json_int_t)orphaned);
    return 0;
}

static int first_value(void *ctx, int n, const char *const *v, const size_t *l)
{
    char **out = ctx;
    if (n > 0 && v[0] && !*out)
        *out = strndup(v[0], l[0]);
    return 0;
}

int mirror_scalar(mirror *m, const char *sql, const mparam *p, int np, char **out, storh_err *err)
{
    *out = NULL;
    pthread_mutex_lock(&m->mu);
    int rc = mirror__connect_db(m, err);
    mirror__kept_drop(m, NULL); /* the statement may write any table */
    if (!rc)
        rc = mdriver_query(m->db, sql, p, np, first_value, out, err);
    rc = mirror__settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
