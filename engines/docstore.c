/* docstore: opening and closing a DocStore (index and schema load, crash
 * recovery of writers and bulks), its record cache, the record encoding and
 * reads; writes are in docwrite.c, listing in doclist.c (docstore_int.h). */
#include "docstore.h"

#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docjournal.h"
#include "docstore_int.h"
#include "estats.h"
#include "fault.h"
#include "fsx.h"
#include "reccanon.h"
#include "recfile.h"
#include "sjson.h"
#include "writers.h"

static int load_schema(docstore *ds, storh_err *err)
{
    char p[PATH_MAX];
    int rc = fsx_pathf(p, err, "%s/.storh/schema.jsonc", ds->dir);
    buf b = BUF_INIT;
    if (!rc)
        rc = fsx_read_all(p, &b, err);
    if (rc == STORH_ENOTFOUND) {
        buf_free(&b);
        return 0;
    }
    json_t *j = rc ? NULL : sjson_decode_jsonc_object(b.data, b.len, err);
    buf_free(&b);
    if (!rc && !j)
        rc = STORH_ECORRUPT;
    if (!rc)
        rc = schema_parse(j, &ds->sch, err);
    json_decref(j);
    return rc;
}

/* Bulk writes a crash interrupted: committed ones are finished (and the
 * indexes rebuilt, since their updates may be half done), the rest dropped. */
static int recover_bulks(docstore *ds, bool writer_died, storh_err *err)
{
    char p[PATH_MAX];
    struct stat st;
    int rc = fsx_pathf(p, err, "%s/.storh/bulk", ds->dir);
    if (rc || stat(p, &st) != 0)
        return rc;
    fsx_lock l;
    if ((rc = docstore_lock(ds, &l, err)))
        return rc;
    bool rolled = false;
    rc = docjournal_recover(ds->dir, writer_died, &rolled, err);
    if (!rc && rolled && docindex_active(&ds->ix))
        rc = docstore_reindex_locked(ds, NULL, err);
    docstore_unlock(ds, &l);
    return rc;
}

int docstore_open(const char *root, const char *name, docstore **out, storh_err *err)
{
    docstore *ds = calloc(1, sizeof *ds);
    if (!ds)
        return storh_err_oom(err);
    size_t rl = strlen(root);
    while (rl > 1 && (root[rl - 1] == '/' || root[rl - 1] == '\\'))
        rl--;
    ds->dir = malloc(rl + strlen(name) + 2);
    if (!ds->dir) {
        free(ds);
        return storh_err_oom(err);
    }
    sprintf(ds->dir, "%.*s/%s", (int)rl, root, name);
    ds->dirlen = strlen(ds->dir);
    if (ds->dirlen + 100 >= PATH_MAX) { /* room for data/xx/<id>.jsonc and temps */
        free(ds->dir);
        free(ds);
        return storh_err_set(err, STORH_EINVAL, "Collection path too long.");
    }
    pthread_mutex_init(&ds->mu, NULL);
    pthread_rwlock_init(&ds->ixlock, NULL);
    docgroup_init(&ds->grp);
    int rc = docindex_load(&ds->ix, ds->dir, err);
    if (!rc)
        rc = load_schema(ds, err);
    struct stat st;
    /* A writer that died (a crash, a power cut) may have made a record
     * durable without its index entries or the reverse: the indexes are
     * rebuilt from the records before its marker goes. */
    if (!rc && docindex_active(&ds->ix) && writers_any_stale(ds->dir))
        rc = docstore_reindex(ds, NULL, err);
    bool died = false;
    if (!rc && stat(ds->dir, &st) == 0)
        rc = writers_cleanup_on_open(ds->dir, &died, err);
    if (!rc)
        rc = recover_bulks(ds, died, err);
    if (rc) {
        docstore_close(ds);
        return rc;
    }
    *out = ds;
    return 0;
}

void docstore_close(docstore *ds)
{
    if (!ds)
        return;
    if (ds->ready)
        writers_unregister(ds->dir, ds->identity);
    docindex_free(&ds->ix);
    schema_free(&ds->sch);
    rcache_free(ds->cache);
    docgroup_destroy(&ds->grp);
    pthread_rwlock_destroy(&ds->ixlock);
    pthread_mutex_destroy(&ds->mu);
    free(ds->dir);
    free(ds);
}

const char *docstore_dir(const docstore *ds)
{
    return ds->dir;
}

bool docstore_exists(const docstore *ds)
{
    struct stat st;
    return stat(ds->dir, &st) == 0 && S_ISDIR(st.st_mode);
}

int docstore_set_cache(docstore *ds, int mode, size_t max_entries, size_t max_bytes, storh_err *err)
{
    rcache *c = rcache_new((rcache_mode)mode, max_entries, max_bytes);
    if (!c)
        return storh_err_oom(err);
    rcache_watch(c, ds->dir);
    rcache_free(ds->cache);
    ds->cache = c;
    return 0;
}

int docstore_prepare_locked(docstore *ds, storh_err *err)
{
    if (ds->ready)
        return 0;
    char data[PATH_MAX];
    int rc = fsx_pathf(data, err, "%s/data", ds->dir);
    if (!rc)
        rc = fsx_mkdirs(data, true, err);
    if (!rc)
        rc = writers_cleanup_on_open(ds->dir, NULL, err);
    if (!rc)
        rc = writers_identity(ds->identity, err);
    if (!rc)
        rc = writers_register(ds->dir, ds->identity, err);
    if (!rc)
        ds->ready = true;
    return rc;
}

void docstore_record_path(const docstore *ds, const char *id, char *out)
{
    /* <dir>/data/<id[24..25]>/<id>.jsonc built by copies: a cache hit's
     * path, so no format parsing (open checked that it fits PATH_MAX) */
    size_t dl = ds->dirlen, il = strlen(id);
    if (dl + il + 20 >= PATH_MAX) {
        fsx_pathf(out, NULL, "%s/data/%c%c/%s.jsonc", ds->dir, id[24], id[25], id);
        return;
    }
    char *p = out;
    memcpy(p, ds->dir, dl);
    p += dl;
    memcpy(p, "/data/", 6);
    p += 6;
    p[0] = id[24];
    p[1] = id[25];
    p[2] = '/';
    p += 3;
    memcpy(p, id, il);
    p += il;
    memcpy(p, ".jsonc", 7);
}

int docstore_encode_record(buf *out, const char *id, const json_t *data, storh_err *err)
{
    buf_append(out, "{\"id\":\"", 7);
    buf_appends(out, id);
    buf_append(out, "\",\"data\":", 9);
    int rc = sjson_encode(out, data, 0, err);
    if (rc)
        return rc;
    buf_append(out, "}\n", 2);
    return buf_failed(out) ? storh_err_oom(err) : 0;
}

int docstore_decode_record(const char *bytes, size_t len, const char *expect_id, json_t **data,
                           storh_err *err)
{
    /* the common case, a file the encoder wrote, without jansson's parser */
    if (uuid7_is_valid(expect_id, strlen(expect_id)) &&
        (*data = reccanon_decode(bytes, len, expect_id)))
        return 0;
    json_t *root = sjson_loadb(bytes, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (root) {
        if (!sjson_top_keys_ok(root)) {
            json_decref(root);
            return storh_err_set(err, STORH_ECORRUPT, "Corrupt storage record: %s", expect_id);
        }
    } else {
        storh_err jerr;
        root = sjson_decode_jsonc_object(bytes, len, &jerr);
        if (!root)
            return storh_err_set(err, STORH_ECORRUPT, "Invalid JSONC storage record %s: %s",
                                 expect_id, jerr.msg);
    }
    json_t *id = json_object_get(root, "id");
    const char *ids = json_is_string(id) ? json_string_value(id) : "";
    size_t idl = json_is_string(id) ? json_string_length(id) : 0;
    if (!uuid7_is_valid(ids, idl) || strlen(expect_id) != idl || memcmp(ids, expect_id, idl)) {
        json_decref(root);
        return storh_err_set(err, STORH_ECORRUPT, "Storage record id does not match its path: %s",
                             expect_id);
    }
    json_t *d = json_object_get(root, "data");
    if (json_is_object(d) || json_is_array(d))
        json_incref(d);
    else
        d = json_object();
    json_decref(root);
    if (!d)
        return storh_err_oom(err);
    *data = d;
    return 0;
}

/* Reads the record file (its state from the descriptor before the bytes,
 * so a cache entry never claims a newer file state than the bytes it
 * holds). */
static int read_bytes(docstore *ds, const char *id, buf *raw, struct stat *st, storh_err *err)
{
    char path[PATH_MAX];
    docstore_record_path(ds, id, path);
    int rc = fsx_read_all_stat(path, raw, st, err);
    if (rc == STORH_ENOTFOUND)
        return storh_err_set(err, rc, "Record not found: %s", id);
    return rc;
}

static int read_file(docstore *ds, const char *id, json_t **data, buf *raw, struct stat *st,
                     storh_err *err)
{
    size_t start = raw->len;
    int rc = read_bytes(ds, id, raw, st, err);
    if (!rc)
        rc = docstore_decode_record(raw->data + start, raw->len - start, id, data, err);
    return rc;
}

int docstore_read_record(docstore *ds, const char *id, json_t **data, storh_err *err)
{
    buf b = BUF_INIT;
    struct stat st;
    int rc = read_file(ds, id, data, &b, &st, err);
    buf_free(&b);
    return rc;
}

static int get(docstore *ds, const char *id, json_t **data, buf *raw, bool drained, storh_err *err)
{
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    char path[PATH_MAX];
    docstore_record_path(ds, id, path);
    if (ds->cache && !raw) {
        rcache_result r = drained ? rcache_get_drained(ds->cache, id, path, data)
                                  : rcache_get(ds->cache, id, path, data);
        if (r == RCACHE_HIT) {
            estats_add(ESTAT_DOC_GET, 1);
            return 0;
        }
        if (r == RCACHE_HIT_ABSENT)
            return storh_err_set(err, STORH_ENOTFOUND, "Record not found: %s", id);
    }
    buf local = BUF_INIT;
    buf *b = raw ? raw : &local;
    size_t start = b->len;
    struct stat st;
    rcache_ticket t = ds->cache ? rcache_fill_begin(ds->cache, id) : (rcache_ticket){0, 0};
    int rc = read_file(ds, id, data, b, &st, err);
    if (ds->cache && rc == 0)
        rcache_put(ds->cache, id, *data, &st, b->data + start, b->len - start, &t);
    else if (ds->cache && rc == STORH_ENOTFOUND)
        rcache_put(ds->cache, id, NULL, NULL, NULL, 0, &t);
    if (!rc)
        estats_add(ESTAT_DOC_GET, 1);
    buf_free(&local);
    return rc;
}

int docstore_get(docstore *ds, const char *id, json_t **data, buf *raw, storh_err *err)
{
    return get(ds, id, data, raw, false, err);
}

int docstore_cached_file(docstore *ds, const char *id, const char *path, bool drain,
                         rcache_blob **blob, struct stat *st)
{
    *blob = NULL;
    if (!ds->cache)
        return 0;
    if (drain)
        rcache_drain(ds->cache);
    return rcache_peek_file(ds->cache, id, path, blob, st) == RCACHE_HIT;
}

void docstore_batch_begin(docstore *ds)
{
    if (ds->cache)
        rcache_drain(ds->cache);
}

int docstore_batch_get(docstore *ds, const char *id, json_t **data, storh_err *err)
{
    return get(ds, id, data, NULL, true, err);
}

/* data's answer bytes, given to its cache entry (if still data's) too. */
static int answer_of(docstore *ds, const char *id, json_t *data, rcache_blob **out, storh_err *err)
{
    buf b = BUF_INIT;
    int rc = docstore_encode_record(&b, id, data, err);
    if (!rc && !(*out = rcache_blob_new(b.data, b.len)))
        rc = storh_err_oom(err);
    buf_free(&b);
    if (!rc && ds->cache) {
        atomic_fetch_add_explicit(&(*out)->refs, 1, memory_order_relaxed);
        rcache_attach_blob(ds->cache, id, data, *out);
    }
    return rc;
}

static int answer(docstore *ds, const char *id, rcache_blob **out, bool drained, storh_err *err)
{
    *out = NULL;
    if (!uuid7_is_valid(id, strlen(id)))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    char path[PATH_MAX];
    docstore_record_path(ds, id, path);
    json_t *data = NULL;
    int rc = 0;
    if (ds->cache) {
        rcache_result r = drained ? rcache_get_blob_drained(ds->cache, id, path, &data, out)
                                  : rcache_get_blob(ds->cache, id, path, &data, out);
        if (r == RCACHE_HIT_ABSENT)
            return storh_err_set(err, STORH_ENOTFOUND, "Record not found: %s", id);
        if (r == RCACHE_HIT && *out) {
            estats_add(ESTAT_DOC_GET, 1);
            return 0;
        }
    }
    if (!data) {
        buf b = BUF_INIT;
        struct stat st;
        rcache_ticket t = ds->cache ? rcache_fill_begin(ds->cache, id) : (rcache_ticket){0, 0};
        rc = read_bytes(ds, id, &b, &st, err);
        if (!rc && reccanon_is_canonical(b.data, b.len, id)) {
            /* the file's bytes are the answer's: neither decoded nor encoded */
            if (!(*out = rcache_blob_new(b.data, b.len)))
                rc = storh_err_oom(err);
            else if (ds->cache) {
                atomic_fetch_add_explicit(&(*out)->refs, 1, memory_order_relaxed);
                rcache_put_bytes(ds->cache, id, *out, &st, &t, NULL);
            }
            buf_free(&b);
            if (!rc)
                estats_add(ESTAT_DOC_GET, 1);
            return rc;
        }
        if (!rc)
            rc = docstore_decode_record(b.data, b.len, id, &data, err);
        if (ds->cache && rc == 0)
            rcache_put(ds->cache, id, data, &st, b.data, b.len, &t);
        else if (ds->cache && rc == STORH_ENOTFOUND)
            rcache_put(ds->cache, id, NULL, NULL, NULL, 0, &t);
        buf_free(&b);
    }
    if (!rc)
        rc = answer_of(ds, id, data, out, err);
    json_decref(data);
    if (!rc)
        estats_add(ESTAT_DOC_GET, 1);
    return rc;
}

int docstore_get_answer(docstore *ds, const char *id, rcache_blob **out, storh_err *err)
{
    return answer(ds, id, out, false, err);
}

int docstore_batch_get_answer(docstore *ds, const char *id, rcache_blob **out, storh_err *err)
{
    return answer(ds, id, out, true, err);
}

int docstore_lock(docstore *ds, fsx_lock *l, storh_err *err)
{
    pthread_mutex_lock(&ds->mu);
    char path[PATH_MAX];
    int rc = fsx_pathf(path, err, "%s/.storh/write.lock", ds->dir);
    if (!rc)
        rc = fsx_lock_open(l, path, err);
    if (!rc && (rc = fsx_lock_acquire(l, err)))
        fsx_lock_close(l);
    if (!rc) { /* another writer may have changed the index definitions */
        pthread_rwlock_wrlock(&ds->ixlock);
        rc = docindex_refresh(&ds->ix, err);
        pthread_rwlock_unlock(&ds->ixlock);
        if (rc) {
            fsx_lock_release(l);
            fsx_lock_close(l);
        }
    }
    if (rc)
        pthread_mutex_unlock(&ds->mu);
    return rc;
}

void docstore_unlock(docstore *ds, fsx_lock *l)
{
    fsx_lock_release(l);
    fsx_lock_close(l);
    pthread_mutex_unlock(&ds->mu);
}

/* A corrupt file is an error: its index entries cannot be known. */
int docstore_old_record(docstore *ds, const char *id, json_t **old, storh_err *err)
{
    *old = NULL;
    int rc = docstore_read_record(ds, id, old, err);
    if (rc == STORH_ENOTFOUND)
        return 0;
    if (rc == STORH_ECORRUPT)
        return storh_err_set(err, rc,
                             "Record %s is corrupt and indexes are active; run _repair first.", id);
    return rc;
}
