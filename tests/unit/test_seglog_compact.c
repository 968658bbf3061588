/* test_seglog_compact: the segmented log's compaction (what it keeps, how
 * often it syncs, a crash before its manifest swap, the state it leaves)
 * and reads that cross one, by this instance, another, or PHP storh. */
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docgroup.h"
#include "estats.h"
#include "fsx.h"
#include "seglog.h"
#include "sjson.h"

static char root[PATH_MAX];

#include "../support/logkit.h"

TEST(compaction_keeps_live_records)
{
    seglog *s = logkit_open(root, "cmp", 512);
    char ids[30][37];
    logkit_fill(s, 30, ids);
    bool ex;
    for (int i = 0; i < 10; i++)
        seglog_delete(s, ids[i], &ex, NULL);
    json_t *d = json_pack("{ss}", "updated", "yes");
    char id[37];
    seglog_put(s, ids[15], d, id, NULL);
    json_decref(d);
    json_t *rep;
    CHECK_INT(seglog_compact(s, &rep, NULL), 0);
    CHECK_INT(json_integer_value(json_object_get(rep, "records")), 20);
    json_decref(rep);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 20);
    json_t *g;
    CHECK_INT(seglog_get(s, ids[15], &g, NULL), 0);
    CHECK_STR(json_string_value(json_object_get(g, "updated")), "yes");
    json_decref(g);
    char *m = logkit_slurp(root, "%s/%s/manifest.jsonc", "cmp");
    CHECK(strstr(m, "\"file\":\"compact-") != NULL);
    CHECK(strstr(m, "\"compacted\":true}") != NULL);
    CHECK(strstr(m, "seg-000001") == NULL);
    free(m);
    char old[PATH_MAX];
    snprintf(old, sizeof old, "%s/cmp/segments/seg-000001.ndjson", root);
    CHECK(logkit_fsize(old) > 0); /* left for concurrent readers, as storh does */
    json_t *st;
    seglog_stats(s, &st, NULL);
    CHECK_INT(json_integer_value(json_object_get(st, "deleted")), 0);
    json_decref(st);
    seglog_close(s);
    s = logkit_open(root, "cmp", 512);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 20);
    seglog_close(s);
}

/* The manifest's bytes are what sjson writes for its tree (seglog writes
 * its entries without one), before and after a compaction. */
static void check_manifest_canonical(const char *name)
{
    char *m = logkit_slurp(root, "%s/%s/manifest.jsonc", name);
    json_error_t je;
    json_t *t = json_loads(m, 0, &je);
    CHECK(t != NULL);
    buf b = BUF_INIT;
    CHECK_INT(sjson_encode_doc(&b, t, 0, NULL), 0);
    CHECK_STR(m, b.data);
    buf_free(&b);
    json_decref(t);
    free(m);
}

TEST(manifest_is_sjson_of_its_tree)
{
    seglog *s = logkit_open(root, "canon", 512);
    check_manifest_canonical("canon"); /* nothing sealed, the active empty */
    char ids[30][37];
    logkit_fill(s, 30, ids);
    check_manifest_canonical("canon");
    bool ex;
    for (int i = 0; i < 10; i++)
        seglog_delete(s, ids[i], &ex, NULL);
    json_t *rep = NULL;
    CHECK_INT(seglog_compact(s, &rep, NULL), 0);
    json_decref(rep);
    char *m = logkit_slurp(root, "%s/%s/manifest.jsonc", "canon");
    CHECK(strstr(m, "\"compacted\":true") != NULL && strstr(m, "\"index\":") != NULL);
    free(m);
    check_manifest_canonical("canon");
    seglog_close(s);
}

static int compact_outputs(const char *name)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s/segments", root, name);
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, "compact-", 8) == 0;
    if (d)
        closedir(d);
    return n;
}

/* A compaction whose manifest cannot be written (a full disk) changes
 * nothing: an error, no output left, every record read back from where it
 * was; the next compaction, and a reopen, find the log whole. */
TEST(compaction_that_cannot_write_its_manifest_changes_nothing)
{
    const char *name = "cmpfull";
    seglog *s = logkit_open(root, name, 512);
    char ids[30][37];
    logkit_fill(s, 30, ids);
    bool ex;
    for (int i = 0; i < 10; i++)
        seglog_delete(s, ids[i], &ex, NULL);
    json_t *before[30] = {0};
    for (int i = 10; i < 30; i++)
        CHECK_INT(seglog_get(s, ids[i], &before[i], NULL), 0);
    /* the first manifest write is the roll's, the second the swap's */
    setenv("STORH_FAULT_FAIL", "manifest:cmpfull@2", 1);
    storh_err err = {0};
    json_t *rep = NULL;
    CHECK(seglog_compact(s, &rep, &err) != 0);
    unsetenv("STORH_FAULT_FAIL");
    CHECK(rep == NULL && strstr(err.msg, "manifest") != NULL);
    CHECK_INT(compact_outputs(name), 0);
    for (int round = 0; round < 3; round++) {
        /* 0: after the failure; 1: after a successful compaction; 2: reopened */
        if (round == 1) {
            CHECK_INT(seglog_compact(s, &rep, NULL), 0);
            CHECK_INT(json_integer_value(json_object_get(rep, "records")), 20);
            json_decref(rep);
        } else if (round == 2) {
            seglog_close(s);
            s = logkit_open(root, name, 512);
        }
        CHECK_INT(logkit_count(s, NULL, NULL, 0), 20);
        for (int i = 0; i < 30; i++) {
            json_t *g = NULL;
            int rc = seglog_get(s, ids[i], &g, NULL);
            CHECK_INT(rc, i < 10 ? STORH_ENOTFOUND : 0);
            CHECK(i < 10 || json_equal(g, before[i]));
            json_decref(g);
        }
    }
    for (int i = 10; i < 30; i++)
        json_decref(before[i]);
    seglog_close(s);
}

/* Compacts a log of many small sealed segments under the given sync mode;
 * returns the outputs and the fsync / syncfs counts the compaction made. */
static long compact_counting(const char *name, docgroup_sync mode, uint64_t *files, uint64_t *fs)
{
    docgroup_set_default_mode(mode);
    seglog *s = logkit_open(root, name, 512);
    char ids[40][37];
    logkit_fill(s, 40, ids);
    uint64_t f0 = estats_get(ESTAT_FSYNC_FILE), s0 = estats_get(ESTAT_FSYNC_FS);
    json_t *rep = NULL;
    CHECK_INT(seglog_compact(s, &rep, NULL), 0);
    *files = estats_get(ESTAT_FSYNC_FILE) - f0;
    *fs = estats_get(ESTAT_FSYNC_FS) - s0;
    long outs = (long)json_integer_value(json_object_get(rep, "segments"));
    CHECK_INT(json_integer_value(json_object_get(rep, "records")), 40);
    json_decref(rep);
    seglog_close(s);
    s = logkit_open(root, name, 512);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 40);
    seglog_close(s);
    return outs;
}

TEST(compaction_syncs_outputs_once)
{
    /* where syncfs reports writeback errors, the outputs are made durable by
     * one syncfs, not an fsync each (the manifest and the roll keep theirs) */
    uint64_t files, fs;
    long outs = compact_counting("cmpfs", DOCGROUP_SYNC_AUTO, &files, &fs);
    CHECK(outs >= 4);
    CHECK_INT(fs, 1);
    CHECK(files < (uint64_t)outs);
    /* else an fsync per output file and per sparse index, as before */
    outs = compact_counting("cmpeach", DOCGROUP_SYNC_EACH, &files, &fs);
    CHECK(outs >= 4);
    CHECK_INT(fs, 0);
    CHECK(files >= 2 * (uint64_t)outs);
}

static int count_compact_files(const char *name)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "ls %s/%s/segments | grep -c '^compact-' ", root, name);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p && fscanf(p, "%d", &n) != 1)
        n = 0;
    if (p)
        pclose(p);
    return n;
}

TEST(compaction_crash_before_manifest_swap)
{
    seglog *s = logkit_open(root, "crash", 512);
    char ids[30][37];
    logkit_fill(s, 30, ids);
    bool ex;
    for (int i = 0; i < 5; i++)
        seglog_delete(s, ids[i], &ex, NULL);
    seglog_close(s);
    char *before = logkit_slurp(root, "%s/%s/manifest.jsonc", "crash");
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STORH_FAULT", "seglog.compact.before_manifest", 1);
        seglog *c = logkit_open(root, "crash", 512);
        seglog_compact(c, NULL, NULL);
        _exit(0); /* not reached: the fault point ends the process */
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 86);
    CHECK(count_compact_files("crash") > 0); /* outputs were written, never committed */
    s = logkit_open(root, "crash", 512);
    CHECK_INT(count_compact_files("crash"), 0); /* removed on open */
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 25);
    char *after = logkit_slurp(root, "%s/%s/manifest.jsonc", "crash");
    CHECK(strstr(after, "compact-") == NULL);
    free(before);
    free(after);
    seglog_close(s);
}

/* What a reader sees of a log, as text: every record in order with its
 * data, the stats, and the count of each status from the counters. */
static char *log_view(seglog *s)
{
    buf b = BUF_INIT;
    seglog_iter *it;
    if (seglog_iter_open(s, NULL, &it, NULL))
        return NULL;
    const char *id;
    json_t *d;
    while (seglog_iter_next(it, &id, &d, NULL) == 1) {
        buf_appends(&b, id);
        sjson_encode(&b, d, 0, NULL);
        buf_appendc(&b, '\n');
        json_decref(d);
    }
    seglog_iter_close(it);
    json_t *st;
    if (seglog_stats(s, &st, NULL) == 0) {
        json_object_del(st, "bytes"); /* a reopen may have cut nothing: kept */
        sjson_encode(&b, st, 0, NULL);
        json_decref(st);
    }
    const char *vals[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        json_t *v = json_string(vals[i]);
        size_t n = 0;
        bool served = false;
        seglog_count_eq(s, "status", v, &n, &served, NULL);
        buf_printf(&b, " %s=%zu%s", vals[i], n, served ? "" : "?");
        json_decref(v);
    }
    return b.data;
}

/* After a compaction the state is what a replay of the compacted log
 * builds (the compaction updates it in place): the same records, gets,
 * deletes, stats and counts as after a reopen, and verify finds no drift;
 * twice, the second compacting the first one's outputs. */
TEST(compaction_state_is_what_a_replay_builds)
{
    seglog *s = logkit_open(root, "cmpstate", 512);
    CHECK(s != NULL);
    char ids[60][37];
    const char *st[] = {"a", "b", "c"};
    for (int i = 0; i < 40; i++) {
        json_t *d = json_pack("{siss}", "i", i, "status", st[i % 3]);
        CHECK_INT(seglog_put(s, NULL, d, ids[i], NULL), 0);
        json_decref(d);
    }
    size_t n;
    bool served, ex;
    json_t *a = json_string("a");
    CHECK_INT(seglog_count_eq(s, "status", a, &n, &served, NULL), 0); /* counters built */
    for (int round = 0; round < 2; round++) {
        for (int i = round; i < 40; i += 7)
            CHECK_INT(seglog_delete(s, ids[i], &ex, NULL), 0);
        json_t *d = json_pack("{siss}", "i", 100 + round, "status", "c");
        CHECK_INT(seglog_put(s, ids[10 + round], d, ids[10 + round], NULL), 0); /* a re-put */
        json_decref(d);
        json_t *rep = NULL;
        CHECK_INT(seglog_compact(s, &rep, NULL), 0);
        json_decref(rep);
        for (int i = 0; i < 3; i++) { /* appends after it land in the active segment */
            d = json_pack("{siss}", "i", 200 + i, "status", st[i]);
            CHECK_INT(seglog_put(s, NULL, d, ids[40 + round * 3 + i], NULL), 0);
            json_decref(d);
        }
        CHECK_INT(seglog_delete(s, ids[40 + round * 3], &ex, NULL), 0);
        json_t *v = NULL;
        CHECK_INT(seglog_verify(s, &v, NULL), 0);
        CHECK(json_is_true(json_object_get(v, "ok")));
        json_decref(v);
        char *before = log_view(s);
        for (int i = 0; i < 43 + round * 3; i++) {
            json_t *g = NULL;
            int rc = seglog_get(s, ids[i], &g, NULL);
            CHECK(rc == 0 || rc == STORH_ENOTFOUND);
            json_decref(g);
        }
        seglog_close(s);
        s = logkit_open(root, "cmpstate", 512);
        CHECK(s != NULL);
        char *after = log_view(s);
        CHECK(before && after);
        if (before && after)
            CHECK_STR(before, after);
        free(before);
        free(after);
    }
    json_decref(a);
    seglog_close(s);
}

/* ---------- reads across a compaction ---------- */

enum { ACROSS_SAME, ACROSS_OTHER, ACROSS_OTHER_GONE, ACROSS_PHP };

/* Removes the segment files the manifest no longer names (what a
 * compactor that deletes its inputs leaves). */
static void remove_unlisted(const char *name)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s/segments", root, name);
    char *m = logkit_slurp(root, "%s/%s/manifest.jsonc", name);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (m && d && (e = readdir(d))) {
        if (strncmp(e->d_name, "seg-", 4) || !strstr(e->d_name, ".ndjson") || strstr(m, e->d_name))
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    free(m);
}

/* A reader opened on n records (every 7th deleted before it starts) reads
 * `first`, then records are deleted ahead of it and behind it, the log is
 * compacted by `how`, 5 records are appended, and the reader finishes:
 * what it hands out is in log order, never twice, holds every record never
 * deleted (and the 5 new ones, last), and none deleted before it began. */
static void read_across(const char *name, size_t seg_bytes, int n, int first, int how)
{
    seglog *s = logkit_open(root, name, seg_bytes);
    char(*ids)[37] = calloc((size_t)n + 5, 37);
    logkit_fill(s, n, ids);
    bool ex;
    for (int i = 3; i < n; i += 7)
        seglog_delete(s, ids[i], &ex, NULL);
    seglog_iter *it;
    CHECK_INT(seglog_iter_open(s, NULL, &it, NULL), 0);
    const char *id;
    json_t *d;
    int *got = calloc((size_t)n + 5, sizeof *got), ngot = 0, r = 1;
    char(*seen)[37] = calloc((size_t)n + 5, 37);
    while (ngot < first && (r = seglog_iter_next(it, &id, &d, NULL)) == 1) {
        memcpy(seen[ngot++], id, 37);
        json_decref(d);
    }
    CHECK_INT(ngot, first);
    for (int i = 1; i < n; i += 5) /* behind the reader and ahead of it */
        seglog_delete(s, ids[i], &ex, NULL);
    if (how == ACROSS_SAME) {
        CHECK_INT(seglog_compact(s, NULL, NULL), 0);
    } else if (how == ACROSS_PHP) {
        const char *php = getenv("STORH_PHP_DIR");
        CHECK(php != NULL);
        char cmd[PATH_MAX * 3];
        snprintf(cmd, sizeof cmd,
                 "php -r 'require \"%s/vendor/autoload.php\"; "
                 "(new Storh\\SegmentedLogStore(\"%s\", \"%s\"))->compact();'",
                 php ? php : "", root, name);
        CHECK_INT(system(cmd), 0);
        remove_unlisted(name);
        CHECK(logkit_live(s) >= 0); /* another thread's read refreshes */
    } else {
        seglog *o = logkit_open(root, name, seg_bytes);
        CHECK(o != NULL);
        CHECK_INT(seglog_compact(o, NULL, NULL), 0);
        seglog_close(o);
        if (how == ACROSS_OTHER_GONE)
            remove_unlisted(name);
        else
            CHECK(logkit_live(s) >= 0); /* another thread's read refreshes */
    }
    for (int i = n; i < n + 5; i++) {
        json_t *x = json_pack("{si}", "late", i);
        seglog_put(s, NULL, x, ids[i], NULL);
        json_decref(x);
    }
    while ((r = seglog_iter_next(it, &id, &d, NULL)) == 1) {
        if (ngot < n + 5)
            memcpy(seen[ngot], id, 37);
        ngot++;
        json_decref(d);
    }
    CHECK_INT(r, 0);
    seglog_iter_close(it);
    /* each seen id's position in ids, strictly increasing */
    int at = -1, bad = 0;
    for (int k = 0; k < ngot && k < n + 5; k++) {
        int i = at + 1;
        while (i < n + 5 && strcmp(ids[i], seen[k]))
            i++;
        if (i == n + 5 || (i < n && i % 7 == 3))
            bad++; /* out of order, twice, or deleted before the read */
        else
            got[i] = 1, at = i;
    }
    CHECK_INT(bad, 0);
    int missing = 0;
    for (int i = 0; i < n + 5; i++)
        if (!got[i] && (i >= n || (i % 7 != 3 && i % 5 != 1)))
            missing++;
    CHECK_INT(missing, 0);
    CHECK(ngot <= n + 5);
    free(ids);
    free(got);
    free(seen);
    seglog_close(s);
}

TEST(read_across_compaction_small_segments)
{
    read_across("acr1", 512, 120, 37, ACROSS_SAME);
}

TEST(read_across_compaction_in_chunks)
{
    read_across("acr2", 0, 2000, 700, ACROSS_SAME);
}

TEST(read_across_compaction_by_another_instance)
{
    read_across("acr3", 512, 120, 37, ACROSS_OTHER);
    read_across("acr4", 0, 2000, 700, ACROSS_OTHER);
}

TEST(read_across_compaction_that_removed_the_segments)
{
    read_across("acr5", 512, 120, 37, ACROSS_OTHER_GONE);
    read_across("acr6", 0, 2000, 700, ACROSS_OTHER_GONE);
}

/* registered only with -DSTORH_PHP_DIR (tests/CMakeLists.txt) */
TEST(read_across_compaction_by_php_storh)
{
    read_across("acr7", 512, 120, 37, ACROSS_PHP);
}

/* A log of 60 small records in 512-byte segments (their ids in ids) and
 * a read of it that has handed out its first 10. */
static seglog *begun_read(const char *name, char ids[60][37], seglog_iter **it)
{
    seglog *s = logkit_open(root, name, 512);
    logkit_fill(s, 60, ids);
    *it = NULL;
    CHECK_INT(seglog_iter_open(s, NULL, it, NULL), 0);
    const char *id;
    json_t *d;
    for (int n = 0; *it && n < 10 && seglog_iter_next(*it, &id, &d, NULL) == 1; n++)
        json_decref(d);
    return s;
}

/* The last live line the reader passed is put again before the compaction:
 * its new place is not where the reader was, so the read either goes on
 * from the right place or fails; it never skips silently. */
TEST(read_across_compaction_after_a_reput_of_where_it_was)
{
    char ids[60][37];
    seglog_iter *it;
    seglog *s = begun_read("acr8", ids, &it);
    const char *id;
    json_t *d;
    int r;
    for (int i = 0; i < 20; i++) {
        json_t *x = json_pack("{si}", "again", i);
        char out[37];
        seglog_put(s, ids[i], x, out, NULL);
        json_decref(x);
    }
    CHECK_INT(seglog_compact(s, NULL, NULL), 0);
    int seen[60] = {0};
    storh_err err;
    while ((r = seglog_iter_next(it, &id, &d, &err)) == 1) {
        for (int i = 20; i < 60; i++)
            if (!strcmp(id, ids[i]))
                seen[i]++;
        json_decref(d);
    }
    CHECK(r == 0 || r == STORH_EUNAVAIL);
    if (r == STORH_EUNAVAIL)
        CHECK(strstr(err.msg, "read again after") != NULL);
    for (int i = 20; i < 60; i++)
        CHECK(seen[i] <= 1 && (r != 0 || seen[i] == 1));
    seglog_iter_close(it);
    seglog_close(s);
}

/* Every record the reader passed is deleted before the compaction, so its
 * last one is gone from the outputs: the read goes on by id order (the
 * segments are ordered) and hands out exactly the rest. */
TEST(read_across_compaction_that_dropped_where_it_was)
{
    char ids[60][37];
    seglog_iter *it;
    seglog *s = begun_read("acr9", ids, &it);
    const char *id;
    json_t *d;
    int r;
    bool ex;
    for (int i = 0; i < 25; i++)
        seglog_delete(s, ids[i], &ex, NULL);
    CHECK_INT(seglog_compact(s, NULL, NULL), 0);
    /* the hits of the chunk in memory may still come (deleted after the
     * read began), in order; then exactly the records never deleted */
    int k = 10, early = 0;
    while ((r = seglog_iter_next(it, &id, &d, NULL)) == 1) {
        while (k < 25 && strcmp(id, ids[k]))
            k++;
        if (k < 25)
            early++;
        CHECK(k < 60 && !strcmp(id, ids[k]));
        k++;
        json_decref(d);
    }
    CHECK(early < 5);
    CHECK_INT(r, 0);
    CHECK_INT(k, 60);
    seglog_iter_close(it);
    seglog_close(s);
}

/* A cursor read with a limit (after=, limit=) across a compaction: the
 * records after the cursor in order, none twice, no gap, up to the limit. */
TEST(read_across_compaction_with_cursor_and_limit)
{
    seglog *s = logkit_open(root, "acr10", 512);
    char ids[200][37];
    logkit_fill(s, 200, ids);
    recquery q;
    recquery_init(&q);
    recquery_after(&q, ids[30], 36, NULL);
    recquery_limit(&q, 100, NULL);
    seglog_iter *it;
    CHECK_INT(seglog_iter_open(s, &q, &it, NULL), 0);
    const char *id;
    json_t *d;
    int r, n = 0, at = 30, bad = 0;
    bool ex;
    while ((r = seglog_iter_next(it, &id, &d, NULL)) == 1) {
        int i = at + 1;
        while (i < 200 && strcmp(id, ids[i]))
            i++;
        for (int k = at + 1; k < i; k++) /* a gap: only records deleted meanwhile */
            if (n <= 20 || k % 4)
                bad++;
        if (i == 200)
            bad++;
        else
            at = i;
        json_decref(d);
        if (++n == 20) {
            for (int k = 0; k < 200; k += 4)
                seglog_delete(s, ids[k], &ex, NULL);
            CHECK_INT(seglog_compact(s, NULL, NULL), 0);
        }
    }
    CHECK_INT(r, 0);
    CHECK_INT(n, 100);
    CHECK_INT(bad, 0);
    seglog_iter_close(it);
    recquery_clear(&q);
    seglog_close(s);
}

static const test_case tests[] = {
    TEST_ENTRY(compaction_keeps_live_records),
    TEST_ENTRY(manifest_is_sjson_of_its_tree),
    TEST_ENTRY(compaction_that_cannot_write_its_manifest_changes_nothing),
    TEST_ENTRY(compaction_syncs_outputs_once),
    TEST_ENTRY(compaction_crash_before_manifest_swap),
    TEST_ENTRY(compaction_state_is_what_a_replay_builds),
    TEST_ENTRY(read_across_compaction_small_segments),
    TEST_ENTRY(read_across_compaction_in_chunks),
    TEST_ENTRY(read_across_compaction_by_another_instance),
    TEST_ENTRY(read_across_compaction_that_removed_the_segments),
    TEST_ENTRY(read_across_compaction_by_php_storh),
    TEST_ENTRY(read_across_compaction_after_a_reput_of_where_it_was),
    TEST_ENTRY(read_across_compaction_that_dropped_where_it_was),
    TEST_ENTRY(read_across_compaction_with_cursor_and_limit),
};

TMPDIR_TEST_MAIN(root, tests)
