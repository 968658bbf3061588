/* docindex: rebuild and verify (see docindex_int.h). */
#include "docindex_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docgroup.h"
#include "fsx.h"
#include "pubset.h"
#include "sjson.h"
#include "uuid7.h"
#include "xxhash.h"

/* ---------- rebuild and verify ---------- */

typedef struct rline {
    char *sort; /* rk TAB vk TAB line */
} rline;

/* An equality entry or a compound bucket being built: its key, the value
 * (equality: a reference to the first record's; compound: NULL) and its
 * ids, as offsets into the build's id arena, in the order added. */
typedef struct bucket {
    char *key; /* owned */
    size_t klen;
    uint64_t hash;
    json_t *value;
    uint32_t *ids; /* owned */
    size_t n, cap;
} bucket;

/* The buckets of one field (equality) or one pair of plain fields
 * (compound): an open-addressed table of bucket numbers (+1; 0 is empty)
 * over an array in the order of first use. No jansson tree per bucket or
 * id: a build adds a few buckets' ids per record. */
typedef struct bgroup {
    const char *name; /* the field, or "l\tr"; NULL: not a group */
    bucket *b;
    size_t nb, capb;
    uint32_t *slots;
    size_t nslots; /* a power of two, or 0 */
} bgroup;

struct docindex_build {
    docindex *ix;
    /* [i]: equality buckets of field i (plain or unique); [n + i * n + j]:
     * compound buckets of the pair of plain fields i < j */
    bgroup *groups;
    buf ids;       /* every added record's id, NUL-terminated */
    rline **range; /* per definition: lines */
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
    b->groups = calloc(ix->n + ix->n * ix->n + 1, sizeof *b->groups);
    b->range = calloc(ix->n + 1, sizeof *b->range);
    b->nrange = calloc(ix->n + 1, sizeof *b->nrange);
    b->caprange = calloc(ix->n + 1, sizeof *b->caprange);
    b->vk = calloc(ix->n + 1, sizeof *b->vk);
    b->pairs = calloc(ix->n * ix->n + 1, sizeof *b->pairs);
    bool ok = b->groups && b->range && b->nrange && b->caprange && b->vk && b->pairs;
    for (size_t i = 0; ok && i < ix->n; i++)
        if (!ix->defs[i].range) /* plain or unique: equality entries */
            b->groups[i].name = ix->defs[i].field;
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
            b->groups[ix->n + i * ix->n + j].name = pair.data;
        }
    *out = b;
    if (!ok) {
        docindex_build_abort(b);
        *out = NULL;
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    return 0;
}

static int group_grow(bgroup *g)
{
    size_t ns = g->nslots ? g->nslots * 2 : 16;
    uint32_t *sl = calloc(ns, sizeof *sl);
    if (!sl)
        return -1;
    for (size_t k = 0; k < g->nb; k++) {
        size_t at = g->b[k].hash & (ns - 1);
        while (sl[at])
            at = (at + 1) & (ns - 1);
        sl[at] = (uint32_t)(k + 1);
    }
    free(g->slots);
    g->slots = sl;
    g->nslots = ns;
    return 0;
}

/* Adds the id at offset id of the arena to g's bucket key (made, with a
 * reference to value, when new). */
static int bucket_add(bgroup *g, const char *key, const json_t *value, uint32_t id, storh_err *err)
{
    size_t klen = strlen(key);
    if ((g->nb + 1) * 2 > g->nslots && (g->nb >= UINT32_MAX - 1 || group_grow(g)))
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    uint64_t h = XXH3_64bits(key, klen);
    size_t at = h & (g->nslots - 1);
    bucket *e = NULL;
    for (; g->slots[at]; at = (at + 1) & (g->nslots - 1)) {
        bucket *c = &g->b[g->slots[at] - 1];
        if (c->hash == h && c->klen == klen && !memcmp(c->key, key, klen)) {
            e = c;
            break;
        }
    }
    if (!e) {
        if (g->nb == g->capb) {
            size_t cap = g->capb ? g->capb * 2 : 8;
            bucket *nb = realloc(g->b, cap * sizeof *nb);
            if (!nb)
                return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            g->b = nb;
            g->capb = cap;
        }
        e = &g->b[g->nb];
        *e = (bucket){.key = malloc(klen + 1), .klen = klen, .hash = h};
        if (!e->key)
            return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        memcpy(e->key, key, klen + 1);
        e->value = value ? json_incref((json_t *)value) : NULL;
        g->slots[at] = (uint32_t)++g->nb;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 4;
        uint32_t *ids = realloc(e->ids, cap * sizeof *ids);
        if (!ids)
            return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
        e->ids = ids;
        e->cap = cap;
    }
    e->ids[e->n++] = id;
    return 0;
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
    if (b->ids.len > UINT32_MAX - PATH_MAX)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    uint32_t idoff = (uint32_t)b->ids.len;
    buf_append(&b->ids, id, strlen(id) + 1);
    if (buf_failed(&b->ids))
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
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
                rc = bucket_add(&b->groups[i], b->vk[i].data, v[i], idoff, err);
        }
    }
    for (size_t i = 0; !rc && i < ix->n; i++)
        for (size_t j = i + 1; !rc && v[i] && j < ix->n; j++) {
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
            rc = bucket_add(&b->groups[ix->n + i * ix->n + j], b->s.data, NULL, idoff, err);
        }
    if (v != vals)
        free(v);
    return rc;
}

void docindex_build_abort(docindex_build *b)
{
    if (!b)
        return;
    for (size_t g = 0; b->groups && g < b->ix->n + b->ix->n * b->ix->n; g++) {
        for (size_t k = 0; k < b->groups[g].nb; k++) {
            free(b->groups[g].b[k].key);
            free(b->groups[g].b[k].ids);
            json_decref(b->groups[g].b[k].value);
        }
        free(b->groups[g].b);
        free(b->groups[g].slots);
    }
    free(b->groups);
    buf_free(&b->ids);
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

static int str_ptr_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* e's ids sorted and without repeats (a build's scan adds them in order
 * already: then one pass). */
static int bucket_sort(bucket *e, const char *arena, storh_err *err)
{
    size_t k = 1;
    while (k < e->n && strcmp(arena + e->ids[k - 1], arena + e->ids[k]) < 0)
        k++;
    if (k >= e->n)
        return 0;
    const char **v = malloc(e->n * sizeof *v);
    if (!v)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    for (size_t i = 0; i < e->n; i++)
        v[i] = arena + e->ids[i];
    qsort(v, e->n, sizeof *v, str_ptr_cmp);
    size_t n = 0;
    for (size_t i = 0; i < e->n; i++)
        if (!n || strcmp(v[i], arena + e->ids[n - 1]))
            e->ids[n++] = (uint32_t)(v[i] - arena);
    e->n = n;
    free(v);
    return 0;
}

/* An entry file's bytes (docindex_encode_entry's) from a bucket: the
 * members before the ids encoded as that function does, with an empty
 * list, then the ids written into it; anything unexpected takes that
 * function itself, with the ids as a tree. */
static int encode_bucket(buf *out, const char *field, const bucket *e, const char *arena,
                         storh_err *err)
{
    size_t at = out->len;
    json_t *o = json_pack("{s:s, s:s, s:I, s:O, s:[]}", "field", field, "key", e->key, "count",
                          (json_int_t)e->n, "value", e->value ? e->value : json_null(), "ids");
    int rc = o ? sjson_encode_doc(out, o, 0, NULL) : -1;
    json_decref(o);
    if (!rc && out->len - at >= 4 && !memcmp(out->data + out->len - 4, "[]}\n", 4)) {
        out->len -= 3; /* after its '[' */
        for (size_t k = 0; k < e->n; k++) {
            if (k)
                buf_appendc(out, ',');
            const char *id = arena + e->ids[k];
            size_t il = strlen(id);
            if (il == UUID7_LEN && uuid7_is_valid(id, il)) { /* nothing to escape */
                buf_appendc(out, '"');
                buf_append(out, id, il);
                buf_appendc(out, '"');
            } else {
                sjson_encode_string(out, id, il);
            }
        }
        buf_append(out, "]}\n", 3);
        return buf_failed(out) ? storh_err_set(err, STORH_ENOMEM, "Out of memory.") : 0;
    }
    out->len = at;
    json_t *ids = json_array();
    for (size_t k = 0; ids && k < e->n; k++)
        if (json_array_append_new(ids, json_string(arena + e->ids[k]))) {
            json_decref(ids);
            ids = NULL;
        }
    rc = ids ? docindex_encode_entry(out, field, e->key, e->value, ids, err)
             : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    json_decref(ids);
    return rc;
}

static int write_buckets(docindex_build *b, pubset *set, bool fs, storh_err *err)
{
    docindex *ix = b->ix;
    for (size_t gi = 0; gi < ix->n + ix->n * ix->n; gi++) {
        bgroup *g = &b->groups[gi];
        bool compound = gi >= ix->n;
        const char *l = NULL, *r = NULL;
        if (compound) {
            l = ix->defs[(gi - ix->n) / ix->n].field;
            r = ix->defs[(gi - ix->n) % ix->n].field;
        }
        for (size_t k = 0; k < g->nb; k++) {
            bucket *e = &g->b[k];
            char p[PATH_MAX];
            int rc = compound ? docindex_compound_path(ix, l, r, e->key, p, err)
                              : docindex_eq_path(ix, g->name, e->key, p, err);
            if (!rc)
                rc = docindex_swap_path(ix, p, err);
            if (!rc && k == 0) { /* with syncfs, its commit makes new dirs durable */
                char dir[PATH_MAX];
                fsx_dirname(p, dir, sizeof dir);
                rc = fsx_mkdirs(dir, !fs, err);
            }
            if (!rc)
                rc = bucket_sort(e, b->ids.data, err);
            buf out = BUF_INIT;
            if (!rc)
                rc = encode_bucket(&out, g->name, e, b->ids.data, err);
            if (!rc)
                rc = pubset_add(set, p, out.data, out.len, err);
            buf_free(&out);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The buckets as the verify compares them: {group: {key: {"value", "ids"}}}
 * (equality groups, or compound ones). NULL when out of memory. */
static json_t *buckets_json(const docindex_build *b, bool compound)
{
    const docindex *ix = b->ix;
    json_t *map = json_object();
    for (size_t gi = compound ? ix->n : 0; map && gi < (compound ? ix->n + ix->n * ix->n : ix->n);
         gi++) {
        const bgroup *g = &b->groups[gi];
        if (!g->nb)
            continue;
        json_t *gj = json_object();
        for (size_t k = 0; gj && k < g->nb; k++) {
            const bucket *e = &g->b[k];
            json_t *ids = json_array();
            for (size_t i = 0; ids && i < e->n; i++) {
                if (json_array_append_new(ids, json_string(b->ids.data + e->ids[i]))) {
                    json_decref(ids);
                    ids = NULL;
                }
            }
            /* "o" steals ids, also when the pack fails */
            json_t *ej = ids ? json_pack("{s:O, s:o}", "value", e->value ? e->value : json_null(),
                                         "ids", ids)
                             : NULL;
            if (!ej || json_object_set_new(gj, e->key, ej)) {
                json_decref(gj);
                gj = NULL;
            }
        }
        if (!gj || json_object_set_new(map, g->name, gj)) {
            json_decref(map);
            map = NULL;
        }
    }
    return map;
}

int docindex_build_finish(docindex_build *b, bool save_defs, storh_err *err)
{
    docindex *ix = b->ix;
    /* every file of the build made durable together (pubset.h): one
     * syncfs before the renames and one after, where syncfs serves; it
     * makes the directories made here durable too. The build is written
     * beside the live entries (which keep serving until it is whole) and
     * swapped in (docindex_swap.c). */
    bool fs = docgroup_default_mode() != DOCGROUP_SYNC_EACH;
    int rc = docindex_swap_begin(ix, !fs, err);
    pubset *set = NULL;
    if (!rc)
        rc = pubset_begin(ix->dir, fs, &set, err);
    if (!rc)
        rc = write_buckets(b, set, fs, err);
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
        if (!rc)
            rc = docindex_swap_path(ix, p, err);
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
            rc = docindex_swap_path(ix, p, err);
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
    if (!rc)
        rc = docindex_swap_in(ix, err);
    else
        docindex_swap_drop(ix); /* the failed build's files */
    /* the definitions after their entries: a crash or a failure between
     * leaves entries no definition names yet (a superset: definitions are
     * only ever added), never a definition without its entries */
    if (!rc && save_defs)
        rc = docindex_save(ix, err);
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
    json_t *eq = buckets_json(b, false), *compound = buckets_json(b, true);
    if (!eqm || !cm || !rm || !eq || !compound) {
        json_decref(eqm);
        json_decref(cm);
        json_decref(rm);
        json_decref(eq);
        json_decref(compound);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
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
            verify_dir(ix, d->field, eq, false, eqm, errors);
            for (size_t j = i + 1; docindex_is_plain(d) && j < ix->n; j++) {
                if (!docindex_is_plain(&ix->defs[j]))
                    continue;
                char pair[512];
                snprintf(pair, sizeof pair, "%s\t%s", d->field, ix->defs[j].field);
                verify_dir(ix, pair, compound, true, cm, errors);
            }
        }
    }
    sorted_report(errors, eqm, "equality");
    sorted_report(errors, rm, "range");
    sorted_report(errors, cm, "compound");
    json_decref(eqm);
    json_decref(cm);
    json_decref(rm);
    json_decref(eq);
    json_decref(compound);
    return 0;
}
