/* docindex: equality and compound entry files, range files (main, delta). */
#include "docindex_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsx.h"
#include "sjson.h"

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
int docindex_read_entry(const char *path, const char *key, json_t **ids, long long *count,
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

int docindex_read_entry_ids(const char *path, const char *key, json_t **ids, storh_err *err)
{
    return docindex_read_entry(path, key, ids, NULL, err);
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
    /* ids gathered in order (a build's scan) are sorted already: one pass */
    size_t k = 1;
    while (k < n && strcmp(json_string_value(json_array_get(ids, k - 1)),
                           json_string_value(json_array_get(ids, k))) < 0)
        k++;
    if (k == n)
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

int docindex_encode_entry(buf *out, const char *field, const char *key, const json_t *value,
                          json_t *ids, storh_err *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "field", json_string(field));
    json_object_set_new(o, "key", json_string(key));
    json_object_set_new(o, "count", json_integer((json_int_t)json_array_size(ids)));
    json_object_set(o, "value", value ? (json_t *)value : json_null());
    json_object_set(o, "ids", ids);
    int rc = sjson_encode_doc(out, o, 0, err);
    json_decref(o);
    return rc;
}

int docindex_write_entry(const char *path, const char *field, const char *key, const json_t *value,
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
    buf b = BUF_INIT;
    int rc = docindex_encode_entry(&b, field, key, value, ids, err);
    if (!rc)
        rc = fsx_publish(path, b.data, b.len, err);
    buf_free(&b);
    return rc;
}

int docindex_entry_change(const char *path, const char *field, const char *key, const json_t *value,
                          const char *id, bool add, storh_err *err)
{
    json_t *ids;
    int rc = docindex_read_entry_ids(path, key, &ids, err);
    if (rc)
        return rc;
    size_t i;
    json_t *e;
    bool found = false;
    json_array_foreach (ids, i, e)
        if (!strcmp(json_string_value(e), id)) {
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
    rc = docindex_write_entry(path, field, key, value, ids, err);
    json_decref(ids);
    return rc;
}

/* ---------- range files ---------- */

void docindex_rset_free(rset *s)
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

void docindex_rset_apply_line(rset *s, const json_t *line)
{
    json_t *key = json_object_get(line, "key"), *value = json_object_get(line, "value");
    json_t *add = json_object_get(line, "ids"), *rem = json_object_get(line, "remove");
    size_t i;
    json_t *id;
    json_array_foreach (rem, i, id) {
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
    json_array_foreach (add, i, id) {
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
static int rset_read_file(rset *s, const char *path, docindex_fstate *st, storh_err *err)
{
    buf b = BUF_INIT;
    int rc = st ? docindex_read_state(path, &b, st, err) : fsx_read_all(path, &b, err);
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
                docindex_rset_apply_line(s, line);
            json_decref(line);
        }
        pos = end + 1;
    }
    buf_free(&b);
    return rc;
}

int docindex_rset_load_states(docindex *ix, const char *field, rset *s, docindex_fstate st[2],
                              storh_err *err)
{
    idmap_init(&s->ids, sizeof(rentry));
    char p[PATH_MAX];
    int rc = docindex_range_path(ix, field, ".jsonl", p, err);
    if (!rc)
        rc = rset_read_file(s, p, st ? &st[0] : NULL, err);
    if (!rc)
        rc = docindex_range_path(ix, field, ".delta.jsonl", p, err);
    if (!rc)
        rc = rset_read_file(s, p, st ? &st[1] : NULL, err);
    if (rc)
        docindex_rset_free(s);
    return rc;
}

int docindex_rset_load(docindex *ix, const char *field, rset *s, storh_err *err)
{
    return docindex_rset_load_states(ix, field, s, NULL, err);
}

void docindex_range_line(buf *out, const char *rk, const json_t *value, const char *add,
                         const char *remove)
{
    /* the encoding of {"key","value","count","ids","remove"}, written
     * directly: an index build writes one per record */
    buf_append(out, "{\"key\":", 7);
    sjson_encode_string(out, rk, strlen(rk));
    if (value) { /* (a NULL value was always left out) */
        buf_append(out, ",\"value\":", 9);
        sjson_encode(out, value, 0, NULL);
    }
    buf_appends(out, add ? ",\"count\":1,\"ids\":[" : ",\"count\":-1,\"ids\":[");
    if (add)
        sjson_encode_string(out, add, strlen(add));
    buf_append(out, "],\"remove\":[", 12);
    if (remove)
        sjson_encode_string(out, remove, strlen(remove));
    buf_append(out, "]}\n", 3);
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

int docindex_append(const char *path, const char *data, size_t len, bool sync, bool *created,
                    storh_err *err)
{
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    *created = false;
    int rc = fsx_mkdirs(dir, true, err);
    if (rc)
        return rc;
    int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        *created = fd >= 0;
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
    if (w != (ssize_t)len || (sync && fsync(fd) != 0)) {
        int e = w < 0 ? errno : (w != (ssize_t)len ? ENOSPC : errno);
        close(fd);
        return storh_err_sys(err, e, "Could not write storage file: %s", path);
    }
    if (close(fd) != 0)
        return storh_err_sys(err, errno, "Could not write storage file: %s", path);
    return 0;
}

int docindex_append_synced(const char *path, const char *data, size_t len, storh_err *err)
{
    bool created;
    int rc = docindex_append(path, data, len, true, &created, err);
    if (rc || !created)
        return rc;
    /* a file this call created is durable only once its directory is synced */
    char dir[PATH_MAX];
    fsx_dirname(path, dir, sizeof dir);
    return fsx_fsync_dir(dir, err);
}
