/* The record cache kept fresh by inotify (fwatch): what another process
 * does to a cached record is seen at the next get, hits validated after
 * the watch are answered without a stat, and without inotify it is the
 * stat per hit of before. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docstore.h"
#include "fsx.h"
#include "fwatch.h"
#include "rcache.h"
#include "storh_err.h"
#include "uuid7.h"

static char root[PATH_MAX];

#include "../support/cachekit.h"
#include "../support/js.h"

#define CA "018bcfe5-6800-7000-8000-2d5dba6274da"
#define CB "018bcfe5-6801-7000-8000-2d5dba6274db" /* CA's shard (2d) */
#define CC "018bcfe5-6802-7000-8000-c75dba6274dc" /* a shard of its own (c7) */

static docstore *cached_store(const char *name)
{
    return cachekit_open(root, name);
}

static int put_t(docstore *ds, const char *id, const char *t)
{
    return cachekit_put(ds, id, "t", t);
}

typedef cachekit_how how;

/* The record's "t" ("" when absent) and how the get was answered. */
static const char *get_t(docstore *ds, const char *id, how *h)
{
    return cachekit_get(ds, id, "t", h);
}

static void record_file(const char *coll, const char *id, char *p)
{
    cachekit_record_file(root, coll, id, p);
}

static void write_file(const char *p, const char *id, const char *t)
{
    char data[96];
    snprintf(data, sizeof data, "{\"t\":\"%s\"}", t);
    cachekit_write_record(p, id, data);
}

/* Another writer publishes as storh does: a temp, then a rename over. */
static void publish_by_rename(const char *coll, const char *id, const char *t)
{
    char data[96];
    snprintf(data, sizeof data, "{\"t\":\"%s\"}", t);
    cachekit_publish_by_rename(root, coll, id, data);
}

/* Another writer rewrites the file in place, same size, same mtime. */
static void rewrite_in_place(const char *coll, const char *id, const char *t)
{
    char p[PATH_MAX];
    record_file(coll, id, p);
    struct stat st;
    stat(p, &st);
    write_file(p, id, t);
    struct timespec ts[2] = {st.st_atim, st.st_mtim};
    utimensat(AT_FDCWD, p, ts, 0);
}

/* Cached and vouched for by the watch: a put (its entry checked against
 * the path once, when the write is cached), then hits with no stat. */
static void cache_watched(docstore *ds, const char *id, const char *t)
{
    how h;
    CHECK_INT(put_t(ds, id, t), 0);
    CHECK_STR(get_t(ds, id, &h), t);
    CHECK_INT(h, CACHEKIT_WATCHED);
    CHECK_STR(get_t(ds, id, &h), t);
    CHECK_INT(h, CACHEKIT_WATCHED);
}

TEST(a_validated_hit_needs_no_stat)
{
    docstore *ds = cached_store("nostat");
    cache_watched(ds, CA, "aaaa");
    how h;
    for (int i = 0; i < 3; i++) {
        CHECK_STR(get_t(ds, CA, &h), "aaaa");
        CHECK_INT(h, CACHEKIT_WATCHED);
    }
    /* an absent record is vouched for too, in a watched shard or in one
     * that does not exist (data/ is watched for it to appear) */
    CHECK_STR(get_t(ds, CB, &h), "");
    CHECK_STR(get_t(ds, CB, &h), "");
    CHECK_STR(get_t(ds, CB, &h), "");
    CHECK_INT(h, CACHEKIT_WATCHED);
    CHECK_STR(get_t(ds, CC, &h), "");
    CHECK_STR(get_t(ds, CC, &h), "");
    CHECK_STR(get_t(ds, CC, &h), "");
    CHECK_INT(h, CACHEKIT_WATCHED);
    docstore_close(ds);
}

TEST(a_read_fills_an_entry_the_watch_vouches_for)
{
    docstore *ds = cached_store("fill");
    CHECK_INT(put_t(ds, CA, "aaaa"), 0);
    docstore_set_cache(ds, RCACHE_STAT, 100, 1 << 20, NULL); /* a cold cache */
    how h;
    CHECK_STR(get_t(ds, CA, &h), "aaaa");
    CHECK_INT(h, CACHEKIT_MISS);
    CHECK_STR(get_t(ds, CA, &h), "aaaa");
    CHECK_INT(h, CACHEKIT_WATCHED); /* nothing changed since the read began */
    publish_by_rename("fill", CA, "bbbb");
    CHECK_STR(get_t(ds, CA, &h), "bbbb");
    docstore_close(ds);
}

/* A record file read as a reader fills the cache, then another writer's
 * rename before the fill, its event drained by someone else's lookup in
 * between (drained=true) or by the fill itself: the entry is not vouched
 * for, and the next get sees the new file. */
static void fill_raced(bool drained)
{
    const char *coll = drained ? "race_d" : "race_f";
    docstore *ds = cached_store(coll);
    CHECK_INT(put_t(ds, CA, "aaaa"), 0);
    CHECK_INT(put_t(ds, CB, "bbbb"), 0);
    docstore_close(ds);
    char dir[PATH_MAX], p[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", root, coll);
    record_file(coll, CA, p);
    rcache *c = rcache_new(RCACHE_STAT, 100, 1 << 20);
    rcache_watch(c, dir);
    json_t *d = NULL;
    CHECK_INT(rcache_get(c, CB, p, &d), RCACHE_MISS); /* CB's shard, CA's too */
    rcache_ticket t = rcache_fill_begin(c, CA);
    struct stat st;
    CHECK_INT(stat(p, &st), 0);
    json_t *old = js("{\"t\":\"aaaa\"}");
    publish_by_rename(coll, CA, "cccc");
    if (drained) /* a lookup of another record drains the rename's event */
        CHECK_INT(rcache_get(c, CB, p, &d), RCACHE_MISS);
    rcache_put(c, CA, old, &st, "x", 1, &t);
    json_decref(old);
    rcache_stats a, b;
    rcache_totals(&a);
    CHECK_INT(rcache_get(c, CA, p, &d), RCACHE_MISS); /* a stat, which differs */
    rcache_totals(&b);
    CHECK(b.watched == a.watched);
    rcache_free(c);
}

TEST(a_rename_during_a_fill_is_seen)
{
    fill_raced(false);
}

TEST(a_rename_drained_by_another_lookup_during_a_fill_is_seen)
{
    fill_raced(true);
}

/* A reader's fill is vouched for at its first hit, not by the fill: a
 * change between the two is seen at that hit. */
static void change_before_first_hit(const char *coll, bool in_place)
{
    docstore *ds = cached_store(coll);
    CHECK_INT(put_t(ds, CA, "aaaa"), 0);
    docstore_set_cache(ds, RCACHE_STAT, 100, 1 << 20, NULL); /* a cold cache */
    how h;
    CHECK_STR(get_t(ds, CA, &h), "aaaa");
    CHECK_INT(h, CACHEKIT_MISS);
    if (in_place)
        rewrite_in_place(coll, CA, "bbbb");
    else
        publish_by_rename(coll, CA, "bbbb");
    CHECK_STR(get_t(ds, CA, &h), "bbbb");
    CHECK(h != CACHEKIT_WATCHED);
    CHECK_STR(get_t(ds, CA, &h), "bbbb");
    CHECK_INT(h, CACHEKIT_WATCHED);
    docstore_close(ds);
}

TEST(a_rename_between_a_fill_and_its_first_hit_is_seen)
{
    change_before_first_hit("first_r", false);
}

TEST(an_in_place_write_between_a_fill_and_its_first_hit_is_seen)
{
    change_before_first_hit("first_w", true);
}

/* A batch's lookups trust what its drain saw; an entry filled after that
 * drain is not vouched for by it: a rename after the fill, its event not
 * drained yet, is seen by the stat such a lookup makes. */
TEST(a_fill_after_a_batch_drain_is_statted_by_the_batch)
{
    const char *coll = "batch";
    docstore *ds = cached_store(coll);
    CHECK_INT(put_t(ds, CA, "aaaa"), 0);
    docstore_close(ds);
    char dir[PATH_MAX], p[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", root, coll);
    record_file(coll, CA, p);
    rcache *c = rcache_new(RCACHE_STAT, 100, 1 << 20);
    rcache_watch(c, dir);
    rcache_drain(c);
    rcache_ticket t = rcache_fill_begin(c, CA);
    struct stat st;
    CHECK_INT(stat(p, &st), 0);
    json_t *old = js("{\"t\":\"aaaa\"}");
    rcache_put(c, CA, old, &st, "x", 1, &t);
    json_decref(old);
    publish_by_rename(coll, CA, "cccc");
    json_t *d = NULL;
    CHECK_INT(rcache_get_drained(c, CA, p, &d), RCACHE_MISS); /* a stat, which differs */
    CHECK(d == NULL);
    rcache_free(c);
}

/* A listing validates its cached records against one drain of the watch
 * for a run of them: every change made before the listing began is seen,
 * by rename or in place, at the start, inside and at the end of a run. */
TEST(a_listing_sees_what_changed_before_it_began)
{
    enum { N = 150 };
    docstore *ds = cached_store("list");
    docstore_set_cache(ds, RCACHE_STAT, 1000, 1 << 22, NULL);
    static char ids[N][UUID7_LEN + 1];
    for (int i = 0; i < N; i++) {
        uuid7_generate(ids[i], INT64_C(1700000000000) + i, NULL);
        cache_watched(ds, ids[i], "old");
    }
    const int changed[] = {0, 63, 64, 65, 128, N - 1};
    for (size_t k = 0; k < sizeof changed / sizeof *changed; k++)
        if (k % 2)
            publish_by_rename("list", ids[changed[k]], "new");
        else
            rewrite_in_place("list", ids[changed[k]], "new");
    rcache_stats a, b;
    rcache_totals(&a);
    docstore_iter *it;
    CHECK_INT(docstore_iter_open(ds, NULL, &it, NULL), 0);
    const char *id;
    json_t *d;
    int seen = 0, fresh = 0;
    while (docstore_iter_next(it, &id, &d, NULL) == 1) {
        seen++;
        fresh += !strcmp(json_string_value(json_object_get(d, "t")), "new");
        json_decref(d);
    }
    docstore_iter_close(it);
    rcache_totals(&b);
    CHECK_INT(seen, N);
    CHECK_INT(fresh, (int)(sizeof changed / sizeof *changed));
    CHECK(b.watched - a.watched >= N - 6); /* the others without a stat */
    docstore_close(ds);
}

TEST(another_writers_rename_is_seen)
{
    docstore *ds = cached_store("ren");
    cache_watched(ds, CA, "aaaa");
    publish_by_rename("ren", CA, "bbbb");
    how h;
    CHECK_STR(get_t(ds, CA, &h), "bbbb");
    CHECK_INT(h, CACHEKIT_MISS);
    CHECK_STR(get_t(ds, CA, &h), "bbbb");
    CHECK_STR(get_t(ds, CA, &h), "bbbb");
    CHECK_INT(h, CACHEKIT_WATCHED); /* and vouched for again */
    docstore_close(ds);
}

TEST(another_writers_in_place_write_is_seen)
{
    docstore *ds = cached_store("inpl");
    cache_watched(ds, CA, "aaaa");
    rewrite_in_place("inpl", CA, "bbbb");
    CHECK_STR(get_t(ds, CA, NULL), "bbbb");
    docstore_close(ds);
}

TEST(another_writers_unlink_is_seen)
{
    docstore *ds = cached_store("unl");
    cache_watched(ds, CA, "aaaa");
    char p[PATH_MAX];
    record_file("unl", CA, p);
    CHECK_INT(unlink(p), 0);
    CHECK_STR(get_t(ds, CA, NULL), "");
    /* and a record appearing where the cache knew none */
    CHECK_STR(get_t(ds, CA, NULL), "");
    publish_by_rename("unl", CA, "cccc");
    CHECK_STR(get_t(ds, CA, NULL), "cccc");
    docstore_close(ds);
}

TEST(a_new_shard_is_seen)
{
    docstore *ds = cached_store("shard");
    cache_watched(ds, CA, "aaaa");
    how h;
    CHECK_STR(get_t(ds, CC, &h), ""); /* no shard c7 yet */
    CHECK_STR(get_t(ds, CC, &h), "");
    CHECK_STR(get_t(ds, CC, &h), "");
    CHECK_INT(h, CACHEKIT_WATCHED);
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s/shard/data/c7", root);
    CHECK_INT(mkdir(d, 0755), 0);
    publish_by_rename("shard", CC, "cccc");
    CHECK_STR(get_t(ds, CC, &h), "cccc");
    CHECK_STR(get_t(ds, CC, &h), "cccc");
    CHECK_STR(get_t(ds, CC, &h), "cccc");
    CHECK_INT(h, CACHEKIT_WATCHED);
    /* the shard dir replaced by another (moved away, a new one moved in) */
    char old[PATH_MAX + 8], next[PATH_MAX + 8];
    snprintf(old, sizeof old, "%s.old", d);
    snprintf(next, sizeof next, "%s.new", d);
    CHECK_INT(mkdir(next, 0755), 0);
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s/%s.jsonc", next, CC);
    write_file(p, CC, "dddd");
    CHECK_INT(rename(d, old), 0);
    CHECK_INT(rename(next, d), 0);
    CHECK_STR(get_t(ds, CC, &h), "dddd");
    CHECK_STR(get_t(ds, CA, &h), "aaaa"); /* other shards stay vouched for */
    CHECK_INT(h, CACHEKIT_WATCHED);
    docstore_close(ds);
}

TEST(the_collection_replaced_is_seen)
{
    docstore *ds = cached_store("repl");
    cache_watched(ds, CA, "aaaa");
    char d[PATH_MAX], old[PATH_MAX + 8];
    snprintf(d, sizeof d, "%s/repl", root);
    snprintf(old, sizeof old, "%s.old", d);
    CHECK_INT(rename(d, old), 0);
    CHECK_STR(get_t(ds, CA, NULL), "");
    docstore_close(ds);
}

/* Events alternate between two names (the kernel merges repeats of the
 * last one) until the queue (fs.inotify.max_queued_events) overflows. */
static void flood(const char *coll, const char *id)
{
    long max = 16384;
    FILE *f = fopen("/proc/sys/fs/inotify/max_queued_events", "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 16384;
        fclose(f);
    }
    char r[PATH_MAX], a[PATH_MAX + 8], b[PATH_MAX + 8];
    record_file(coll, id, r);
    snprintf(a, sizeof a, "%s.flood1", r);
    snprintf(b, sizeof b, "%s.flood2", r);
    char *p[2] = {a, b};
    write_file(a, id, "x");
    write_file(b, id, "x");
    for (long i = 0; i < max + 64; i++)
        utimensat(AT_FDCWD, p[i & 1], NULL, 0);
    unlink(a);
    unlink(b);
}

TEST(an_overflow_unverifies_everything)
{
    docstore *ds = cached_store("ovf");
    cache_watched(ds, CA, "aaaa");
    cache_watched(ds, CC, "cccc");
    flood("ovf", CA);
    rewrite_in_place("ovf", CC, "dddd"); /* its events lost in the overflow */
    how h;
    CHECK_STR(get_t(ds, CC, &h), "dddd");
    CHECK_STR(get_t(ds, CA, &h), "aaaa");
    CHECK_INT(h, CACHEKIT_STATTED); /* everything by stat until validated again */
    CHECK_STR(get_t(ds, CA, &h), "aaaa");
    CHECK_INT(h, CACHEKIT_WATCHED);
    fwatch_stats st;
    fwatch_totals(&st);
    CHECK(st.resets >= 1);
    docstore_close(ds);
}

TEST(without_inotify_every_hit_is_statted)
{
    fwatch_set_enabled(false);
    docstore *ds = cached_store("off");
    fwatch_set_enabled(true);
    how h;
    CHECK_INT(put_t(ds, CA, "aaaa"), 0);
    for (int i = 0; i < 3; i++) {
        CHECK_STR(get_t(ds, CA, &h), "aaaa");
        CHECK_INT(h, CACHEKIT_STATTED);
    }
    rewrite_in_place("off", CA, "bbbb");
    CHECK_STR(get_t(ds, CA, &h), "bbbb");
    publish_by_rename("off", CA, "cccc");
    CHECK_STR(get_t(ds, CA, &h), "cccc");
    char p[PATH_MAX];
    record_file("off", CA, p);
    CHECK_INT(unlink(p), 0);
    CHECK_STR(get_t(ds, CA, &h), "");
    docstore_close(ds);
}

/* Readers hit while another thread publishes over the records: every get
 * answers a value some publish wrote, and the last one once it is done. */
typedef struct {
    docstore *ds;
    atomic_bool stop;
    int bad;
} race;

static void *reader(void *arg)
{
    race *r = arg;
    while (!atomic_load(&r->stop)) {
        json_t *d = NULL;
        if (docstore_get(r->ds, CA, &d, NULL, NULL) == 0) {
            const char *t = json_string_value(json_object_get(d, "t"));
            if (!t || t[0] != 'v')
                r->bad++;
        }
        json_decref(d);
    }
    return NULL;
}

TEST(concurrent_readers_and_another_writer)
{
    race r = {.ds = cached_store("race")};
    CHECK_INT(put_t(r.ds, CA, "v0"), 0);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, reader, &r);
    char t[16];
    for (int i = 1; i <= 300; i++) {
        snprintf(t, sizeof t, "v%d", i);
        publish_by_rename("race", CA, t);
    }
    atomic_store(&r.stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CHECK_INT(r.bad, 0);
    CHECK_STR(get_t(r.ds, CA, NULL), "v300");
    docstore_close(r.ds);
}

/* ---- PHP storh's writes are seen at once (STORH_PHP_DIR) ---- */

static const char php_put[] =
    "<?php\n"
    "require getenv('STORH_PHP_DIR') . '/vendor/autoload.php';\n"
    "[, $root, $id, $t] = $argv;\n"
    "$s = new Storh\\DocPerFileStore($root, 'php');\n"
    "if ($t === '-') { $s->delete($id); } else { $s->put(['t' => $t], $id); }\n";

static void php(const char *id, const char *t)
{
    char script[PATH_MAX], cmd[PATH_MAX * 3];
    snprintf(script, sizeof script, "%s/put.php", root);
    FILE *f = fopen(script, "w");
    fputs(php_put, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "php8.2 '%s' '%s' %s %s", script, root, id, t);
    CHECK_INT(system(cmd), 0);
}

TEST(php_storh_writes_are_seen)
{
    if (!getenv("STORH_PHP_DIR")) {
        CHECK(!"STORH_PHP_DIR names the PHP storh checkout");
        return;
    }
    docstore *ds = cached_store("php");
    cache_watched(ds, CA, "aaaa");
    php(CA, "bbbb");
    CHECK_STR(get_t(ds, CA, NULL), "bbbb");
    CHECK_STR(get_t(ds, CA, NULL), "bbbb");
    php(CA, "cccc");
    CHECK_STR(get_t(ds, CA, NULL), "cccc");
    CHECK_STR(get_t(ds, CC, NULL), "");
    php(CC, "dddd"); /* into a shard that did not exist */
    CHECK_STR(get_t(ds, CC, NULL), "dddd");
    php(CA, "-");
    CHECK_STR(get_t(ds, CA, NULL), "");
    docstore_close(ds);
}

static const test_case tests[] = {
    TEST_ENTRY(a_validated_hit_needs_no_stat),
    TEST_ENTRY(a_read_fills_an_entry_the_watch_vouches_for),
    TEST_ENTRY(a_rename_during_a_fill_is_seen),
    TEST_ENTRY(a_rename_drained_by_another_lookup_during_a_fill_is_seen),
    TEST_ENTRY(a_rename_between_a_fill_and_its_first_hit_is_seen),
    TEST_ENTRY(an_in_place_write_between_a_fill_and_its_first_hit_is_seen),
    TEST_ENTRY(a_fill_after_a_batch_drain_is_statted_by_the_batch),
    TEST_ENTRY(a_listing_sees_what_changed_before_it_began),
    TEST_ENTRY(another_writers_rename_is_seen),
    TEST_ENTRY(another_writers_in_place_write_is_seen),
    TEST_ENTRY(another_writers_unlink_is_seen),
    TEST_ENTRY(a_new_shard_is_seen),
    TEST_ENTRY(the_collection_replaced_is_seen),
    TEST_ENTRY(an_overflow_unverifies_everything),
    TEST_ENTRY(without_inotify_every_hit_is_statted),
    TEST_ENTRY(concurrent_readers_and_another_writer),
};

/* run only when named: registered with -DSTORH_PHP_DIR */
static const test_case named[] = {
    TEST_ENTRY(php_storh_writes_are_seen),
};

TMPDIR_TEST_MAIN_WITH_NAMED(root, tests, named)
