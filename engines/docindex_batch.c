/* docindex: the index changes of a group of writes, made durable together
 * (see docindex.h, docindex_batch_*). */
#include "docindex_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsx.h"
#include "sjson.h"

/* An equality or compound entry file as the group left it so far. */
typedef struct bentry {
    char path[PATH_MAX], tmp[PATH_MAX]; /* tmp: "" until staged */
    char *field, *key;
    json_t *value; /* equality: the indexed value; compound: NULL */
    json_t *ids;   /* unsorted until staged */
    bool dirty;
} bentry;

/* The lines the group appends to a range delta. */
typedef struct bdelta {
    char path[PATH_MAX];
    char *field;
    buf lines;
    json_t *parsed; /* the same lines as objects, for unique checks */
} bdelta;

struct docindex_batch {
    docindex *ix;
    bentry *e;
    size_t ne, cape;
    json_t *by_path; /* entry path -> index into e */
    bdelta *d;
    size_t nd, capd;
    const char **files; /* staged temps and appended deltas, to make durable */
    size_t nfiles;
    char (*dirs)[PATH_MAX]; /* directories whose entries changed */
    size_t ndirs, capdirs;
};

static int oom(storh_err *err)
{
    return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
}

int docindex_batch_begin(docindex *ix, docindex_batch **out, storh_err *err)
{
    docindex_batch *b = calloc(1, sizeof *b);
    if (!b || !(b->by_path = json_object())) {
        free(b);
        return oom(err);
    }
    b->ix = ix;
    *out = b;
    return 0;
}

void docindex_batch_free(docindex_batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->ne; i++) {
        if (b->e[i].tmp[0])
            unlink(b->e[i].tmp); /* staged, never published */
        free(b->e[i].field);
        free(b->e[i].key);
        json_decref(b->e[i].value);
        json_decref(b->e[i].ids);
    }
    for (size_t i = 0; i < b->nd; i++) {
        free(b->d[i].field);
        buf_free(&b->d[i].lines);
        json_decref(b->d[i].parsed);
    }
    json_decref(b->by_path);
    free(b->e);
    free(b->d);
    free(b->files);
    free(b->dirs);
    free(b);
}

/* The entry of path, read from disk at its first use in the group. A file
 * holding another key (a hash collision) reads as empty and is replaced,
 * as a single write does. *out: its index in b->e. */
static int entry_get(docindex_batch *b, const char *path, const char *field, const char *key,
                     const json_t *value, size_t *out, storh_err *err)
{
    json_t *at = json_object_get(b->by_path, path);
    if (at) {
        bentry *e = &b->e[json_integer_value(at)];
        if (strcmp(e->key, key) != 0) {
            char *k = strdup(key), *f = strdup(field);
            if (!k || !f) {
                free(k);
                free(f);
                return oom(err);
            }
            free(e->key);
            free(e->field);
            e->key = k;
            e->field = f;
            json_decref(e->value);
            e->value = value ? json_deep_copy(value) : NULL;
            json_array_clear(e->ids);
            e->dirty = true;
        }
        *out = (size_t)json_integer_value(at);
        return 0;
    }
    json_t *ids;
    int rc = docindex_read_entry_ids(path, key, &ids, err);
    if (rc)
        return rc;
    if (b->ne == b->cape) {
        size_t cap = b->cape ? 2 * b->cape : 16;
        bentry *ne = realloc(b->e, cap * sizeof *ne);
        if (!ne) {
            json_decref(ids);
            return oom(err);
        }
        b->e = ne;
        b->cape = cap;
    }
    bentry *e = &b->e[b->ne];
    memset(e, 0, sizeof *e);
    snprintf(e->path, sizeof e->path, "%s", path);
    e->field = strdup(field);
    e->key = strdup(key);
    e->value = value ? json_deep_copy(value) : NULL;
    e->ids = ids;
    if (!e->field || !e->key) {
        free(e->field);
        free(e->key);
        json_decref(e->value);
        json_decref(ids);
        return oom(err);
    }
    json_object_set_new(b->by_path, path, json_integer((json_int_t)b->ne));
    *out = b->ne++;
    return 0;
}

static int entry_change(docindex_batch *b, const char *path, const char *field, const char *key,
                        const json_t *value, const char *id, bool add, storh_err *err)
{
    size_t at;
    int rc = entry_get(b, path, field, key, value, &at, err);
    if (rc)
        return rc;
    bentry *e = &b->e[at];
    size_t i = 0, n = json_array_size(e->ids);
    while (i < n && strcmp(json_string_value(json_array_get(e->ids, i)), id) != 0)
        i++;
    bool found = i < n;
    if (add && !found) {
        json_array_append_new(e->ids, json_string(id));
        e->dirty = true;
    } else if (!add && found) {
        json_array_remove(e->ids, i);
        e->dirty = true;
    }
    return 0;
}

static int delta_append(docindex_batch *b, const char *field, const char *path, const buf *line,
                        storh_err *err)
{
    size_t i = 0;
    while (i < b->nd && strcmp(b->d[i].path, path) != 0)
        i++;
    if (i == b->nd) {
        if (b->nd == b->capd) {
            size_t cap = b->capd ? 2 * b->capd : 4;
            bdelta *nd = realloc(b->d, cap * sizeof *nd);
            if (!nd)
                return oom(err);
            b->d = nd;
            b->capd = cap;
        }
        bdelta *d = &b->d[b->nd];
        memset(d, 0, sizeof *d);
        snprintf(d->path, sizeof d->path, "%s", path);
        d->field = strdup(field);
        d->parsed = json_array();
        if (!d->field || !d->parsed) {
            free(d->field);
            json_decref(d->parsed);
            return oom(err);
        }
        b->nd++;
    }
    bdelta *d = &b->d[i];
    buf_append(&d->lines, line->data, line->len);
    json_array_append_new(d->parsed, json_loadb(line->data, line->len - 1, JSON_ALLOW_NUL, NULL));
    return 0;
}

/* The group's changes: kept in its files until the group is staged. */
static int batch_delta(void *ctx, const char *field, const char *path, const buf *line,
                       storh_err *err)
{
    return delta_append(ctx, field, path, line, err);
}

static int batch_entry(void *ctx, const char *path, const char *field, const char *key,
                       const json_t *value, const char *id, bool add, storh_err *err)
{
    return entry_change(ctx, path, field, key, value, id, add, err);
}

int docindex_batch_update(docindex_batch *b, const char *id, const json_t *old, const json_t *nw,
                          storh_err *err)
{
    docindex_sink sink = {.delta = batch_delta, .entry = batch_entry, .ctx = b};
    int rc = old ? docindex_record_changes(b->ix, id, old, false, &sink, err) : 0;
    return rc ? rc : (nw ? docindex_record_changes(b->ix, id, nw, true, &sink, err) : 0);
}

/* Whether another id than id holds v on the range field d: the files, then
 * the group's lines not written yet. */
static int range_clash(docindex_batch *b, const idxdef *d, const char *id, const json_t *v,
                       bool *clash, storh_err *err)
{
    rset s;
    int rc = docindex_rset_load(b->ix, d->field, &s, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < b->nd; i++) {
        if (strcmp(b->d[i].field, d->field) != 0)
            continue;
        size_t k;
        json_t *line;
        json_array_foreach (b->d[i].parsed, k, line)
            docindex_rset_apply_line(&s, line);
    }
    buf rk = BUF_INIT;
    docindex_range_key(v, &rk);
    size_t pos = 0;
    const char *k;
    void *val;
    while (!*clash && idmap_next(&s.ids, &pos, &k, &val)) {
        rentry *e = val;
        *clash = strncmp(k, id, IDMAP_KEY) != 0 && !strcmp(e->rk, rk.data) &&
                 query_strict_equal(e->value, v);
    }
    buf_free(&rk);
    docindex_rset_free(&s);
    return 0;
}

int docindex_batch_check_unique(docindex_batch *b, const char *id, const json_t *data,
                                storh_err *err)
{
    docindex *ix = b->ix;
    for (size_t i = 0; i < ix->n; i++) {
        const idxdef *d = &ix->defs[i];
        json_t *v = json_is_object(data) ? json_object_get(data, d->field) : NULL;
        if (!d->unique || !docindex_indexable(v))
            continue;
        bool clash = false;
        int rc;
        if (d->range) {
            rc = range_clash(b, d, id, v, &clash, err);
        } else {
            buf vk = BUF_INIT;
            char p[PATH_MAX];
            docindex_value_key(v, &vk);
            size_t at;
            rc = docindex_eq_path(ix, d->field, vk.data, p, err);
            if (!rc)
                rc = entry_get(b, p, d->field, vk.data, v, &at, err);
            buf_free(&vk);
            for (size_t k = 0; !rc && k < json_array_size(b->e[at].ids); k++)
                clash = clash || strcmp(json_string_value(json_array_get(b->e[at].ids, k)), id);
        }
        if (rc)
            return rc;
        if (clash)
            return storh_err_set(err, STORH_ECONFLICT, "Unique index violation on field: %s",
                                 d->field);
    }
    return 0;
}

static int add_file(docindex_batch *b, const char *path, storh_err *err)
{
    const char **nf = realloc(b->files, (b->nfiles + 1) * sizeof *nf);
    if (!nf)
        return oom(err);
    b->files = nf;
    b->files[b->nfiles++] = path;
    return 0;
}

static int add_dir_of(docindex_batch *b, const char *path, storh_err *err)
{
    char d[PATH_MAX];
    fsx_dirname(path, d, sizeof d);
    for (size_t i = 0; i < b->ndirs; i++)
        if (!strcmp(b->dirs[i], d))
            return 0;
    if (b->ndirs == b->capdirs) {
        size_t cap = b->capdirs ? 2 * b->capdirs : 8;
        char(*nd)[PATH_MAX] = realloc(b->dirs, cap * sizeof *nd);
        if (!nd)
            return oom(err);
        b->dirs = nd;
        b->capdirs = cap;
    }
    memcpy(b->dirs[b->ndirs++], d, PATH_MAX);
    return 0;
}

/* The new content of an entry beside it, unsynced, under storh's generic
 * temp name (as fsx_publish). */
static int stage_entry(docindex_batch *b, bentry *e, storh_err *err)
{
    docindex_sort_ids(e->ids);
    if (json_array_size(e->ids) == 0)
        return 0; /* unlinked when published */
    char dir[PATH_MAX], hex[25];
    fsx_dirname(e->path, dir, sizeof dir);
    int rc = fsx_mkdirs(dir, true, err);
    if (!rc)
        rc = fsx_random_hex(hex, 6, err);
    if (rc)
        return rc;
    const char *base = strrchr(e->path, '/');
    base = base ? base + 1 : e->path;
    if (snprintf(e->tmp, sizeof e->tmp, "%s/.%s.%s.tmp", dir, base, hex) >= (int)sizeof e->tmp) {
        e->tmp[0] = '\0';
        return storh_err_set(err, STORH_EINVAL, "Path too long: %s", e->path);
    }
    buf enc = BUF_INIT;
    rc = docindex_encode_entry(&enc, e->field, e->key, e->value, e->ids, err);
    if (!rc)
        rc = fsx_write_file(e->tmp, enc.data, enc.len, false, err);
    buf_free(&enc);
    if (rc)
        e->tmp[0] = '\0'; /* fsx_write_file removed it */
    return rc ? rc : add_file(b, e->tmp, err);
}

int docindex_batch_stage(docindex_batch *b, const char ***files, size_t *n, storh_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < b->ne; i++)
        if (b->e[i].dirty)
            rc = stage_entry(b, &b->e[i], err);
    for (size_t i = 0; !rc && i < b->nd; i++) {
        bool created;
        rc = docindex_append(b->d[i].path, b->d[i].lines.data, b->d[i].lines.len, false, &created,
                             err);
        if (!rc)
            rc = add_file(b, b->d[i].path, err);
        if (!rc && created)
            rc = add_dir_of(b, b->d[i].path, err);
    }
    *files = b->files;
    *n = b->nfiles;
    return rc;
}

int docindex_batch_publish(docindex_batch *b, char (**dirs)[PATH_MAX], size_t *n, storh_err *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < b->ne; i++) {
        bentry *e = &b->e[i];
        if (!e->dirty)
            continue;
        if (e->tmp[0]) {
            rc = fsx_rename(e->tmp, e->path, false, err);
            if (!rc)
                e->tmp[0] = '\0';
            if (!rc)
                rc = add_dir_of(b, e->path, err);
        } else if (unlink(e->path) == 0) {
            rc = add_dir_of(b, e->path, err);
        } else if (errno != ENOENT) { /* ENOENT: it was not there, nothing to sync */
            rc = storh_err_sys(err, errno, "Could not delete index file %s", e->path);
        }
    }
    *dirs = b->dirs;
    *n = b->ndirs;
    return rc;
}
