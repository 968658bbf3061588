#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "../tmpdir.h"
#include "docgroup.h"
#include "estats.h"
#include "frame.h"
#include "fsx.h"
#include "seglog.h"
#include "sjson.h"

static char root[PATH_MAX];

#include "../support/js.h"

/* Live records, or -1 when counting failed. */
static long long live_count(seglog *s)
{
    size_t n;
    return seglog_count(s, &n, NULL) == 0 ? (long long)n : -1;
}

static seglog *open_log(const char *name, size_t seg_bytes)
{
    seglog_opts o;
    seglog_opts_default(&o);
    if (seg_bytes)
        o.max_segment_bytes = seg_bytes;
    seglog *s = NULL;
    storh_err err;
    if (seglog_open(root, name, &o, true, &s, &err))
        fprintf(stderr, "open %s: %s\n", name, err.msg);
    return s;
}

static char *slurp(const char *fmt, const char *a)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, fmt, root, a);
    buf b = BUF_INIT;
    if (fsx_read_all(p, &b, NULL) != 0)
        return NULL;
    return b.data ? b.data : strdup("");
}

static int count_live(seglog *s, const recquery *q, char ids[][37], int max)
{
    seglog_iter *it;
    if (seglog_iter_open(s, q, &it, NULL))
        return -1;
    const char *id;
    json_t *d;
    int n = 0, r;
    while ((r = seglog_iter_next(it, &id, &d, NULL)) == 1) {
        if (ids && n < max)
            memcpy(ids[n], id, 37);
        n++;
        json_decref(d);
    }
    seglog_iter_close(it);
    return r < 0 ? -1 : n;
}

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
    seglog *s = open_log("events", 0);
    char *m = slurp("%s/%s/manifest.jsonc", "events");
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
    char *seg = slurp("%s/%s/segments/seg-000001.ndjson", "events");
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
    s = open_log("events", 0); /* replayed from disk */
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
    seglog *s = open_log("roll", 256);
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
    CHECK_INT(count_live(s, NULL, out, 41), 40);
    CHECK_STR(out[0], ids[1]);
    CHECK_STR(out[39], ids[0]);
    json_t *st;
    seglog_stats(s, &st, NULL);
    long long segs = json_integer_value(json_object_get(st, "segments"));
    CHECK(segs > 5);
    json_decref(st);
    char *m = slurp("%s/%s/manifest.jsonc", "roll");
    CHECK(strstr(m, "\"index\":\"seg-000001.idx.jsonc\"") != NULL);
    free(m);
    char *idx = slurp("%s/%s/segments/seg-000001.idx.jsonc", "roll");
    CHECK(idx && strncmp(idx, "{\"entries\":[{\"id\":\"", 19) == 0);
    free(idx);
    /* after + limit use the sparse index and stop early */
    recquery q;
    recquery_init(&q);
    recquery_after(&q, ids[20], 36, NULL);
    recquery_limit(&q, 5, NULL);
    CHECK_INT(count_live(s, &q, out, 5), 5);
    CHECK_STR(out[0], ids[21]);
    recquery_clear(&q);
    seglog_close(s);
    s = open_log("roll", 256);
    CHECK_INT(count_live(s, NULL, NULL, 0), 40);
    seglog_close(s);
}

static char active_path[PATH_MAX];

static off_t fsize(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

TEST(torn_tail_is_cut_and_the_last_whole_record_kept)
{
    seglog *s = open_log("torn", 0);
    char ids[3][37];
    for (int i = 0; i < 3; i++) {
        json_t *d = json_pack("{si}", "i", i);
        seglog_put(s, NULL, d, ids[i], NULL);
        json_decref(d);
    }
    seglog_close(s);
    snprintf(active_path, sizeof active_path, "%s/torn/segments/seg-000001.ndjson", root);
    off_t full = fsize(active_path);
    CHECK(truncate(active_path, full - 10) == 0); /* mid-way through the third line */
    s = open_log("torn", 0);
    json_t *d;
    CHECK_INT(seglog_get(s, ids[1], &d, NULL), 0);
    json_decref(d);
    CHECK_INT(seglog_get(s, ids[2], &d, NULL), STORH_ENOTFOUND);
    CHECK_INT(count_live(s, NULL, NULL, 0), 2);
    CHECK(fsize(active_path) < full - 10); /* the torn bytes are gone */
    /* and appends continue cleanly */
    d = json_pack("{si}", "i", 9);
    char id[37];
    CHECK_INT(seglog_put(s, NULL, d, id, NULL), 0);
    json_decref(d);
    seglog_close(s);
    s = open_log("torn", 0);
    CHECK_INT(count_live(s, NULL, NULL, 0), 3);
    seglog_close(s);
}

TEST(unterminated_valid_line_is_not_glued_to_the_next)
{
    seglog *s = open_log("nolf", 0);
    char a[37], b[37];
    json_t *d = json_pack("{si}", "i", 1);
    seglog_put(s, NULL, d, a, NULL);
    json_decref(d);
    seglog_close(s);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/nolf/segments/seg-000001.ndjson", root);
    CHECK(truncate(p, fsize(p) - 1) == 0); /* drop only the LF */
    s = open_log("nolf", 0);
    d = json_pack("{si}", "i", 2);
    CHECK_INT(seglog_put(s, NULL, d, b, NULL), 0);
    json_decref(d);
    seglog_close(s);
    s = open_log("nolf", 0);
    json_t *g;
    CHECK_INT(seglog_get(s, a, &g, NULL), 0);
    json_decref(g);
    CHECK_INT(seglog_get(s, b, &g, NULL), 0);
    json_decref(g);
    seglog_close(s);
}

TEST(bad_middle_line_loses_nothing_after_it)
{
    seglog *s = open_log("mid", 0);
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
    s = open_log("mid", 0);
    CHECK_INT(fsize(p), (off_t)b.len); /* storh would have cut the file here */
    CHECK_INT(count_live(s, NULL, NULL, 0), 3);
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
    CHECK_INT(count_live(s, NULL, NULL, 0), 3);
    d = json_pack("{si}", "i", 5);
    char id[37];
    CHECK_INT(seglog_put(s, NULL, d, id, NULL), 0); /* the reopened active fd works */
    json_decref(d);
    seglog_close(s);
    s = open_log("mid", 0);
    CHECK_INT(count_live(s, NULL, NULL, 0), 4);
    seglog_close(s);
    buf_free(&b);
}

static void fill(seglog *s, int n, char ids[][37])
{
    for (int i = 0; i < n; i++) {
        json_t *d = json_pack("{siss}", "i", i, "pad", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        seglog_put(s, NULL, d, ids[i], NULL);
        json_decref(d);
    }
}

TEST(compaction_keeps_live_records)
{
    seglog *s = open_log("cmp", 512);
    char ids[30][37];
    fill(s, 30, ids);
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
    CHECK_INT(count_live(s, NULL, NULL, 0), 20);
    json_t *g;
    CHECK_INT(seglog_get(s, ids[15], &g, NULL), 0);
    CHECK_STR(json_string_value(json_object_get(g, "updated")), "yes");
    json_decref(g);
    char *m = slurp("%s/%s/manifest.jsonc", "cmp");
    CHECK(strstr(m, "\"file\":\"compact-") != NULL);
    CHECK(strstr(m, "\"compacted\":true}") != NULL);
    CHECK(strstr(m, "seg-000001") == NULL);
    free(m);
    char old[PATH_MAX];
    snprintf(old, sizeof old, "%s/cmp/segments/seg-000001.ndjson", root);
    CHECK(fsize(old) > 0); /* left for concurrent readers, as storh does */
    json_t *st;
    seglog_stats(s, &st, NULL);
    CHECK_INT(json_integer_value(json_object_get(st, "deleted")), 0);
    json_decref(st);
    seglog_close(s);
    s = open_log("cmp", 512);
    CHECK_INT(count_live(s, NULL, NULL, 0), 20);
    seglog_close(s);
}

/* Compacts a log of many small sealed segments under the given sync mode;
 * returns the outputs and the fsync / syncfs counts the compaction made. */
static long compact_counting(const char *name, docgroup_sync mode, uint64_t *files, uint64_t *fs)
{
    docgroup_set_default_mode(mode);
    seglog *s = open_log(name, 512);
    char ids[40][37];
    fill(s, 40, ids);
    uint64_t f0 = estats_get(ESTAT_FSYNC_FILE), s0 = estats_get(ESTAT_FSYNC_FS);
    json_t *rep = NULL;
    CHECK_INT(seglog_compact(s, &rep, NULL), 0);
    *files = estats_get(ESTAT_FSYNC_FILE) - f0;
    *fs = estats_get(ESTAT_FSYNC_FS) - s0;
    long outs = (long)json_integer_value(json_object_get(rep, "segments"));
    CHECK_INT(json_integer_value(json_object_get(rep, "records")), 40);
    json_decref(rep);
    seglog_close(s);
    s = open_log(name, 512);
    CHECK_INT(count_live(s, NULL, NULL, 0), 40);
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
    seglog *s = open_log("crash", 512);
    char ids[30][37];
    fill(s, 30, ids);
    bool ex;
    for (int i = 0; i < 5; i++)
        seglog_delete(s, ids[i], &ex, NULL);
    seglog_close(s);
    char *before = slurp("%s/%s/manifest.jsonc", "crash");
    pid_t pid = fork();
    if (pid == 0) {
        setenv("STORH_FAULT", "seglog.compact.before_manifest", 1);
        seglog *c = open_log("crash", 512);
        seglog_compact(c, NULL, NULL);
        _exit(0); /* not reached: the fault point ends the process */
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 86);
    CHECK(count_compact_files("crash") > 0); /* outputs were written, never committed */
    s = open_log("crash", 512);
    CHECK_INT(count_compact_files("crash"), 0); /* removed on open */
    CHECK_INT(count_live(s, NULL, NULL, 0), 25);
    char *after = slurp("%s/%s/manifest.jsonc", "crash");
    CHECK(strstr(after, "compact-") == NULL);
    free(before);
    free(after);
    seglog_close(s);
}

TEST(retention_and_time_ranges)
{
    seglog *s = open_log("ret", 0);
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
    CHECK_INT(count_live(s, &q, NULL, 0), 4);
    recquery_clear(&q);
    size_t deleted;
    CHECK_INT(seglog_retain(s, days[1] + 1, &deleted, NULL), 0);
    CHECK_INT(deleted, 6); /* day 0, and the first two ms of day 1 (inclusive) */
    CHECK_INT(count_live(s, NULL, NULL, 0), 6);
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
    seglog *s = open_log("bulk", 300);
    seglog_batch *b;
    char id[37];
    CHECK_INT(seglog_batch_begin(s, &b, NULL), 0);
    for (int i = 0; i < 50; i++) {
        json_t *d = json_pack("{si}", "i", i);
        CHECK_INT(seglog_batch_element(b, d, id, NULL), 0);
        json_decref(d);
    }
    seglog_batch_abort(b);
    CHECK_INT(count_live(s, NULL, NULL, 0), 0);
    CHECK_INT(seglog_batch_begin(s, &b, NULL), 0);
    for (int i = 0; i < 50; i++) {
        json_t *d = json_pack("{s{si}}", "data", "i", i);
        CHECK_INT(seglog_batch_element(b, d, id, NULL), 0);
        json_decref(d);
    }
    size_t n;
    CHECK_INT(seglog_batch_commit(b, &n, NULL), 0);
    CHECK_INT(n, 50);
    CHECK_INT(count_live(s, NULL, NULL, 0), 50);
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
    CHECK(fsize(dir) > 0);
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
    seglog *s = open_log("counted", 0);
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
    seglog *s = open_log("bulkprobe", 64 << 20); /* the batch's size, measured */
    CHECK_INT(commit_batch(s, 0, 13000, NULL), 0);
    seglog_close(s);
    off_t batch = file_size(seg, "bulkprobe");
    CHECK(batch > 1024 * 1024);
    s = open_log("bulkfail", 64 << 20);
    CHECK_INT(commit_batch(s, 0, 300, NULL), 0);
    seglog_close(s);
    off_t before = file_size(seg, "bulkfail");
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        seglog *c = open_log("bulkfail", 64 << 20);
        rlim_t lim = (rlim_t)(batch / 2);
        struct rlimit rl = {lim, lim};
        setrlimit(RLIMIT_FSIZE, &rl);
        size_t n = 0; /* the spool may fail before the commit: n is then untouched */
        int ok = c && commit_batch(c, 1000, 13000, &n) != 0 && n == 0;
        ok = ok && live_count(c) == 300; /* nothing applied */
        _exit(ok ? 0 : 1);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_INT(file_size(seg, "bulkfail"), before);
    CHECK_INT(file_size("%s/%s/segments/seg-000003.ndjson", "bulkfail"), -1);
    s = open_log("bulkfail", 64 << 20);
    CHECK_INT(live_count(s), 300);
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
    seglog *s = open_log("rollrace", 256);
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
    s = open_log("rollrace", 256);
    CHECK(s != NULL);
    if (s) {
        CHECK_INT(live_count(s), 900);
        json_t *v = NULL;
        CHECK_INT(seglog_verify(s, &v, NULL), 0);
        CHECK(json_is_true(json_object_get(v, "ok")));
        json_decref(v);
        seglog_close(s);
    }
}

/* A reader catches up with lines another process appends without reopening,
 * and never applies a line that is still being written (here: its first
 * half, then the rest). */
TEST(reads_catch_up_and_skip_a_line_being_written)
{
    seglog *s = open_log("tail", 0);
    char ids[3][37];
    fill(s, 3, ids);
    CHECK_INT(live_count(s), 3);
    char id[UUID7_LEN + 1], env[128];
    uuid7_generate(id, -1, NULL);
    snprintf(env, sizeof env, "{\"op\":\"put\",\"id\":\"%s\",\"data\":{\"late\":true}}", id);
    buf line = BUF_INIT;
    frame_encode(&line, env, strlen(env));
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tail/segments/seg-000001.ndjson", root);
    int fd = open(path, O_WRONLY | O_APPEND);
    size_t half = line.len / 2;
    CHECK(write(fd, line.data, half) == (ssize_t)half);
    CHECK_INT(live_count(s), 3); /* half a line: not a record yet, not an error */
    json_t *d = NULL;
    CHECK_INT(seglog_get(s, id, &d, NULL), STORH_ENOTFOUND);
    CHECK(write(fd, line.data + half, line.len - half) == (ssize_t)(line.len - half));
    close(fd);
    CHECK_INT(live_count(s), 4);
    CHECK_INT(seglog_get(s, id, &d, NULL), 0);
    CHECK(json_is_true(json_object_get(d, "late")));
    json_decref(d);
    json_t *v = NULL;
    CHECK_INT(seglog_verify(s, &v, NULL), 0);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);
    char more[1][37];
    fill(s, 1, more); /* its own append lands after the other's line */
    CHECK_INT(live_count(s), 5);
    seglog_close(s);
    s = open_log("tail", 0);
    CHECK_INT(live_count(s), 5);
    seglog_close(s);
    buf_free(&line);
}

/* Lines storh (PHP) wrote: a manifest and one segment, byte for byte */
static const char php_manifest[] =
    "{\"nextSegment\":2,\"sealed\":[],\"active\":{\"file\":\"seg-000001.ndjson\",\"max\":null,"
    "\"min\":null,\"records\":0,\"ordered\":true}}";
static const char php_segment[] =
    "126\t741dce8f\t{\"op\":\"put\",\"id\":\"018bcfe5-6800-7000-8000-000000000001\",\"data\":{"
    "\"kind\":\"post\",\"n\":1,\"r\":1.5,\"big\":1.0e+20,\"s\":\"a/\\\"b\\\\c\\né\"}}\n"
    "123\tae1c85ac\t{\"op\":\"put\",\"id\":\"018bcfe5-6801-7000-8000-000000000002\",\"data\":{"
    "\"nested\":{\"x\":[1,2,{\"y\":null}],\"e\":[]},\"t\":true,\"f\":false}}\n"
    "73\t6ff40df0\t{\"op\":\"put\",\"id\":\"018bcfe5-6802-7000-8000-000000000003\",\"data\":[\"a\","
    "\"b\"]}\n"
    "66\t531ff24f\t{\"op\":\"put\",\"id\":\"018bcfe5-6803-7000-8000-000000000004\",\"data\":[]}\n"
    "95\t7af50238\t{\"op\":\"put\",\"id\":\"018bcfe5-6804-7000-8000-000000000005\",\"data\":{\"5\":"
    "\"int key\",\"k\":\"v\",\"f\":0.1}}\n";

/* The data of every record of a log storh wrote, and of lines that are not
 * in the canonical spelling, is what decoding the whole envelope gives. */
TEST(storh_lines_decode_as_the_whole_envelope)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/php/segments", root);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    buf seg = BUF_INIT;
    buf_appends(&seg, php_segment);
    /* a key after data, and data twice (the last one counts) */
    const char *odd[] = {
        "{\"op\":\"put\",\"id\":\"018bcfe5-6805-7000-8000-000000000006\",\"data\":{\"a\":1},"
        "\"x\":2}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6806-7000-8000-000000000007\",\"data\":{\"a\":1},"
        "\"data\":{\"b\":2}}",
    };
    for (size_t i = 0; i < 2; i++)
        frame_encode(&seg, odd[i], strlen(odd[i]));
    snprintf(p, sizeof p, "%s/php/segments/seg-000001.ndjson", root);
    CHECK_INT(fsx_write_file(p, seg.data, seg.len, false, NULL), 0);
    snprintf(p, sizeof p, "%s/php/manifest.jsonc", root);
    CHECK_INT(fsx_write_file(p, php_manifest, strlen(php_manifest), false, NULL), 0);
    seglog *s = open_log("php", 0);
    CHECK(s != NULL);
    seglog_iter *it;
    CHECK_INT(seglog_iter_open(s, NULL, &it, NULL), 0);
    const char *id;
    json_t *d;
    int n = 0;
    const char *line = seg.data;
    while (seglog_iter_next(it, &id, &d, NULL) == 1) {
        const char *j = strchr(strchr(line, '\t') + 1, '\t') + 1, *nl = strchr(j, '\n');
        json_t *env = sjson_decode(j, (size_t)(nl - j), NULL);
        json_t *want = seglog_envelope_data(env);
        CHECK_STR(id, json_string_value(json_object_get(env, "id")));
        buf a = BUF_INIT, b = BUF_INIT;
        sjson_encode(&a, d, 0, NULL);
        sjson_encode(&b, want, 0, NULL);
        CHECK_STR(a.data, b.data);
        CHECK(json_equal(d, want));
        json_t *g = NULL;
        CHECK_INT(seglog_get(s, id, &g, NULL), 0);
        CHECK(json_equal(g, want));
        json_decref(g);
        buf_free(&a);
        buf_free(&b);
        json_decref(want);
        json_decref(env);
        json_decref(d);
        line = nl + 1;
        n++;
    }
    seglog_iter_close(it);
    CHECK_INT(n, 7);
    seglog_close(s);
    buf_free(&seg);
}

/* A segment several read chunks long, with a record longer than a chunk:
 * reads in chunks see every record once, in order, from any cursor. */
TEST(reads_cross_chunk_boundaries)
{
    seglog *s = open_log("chunks", 8 * 1024 * 1024);
    CHECK(s != NULL);
    enum { N = 3000, BIG = 1500 };
    static char ids[N][37];
    char *pad = malloc(400 * 1024 + 1);
    memset(pad, 'x', 400 * 1024);
    pad[400 * 1024] = '\0';
    seglog_batch *b;
    CHECK_INT(seglog_batch_begin(s, &b, NULL), 0);
    for (int i = 0; i < N; i++) {
        json_t *d = json_pack("{siss}", "i", i, "p", i == BIG ? pad : "0123456789abcdef");
        json_t *row = json_pack("{so}", "data", d);
        CHECK_INT(seglog_batch_element(b, row, ids[i], NULL), 0);
        json_decref(row);
    }
    CHECK_INT(seglog_batch_commit(b, NULL, NULL), 0);
    free(pad);
    static char got[N][37];
    CHECK_INT(count_live(s, NULL, got, N), N);
    int inorder = 0;
    for (int i = 0; i < N; i++)
        inorder += !strcmp(got[i], ids[i]);
    CHECK_INT(inorder, N);
    int froms[] = {0, 700, BIG - 1, BIG, 2990};
    for (size_t k = 0; k < sizeof froms / sizeof *froms; k++) {
        recquery q;
        recquery_init(&q);
        recquery_after(&q, ids[froms[k]], 36, NULL);
        recquery_limit(&q, 5, NULL);
        seglog_iter *it;
        CHECK_INT(seglog_iter_open(s, &q, &it, NULL), 0);
        const char *id;
        json_t *d;
        int n = 0;
        while (seglog_iter_next(it, &id, &d, NULL) == 1) {
            CHECK_STR(id, ids[froms[k] + 1 + n]);
            CHECK_INT(json_integer_value(json_object_get(d, "i")), froms[k] + 1 + n);
            json_decref(d);
            n++;
        }
        seglog_iter_close(it);
        CHECK_INT(n, froms[k] + 6 <= N ? 5 : N - froms[k] - 1);
        recquery_clear(&q);
    }
    seglog_close(s);
}

/* Reads s with q through both iterators side by side: the same records in
 * the same order, and a record handed out as bytes is exactly what
 * encoding the decoded read's data writes (so the HTTP row built from the
 * bytes is the row built from the tree). Counts what came raw and what as
 * a tree; returns the number of records, -1 on a mismatch. */
static int raw_matches_tree(seglog *s, const recquery *q, int *nraw, int *ntree)
{
    seglog_iter *a, *b;
    if (seglog_iter_open(s, q, &a, NULL) || seglog_iter_open(s, q, &b, NULL))
        return -1;
    int n = 0, bad = 0;
    for (;;) {
        const char *ida, *idb, *raw;
        size_t rawlen;
        json_t *da = NULL, *db = NULL;
        int ra = seglog_iter_next(a, &ida, &da, NULL);
        int rb = seglog_iter_next_raw(b, &idb, &raw, &rawlen, &db, NULL);
        if (ra != rb) {
            bad++;
            break;
        }
        if (ra != 1)
            break;
        buf want = BUF_INIT, got = BUF_INIT;
        json_t *row = json_pack("{sssO}", "id", ida, "data", da);
        sjson_encode(&want, row, 0, NULL);
        json_decref(row);
        if (raw) {
            (*nraw)++;
            bad += db != NULL;
            buf_appends(&got, "{\"id\":\"");
            buf_appends(&got, idb);
            buf_appends(&got, "\",\"data\":");
            buf_append(&got, raw, rawlen);
            buf_appendc(&got, '}');
        } else {
            (*ntree)++;
            bad += !db || !json_equal(da, db);
            row = json_pack("{sssO}", "id", idb, "data", db);
            sjson_encode(&got, row, 0, NULL);
            json_decref(row);
        }
        if (strcmp(ida, idb) || got.len != want.len || memcmp(got.data, want.data, got.len)) {
            fprintf(stderr, "raw read differs:\n  %.*s\n  %.*s\n", (int)want.len, want.data,
                    (int)got.len, got.data);
            bad++;
        }
        buf_free(&want);
        buf_free(&got);
        json_decref(da);
        json_decref(db);
        n++;
    }
    seglog_iter_close(a);
    seglog_iter_close(b);
    return bad ? -1 : n;
}

/* Every form a record takes in a segment reads the same through the raw
 * iterator as through the decoded one: storhd's canonical lines (handed
 * out as bytes), data the encoder would not write back as it is (floats,
 * escapes it does not use, integer keys, {} and lists, U+2028, integers
 * beyond int64, many keys), deletes and re-puts, and storh's and odd
 * writers' lines; with a cursor, a time range, a limit and a field
 * condition. */
/* Sealed segments are read up to the size the state has for them, the
 * rest of a segment in one read when it is near: every record once, in
 * order, from any cursor, with segment sizes on both sides of the first
 * read's 16 KiB and bytes no line of the state covers (another writer's
 * torn tail) after a sealed segment's last line. */
TEST(sealed_segments_are_read_to_their_size)
{
    seglog *s = open_log("sealed", 17 * 1024);
    CHECK(s != NULL);
    enum { N = 900 };
    static char ids[N][37];
    for (int i = 0; i < N; i++) {
        json_t *d = json_pack("{sisi}", "i", i, "pad", i % 7 ? 12345 : 1234567);
        CHECK_INT(seglog_put(s, NULL, d, ids[i], NULL), 0);
        json_decref(d);
    }
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/sealed/segments/seg-000001.ndjson", root);
    int fd = open(p, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_INT(write(fd, "99\tdeadbeef\t{\"op\":\"put\",\"id\":\"", 31), 31);
        close(fd);
    }
    static char got[N][37];
    CHECK_INT(count_live(s, NULL, got, N), N);
    int inorder = 0;
    for (int i = 0; i < N; i++)
        inorder += !strcmp(got[i], ids[i]);
    CHECK_INT(inorder, N);
    int froms[] = {0, 150, 151, 299, 450, N - 2};
    for (size_t k = 0; k < sizeof froms / sizeof *froms; k++) {
        recquery q;
        recquery_init(&q);
        recquery_after(&q, ids[froms[k]], 36, NULL);
        CHECK_INT(count_live(s, &q, got, N), N - 1 - froms[k]);
        CHECK_STR(got[0], ids[froms[k] + 1]);
        recquery_clear(&q);
    }
    seglog_close(s);
}

TEST(raw_reads_match_the_decoded_path)
{
    seglog *s = open_log("raw", 4096); /* several segments */
    CHECK(s != NULL);
    buf many = BUF_INIT;
    buf_appendc(&many, '{');
    for (int i = 0; i < 70; i++)
        buf_printf(&many, "%s\"k%d\":%d", i ? "," : "", i, i);
    buf_appendc(&many, '}');
    const char *forms[] = {
        "{\"kind\":\"post\",\"status\":\"published\",\"n\":1}",
        "{\"a\":{\"b\":[1,2,{\"c\":null}],\"e\":[]},\"t\":true,\"f\":false,\"neg\":-7}",
        "{\"s\":\"tab\\tq\\\"b\\\\s/ é 😀\",\"nl\":\"a\\nb\\r\\f\\b\"}",
        "{\"r\":1.5,\"status\":\"published\"}",
        "{\"u\":\"\\u00e9\\u2028\"}",
        "{\"0\":\"int key\",\"k\":\"v\"}",
        "{\"nested\":{\"0\":\"a\",\"1\":\"b\"},\"status\":\"draft\"}",
        "{}",
        "{\"big\":12345678901234567890,\"max\":123456789012345678}",
        "{\"empty\":{},\"z\":0}",
        "{\"ctl\":\"\\u0001\"}",
        many.data,
    };
    enum { NF = sizeof forms / sizeof *forms, ROUNDS = 6 };
    char ids[NF * ROUNDS][UUID7_LEN + 1];
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NF; i++) {
            json_t *d = sjson_decode(forms[i], strlen(forms[i]), NULL);
            CHECK(d != NULL);
            CHECK_INT(seglog_put(s, NULL, d, ids[r * NF + i], NULL), 0);
            json_decref(d);
        }
    buf_free(&many);
    bool ex;
    CHECK_INT(seglog_delete(s, ids[3], &ex, NULL), 0);
    CHECK_INT(seglog_delete(s, ids[NF + 1], &ex, NULL), 0);
    json_t *again = json_pack("{ss}", "again", "yes");
    CHECK_INT(seglog_put(s, ids[2], again, ids[2], NULL), 0); /* a re-put */
    json_decref(again);
    int nraw = 0, ntree = 0;
    CHECK_INT(raw_matches_tree(s, NULL, &nraw, &ntree), NF * ROUNDS - 2);
    CHECK(nraw >= 3 * ROUNDS);  /* the canonical forms came as bytes */
    CHECK(ntree >= 6 * ROUNDS); /* the others as trees */
    recquery q;
    recquery_init(&q);
    recquery_after(&q, ids[NF + 2], UUID7_LEN, NULL);
    recquery_limit(&q, 25, NULL);
    CHECK_INT(raw_matches_tree(s, &q, &nraw, &ntree), 25);
    json_t *v = json_string("published");
    recquery_where_equal(&q, "status", v, NULL);
    json_decref(v);
    CHECK_INT(raw_matches_tree(s, &q, &nraw, &ntree), 2 * (ROUNDS - 1) - 1);
    recquery_clear(&q);
    recquery_init(&q);
    int64_t lo = 0;
    uuid7_timestamp(ids[5], UUID7_LEN, &lo, NULL);
    recquery_time_range(&q, true, lo, true, lo + 100000, NULL);
    CHECK(raw_matches_tree(s, &q, &nraw, &ntree) > 0);
    recquery_clear(&q);
    CHECK_INT(seglog_compact(s, &v, NULL), 0); /* compacted lines read the same */
    json_decref(v);
    CHECK_INT(raw_matches_tree(s, NULL, &nraw, &ntree), NF * ROUNDS - 2);
    seglog_close(s);

    /* storh's lines and odd writers' (a key after data, data twice) */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/phpraw/segments", root);
    CHECK_INT(fsx_mkdirs(p, false, NULL), 0);
    buf seg = BUF_INIT;
    buf_appends(&seg, php_segment);
    const char *odd[] = {
        "{\"op\":\"put\",\"id\":\"018bcfe5-6805-7000-8000-000000000006\",\"data\":{\"a\":1},"
        "\"x\":2}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6806-7000-8000-000000000007\",\"data\":{\"a\":1},"
        "\"data\":{\"b\":2}}",
        "{\"id\":\"018bcfe5-6807-7000-8000-000000000008\",\"op\":\"put\",\"data\":{\"a\":1}}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6808-7000-8000-000000000009\",\"data\":{\"a\":1} }",
        "{\"op\":\"put\",\"id\":\"018bcfe5-6809-7000-8000-00000000000a\",\"data\":{\"a\":\"x\"}}",
        "{\"op\":\"delete\",\"id\":\"018bcfe5-6809-7000-8000-00000000000a\"}",
        "{\"op\":\"put\",\"id\":\"018bcfe5-680a-7000-8000-00000000000b\",\"data\":{\"a\":\"\\/\"}}",
    };
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++)
        frame_encode(&seg, odd[i], strlen(odd[i]));
    snprintf(p, sizeof p, "%s/phpraw/segments/seg-000001.ndjson", root);
    CHECK_INT(fsx_write_file(p, seg.data, seg.len, false, NULL), 0);
    snprintf(p, sizeof p, "%s/phpraw/manifest.jsonc", root);
    CHECK_INT(fsx_write_file(p, php_manifest, strlen(php_manifest), false, NULL), 0);
    buf_free(&seg);
    s = open_log("phpraw", 0);
    CHECK(s != NULL);
    nraw = ntree = 0;
    CHECK_INT(raw_matches_tree(s, NULL, &nraw, &ntree), 10);
    CHECK_INT(nraw, 1); /* 018...0002: storh's spelling of a canonical put */
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
    seglog *s = open_log("cmpstate", 512);
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
        s = open_log("cmpstate", 512);
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
    char *m = slurp("%s/%s/manifest.jsonc", name);
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
    seglog *s = open_log(name, seg_bytes);
    char(*ids)[37] = calloc((size_t)n + 5, 37);
    fill(s, n, ids);
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
        CHECK(live_count(s) >= 0); /* another thread's read refreshes */
    } else {
        seglog *o = open_log(name, seg_bytes);
        CHECK(o != NULL);
        CHECK_INT(seglog_compact(o, NULL, NULL), 0);
        seglog_close(o);
        if (how == ACROSS_OTHER_GONE)
            remove_unlisted(name);
        else
            CHECK(live_count(s) >= 0); /* another thread's read refreshes */
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

/* The last live line the reader passed is put again before the compaction:
 * its new place is not where the reader was, so the read either goes on
 * from the right place or fails; it never skips silently. */
TEST(read_across_compaction_after_a_reput_of_where_it_was)
{
    seglog *s = open_log("acr8", 512);
    char ids[60][37];
    fill(s, 60, ids);
    seglog_iter *it;
    CHECK_INT(seglog_iter_open(s, NULL, &it, NULL), 0);
    const char *id;
    json_t *d;
    int r, n = 0;
    while (n < 10 && (r = seglog_iter_next(it, &id, &d, NULL)) == 1) {
        n++;
        json_decref(d);
    }
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
    seglog *s = open_log("acr9", 512);
    char ids[60][37];
    fill(s, 60, ids);
    seglog_iter *it;
    CHECK_INT(seglog_iter_open(s, NULL, &it, NULL), 0);
    const char *id;
    json_t *d;
    int r, n = 0;
    while (n < 10 && (r = seglog_iter_next(it, &id, &d, NULL)) == 1) {
        n++;
        json_decref(d);
    }
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
    seglog *s = open_log("acr10", 512);
    char ids[200][37];
    fill(s, 200, ids);
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
    TEST_ENTRY(sealed_segments_are_read_to_their_size),
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
    TEST_ENTRY(compaction_keeps_live_records),
    TEST_ENTRY(compaction_crash_before_manifest_swap),
    TEST_ENTRY(compaction_syncs_outputs_once),
    TEST_ENTRY(retention_and_time_ranges),
    TEST_ENTRY(bulk_batches_and_partitions),
    TEST_ENTRY(reads_catch_up_and_skip_a_line_being_written),
    TEST_ENTRY(storh_lines_decode_as_the_whole_envelope),
    TEST_ENTRY(reads_cross_chunk_boundaries),
    TEST_ENTRY(raw_reads_match_the_decoded_path),
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
