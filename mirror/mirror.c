#include "mirror.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buf.h"
#include "estats.h"
#include "sjson.h"
#include "xxhash.h"

#define DELETE_CHUNK 500
#define INSERT_BATCH 100 /* rows per multi-row INSERT */

static bool name_ok(const char *s, bool dash)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || (dash && *s == '-')))
            return false;
    return true;
}

static bool field_ok(const char *f)
{
    if (!((f[0] >= 'a' && f[0] <= 'z') || (f[0] >= 'A' && f[0] <= 'Z')) || !name_ok(f, false))
        return false;
    return strcasecmp(f, "id") && strcasecmp(f, "hash") && strcasecmp(f, "data");
}

void mirror_hash(const json_t *data, char out[33])
{
    buf b = BUF_INIT;
    sjson_encode(&b, data, 0, NULL);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(b.data ? b.data : "", b.len));
    static const char hexdig[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hexdig[c.digest[i] >> 4];
        out[2 * i + 1] = hexdig[c.digest[i] & 0xf];
    }
    out[32] = '\0';
    buf_free(&b);
}

static int add_coll(mirror *m, const char *name, bool is_log, const json_t *schema_j,
                    storh_err *err)
{
    if (!name_ok(name, true))
        return storh_err_set(err, STORH_EINVAL, "SQL mirror collection name is invalid: %s", name);
    char table[200];
    snprintf(table, sizeof table, "%s%s", m->prefix, name);
    for (char *p = table; *p; p++)
        if (*p == '-')
            *p = '_';
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->c[i]->table, table))
            return storh_err_set(err, STORH_EINVAL,
                                 "SQL mirror table for %s collides with collection %s: %s", name,
                                 m->c[i]->name, table);
    mirror_coll c = {0};
    if (schema_j) {
        int rc = schema_parse(schema_j, &c.sch, err);
        if (rc)
            return rc;
        for (size_t i = 0; i < c.sch.n; i++) {
            const schema_field *f = &c.sch.f[i];
            int bad = 0;
            if (f->type == SCHEMA_MIXED && f->index)
                bad = storh_err_set(err, STORH_EINVAL,
                                    "SQL mirror cannot index mixed schema field: %s", f->name);
            else if (f->type != SCHEMA_MIXED && !field_ok(f->name))
                bad = storh_err_set(err, STORH_EINVAL,
                                    "SQL mirror cannot map schema field name: %s", f->name);
            if (bad) {
                schema_free(&c.sch);
                return bad;
            }
        }
    }
    mirror_coll **n = realloc(m->c, (m->n + 1) * sizeof *n);
    mirror_coll *one = malloc(sizeof *one);
    if (n)
        m->c = n;
    if (!n || !one) {
        free(one);
        schema_free(&c.sch);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    c.name = strdup(name);
    c.table = strdup(table);
    c.is_log = is_log;
    c.mark = 0;
    *one = c;
    m->c[m->n++] = one;
    return 0;
}

int mirror_new(const char *name, const json_t *cfg, mirror **out, storh_err *err)
{
    mirror *m = calloc(1, sizeof *m);
    if (!m)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    pthread_mutex_init(&m->mu, NULL);
    m->last_push_ok = -1;
    const char *drv = json_string_value(json_object_get(cfg, "driver"));
    const char *prefix = json_string_value(json_object_get(cfg, "prefix"));
    const char *target = json_string_value(json_object_get(cfg, "path"));
    if (!target)
        target = json_string_value(json_object_get(cfg, "conninfo"));
    m->name = strdup(name);
    m->driver = strdup(drv ? drv : "sqlite");
    m->prefix = strdup(prefix ? prefix : "storh_");
    m->target = target ? strdup(target) : NULL;
    json_t *every = json_object_get(cfg, "push_every_seconds");
    m->push_every = json_is_integer(every) ? (int)json_integer_value(every) : 0;
    int rc = 0;
    if (strcmp(m->driver, "sqlite") && strcmp(m->driver, "postgres"))
        rc = storh_err_set(err, STORH_EINVAL, "mirrors.%s.driver: must be sqlite or postgres.",
                           name);
    else if (!m->target)
        rc = storh_err_set(err, STORH_EINVAL,
                           "mirrors.%s: needs \"path\" (sqlite) or "
                           "\"conninfo\" (postgres).",
                           name);
    else if (!name_ok(m->prefix, false) && m->prefix[0])
        rc =
            storh_err_set(err, STORH_EINVAL, "mirrors.%s.prefix must match ^[A-Za-z0-9_]*$.", name);
    json_t *cols = json_object_get(cfg, "collections");
    if (!rc && json_is_string(cols) && !strcmp(json_string_value(cols), "*")) {
        m->all_docs = true;
    } else if (!rc && json_is_object(cols)) {
        const char *cn;
        json_t *cv;
        json_object_foreach(cols, cn, cv)
        {
            const char *kind = json_string_value(json_object_get(cv, "kind"));
            if (kind && strcmp(kind, "doc") && strcmp(kind, "log")) {
                rc = storh_err_set(err, STORH_EINVAL, "mirrors.%s.collections.%s.kind: doc or log.",
                                   name, cn);
                break;
            }
            if ((rc = add_coll(m, cn, kind && !strcmp(kind, "log"), json_object_get(cv, "schema"),
                               err)))
                break;
        }
    } else if (!rc) {
        rc = storh_err_set(err, STORH_EINVAL,
                           "mirrors.%s.collections: an object of collections, or \"*\".", name);
    }
    if (rc) {
        mirror_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void mirror_free(mirror *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->c[i]->name);
        free(m->c[i]->table);
        schema_free(&m->c[i]->sch);
        free(m->c[i]);
    }
    free(m->c);
    mdriver_close(m->db);
    free(m->name);
    free(m->driver);
    free(m->target);
    free(m->prefix);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

const mirror_coll *mirror_find(mirror *m, const char *name, bool is_log, storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    const mirror_coll *found = NULL;
    for (size_t i = 0; i < m->n && !found; i++)
        if (!strcmp(m->c[i]->name, name))
            found = m->c[i];
    if (!found && m->all_docs && !is_log && add_coll(m, name, false, NULL, err) == 0)
        found = m->c[m->n - 1];
    else if (!found)
        storh_err_set(err, STORH_ENOTFOUND, "Unknown SQL mirror collection: %s", name);
    pthread_mutex_unlock(&m->mu);
    return found;
}

json_t *mirror_collections(mirror *m)
{
    json_t *out = json_object();
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n; i++)
        json_object_set_new(out, m->c[i]->name, json_boolean(m->c[i]->is_log));
    pthread_mutex_unlock(&m->mu);
    return out;
}

static int connect_db(mirror *m, storh_err *err)
{
    if (m->db)
        return 0;
    return mdriver_open(m->driver, m->target, &m->db, err);
}

static bool is_pg(const mirror *m)
{
    return !strcmp(m->driver, "postgres");
}

static const char *col_type(const mirror *m, const schema_field *f)
{
    switch (f->type) {
    case SCHEMA_STRING:
        return "TEXT";
    case SCHEMA_INT:
        return is_pg(m) ? "BIGINT" : "INTEGER";
    case SCHEMA_FLOAT:
        return is_pg(m) ? "DOUBLE PRECISION" : "REAL";
    case SCHEMA_BOOL:
        return is_pg(m) ? "BOOLEAN" : "INTEGER";
    default:
        return NULL;
    }
}

int mirror_ddl(const mirror *m, const mirror_coll *c, json_t **stmts, storh_err *err)
{
    (void)err;
    buf b = BUF_INIT;
    buf_printf(&b,
               "CREATE TABLE IF NOT EXISTS \"%s\" (\"id\" TEXT NOT NULL PRIMARY KEY, "
               "\"hash\" TEXT NOT NULL",
               c->table);
    for (size_t i = 0; i < c->sch.n; i++) {
        const char *t = col_type(m, &c->sch.f[i]);
        if (t)
            buf_printf(&b, ", \"%s\" %s", c->sch.f[i].name, t);
    }
    buf_printf(&b, ", \"data\" %s NOT NULL)", is_pg(m) ? "JSONB" : "TEXT");
    *stmts = json_array();
    json_array_append_new(*stmts, json_string(b.data));
    for (size_t i = 0; i < c->sch.n; i++) {
        const schema_field *f = &c->sch.f[i];
        if (!f->index || !col_type(m, f))
            continue;
        buf_reset(&b);
        char lower[128];
        size_t k = 0;
        for (; k < sizeof lower - 1 && f->name[k]; k++)
            lower[k] =
                (char)((f->name[k] >= 'A' && f->name[k] <= 'Z') ? f->name[k] + 32 : f->name[k]);
        lower[k] = '\0';
        buf_printf(&b, "CREATE %sINDEX IF NOT EXISTS \"%s_%s_idx\" ON \"%s\" (\"%s\")",
                   f->unique ? "UNIQUE " : "", c->table, lower, c->table, f->name);
        json_array_append_new(*stmts, json_string(b.data));
    }
    buf_free(&b);
    return 0;
}

static int exec_stmts(mirror *m, json_t *stmts, storh_err *err)
{
    size_t i;
    json_t *s;
    json_array_foreach(stmts, i, s)
    {
        int rc = mdriver_exec(m->db, json_string_value(s), NULL, 0, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* A failed connection is dropped so the next call reconnects. */
static int settle(mirror *m, int rc)
{
    if (rc == STORH_EUNAVAIL) {
        mdriver_close(m->db);
        m->db = NULL;
    }
    if (rc)
        m->failures++;
    return rc;
}

int mirror_install(mirror *m, const mirror_coll *c, storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    json_t *stmts = NULL;
    int rc = connect_db(m, err);
    if (!rc)
        rc = mirror_ddl(m, c, &stmts, err);
    if (!rc)
        rc = exec_stmts(m, stmts, err);
    json_decref(stmts);
    rc = settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int mirror_uninstall(mirror *m, const mirror_coll *c, storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = connect_db(m, err);
    char sql[256];
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS \"%s\"", c->table);
    if (!rc)
        rc = mdriver_exec(m->db, sql, NULL, 0, err);
    rc = settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* ---- rows ---- */

typedef struct row_stmt {
    buf sql;
    int ncols; /* id, hash, typed..., data */
} row_stmt;

static void insert_sql(const mirror *m, const mirror_coll *c, row_stmt *s)
{
    buf_printf(&s->sql, "INSERT INTO \"%s\" (\"id\", \"hash\"", c->table);
    s->ncols = 2;
    for (size_t i = 0; i < c->sch.n; i++)
        if (col_type(m, &c->sch.f[i])) {
            buf_printf(&s->sql, ", \"%s\"", c->sch.f[i].name);
            s->ncols++;
        }
    buf_appends(&s->sql, ", \"data\") VALUES (");
    s->ncols++;
    for (int i = 0; i < s->ncols; i++)
        buf_printf(&s->sql, is_pg(m) ? "%s$%d" : "%s?", i ? ", " : "", i + 1);
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
        if (!col_type(m, f))
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

static int collect_pair(void *ctx, int n, const char *const *v, const size_t *l)
{
    (void)l;
    if (n >= 2 && v[0] && v[1])
        json_object_set_new(ctx, v[0], json_string(v[1]));
    return 0;
}

/* ---- iteration over a source ---- */

typedef int (*each_fn)(void *ctx, const char *id, const json_t *data, storh_err *err);

static int each_record(const mirror_source *src, each_fn fn, void *ctx, storh_err *err)
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

static int source_get(const mirror_source *src, const char *id, json_t **data, storh_err *err)
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
            buf_printf(&sql, is_pg(m) ? "%s$%d" : "%s?", i ? ", " : "", k + i + 1);
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
            buf_printf(&sql, is_pg(m) ? "%s$%zu" : "%s?", j ? ", " : "", j + 1);
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

static void add_total(json_t *totals, const char *k, long v)
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
    int rc = connect_db(m, err);
    json_t *ddl = NULL;
    if (!rc)
        rc = mirror_ddl(m, c, &ddl, err);
    if (!rc)
        rc = exec_stmts(m, ddl, err); /* push works on a fresh database too */
    json_decref(ddl);
    if (!rc)
        rc = mdriver_exec(m->db, "BEGIN", NULL, 0, err);
    if (rc) {
        push_outcome(m, c, false, mark);
        return settle(m, rc);
    }
    push_ctx x = {m, c, json_object(), {BUF_INIT, 0}, BUF_INIT, json_array(), 0, 0, 0};
    insert_sql(m, c, &x.ins);
    buf_printf(&x.del, "DELETE FROM \"%s\" WHERE \"id\" = %s", c->table, is_pg(m) ? "$1" : "?");
    char sel[256];
    snprintf(sel, sizeof sel, "SELECT \"id\", \"hash\" FROM \"%s\"", c->table);
    rc = mdriver_query(m->db, sel, NULL, 0, collect_pair, x.rows, err);
    if (!rc)
        rc = each_record(src, push_one, &x, err);
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
        add_total(totals, "inserted", x.inserted);
        add_total(totals, "updated", x.updated);
        add_total(totals, "deleted", deleted);
        add_total(totals, "unchanged", x.unchanged);
        m->rows_pushed += (unsigned long long)(x.inserted + x.updated + deleted);
        m->pushes++;
        m->push_seconds += now_s() - t0;
    }
    push_outcome(m, c, rc == 0, mark);
    json_decref(x.rows);
    json_decref(x.pending);
    buf_free(&x.ins.sql);
    buf_free(&x.del);
    return settle(m, rc);
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
    int rc = connect_db(m, err);
    json_t *ddl = NULL;
    if (!rc)
        rc = mirror_ddl(m, c, &ddl, err);
    if (!rc)
        rc = exec_stmts(m, ddl, err);
    json_decref(ddl);
    char sql[256];
    snprintf(sql, sizeof sql, "DELETE FROM \"%s\"", c->table);
    if (!rc)
        rc = mdriver_exec(m->db, sql, NULL, 0, err);
    rc = rc ? settle(m, rc) : push_locked(m, c, src, totals, err);
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
    int rc = connect_db(m, err);
    json_t *ddl = NULL;
    if (!rc)
        rc = mirror_ddl(m, c, &ddl, err);
    if (!rc)
        rc = exec_stmts(m, ddl, err);
    json_decref(ddl);
    if (!rc)
        rc = mdriver_exec(m->db, "BEGIN", NULL, 0, err);
    row_stmt ins = {BUF_INIT, 0};
    insert_sql(m, c, &ins);
    buf del = BUF_INIT;
    buf_printf(&del, "DELETE FROM \"%s\" WHERE \"id\" = %s", c->table, is_pg(m) ? "$1" : "?");
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
        int g = rc ? 0 : source_get(src, id, &data, err);
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
    rc = settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    if (!rc)
        *out =
            json_pack("{sIsI}", "upserted", (json_int_t)upserted, "deleted", (json_int_t)deleted);
    return rc;
}

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
    int g = source_get(x->src, v[0], &local, NULL);
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
    int rc = connect_db(m, err);
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
        add_total(totals, "written", x.written);
        add_total(totals, "unchanged", x.unchanged);
    }
    rc = settle(m, rc);
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
    int rc = connect_db(m, err);
    verify_ctx x = {json_object(), 0, 0, 0};
    /* an uninstalled table is a finding (every record missing), not a failure */
    bool installed = false;
    mparam name = {MPARAM_TEXT, c->table, strlen(c->table), 0, 0};
    if (!rc)
        rc = mdriver_query(m->db, m->db->ops->has_table_sql, &name, 1, found_row, &installed, err);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT \"id\", \"hash\" FROM \"%s\"", c->table);
    if (!rc && installed)
        rc = mdriver_query(m->db, sql, NULL, 0, collect_pair, x.rows, err);
    rc = settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    if (!rc)
        rc = each_record(src, verify_one, &x, err);
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
    int rc = connect_db(m, err);
    if (!rc)
        rc = mdriver_query(m->db, sql, p, np, first_value, out, err);
    rc = settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
