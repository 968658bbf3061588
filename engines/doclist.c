/* doclist: listing a DocStore: the record iterator (a walk of data/ sorted
 * by id, the last of duplicate basenames winning), the collections of a
 * root, the JSONL export and the file counts built on the iterator. */
#include "docstore.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docstore_int.h"
#include "estats.h"
#include "fsx.h"
#include "reccanon.h"
#include "recfile.h"
#include "recpred.h"

struct docstore_iter {
    docstore *ds;
    const recquery *q;
    recfile_list l;
    size_t pos, emitted;
    buf raw;
    const char *const *fields; /* docstore_iter_fields */
    size_t nfields;
    rcache_blob *blob;  /* the cached bytes handed out by the last step */
    size_t looked;      /* cache lookups made: the watch is drained every ITER_DRAIN */
    recpred *where;     /* q's field equalities on canonical bytes, if they compile */
    const recpred *pre; /* docstore_iter_prefilter */
};

int docstore_iter_open(docstore *ds, const recquery *q, docstore_iter **out, storh_err *err)
{
    docstore_iter *it = calloc(1, sizeof *it);
    if (!it)
        return storh_err_oom(err);
    it->ds = ds;
    it->q = q;
    it->where = recpred_from_recquery(q);
    char data[PATH_MAX];
    if (fsx_pathf(data, NULL, "%s/data", ds->dir) != 0 || recfile_list_open(data, &it->l) != 0) {
        int e = errno;
        docstore_iter_close(it);
        return storh_err_sys(err, e, "Could not list records under %s", data);
    }
    *out = it;
    return 0;
}

/* Lookups of a listing validated against one drain of the watch: a
 * change that returned before the listing began is always seen, one made
 * while it runs is seen within this many records (as a read of the file
 * then would: the listing reads each record once, at some moment of it). */
#define ITER_DRAIN 64

/* The record cache's entry of a listed record, validated as a get's (the
 * listing's reads take it where a write or a get left it), against a drain
 * of the watch shared by ITER_DRAIN lookups: RCACHE_HIT with *d its data,
 * or it->blob its canonical bytes, or both; RCACHE_HIT_ABSENT; RCACHE_MISS
 * (read the file). */
static int cached(docstore_iter *it, const char *key, bool uuid, const char *path, json_t **d)
{
    /* an unvalidated (TRUST) cache is for gets; a listing reads the files */
    if (!it->ds->cache || !uuid || rcache_get_mode(it->ds->cache) == RCACHE_TRUST)
        return RCACHE_MISS;
    rcache_blob *b;
    if (it->looked++ % ITER_DRAIN == 0)
        rcache_drain(it->ds->cache);
    rcache_result r = rcache_peek_drained(it->ds->cache, key, path, d, &b);
    it->blob = b; /* the bytes, handed out as they are (NULL: none cached) */
    return (int)r;
}

/* What the compiled filters say of a record's canonical bytes: NO skips
 * it; YES when the query's field equalities hold (or it has none). */
static int bytes_verdict(const docstore_iter *it, const char *key, const char *bytes, size_t len)
{
    bool wheres = it->q && it->q->where && json_object_size(it->q->where) > 0;
    int w = !wheres     ? RECPRED_YES
            : it->where ? recpred_match_canonical(it->where, key, bytes, len)
                        : RECPRED_UNSURE;
    if (w == RECPRED_NO || !it->pre)
        return w;
    return recpred_match_canonical(it->pre, key, bytes, len) == RECPRED_NO ? RECPRED_NO : w;
}

/* raw non-NULL: the file's bytes may be handed out as they are (when they
 * are canonical and the query needs no more of them than the bytes tell);
 * *data is then NULL. */
static int iter_step(docstore_iter *it, const char **id, json_t **data, const char **raw,
                     size_t *rawlen, storh_err *err)
{
    while (it->pos < it->l.n) {
        if (it->q && it->q->limit && it->emitted >= it->q->limit)
            return 0;
        size_t i = it->pos++;
        const char *key = recfile_list_key(&it->l, i);
        if (it->q && !recquery_match_id(it->q, key, it->l.e[i].klen))
            continue;
        buf_reset(&it->raw);
        rcache_blob_release(it->blob);
        it->blob = NULL;
        *id = key;
        char path[PATH_MAX];
        struct stat st;
        if (recfile_list_path(&it->l, i, path) != 0)
            continue;
        bool uuid = it->l.e[i].klen == UUID7_LEN && uuid7_is_valid(key, UUID7_LEN);
        json_t *d = NULL;
        int rc = cached(it, key, uuid, path, &d);
        if (rc == RCACHE_HIT_ABSENT)
            continue; /* deleted since the listing */
        if (rc == RCACHE_MISS) {
            rc = fsx_read_all_stat(path, &it->raw, &st, err);
            if (rc == STORH_ENOTFOUND)
                continue; /* deleted since the listing */
            if (rc)
                return rc;
        }
        estats_add(ESTAT_DOC_SCAN, 1);
        const char *bytes = it->blob ? it->blob->data : it->raw.data;
        size_t blen = it->blob ? it->blob->len : it->raw.len;
        int v = RECPRED_UNSURE;
        if ((raw || it->where || it->pre) && bytes && uuid &&
            (it->blob || reccanon_is_canonical(bytes, blen, key)))
            v = bytes_verdict(it, key, bytes, blen);
        if (v == RECPRED_NO) {
            json_decref(d);
            continue;
        }
        if (raw && v == RECPRED_YES) {
            json_decref(d);
            it->emitted++;
            *raw = bytes;
            *rawlen = blen;
            *data = NULL;
            return 1;
        }
        if (!d && it->nfields && !it->q && uuid)
            d = reccanon_project(bytes, blen, key, it->fields, it->nfields);
        if (!d && it->blob) /* bytes without data: rcache_put_bytes's, checked */
            d = reccanon_decode_checked(bytes, key);
        if (!d && (rc = docstore_decode_record(bytes, blen, key, &d, err)))
            return rc;
        if (it->q && !recquery_match_data(it->q, d)) {
            json_decref(d);
            continue;
        }
        it->emitted++;
        *data = d;
        if (raw)
            *raw = NULL;
        return 1;
    }
    return 0;
}

void docstore_iter_prefilter(docstore_iter *it, const recpred *p)
{
    it->pre = p;
}

void docstore_iter_fields(docstore_iter *it, const char *const *fields, size_t n)
{
    it->fields = fields;
    it->nfields = n;
}

int docstore_iter_next(docstore_iter *it, const char **id, json_t **data, storh_err *err)
{
    return iter_step(it, id, data, NULL, NULL, err);
}

int docstore_iter_next_raw(docstore_iter *it, const char **id, const char **raw, size_t *len,
                           json_t **data, storh_err *err)
{
    return iter_step(it, id, data, raw, len, err);
}

void docstore_iter_close(docstore_iter *it)
{
    if (!it)
        return;
    recfile_list_free(&it->l);
    buf_free(&it->raw);
    rcache_blob_release(it->blob);
    recpred_free(it->where);
    free(it);
}

static bool collection_name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return n >= 1 && n <= 64;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

int docstore_collections(const char *root, json_t **names, storh_err *err)
{
    *names = NULL;
    json_t *out = json_array();
    if (!out)
        return storh_err_oom(err);
    DIR *d = opendir(root);
    if (!d) {
        if (errno == ENOENT) { /* no root yet: no collections */
            *names = out;
            return 0;
        }
        json_decref(out);
        return storh_err_sys(err, errno, "Could not list the storage root %s", root);
    }
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        char p[PATH_MAX];
        struct stat st;
        if (!collection_name_ok(de->d_name) || fsx_pathf(p, NULL, "%s/%s/data", root, de->d_name) ||
            stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (json_array_append_new(out, json_string(de->d_name)))
            rc = storh_err_oom(err);
    }
    closedir(d);
    if (rc) {
        json_decref(out);
        return rc;
    }
    size_t n = json_array_size(out);
    json_t **v = malloc((n ? n : 1) * sizeof *v);
    if (!v) {
        json_decref(out);
        return storh_err_oom(err);
    }
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(out, i));
    qsort(v, n, sizeof *v, cmp_name);
    json_array_clear(out);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, v[i]);
    free(v);
    *names = out;
    return 0;
}

int docstore_export_jsonl(docstore *ds, const char *path, size_t *count, storh_err *err)
{
    *count = 0;
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    int rc = fsx_mkdirs(dir, false, err);
    if (rc)
        return rc;
    FILE *f = fopen(path, "wb");
    if (!f)
        return storh_err_sys(err, errno, "Could not open JSONL export file: %s", path);
    docstore_iter *it;
    if ((rc = docstore_iter_open(ds, NULL, &it, err))) {
        fclose(f);
        return rc;
    }
    buf line = BUF_INIT;
    const char *id, *raw;
    size_t rawlen;
    json_t *data;
    while ((rc = docstore_iter_next_raw(it, &id, &raw, &rawlen, &data, err)) == 1) {
        if (!raw) {
            buf_reset(&line);
            rc = docstore_encode_record(&line, id, data, err);
            json_decref(data);
            if (rc)
                break;
            raw = line.data;
            rawlen = line.len;
        }
        if (fwrite(raw, 1, rawlen, f) != rawlen) {
            rc = storh_err_sys(err, errno, "Could not write storage file: %s", path);
            break;
        }
        (*count)++;
    }
    docstore_iter_close(it);
    buf_free(&line);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        rc = rc ? rc : storh_err_sys(err, errno, "Could not sync storage file: %s", path);
    if (fclose(f) != 0 && rc == 0)
        rc = storh_err_sys(err, errno, "Could not write storage file: %s", path);
    return rc;
}

long long docstore_iter_bytes(docstore_iter *it)
{
    long long total = 0;
    for (size_t i = 0; i < it->l.n; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (recfile_list_path(&it->l, i, path) == 0 && stat(path, &st) == 0)
            total += st.st_size;
    }
    return total;
}

size_t docstore_count_files(docstore *ds)
{
    docstore_iter *it;
    if (docstore_iter_open(ds, NULL, &it, NULL))
        return 0;
    size_t n = it->l.n;
    docstore_iter_close(it);
    return n;
}
