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

/* One row whose canonical text and hash the caller has made. */
static int insert_row(mirror *m, const mirror_coll *c, const row_stmt *ins, const char *id,
                      const json_t *data, const buf *text, const char *hash, storh_err *err)
{
    mparam p[40];
    if (ins->ncols > 40)
        return storh_err_set(err, STORH_EINVAL, "Too many typed columns.");
    int np = row_params(m, c, id, hash, text, data, p);
    return mdriver_exec(m->db, ins->sql.data, p, np, err);
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

/* A row waiting for the next multi-row INSERT: its canonical text and hash
 * made once, when the record was compared. */
typedef struct pend_row {
    char *id;
    json_t *data;
    buf text;
    char hash[33];
} pend_row;

typedef struct push_ctx {
    mirror *m;
    const mirror_coll *c;
    json_t *rows; /* id -> hash, removed as records are seen */
    row_stmt ins;
    buf del;
    buf text;       /* the current record's canonical text */
    pend_row *pend; /* INSERT_BATCH rows waiting for one multi-row INSERT */
    size_t npend;
    buf batch; /* the multi-row INSERT of batch_n rows, made once */
    size_t batch_n;
    long inserted, updated, unchanged;
} push_ctx;

static void clear_pending(push_ctx *x)
{
    for (size_t r = 0; r < x->npend; r++) {
        free(x->pend[r].id);
        json_decref(x->pend[r].data);
        buf_free(&x->pend[r].text);
    }
    x->npend = 0;
}

/* The INSERT of n rows into x->batch (kept while n stays the same). */
static void batch_sql(push_ctx *x, size_t n)
{
    if (x->batch_n == n && x->batch.len)
        return;
    bool pg = mirror__is_pg(x->m);
    int cols = x->ins.ncols;
    buf_reset(&x->batch);
    const char *values = strstr(x->ins.sql.data, " VALUES (");
    buf_append(&x->batch, x->ins.sql.data, (size_t)(values - x->ins.sql.data));
    buf_appends(&x->batch, " VALUES ");
    for (size_t r = 0, k = 0; r < n; r++) {
        buf_appends(&x->batch, r ? ", (" : "(");
        for (int i = 0; i < cols; i++, k++) {
            if (i)
                buf_appends(&x->batch, ", ");
            if (pg)
                buf_printf(&x->batch, "$%zu", k + 1);
            else
                buf_appendc(&x->batch, '?');
        }
        buf_appendc(&x->batch, ')');
    }
    x->batch_n = n;
}

/* Inserts the pending rows with one statement. */
static int flush_inserts(push_ctx *x, storh_err *err)
{
    size_t n = x->npend;
    if (!n)
        return 0;
    int cols = x->ins.ncols;
    mparam *p = calloc(n * (size_t)cols, sizeof *p);
    batch_sql(x, n);
    int rc = p && !buf_failed(&x->batch) ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    for (size_t r = 0; !rc && r < n; r++) {
        pend_row *w = &x->pend[r];
        row_params(x->m, x->c, w->id, w->hash, &w->text, w->data, p + r * (size_t)cols);
    }
    if (!rc)
        rc = mdriver_exec(x->m->db, x->batch.data, p, (int)n * cols, err);
    free(p);
    clear_pending(x);
    return rc;
}

static int push_one(void *p, const char *id, const json_t *data, storh_err *err)
{
    push_ctx *x = p;
    buf_reset(&x->text);
    int rc = sjson_encode(&x->text, data, 0, err);
    if (rc)
        return rc;
    char hash[33];
    mirror__hash_text(x->text.data, x->text.len, hash);
    json_t *have = json_object_get(x->rows, id);
    if (have && !strcmp(json_string_value(have), hash)) {
        x->unchanged++;
        json_object_del(x->rows, id);
        return 0;
    }
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
    pend_row *w = &x->pend[x->npend];
    *w = (pend_row){strdup(id), json_incref((json_t *)data), x->text, {0}};
    x->text = (buf)BUF_INIT; /* the row owns the text now */
    memcpy(w->hash, hash, sizeof hash);
    x->npend++;
    if (!w->id)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    /* SQLite binds at most 32766 parameters, PostgreSQL 65535 */
    if (x->npend >= INSERT_BATCH || (x->npend + 1) * (size_t)x->ins.ncols > 30000)
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
    json_object_foreach (rows, id, v)
        ids[k++] = id;
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

/* Under mu: push in one transaction; any failure rolls it back. A rebuild
 * empties the table first, in that same transaction, so a rebuild that
 * fails leaves the mirror as it was. */
static int push_locked(mirror *m, const mirror_coll *c, const mirror_source *src, bool rebuild,
                       json_t *totals, storh_err *err)
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
        rc = mdriver_begin_write(m->db, err);
    if (rc) {
        push_outcome(m, c, false, mark);
        return mirror__settle(m, rc);
    }
    push_ctx x = {m,
                  c,
                  json_object(),
                  {BUF_INIT, 0},
                  BUF_INIT,
                  BUF_INIT,
                  calloc(INSERT_BATCH, sizeof(pend_row)),
                  0,
                  BUF_INIT,
                  0,
                  0,
                  0,
                  0};
    if (!x.rows || !x.pend)
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    insert_sql(m, c, &x.ins);
    buf_printf(&x.del, "DELETE FROM \"%s\" WHERE \"id\" = %s", c->table,
               mirror__is_pg(m) ? "$1" : "?");
    char sel[256];
    if (rebuild) {
        snprintf(sel, sizeof sel, "DELETE FROM \"%s\"", c->table);
        if (!rc)
            rc = mdriver_exec(m->db, sel, NULL, 0, err); /* the table is empty: nothing to read */
    } else {
        snprintf(sel, sizeof sel, "SELECT \"id\", \"hash\" FROM \"%s\"", c->table);
        if (!rc)
            rc = mdriver_query(m->db, sel, NULL, 0, mirror__collect_pair, x.rows, err);
    }
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
    if (x.pend)
        clear_pending(&x);
    free(x.pend);
    buf_free(&x.text);
    buf_free(&x.batch);
    buf_free(&x.ins.sql);
    buf_free(&x.del);
    return mirror__settle(m, rc);
}

int mirror_push(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = push_locked(m, c, src, false, totals, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int mirror_rebuild(mirror *m, const mirror_coll *c, const mirror_source *src, json_t *totals,
                   storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = push_locked(m, c, src, true, totals, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* The hash of the row of one id (empty when there is none). */
static int row_hash(void *ctx, int n, const char *const *v, const size_t *l)
{
    if (n >= 1 && v[0] && l[0] < 33)
        memcpy(ctx, v[0], l[0] + 1);
    return 0;
}

/* One id of a flush: a row whose hash matches the record's is left as it
 * is (no write, so a flush of unchanged records commits nothing); any other
 * row is replaced, or deleted when the record is gone. */
static int flush_one(mirror *m, const mirror_coll *c, const mirror_source *src, const row_stmt *ins,
                     const char *sel, const char *del, const char *id, buf *text, long *upserted,
                     long *deleted, storh_err *err)
{
    mparam p1 = {MPARAM_TEXT, id, strlen(id), 0, 0};
    char have[33] = "";
    int rc = mdriver_query(m->db, sel, &p1, 1, row_hash, have, err);
    json_t *data = NULL;
    int g = rc ? 0 : mirror__source_get(src, id, &data, err);
    if (rc || (g && g != STORH_ENOTFOUND))
        return rc ? rc : g;
    if (g == STORH_ENOTFOUND) {
        (*deleted)++;
        return have[0] ? mdriver_exec(m->db, del, &p1, 1, err) : 0;
    }
    (*upserted)++;
    buf_reset(text);
    char hash[33];
    rc = sjson_encode(text, data, 0, err);
    if (!rc)
        mirror__hash_text(text->data, text->len, hash);
    if (!rc && strcmp(have, hash)) {
        if (have[0])
            rc = mdriver_exec(m->db, del, &p1, 1, err);
        if (!rc)
            rc = insert_row(m, c, ins, id, data, text, hash, err);
    }
    json_decref(data);
    return rc;
}

int mirror_flush(mirror *m, const mirror_coll *c, const mirror_source *src, const json_t *ids,
                 json_t **out, storh_err *err)
{
    if (!json_is_array(ids))
        return storh_err_set(err, STORH_EINVAL, "ids must be an array of record ids.");
    size_t i;
    json_t *v;
    json_array_foreach (ids, i, v) {
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
        rc = mdriver_begin_write(m->db, err);
    row_stmt ins = {BUF_INIT, 0};
    insert_sql(m, c, &ins);
    const char *ph = mirror__is_pg(m) ? "$1" : "?";
    buf del = BUF_INIT, sel = BUF_INIT, text = BUF_INIT;
    buf_printf(&del, "DELETE FROM \"%s\" WHERE \"id\" = %s", c->table, ph);
    buf_printf(&sel, "SELECT \"hash\" FROM \"%s\" WHERE \"id\" = %s", c->table, ph);
    json_t *seen = json_object();
    long upserted = 0, deleted = 0;
    json_array_foreach (ids, i, v) {
        const char *id = json_string_value(v);
        if (rc || json_object_get(seen, id))
            continue;
        json_object_set_new(seen, id, json_true());
        rc = flush_one(m, c, src, &ins, sel.data, del.data, id, &text, &upserted, &deleted, err);
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
    buf_free(&sel);
    buf_free(&text);
    rc = mirror__settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    if (!rc)
        *out =
            json_pack("{sIsI}", "upserted", (json_int_t)upserted, "deleted", (json_int_t)deleted);
    return rc;
}
