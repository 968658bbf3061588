/* mirror_push: rows written to the SQL mirror: push (diff by hash in one
 * transaction per collection), flush(ids) and rebuild, with the counters
 * /metrics reads of each push. */
#include "mirror.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "estats.h"
#include "sjson.h"
#include "mirror_int.h"

/* ---- rows ---- */

static void insert_sql(const mirror *m, const mirror_coll *c, row_stmt *s)
{
    buf_printf(&s->sql, "INSERT INTO \"%s\" (\"id\", \"hash\"", c->table);
    s->ncols = 2;
    for (size_t i = 0; i < c->sch.n; i++)
        if (mirror__col_type(m, &c->sch.f[i])) {
            buf_printf(&s->sql, ", \"%s\"", c->sch.f[i].name);
            s->ncols++;
        }
    buf_appends(&s->sql, ", \"data\") VALUES (");
    s->ncols++;
    for (int i = 0; i < s->ncols; i++)
        buf_printf(&s->sql, mirror__is_pg(m) ? "%s$%d" : "%s?", i ? ", " : "", i + 1);
    buf_appendc(&s->sql, ')');
}

/* The parameters of one row: values point into data / hash / text. */
static int row_params(const mirror *m, const mirror_coll *c, const char *id, const char *hash,
                      const buf *text, const json_t *data, mparam *p)
{
    int k = 0;
    p[k++] = (mparam){MPARAM_TEXT, id, strlen(id), 0, 0};
    p[k++] = (mparam){MPARAM_TEXT, hash, 32, 0, 0};
    for (size_t i = 0; i < c->sch.n; i++) {
        const schema_field *f = &c->sch.f[i];
        if (!mirror__col_type(m, f))
            continue;
        json_t *v = json_is_object(data) ? json_object_get(data, f->name) : NULL;
        mparam q = {MPARAM_NULL, NULL, 0, 0, 0};
        if (f->type == SCHEMA_STRING && json_is_string(v))
            q = (mparam){MPARAM_TEXT, json_string_value(v), json_string_length(v), 0, 0};
        else if (f->type == SCHEMA_INT && json_is_integer(v))
            q = (mparam){MPARAM_INT, NULL, 0, json_integer_value(v), 0};
        else if (f->type == SCHEMA_FLOAT && json_is_number(v))
            q = (mparam){MPARAM_REAL, NULL, 0, 0, json_number_value(v)};
        else if (f->type == SCHEMA_BOOL && json_is_boolean(v))
            q = (mparam){MPARAM_BOOL, NULL, 0, json_is_true(v), 0};
        p[k++] = q;
    }
    p[k++] = (mparam){MPARAM_TEXT, text->data, text->len, 0, 0};
    return k;
}

static int insert_row(mirror *m, const mirror_coll *c, const row_stmt *ins, const char *id,
                      const json_t *data, storh_err *err)
{
    buf text = BUF_INIT;
    int rc = sjson_encode(&text, data, 0, err);
    char hash[33];
    mirror_hash(data, hash);
    mparam p[40];
    if (!rc && ins->ncols > 40)
        rc = storh_err_set(err, STORH_EINVAL, "Too many typed columns.");
    if (!rc) {
        int np = row_params(m, c, id, hash, &text, data, p);
        rc = mdriver_exec(m->db, ins->sql.data, p, np, err);
    }
    buf_free(&text);
    return rc;
}

int mirror__collect_pair(void *ctx, int n, const char *const *v, const size_t *l)
{
    (void)l;
    if (n >= 2 && v[0] && v[1])
        json_object_set_new(ctx, v[0], json_string(v[1]));
    return 0;
}

/* ---- iteration over a source ---- */

int mirror__each_record(const mirror_source *src, each_fn fn, void *ctx, storh_err *err)
{
    int rc;
    const char *id;
    json_t *data;
    if (src->ds) {
        docstore_iter *it;
        if ((rc = docstore_iter_open(src->ds, NULL, &it, err)))
            return rc;
        while ((rc = docstore_iter_next(it, &id, &data, err)) == 1) {
            rc = fn(ctx, id, data, err);
            json_decref(data);
            if (rc)
                break;
        }
        docstore_iter_close(it);
    } else {
        logset_iter *it;
        if ((rc = logset_iter_open(&src->logs, NULL, &it, err)))
            return rc;
        while ((rc = logset_iter_next(it, &id, &data, err)) == 1) {
            rc = fn(ctx, id, data, err);
            json_decref(data);
            if (rc)
                break;
        }
        logset_iter_close(it);
    }
    return rc < 0 ? rc : 0;
}

int mirror__source_get(const mirror_source *src, const char *id, json_t **data, storh_err *err)
{
    return src->ds ? docstore_get(src->ds, id, data, NULL, err)
                   : logset_get(&src->logs, id, data, err);
}

typedef struct push_ctx {
    mirror *m;
    const mirror_coll *c;
    json_t *rows; /* id -> hash, removed as records are seen */
    row_stmt ins;
    buf del;
    json_t *pending; /* [[id, data], ...] waiting for one multi-row INSERT */
    long inserted, updated, unchanged;
} push_ctx;

/* Inserts the pending rows with one statement. */
static int flush_inserts(push_ctx *x, storh_err *err)
{
    size_t n = json_array_size(x->pending);
    if (!n)
        return 0;
    mirror *m = x->m;
    const mirror_coll *c = x->c;
    int cols = x->ins.ncols;
    mparam *p = calloc(n * (size_t)cols, sizeof *p);
    buf *texts = calloc(n, sizeof *texts);
    char(*hashes)[33] = calloc(n, sizeof *hashes);
    buf sql = BUF_INIT;
    const char *values = strstr(x->ins.sql.data, " VALUES (");
    buf_append(&sql, x->ins.sql.data, (size_t)(values - x->ins.sql.data));
    buf_appends(&sql, " VALUES ");
    int rc = p && texts && hashes ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    int k = 0;
    for (size_t r = 0; !rc && r < n; r++) {
        json_t *row = json_array_get(x->pending, r);
        const char *id = json_string_value(json_array_get(row, 0));
        json_t *data = json_array_get(row, 1);
        if ((rc = sjson_encode(&texts[r], data, 0, err)))
            break;
        mirror_hash(data, hashes[r]);
        row_params(m, c, id, hashes[r], &texts[r], data, p + k);
        buf_appends(&sql, r ? ", (" : "(");
        for (int i = 0; i < cols; i++)
            buf_printf(&sql, mirror__is_pg(m) ? "%s$%d" : "%s?", i ? ", " : "", k + i + 1);
        buf_appendc(&sql, ')');
        k += cols;
    }
    if (!rc)
        rc = mdriver_exec(m->db, sql.data, p, k, err);
    for (size_t r = 0; texts && r < n; r++)
        buf_free(&texts[r]);
    free(texts);
    free(hashes);
    free(p);
    buf_free(&sql);
    json_array_clear(x->pending);
    return rc;
}

static int push_one(void *p, const char *id, const json_t *data, storh_err *err)
{
    push_ctx *x = p;
    char hash[33];
    mirror_hash(data, hash);
    json_t *have = json_object_get(x->rows, id);
    if (have && !strcmp(json_string_value(have), hash)) {
        x->unchanged++;
        json_object_del(x->rows, id);
        return 0;
    }
    int rc = 0;
    if (have) {
        mparam p1 = {MPARAM_TEXT, id, strlen(id), 0, 0};
        rc = mdriver_exec(x->m->db, x->del.data, &p1, 1, err);
        json_object_del(x->rows, id);
        x->updated++;
    } else {
        x->inserted++;
    }
    if (rc)
        return rc;
    json_array_append_new(x->pending, json_pack("[sO]", id, data));
    /* SQLite binds at most 32766 parameters, PostgreSQL 65535 */
    if (json_array_size(x->pending) >= INSERT_BATCH ||
        (json_array_size(x->pending) + 1) * (size_t)x->ins.ncols > 30000)
        return flush_inserts(x, err);
    return 0;
}

static int delete_rest(mirror *m, const mirror_coll *c, json_t *rows, long *deleted, storh_err *err)
{
    size_t n = json_object_size(rows);
    const char **ids = malloc((n ? n : 1) * sizeof *ids);
    size_t k = 0;
    const char *id;
    json_t *v;
    json_object_foreach(rows, id, v) ids[k++] = id;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i += DELETE_CHUNK) {
        size_t cnt = n - i < DELETE_CHUNK ? n - i : DELETE_CHUNK;
        buf sql = BUF_INIT;
        buf_printf(&sql, "DELETE FROM \"%s\" WHERE \"id\" IN (", c->table);
        mparam p[DELETE_CHUNK];
        for (size_t j = 0; j < cnt; j++) {
            buf_printf(&sql, mirror__is_pg(m) ? "%s$%zu" : "%s?", j ? ", " : "", j + 1);
            p[j] = (mparam){MPARAM_TEXT, ids[i + j], strlen(ids[i + j]), 0, 0};
        }
        buf_appendc(&sql, ')');
        rc = mdriver_exec(m->db, sql.data, p, (int)cnt, err);
        buf_free(&sql);
    }
    free(ids);
    if (!rc)
        *deleted += (long)n;
    return rc;
}

void mirror__add_total(json_t *totals, const char *k, long v)
{
    json_t *c = json_object_get(totals, k);
    json_object_set_new(totals, k, json_integer((c ? json_integer_value(c) : 0) + v));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double epoch_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

unsigned long long mirror_writes(void)
{
    return (unsigned long long)(estats_get(ESTAT_DOC_PUT) + estats_get(ESTAT_DOC_DELETE) +
                                estats_get(ESTAT_LOG_APPEND));
}

void mirror_snapshot(mirror *m, mirror_stats *out)
{
    unsigned long long now = mirror_writes();
    pthread_mutex_lock(&m->mu);
    unsigned long long oldest = now;
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i]->mark < oldest)
            oldest = m->c[i]->mark;
    if (m->n == 0)
        oldest = 0; /* nothing pushed yet */
    *out = (mirror_stats){m->rows_pushed,  m->pushes,       m->failures,     now - oldest,
                          m->push_seconds, m->last_push_at, m->last_good_at, m->last_push_ok};
    pthread_mutex_unlock(&m->mu);
}

/* Under mu: records how the push of c ended. */
static void push_outcome(mirror *m, const mirror_coll *c, bool ok, unsigned long long mark)
{
    m->last_push_ok = ok;
    m->last_push_at = epoch_s();
    if (!ok)
        return;
    m->last_good_at = m->last_push_at;
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i] == c)
            m->c[i]->mark = mark;
}

/* Under mu: push in one transaction; any failure rolls it back. */
static int push_locked(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                       storh_err *err)
{
    double t0 = now_s();
    unsigned long long mark = mirror_writes();
    int rc = mirror__connect_db(m, err);
    json_t *ddl = NULL;
    if (!rc)
        rc = mirror_ddl(m, c, &ddl, err);
    if (!rc)
        rc = mirror__exec_stmts(m, ddl, err); /* push works on a fresh database too */
    json_decref(ddl);
    if (!rc)
        rc = mdriver_exec(m->db, "BEGIN", NULL, 0, err);
    if (rc) {
        push_outcome(m, c, false, mark);
        return mirror__settle(m, rc);
    }
    push_ctx x = {m, c, json_object(), {BUF_INIT, 0}, BUF_INIT, json_array(), 0, 0, 0};
    insert_sql(m, c, &x.ins);
    buf_printf(&x.del, "DELETE FROM \"%s\" WHERE \"id\" = %s", c->table,
               mirror__is_pg(m) ? "$1" : "?");
    char sel[256];
    snprintf(sel, sizeof sel, "SELECT \"id\", \"hash\" FROM \"%s\"", c->table);
    rc = mdriver_query(m->db, sel, NULL, 0, mirror__collect_pair, x.rows, err);
    if (!rc)
        rc = mirror__each_record(src, push_one, &x, err);
    if (!rc)
        rc = flush_inserts(&x, err);
    long deleted = 0;
    if (!rc)
        rc = delete_rest(m, c, x.rows, &deleted, err);
    if (!rc)
        rc = mdriver_exec(m->db, "COMMIT", NULL, 0, err);
    if (rc) {
        storh_err ignore;
        mdriver_exec(m->db, "ROLLBACK", NULL, 0, &ignore);
    } else {
        mirror__add_total(totals, "inserted", x.inserted);
        mirror__add_total(totals, "updated", x.updated);
        mirror__add_total(totals, "deleted", deleted);
        mirror__add_total(totals, "unchanged", x.unchanged);
        m->rows_pushed += (unsigned long long)(x.inserted + x.updated + deleted);
        m->pushes++;
        m->push_seconds += now_s() - t0;
    }
    push_outcome(m, c, rc == 0, mark);
    json_decref(x.rows);
    json_decref(x.pending);
    buf_free(&x.ins.sql);
    buf_free(&x.del);
    return mirror__settle(m, rc);
}

int mirror_push(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = push_locked(m, c, src, totals, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int mirror_rebuild(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                   storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = mirror__connect_db(m, err);
    json_t *ddl = NULL;
    if (!rc)
        rc = mirror_ddl(m, c, &ddl, err);
    if (!rc)
        rc = mirror__exec_stmts(m, ddl, err);
    json_decref(ddl);
    char sql[256];
    snprintf(sql, sizeof sql, "DELETE FROM \"%s\"", c->table);
    if (!rc)
        rc = mdriver_exec(m->db, sql, NULL, 0, err);
    rc = rc ? mirror__settle(m, rc) : push_locked(m, c, src, totals, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int mirror_flush(mirror *m, const mirror_coll *c, const mirror_source *src, const json_t *ids,
                 json_t **out, storh_err *err)
{
    if (!json_is_array(ids))
        return storh_err_set(err, STORH_EINVAL, "ids must be an array of record ids.");
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
    {
        if (!json_is_string(v) || !uuid7_is_valid(json_string_value(v), json_string_length(v)))
            return storh_err_set(err, STORH_EINVAL, "ids[%zu]: Invalid UUIDv7 value.", i);
    }
    pthread_mutex_lock(&m->mu);
    int rc = mirror__connect_db(m, err);
    json_t *ddl = NULL;
    if (!rc)
        rc = mirror_ddl(m, c, &ddl, err);
    if (!rc)
        rc = mirror__exec_stmts(m, ddl, err);
    json_decref(ddl);
    if (!rc)
        rc = mdriver_exec(m->db, "BEGIN", NULL, 0, err);
    row_stmt ins = {BUF_INIT, 0};
    insert_sql(m, c, &ins);
    buf del = BUF_INIT;
    buf_printf(&del, "DELETE FROM \"%s\" WHERE \"id\" = %s", c->table,
               mirror__is_pg(m) ? "$1" : "?");
    json_t *seen = json_object();
    long upserted = 0, deleted = 0;
    json_array_foreach(ids, i, v)
    {
        const char *id = json_string_value(v);
        if (rc || json_object_get(seen, id))
            continue;
        json_object_set_new(seen, id, json_true());
        mparam p1 = {MPARAM_TEXT, id, strlen(id), 0, 0};
        rc = mdriver_exec(m->db, del.data, &p1, 1, err);
        json_t *data = NULL;
        int g = rc ? 0 : mirror__source_get(src, id, &data, err);
        if (!rc && g == 0) {
            rc = insert_row(m, c, &ins, id, data, err);
            upserted++;
        } else if (!rc && g == STORH_ENOTFOUND) {
            deleted++;
        } else if (!rc) {
            rc = g;
        }
        json_decref(data);
    }
    if (!rc)
        rc = mdriver_exec(m->db, "COMMIT", NULL, 0, err);
    else if (m->db) {
        storh_err ignore;
        mdriver_exec(m->db, "ROLLBACK", NULL, 0, &ignore);
    }
    json_decref(seen);
    buf_free(&ins.sql);
    buf_free(&del);
    rc = mirror__settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    if (!rc)
        *out =
            json_pack("{sIsI}", "upserted", (json_int_t)upserted, "deleted", (json_int_t)deleted);
    return rc;
}
