/* docgroup: concurrent single-document writes published in groups. Each
 * write keeps its own outcome (a unique conflict or a bad id fails that
 * write alone), groups really share their syncs, two writes to one id are
 * answered in the order they were applied, and a failure inside a group
 * fails the group and poisons the collection's writes. Run in both
 * durability modes (syncfs, parallel fsyncs). Indexed groups publish their
 * index changes with the group: no index file is fsynced on its own, and the
 * index equals the records afterwards. */
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docgroup.h"
#include "docindex.h"
#include "docstore.h"
#include "estats.h"
#include "fsx.h"
#include "sjson.h"

#define THREADS 16

static char root[PATH_MAX];

static json_t *js(const char *s)
{
    return sjson_decode(s, strlen(s), NULL);
}

static docstore *open_store(const char *name, int mode)
{
    docstore *ds = NULL;
    storh_err err;
    if (docstore_open(root, name, &ds, &err) != 0)
        fprintf(stderr, "open: %s\n", err.msg);
    else
        docstore_set_group_sync(ds, mode);
    return ds;
}

typedef struct writer {
    docstore *ds;
    pthread_barrier_t *start;
    int w, n;
    const char *id; /* NULL: new ids */
    const char *body;
    int rc[32];
    bool existed[32];
    char ids[32][UUID7_LEN + 1];
    pthread_t th;
} writer;

static void *write_loop(void *arg)
{
    writer *w = arg;
    pthread_barrier_wait(w->start);
    for (int i = 0; i < w->n; i++) {
        char body[128];
        snprintf(body, sizeof body, w->body, w->w, i);
        json_t *d = js(body);
        storh_err err;
        w->rc[i] = docstore_put(w->ds, w->id, d, w->ids[i], &w->existed[i], &err);
        json_decref(d);
    }
    return NULL;
}

static void run_writers(writer *ws, int n, docstore *ds, const char *const *bodies,
                        const char *const *ids, int per)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        ws[i] = (writer){.ds = ds,
                         .start = &start,
                         .w = i,
                         .n = per,
                         .body = bodies[i],
                         .id = ids ? ids[i] : NULL};
        pthread_create(&ws[i].th, NULL, write_loop, &ws[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(ws[i].th, NULL);
    pthread_barrier_destroy(&start);
}

static void concurrent_puts_share_syncs(int mode)
{
    static const char *const names[] = {"share_each", "share_fs", "share_auto"};
    docstore *ds = open_store(names[mode], mode);
    docgroup_stats before, after;
    docgroup_stats_snapshot(&before);
    static writer ws[THREADS];
    const char *bodies[THREADS];
    for (int i = 0; i < THREADS; i++)
        bodies[i] = "{\"w\":%d,\"i\":%d}";
    run_writers(ws, THREADS, ds, bodies, NULL, 20);
    docgroup_stats_snapshot(&after);
    int ok = 0;
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < 20; k++) {
            ok += ws[i].rc[k] == 0;
            json_t *d = NULL;
            CHECK_INT(docstore_get(ds, ws[i].ids[k], &d, NULL, NULL), 0);
            CHECK_INT(json_integer_value(json_object_get(d, "i")), k);
            json_decref(d);
        }
    CHECK_INT(ok, THREADS * 20);
    CHECK_INT(docstore_count_files(ds), THREADS * 20);
    uint64_t ops = after.ops - before.ops, groups = after.groups - before.groups;
    CHECK_INT(ops, THREADS * 20);
    CHECK_INT(after.acked - before.acked, THREADS * 20);
    CHECK(groups < ops); /* some groups held more than one write */
    CHECK(after.syncs - before.syncs < (mode == DOCGROUP_SYNC_EACH ? 2 * ops : ops));
    printf("mode %d: %llu writes in %llu groups, %llu syncs\n", mode, (unsigned long long)ops,
           (unsigned long long)groups, (unsigned long long)(after.syncs - before.syncs));
    docstore_close(ds);
}

TEST(concurrent_puts_share_syncs_syncfs)
{
    concurrent_puts_share_syncs(DOCGROUP_SYNC_FS);
}

TEST(concurrent_puts_share_syncs_fsync)
{
    concurrent_puts_share_syncs(DOCGROUP_SYNC_EACH);
}

TEST(concurrent_puts_share_syncs_auto)
{
    concurrent_puts_share_syncs(DOCGROUP_SYNC_AUTO);
}

/* Half the writers want the same unique email: one wins, the others get
 * 409 alone; their neighbours in the same groups are written. */
static void unique_conflict_fails_alone(int mode)
{
    docstore *ds = open_store(mode ? "uniq_fs" : "uniq_each", mode);
    json_t *defs = js("{\"fields\":[{\"field\":\"email\",\"unique\":true}]}"), *out = NULL;
    CHECK_INT(docstore_define_indexes(ds, defs, true, &out, NULL), 0);
    json_decref(defs);
    json_decref(out);
    static writer ws[THREADS];
    const char *bodies[THREADS];
    for (int i = 0; i < THREADS; i++)
        bodies[i] = i % 2 ? "{\"email\":\"same\",\"w\":%d,\"i\":%d}" : "{\"email\":\"own-%d-%d\"}";
    run_writers(ws, THREADS, ds, bodies, NULL, 1);
    int won = 0, conflicts = 0;
    for (int i = 0; i < THREADS; i++) {
        if (i % 2 == 0) {
            CHECK_INT(ws[i].rc[0], 0);
            continue;
        }
        won += ws[i].rc[0] == 0;
        conflicts += ws[i].rc[0] == STORH_ECONFLICT;
    }
    CHECK_INT(won, 1);
    CHECK_INT(conflicts, THREADS / 2 - 1);
    CHECK_INT(docstore_count_files(ds), THREADS / 2 + 1);
    json_t *health = NULL;
    CHECK_INT(docstore_health(ds, &health, NULL), 0);
    CHECK(json_is_true(json_object_get(health, "ok")));
    json_decref(health);
    docstore_close(ds);
}

TEST(unique_conflict_fails_alone_syncfs)
{
    unique_conflict_fails_alone(DOCGROUP_SYNC_FS);
}

TEST(unique_conflict_fails_alone_fsync)
{
    unique_conflict_fails_alone(DOCGROUP_SYNC_EACH);
}

static void define(docstore *ds, const char *fields)
{
    json_t *defs = js(fields), *out = NULL;
    CHECK_INT(docstore_define_indexes(ds, defs, true, &out, NULL), 0);
    json_decref(defs);
    json_decref(out);
}

static void check_healthy(docstore *ds)
{
    json_t *health = NULL;
    CHECK_INT(docstore_health(ds, &health, NULL), 0);
    CHECK(json_is_true(json_object_get(health, "ok")));
    if (!json_is_true(json_object_get(health, "ok")))
        json_dumpf(health, stderr, 0);
    json_decref(health);
}

/* The index updates of a group are published with it: overwrites move a
 * record between equality, compound and range entries while other writes of
 * the same group touch the same files (one "kind" for all), and afterwards
 * the index files equal the records. With syncfs no index file is fsynced
 * on its own: a group costs its three syncfs (temps, index files,
 * directories) and no more. */
static void indexed_groups_publish_the_index(int mode)
{
    static const char *const names[] = {"ix_each", "ix_fs", "ix_auto"};
    docstore *ds = open_store(names[mode], mode);
    define(ds, "{\"fields\":[{\"field\":\"w\"},{\"field\":\"kind\"},"
               "{\"field\":\"i\",\"range\":true},{\"field\":\"email\",\"unique\":true}]}");
    static const char *const own[THREADS / 2] = {
        "018bcfe5-6800-7000-8000-000000000001", "018bcfe5-6800-7000-8000-000000000003",
        "018bcfe5-6800-7000-8000-000000000005", "018bcfe5-6800-7000-8000-000000000007",
        "018bcfe5-6800-7000-8000-000000000009", "018bcfe5-6800-7000-8000-00000000000b",
        "018bcfe5-6800-7000-8000-00000000000d", "018bcfe5-6800-7000-8000-00000000000f"};
    static writer ws[THREADS];
    const char *bodies[THREADS], *ids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        /* odd: a new version of its own record; even: new records */
        bodies[i] =
            i % 2 ? "{\"w\":%d,\"i\":%d,\"kind\":\"k\"}" : "{\"email\":\"e%d-%d\",\"kind\":\"k\"}";
        ids[i] = i % 2 ? own[i / 2] : NULL;
    }
    docgroup_stats before, after;
    docgroup_stats_snapshot(&before);
    uint64_t file_fsyncs = estats_get(ESTAT_FSYNC_FILE);
    run_writers(ws, THREADS, ds, bodies, ids, 12);
    file_fsyncs = estats_get(ESTAT_FSYNC_FILE) - file_fsyncs;
    docgroup_stats_snapshot(&after);
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < 12; k++)
            CHECK_INT(ws[i].rc[k], 0);
    CHECK_INT(docstore_count_files(ds), THREADS / 2 * 12 + THREADS / 2);
    check_healthy(ds);
    uint64_t ops = after.ops - before.ops, groups = after.groups - before.groups;
    uint64_t syncs = after.syncs - before.syncs;
    CHECK_INT(ops, THREADS * 12);
    if (mode == DOCGROUP_SYNC_FS) {
        CHECK_INT(file_fsyncs, 0);
        CHECK(syncs <= 3 * groups);
    }
    printf("indexed, mode %d: %llu writes in %llu groups, %llu syncs, %llu file fsyncs\n", mode,
           (unsigned long long)ops, (unsigned long long)groups, (unsigned long long)syncs,
           (unsigned long long)file_fsyncs);
    docstore_close(ds);
}

TEST(indexed_groups_publish_the_index_syncfs)
{
    indexed_groups_publish_the_index(DOCGROUP_SYNC_FS);
}

TEST(indexed_groups_publish_the_index_fsync)
{
    indexed_groups_publish_the_index(DOCGROUP_SYNC_EACH);
}

TEST(indexed_groups_publish_the_index_auto)
{
    indexed_groups_publish_the_index(DOCGROUP_SYNC_AUTO);
}

/* A unique range field: half the writers want n = 7 at once; one wins,
 * the others get 409 even when the winner is in their group (its entry is
 * not in the files yet). */
static void unique_range_conflict_fails_alone(int mode)
{
    docstore *ds = open_store(mode ? "urange_fs" : "urange_each", mode);
    define(ds, "{\"fields\":[{\"field\":\"n\",\"unique\":true,\"range\":true}]}");
    static writer ws[THREADS];
    const char *bodies[THREADS];
    for (int i = 0; i < THREADS; i++)
        bodies[i] = i % 2 ? "{\"n\":7,\"w\":%d,\"i\":%d}" : "{\"n\":1%03d%d}";
    run_writers(ws, THREADS, ds, bodies, NULL, 1);
    int won = 0, conflicts = 0;
    for (int i = 0; i < THREADS; i++) {
        if (i % 2 == 0) {
            CHECK_INT(ws[i].rc[0], 0);
            continue;
        }
        won += ws[i].rc[0] == 0;
        conflicts += ws[i].rc[0] == STORH_ECONFLICT;
    }
    CHECK_INT(won, 1);
    CHECK_INT(conflicts, THREADS / 2 - 1);
    CHECK_INT(docstore_count_files(ds), THREADS / 2 + 1);
    check_healthy(ds);
    docstore_close(ds);
}

TEST(unique_range_conflict_fails_alone_syncfs)
{
    unique_range_conflict_fails_alone(DOCGROUP_SYNC_FS);
}

TEST(unique_range_conflict_fails_alone_fsync)
{
    unique_range_conflict_fails_alone(DOCGROUP_SYNC_EACH);
}

/* Bad ids and schema violations fail before any group; the concurrent good
 * writes are all there. */
TEST(bad_input_fails_alone)
{
    docstore *ds = open_store("bad", docgroup_default_mode());
    json_t *sch = js("{\"fields\":{\"title\":{\"type\":\"string\",\"required\":true}}}"), *out;
    CHECK_INT(docstore_set_schema(ds, sch, &out, NULL), 0);
    json_decref(sch);
    json_decref(out);
    static writer ws[THREADS];
    const char *bodies[THREADS], *ids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        bodies[i] = i % 4 == 1 ? "{\"title\":%d,\"i\":%d}" : "{\"title\":\"t%d\",\"i\":%d}";
        ids[i] = i % 4 == 3 ? "not-a-uuid" : NULL;
    }
    run_writers(ws, THREADS, ds, bodies, ids, 2);
    int good = 0;
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < 2; k++) {
            int want = i % 4 == 1 ? STORH_ESCHEMA : i % 4 == 3 ? STORH_EINVAL : 0;
            CHECK_INT(ws[i].rc[k], want);
            good += want == 0;
        }
    CHECK_INT(docstore_count_files(ds), good);
    docstore_close(ds);
}

/* Writers race on one new id: exactly one is told it created the record,
 * every other that it replaced one, and the file holds one of the writes. */
TEST(same_id_answers_follow_apply_order)
{
    docstore *ds = open_store("same", docgroup_default_mode());
    static writer ws[THREADS];
    const char *bodies[THREADS], *ids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        bodies[i] = "{\"w\":%d,\"i\":%d}";
        ids[i] = "018bcfe5-6800-7000-8000-2d5dba6274da";
    }
    run_writers(ws, THREADS, ds, bodies, ids, 4);
    int created = 0;
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < 4; k++) {
            CHECK_INT(ws[i].rc[k], 0);
            created += !ws[i].existed[k];
        }
    CHECK_INT(created, 1);
    json_t *d = NULL;
    CHECK_INT(docstore_get(ds, ids[0], &d, NULL, NULL), 0);
    CHECK(json_integer_value(json_object_get(d, "w")) < THREADS);
    json_decref(d);
    CHECK_INT(docstore_count_files(ds), 1);
    bool existed = false;
    CHECK_INT(docstore_delete(ds, ids[0], &existed, NULL), 0);
    CHECK(existed);
    CHECK_INT(docstore_delete(ds, ids[0], &existed, NULL), 0);
    CHECK(!existed);
    docstore_close(ds);
}

/* An index file that cannot be written (a directory where the entry file
 * goes) fails the write after its rename: the group fails, and every later
 * write of the collection is refused until a restart (reopen). */
TEST(failure_in_group_poisons_the_collection)
{
    docstore *ds = open_store("poison", docgroup_default_mode());
    json_t *defs = js("{\"fields\":[{\"field\":\"kind\"}]}"), *out = NULL;
    CHECK_INT(docstore_define_indexes(ds, defs, true, &out, NULL), 0);
    json_decref(defs);
    json_decref(out);
    char id[UUID7_LEN + 1];
    json_t *ok = js("{\"kind\":\"fine\"}"), *boom = js("{\"kind\":\"boom\"}");
    CHECK_INT(docstore_put(ds, NULL, ok, id, NULL, NULL), 0);
    buf vk = BUF_INIT;
    json_t *v = json_string("boom");
    docindex_value_key(v, &vk);
    json_decref(v);
    char p[PATH_MAX]; /* hex("kind") = 6b696e64 */
    snprintf(p, sizeof p, "%s/poison/.storh/indexes/entries/eq/6b696e64/%s.jsonc/x", root, vk.data);
    buf_free(&vk);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    storh_err err;
    int rc = docstore_put(ds, NULL, boom, id, NULL, &err);
    CHECK(rc == STORH_EIO);
    rc = docstore_put(ds, NULL, ok, id, NULL, &err);
    CHECK(rc == STORH_EIO);
    CHECK(strstr(err.msg, "refused until storhd is restarted") != NULL);
    bool existed;
    CHECK(docstore_delete(ds, id, &existed, &err) == STORH_EIO);
    docstore_stage *st = NULL;
    CHECK_INT(docstore_stage_begin(ds, &st, NULL), 0);
    CHECK_INT(docstore_stage_put(st, NULL, ok, id, NULL), 0);
    CHECK(docstore_stage_commit(st, NULL, &err) == STORH_EIO);
    docstore_close(ds);
    ds = open_store("poison", docgroup_default_mode()); /* a restart clears it */
    CHECK_INT(docstore_put(ds, NULL, ok, id, NULL, NULL), 0);
    docstore_close(ds);
    json_decref(ok);
    json_decref(boom);
}

/* A delete writes no temp: when it is the first write after an open (a
 * restart), its group (deletes alone, which still write index entries and
 * sync directories) must find the group's sync descriptor open too. */
static void first_write_a_delete(const char *name, int mode)
{
    docstore *ds = open_store(name, mode);
    json_t *defs = js("{\"fields\":[{\"field\":\"kind\"}]}"), *out = NULL;
    CHECK_INT(docstore_define_indexes(ds, defs, true, &out, NULL), 0);
    json_decref(defs);
    json_decref(out);
    char a[UUID7_LEN + 1], b[UUID7_LEN + 1];
    json_t *d = js("{\"kind\":\"page\"}");
    CHECK_INT(docstore_put(ds, NULL, d, a, NULL, NULL), 0);
    CHECK_INT(docstore_put(ds, NULL, d, b, NULL, NULL), 0);
    docstore_close(ds);
    ds = open_store(name, mode);
    storh_err err;
    bool existed = false;
    int rc = docstore_delete(ds, a, &existed, &err);
    if (rc)
        fprintf(stderr, "delete: %s\n", err.msg);
    CHECK_INT(rc, 0);
    CHECK(existed);
    json_t *got = NULL;
    CHECK(docstore_get(ds, a, &got, NULL, NULL) == STORH_ENOTFOUND);
    CHECK_INT(docstore_put(ds, b, d, b, NULL, &err), 0); /* not poisoned */
    json_t *report = NULL;
    CHECK_INT(docstore_health(ds, &report, NULL), 0);
    CHECK(json_is_true(json_object_get(report, "ok")));
    json_decref(report);
    json_decref(d);
    docstore_close(ds);
}

TEST(first_write_after_open_a_delete_syncfs)
{
    first_write_a_delete("delfirst_fs", DOCGROUP_SYNC_FS);
}

TEST(first_write_after_open_a_delete_fsync)
{
    first_write_a_delete("delfirst_each", DOCGROUP_SYNC_EACH);
}

TEST(first_write_after_open_a_delete_auto)
{
    first_write_a_delete("delfirst_auto", DOCGROUP_SYNC_AUTO);
}

static const test_case tests[] = {
    TEST_ENTRY(concurrent_puts_share_syncs_syncfs),
    TEST_ENTRY(concurrent_puts_share_syncs_fsync),
    TEST_ENTRY(concurrent_puts_share_syncs_auto),
    TEST_ENTRY(unique_conflict_fails_alone_syncfs),
    TEST_ENTRY(unique_conflict_fails_alone_fsync),
    TEST_ENTRY(indexed_groups_publish_the_index_syncfs),
    TEST_ENTRY(indexed_groups_publish_the_index_fsync),
    TEST_ENTRY(indexed_groups_publish_the_index_auto),
    TEST_ENTRY(unique_range_conflict_fails_alone_syncfs),
    TEST_ENTRY(unique_range_conflict_fails_alone_fsync),
    TEST_ENTRY(bad_input_fails_alone),
    TEST_ENTRY(same_id_answers_follow_apply_order),
    TEST_ENTRY(failure_in_group_poisons_the_collection),
    TEST_ENTRY(first_write_after_open_a_delete_syncfs),
    TEST_ENTRY(first_write_after_open_a_delete_fsync),
    TEST_ENTRY(first_write_after_open_a_delete_auto),
};

TMPDIR_TEST_MAIN(root, tests)
