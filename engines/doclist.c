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

typedef struct iter_entry {
    char *key; /* basename without .jsonc */
    char *path;
    size_t order; /* walk order: a later duplicate basename wins */
} iter_entry;

struct docstore_iter {
    docstore *ds;
    const recquery *q;
    iter_entry *e;
    size_t n, cap, pos, emitted;
    buf raw;
};

static int iter_add(docstore_iter *it, const char *path, const char *name, size_t nlen)
{
    if (it->n == it->cap) {
        size_t cap = it->cap ? it->cap * 2 : 1024;
        iter_entry *e = realloc(it->e, cap * sizeof *e);
        if (!e)
            return -1;
        it->e = e;
        it->cap = cap;
    }
    iter_entry *e = &it->e[it->n];
    e->key = strndup(name, nlen - 6);
    e->path = strdup(path);
    e->order = it->n;
    if (!e->key || !e->path) {
        free(e->key);
        free(e->path);
        return -1;
    }
    it->n++;
    return 0;
}

static int walk(docstore_iter *it, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return (errno == ENOENT || depth > 0) ? 0 : -1;
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        const char *nm = de->d_name;
        if (!strcmp(nm, ".") || !strcmp(nm, ".."))
            continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, nm) >= (int)sizeof path)
            continue;
        unsigned char type = de->d_type;
        if (type == DT_UNKNOWN || type == DT_LNK) {
            struct stat st;
            if (stat(path, &st) != 0)
                continue;
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        }
        size_t nl = strlen(nm);
        if (type == DT_DIR && depth < 64)
            rc = walk(it, path, depth + 1);
        else if (type == DT_REG && nl > 6 && !strcmp(nm + nl - 6, ".jsonc"))
            rc = iter_add(it, path, nm, nl);
    }
    closedir(d);
    return rc;
}

static int entry_cmp(const void *a, const void *b)
{
    const iter_entry *x = a, *y = b;
    int c = strcmp(x->key, y->key); /* byte order, like PHP strcmp */
    if (c)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

int docstore_iter_open(docstore *ds, const recquery *q, docstore_iter **out, storh_err *err)
{
    docstore_iter *it = calloc(1, sizeof *it);
    if (!it)
        return storh_err_oom(err);
    it->ds = ds;
    it->q = q;
    char data[PATH_MAX];
    if (fsx_pathf(data, NULL, "%s/data", ds->dir) != 0 || walk(it, data, 0) != 0) {
        int e = errno;
        docstore_iter_close(it);
        return storh_err_sys(err, e, "Could not list records under %s", data);
    }
    if (it->n)
        qsort(it->e, it->n, sizeof *it->e, entry_cmp);
    /* keep the last of each run of equal keys */
    size_t w = 0;
    for (size_t r = 0; r < it->n; r++) {
        if (r + 1 < it->n && !strcmp(it->e[r].key, it->e[r + 1].key)) {
            free(it->e[r].key);
            free(it->e[r].path);
            continue;
        }
        it->e[w++] = it->e[r];
    }
    it->n = w;
    *out = it;
    return 0;
}

int docstore_iter_next(docstore_iter *it, const char **id, json_t **data, storh_err *err)
{
    while (it->pos < it->n) {
        if (it->q && it->q->limit && it->emitted >= it->q->limit)
            return 0;
        iter_entry *e = &it->e[it->pos++];
        if (it->q && !recquery_match_id(it->q, e->key, strlen(e->key)))
            continue;
        buf_reset(&it->raw);
        *id = e->key;
        int rc = fsx_read_all(e->path, &it->raw, err);
        if (rc == STORH_ENOTFOUND)
            continue; /* deleted since the listing */
        if (rc)
            return rc;
        estats_add(ESTAT_DOC_SCAN, 1);
        json_t *d;
        if ((rc = docstore_decode_record(it->raw.data, it->raw.len, e->key, &d, err)))
            return rc;
        if (it->q && !recquery_match_data(it->q, d)) {
            json_decref(d);
            continue;
        }
        it->emitted++;
        *data = d;
        return 1;
    }
    return 0;
}

void docstore_iter_close(docstore_iter *it)
{
    if (!it)
        return;
    for (size_t i = 0; i < it->n; i++) {
        free(it->e[i].key);
        free(it->e[i].path);
    }
    free(it->e);
    buf_free(&it->raw);
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
    const char *id;
    json_t *data;
    while ((rc = docstore_iter_next(it, &id, &data, err)) == 1) {
        buf_reset(&line);
        rc = docstore_encode_record(&line, id, data, err);
        json_decref(data);
        if (rc)
            break;
        if (fwrite(line.data, 1, line.len, f) != line.len) {
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
    for (size_t i = 0; i < it->n; i++) {
        struct stat st;
        if (stat(it->e[i].path, &st) == 0)
            total += st.st_size;
    }
    return total;
}

size_t docstore_count_files(docstore *ds)
{
    docstore_iter *it;
    if (docstore_iter_open(ds, NULL, &it, NULL))
        return 0;
    size_t n = it->n;
    docstore_iter_close(it);
    return n;
}
