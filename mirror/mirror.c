#include "mirror.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "sjson.h"
#include "mmemo.h"
#include "xxhash.h"
#include "mirror_int.h"

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

void mirror__hash_text(const char *text, size_t len, char out[33])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(text ? text : "", len));
    static const char hexdig[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hexdig[c.digest[i] >> 4];
        out[2 * i + 1] = hexdig[c.digest[i] & 0xf];
    }
    out[32] = '\0';
}

void mirror_hash(const json_t *data, char out[33])
{
    buf b = BUF_INIT;
    sjson_encode(&b, data, 0, NULL);
    mirror__hash_text(b.data, b.len, out);
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
    if (!c.name || !c.table) {
        free(c.name);
        free(c.table);
        free(one);
        schema_free(&c.sch);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
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
    if (!m->name || !m->driver || !m->prefix || (target && !m->target))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    else if (strcmp(m->driver, "sqlite") && strcmp(m->driver, "postgres"))
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
        json_object_foreach (cols, cn, cv) {
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
    mirror__kept_free(m);
    for (size_t i = 0; i < m->n; i++) {
        free(m->c[i]->name);
        free(m->c[i]->table);
        schema_free(&m->c[i]->sch);
        if (m->c[i]->memo)
            mmemo_free(m->c[i]->memo);
        free(m->c[i]->memo);
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

struct mmemo *mirror__memo(mirror *m, const mirror_coll *c)
{
    if (c->is_log)
        return NULL;
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i] == c) {
            if (!m->c[i]->memo)
                m->c[i]->memo = calloc(1, sizeof(mmemo));
            return m->c[i]->memo;
        }
    return NULL;
}

void mirror__kept_drop(mirror *m, const mirror_coll *c)
{
    for (size_t i = 0; i < m->n; i++)
        if ((!c || m->c[i] == c) && m->c[i]->kept)
            m->c[i]->kept->valid = false;
}

void mirror__kept_free(mirror *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i]->kept) {
            idmap_free(&m->c[i]->kept->rows);
            free(m->c[i]->kept);
            m->c[i]->kept = NULL;
        }
}

int mirror__connect_db(mirror *m, storh_err *err)
{
    if (m->db)
        return 0;
    mirror__kept_drop(m, NULL); /* what was kept is of another connection */
    return mdriver_open(m->driver, m->target, &m->db, err);
}

bool mirror__is_pg(const mirror *m)
{
    return !strcmp(m->driver, "postgres");
}

const char *mirror__col_type(const mirror *m, const schema_field *f)
{
    switch (f->type) {
    case SCHEMA_STRING:
        return "TEXT";
    case SCHEMA_INT:
        return mirror__is_pg(m) ? "BIGINT" : "INTEGER";
    case SCHEMA_FLOAT:
        return mirror__is_pg(m) ? "DOUBLE PRECISION" : "REAL";
    case SCHEMA_BOOL:
        return mirror__is_pg(m) ? "BOOLEAN" : "INTEGER";
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
        const char *t = mirror__col_type(m, &c->sch.f[i]);
        if (t)
            buf_printf(&b, ", \"%s\" %s", c->sch.f[i].name, t);
    }
    buf_printf(&b, ", \"data\" %s NOT NULL)", mirror__is_pg(m) ? "JSONB" : "TEXT");
    *stmts = json_array();
    json_array_append_new(*stmts, json_string(b.data));
    for (size_t i = 0; i < c->sch.n; i++) {
        const schema_field *f = &c->sch.f[i];
        if (!f->index || !mirror__col_type(m, f))
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

int mirror__exec_stmts(mirror *m, json_t *stmts, storh_err *err)
{
    size_t i;
    json_t *s;
    json_array_foreach (stmts, i, s) {
        int rc = mdriver_exec(m->db, json_string_value(s), NULL, 0, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* A failed connection is dropped so the next call reconnects. */
int mirror__settle(mirror *m, int rc)
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
    int rc = mirror__connect_db(m, err);
    mirror__kept_drop(m, c);
    if (!rc)
        rc = mirror_ddl(m, c, &stmts, err);
    if (!rc)
        rc = mirror__exec_stmts(m, stmts, err);
    json_decref(stmts);
    rc = mirror__settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int mirror_uninstall(mirror *m, const mirror_coll *c, storh_err *err)
{
    pthread_mutex_lock(&m->mu);
    int rc = mirror__connect_db(m, err);
    char sql[256];
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS \"%s\"", c->table);
    mirror__kept_drop(m, c);
    if (!rc)
        rc = mdriver_exec(m->db, sql, NULL, 0, err);
    rc = mirror__settle(m, rc);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
