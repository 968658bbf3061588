/* docmaint: the DocStore's maintenance side: stats, health/verify (corrupt
 * records and index drift against a full scan), repair (quarantine, reindex),
 * reindex, compact, index definitions and the schema. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docstore.h"
#include "docstore_int.h"
#include "sjson.h"
#include "writers.h"

typedef struct scan_totals {
    long long records, bytes, corrupt;
} scan_totals;

/* A full scan; build (may be NULL) receives every readable record; with
 * bytes, t->bytes adds up the files' sizes (a stat each: stats and health
 * report it, a rebuild does not need it). */
static int scan(docstore *ds, scan_totals *t, bool bytes, docindex_build *build,
                json_t *corrupt_ids, storh_err *err)
{
    memset(t, 0, sizeof *t);
    docstore_iter *it;
    int rc = docstore_iter_open(ds, NULL, &it, err);
    if (rc)
        return rc;
    t->bytes = bytes ? docstore_iter_bytes(it) : 0;
    /* an index build reads the indexed fields only */
    const char **fields = build && ds->ix.n ? malloc(ds->ix.n * sizeof *fields) : NULL;
    for (size_t i = 0; fields && i < ds->ix.n; i++)
        fields[i] = ds->ix.defs[i].field;
    if (fields)
        docstore_iter_fields(it, fields, ds->ix.n);
    const char *id;
    json_t *data;
    for (;;) {
        rc = docstore_iter_next(it, &id, &data, NULL);
        if (rc == 0)
            break;
        if (rc == 1) {
            t->records++;
            /* a record the build cannot take (out of memory) fails the
             * scan: a rebuild must not publish an index missing it */
            int add = build ? docindex_build_add(build, id, data, err) : 0;
            json_decref(data);
            if (add) {
                docstore_iter_close(it);
                free(fields);
                return add;
            }
        } else if (rc == STORH_ECORRUPT) {
            t->corrupt++;
            if (corrupt_ids)
                json_array_append_new(corrupt_ids, json_string(id));
        } else {
            docstore_iter_close(it);
            free(fields);
            return storh_err_set(err, rc, "Could not read records of %s", ds->dir);
        }
    }
    docstore_iter_close(it);
    free(fields);
    return 0;
}

static json_t *stats_json(docstore *ds, const scan_totals *t)
{
    pthread_rwlock_rdlock(&ds->ixlock);
    size_t n = ds->ix.n;
    pthread_rwlock_unlock(&ds->ixlock);
    return json_pack("{sIsIsIsI}", "records", (json_int_t)t->records, "bytes", (json_int_t)t->bytes,
                     "corrupt", (json_int_t)t->corrupt, "indexes", (json_int_t)n);
}

int docstore_stats(docstore *ds, json_t **out, storh_err *err)
{
    scan_totals t = {0};
    int rc = scan(ds, &t, true, NULL, NULL, err);
    if (rc)
        return rc;
    *out = stats_json(ds, &t);
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

int docstore_health(docstore *ds, json_t **out, storh_err *err)
{
    pthread_rwlock_rdlock(&ds->ixlock);
    docindex_build *b = NULL;
    int rc = docindex_active(&ds->ix) ? docindex_build_begin(&ds->ix, &b, err) : 0;
    scan_totals t = {0};
    if (!rc)
        rc = scan(ds, &t, true, b, NULL, err);
    json_t *errors = json_array();
    if (!rc && t.corrupt > 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "Corrupt records: %lld", t.corrupt);
        json_array_append_new(errors, json_string(msg));
    } else if (!rc && b) {
        rc = docindex_verify_against(b, errors, err);
    }
    docindex_build_abort(b);
    pthread_rwlock_unlock(&ds->ixlock);
    if (rc) {
        json_decref(errors);
        return rc;
    }
    *out = json_pack("{sbsoso}", "ok", json_array_size(errors) == 0, "errors", errors, "stats",
                     stats_json(ds, &t));
    return *out ? 0 : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

/* Under the lock: rebuild every entry from the records on disk; with
 * save_defs, the definitions merged in memory are written with the entries
 * (and dropped again if the build fails). */
static int reindex_locked(docstore *ds, bool save_defs, json_t **out, storh_err *err)
{
    docindex_build *b;
    pthread_rwlock_wrlock(&ds->ixlock);
    int rc = docindex_build_begin(&ds->ix, &b, err);
    scan_totals t = {0};
    if (!rc)
        rc = scan(ds, &t, false, b, NULL, err);
    if (!rc)
        rc = docindex_build_finish(b, save_defs, err);
    else
        docindex_build_abort(b);
    if (rc && save_defs)
        (void)docindex_reload(&ds->ix, NULL); /* the manifest on disk, as it was */
    size_t n = ds->ix.n;
    pthread_rwlock_unlock(&ds->ixlock);
    /* the records did not change (validated hits stay right); an
     * unvalidated cache starts again from the files the indexes saw */
    if (ds->cache && rcache_get_mode(ds->cache) == RCACHE_TRUST)
        rcache_clear(ds->cache);
    if (!rc && out)
        *out = json_pack("{sIsI}", "fields", (json_int_t)n, "entries", (json_int_t)t.records);
    return rc;
}

int docstore_reindex_locked(docstore *ds, json_t **out, storh_err *err)
{
    return reindex_locked(ds, false, out, err);
}

int docstore_reindex(docstore *ds, json_t **out, storh_err *err)
{
    fsx_lock l;
    int rc = docstore_lock(ds, &l, err);
    if (rc)
        return rc;
    rc = docstore_reindex_locked(ds, out, err);
    docstore_unlock(ds, &l);
    return rc;
}

static int quarantine(docstore *ds, const char *id, storh_err *err)
{
    char src[PATH_MAX], dst[PATH_MAX] = "", dir[PATH_MAX];
    docstore_record_path(ds, id, src);
    int rc = fsx_pathf(dir, err, "%s/.storh/corrupt", ds->dir);
    if (!rc)
        rc = fsx_mkdirs(dir, true, err);
    if (!rc)
        rc = fsx_pathf(dst, err, "%s/%s.jsonc", dir, id);
    if (!rc && access(dst, F_OK) == 0) { /* that name is taken */
        char hex[9];
        fsx_random_hex(hex, 4, NULL);
        rc = fsx_pathf(dst, err, "%s/%s-%s.jsonc", dir, id, hex);
    }
    if (!rc && rename(src, dst) != 0)
        rc = storh_err_sys(err, errno, "Could not quarantine corrupt storage record: %s", src);
    char sdir[PATH_MAX];
    fsx_dirname(src, sdir, sizeof sdir);
    if (!rc)
        rc = fsx_fsync_dir(dir, err);
    if (!rc)
        rc = fsx_fsync_dir(sdir, err);
    return rc;
}

int docstore_repair(docstore *ds, json_t **out, storh_err *err)
{
    fsx_lock l;
    int rc = docstore_lock(ds, &l, err);
    if (rc)
        return rc;
    writers_sweep(ds->dir, NULL);
    json_t *bad = json_array();
    scan_totals t = {0};
    rc = scan(ds, &t, false, NULL, bad, err);
    size_t i;
    json_t *id;
    json_array_foreach (bad, i, id) {
        if (!rc)
            rc = quarantine(ds, json_string_value(id), err);
    }
    json_t *re = NULL;
    if (!rc)
        rc = docstore_reindex_locked(ds, &re, err);
    docstore_unlock(ds, &l);
    if (!rc)
        *out = json_pack("{sbsIso}", "ok", 1, "quarantined", (json_int_t)json_array_size(bad),
                         "reindexed", re);
    json_decref(bad);
    return rc;
}

int docstore_compact(docstore *ds, json_t **out, storh_err *err)
{
    scan_totals t = {0};
    int rc = scan(ds, &t, false, NULL, NULL, err);
    if (rc)
        return rc;
    *out = json_pack("{sbsI}", "ok", 1, "records", (json_int_t)t.records);
    return 0;
}

json_t *docstore_indexes(docstore *ds)
{
    pthread_rwlock_rdlock(&ds->ixlock);
    json_t *fields = json_array();
    for (size_t i = 0; i < ds->ix.n; i++)
        json_array_append_new(fields,
                              json_pack("{sssbsb}", "field", ds->ix.defs[i].field, "unique",
                                        ds->ix.defs[i].unique, "range", ds->ix.defs[i].range));
    pthread_rwlock_unlock(&ds->ixlock);
    return json_pack("{so}", "fields", fields);
}

/* Under the lock: merge defs, rebuild when they changed. */
static int define_locked(docstore *ds, const idxdef *defs, size_t n, bool rebuild, bool *changed,
                         storh_err *err)
{
    pthread_rwlock_wrlock(&ds->ixlock);
    int rc = docindex_merge(&ds->ix, defs, n, changed, err);
    /* a rebuild publishes the manifest with its entries: one durable step */
    bool with_build = !rc && *changed && rebuild;
    if (!rc && !with_build)
        rc = docindex_save(&ds->ix, err);
    if (rc)
        (void)docindex_reload(&ds->ix, NULL);
    pthread_rwlock_unlock(&ds->ixlock);
    if (with_build)
        rc = reindex_locked(ds, true, NULL, err);
    return rc;
}

int docstore_define_indexes(docstore *ds, const json_t *body, bool rebuild, json_t **out,
                            storh_err *err)
{
    json_t *fields = json_object_get(body, "fields");
    if (!json_is_array(fields))
        return storh_err_set(err, STORH_EINVAL, "Body needs \"fields\": [{\"field\":...}].");
    size_t n = json_array_size(fields);
    idxdef *defs = calloc(n + 1, sizeof *defs);
    if (!defs)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    size_t i;
    json_t *f;
    int rc = 0;
    json_array_foreach (fields, i, f) {
        json_t *name = json_object_get(f, "field");
        json_t *u = json_object_get(f, "unique"), *r = json_object_get(f, "range");
        if (!json_is_string(name) || (u && !json_is_boolean(u)) || (r && !json_is_boolean(r))) {
            rc = storh_err_set(err, STORH_EINVAL,
                               "fields[%zu]: needs a string field and boolean unique/range.", i);
            break;
        }
        defs[i] = (idxdef){(char *)json_string_value(name), json_is_true(u), json_is_true(r)};
    }
    fsx_lock l;
    bool changed = false;
    if (!rc && !(rc = docstore_lock(ds, &l, err))) {
        char data[PATH_MAX];
        fsx_pathf(data, NULL, "%s/.storh", ds->dir);
        rc = fsx_mkdirs(data, true, err);
        if (!rc)
            rc = define_locked(ds, defs, n, rebuild, &changed, err);
        docstore_unlock(ds, &l);
    }
    free(defs);
    if (rc)
        return rc;
    json_t *cur = docstore_indexes(ds);
    *out = json_pack("{sbsO}", "changed", changed, "fields", json_object_get(cur, "fields"));
    json_decref(cur);
    return 0;
}

json_t *docstore_schema(docstore *ds)
{
    pthread_rwlock_rdlock(&ds->ixlock);
    json_t *j = schema_to_json(&ds->sch);
    pthread_rwlock_unlock(&ds->ixlock);
    return j;
}

int docstore_set_schema(docstore *ds, const json_t *body, json_t **out, storh_err *err)
{
    schema s;
    int rc = schema_parse(body, &s, err);
    if (rc)
        return rc;
    json_t *j = schema_to_json(&s);
    buf b = BUF_INIT;
    rc = sjson_encode_doc(&b, j, SJSON_PRETTY, err);
    json_decref(j);
    fsx_lock l;
    if (!rc && !(rc = docstore_lock(ds, &l, err))) {
        char p[PATH_MAX];
        rc = fsx_pathf(p, err, "%s/.storh/schema.jsonc", ds->dir);
        if (!rc)
            rc = fsx_publish(p, b.data, b.len, err);
        if (!rc) {
            pthread_rwlock_wrlock(&ds->ixlock);
            schema_free(&ds->sch);
            ds->sch = s;
            s.f = NULL;
            s.n = 0;
            pthread_rwlock_unlock(&ds->ixlock);
            idxdef *defs;
            size_t n = schema_index_defs(&ds->sch, &defs);
            bool changed = false;
            if (n)
                rc = define_locked(ds, defs, n, true, &changed, err);
            free(defs);
        }
        docstore_unlock(ds, &l);
    }
    schema_free(&s);
    buf_free(&b);
    if (!rc)
        *out = docstore_schema(ds);
    return rc;
}
