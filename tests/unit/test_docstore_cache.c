/* test_docstore_cache: the record cache fed by a store's own writes: it
 * still sees other writers (a file rewritten in place or published by
 * rename), forgets deletes, and takes nothing from a group that failed. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docstore.h"
#include "fsx.h"
#include "rcache.h"
#include "storh_err.h"

static char root[PATH_MAX];

#include "../support/cachekit.h"

#define CA "018bcfe5-6800-7000-8000-2d5dba6274da"
#define CB "018bcfe5-6801-7000-8000-aa5dba6274db"

static docstore *cached_store(const char *name)
{
    return cachekit_open(root, name);
}

static int put_t(docstore *ds, const char *id, const char *t)
{
    return cachekit_put(ds, id, "t", t);
}

/* The record's "t" through get ("" when absent), and whether the cache
 * answered it (no file read). */
static const char *get_t(docstore *ds, const char *id, bool *hit)
{
    cachekit_how h;
    const char *t = cachekit_get(ds, id, "t", &h);
    if (hit)
        *hit = h == CACHEKIT_STATTED || h == CACHEKIT_WATCHED;
    return t;
}

/* Another writer rewrites the record file in place with bytes of the same
 * size, keeping its mtime. */
static void rewrite_in_place(const char *coll, const char *id, const char *from, const char *to)
{
    char p[PATH_MAX];
    cachekit_record_file(root, coll, id, p);
    cachekit_edit_same_size(p, from, to);
}

/* Another writer publishes {"t": t} as storh does: a temp, then a rename. */
static void publish_by_rename(const char *coll, const char *id, const char *t)
{
    char data[96];
    snprintf(data, sizeof data, "{\"t\":\"%s\"}", t);
    cachekit_publish_by_rename(root, coll, id, data);
}

/* The "t" of every record a stream hands out, comma-separated. */
static const char *stream_t(docstore *ds)
{
    static char out[256];
    out[0] = '\0';
    docstore_iter *it;
    if (docstore_iter_open(ds, NULL, &it, NULL))
        return "(no stream)";
    const char *id;
    json_t *d;
    while (docstore_iter_next(it, &id, &d, NULL) == 1) {
        if (out[0])
            strcat(out, ",");
        strncat(out, json_string_value(json_object_get(d, "t")), 40);
        json_decref(d);
    }
    docstore_iter_close(it);
    return out;
}

TEST(cache_fed_by_put_sees_other_writers)
{
    docstore *ds = cached_store("fed");
    CHECK_INT(put_t(ds, CA, "aaaa"), 0);
    bool hit = false;
    CHECK_STR(get_t(ds, CA, &hit), "aaaa");
    CHECK(hit); /* the put left it in the cache: no file read */
    rewrite_in_place("fed", CA, "aaaa", "bbbb");
    CHECK_STR(get_t(ds, CA, &hit), "bbbb"); /* same size, same mtime: its ctime tells */
    CHECK(!hit);
    CHECK_INT(put_t(ds, CA, "cccc"), 0);
    rewrite_in_place("fed", CA, "cccc", "dddd");
    CHECK_STR(stream_t(ds), "dddd"); /* a listing validates what it takes from the cache */
    CHECK_INT(put_t(ds, CA, "eeee"), 0);
    publish_by_rename("fed", CA, "ffff");
    CHECK_STR(get_t(ds, CA, &hit), "ffff");
    CHECK(!hit);
    CHECK_STR(get_t(ds, CA, &hit), "ffff");
    CHECK(hit); /* and the file read is cached again */
    /* the export takes the cached bytes as they are */
    CHECK_INT(put_t(ds, CB, "gggg"), 0);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/fed.jsonl", root);
    size_t n = 0;
    CHECK_INT(docstore_export_jsonl(ds, p, &n, NULL), 0);
    CHECK_INT(n, 2);
    buf b = BUF_INIT;
    fsx_read_all(p, &b, NULL);
    CHECK_STR(b.data, "{\"id\":\"" CA "\",\"data\":{\"t\":\"ffff\"}}\n"
                      "{\"id\":\"" CB "\",\"data\":{\"t\":\"gggg\"}}\n");
    buf_free(&b);
    docstore_close(ds);
}

TEST(cache_fed_by_put_forgets_deletes)
{
    docstore *ds = cached_store("fedel");
    CHECK_INT(put_t(ds, CA, "aaaa"), 0);
    CHECK_INT(put_t(ds, CB, "bbbb"), 0);
    CHECK_STR(get_t(ds, CA, NULL), "aaaa");
    bool existed = false;
    CHECK_INT(docstore_delete(ds, CA, &existed, NULL), 0);
    CHECK(existed);
    json_t *d = NULL;
    CHECK_INT(docstore_get(ds, CA, &d, NULL, NULL), STORH_ENOTFOUND);
    /* another writer's unlink is seen too, by gets and listings */
    char p[PATH_MAX];
    cachekit_record_file(root, "fedel", CB, p);
    CHECK_INT(unlink(p), 0);
    CHECK_INT(docstore_get(ds, CB, &d, NULL, NULL), STORH_ENOTFOUND);
    CHECK_STR(stream_t(ds), "");
    CHECK_INT(put_t(ds, CB, "cccc"), 0);
    CHECK_STR(get_t(ds, CB, NULL), "cccc");
    docstore_close(ds);
}

TEST(cache_fed_by_put_not_by_a_failed_group)
{
    docstore *ds = cached_store("fefail");
    CHECK_INT(put_t(ds, CA, "aaaa"), 0);
    rcache_stats a, b;
    rcache_totals(&a);
    setenv("STORH_FAULT_FAIL", "fsync:fefail", 1);
    CHECK(put_t(ds, CA, "bbbb") != 0);
    CHECK(put_t(ds, CB, "cccc") != 0); /* the store is poisoned now */
    unsetenv("STORH_FAULT_FAIL");
    rcache_totals(&b);
    CHECK(b.entries <= a.entries); /* nothing of the failed writes came in */
    /* what a get answers is the file's, whatever the failure left there */
    char p[PATH_MAX];
    cachekit_record_file(root, "fefail", CA, p);
    buf f = BUF_INIT;
    CHECK_INT(fsx_read_all(p, &f, NULL), 0);
    const char *want = strstr(f.data ? f.data : "", "bbbb") ? "bbbb" : "aaaa";
    CHECK_STR(get_t(ds, CA, NULL), want);
    buf_free(&f);
    json_t *d = NULL;
    CHECK_INT(docstore_get(ds, CB, &d, NULL, NULL), STORH_ENOTFOUND);
    docstore_close(ds);
}

static const test_case tests[] = {
    TEST_ENTRY(cache_fed_by_put_sees_other_writers),
    TEST_ENTRY(cache_fed_by_put_forgets_deletes),
    TEST_ENTRY(cache_fed_by_put_not_by_a_failed_group),
};

TMPDIR_TEST_MAIN(root, tests)
