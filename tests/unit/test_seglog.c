/* test_seglog: the segmented log's writes: storh's frames and layout,
 * segment rolls, torn and bad lines, retention, bulk batches, equality
 * counters, a bulk write that fails partway, concurrent appends.
 * Reads: test_seglog_read; compaction: test_seglog_compact. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "estats.h"
#include "frame.h"
#include "fsx.h"
#include "seglog.h"
#include "sjson.h"

static char root[PATH_MAX];

#include "../support/damage.h"
#include "../support/js.h"
#include "../support/logkit.h"

TEST(frames_match_storh_bytes)
{
    buf b = BUF_INIT;
    const char *put =
        "{\"op\":\"put\",\"id\":\"018bcfe5-6800-7000-8000-000000000000\",\"data\":{\"type\":\"a\","
        "\"n\":1.0}}";
    frame_encode(&b, put, strlen(put));
    CHECK_PREFIX(b.data, "84\td6d3231c\t{");
    buf_reset(&b);
    const char *del = "{\"op\":\"delete\",\"id\":\"018bcfe5-6800-7000-8000-000000000000\"}";
    frame_encode(&b, del, strlen(del));
    CHECK_PREFIX(b.data, "59\t0b41c0e5\t{");
    const char *j;
    size_t jl;
    CHECK_INT(frame_decode(b.data, b.len, false, &j, &jl, NULL), 0);
    CHECK_INT(jl, 59);
    char lenient[128];
    snprintf(lenient, sizeof lenient, "59abc\t0b41c0e5\t%s", del); /* PHP (int) cast */
    CHECK_INT(frame_decode(lenient, strlen(lenient), false, &j, &jl, NULL), 0);
    CHECK_INT(frame_decode(lenient, strlen(lenient), true, &j, &jl, NULL), STORH_ECORRUPT);
    char badhash[128];
    snprintf(badhash, sizeof badhash, "59\t0B41C0E5\t%s", del);
    CHECK_INT(frame_decode(badhash, strlen(badhash), false, &j, &jl, NULL), STORH_ECORRUPT);
    buf_free(&b);
}

TEST(put_get_delete_and_layout)
{
    seglog *s = logkit_open(root, "events", 0);
    char *m = logkit_slurp(root, "%s/%s/manifest.jsonc", "events");
    CHECK_STR(m, "{\"nextSegment\":2,\"sealed\":[],\"active\":{\"file\":\"seg-000001.ndjson\","
                 "\"max\":null,\"min\":null,\"records\":0,\"ordered\":true}}\n");
    free(m);
    json_t *d = js("{\"type\":\"a\",\"n\":1.0}");
    char id[37];
    CHECK_INT(seglog_put(s, "018bcfe5-6800-7000-8000-000000000000", d, id, NULL), 0);
    json_decref(d);
    bool existed;
    CHECK_INT(seglog_delete(s, id, &existed, NULL), 0);
    CHECK(existed);
    CHECK_INT(seglog_delete(s, id, &existed, NULL), 0);
    CHECK(!existed); /* no second tombstone */
    char *seg = logkit_slurp(root, "%s/%s/segments/seg-000001.ndjson", "events");
    CHECK_STR(seg, "84\td6d3231c\t{\"op\":\"put\",\"id\":\"018bcfe5-6800-7000-8000-000000000000\","
                   "\"data\":{\"type\":\"a\",\"n\":1.0}}\n"
                   "59\t0b41c0e5\t{\"op\":\"delete\",\"id\":\"018bcfe5-6800-7000-8000-"
                   "000000000000\"}\n");
    free(seg);
    json_t *got = NULL;
    CHECK_INT(seglog_get(s, id, &got, NULL), STORH_ENOTFOUND);
    d = js("{\"k\":\"v\",\"list\":[1,2]}");
    CHECK_INT(seglog_put(s, NULL, d, id, NULL), 0);
    json_decref(d);
    CHECK_INT(seglog_get(s, id, &got, NULL), 0);
    CHECK_STR(json_string_value(json_object_get(got, "k")), "v");
    json_decref(got);
    seglog_close(s);
    s = logkit_open(root, "events", 0); /* replayed from disk */
    CHECK_INT(seglog_get(s, id, &got, NULL), 0);
    json_decref(got);
    json_t *st;
    seglog_stats(s, &st, NULL);
    CHECK_INT(json_integer_value(json_object_get(st, "records")), 1);
    CHECK_INT(json_integer_value(json_object_get(st, "deleted")), 1);
    json_decref(st);
    seglog_close(s);
}

TEST(rolls_segments_and_streams_in_log_order)
{
    seglog *s = logkit_open(root, "roll", 256);
    char ids[40][37];
    for (int i = 0; i < 40; i++) {
        json_t *d = json_pack("{si}", "i", i);
        CHECK_INT(seglog_put(s, NULL, d, ids[i], NULL), 0);
        json_decref(d);
    }
    /* re-put the first record: it moves to the end of the log order */
    json_t *d = json_pack("{si}", "i", 100);
    char id[37];
    CHECK_INT(seglog_put(s, ids[0], d, id, NULL), 0);
    json_decref(d);
    char out[41][37];
    CHECK_INT(logkit_count(s, NULL, out, 41), 40);
    CHECK_STR(out[0], ids[1]);
    CHECK_STR(out[39], ids[0]);
    json_t *st;
    seglog_stats(s, &st, NULL);
    long long segs = json_integer_value(json_object_get(st, "segments"));
    CHECK(segs > 5);
    json_decref(st);
    char *m = logkit_slurp(root, "%s/%s/manifest.jsonc", "roll");
    CHECK(strstr(m, "\"index\":\"seg-000001.idx.jsonc\"") != NULL);
    free(m);
    char *idx = logkit_slurp(root, "%s/%s/segments/seg-000001.idx.jsonc", "roll");
    CHECK(idx && strncmp(idx, "{\"entries\":[{\"id\":\"", 19) == 0);
    free(idx);
    /* after + limit use the sparse index and stop early */
    recquery q;
    recquery_init(&q);
    recquery_after(&q, ids[20], 36, NULL);
    recquery_limit(&q, 5, NULL);
    CHECK_INT(logkit_count(s, &q, out, 5), 5);
    CHECK_STR(out[0], ids[21]);
    recquery_clear(&q);
    seglog_close(s);
    s = logkit_open(root, "roll", 256);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 40);
    seglog_close(s);
}

static char active_path[PATH_MAX];

TEST(torn_tail_is_cut_and_the_last_whole_record_kept)
{
    seglog *s = logkit_open(root, "torn", 0);
    char ids[3][37];
    for (int i = 0; i < 3; i++) {
        json_t *d = json_pack("{si}", "i", i);
        seglog_put(s, NULL, d, ids[i], NULL);
        json_decref(d);
    }
    seglog_close(s);
    snprintf(active_path, sizeof active_path, "%s/torn/segments/seg-000001.ndjson", root);
    off_t full = logkit_fsize(active_path);
    CHECK(truncate(active_path, full - 10) == 0); /* mid-way through the third line */
    s = logkit_open(root, "torn", 0);
    json_t *d;
    CHECK_INT(seglog_get(s, ids[1], &d, NULL), 0);
    json_decref(d);
    CHECK_INT(seglog_get(s, ids[2], &d, NULL), STORH_ENOTFOUND);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 2);
    CHECK(logkit_fsize(active_path) < full - 10); /* the torn bytes are gone */
    /* and appends continue cleanly */
    d = json_pack("{si}", "i", 9);
    char id[37];
    CHECK_INT(seglog_put(s, NULL, d, id, NULL), 0);
    json_decref(d);
    seglog_close(s);
    s = logkit_open(root, "torn", 0);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 3);
    seglog_close(s);
}

TEST(unterminated_valid_line_is_not_glued_to_the_next)
{
    seglog *s = logkit_open(root, "nolf", 0);
    char a[37], b[37];
    json_t *d = json_pack("{si}", "i", 1);
    seglog_put(s, NULL, d, a, NULL);
    json_decref(d);
    seglog_close(s);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/nolf/segments/seg-000001.ndjson", root);
    CHECK(truncate(p, logkit_fsize(p) - 1) == 0); /* drop only the LF */
    s = logkit_open(root, "nolf", 0);
    d = json_pack("{si}", "i", 2);
    CHECK_INT(seglog_put(s, NULL, d, b, NULL), 0);
    json_decref(d);
    seglog_close(s);
    s = logkit_open(root, "nolf", 0);
    json_t *g;
    CHECK_INT(seglog_get(s, a, &g, NULL), 0);
    json_decref(g);
    CHECK_INT(seglog_get(s, b, &g, NULL), 0);
    json_decref(g);
    seglog_close(s);
}

TEST(bad_middle_line_loses_nothing_after_it)
{
    seglog *s = logkit_open(root, "mid", 0);
    char ids[4][37];
    for (int i = 0; i < 4; i++) {
        json_t *d = json_pack("{si}", "i", i);
        seglog_put(s, NULL, d, ids[i], NULL);
        json_decref(d);
    }
    seglog_close(s);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/mid/segments/seg-000001.ndjson", root);
    buf b = BUF_INIT;
    fsx_read_all(p, &b, NULL);
    char *second = strchr(b.data, '\n') + 1;
    char *digit = strstr(second, "\"i\":1");
    digit[4] = '7'; /* the checksum no longer matches */
    FILE *f = fopen(p, "w");
    fwrite(b.data, 1, b.len, f);
    fclose(f);
    s = logkit_open(root, "mid", 0);
    CHECK_INT(logkit_fsize(p), (off_t)b.len); /* storh would have cut the file here */
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 3);
    json_t *d;
    CHECK_INT(seglog_get(s, ids[3], &d, NULL), 0);
    json_decref(d);
    json_t *v;
    CHECK_INT(seglog_verify(s, &v, NULL), 0);
    CHECK(json_is_false(json_object_get(v, "ok")));
    CHECK(strstr(json_string_value(json_array_get(json_object_get(v, "errors"), 0)),
                 "seg-000001.ndjson:") != NULL);
    json_decref(v);
    CHECK_INT(seglog_repair(s, &v, NULL), 0);
    CHECK_INT(json_integer_value(json_object_get(v, "quarantined")), 1);
    json_decref(v);
    CHECK_INT(seglog_verify(s, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 3);
    d = json_pack("{si}", "i", 5);
    char id[37];
    CHECK_INT(seglog_put(s, NULL, d, id, NULL), 0); /* the reopened active fd works */
    json_decref(d);
    seglog_close(s);
    s = logkit_open(root, "mid", 0);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 4);
    seglog_close(s);
    buf_free(&b);
}

/* A repair that replaced a segment but whose directory's sync failed
 * refuses later writes, and still reads every record from the files as they
 * are; after it the log opens whole, the bad line quarantined. */
TEST(repair_whose_rewrite_sync_fails_loses_nothing)
{
    seglog *s = logkit_open(root, "midsync", 0);
    char ids[4][37];
    for (int i = 0; i < 4; i++) {
        json_t *d = json_pack("{si}", "i", i);
        CHECK_INT(seglog_put(s, NULL, d, ids[i], NULL), 0);
        json_decref(d);
    }
    seglog_close(s);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/midsync/segments/seg-000001.ndjson", root);
    CHECK_INT(damage_second_line(p, "\"i\":1", '7'), 0); /* a bad second line */
    s = logkit_open(root, "midsync", 0);
    setenv("STORH_FAULT_FAIL", "logsync:midsync", 1);
    json_t *v = NULL;
    storh_err err = {0};
    CHECK(seglog_repair(s, &v, &err) != 0);
    unsetenv("STORH_FAULT_FAIL");
    CHECK(v == NULL && strstr(err.msg, "sync") != NULL);
    for (int i = 0; i < 4; i++) {
        json_t *d = NULL;
        CHECK_INT(seglog_get(s, ids[i], &d, NULL), i == 1 ? STORH_ENOTFOUND : 0);
        CHECK(i == 1 || json_integer_value(json_object_get(d, "i")) == i);
        json_decref(d);
    }
    json_t *d = json_pack("{si}", "i", 5);
    char id[37];
    int acked = seglog_put(s, NULL, d, id, NULL) == 0;
    CHECK(!acked); /* refused: the log was poisoned */
    json_decref(d);
    seglog_close(s);
    s = logkit_open(root, "midsync", 0);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 3 + acked);
    CHECK_INT(seglog_verify(s, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    seglog_close(s);
}

/* An active segment the manifest names but the disk lacks (a roll whose
 * manifest's directory sync failed takes its new segment back) is made on
 * open with its directory synced, one more directory sync than an open of
 * the same log with the file there; what is put into it reads back. */
TEST(a_missing_active_segment_is_made_durably)
{
    char p[PATH_MAX];
    seglog *s = logkit_open(root, "noact", 0);
    seglog_close(s);
    snprintf(p, sizeof p, "%s/noact/manifest.jsonc", root);
    FILE *f = fopen(p, "w");
    fputs("{\"nextSegment\":3,\"sealed\":[],\"active\":{\"file\":\"seg-000002.ndjson\","
          "\"max\":null,\"min\":null,\"records\":0,\"ordered\":true}}\n",
          f);
    fclose(f);
    snprintf(p, sizeof p, "%s/noact/segments/seg-000002.ndjson", root);
    uint64_t d0 = estats_get(ESTAT_FSYNC_DIR);
    s = logkit_open(root, "noact", 0);
    uint64_t made = estats_get(ESTAT_FSYNC_DIR) - d0;
    CHECK(s != NULL && access(p, F_OK) == 0);
    json_t *d = json_pack("{si}", "i", 1);
    char id[37];
    CHECK_INT(seglog_put(s, NULL, d, id, NULL), 0);
    json_decref(d);
    seglog_close(s);
    d0 = estats_get(ESTAT_FSYNC_DIR);
    s = logkit_open(root, "noact", 0);
    uint64_t there = estats_get(ESTAT_FSYNC_DIR) - d0;
    CHECK_INT((long long)made, (long long)there + 1);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 1);
    seglog_close(s);
}

TEST(retention_and_time_ranges)
{
    seglog *s = logkit_open(root, "ret", 0);
    /* ids from three days: 2023-11-14, 11-15, 11-16 (ms since the epoch) */
    int64_t days[3] = {INT64_C(1699920000000), INT64_C(1700006400000), INT64_C(1700092800000)};
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 4; i++) {
            char id[37];
            uuid7_generate(id, days[d] + i, NULL);
            json_t *v = json_pack("{si}", "day", d);
            char out[37];
            CHECK_INT(seglog_put(s, id, v, out, NULL), 0);
            json_decref(v);
        }
    recquery q;
    recquery_init(&q);
    recquery_time_range(&q, true, days[1], true, days[1] + 3, NULL);
    CHECK_INT(logkit_count(s, &q, NULL, 0), 4);
    recquery_clear(&q);
    size_t deleted;
    CHECK_INT(seglog_retain(s, days[1] + 1, &deleted, NULL), 0);
    CHECK_INT(deleted, 6); /* day 0, and the first two ms of day 1 (inclusive) */
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 6);
    seglog_close(s);
}

static int commit_batch(seglog *s, int from, int n, size_t *written)
{
    seglog_batch *b;
    char id[UUID7_LEN + 1];
    if (seglog_batch_begin(s, &b, NULL) != 0)
        return -1;
    for (int i = from; i < from + n; i++) {
        json_t *e = json_pack("{si}", "i", i);
        int rc = seglog_batch_element(b, e, id, NULL);
        json_decref(e);
        if (rc) {
            seglog_batch_abort(b);
            return -1;
        }
    }
    return seglog_batch_commit(b, written, NULL);
}

TEST(bulk_batches_and_partitions)
{
    seglog *s = logkit_open(root, "bulk", 300);
    seglog_batch *b;
    char id[37];
    CHECK_INT(seglog_batch_begin(s, &b, NULL), 0);
    for (int i = 0; i < 50; i++) {
        json_t *d = json_pack("{si}", "i", i);
        CHECK_INT(seglog_batch_element(b, d, id, NULL), 0);
        json_decref(d);
    }
    seglog_batch_abort(b);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 0);
    CHECK_INT(seglog_batch_begin(s, &b, NULL), 0);
    for (int i = 0; i < 50; i++) {
        json_t *d = json_pack("{s{si}}", "data", "i", i);
        CHECK_INT(seglog_batch_element(b, d, id, NULL), 0);
        json_decref(d);
    }
    size_t n;
    CHECK_INT(seglog_batch_commit(b, &n, NULL), 0);
    CHECK_INT(n, 50);
    CHECK_INT(logkit_count(s, NULL, NULL, 0), 50);
    json_t *st;
    seglog_stats(s, &st, NULL);
    /* the batch is a segment of its own; the empty active one made way */
    CHECK_INT(json_integer_value(json_object_get(st, "segments")), 1);
    json_decref(st);
    CHECK_INT(commit_batch(s, 100, 3, &n), 0);
    seglog_stats(s, &st, NULL);
    /* the next one seals it and takes its place */
    CHECK_INT(json_integer_value(json_object_get(st, "segments")), 2);
    json_decref(st);
    seglog_close(s);

    seglog_opts o;
    seglog_opts_default(&o);
    o.partition = SEGLOG_PART_DAILY;
    o.partition_ts_ms = INT64_C(1783209600000);
    char dir[PATH_MAX];
    CHECK_INT(seglog_dir("/r", "events", &o, dir, NULL), 0);
    CHECK_STR(dir, "/r/events/partitions/2026-07-05");
    o.partition = SEGLOG_PART_MONTHLY;
    CHECK_INT(seglog_dir("/r/", "events", &o, dir, NULL), 0);
    CHECK_STR(dir, "/r/events/partitions/2026-07");
    CHECK_INT(seglog_open(root, "part", &o, true, &s, NULL), 0);
    snprintf(dir, sizeof dir, "%s/part/partitions/2026-07/manifest.jsonc", root);
    CHECK(logkit_fsize(dir) > 0);
    seglog_close(s);
    storh_err err;
    CHECK_INT(seglog_open(root, "missing", &o, false, &s, &err), STORH_ENOTFOUND);
}

static long eq_count(seglog *s, const char *field, json_t *v)
{
    size_t n = 0;
    bool served = false;
    if (seglog_count_eq(s, field, v, &n, &served, NULL) != 0 || !served)
        return -1;
    return (long)n;
}

TEST(equality_counters_follow_appends_and_deletes)
{
    seglog *s = logkit_open(root, "counted", 0);
    char ids[10][37];
    for (int i = 0; i < 10; i++) {
        json_t *d = json_pack("{ss}", "kind", i % 2 ? "a" : "b");
        seglog_put(s, NULL, d, ids[i], NULL);
        json_decref(d);
    }
    json_t *a = json_string("a"), *b = json_string("b");
    CHECK_INT(eq_count(s, "kind", a), 5); /* built by a scan */
    json_t *d = json_pack("{ss}", "kind", "a");
    char id[37];
    seglog_put(s, NULL, d, id, NULL); /* a new id: counted on the way in */
    json_decref(d);
    CHECK_INT(eq_count(s, "kind", a), 6);
    bool ex;
    seglog_delete(s, ids[1], &ex, NULL); /* a delete: counters start over */
    CHECK_INT(eq_count(s, "kind", a), 5);
    d = json_pack("{ss}", "kind", "b");
    seglog_put(s, ids[3], d, id, NULL); /* a re-put moves ids[3] from a to b */
    json_decref(d);
    CHECK_INT(eq_count(s, "kind", a), 4);
    CHECK_INT(eq_count(s, "kind", b), 6);
    for (int i = 0; i < 70; i++) { /* more than 64 distinct values: not countable */
        json_t *u = json_pack("{si}", "u", i);
        seglog_put(s, NULL, u, id, NULL);
        json_decref(u);
    }
    json_t *five = json_integer(5);
    CHECK_INT(eq_count(s, "u", five), 1);  /* this count comes from the scan */
    CHECK_INT(eq_count(s, "u", five), -1); /* and the field is not kept in counters */
    json_decref(five);
    json_decref(a);
    json_decref(b);
    seglog_close(s);
}

static off_t file_size(const char *fmt, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, fmt, root, name);
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

/* A write that fails partway through a batch larger than one 1 MiB chunk
 * (here a file size limit; a full disk does the same) leaves the log
 * exactly as it was: nothing applied, nothing half-written, no spool. */
TEST(failed_bulk_write_changes_nothing)
{
    const char *seg = "%s/%s/segments/seg-000002.ndjson";
    seglog *s = logkit_open(root, "bulkprobe", 64 << 20); /* the batch's size, measured */
    CHECK_INT(commit_batch(s, 0, 13000, NULL), 0);
    seglog_close(s);
    off_t batch = file_size(seg, "bulkprobe");
    CHECK(batch > 1024 * 1024);
    s = logkit_open(root, "bulkfail", 64 << 20);
    CHECK_INT(commit_batch(s, 0, 300, NULL), 0);
    seglog_close(s);
    off_t before = file_size(seg, "bulkfail");
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        seglog *c = logkit_open(root, "bulkfail", 64 << 20);
        rlim_t lim = (rlim_t)(batch / 2);
        struct rlimit rl = {lim, lim};
        setrlimit(RLIMIT_FSIZE, &rl);
        size_t n = 0; /* the spool may fail before the commit: n is then untouched */
        int ok = c && commit_batch(c, 1000, 13000, &n) != 0 && n == 0;
        ok = ok && logkit_live(c) == 300; /* nothing applied */
        _exit(ok ? 0 : 1);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_INT(file_size(seg, "bulkfail"), before);
    CHECK_INT(file_size("%s/%s/segments/seg-000003.ndjson", "bulkfail"), -1);
    s = logkit_open(root, "bulkfail", 64 << 20);
    CHECK_INT(logkit_live(s), 300);
    json_t *v = NULL;
    CHECK_INT(seglog_verify(s, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    seglog_close(s);
}

typedef struct appender {
    seglog *s;
    int n, ok;
} appender;

static void *append_many(void *arg)
{
    appender *a = arg;
    for (int i = 0; i < a->n; i++) {
        json_t *d = json_pack("{si}", "i", i);
        char id[UUID7_LEN + 1];
        a->ok += seglog_put(a->s, NULL, d, id, NULL) == 0;
        json_decref(d);
    }
    return NULL;
}

/* Rolls under concurrent appends: a roll never lets an append in halfway,
 * so the manifest lists each sealed segment once, in order, with its index,
 * and a reopen finds every record. */
TEST(concurrent_appends_roll_cleanly)
{
    seglog *s = logkit_open(root, "rollrace", 256);
    appender a[6];
    pthread_t th[6];
    for (int i = 0; i < 6; i++) {
        a[i] = (appender){s, 150, 0};
        pthread_create(&th[i], NULL, append_many, &a[i]);
    }
    int ok = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        ok += a[i].ok;
    }
    CHECK_INT(ok, 900);
    seglog_close(s);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/rollrace/manifest.jsonc", root);
    json_t *m = json_load_file(p, 0, NULL);
    long last = 0;
    size_t i;
    json_t *g;
    json_array_foreach (json_object_get(m, "sealed"), i, g) {
        long num = atol(json_string_value(json_object_get(g, "file")) + 4);
        CHECK(num > last);
        CHECK(strlen(json_string_value(json_object_get(g, "index"))) > 0);
        last = num;
    }
    CHECK(json_array_size(json_object_get(m, "sealed")) > 100);
    json_decref(m);
    s = logkit_open(root, "rollrace", 256);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(logkit_live(s), 900);
        json_t *v = NULL;
        CHECK_INT(seglog_verify(s, &v, NULL), 0);
        CHECK(json_is_true(json_object_get(v, "ok")));
        json_decref(v);
        seglog_close(s);
    }
}

static const test_case tests[] = {
    TEST_ENTRY(concurrent_appends_roll_cleanly),
    TEST_ENTRY(failed_bulk_write_changes_nothing),
    TEST_ENTRY(equality_counters_follow_appends_and_deletes),
    TEST_ENTRY(frames_match_storh_bytes),
    TEST_ENTRY(put_get_delete_and_layout),
    TEST_ENTRY(rolls_segments_and_streams_in_log_order),
    {"torn_tail_is_cut_and_the_last_whole_record_kept",
     torn_tail_is_cut_and_the_last_whole_record_kept},
    {"unterminated_valid_line_is_not_glued_to_the_next",
     unterminated_valid_line_is_not_glued_to_the_next},
    TEST_ENTRY(bad_middle_line_loses_nothing_after_it),
    TEST_ENTRY(repair_whose_rewrite_sync_fails_loses_nothing),
    TEST_ENTRY(a_missing_active_segment_is_made_durably),
    TEST_ENTRY(retention_and_time_ranges),
    TEST_ENTRY(bulk_batches_and_partitions),
};

TMPDIR_TEST_MAIN(root, tests)
