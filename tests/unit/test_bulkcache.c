/* A bulk's records in the record cache (docstore_stage_commit keeps its
 * rows' bytes, rcache_put_published checks each against its path): they
 * are read back without their files, up to the room the cache has free
 * (or a quarter of its bounds), yet what
 * any writer changes after (or between the rename and the check) is seen,
 * by a get and by a mirror's push, which takes its rows from those bytes
 * (the table is checked against a store that reads the files). */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docstore.h"
#include "fsx.h"
#include "fwatch.h"
#include "mirror.h"
#include "rcache.h"
#include "uuid7.h"

static char root[PATH_MAX];

#include "../support/cachekit.h"
#include "../support/mirrorkit.h"

/* ids in three shards: ...a1 and ...b2 share 00, ...c3 has 01 */
static const char *IDS[] = {
    "018bcfe5-6800-7000-8000-0000000000a1", "018bcfe5-6801-7000-8000-0000000000b2",
    "018bcfe5-6802-7000-8000-0100000000c3", "018bcfe5-6803-7000-8000-0200000000d4",
    "018bcfe5-6804-7000-8000-0300000000e5", "018bcfe5-6805-7000-8000-0400000000f6",
};
#define NIDS (sizeof IDS / sizeof IDS[0])

static docstore *cached_store(const char *name, size_t entries)
{
    docstore *ds = NULL;
    storh_err err;
    if (docstore_open(root, name, &ds, &err) != 0) {
        fprintf(stderr, "open: %s\n", err.msg);
        return NULL;
    }
    docstore_set_cache(ds, RCACHE_STAT, entries, 1 << 20, NULL);
    return ds;
}

/* A bulk of every id with {"slug": "<i>-<t>", "v": i}. */
static void bulk(docstore *ds, const char *t)
{
    docstore_stage *st = NULL;
    storh_err err;
    CHECK_INT(docstore_stage_begin(ds, &st, &err), 0);
    for (size_t i = 0; i < NIDS; i++) {
        char body[128], out[UUID7_LEN + 1];
        snprintf(body, sizeof body, "{\"slug\":\"%zu-%s\",\"v\":%zu}", i, t, i);
        json_t *d = js(body);
        CHECK_INT(docstore_stage_put(st, IDS[i], d, out, &err), 0);
        json_decref(d);
    }
    CHECK_INT(docstore_stage_commit(st, NULL, &err), 0);
}

typedef cachekit_how how;

/* The record's slug ("" when absent) and how the get was answered. */
static const char *get_slug(docstore *ds, const char *id, how *h)
{
    return cachekit_get(ds, id, "slug", h);
}

static void record_file(const char *coll, const char *id, char *p)
{
    cachekit_record_file(root, coll, id, p);
}

static void write_file(const char *p, const char *id, const char *slug)
{
    char data[96];
    snprintf(data, sizeof data, "{\"slug\":\"%s\",\"v\":99}", slug);
    cachekit_write_record(p, id, data);
}

/* Another writer publishes as storh does: a temp, then a rename over. */
static void publish_by_rename(const char *coll, const char *id, const char *slug)
{
    char data[96];
    snprintf(data, sizeof data, "{\"slug\":\"%s\",\"v\":99}", slug);
    cachekit_publish_by_rename(root, coll, id, data);
}

TEST(a_bulks_records_are_read_back_without_their_files)
{
    docstore *ds = cached_store("hits", 100);
    bulk(ds, "a");
    how h;
    for (size_t i = 0; i < NIDS; i++) {
        char want[32];
        snprintf(want, sizeof want, "%zu-a", i);
        CHECK_STR(get_slug(ds, IDS[i], &h), want);
        CHECK_INT(h, CACHEKIT_WATCHED); /* no read, no stat: checked when cached */
    }
    /* the cached bytes are the file's, byte for byte */
    rcache_blob *b = NULL;
    storh_err err;
    CHECK_INT(docstore_get_answer(ds, IDS[2], &b, &err), 0);
    char p[PATH_MAX];
    record_file("hits", IDS[2], p);
    buf f = BUF_INIT;
    CHECK_INT(fsx_read_all(p, &f, &err), 0);
    CHECK(b && f.len == b->len && !memcmp(f.data, b->data, f.len));
    buf_free(&f);
    rcache_blob_release(b);
    docstore_close(ds);
}

/* The bulk's gets: how many of them the cache answered, the others read
 * their file; each answers the bulk's slug. */
static int bulk_hits(docstore *ds, const char *t)
{
    int hits = 0;
    for (size_t i = 0; i < NIDS; i++) {
        char want[32];
        snprintf(want, sizeof want, "%zu-%s", i, t);
        how h;
        CHECK_STR(get_slug(ds, IDS[i], &h), want);
        hits += h == CACHEKIT_WATCHED || h == CACHEKIT_STATTED;
    }
    return hits;
}

/* A bulk "a", checked to change the cache's entries and evictions by
 * these. */
static void bulk_changes(docstore *ds, long long entries, long long evictions)
{
    rcache_stats a, b;
    rcache_totals(&a);
    bulk(ds, "a");
    rcache_totals(&b);
    CHECK_INT((long long)(b.entries - a.entries), entries);
    CHECK_INT((long long)(b.evictions - a.evictions), evictions);
}

/* into an empty cache of 4 entries, 4 of the 6 rows: its free room (more
 * than a quarter), without an eviction */
TEST(a_bulk_keeps_what_the_cache_has_free)
{
    docstore *ds = cached_store("free", 4);
    bulk_changes(ds, 4, 0);
    CHECK_INT(bulk_hits(ds, "a"), 4);
    docstore_close(ds);
}

/* into a cache of 8 that puts filled: a quarter, 2 rows, evicting 2 of
 * the records the puts made hot and no more */
TEST(a_bulk_into_a_full_cache_keeps_a_quarter)
{
    docstore *ds = cached_store("full", 8);
    char hot[8][UUID7_LEN + 1];
    CHECK_INT(uuid7_generate_many(hot, 8, NULL), 0);
    for (int i = 0; i < 8; i++)
        CHECK_INT(cachekit_put(ds, hot[i], "slug", "hot"), 0);
    bulk_changes(ds, 0, 2);
    int still = 0;
    for (int i = 7; i >= 0; i--) { /* the newest first: a miss evicts the oldest */
        how h;
        CHECK_STR(get_slug(ds, hot[i], &h), "hot");
        still += h == CACHEKIT_WATCHED || h == CACHEKIT_STATTED;
    }
    CHECK_INT(still, 6);
    docstore_close(ds);
}

/* Stages rows {"slug": "<i>-<t>"} of ids into a new stage (not committed). */
static docstore_stage *staged(docstore *ds, char (*ids)[UUID7_LEN + 1], size_t n, const char *t)
{
    docstore_stage *st = NULL;
    storh_err err;
    CHECK_INT(docstore_stage_begin(ds, &st, &err), 0);
    for (size_t i = 0; st && i < n; i++) {
        char body[64], out[UUID7_LEN + 1];
        snprintf(body, sizeof body, "{\"slug\":\"%zu-%s\"}", i, t);
        json_t *d = js(body);
        CHECK_INT(docstore_stage_put(st, ids[i], d, out, &err), 0);
        json_decref(d);
    }
    return st;
}

/* two bulks at once into an empty cache of 8: the first is pledged the
 * free room, the second a quarter (2 rows), so together they fill the
 * cache and evict nothing */
TEST(bulks_at_once_share_the_free_room)
{
    docstore *ds = cached_store("twice", 8);
    char a[6][UUID7_LEN + 1], b[6][UUID7_LEN + 1];
    CHECK_INT(uuid7_generate_many(a, 6, NULL), 0);
    CHECK_INT(uuid7_generate_many(b, 6, NULL), 0);
    rcache_stats before, after;
    rcache_totals(&before);
    docstore_stage *sa = staged(ds, a, 6, "a"), *sb = staged(ds, b, 6, "b");
    storh_err err;
    CHECK(sa && sb);
    if (!sa || !sb)
        return;
    CHECK_INT(docstore_stage_commit(sa, NULL, &err), 0);
    CHECK_INT(docstore_stage_commit(sb, NULL, &err), 0);
    rcache_totals(&after);
    CHECK_INT((long long)(after.entries - before.entries), 8);
    CHECK_INT((long long)(after.evictions - before.evictions), 0);
    int hits = 0;
    for (int i = 0; i < 6; i++) {
        how h;
        char want[16];
        snprintf(want, sizeof want, "%d-b", i);
        CHECK_STR(get_slug(ds, b[i], &h), want);
        hits += h == CACHEKIT_WATCHED || h == CACHEKIT_STATTED;
    }
    CHECK_INT(hits, 2);
    docstore_close(ds);
}

/* a bulk's pledge ends with it: after an aborted stage of 6 rows, the
 * next bulk into the empty cache of 8 keeps all of its 6 */
TEST(a_bulks_pledge_ends_with_it)
{
    docstore *ds = cached_store("pledge", 8);
    char a[6][UUID7_LEN + 1];
    CHECK_INT(uuid7_generate_many(a, 6, NULL), 0);
    docstore_stage *sa = staged(ds, a, 6, "a");
    CHECK(sa != NULL);
    docstore_stage_abort(sa);
    bulk_changes(ds, 6, 0);
    CHECK_INT(bulk_hits(ds, "a"), 6);
    docstore_close(ds);
}

TEST(what_changes_a_bulks_record_later_is_seen)
{
    docstore *ds = cached_store("later", 100);
    bulk(ds, "a");
    publish_by_rename("later", IDS[0], "renamed");
    CHECK_STR(get_slug(ds, IDS[0], NULL), "renamed");
    /* in place, the same size and mtime: the watch names it */
    char p[PATH_MAX];
    record_file("later", IDS[1], p);
    struct stat st;
    CHECK_INT(stat(p, &st), 0);
    buf old = BUF_INIT;
    CHECK_INT(fsx_read_all(p, &old, NULL), 0);
    char *slug = strstr(old.data, "\"1-a\"");
    CHECK(slug != NULL);
    if (slug) {
        slug[3] = 'z'; /* "1-z" */
        int fd = open(p, O_WRONLY);
        CHECK_INT((int)write(fd, old.data, old.len), (int)old.len);
        close(fd);
        struct timespec ts[2] = {st.st_atim, st.st_mtim};
        utimensat(AT_FDCWD, p, ts, 0);
        CHECK_STR(get_slug(ds, IDS[1], NULL), "1-z");
    }
    buf_free(&old);
    CHECK_INT(unlink(p), 0);
    CHECK_STR(get_slug(ds, IDS[1], NULL), "");
    docstore_close(ds);
}

TEST(without_inotify_a_bulks_records_are_statted)
{
    fwatch_set_enabled(false);
    docstore *ds = cached_store("nowatch", 100);
    bulk(ds, "a");
    how h;
    CHECK_STR(get_slug(ds, IDS[3], &h), "3-a");
    CHECK_INT(h, CACHEKIT_STATTED);
    publish_by_rename("nowatch", IDS[3], "renamed");
    CHECK_STR(get_slug(ds, IDS[3], NULL), "renamed");
    docstore_close(ds);
    fwatch_set_enabled(true);
}

/* rcache_put_published with the fstat of a file as written, and what the
 * path holds at the check. */
static rcache_result published(rcache *c, const char *id, const char *path, const char *bytes,
                               const struct stat *written, struct stat *got)
{
    rcache_pub p = {.id = id, .path = path, .blob = rcache_blob_new(bytes, strlen(bytes))};
    p.written = *written;
    rcache_put_published(c, &p, 1);
    CHECK(p.blob == NULL);
    rcache_drain(c);
    rcache_blob *b = NULL;
    rcache_result r = rcache_peek_file(c, id, path, &b, got);
    if (b)
        CHECK(b->len == strlen(bytes) && !memcmp(b->data, bytes, b->len));
    rcache_blob_release(b);
    return r;
}

TEST(a_path_that_no_longer_holds_the_file_written_is_not_cached)
{
    const char *id = IDS[0];
    char dir[PATH_MAX], tmp[PATH_MAX], final[PATH_MAX], bytes[128];
    snprintf(dir, sizeof dir, "%s/pub/data/00", root);
    CHECK_INT(fsx_mkdirs(dir, false, NULL), 0);
    snprintf(tmp, sizeof tmp, "%s/pub/data/00/row.tmp", root);
    record_file("pub", id, final);
    snprintf(bytes, sizeof bytes, "{\"id\":\"%s\",\"data\":{\"slug\":\"w\"}}\n", id);
    rcache *c = rcache_new(RCACHE_STAT, 10, 1 << 20);
    rcache_watch(c, dir);
    struct stat w, now, got;

    /* published: cached with the state after the rename (its ctime) */
    CHECK_INT(fsx_write_file(tmp, bytes, strlen(bytes), false, NULL), 0);
    CHECK_INT(stat(tmp, &w), 0);
    usleep(20000); /* the rename's ctime differs from the write's */
    CHECK_INT(rename(tmp, final), 0);
    CHECK_INT(stat(final, &now), 0);
    CHECK_INT(published(c, id, final, bytes, &w, &got), RCACHE_HIT);
    CHECK(got.st_ino == now.st_ino && got.st_ctim.tv_nsec == now.st_ctim.tv_nsec &&
          got.st_ctim.tv_sec == now.st_ctim.tv_sec && got.st_size == now.st_size);

    /* another file renamed over it before the check */
    CHECK_INT(fsx_write_file(tmp, bytes, strlen(bytes), false, NULL), 0);
    CHECK_INT(stat(tmp, &w), 0);
    CHECK_INT(rename(tmp, final), 0);
    write_file(tmp, id, "w"); /* the same bytes, another file */
    CHECK_INT(rename(tmp, final), 0);
    CHECK_INT(published(c, id, final, bytes, &w, &got), RCACHE_MISS);

    /* rewritten in place (its size moved) before the check */
    CHECK_INT(fsx_write_file(tmp, bytes, strlen(bytes), false, NULL), 0);
    CHECK_INT(stat(tmp, &w), 0);
    CHECK_INT(rename(tmp, final), 0);
    FILE *f = fopen(final, "a");
    fputs(" ", f);
    fclose(f);
    CHECK_INT(published(c, id, final, bytes, &w, &got), RCACHE_MISS);

    /* gone before the check */
    CHECK_INT(unlink(final), 0);
    CHECK_INT(published(c, id, final, bytes, &w, &got), RCACHE_MISS);
    rcache_free(c);
}

/* ---- a mirror's push from the cached bytes ---- */

static const char *COLS = "{\"bc\":{\"kind\":\"doc\",\"schema\":{\"fields\":{"
                          "\"slug\":{\"type\":\"string\",\"unique\":true},"
                          "\"v\":{\"type\":\"int\"}}}}}";

/* The table is what the record files say, checked through a store of the
 * same collection without a cache (every record read from its file). */
static void check_against_files(mirror *m, const mirror_coll *c)
{
    docstore *plain = NULL;
    CHECK_INT(docstore_open(root, "bc", &plain, NULL), 0);
    CHECK_INT(mirrorkit_verify(m, c, plain), (long long)NIDS);
    docstore_close(plain);
}

/* A mirror of the collection bc, bulk-filled in a cached store, installed;
 * changed(ds) runs between the bulk and the push. Returns the watched
 * validations the push made. */
static uint64_t push_after_bulk(void (*changed)(void))
{
    /* a fresh collection and mirror, whatever a case before this one in
     * the same run left (ctest runs each alone; a plain run runs them all) */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/bc", root);
    tmpdir_remove(path);
    static const char *const db[] = {"mirror.sqlite", "mirror.sqlite-wal", "mirror.sqlite-shm"};
    for (size_t i = 0; i < sizeof db / sizeof db[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", root, db[i]);
        unlink(path);
    }
    docstore *ds = cached_store("bc", 100);
    mirror *m = mirrorkit_sqlite(root, COLS);
    CHECK(ds && m);
    if (!ds || !m)
        return 0;
    storh_err err;
    const mirror_coll *c = mirror_find(m, "bc", false, &err);
    CHECK_INT(mirror_install(m, c, &err), 0);
    bulk(ds, "a");
    if (changed)
        changed();
    mirror_source src = {.ds = ds};
    json_t *t = json_object();
    rcache_stats a, b;
    rcache_totals(&a);
    CHECK_INT(mirror_push(m, c, &src, t, &err), 0);
    rcache_totals(&b);
    CHECK_INT(mirrorkit_total(t, "inserted"), (long long)NIDS);
    json_decref(t);
    check_against_files(m, c);
    CHECK_INT(mirrorkit_scalar(m, "SELECT COUNT(*) FROM \"t_bc\" WHERE \"v\" = 99"),
              changed ? 1 : 0);
    mirror_free(m);
    docstore_close(ds);
    return b.watched - a.watched;
}

TEST(a_push_after_a_bulk_takes_the_cached_bytes)
{
    /* every row from the cache, none read */
    CHECK_INT((long long)push_after_bulk(NULL), (long long)NIDS);
}

static void rename_one(void)
{
    publish_by_rename("bc", IDS[4], "renamed");
}

TEST(a_push_after_a_bulk_sees_a_record_changed_since)
{
    CHECK_INT((long long)push_after_bulk(rename_one), (long long)NIDS - 1);
}

/* ---- PHP storh rewriting a record of storhd's bulk (STORH_PHP_DIR) ---- */

static const char php_put[] = "<?php\n"
                              "require getenv('STORH_PHP_DIR') . '/vendor/autoload.php';\n"
                              "[, $root, $id] = $argv;\n"
                              "$s = new Storh\\DocPerFileStore($root, 'bc');\n"
                              "$s->put(['slug' => 'php', 'v' => 99], $id);\n";

static void php_rewrites_one(void)
{
    char script[PATH_MAX], cmd[PATH_MAX * 3];
    snprintf(script, sizeof script, "%s/put.php", root);
    FILE *f = fopen(script, "w");
    fputs(php_put, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "php8.2 '%s' '%s' %s", script, root, IDS[5]);
    CHECK_INT(system(cmd), 0);
}

TEST(php_storh_rewrite_after_a_bulk_is_pushed)
{
    if (!getenv("STORH_PHP_DIR")) {
        CHECK(!"STORH_PHP_DIR names the PHP storh checkout");
        return;
    }
    CHECK_INT((long long)push_after_bulk(php_rewrites_one), (long long)NIDS - 1);
}

static const test_case tests[] = {
    TEST_ENTRY(a_bulks_records_are_read_back_without_their_files),
    TEST_ENTRY(a_bulk_keeps_what_the_cache_has_free),
    TEST_ENTRY(a_bulk_into_a_full_cache_keeps_a_quarter),
    TEST_ENTRY(bulks_at_once_share_the_free_room),
    TEST_ENTRY(a_bulks_pledge_ends_with_it),
    TEST_ENTRY(what_changes_a_bulks_record_later_is_seen),
    TEST_ENTRY(without_inotify_a_bulks_records_are_statted),
    TEST_ENTRY(a_path_that_no_longer_holds_the_file_written_is_not_cached),
    TEST_ENTRY(a_push_after_a_bulk_takes_the_cached_bytes),
    TEST_ENTRY(a_push_after_a_bulk_sees_a_record_changed_since),
};

/* run only when named: registered with -DSTORH_PHP_DIR */
static const test_case named[] = {
    TEST_ENTRY(php_storh_rewrite_after_a_bulk_is_pushed),
};

TMPDIR_TEST_MAIN_WITH_NAMED(root, tests, named)
