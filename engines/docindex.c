#include "docindex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docindex_int.h"
#include "fsx.h"
#include "idmap.h"
#include "sjson.h"
#include "xxhash.h"

#define SHORT_STRING 96

static const char hexdig[] = "0123456789abcdef";

/* n bytes of s as lowercase hex at out (room for 2n checked by the
 * caller): the end of what it wrote. */
static char *hex_put(char *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        *out++ = hexdig[c >> 4];
        *out++ = hexdig[c & 0xf];
    }
    return out;
}

static void hex_append(buf *out, const char *s, size_t n)
{
    if (!buf_reserve(out, 2 * n))
        return;
    hex_put(out->data + out->len, s, n);
    out->len += 2 * n;
    out->data[out->len] = '\0';
}

static void xxh128_append(buf *out, const char *s, size_t n)
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(s, n));
    hex_append(out, (const char *)c.digest, sizeof c.digest);
}

/* ---------- keys ---------- */

bool docindex_indexable(const json_t *v)
{
    return v && !json_is_object(v) && !json_is_array(v);
}

void docindex_g17(double v, char out[40])
{
    sjson_format_g17(v, out); /* the one %.17G printer */
}

static void mangle_append(buf *out, const char *s)
{
    for (; *s; s++)
        buf_appendc(out, *s == '-' ? 'm' : *s == '.' ? 'd' : *s == '+' ? 'p' : *s);
}

void docindex_value_key(const json_t *v, buf *out)
{
    char tmp[48];
    switch (json_typeof(v)) {
    case JSON_INTEGER: {
        /* "%lld" with '-' mangled to 'm' */
        json_int_t i = json_integer_value(v);
        buf_appends(out, i < 0 ? "i-m" : "i-");
        buf_append_u64(out, i < 0 ? 0 - (unsigned long long)i : (unsigned long long)i);
        break;
    }
    case JSON_STRING:
        buf_appends(out, "s-");
        if (json_string_length(v) <= SHORT_STRING)
            hex_append(out, json_string_value(v), json_string_length(v));
        else
            xxh128_append(out, json_string_value(v), json_string_length(v));
        break;
    case JSON_TRUE:
        buf_appends(out, "b-1");
        break;
    case JSON_FALSE:
        buf_appends(out, "b-0");
        break;
    case JSON_REAL:
        buf_appends(out, "f-");
        docindex_g17(json_real_value(v), tmp);
        mangle_append(out, tmp);
        break;
    default:
        buf_appends(out, "n");
    }
}

void docindex_range_key(const json_t *v, buf *out)
{
    char tmp[400];
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        if (json_integer_value(v) >= 0) {
            /* "n-%017lldd000000" (the mangled "%024.6f"), without printf */
            unsigned long long u = (unsigned long long)json_integer_value(v);
            char *e = tmp + 64, *p = e;
            do {
                *--p = (char)('0' + u % 10);
                u /= 10;
            } while (u);
            while (e - p < 17)
                *--p = '0';
            buf_appends(out, "n-");
            buf_append(out, p, (size_t)(e - p));
            buf_append(out, "d000000", 7);
            break;
        }
        /* fall through - negative ints use the float layout */
    case JSON_REAL: {
        double d = json_number_value(v);
        if (d == 0)
            d = 0.0; /* PHP drops the sign of negative zero here */
        snprintf(tmp, sizeof tmp, "%024.6f", d);
        buf_appends(out, "n-");
        mangle_append(out, tmp);
        break;
    }
    case JSON_STRING:
        buf_appends(out, "s-");
        hex_append(out, json_string_value(v), json_string_length(v));
        break;
    case JSON_TRUE:
        buf_appends(out, "b-1");
        break;
    case JSON_FALSE:
        buf_appends(out, "b-0");
        break;
    default:
        buf_appends(out, "z-n");
    }
}

void docindex_compound_key(const json_t *a, const json_t *b, buf *out)
{
    buf ka = BUF_INIT, kb = BUF_INIT;
    docindex_value_key(a, &ka);
    docindex_value_key(b, &kb);
    docindex_compound_key_of(ka.data, ka.len, kb.data, kb.len, out);
    buf_free(&ka);
    buf_free(&kb);
}

void docindex_compound_key_of(const char *ka, size_t la, const char *kb, size_t lb, buf *out)
{
    /* the hash of "ka NUL kb", joined on the stack when it fits */
    char tmp[256];
    buf big = BUF_INIT;
    const char *k = tmp;
    size_t n = la + 1 + lb;
    if (n <= sizeof tmp) {
        memcpy(tmp, ka, la);
        tmp[la] = '\0';
        memcpy(tmp + la + 1, kb, lb);
    } else {
        buf_append(&big, ka, la);
        buf_appendc(&big, '\0');
        buf_append(&big, kb, lb);
        k = big.data;
    }
    buf_appends(out, "c-");
    xxh128_append(out, k, n);
    buf_free(&big);
}

/* ---------- definitions ---------- */

static int def_cmp(const void *a, const void *b)
{
    return strcmp(((const idxdef *)a)->field, ((const idxdef *)b)->field);
}

static void defs_free(docindex *ix)
{
    for (size_t i = 0; i < ix->n; i++)
        free(ix->defs[i].field);
    free(ix->defs);
    ix->defs = NULL;
    ix->n = 0;
}

static int manifest_path(const docindex *ix, char *out, storh_err *err)
{
    return fsx_pathf(out, err, "%s/manifest.jsonc", ix->dir);
}

static int read_manifest(docindex *ix, storh_err *err)
{
    defs_free(ix);
    char p[PATH_MAX];
    int rc = manifest_path(ix, p, err);
    if (rc)
        return rc;
    memset(&ix->manifest_st, 0, sizeof ix->manifest_st);
    buf b = BUF_INIT;
    rc = fsx_read_all(p, &b, err);
    if (rc == STORH_ENOTFOUND) {
        buf_free(&b);
        return 0;
    }
    if (rc) {
        buf_free(&b);
        return rc;
    }
    stat(p, &ix->manifest_st);
    storh_err jerr;
    json_t *m = sjson_decode_jsonc_object(b.data, b.len, &jerr);
    buf_free(&b);
    if (!m)
        return storh_err_set(err, STORH_ECORRUPT, "Unreadable index manifest %s: %s", p, jerr.msg);
    json_t *fields = json_object_get(m, "fields");
    size_t i;
    json_t *e;
    ix->defs = calloc(json_array_size(fields) + 1, sizeof *ix->defs);
    json_array_foreach (fields, i, e) {
        json_t *f = json_object_get(e, "field");
        if (!json_is_string(f) || !ix->defs)
            continue; /* storh skips entries without a string field */
        idxdef *d = &ix->defs[ix->n++];
        d->field = strdup(json_string_value(f));
        d->unique = json_is_true(json_object_get(e, "unique"));
        d->range = json_is_true(json_object_get(e, "range"));
    }
    json_decref(m);
    qsort(ix->defs, ix->n, sizeof *ix->defs, def_cmp);
    return 0;
}

int docindex_load(docindex *ix, const char *coll_dir, storh_err *err)
{
    memset(ix, 0, sizeof *ix);
    int rc = fsx_pathf(ix->dir, err, "%s/.storh/indexes", coll_dir);
    if (!rc)
        ix->mem = docindex_mem_new(); /* none (out of memory): lookups read the files */
    if (!rc && (rc = read_manifest(ix, err)) != 0) {
        docindex_mem_free(ix->mem);
        ix->mem = NULL;
    }
    return rc;
}

void docindex_free(docindex *ix)
{
    defs_free(ix);
    docindex_mem_free(ix->mem);
    ix->mem = NULL;
}

int docindex_refresh(docindex *ix, storh_err *err)
{
    char p[PATH_MAX];
    struct stat st;
    if (manifest_path(ix, p, err) != 0)
        return STORH_EINVAL;
    bool exists = stat(p, &st) == 0;
    if (!exists && ix->manifest_st.st_ino == 0)
        return 0;
    if (exists && st.st_ino == ix->manifest_st.st_ino && st.st_size == ix->manifest_st.st_size &&
        st.st_mtim.tv_sec == ix->manifest_st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == ix->manifest_st.st_mtim.tv_nsec)
        return 0;
    return read_manifest(ix, err);
}

bool docindex_active(const docindex *ix)
{
    return ix->n > 0;
}

const idxdef *docindex_def(const docindex *ix, const char *field)
{
    for (size_t i = 0; i < ix->n; i++)
        if (!strcmp(ix->defs[i].field, field))
            return &ix->defs[i];
    return NULL;
}

int docindex_manifest_encode(const docindex *ix, buf *out, char *path, storh_err *err)
{
    json_t *fields = json_array();
    for (size_t i = 0; i < ix->n; i++)
        json_array_append_new(fields, json_pack("{sssbsb}", "field", ix->defs[i].field, "unique",
                                                ix->defs[i].unique, "range", ix->defs[i].range));
    json_t *m = json_pack("{so}", "fields", fields);
    int rc = sjson_encode_doc(out, m, SJSON_PRETTY, err);
    json_decref(m);
    return rc ? rc : manifest_path(ix, path, err);
}

void docindex_manifest_saved(docindex *ix)
{
    char p[PATH_MAX];
    if (manifest_path(ix, p, NULL) == 0)
        stat(p, &ix->manifest_st);
}

int docindex_save(docindex *ix, storh_err *err)
{
    buf b = BUF_INIT;
    char p[PATH_MAX];
    int rc = docindex_manifest_encode(ix, &b, p, err);
    if (!rc)
        rc = fsx_publish(p, b.data, b.len, err);
    if (!rc)
        docindex_manifest_saved(ix);
    buf_free(&b);
    return rc;
}

int docindex_merge(docindex *ix, const idxdef *defs, size_t n, bool *changed, storh_err *err)
{
    *changed = false;
    for (size_t i = 0; i < n; i++) {
        const char *f = defs[i].field;
        if (!f || strspn(f, " \t\n\r\v") == strlen(f))
            return storh_err_set(err, STORH_EINVAL, "Index field cannot be empty.");
        if (sjson_is_int_key(f, strlen(f)))
            return storh_err_set(err, STORH_EINVAL,
                                 "Index field %.64s looks like an integer; storh cannot index it.",
                                 f);
    }
    for (size_t i = 0; i < n; i++) {
        idxdef *d = (idxdef *)docindex_def(ix, defs[i].field);
        if (!d) {
            idxdef *nd = realloc(ix->defs, (ix->n + 1) * sizeof *nd);
            if (!nd)
                return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
            ix->defs = nd;
            d = &ix->defs[ix->n++];
            d->field = strdup(defs[i].field);
            d->unique = d->range = false;
            *changed = true;
        }
        if ((defs[i].unique && !d->unique) || (defs[i].range && !d->range))
            *changed = true;
        d->unique = d->unique || defs[i].unique;
        d->range = d->range || defs[i].range;
    }
    qsort(ix->defs, ix->n, sizeof *ix->defs, def_cmp);
    return 0;
}

int docindex_reload(docindex *ix, storh_err *err)
{
    return read_manifest(ix, err);
}

/* ---------- file paths ---------- */

/* Appends n bytes of s to out (room checked by the caller). */
static char *put(char *out, const char *s, size_t n)
{
    memcpy(out, s, n);
    return out + n;
}

int docindex_eq_path(const docindex *ix, const char *field, const char *vk, char *out,
                     storh_err *err)
{
    /* by hand, not printf: every lookup and count makes this path, and
     * formatting it cost as much as the count's own work */
    static const char mid[] = "/entries/eq/", ext[] = ".jsonc";
    if (!vk) /* the key's buffer ran out of memory */
        return storh_err_oom(err);
    size_t dl = strlen(ix->dir), fl = strlen(field), vl = strlen(vk);
    if (dl + sizeof mid - 1 + 2 * fl + 1 + vl + sizeof ext > PATH_MAX)
        return storh_err_set(err, STORH_EINVAL, "Path too long.");
    char *p = put(out, ix->dir, dl);
    p = hex_put(put(p, mid, sizeof mid - 1), field, fl);
    *p++ = '/';
    p = put(p, vk, vl);
    memcpy(p, ext, sizeof ext);
    return 0;
}

int docindex_compound_path(const docindex *ix, const char *l, const char *r, const char *ck,
                           char *out, storh_err *err)
{
    buf h = BUF_INIT;
    hex_append(&h, l, strlen(l));
    buf_appendc(&h, '-');
    hex_append(&h, r, strlen(r));
    int rc = fsx_pathf(out, err, "%s/entries/compound/%s/%s.jsonc", ix->dir, h.data, ck);
    buf_free(&h);
    return rc;
}

int docindex_range_path(const docindex *ix, const char *field, const char *suffix, char *out,
                        storh_err *err)
{
    buf h = BUF_INIT;
    hex_append(&h, field, strlen(field));
    int rc = fsx_pathf(out, err, "%s/entries/range/%s%s", ix->dir, h.data ? h.data : "", suffix);
    buf_free(&h);
    return rc;
}
