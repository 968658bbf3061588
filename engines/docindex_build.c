/* docindex: rebuild and verify (see docindex_int.h). */
#include "docindex_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docgroup.h"
#include "fsx.h"
#include "pubset.h"
#include "sjson.h"

/* ---------- rebuild and verify ---------- */

typedef struct rline {
    char *sort; /* rk TAB vk TAB line */
} rline;

struct docindex_build {
    docindex *ix;
    json_t *eq;       /* field -> { vk -> {"value", "ids"} } */
    json_t *compound; /* "l\tr" -> { ck -> ids } */
    rline **range;    /* per definition: lines */
    size_t *nrange, *caprange;
    size_t entries;
    /* reused by every record (no heap buffer per key): the value keys of
     * the record's plain fields, one per definition, and scratch */
    buf *vk;
    buf rk, s;
    char **pairs; /* [i * n + j]: "l\tr" of two plain fields, or NULL */
};

int docindex_build_begin(docindex *ix, docindex_build **out, storh_err *err)
{
    docindex_build *b = calloc(1, sizeof *b);
    if (!b)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    b->ix = ix;
    b->eq = json_object();
    b->compound = json_object();
    b->range = calloc(ix->n + 1, sizeof *b->range);
    b->nrange = calloc(ix->n + 1, sizeof *b->nrange);
    b->caprange = calloc(ix->n + 1, sizeof *b->caprange);
    b->vk = calloc(ix->n + 1, sizeof *b->vk);
    b->pairs = calloc(ix->n * ix->n + 1, sizeof *b->pairs);
    bool ok = b->eq && b->compound && b->range && b->nrange && b->caprange && b->vk && b->pairs;
    for (size_t i = 0; ok && i < ix->n; i++)
        for (size_t j = i + 1; ok && j < ix->n; j++) {
            if (!docindex_is_plain(&ix->defs[i]) || !docindex_is_plain(&ix->defs[j]))
                continue;
            buf pair = BUF_INIT;
            buf_appends(&pair, ix->defs[i].field);
            buf_appendc(&pair, '\t');
            buf_appends(&pair, ix->defs[j].field);
            ok = !buf_failed(&pair);
            b->pairs[i * ix->n + j] = pair.data;
        }
    *out = b;
    if (!ok) {
        docindex_build_abort(b);
        *out = NULL;
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    return 0;
}

static void bucket_add(json_t *map, const char *group, const char *key, const json_t *value,
                       const char *id)
{
    json_t *g = json_object_get(map, group);
    if (!g) {
        g = json_object();
        json_object_set_new(map, group, g);
    }
    json_t *e = json_object_get(g, key);
    if (!e) {
        e = json_pack("{sOs[]}", "value", value ? (json_t *)value : json_null(), "ids");
        json_object_set_new(g, key, e);
    }
    /* ids come from record names (UUIDv7 text, ASCII): no UTF-8 check */
    json_array_append_new(json_object_get(e, "ids"), json_stringn_nocheck(id, strlen(id)));
}

static int range_add(docindex_build *b, size_t i, const char *id, const json_t *v, storh_err *err)
{
    /* the sort line "rk TAB vk TAB line", built in one reused buffer */
    buf *s = &b->s;
    buf_reset(&b->rk);
    docindex_range_key(v, &b->rk);
    buf_reset(s);
    buf_append(s, b->rk.data, b->rk.len);
    buf_appendc(s, '\t');
    docindex_value_key(v, s);
    buf_appendc(s, '\t');
    docindex_range_line(s, b->rk.data, v, id, NULL);
    if (buf_failed(&b->rk) || buf_failed(s))
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    s->len--; /* without its LF */
    if (b->nrange[i] == b->caprange[i]) {
        size_t cap = b->caprange[i] ? b->caprange[i] * 2 : 256;
        rline *n = realloc(b->range[i], cap * sizeof *n);
        if (!n)
            return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        b->range[i] = n;
        b->caprange[i] = cap;
    }
    char *line = malloc(s->len + 1);
    if (!line)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    memcpy(line, s->data, s->len);
    line[s->len] = '\0';
    b->range[i][b->nrange[i]++].sort = line;
    return 0;
}

int docindex_build_add(docindex_build *b, const char *id, const json_t *data, storh_err *err)
{
    docindex *ix = b->ix;
    b->entries++;
    if (!json_is_object(data))
        return 0;
    /* each field's value read once; plain fields' keys built once (the
     * compound keys are made of them) */
    json_t *vals[64];
    json_t **v = ix->n <= 64 ? vals : malloc(ix->n * sizeof *v);
    if (!v)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    int rc = 0;
    for (size_t i = 0; !rc && i < ix->n; i++) {
        const idxdef *d = &ix->defs[i];
        v[i] = json_object_get(data, d->field);
        if (!docindex_indexable(v[i]))
            v[i] = NULL;
        else if (d->range)
            rc = range_add(b, i, id, v[i], err);
        else {
            buf_reset(&b->vk[i]);
            docindex_value_key(v[i], &b->vk[i]);
            if (buf_failed(&b->vk[i]))
                rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            else
                bucket_add(b->eq, d->field, b->vk[i].data, v[i], id);
        }
    }
    for (size_t i = 0; !rc && i < ix->n; i++)
        for (size_t j = i + 1; v[i] && j < ix->n; j++) {
            const char *pair = b->pairs[i * ix->n + j];
            if (!pair || !v[j])
                continue;
            buf_reset(&b->s);
            docindex_compound_key_of(b->vk[i].data, b->vk[i].len, b->vk[j].data, b->vk[j].len,
                                     &b->s);
            if (buf_failed(&b->s)) {
                rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
                break;
            }
            bucket_add(b->compound, pair, b->s.data, NULL, id);
        }
    if (v != vals)
        free(v);
    return rc;
}

void docindex_build_abort(docindex_build *b)
{
    if (!b)
        return;
    json_decref(b->eq);
    json_decref(b->compound);
    for (size_t i = 0; b->range && b->nrange && i < b->ix->n; i++) {
        for (size_t k = 0; k < b->nrange[i]; k++)
            free(b->range[i][k].sort);
        free(b->range[i]);
    }
    for (size_t i = 0; b->vk && i < b->ix->n; i++)
        buf_free(&b->vk[i]);
    for (size_t i = 0; b->pairs && i < b->ix->n * b->ix->n; i++)
        free(b->pairs[i]);
    free(b->vk);
    free(b->pairs);
    buf_free(&b->rk);
    buf_free(&b->s);
    free(b->range);
    free(b->nrange);
    free(b->caprange);
    free(b);
}

static int rline_cmp(const void *a, const void *b)
{
    return strcmp(((const rline *)a)->sort, ((const rline *)b)->sort);
}

static int remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[PATH_MAX];
        if (fsx_pathf(p, NULL, "%s/%s", path, de->d_name))
            continue;
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rc |= remove_tree(p);
        else if (unlink(p) != 0)
            rc = -1;
    }
    closedir(d);
    return rmdir(path) == 0 ? rc : -1;
}

static int write_buckets(docindex *ix, json_t *map, bool compound, pubset *set, bool fs,
                         storh_err *err)
{
    const char *group;
    json_t *g;
    json_object_foreach (map, group, g) {
        const char *key;
        json_t *e;
        char l[256] = "", r[256] = "";
        if (compound) {
            const char *tab = strchr(group, '\t');
            snprintf(l, sizeof l, "%.*s", (int)(tab - group), group);
            snprintf(r, sizeof r, "%s", tab + 1);
        }
        bool first = true;
        json_object_foreach (g, key, e) {
            char p[PATH_MAX];
            int rc = compound ? docindex_compound_path(ix, l, r, key, p, err)
                              : docindex_eq_path(ix, group, key, p, err);
            if (!rc && first) { /* with syncfs, its commit makes new dirs durable */
                char dir[PATH_MAX];
                fsx_dirname(p, dir, sizeof dir);
                rc = fsx_mkdirs(dir, !fs, err);
                first = false;
            }
            json_t *ids = json_object_get(e, "ids");
            docindex_sort_ids(ids);
            buf b = BUF_INIT;
            if (!rc)
                rc = docindex_encode_entry(&b, group, key,
                                           compound ? NULL : json_object_get(e, "value"), ids, err);
            if (!rc)
                rc = pubset_add(set, p, b.data, b.len, err);
            buf_free(&b);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int docindex_build_finish(docindex_build *b, storh_err *err)
{
    docindex *ix = b->ix;
    char entries[PATH_MAX];
    int rc = fsx_pathf(entries, err, "%s/entries", ix->dir);
    if (!rc && remove_tree(entries) != 0)
        rc = storh_err_sys(err, errno, "Could not clear %s", entries);
    if (!rc)
        rc = fsx_mkdirs(entries, true, err);
    /* every file of the build made durable together (pubset.h): one
     * syncfs before the renames and one after, where syncfs serves */
    bool fs = docgroup_default_mode() != DOCGROUP_SYNC_EACH;
    pubset *set = NULL;
    if (!rc)
        rc = pubset_begin(ix->dir, fs, &set, err);
    if (!rc)
        rc = write_buckets(ix, b->eq, false, set, fs, err);
    if (!rc)
        rc = write_buckets(ix, b->compound, true, set, fs, err);
    for (size_t i = 0; !rc && i < ix->n; i++) {
        if (!ix->defs[i].range || b->nrange[i] == 0)
            continue;
        qsort(b->range[i], b->nrange[i], sizeof(rline), rline_cmp);
        buf main = BUF_INIT;
        json_t *cps = json_array();
        for (size_t k = 0; k < b->nrange[i]; k++) {
            const char *s = b->range[i][k].sort;
            const char *line = strchr(strchr(s, '\t') + 1, '\t') + 1;
            if (k % RANGE_STRIDE == 0) {
                json_t *cp = json_object();
                json_object_set_new(cp, "key", json_stringn(s, (size_t)(strchr(s, '\t') - s)));
                json_object_set_new(cp, "offset", json_integer((json_int_t)main.len));
                json_array_append_new(cps, cp);
            }
            buf_appends(&main, line);
            buf_appendc(&main, '\n');
        }
        char p[PATH_MAX];
        char dir[PATH_MAX];
        rc = docindex_range_path(ix, ix->defs[i].field, ".jsonl", p, err);
        if (!rc) {
            fsx_dirname(p, dir, sizeof dir);
            rc = fsx_mkdirs(dir, !fs, err);
        }
        if (!rc)
            rc = pubset_add(set, p, main.data, main.len, err);
        json_t *idx = json_pack("{siso}", "stride", RANGE_STRIDE, "checkpoints", cps);
        buf ib = BUF_INIT;
        if (!rc)
            rc = sjson_encode_doc(&ib, idx, 0, err);
        if (!rc)
            rc = docindex_range_path(ix, ix->defs[i].field, ".idx.jsonc", p, err);
        if (!rc)
            rc = pubset_add(set, p, ib.data, ib.len, err);
        json_decref(idx);
        buf_free(&ib);
        buf_free(&main);
    }
    if (!rc)
        rc = pubset_commit(set, err);
    else
        pubset_abort(set);
    docindex_build_abort(b);
    return rc;
}

/* verify: expected buckets (from a scan) against what the files hold. */
static void add_identity(json_t *list, const char *kind, const char *identity)
{
    char msg[600];
    snprintf(msg, sizeof msg, "Index mismatch (%s): %.500s", kind, identity);
    json_array_append_new(list, json_string(msg));
}

static void verify_dir(docindex *ix, const char *group, json_t *expected, bool compound,
                       json_t *mismatch, json_t *errors)
{
    char dir[PATH_MAX], p[PATH_MAX];
    char l[256] = "", r[256] = "";
    if (compound) {
        const char *tab = strchr(group, '\t');
        snprintf(l, sizeof l, "%.*s", (int)(tab - group), group);
        snprintf(r, sizeof r, "%s", tab + 1);
        docindex_compound_path(ix, l, r, "x", p, NULL);
    } else {
        docindex_eq_path(ix, group, "x", p, NULL);
    }
    fsx_dirname(p, dir, sizeof dir);
    json_t *seen = json_object();
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t nl = strlen(de->d_name);
        if (de->d_name[0] == '.' || nl < 7 || strcmp(de->d_name + nl - 6, ".jsonc"))
            continue;
        char key[NAME_MAX + 1];
        snprintf(key, sizeof key, "%.*s", (int)(nl - 6), de->d_name);
        fsx_pathf(p, NULL, "%s/%s", dir, de->d_name);
        buf b = BUF_INIT;
        storh_err e;
        json_t *o = NULL;
        if (fsx_read_all(p, &b, &e) != 0) {
            char msg[PATH_MAX + 256];
            snprintf(msg, sizeof msg, "Unreadable index file: %s (%.200s)", p, e.msg);
            json_array_append_new(errors, json_string(msg));
        } else if (!(o = sjson_decode_jsonc_object(b.data, b.len, &e)) ||
                   !json_is_string(json_object_get(o, "field")) ||
                   !json_is_string(json_object_get(o, "key"))) {
            char msg[PATH_MAX + 32];
            snprintf(msg, sizeof msg, "Malformed index file: %s", p);
            json_array_append_new(errors, json_string(msg));
        } else {
            const char *why = NULL;
            json_t *ids = json_object_get(o, "ids");
            if (strcmp(json_string_value(json_object_get(o, "field")), group))
                why = "Index field mismatch";
            else if (strcmp(json_string_value(json_object_get(o, "key")), key))
                why = "Index key mismatch";
            else if (!json_is_integer(json_object_get(o, "count")) ||
                     (size_t)json_integer_value(json_object_get(o, "count")) !=
                         json_array_size(ids))
                why = "Index count mismatch";
            else if (!compound) {
                buf vk = BUF_INIT;
                docindex_value_key(json_object_get(o, "value"), &vk);
                if (strcmp(vk.data, key))
                    why = "Index key mismatch";
                buf_free(&vk);
            }
            if (why) {
                char msg[PATH_MAX + 32];
                snprintf(msg, sizeof msg, "%s: %s", why, p);
                json_array_append_new(errors, json_string(msg));
            }
            json_object_set(seen, key, ids);
        }
        json_decref(o);
        buf_free(&b);
    }
    if (d)
        closedir(d);
    /* every key on either side must hold the same ids */
    json_t *g = json_object_get(expected, group);
    const char *key;
    json_t *e;
    json_object_foreach (g, key, e) {
        json_t *have = json_object_get(seen, key), *want = json_object_get(e, "ids");
        docindex_sort_ids(want);
        if (!have || !json_equal(have, want)) {
            char id[600];
            snprintf(id, sizeof id, "%s %s", group, key);
            json_array_append_new(mismatch, json_string(id));
        }
    }
    json_object_foreach (seen, key, e) {
        if (!json_object_get(g, key)) {
            char id[600];
            snprintf(id, sizeof id, "%s %s", group, key);
            json_array_append_new(mismatch, json_string(id));
        }
    }
    json_decref(seen);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

static void sorted_report(json_t *errors, json_t *ids, const char *kind)
{
    size_t n = json_array_size(ids);
    json_t **v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i] = json_array_get(ids, i);
    if (v)
        qsort(v, n, sizeof *v, str_cmp);
    for (size_t i = 0; v && i < n; i++) {
        char *s = strdup(json_string_value(v[i]));
        for (char *c = s; *c; c++)
            if (*c == '\t' && strcmp(kind, "compound") != 0)
                *c = ' ';
        add_identity(errors, kind, s);
        free(s);
    }
    free(v);
}

int docindex_verify_against(docindex_build *b, json_t *errors, storh_err *err)
{
    docindex *ix = b->ix;
    json_t *eqm = json_array(), *cm = json_array(), *rm = json_array();
    for (size_t i = 0; i < ix->n; i++) {
        const idxdef *d = &ix->defs[i];
        if (d->range) {
            /* expected id -> (rk, vk) against the effective files */
            rset s;
            if (docindex_rset_load(ix, d->field, &s, err) != 0) {
                json_array_append_new(errors, json_string(err->msg));
                continue;
            }
            json_t *want = json_object();
            for (size_t k = 0; k < b->nrange[i]; k++) {
                const char *line = b->range[i][k].sort;
                const char *t1 = strchr(line, '\t'), *t2 = strchr(t1 + 1, '\t');
                json_t *lj = json_loads(t2 + 1, JSON_ALLOW_NUL, NULL);
                const char *id = json_string_value(json_array_get(json_object_get(lj, "ids"), 0));
                char ident[600];
                snprintf(ident, sizeof ident, "%s %.*s %.*s", d->field, (int)(t1 - line), line,
                         (int)(t2 - t1 - 1), t1 + 1);
                if (id)
                    json_object_set_new(want, id, json_string(ident));
                json_decref(lj);
            }
            size_t pos = 0;
            const char *k;
            void *v;
            while (idmap_next(&s.ids, &pos, &k, &v)) {
                rentry *e = v;
                char id[IDMAP_KEY + 1], ident[600];
                memcpy(id, k, IDMAP_KEY);
                id[IDMAP_KEY] = '\0';
                snprintf(ident, sizeof ident, "%s %s %s", d->field, e->rk, e->vk);
                json_t *w = json_object_get(want, id);
                if (!w || strcmp(json_string_value(w), ident))
                    json_array_append_new(rm, json_string(ident));
                if (w && !strcmp(json_string_value(w), ident))
                    json_object_del(want, id);
            }
            const char *id;
            json_t *w;
            json_object_foreach (want, id, w)
                json_array_append(rm, w);
            json_decref(want);
            docindex_rset_free(&s);
        } else {
            verify_dir(ix, d->field, b->eq, false, eqm, errors);
            for (size_t j = i + 1; docindex_is_plain(d) && j < ix->n; j++) {
                if (!docindex_is_plain(&ix->defs[j]))
                    continue;
                char pair[512];
                snprintf(pair, sizeof pair, "%s\t%s", d->field, ix->defs[j].field);
                verify_dir(ix, pair, b->compound, true, cm, errors);
            }
        }
    }
    sorted_report(errors, eqm, "equality");
    sorted_report(errors, rm, "range");
    sorted_report(errors, cm, "compound");
    json_decref(eqm);
    json_decref(cm);
    json_decref(rm);
    return 0;
}
