#include "docindex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsx.h"
#include "idmap.h"
#include "sjson.h"
#include "xxhash.h"

#define RANGE_STRIDE 256
#define SHORT_STRING 96

static const char hexdig[] = "0123456789abcdef";

static void hex_append(buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        buf_appendc(out, hexdig[c >> 4]);
        buf_appendc(out, hexdig[c & 0xf]);
    }
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
    char *o = out;
    if (signbit(v)) {
        *o++ = '-';
        v = -v;
    }
    if (v == 0) {
        strcpy(o, "0");
        return;
    }
    char e[40];
    snprintf(e, sizeof e, "%.16e", v); /* 17 significant digits, correctly rounded */
    char d[20];
    int n = 0;
    const char *p = e;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            d[n++] = *p;
    int decpt = atoi(p + 1) + 1;
    while (n > 1 && d[n - 1] == '0')
        n--;
    if (decpt > 17 || decpt < -3) {
        *o++ = d[0];
        *o++ = '.';
        if (n > 1) {
            memcpy(o, d + 1, (size_t)n - 1);
            o += n - 1;
        } else {
            *o++ = '0';
        }
        sprintf(o, "E%c%d", decpt - 1 >= 0 ? '+' : '-', abs(decpt - 1));
        return;
    }
    if (decpt <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -decpt; i++)
            *o++ = '0';
        memcpy(o, d, (size_t)n);
        o += n;
    } else {
        for (int i = 0; i < decpt; i++)
            *o++ = i < n ? d[i] : '0';
        if (n > decpt) {
            *o++ = '.';
            memcpy(o, d + decpt, (size_t)(n - decpt));
            o += n - decpt;
        }
    }
    *o = '\0';
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
    case JSON_INTEGER:
        buf_appends(out, "i-");
        snprintf(tmp, sizeof tmp, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        mangle_append(out, tmp);
        break;
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
            snprintf(tmp, sizeof tmp, "n-%017" JSON_INTEGER_FORMAT "d000000",
                     json_integer_value(v));
            buf_appends(out, tmp);
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
    buf k = BUF_INIT;
    docindex_value_key(a, &k);
    buf_appendc(&k, '\0');
    docindex_value_key(b, &k);
    buf_appends(out, "c-");
    xxh128_append(out, k.data, k.len);
    buf_free(&k);
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
    json_array_foreach(fields, i, e)
    {
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
    return rc ? rc : read_manifest(ix, err);
}

void docindex_free(docindex *ix)
{
    defs_free(ix);
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

static int write_manifest(docindex *ix, storh_err *err)
{
    json_t *fields = json_array();
    for (size_t i = 0; i < ix->n; i++)
        json_array_append_new(fields, json_pack("{sssbsb}", "field", ix->defs[i].field, "unique",
                                                ix->defs[i].unique, "range", ix->defs[i].range));
    json_t *m = json_pack("{so}", "fields", fields);
    buf b = BUF_INIT;
    char p[PATH_MAX];
    int rc = sjson_encode_doc(&b, m, SJSON_PRETTY, err);
    json_decref(m);
    if (!rc)
        rc = manifest_path(ix, p, err);
    if (!rc)
        rc = fsx_publish(p, b.data, b.len, err);
    if (!rc)
        stat(p, &ix->manifest_st);
    buf_free(&b);
    return rc;
}

int docindex_define(docindex *ix, const idxdef *defs, size_t n, bool *changed, storh_err *err)
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
    return write_manifest(ix, err);
}

/* ---------- file paths ---------- */

static int eq_path(const docindex *ix, const char *field, const char *vk, char *out, storh_err *err)
{
    buf h = BUF_INIT;
    hex_append(&h, field, strlen(field));
    int rc = fsx_pathf(out, err, "%s/entries/eq/%s/%s.jsonc", ix->dir, h.data ? h.data : "", vk);
    buf_free(&h);
    return rc;
}

static int compound_path(const docindex *ix, const char *l, const char *r, const char *ck,
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

static int range_path(const docindex *ix, const char *field, const char *suffix, char *out,
                      storh_err *err)
{
    buf h = BUF_INIT;
    hex_append(&h, field, strlen(field));
    int rc = fsx_pathf(out, err, "%s/entries/range/%s%s", ix->dir, h.data ? h.data : "", suffix);
    buf_free(&h);
    return rc;
}

/* ---------- equality and compound files ---------- */

/* The canonical bytes storh and storhd write let readers skip the JSON
 * parse: {"field":..,"key":"K","count":N,"value":..,"ids":["<36>",...]}.
 * Returns false when the text is not in that shape (then parse it). */
static bool raw_entry(const char *t, size_t len, const char *key, json_t **ids, long long *count)
{
    char want[300];
    int wl = snprintf(want, sizeof want, "\"key\":\"%s\",\"count\":", key);
    if (wl <= 0 || (size_t)wl >= sizeof want || len < 20 || strncmp(t, "{\"field\":", 9) != 0)
        return false;
    const char *k = memmem(t, len, want, (size_t)wl);
    if (!k)
        return false;
    char *end;
    long long n = strtoll(k + wl, &end, 10);
    if (end == k + wl || *end != ',')
        return false;
    if (count)
        *count = n;
    if (!ids)
        return true;
    const char *p = memmem(end, len - (size_t)(end - t), ",\"ids\":[", 8);
    if (!p)
        return false;
    p += 8;
    const char *stop = t + len;
    json_t *out = json_array();
    while (p < stop && *p == '"') {
        if (p + 38 > stop || p[37] != '"') {
            json_decref(out);
            return false;
        }
        json_array_append_new(out, json_stringn(p + 1, 36));
        p += 38;
        if (p < stop && *p == ',')
            p++;
    }
    if (p >= stop || *p != ']' || (long long)json_array_size(out) != n) {
        json_decref(out);
        return false;
    }
    *ids = out;
    return true;
}

/* Reads the ids (and/or the count) of an entry file whose key must be key;
 * a missing file is empty. *ids is a new reference when ids is non-NULL. */
static int read_entry(const char *path, const char *key, json_t **ids, long long *count,
                      storh_err *err)
{
    buf b = BUF_INIT;
    int rc = fsx_read_all(path, &b, err);
    if (rc == STORH_ENOTFOUND) {
        buf_free(&b);
        if (ids)
            *ids = json_array();
        if (count)
            *count = 0;
        return 0;
    }
    if (rc) {
        buf_free(&b);
        return rc;
    }
    if (raw_entry(b.data, b.len, key, ids, count)) {
        buf_free(&b);
        return 0;
    }
    storh_err jerr;
    json_t *o = sjson_decode_jsonc_object(b.data, b.len, &jerr);
    buf_free(&b);
    json_t *k = json_object_get(o, "key"), *i = json_object_get(o, "ids");
    if (!o || !json_is_string(k) || !json_is_array(i)) {
        json_decref(o);
        return storh_err_set(err, STORH_ECORRUPT, "Malformed equality index: %s", path);
    }
    bool match = !strcmp(json_string_value(k), key);
    if (ids)
        *ids = match ? json_incref(i) : json_array();
    if (count)
        *count = match ? (long long)json_array_size(i) : 0;
    json_decref(o);
    return 0;
}

static int read_entry_ids(const char *path, const char *key, json_t **ids, storh_err *err)
{
    return read_entry(path, key, ids, NULL, err);
}

static int id_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

void docindex_sort_ids(json_t *ids)
{
    size_t n = json_array_size(ids);
    if (n < 2)
        return;
    json_t **v = malloc(n * sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(ids, i));
    qsort(v, n, sizeof *v, id_cmp);
    json_array_clear(ids);
    const char *last = NULL; /* the last id kept (v[i - 1] may be freed) */
    for (size_t i = 0; i < n; i++) {
        if (last && !strcmp(json_string_value(v[i]), last)) {
            json_decref(v[i]);
            continue;
        }
        json_array_append_new(ids, v[i]);
        last = json_string_value(v[i]);
    }
    free(v);
}

static int write_entry(const char *path, const char *field, const char *key, const json_t *value,
                       json_t *ids, storh_err *err)
{
    if (json_array_size(ids) == 0) {
        /* errno is only meaningful after a failed unlink: a stale ENOENT
         * must not skip the directory fsync that makes the removal durable */
        if (unlink(path) != 0)
            return errno == ENOENT
                       ? 0
                       : storh_err_sys(err, errno, "Could not delete index file %s", path);
        char dir[PATH_MAX];
        fsx_dirname(path, dir, sizeof dir);
        return fsx_fsync_dir(dir, err);
    }
    json_t *o = json_object();
    json_object_set_new(o, "field", json_string(field));
    json_object_set_new(o, "key", json_string(key));
    json_object_set_new(o, "count", json_integer((json_int_t)json_array_size(ids)));
    json_object_set(o, "value", value ? (json_t *)value : json_null());
    json_object_set(o, "ids", ids);
    buf b = BUF_INIT;
    int rc = sjson_encode_doc(&b, o, 0, err);
    json_decref(o);
    if (!rc)
        rc = fsx_publish(path, b.data, b.len, err);
    buf_free(&b);
    return rc;
}

static int entry_change(const char *path, const char *field, const char *key, const json_t *value,
                        const char *id, bool add, storh_err *err)
{
    json_t *ids;
    int rc = read_entry_ids(path, key, &ids, err);
    if (rc)
        return rc;
    size_t i;
    json_t *e;
    bool found = false;
    json_array_foreach(ids, i, e) if (!strcmp(json_string_value(e), id))
    {
        found = true;
        if (!add) {
            json_array_remove(ids, i);
            break;
        }
    }
    if (add && !found)
        json_array_append_new(ids, json_string(id));
    if (add == found) { /* nothing to change */
        json_decref(ids);
        return 0;
    }
    docindex_sort_ids(ids);
    rc = write_entry(path, field, key, value, ids, err);
    json_decref(ids);
    return rc;
}

/* ---------- range files ---------- */

typedef struct rentry {
    char *rk, *vk;
    json_t *value;
} rentry;

/* The effective (id -> entry) set of a range field: main file, then delta. */
typedef struct rset {
    idmap ids; /* id -> rentry */
} rset;

static void rset_free(rset *s)
{
    size_t pos = 0;
    const char *k;
    void *v;
    while (idmap_next(&s->ids, &pos, &k, &v)) {
        rentry *e = v;
        free(e->rk);
        free(e->vk);
        json_decref(e->value);
    }
    idmap_free(&s->ids);
}

static void rset_apply_line(rset *s, const json_t *line)
{
    json_t *key = json_object_get(line, "key"), *value = json_object_get(line, "value");
    json_t *add = json_object_get(line, "ids"), *rem = json_object_get(line, "remove");
    size_t i;
    json_t *id;
    json_array_foreach(rem, i, id)
    {
        const char *s_id = json_string_value(id);
        if (!s_id || json_string_length(id) != IDMAP_KEY)
            continue;
        rentry *e = idmap_get(&s->ids, s_id);
        if (e) {
            free(e->rk);
            free(e->vk);
            json_decref(e->value);
            idmap_del(&s->ids, s_id);
        }
    }
    json_array_foreach(add, i, id)
    {
        const char *s_id = json_string_value(id);
        if (!s_id || json_string_length(id) != IDMAP_KEY || !json_is_string(key))
            continue;
        bool created;
        rentry *e = idmap_put(&s->ids, s_id, &created);
        if (!e)
            continue;
        if (!created) {
            free(e->rk);
            free(e->vk);
            json_decref(e->value);
        }
        buf vk = BUF_INIT;
        docindex_value_key(value ? value : json_null(), &vk);
        e->rk = strdup(json_string_value(key));
        e->vk = vk.data ? vk.data : strdup("");
        e->value = value ? json_incref(value) : json_null();
    }
}

/* Applies every line of a range file. A last line without its LF is being
 * appended right now (by this process or another one: appends are not
 * atomic for readers) or was torn by a crash, so it does not exist yet;
 * writers complete or cut such a tail before they append (tail_repair).
 * Strings may hold U+0000 (written as \u0000). */
static int rset_read_file(rset *s, const char *path, storh_err *err)
{
    buf b = BUF_INIT;
    int rc = fsx_read_all(path, &b, err);
    if (rc == STORH_ENOTFOUND) {
        buf_free(&b);
        return 0;
    }
    for (size_t pos = 0; !rc && pos < b.len;) {
        const char *nl = memchr(b.data + pos, '\n', b.len - pos);
        if (!nl)
            break;
        size_t end = (size_t)(nl - b.data);
        if (end > pos) {
            json_t *line = json_loadb(b.data + pos, end - pos, JSON_ALLOW_NUL, NULL);
            if (!json_is_object(line) || !json_is_string(json_object_get(line, "key")))
                rc = storh_err_set(err, STORH_ECORRUPT, "Malformed range index line: %s", path);
            else
                rset_apply_line(s, line);
            json_decref(line);
        }
        pos = end + 1;
    }
    buf_free(&b);
    return rc;
}

static int rset_load(docindex *ix, const char *field, rset *s, storh_err *err)
{
    idmap_init(&s->ids, sizeof(rentry));
    char p[PATH_MAX];
    int rc = range_path(ix, field, ".jsonl", p, err);
    if (!rc)
        rc = rset_read_file(s, p, err);
    if (!rc)
        rc = range_path(ix, field, ".delta.jsonl", p, err);
    if (!rc)
        rc = rset_read_file(s, p, err);
    if (rc)
        rset_free(s);
    return rc;
}

static void range_line(buf *out, const char *rk, const json_t *value, const char *add,
                       const char *remove)
{
    json_t *o = json_object();
    json_object_set_new(o, "key", json_string(rk));
    json_object_set(o, "value", (json_t *)value);
    json_object_set_new(o, "count", json_integer(add ? 1 : -1));
    json_object_set_new(o, "ids", add ? json_pack("[s]", add) : json_array());
    json_object_set_new(o, "remove", remove ? json_pack("[s]", remove) : json_array());
    sjson_encode(out, o, 0, NULL);
    buf_appendc(out, '\n');
    json_decref(o);
}

/* Under the write lock, a delta that does not end with LF holds the torn
 * tail of a writer that died mid-append (readers ignore it). Appending after
 * it would glue it to the new line and make both unreadable: a tail that is
 * a whole line only lacks its LF (*lf tells to write one first); anything
 * else is cut off (it was never acknowledged). */
static int tail_repair(int fd, const char *path, bool *lf, storh_err *err)
{
    *lf = false;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return storh_err_sys(err, errno, "Could not stat %s", path);
    char last;
    if (st.st_size == 0 || (pread(fd, &last, 1, st.st_size - 1) == 1 && last == '\n'))
        return 0;
    buf b = BUF_INIT;
    int rc = fsx_read_all(path, &b, err);
    if (rc) {
        buf_free(&b);
        return rc;
    }
    size_t start = b.len;
    while (start > 0 && b.data[start - 1] != '\n')
        start--;
    json_t *line = json_loadb(b.data + start, b.len - start, JSON_ALLOW_NUL, NULL);
    if (json_is_object(line) && json_is_string(json_object_get(line, "key")))
        *lf = true;
    else if (ftruncate(fd, (off_t)start) != 0 || fsync(fd) != 0)
        rc = storh_err_sys(err, errno, "Could not cut the torn tail of %s", path);
    json_decref(line);
    buf_free(&b);
    return rc;
}

static int append_synced(const char *path, const char *data, size_t len, storh_err *err)
{
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    int rc = fsx_mkdirs(dir, true, err);
    if (rc)
        return rc;
    /* a file this call creates is durable only once its directory is synced */
    bool created = false;
    int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        created = fd >= 0;
        if (fd < 0 && errno == EEXIST)
            fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    }
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open storage file for appending: %s", path);
    bool lf;
    if ((rc = tail_repair(fd, path, &lf, err))) {
        close(fd);
        return rc;
    }
    if (lf && write(fd, "\n", 1) != 1) {
        int e = errno;
        close(fd);
        return storh_err_sys(err, e, "Could not write storage file: %s", path);
    }
    ssize_t w = write(fd, data, len);
    if (w != (ssize_t)len || fsync(fd) != 0) {
        int e = w < 0 ? errno : (w != (ssize_t)len ? ENOSPC : errno);
        close(fd);
        return storh_err_sys(err, e, "Could not write storage file: %s", path);
    }
    close(fd);
    return created ? fsx_fsync_dir(dir, err) : 0;
}

/* ---------- maintenance ---------- */

static bool is_plain(const idxdef *d)
{
    return !d->unique && !d->range;
}

int docindex_check_unique(docindex *ix, const char *id, const json_t *data, storh_err *err)
{
    for (size_t i = 0; i < ix->n; i++) {
        const idxdef *d = &ix->defs[i];
        json_t *v = json_is_object(data) ? json_object_get(data, d->field) : NULL;
        if (!d->unique || !docindex_indexable(v))
            continue;
        json_t *ids = NULL;
        qcond c = {d->field, QOP_EQ, v};
        int rc = docindex_candidates(ix, &c, &ids, err);
        if (rc)
            return rc;
        size_t k;
        json_t *e;
        bool clash = false;
        json_array_foreach(ids, k, e) clash = clash || strcmp(json_string_value(e), id) != 0;
        json_decref(ids);
        if (clash)
            return storh_err_set(err, STORH_ECONFLICT, "Unique index violation on field: %s",
                                 d->field);
    }
    return 0;
}

/* Adds (add) or removes the entries of one record. */
static int change_record(docindex *ix, const char *id, const json_t *data, bool add, storh_err *err)
{
    if (!json_is_object(data))
        return 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < ix->n; i++) {
        const idxdef *d = &ix->defs[i];
        json_t *v = json_object_get(data, d->field);
        if (!docindex_indexable(v))
            continue;
        char p[PATH_MAX];
        buf k = BUF_INIT;
        if (d->range) {
            docindex_range_key(v, &k);
            buf line = BUF_INIT;
            range_line(&line, k.data, v, add ? id : NULL, add ? NULL : id);
            rc = range_path(ix, d->field, ".delta.jsonl", p, err);
            if (!rc)
                rc = append_synced(p, line.data, line.len, err);
            buf_free(&line);
        } else {
            docindex_value_key(v, &k);
            rc = eq_path(ix, d->field, k.data, p, err);
            if (!rc) {
                char dir[PATH_MAX];
                fsx_dirname(p, dir, sizeof dir);
                rc = fsx_mkdirs(dir, true, err);
            }
            if (!rc)
                rc = entry_change(p, d->field, k.data, v, id, add, err);
        }
        buf_free(&k);
        /* compound buckets: every pair of plain fields present */
        if (rc || !is_plain(d))
            continue;
        for (size_t j = i + 1; !rc && j < ix->n; j++) {
            const idxdef *d2 = &ix->defs[j];
            json_t *v2 = json_object_get(data, d2->field);
            if (!is_plain(d2) || !docindex_indexable(v2))
                continue;
            buf ck = BUF_INIT, field = BUF_INIT;
            docindex_compound_key(v, v2, &ck);
            buf_appends(&field, d->field);
            buf_appendc(&field, '\t');
            buf_appends(&field, d2->field);
            rc = compound_path(ix, d->field, d2->field, ck.data, p, err);
            if (!rc) {
                char dir[PATH_MAX];
                fsx_dirname(p, dir, sizeof dir);
                rc = fsx_mkdirs(dir, true, err);
            }
            if (!rc)
                rc = entry_change(p, field.data, ck.data, NULL, id, add, err);
            buf_free(&ck);
            buf_free(&field);
        }
    }
    return rc;
}

int docindex_update(docindex *ix, const char *id, const json_t *old, const json_t *nw,
                    storh_err *err)
{
    int rc = old ? change_record(ix, id, old, false, err) : 0;
    return rc ? rc : (nw ? change_record(ix, id, nw, true, err) : 0);
}

/* ---------- lookups ---------- */

static bool range_op(qop op)
{
    return op == QOP_GT || op == QOP_GTE || op == QOP_LT || op == QOP_LTE || op == QOP_BETWEEN ||
           op == QOP_PREFIX;
}

bool docindex_serves(const docindex *ix, const qcond *c)
{
    const idxdef *d = docindex_def(ix, c->field);
    if (!d)
        return false;
    if (c->op == QOP_EQ)
        return docindex_indexable(c->value);
    if (c->op == QOP_IN) { /* arrays and objects have no entries: a scan finds them */
        size_t i;
        json_t *e;
        json_array_foreach(c->value, i, e) if (!docindex_indexable(e)) return false;
        return true;
    }
    return d->range && range_op(c->op);
}

static int range_candidates(docindex *ix, const qcond *c, json_t **ids, storh_err *err)
{
    rset s;
    int rc = rset_load(ix, c->field, &s, err);
    if (rc)
        return rc;
    json_t *out = json_array();
    size_t pos = 0;
    const char *k;
    void *v;
    if (c->op == QOP_EQ || c->op == QOP_IN) {
        size_t n = c->op == QOP_IN ? json_array_size(c->value) : 1;
        for (size_t i = 0; i < n; i++) {
            const json_t *want = c->op == QOP_IN ? json_array_get(c->value, i) : c->value;
            if (!docindex_indexable(want))
                continue;
            buf rk = BUF_INIT;
            docindex_range_key(want, &rk);
            pos = 0;
            while (idmap_next(&s.ids, &pos, &k, &v)) {
                rentry *e = v;
                if (!strcmp(e->rk, rk.data) && query_strict_equal(e->value, want))
                    json_array_append_new(out, json_stringn(k, IDMAP_KEY));
            }
            buf_free(&rk);
        }
    } else {
        /* The range key orders only part of the values (negative numbers sort
         * after positive ones, floats tie at 6 decimals, types sort apart
         * from compare()'s cross-type order), so no key window is exact:
         * each entry's own value decides, as in a scan. */
        while (idmap_next(&s.ids, &pos, &k, &v)) {
            rentry *e = v;
            if (query_cond_value(c, e->value))
                json_array_append_new(out, json_stringn(k, IDMAP_KEY));
        }
    }
    rset_free(&s);
    docindex_sort_ids(out);
    *ids = out;
    return 0;
}

int docindex_candidates(docindex *ix, const qcond *c, json_t **ids, storh_err *err)
{
    const idxdef *d = docindex_def(ix, c->field);
    if (!d)
        return storh_err_set(err, STORH_EINVAL, "No index on %s.", c->field);
    if (d->range)
        return range_candidates(ix, c, ids, err);
    json_t *out = json_array();
    size_t n = c->op == QOP_IN ? json_array_size(c->value) : 1;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const json_t *want = c->op == QOP_IN ? json_array_get(c->value, i) : c->value;
        if (!docindex_indexable(want))
            continue; /* arrays are never indexed */
        buf vk = BUF_INIT;
        docindex_value_key(want, &vk);
        char p[PATH_MAX];
        json_t *part = NULL;
        rc = eq_path(ix, c->field, vk.data, p, err);
        if (!rc)
            rc = read_entry_ids(p, vk.data, &part, err);
        if (!rc)
            json_array_extend(out, part);
        json_decref(part);
        buf_free(&vk);
    }
    if (rc) {
        json_decref(out);
        return rc;
    }
    if (n > 1) /* one file's ids are sorted already */
        docindex_sort_ids(out);
    *ids = out;
    return 0;
}

int docindex_count(docindex *ix, const qcond *c, long long *count, bool *served, storh_err *err)
{
    *served = false;
    *count = 0;
    const idxdef *d = docindex_def(ix, c->field);
    if (!d || d->range || (c->op != QOP_EQ && c->op != QOP_IN))
        return 0;
    size_t n = c->op == QOP_IN ? json_array_size(c->value) : 1;
    json_t *seen = json_object(); /* in() with a repeated value counts once */
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const json_t *want = c->op == QOP_IN ? json_array_get(c->value, i) : c->value;
        if (!docindex_indexable(want))
            continue;
        buf vk = BUF_INIT;
        docindex_value_key(want, &vk);
        char p[PATH_MAX];
        long long k = 0;
        if (!json_object_get(seen, vk.data)) {
            json_object_set_new(seen, vk.data, json_true());
            rc = eq_path(ix, c->field, vk.data, p, err);
            if (!rc)
                rc = read_entry(p, vk.data, NULL, &k, err);
            *count += k;
        }
        buf_free(&vk);
    }
    json_decref(seen);
    *served = rc == 0;
    return rc;
}

int docindex_compound_ids(docindex *ix, const char *f1, const json_t *v1, const char *f2,
                          const json_t *v2, json_t **ids, bool *served, storh_err *err)
{
    *served = false;
    const idxdef *d1 = docindex_def(ix, f1), *d2 = docindex_def(ix, f2);
    if (!d1 || !d2 || !is_plain(d1) || !is_plain(d2) || !strcmp(f1, f2) ||
        !docindex_indexable(v1) || !docindex_indexable(v2))
        return 0;
    if (strcmp(f1, f2) > 0) { /* the left field sorts first */
        const char *tf = f1;
        const json_t *tv = v1;
        f1 = f2;
        v1 = v2;
        f2 = tf;
        v2 = tv;
    }
    buf ck = BUF_INIT;
    docindex_compound_key(v1, v2, &ck);
    char p[PATH_MAX];
    int rc = compound_path(ix, f1, f2, ck.data, p, err);
    if (!rc)
        rc = read_entry_ids(p, ck.data, ids, err);
    buf_free(&ck);
    *served = rc == 0;
    return rc;
}

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
    *out = b;
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
    json_array_append_new(json_object_get(e, "ids"), json_string(id));
}

int docindex_build_add(docindex_build *b, const char *id, const json_t *data, storh_err *err)
{
    docindex *ix = b->ix;
    b->entries++;
    if (!json_is_object(data))
        return 0;
    for (size_t i = 0; i < ix->n; i++) {
        const idxdef *d = &ix->defs[i];
        json_t *v = json_object_get(data, d->field);
        if (!docindex_indexable(v))
            continue;
        buf k = BUF_INIT;
        if (d->range) {
            buf vk = BUF_INIT, line = BUF_INIT;
            docindex_range_key(v, &k);
            docindex_value_key(v, &vk);
            range_line(&line, k.data, v, id, NULL);
            buf s = BUF_INIT;
            buf_append(&s, k.data, k.len);
            buf_appendc(&s, '\t');
            buf_append(&s, vk.data, vk.len);
            buf_appendc(&s, '\t');
            buf_append(&s, line.data, line.len - 1); /* without its LF */
            if (b->nrange[i] == b->caprange[i]) {
                size_t cap = b->caprange[i] ? b->caprange[i] * 2 : 256;
                rline *n = realloc(b->range[i], cap * sizeof *n);
                if (!n)
                    return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
                b->range[i] = n;
                b->caprange[i] = cap;
            }
            b->range[i][b->nrange[i]++].sort = s.data;
            buf_free(&vk);
            buf_free(&line);
        } else {
            docindex_value_key(v, &k);
            bucket_add(b->eq, d->field, k.data, v, id);
            for (size_t j = i + 1; is_plain(d) && j < ix->n; j++) {
                const idxdef *d2 = &ix->defs[j];
                json_t *v2 = json_object_get(data, d2->field);
                if (!is_plain(d2) || !docindex_indexable(v2))
                    continue;
                buf ck = BUF_INIT, pair = BUF_INIT;
                docindex_compound_key(v, v2, &ck);
                buf_appends(&pair, d->field);
                buf_appendc(&pair, '\t');
                buf_appends(&pair, d2->field);
                bucket_add(b->compound, pair.data, ck.data, NULL, id);
                buf_free(&ck);
                buf_free(&pair);
            }
        }
        buf_free(&k);
    }
    return 0;
}

void docindex_build_abort(docindex_build *b)
{
    if (!b)
        return;
    json_decref(b->eq);
    json_decref(b->compound);
    for (size_t i = 0; i < b->ix->n; i++) {
        for (size_t k = 0; k < b->nrange[i]; k++)
            free(b->range[i][k].sort);
        free(b->range[i]);
    }
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

static int write_buckets(docindex *ix, json_t *map, bool compound, storh_err *err)
{
    const char *group;
    json_t *g;
    json_object_foreach(map, group, g)
    {
        const char *key;
        json_t *e;
        char l[256] = "", r[256] = "";
        if (compound) {
            const char *tab = strchr(group, '\t');
            snprintf(l, sizeof l, "%.*s", (int)(tab - group), group);
            snprintf(r, sizeof r, "%s", tab + 1);
        }
        bool first = true;
        json_object_foreach(g, key, e)
        {
            char p[PATH_MAX];
            int rc =
                compound ? compound_path(ix, l, r, key, p, err) : eq_path(ix, group, key, p, err);
            if (!rc && first) {
                char dir[PATH_MAX];
                fsx_dirname(p, dir, sizeof dir);
                rc = fsx_mkdirs(dir, true, err);
                first = false;
            }
            json_t *ids = json_object_get(e, "ids");
            docindex_sort_ids(ids);
            if (!rc)
                rc = write_entry(p, group, key, compound ? NULL : json_object_get(e, "value"), ids,
                                 err);
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
    if (!rc)
        rc = write_buckets(ix, b->eq, false, err);
    if (!rc)
        rc = write_buckets(ix, b->compound, true, err);
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
        rc = range_path(ix, ix->defs[i].field, ".jsonl", p, err);
        if (!rc) {
            fsx_dirname(p, dir, sizeof dir);
            rc = fsx_mkdirs(dir, true, err);
        }
        if (!rc)
            rc = fsx_publish(p, main.data, main.len, err);
        json_t *idx = json_pack("{siso}", "stride", RANGE_STRIDE, "checkpoints", cps);
        buf ib = BUF_INIT;
        if (!rc)
            rc = sjson_encode_doc(&ib, idx, 0, err);
        if (!rc)
            rc = range_path(ix, ix->defs[i].field, ".idx.jsonc", p, err);
        if (!rc)
            rc = fsx_publish(p, ib.data, ib.len, err);
        json_decref(idx);
        buf_free(&ib);
        buf_free(&main);
    }
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
        compound_path(ix, l, r, "x", p, NULL);
    } else {
        eq_path(ix, group, "x", p, NULL);
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
    json_object_foreach(g, key, e)
    {
        json_t *have = json_object_get(seen, key), *want = json_object_get(e, "ids");
        docindex_sort_ids(want);
        if (!have || !json_equal(have, want)) {
            char id[600];
            snprintf(id, sizeof id, "%s %s", group, key);
            json_array_append_new(mismatch, json_string(id));
        }
    }
    json_object_foreach(seen, key, e)
    {
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
            if (rset_load(ix, d->field, &s, err) != 0) {
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
            json_object_foreach(want, id, w) json_array_append(rm, w);
            json_decref(want);
            rset_free(&s);
        } else {
            verify_dir(ix, d->field, b->eq, false, eqm, errors);
            for (size_t j = i + 1; is_plain(d) && j < ix->n; j++) {
                if (!is_plain(&ix->defs[j]))
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
