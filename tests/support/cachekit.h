/* cachekit: what the record cache's tests share: how a get was answered (a
 * miss that read the file, a hit validated by stat, a hit the watch vouched
 * for), a record file's path, and another writer publishing a record as
 * storh does (a temp, then a rename over). Header-only, as js.h. */
#ifndef STORHD_TEST_CACHEKIT_H
#define STORHD_TEST_CACHEKIT_H

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "docstore.h"
#include "fsx.h"
#include "rcache.h"
#include "storh_err.h"
#include "uuid7.h"

/* Store name under dir with a stat-validated record cache (100 records,
 * 1 MiB); NULL (and a line on stderr) when it cannot open. */
static inline docstore *cachekit_open(const char *dir, const char *name)
{
    docstore *ds = NULL;
    storh_err err;
    if (docstore_open(dir, name, &ds, &err) != 0) {
        fprintf(stderr, "open %s: %s\n", name, err.msg);
        return NULL;
    }
    docstore_set_cache(ds, RCACHE_STAT, 100, 1 << 20, NULL);
    return ds;
}

/* Puts record id as {field: value}. */
static inline int cachekit_put(docstore *ds, const char *id, const char *field, const char *value)
{
    json_t *d = json_pack("{ss}", field, value);
    char out[UUID7_LEN + 1];
    int rc = d ? docstore_put(ds, id, d, out, NULL, NULL) : -1;
    json_decref(d);
    return rc;
}

/* How a get was answered: a miss that read the file, a hit validated by
 * stat, a hit the watch vouched for, or none the cache counted (it was
 * not asked). */
typedef enum { CACHEKIT_MISS, CACHEKIT_STATTED, CACHEKIT_WATCHED, CACHEKIT_UNCOUNTED } cachekit_how;

/* The string member field of the record ("" when absent) and, in *h (when
 * set), how the get was answered. The answer lives until the next call. */
static inline const char *cachekit_get(docstore *ds, const char *id, const char *field,
                                       cachekit_how *h)
{
    static char out[64];
    rcache_stats a, b;
    rcache_totals(&a);
    json_t *d = NULL;
    out[0] = '\0';
    if (docstore_get(ds, id, &d, NULL, NULL) == 0)
        snprintf(out, sizeof out, "%s", json_string_value(json_object_get(d, field)));
    json_decref(d);
    rcache_totals(&b);
    if (h)
        *h = b.misses != a.misses     ? CACHEKIT_MISS
             : b.watched != a.watched ? CACHEKIT_WATCHED
             : b.hits == a.hits + 1   ? CACHEKIT_STATTED
                                      : CACHEKIT_UNCOUNTED;
    return out;
}

/* The path of record id of collection coll under dir (its shard: the
 * id's characters 24 and 25). */
static inline void cachekit_record_file(const char *dir, const char *coll, const char *id, char *p)
{
    snprintf(p, PATH_MAX, "%s/%s/data/%c%c/%s.jsonc", dir, coll, id[24], id[25], id);
}

/* Writes p as storh's record file of id whose data is the JSON text data. */
static inline void cachekit_write_record(const char *p, const char *id, const char *data)
{
    FILE *f = fopen(p, "w");
    if (!f)
        return;
    fprintf(f, "{\"id\":\"%s\",\"data\":%s}\n", id, data);
    fclose(f);
}

/* Another writer publishes record id with data as storh does. */
static inline void cachekit_publish_by_rename(const char *dir, const char *coll, const char *id,
                                              const char *data)
{
    char p[PATH_MAX], tmp[PATH_MAX + 8];
    cachekit_record_file(dir, coll, id, p);
    snprintf(tmp, sizeof tmp, "%s.x.tmp", p);
    cachekit_write_record(tmp, id, data);
    rename(tmp, p);
}

/* The whole file at p, NUL-ended (the caller frees it), or NULL */
static inline char *cachekit_slurp(const char *p)
{
    buf b = BUF_INIT;
    if (fsx_read_all(p, &b, NULL) != 0)
        return NULL;
    return b.data ? b.data : strdup("");
}

/* Another writer rewrites the file at p in place: the first from in it
 * replaced by to (the same length), its mtime kept (only its ctime
 * changes). */
static inline void cachekit_edit_same_size(const char *p, const char *from, const char *to)
{
    struct stat st;
    buf b = BUF_INIT;
    if (stat(p, &st) != 0 || fsx_read_all(p, &b, NULL) != 0)
        return;
    char *at = strstr(b.data, from);
    if (at)
        memcpy(at, to, strlen(to));
    FILE *f = fopen(p, "r+"); /* in place: the same inode, the same size */
    if (f) {
        fwrite(b.data, 1, b.len, f);
        fclose(f);
    }
    struct timespec t[2] = {st.st_atim, st.st_mtim};
    utimensat(AT_FDCWD, p, t, 0);
    buf_free(&b);
}

#endif
