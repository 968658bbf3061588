/* suite_log (bench): the SegmentedLog figures (appends, bulk, cursor and
 * time-range reads, counts, compaction, torn-tail reopen). */
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suite.h"
#include "buf.h"
#include "fsx.h"
#include "logquery.h"
#include "logset.h"
#include "query.h"
#include "recquery.h"
#include "seglog.h"
#include "sjson.h"

/* ---------- SegmentedLog ---------- */

enum { LOG_SEGMENT_BYTES = 16 * 1024 }; /* as the storh bench: rolls often */

static seglog *open_log(const harness_opts *o, const char *name)
{
    seglog_opts so;
    seglog_opts_default(&so);
    so.max_segment_bytes = LOG_SEGMENT_BYTES;
    seglog *s;
    storh_err err;
    if (seglog_open(o->work, name, &so, true, &s, &err))
        harness_die("log open", &err);
    return s;
}

/* The read the HTTP stream does: a canonical put's data as its bytes,
 * other records decoded. */
static long drain_raw(seglog *s, const recquery *q)
{
    seglog_iter *it;
    seglog_iter_open(s, q, &it, NULL);
    const char *id, *raw;
    size_t rawlen;
    json_t *d;
    long n = 0;
    while (seglog_iter_next_raw(it, &id, &raw, &rawlen, &d, NULL) == 1) {
        json_decref(d);
        n++;
    }
    seglog_iter_close(it);
    return n;
}

/* The read that builds every record's tree (the _query path). */
static long drain(seglog *s, const recquery *q)
{
    seglog_iter *it;
    seglog_iter_open(s, q, &it, NULL);
    const char *id;
    json_t *d;
    long n = 0;
    while (seglog_iter_next(it, &id, &d, NULL) == 1) {
        json_decref(d);
        n++;
    }
    seglog_iter_close(it);
    return n;
}

enum { PASSES = 5, ITERS = 20, COUNT_PASSES = 21, COUNT_ITERS = 200 };

/* The median of PASSES passes of ITERS reads (seconds per read): one
 * preemption does not decide a sub-millisecond figure. */
static double read_median(seglog *s, const recquery *q, long (*read)(seglog *, const recquery *))
{
    double pass[PASSES];
    for (int p = 0; p < PASSES; p++) {
        double t = harness_now();
        for (int i = 0; i < ITERS; i++)
            read(s, q);
        pass[p] = (harness_now() - t) / ITERS;
    }
    return harness_median(pass, PASSES);
}

/* What a count must do to stay fresh against other processes: a stat of
 * the manifest's path and an fstat of the open active segment; one pass of
 * COUNT_ITERS pairs (seconds per pair). */
static double stat_pair_pass(const char *man, int fd)
{
    struct stat st;
    double t = harness_now();
    for (int i = 0; i < COUNT_ITERS; i++)
        if (stat(man, &st) || fstat(fd, &st))
            harness_die("limit stat", NULL);
    return (harness_now() - t) / COUNT_ITERS;
}

/* The open active segment of the log in dir (its fd). */
static int open_active(const char *dir)
{
    char man[PATH_MAX], act[PATH_MAX];
    fsx_pathf(man, NULL, "%s/manifest.jsonc", dir);
    buf m = BUF_INIT;
    fsx_read_all(man, &m, NULL);
    json_t *j = json_loadb(m.data ? m.data : "", m.len, 0, NULL);
    fsx_pathf(act, NULL, "%s/segments/%s", dir,
              json_string_value(json_object_get(json_object_get(j, "active"), "file")));
    json_decref(j);
    buf_free(&m);
    int fd = open(act, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        harness_die("limit: open the active segment", NULL);
    return fd;
}

/* Files of a segments directory whose names start with prefix, read (the
 * outputs of a compaction and their sparse indexes: "compact-"; its
 * inputs: "seg-"). */
typedef struct outputs {
    buf *b;
    size_t n;
} outputs;

static void read_outputs(const char *segdir, const char *prefix, outputs *out)
{
    DIR *d = opendir(segdir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        /* a compaction's outputs with their sparse indexes; the inputs
         * alone ("seg-": the indexes are the roll's, written anyway) */
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) ||
            (strcmp(prefix, "compact-") && (l < 7 || strcmp(e->d_name + l - 7, ".ndjson"))))
            continue;
        char p[PATH_MAX];
        fsx_pathf(p, NULL, "%s/%s", segdir, e->d_name);
        buf *g = realloc(out->b, (out->n + 1) * sizeof *g);
        if (!g)
            harness_die("limit: out of memory", NULL);
        out->b = g;
        out->b[out->n] = (buf)BUF_INIT;
        fsx_read_all(p, &out->b[out->n++], NULL);
    }
    if (d)
        closedir(d);
}

/* What a compaction cannot avoid in the kernel, for the bytes it read and
 * wrote (seconds): every input segment read (open, fstat, read, close), the
 * roll of the active segment (its sparse index published, a new segment
 * created, the directory and the manifest synced), then every output
 * written without fsync, one syncfs, the directory fsync and the manifest
 * swap. */
static double compact_io_limit(const harness_opts *o, const char *segdir, const outputs *out,
                               size_t manifest_len)
{
    static int pass;
    char dir[PATH_MAX], seg[PATH_MAX], p[PATH_MAX];
    fsx_pathf(dir, NULL, "%s/limit-compact-%d", o->work, pass++);
    fsx_pathf(seg, NULL, "%s/segments", dir);
    if (fsx_mkdirs(seg, false, NULL))
        harness_die("limit: mkdir", NULL);
    char *man = malloc(manifest_len + 1);
    memset(man, ' ', manifest_len);
    storh_err err;
    double t = harness_now();
    DIR *d = opendir(segdir);
    struct dirent *e;
    buf in = BUF_INIT;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (strncmp(e->d_name, "seg-", 4) || l < 7 || strcmp(e->d_name + l - 7, ".ndjson") != 0)
            continue;
        fsx_pathf(p, NULL, "%s/%s", segdir, e->d_name);
        buf_reset(&in);
        fsx_read_all(p, &in, NULL);
    }
    if (d)
        closedir(d);
    buf_free(&in);
    fsx_pathf(p, NULL, "%s/seg-000001.idx.jsonc", seg);
    int rc = fsx_publish(p, out->b[0].data, out->b[0].len < 512 ? out->b[0].len : 512, &err);
    fsx_pathf(p, NULL, "%s/seg-000002.ndjson", seg);
    int fd = rc ? -1 : open(p, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    fsx_pathf(p, NULL, "%s/manifest.jsonc", dir);
    if (fd < 0 || fsx_fsync_dir(seg, &err) || fsx_publish(p, man, manifest_len, &err))
        harness_die("limit: roll", &err);
    int sfd = open(seg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (size_t i = 0; i < out->n; i++) {
        fsx_pathf(p, NULL, "%s/out-%06zu", seg, i);
        if (fsx_write_file(p, out->b[i].data, out->b[i].len, false, &err))
            harness_die("limit: write", &err);
    }
    fsx_pathf(p, NULL, "%s/manifest.jsonc", dir);
    if (sfd < 0 || syncfs(sfd) || fsx_fsync_dir(seg, &err) ||
        fsx_publish(p, man, manifest_len, &err))
        harness_die("limit: sync", &err);
    t = harness_now() - t;
    close(sfd);
    close(fd);
    free(man);
    harness_clean(dir);
    return t;
}

/* The bytes a put appends for record i: its line, "<length>\t<crc>\t"
 * and {"op":"put","id":"<id>","data":<data>} and a newline; the limit
 * appends as many bytes. */
static size_t put_line_len(long i)
{
    json_t *d = harness_record(i);
    buf b = BUF_INIT;
    if (sjson_encode(&b, d, 0, NULL))
        harness_die("log limit line", NULL);
    size_t n = b.len + 18 + UUID7_LEN + 9 + 2;
    int w = snprintf(NULL, 0, "%zu", n);
    json_decref(d);
    buf_free(&b);
    return n + (size_t)w + 1 + 8 + 1;
}

/* Seconds for the puts of records at..end. */
static double put_round(seglog *s, char (*ids)[UUID7_LEN + 1], long at, long end)
{
    storh_err err;
    double t = harness_now();
    for (long i = at; i < end; i++) {
        json_t *d = harness_record(i);
        char id[UUID7_LEN + 1];
        if (seglog_put(s, ids[i], d, id, &err))
            harness_die("log put", &err);
        json_decref(d);
    }
    return harness_now() - t;
}

/* The limit's log: a plain file per segment in dir/segments, a manifest
 * in dir, and what a put's log holds (its manifest's size, read at each
 * roll, since the manifest grows by a sealed entry per roll). */
typedef struct limit_log {
    char dir[PATH_MAX], segs[PATH_MAX];
    const char *log_manifest;
    int fd, n;
    size_t size;
    char *mbytes; /* the manifest's stand-in bytes, mcap of them */
    size_t mcap;
} limit_log;

static void limit_segment(limit_log *l)
{
    char p[PATH_MAX];
    fsx_pathf(p, NULL, "%s/seg-%06d", l->segs, ++l->n);
    l->fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (l->fd < 0)
        harness_die("log limit open", NULL);
    l->size = 0;
}

/* What a roll of the put's log (16 KiB segments, as storh's bench) cannot
 * do without in the kernel, for the same bytes: the sealed segment's
 * sparse index written and fsynced (about 128 bytes: two entries), the
 * next segment created, one fsync of the segments dir for both names, then
 * the manifest (the put's manifest's size) replaced: temp file written,
 * fsynced, renamed, its dir fsynced. */
static void limit_roll(limit_log *l)
{
    static char idx[128];
    memset(idx, 'i', sizeof idx);
    char p[PATH_MAX], tmp[PATH_MAX];
    storh_err err;
    fsx_pathf(p, NULL, "%s/seg-%06d.idx", l->segs, l->n);
    if (fsx_write_file(p, idx, sizeof idx, true, &err))
        harness_die("log limit index", &err);
    close(l->fd);
    limit_segment(l);
    /* the whole manifest: it grows by an entry per roll (90 KiB after
     * 50,000 puts), and a put's roll writes all of it */
    struct stat st;
    size_t mlen = stat(l->log_manifest, &st) == 0 ? (size_t)st.st_size : 1024;
    if (mlen > l->mcap) {
        char *m = realloc(l->mbytes, mlen);
        if (!m)
            harness_die("log limit manifest", NULL);
        else
            memset(m, 'm', mlen);
        l->mbytes = m;
        l->mcap = mlen;
    }
    const char *bytes = l->mbytes;
    fsx_pathf(p, NULL, "%s/manifest", l->dir);
    fsx_pathf(tmp, NULL, "%s/.manifest.%d.tmp", l->dir, l->n);
    if (fsx_fsync_dir(l->segs, &err) || fsx_write_file(tmp, bytes, mlen, true, &err) ||
        fsx_rename(tmp, p, true, &err))
        harness_die("log limit roll", &err);
}

/* Seconds to append and fsync, one by one, as many bytes as the puts of
 * records at..end append (at most 64 of them), rolling where their log
 * rolls (max: its segment size). */
static double limit_round(limit_log *l, size_t max, long at, long end)
{
    static char line[4096];
    size_t len[64];
    memset(line, 'l', sizeof line);
    if (end - at > 64)
        harness_die("log limit round", NULL);
    for (long i = at; i < end; i++)
        len[i - at] = put_line_len(i);
    double t = harness_now();
    for (long i = at; i < end; i++) {
        if (write(l->fd, line, len[i - at]) != (ssize_t)len[i - at] || fsync(l->fd))
            harness_die("log limit append", NULL);
        if ((l->size += len[i - at]) >= max)
            limit_roll(l);
    }
    return harness_now() - t;
}

/* log.put and its limit, interleaved: every ROUND puts, the same number of
 * appends of their lines' sizes and fsyncs to plain files, with the rolls
 * the puts' log makes at the same bytes; the two take turns going first,
 * so that both figures are of one disk moment (the disk's rate moves 2-4x
 * within a run; a limit measured in another suite minutes away is not the
 * put's). */
static void put_and_limit(const harness_opts *o, seglog *s, char (*ids)[UUID7_LEN + 1],
                          bench_result *r)
{
    enum { ROUND = 50 };
    long n = o->dataset;
    limit_log l = {.n = 0};
    char man[PATH_MAX];
    fsx_pathf(l.dir, NULL, "%s/put-limit", o->work);
    fsx_pathf(l.segs, NULL, "%s/segments", l.dir);
    fsx_pathf(man, NULL, "%s/events/manifest.jsonc", o->work);
    l.log_manifest = man;
    if (fsx_mkdirs(l.segs, true, NULL))
        harness_die("log limit dir", NULL);
    limit_segment(&l);
    double tput = 0, tlim = 0;
    for (long at = 0, k = 0; at < n; at += ROUND, k++) {
        long end = at + ROUND < n ? at + ROUND : n;
        if (k % 2) {
            tlim += limit_round(&l, LOG_SEGMENT_BYTES, at, end);
            tput += put_round(s, ids, at, end);
        } else {
            tput += put_round(s, ids, at, end);
            tlim += limit_round(&l, LOG_SEGMENT_BYTES, at, end);
        }
    }
    close(l.fd);
    free(l.mbytes);
    bench_add(r, "log.put", n / tput, "appends/s", "higher", "put(), fsync after every append");
    bench_add(r, "limit.log_put", n / tlim, "appends/s", "higher",
              "limit: each put's line size appended and fsynced, and the rolls of its log at "
              "the same bytes (index, new segment, dir fsync, manifest replaced), interleaved "
              "with the puts");
}

void suite_log(const harness_opts *o, bench_result *r)
{
    long n = o->dataset;
    int64_t base = HARNESS_BASE_MS;
    char(*ids)[UUID7_LEN + 1] = harness_make_ids(n, base);
    seglog *s = open_log(o, "events");
    storh_err err;
    put_and_limit(o, s, ids, r);
    double t;

    seglog *bulk = open_log(o, "bulk");
    seglog_batch *b;
    t = harness_now();
    seglog_batch_begin(bulk, &b, NULL);
    for (long i = 0; i < n; i++) {
        json_t *d = harness_record(i);
        char id[UUID7_LEN + 1];
        seglog_batch_element(b, d, id, NULL);
        json_decref(d);
    }
    if (seglog_batch_commit(b, NULL, &err))
        harness_die("log bulk", &err);
    bench_add(r, "log.append_stream", n / (harness_now() - t), "records/s", "higher",
              "appendStream() bulk insert");
    seglog_close(bulk);

    recquery q;
    recquery_init(&q);
    recquery_after(&q, ids[n / 2], UUID7_LEN, NULL);
    recquery_limit(&q, 100, NULL);
    bench_add(r, "log.cursor_read", read_median(s, &q, drain_raw) * 1e3, "ms", "lower",
              "cursor read, 100 records from the middle, as the HTTP stream reads (canonical "
              "data as its bytes; median pass of 5 x 20)");
    bench_add(r, "log.cursor_read_tree", read_median(s, &q, drain) * 1e3, "ms", "lower",
              "cursor read, 100 records from the middle, every record decoded to a tree");
    recquery_clear(&q);
    recquery_init(&q);
    /* storh's window: publishedAt ms 10 to 200 of the run, 191 records */
    recquery_time_range(&q, true, base + 10, true, base + (n > 200 ? 200 : n - 1), NULL);
    bench_add(r, "log.time_range", read_median(s, &q, drain_raw) * 1e3, "ms", "lower",
              "time-range read (a 191 ms window), as the HTTP stream reads (median pass of 5 x "
              "20)");
    bench_add(r, "log.time_range_tree", read_median(s, &q, drain) * 1e3, "ms", "lower",
              "time-range read (a 191 ms window), every record decoded to a tree");
    recquery_clear(&q);

    const char *cj = "{\"where\":[{\"field\":\"status\",\"op\":\"eq\",\"value\":\"published\"}],"
                     "\"count\":true}";
    json_t *qb = sjson_decode(cj, strlen(cj), NULL);
    query cq;
    query_parse(qb, &cq, NULL);
    json_t *out;
    logset one = {&s, NULL, 1};
    double t0 = harness_now();
    if (logquery_run(&one, &cq, &out, &err))
        harness_die("log count", &err);
    bench_add(r, "log.eq_count_cold", (harness_now() - t0) * 1e6, "µs", "lower",
              "equality count(), first call (builds the counters by a scan)");
    json_decref(out);
    /* the counts and their limit in alternate passes, so both see the
     * same load */
    char dir[PATH_MAX], manp[PATH_MAX];
    fsx_pathf(dir, NULL, "%s/events", o->work);
    fsx_pathf(manp, NULL, "%s/manifest.jsonc", dir);
    int afd = open_active(dir);
    double pass[COUNT_PASSES], lpass[COUNT_PASSES];
    for (int p = 0; p < COUNT_PASSES; p++) {
        t = harness_now();
        for (int i = 0; i < COUNT_ITERS; i++) {
            if (logquery_run(&one, &cq, &out, &err))
                harness_die("log count", &err);
            json_decref(out);
        }
        pass[p] = (harness_now() - t) / COUNT_ITERS;
        lpass[p] = stat_pair_pass(manp, afd);
    }
    close(afd);
    bench_add(r, "log.eq_count", harness_median(pass, COUNT_PASSES) * 1e6, "µs", "lower",
              "equality count() from the counters (median pass of 21 x 200)");
    bench_add(r, "limit.count_stats", harness_median(lpass, COUNT_PASSES) * 1e6, "µs", "lower",
              "limit: stat of the log's manifest and fstat of its active segment (a count's "
              "freshness check; passes alternate with log.eq_count's)");
    query_free(&cq);
    json_decref(qb);

    /* storh's compact(): the log as the puts left it */
    size_t live;
    if (seglog_count(s, &live, &err))
        harness_die("count", &err);
    double lim[3];
    {
        outputs ins = {NULL, 0};
        char p[PATH_MAX], segdir[PATH_MAX];
        fsx_pathf(segdir, NULL, "%s/events/segments", o->work);
        read_outputs(segdir, "seg-", &ins);
        fsx_pathf(p, NULL, "%s/events/manifest.jsonc", o->work);
        struct stat st;
        size_t mlen = stat(p, &st) == 0 ? (size_t)st.st_size : 1024;
        lim[0] = ins.n ? compact_io_limit(o, segdir, &ins, mlen) : 0;
        for (size_t i = 0; i < ins.n; i++)
            buf_free(&ins.b[i]);
        free(ins.b);
    }
    t = harness_now();
    if (seglog_compact(s, &out, &err))
        harness_die("compact", &err);
    bench_add(r, "log.compact", live / (harness_now() - t), "records/s", "higher",
              "compact() of every sealed segment");
    json_decref(out);
    {
        outputs outs = {NULL, 0};
        char p[PATH_MAX], segdir[PATH_MAX];
        fsx_pathf(segdir, NULL, "%s/events/segments", o->work);
        read_outputs(segdir, "compact-", &outs);
        fsx_pathf(p, NULL, "%s/events/manifest.jsonc", o->work);
        struct stat st;
        size_t mlen = stat(p, &st) == 0 ? (size_t)st.st_size : 1024;
        /* the limit before the compaction (its inputs as outputs: nothing
         * was deleted, so they are the same lines) and twice after it */
        lim[1] = outs.n ? compact_io_limit(o, segdir, &outs, mlen) : 0;
        lim[2] = outs.n ? compact_io_limit(o, segdir, &outs, mlen) : 0;
        if (outs.n)
            bench_add(r, "limit.compact_io", live / harness_median(lim, 3), "records/s", "higher",
                      "limit: a compaction's kernel work for the same bytes (inputs read, "
                      "roll, outputs written, one syncfs, directory fsync, manifest swap; "
                      "median of one run before it and two after)");
        for (size_t i = 0; i < outs.n; i++)
            buf_free(&outs.b[i]);
        free(outs.b);
    }
    bool ex;
    for (long i = 0; i < n; i += 10)
        seglog_delete(s, ids[i], &ex, NULL);
    if (seglog_count(s, &live, &err))
        harness_die("count", &err);
    t = harness_now();
    if (seglog_compact(s, &out, &err))
        harness_die("compact", &err);
    bench_add(r, "log.compact_deleted", live / (harness_now() - t), "records/s", "higher",
              "compact() after deleting every 10th record (rate over the live ones)");
    json_decref(out);
    seglog_close(s);
    /* an open removes the first compaction's outputs, which the second one
     * replaced: done here, untimed, so the reopen below times what it timed
     * before there were two compactions */
    s = open_log(o, "events");
    seglog_close(s);

    /* a torn tail on the active segment, then reopen */
    char p[PATH_MAX];
    fsx_pathf(p, NULL, "%s/events/manifest.jsonc", o->work);
    buf m = BUF_INIT;
    fsx_read_all(p, &m, NULL);
    json_t *man = json_loadb(m.data, m.len, 0, NULL);
    fsx_pathf(p, NULL, "%s/events/segments/%s", o->work,
              json_string_value(json_object_get(json_object_get(man, "active"), "file")));
    json_decref(man);
    buf_free(&m);
    FILE *f = fopen(p, "a");
    fputs("120\tdeadbeef\t{\"op\":\"put\",\"id\":\"", f);
    fclose(f);
    t = harness_now();
    s = open_log(o, "events");
    bench_add(r, "log.reopen_torn", live / (harness_now() - t), "records/s", "higher",
              "reopen with torn-tail recovery");
    seglog_close(s);
    free(ids);
}
