/* A storage root shared with another process while storhd serves it: a
 * second writer (a forked process writing through the engine library, or a
 * plain file publish the way storh does it) changes records, logs and
 * streams, and storhd's next read answers the new state. Also roots written
 * as storh writes them (FORMAT.md) that storhd must read: integers beyond
 * int64, and a stream that fails midway. */
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "../support/daemon.h"
#include "../test.h"
#include "buf.h"
#include "docstore.h"
#include "frame.h"
#include "fsx.h"
#include "seglog.h"

static daemon_proc d;

static client_resp req(const char *method, const char *path, const char *body)
{
    return daemon_json(&d, method, path, body);
}

static client_resp req_on(const daemon_proc *x, const char *method, const char *path)
{
    client_resp r;
    client_do(x->base, method, path, NULL, NULL, 0, NULL, 0, &r);
    return r;
}

/* A GET whose transfer result matters: *transfer is 0, or -CURLcode when
 * libcurl saw an error (a truncated chunked body is -18). */
static client_resp get_checked(const char *path, int *transfer)
{
    client_resp r;
    *transfer = client_do(d.base, "GET", path, NULL, NULL, 0, NULL, 0, &r);
    return r;
}

static int lines(const char *s)
{
    int n = 0;
    for (; s && (s = strchr(s, '\n')); s++)
        n++;
    return n;
}

/* Writes bytes at path the way storh publishes (temp file, rename). */
static bool publish(const char *path, const char *bytes)
{
    char dir[PATH_MAX], tmp[PATH_MAX + 8];
    fsx_dirname(path, dir, sizeof dir);
    if (fsx_mkdirs(dir, true, NULL))
        return false;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    size_t n = strlen(bytes);
    bool ok = fd >= 0 && write(fd, bytes, n) == (ssize_t)n;
    if (fd >= 0)
        close(fd);
    return ok && rename(tmp, path) == 0;
}

/* Runs fn(arg) in a forked process (the "other writer"); true if it
 * returned 0. */
static bool in_child(int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn(arg) == 0 ? 0 : 1);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static json_t *js(const char *s)
{
    return json_loads(s, 0, NULL);
}

/* ---- 1. record cache: a rewrite by another process is seen ---- */

/* where another writer finds the record (FORMAT.md 2): out holds PATH_MAX */
static void record_path(const char *coll, const char *id, char *out)
{
    snprintf(out, PATH_MAX, "%s/%s/data/%c%c/%s.jsonc", d.root, coll, id[24], id[25], id);
}

static void create_record(const char *coll, const char *body, char id[UUID7_LEN + 1])
{
    char path[128];
    snprintf(path, sizeof path, "/v1/docs/%s", coll);
    json_t *out = NULL;
    CHECK_INT(client_json(d.base, "POST", path, body, &out), 201);
    snprintf(id, UUID7_LEN + 1, "%s", json_string_value(json_object_get(out, "id")));
    json_decref(out);
}

static void check_doc(const char *coll, const char *id, const char *want_data)
{
    char path[160], want[256];
    snprintf(path, sizeof path, "/v1/docs/%s/%s", coll, id);
    snprintf(want, sizeof want, "{\"id\":\"%s\",\"data\":%s}", id, want_data);
    client_resp r = req("GET", path, NULL);
    CHECK_INT(r.status, 200);
    if (r.len && r.body[r.len - 1] == '\n')
        r.body[--r.len] = '\0';
    CHECK_STR(r.body, want);
    client_free(&r);
}

/* The file replaced the way storh publishes (temp file, rename), same size,
 * and even the same nanosecond mtime as the file it replaces: only the
 * inode and ctime tell them apart. */
TEST(record_rewritten_by_rename_same_size_same_mtime_is_seen)
{
    char id[UUID7_LEN + 1];
    create_record("cache1", "{\"v\":\"aaaa\"}", id);
    check_doc("cache1", id, "{\"v\":\"aaaa\"}");
    check_doc("cache1", id, "{\"v\":\"aaaa\"}"); /* now served from the cache */
    char file[PATH_MAX], tmp[PATH_MAX + 8];
    record_path("cache1", id, file);
    struct stat before;
    CHECK(stat(file, &before) == 0);
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    char bytes[256];
    int n = snprintf(bytes, sizeof bytes, "{\"id\":\"%s\",\"data\":{\"v\":\"bbbb\"}}\n", id);
    CHECK(n == before.st_size);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, bytes, (size_t)n) == n);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    CHECK(futimens(fd, times) == 0);
    close(fd);
    CHECK(rename(tmp, file) == 0);
    struct stat after;
    CHECK(stat(file, &after) == 0);
    CHECK(after.st_size == before.st_size && after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
          after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    check_doc("cache1", id, "{\"v\":\"bbbb\"}");
}

typedef struct put_arg {
    const char *coll, *id, *data;
} put_arg;

static int child_put(void *p)
{
    put_arg *a = p;
    docstore *ds;
    storh_err err;
    char out[UUID7_LEN + 1];
    bool existed;
    json_t *v = js(a->data);
    int rc = docstore_open(d.root, a->coll, &ds, &err);
    if (!rc) {
        rc = docstore_put(ds, a->id, v, out, &existed, &err);
        docstore_close(ds);
    }
    json_decref(v);
    return rc;
}

/* Another process rewrites cached records through the engine library with
 * same-size data, right away (the same second, most of the time). */
TEST(record_rewritten_by_engine_in_other_process_is_seen)
{
    for (int i = 0; i < 5; i++) {
        char id[UUID7_LEN + 1];
        create_record("cache2", "{\"v\":\"old1\"}", id);
        check_doc("cache2", id, "{\"v\":\"old1\"}");
        check_doc("cache2", id, "{\"v\":\"old1\"}");
        put_arg a = {"cache2", id, "{\"v\":\"new2\"}"};
        CHECK(in_child(child_put, &a));
        check_doc("cache2", id, "{\"v\":\"new2\"}");
    }
}

/* ---- 2. integers beyond int64, streams that fail midway ---- */

/* The record storh's importJsonl stores verbatim (FORMAT.md: a two-key
 * {"id","data"} row is the file's bytes), beside seven ordinary ones. */
TEST(doc_with_integers_beyond_int64_reads_as_floats)
{
    char id[UUID7_LEN + 1];
    for (int i = 0; i < 7; i++) {
        char body[32];
        snprintf(body, sizeof body, "{\"n\":%d}", i);
        create_record("bigint", body, id);
    }
    CHECK(uuid7_generate(id, -1, NULL) == 0);
    char file[PATH_MAX], bytes[256];
    record_path("bigint", id, file);
    snprintf(bytes, sizeof bytes,
             "{\"id\":\"%s\",\"data\":{\"big\":12345678901234567890,\"neg\":-"
             "9223372036854775809}}",
             id);
    CHECK(publish(file, bytes));
    check_doc("bigint", id, "{\"big\":1.2345678901234567e+19,\"neg\":-9.223372036854776e+18}");
    const char *streams[] = {"/v1/docs/bigint/_export", "/v1/docs/bigint"};
    for (int i = 0; i < 2; i++) {
        int transfer;
        client_resp r = get_checked(streams[i], &transfer);
        CHECK_INT(transfer, 0);
        CHECK_INT(r.status, 200);
        CHECK_INT(lines(r.body), 8);
        CHECK(strstr(r.body, "\"big\":1.2345678901234567e+19") != NULL);
        client_free(&r);
    }
}

/* A record that cannot be parsed in the middle of a stream: the rows before
 * it arrive, then libcurl reports a truncated transfer (never a complete
 * body that silently lacks rows). */
TEST(doc_stream_failing_midway_is_a_transfer_error)
{
    char ids[5][UUID7_LEN + 1];
    for (int i = 0; i < 5; i++)
        create_record("broken", "{\"ok\":true}", ids[i]);
    char file[PATH_MAX];
    record_path("broken", ids[2], file);
    CHECK(publish(file, "{\"id\": not json"));
    const char *streams[] = {"/v1/docs/broken/_export", "/v1/docs/broken"};
    for (int i = 0; i < 2; i++) {
        int transfer;
        client_resp r = get_checked(streams[i], &transfer);
        CHECK_INT(r.status, 200);
        CHECK_INT(transfer, -(int)CURLE_PARTIAL_FILE);
        CHECK_INT(lines(r.body), 2);
        client_free(&r);
    }
}

/* ---- 6. log reads see other processes' writes ---- */

static long long json_int_at(const char *method, const char *path, const char *body,
                             const char *key)
{
    json_t *out = NULL;
    long st = client_json(d.base, method, path, body, &out);
    long long v = st == 200 ? json_integer_value(json_object_get(out, key)) : -1;
    json_decref(out);
    return v;
}

static bool log_ok(const char *stream)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/logs/%s/_verify", stream);
    json_t *out = NULL;
    client_json(d.base, "GET", path, NULL, &out);
    bool ok = json_is_true(json_object_get(out, "ok"));
    if (!ok) {
        char *t = json_dumps(out, 0);
        fprintf(stderr, "verify %s: %s\n", stream, t ? t : "(no reply)");
        free(t);
    }
    json_decref(out);
    return ok;
}

/* Appends n records to stream, returning their ids in ids (n entries). */
static void http_append(const char *stream, int n, char (*ids)[UUID7_LEN + 1])
{
    char path[128];
    snprintf(path, sizeof path, "/v1/logs/%s", stream);
    for (int i = 0; i < n; i++) {
        json_t *out = NULL;
        char body[48];
        snprintf(body, sizeof body, "{\"by\":\"storhd\",\"i\":%d}", i);
        CHECK_INT(client_json(d.base, "POST", path, body, &out), 201);
        snprintf(ids[i], UUID7_LEN + 1, "%s", json_string_value(json_object_get(out, "id")));
        json_decref(out);
    }
}

typedef struct log_arg {
    const char *stream;
    int append;            /* records to append in one batch */
    const char *del, *put; /* an id to delete, an id to re-put */
    bool compact;
} log_arg;

/* The other writer: the engine library in a forked process. */
static int child_log(void *p)
{
    log_arg *a = p;
    seglog_opts o;
    seglog_opts_default(&o);
    seglog *s;
    storh_err err;
    int rc = seglog_open(d.root, a->stream, &o, false, &s, &err);
    if (rc)
        return rc;
    seglog_batch *b = NULL;
    if (a->append && !(rc = seglog_batch_begin(s, &b, &err))) {
        for (int i = 0; !rc && i < a->append; i++) {
            char body[48], id[UUID7_LEN + 1];
            snprintf(body, sizeof body, "{\"by\":\"other\",\"i\":%d}", i);
            json_t *row = js(body);
            rc = seglog_batch_element(b, row, id, &err);
            json_decref(row);
        }
        rc = rc ? rc : seglog_batch_commit(b, NULL, &err);
    }
    bool existed;
    if (!rc && a->del)
        rc = seglog_delete(s, a->del, &existed, &err);
    char out[UUID7_LEN + 1];
    json_t *v = js("{\"by\":\"other\",\"reput\":true}");
    if (!rc && a->put)
        rc = seglog_put(s, a->put, v, out, &err);
    json_decref(v);
    json_t *rep = NULL;
    if (!rc && a->compact)
        rc = seglog_compact(s, &rep, &err);
    json_decref(rep);
    if (rc)
        fprintf(stderr, "other writer: %s\n", err.msg);
    seglog_close(s);
    return rc;
}

/* live records in all, others of them written by the other process. */
static void check_log_view(const char *stream, int live, int others, const char *gone,
                           const char *reput)
{
    char path[160];
    int transfer;
    snprintf(path, sizeof path, "/v1/logs/%s", stream);
    client_resp r = get_checked(path, &transfer);
    CHECK_INT(transfer, 0);
    CHECK_INT(lines(r.body), live);
    client_free(&r);
    snprintf(path, sizeof path, "/v1/logs/%s/_stats", stream);
    CHECK_INT(json_int_at("GET", path, NULL, "records"), live);
    snprintf(path, sizeof path, "/v1/logs/%s/_query", stream);
    CHECK_INT(json_int_at("POST", path, "{\"count\":true}", "count"), live);
    CHECK_INT(
        json_int_at(
            "POST", path,
            "{\"count\":true,\"where\":[{\"field\":\"by\",\"op\":\"eq\",\"value\":\"other\"}]}",
            "count"),
        others);
    if (gone) {
        snprintf(path, sizeof path, "/v1/logs/%s/%s", stream, gone);
        r = req("GET", path, NULL);
        CHECK_INT(r.status, 404);
        client_free(&r);
    }
    if (reput) {
        snprintf(path, sizeof path, "/v1/logs/%s/%s", stream, reput);
        r = req("GET", path, NULL);
        CHECK(r.status == 200 && strstr(r.body, "\"reput\":true"));
        client_free(&r);
    }
    CHECK(log_ok(stream));
}

/* storhd has the stream open (and its equality counters built); another
 * process appends 600 records, deletes one and re-puts another. */
TEST(log_appends_deletes_reputs_by_other_process_are_seen)
{
    char ids[10][UUID7_LEN + 1];
    http_append("shared_log", 10, ids);
    CHECK_INT(
        json_int_at(
            "POST", "/v1/logs/shared_log/_query",
            "{\"count\":true,\"where\":[{\"field\":\"by\",\"op\":\"eq\",\"value\":\"other\"}]}",
            "count"),
        0);
    log_arg a = {"shared_log", 600, ids[3], ids[5], false};
    CHECK(in_child(child_log, &a));
    check_log_view("shared_log", 609, 601, ids[3], ids[5]);
    /* and storhd's own next write lands after them */
    char more[1][UUID7_LEN + 1];
    http_append("shared_log", 1, more);
    check_log_view("shared_log", 610, 601, ids[3], ids[5]);
}

/* The same after the other process compacts (a new manifest, new segment
 * files): storhd replays from the manifest it finds. */
TEST(log_compaction_by_other_process_is_seen)
{
    char ids[10][UUID7_LEN + 1];
    http_append("shared_compact", 10, ids);
    log_arg a = {"shared_compact", 300, ids[1], ids[2], true};
    CHECK(in_child(child_log, &a));
    check_log_view("shared_compact", 309, 301, ids[1], ids[2]);
    log_arg b = {"shared_compact", 0, ids[4], NULL, true};
    CHECK(in_child(child_log, &b));
    check_log_view("shared_compact", 308, 301, ids[4], ids[2]);
}

/* Reads race a writer in another process: every stream is a whole, valid
 * answer that never shrinks, and at the end storhd has every record. */
TEST(log_reads_while_other_process_appends)
{
    char ids[1][UUID7_LEN + 1];
    http_append("racing", 1, ids);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = 0;
        for (int i = 0; i < 40 && !rc; i++) {
            log_arg a = {"racing", 25, NULL, NULL, false};
            rc = child_log(&a);
        }
        _exit(rc ? 1 : 0);
    }
    int last = 0, reads = 0, st = 0;
    bool done = false;
    while (!done) {
        done = waitpid(pid, &st, WNOHANG) == pid;
        int transfer;
        client_resp r = get_checked("/v1/logs/racing", &transfer);
        CHECK_INT(transfer, 0);
        int n = lines(r.body);
        CHECK(n >= last);
        last = n;
        for (char *p = r.body, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
            json_t *row = json_loadb(p, (size_t)(nl - p), 0, NULL);
            CHECK(json_is_object(json_object_get(row, "data")));
            json_decref(row);
        }
        client_free(&r);
        reads++;
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_INT(last, 1001);
    CHECK_INT(json_int_at("GET", "/v1/logs/racing/_stats", NULL, "records"), 1001);
    CHECK(log_ok("racing"));
    CHECK(reads > 1);
}

/* Appends one framed line the way storh does (under the collection's flock). */
static bool append_framed(const char *lockfile, const char *file, const char *json)
{
    char lp[PATH_MAX], fp[PATH_MAX];
    snprintf(lp, sizeof lp, "%s/%s", d.root, lockfile);
    snprintf(fp, sizeof fp, "%s/%s", d.root, file);
    fsx_lock l = {.fd = -1};
    if (fsx_lock_open(&l, lp, NULL) || fsx_lock_acquire(&l, NULL))
        return false;
    buf line = BUF_INIT;
    frame_encode(&line, json, strlen(json));
    int fd = open(fp, O_WRONLY | O_APPEND);
    bool ok = fd >= 0 && write(fd, line.data, line.len) == (ssize_t)line.len && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    buf_free(&line);
    fsx_lock_release(&l);
    fsx_lock_close(&l);
    return ok;
}

/* A log line and a queue payload storh wrote with integers beyond int64. */
TEST(log_and_queue_integers_beyond_int64_read_as_floats)
{
    char ids[2][UUID7_LEN + 1];
    http_append("biglog", 2, ids);
    char id[UUID7_LEN + 1], json[256];
    CHECK(uuid7_generate(id, -1, NULL) == 0);
    snprintf(json, sizeof json,
             "{\"op\":\"put\",\"id\":\"%s\",\"data\":{\"big\":12345678901234567890,\"neg\":-"
             "9223372036854775809}}",
             id);
    CHECK(append_framed("biglog/collection.lock", "biglog/segments/seg-000001.ndjson", json));
    char path[128];
    snprintf(path, sizeof path, "/v1/logs/biglog/%s", id);
    client_resp r = req("GET", path, NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "{\"big\":1.2345678901234567e+19,\"neg\":-9.223372036854776e+18}"));
    client_free(&r);
    int transfer;
    r = get_checked("/v1/logs/biglog", &transfer);
    CHECK_INT(transfer, 0);
    CHECK_INT(lines(r.body), 3);
    client_free(&r);

    json_t *out = NULL;
    CHECK_INT(client_json(d.base, "POST", "/v1/queues/bigq/jobs", "{\"k\":1}", &out), 201);
    json_decref(out);
    CHECK(uuid7_generate(id, -1, NULL) == 0);
    snprintf(json, sizeof json,
             "{\"op\":\"enqueue\",\"id\":\"%s\",\"payload\":{\"big\":12345678901234567890},"
             "\"ts\":%lld}",
             id, (long long)time(NULL));
    CHECK(append_framed("bigq/queue.lock", "bigq/queue.log", json));
    r = req("POST", "/v1/queues/bigq/claim?limit=5", NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "{\"big\":1.2345678901234567e+19}"));
    client_free(&r);
}

/* A segment that cannot be read midway through a log stream. */
TEST(log_stream_failing_midway_is_a_transfer_error)
{
    char ids[3][UUID7_LEN + 1];
    http_append("brokenlog", 3, ids);
    char seg[PATH_MAX], away[PATH_MAX];
    snprintf(seg, sizeof seg, "%s/brokenlog/segments/seg-000001.ndjson", d.root);
    snprintf(away, sizeof away, "%s.away", seg);
    CHECK(rename(seg, away) == 0);
    int transfer;
    client_resp r = get_checked("/v1/logs/brokenlog", &transfer);
    CHECK_INT(r.status, 200);
    CHECK_INT(transfer, -(int)CURLE_PARTIAL_FILE);
    client_free(&r);
    CHECK(rename(away, seg) == 0);
    r = get_checked("/v1/logs/brokenlog", &transfer);
    CHECK_INT(transfer, 0);
    CHECK_INT(lines(r.body), 3);
    client_free(&r);
}

/* ---- partitioned streams: every reader sees every partition ---- */

typedef struct part_arg {
    const char *root, *stream;
    int64_t day_ms[2];
    int per_day;
} part_arg;

/* The other writer fills two past daily partitions, ids of those days. */
static int child_partitions(void *p)
{
    part_arg *a = p;
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        seglog_opts o;
        seglog_opts_default(&o);
        o.partition = SEGLOG_PART_DAILY;
        o.partition_ts_ms = a->day_ms[k];
        seglog *s;
        storh_err err;
        if ((rc = seglog_open(a->root, a->stream, &o, true, &s, &err)))
            break;
        for (int i = 0; i < a->per_day && !rc; i++) {
            char id[UUID7_LEN + 1], out[UUID7_LEN + 1], body[48];
            uuid7_generate(id, a->day_ms[k] + i, NULL);
            snprintf(body, sizeof body, "{\"day\":%d,\"i\":%d}", k, i);
            json_t *v = js(body);
            rc = seglog_put(s, id, v, out, &err);
            json_decref(v);
        }
        seglog_close(s);
    }
    return rc;
}

static long long json_int_on(const daemon_proc *x, const char *method, const char *path,
                             const char *body, const char *key)
{
    json_t *out = NULL;
    long st = client_json(x->base, method, path, body, &out);
    long long v = st == 200 ? json_integer_value(json_object_get(out, key)) : -1;
    json_decref(out);
    return v;
}

/* A daily stream with two past partitions (written by another process) and
 * today's (written by storhd): stream, _query, _stats, _verify, GET by id
 * and the mirror all cover the three. */
TEST(partitioned_log_readers_see_every_partition)
{
    char cfg[PATH_MAX], mdb[PATH_MAX], body[PATH_MAX * 2];
    snprintf(cfg, sizeof cfg, "%s.part.json", d.root);
    snprintf(mdb, sizeof mdb, "%s.part.sqlite", d.root);
    snprintf(body, sizeof body,
             "{\"logs\":{\"days\":{\"partition\":\"daily\"}},\"mirrors\":{\"m\":{\"driver\":"
             "\"sqlite\",\"path\":\"%s\",\"collections\":{\"days\":{\"kind\":\"log\"}}}}}",
             mdb);
    FILE *f = fopen(cfg, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(body, f);
    fclose(f);
    daemon_proc p;
    const char *extra[] = {"--config", cfg, NULL};
    CHECK_INT(daemon_start(&p, NULL, extra), 0);
    /* today's partition, through storhd */
    char today_id[UUID7_LEN + 1] = "";
    for (int i = 0; i < 3; i++) {
        json_t *out = NULL;
        CHECK_INT(client_json(p.base, "POST", "/v1/logs/days", "{\"day\":2}", &out), 201);
        snprintf(today_id, sizeof today_id, "%s", json_string_value(json_object_get(out, "id")));
        json_decref(out);
    }
    part_arg a = {p.root, "days", {INT64_C(1782864000000), INT64_C(1782950400000)}, 20};
    CHECK(in_child(child_partitions, &a)); /* 2026-07-01 and 2026-07-02 */
    int total = 43;

    int transfer;
    client_resp r;
    transfer = client_do(p.base, "GET", "/v1/logs/days", NULL, NULL, 0, NULL, 0, &r);
    CHECK_INT(transfer, 0);
    CHECK_INT(lines(r.body), total);
    CHECK_PREFIX(r.body, "{\"id\":\"");
    CHECK(strstr(r.body, "{\"day\":0,\"i\":0}") < strstr(r.body, "{\"day\":1,\"i\":0}"));
    char old_id[UUID7_LEN + 1] = "";
    if (r.len > 7 + UUID7_LEN)
        snprintf(old_id, sizeof old_id, "%.*s", UUID7_LEN, r.body + 7); /* the first row's */
    client_free(&r);
    transfer = client_do(p.base, "GET", "/v1/logs/days?limit=25", NULL, NULL, 0, NULL, 0, &r);
    CHECK_INT(lines(r.body), 25);
    client_free(&r);
    CHECK_INT(json_int_on(&p, "POST", "/v1/logs/days/_query", "{\"count\":true}", "count"), total);
    CHECK_INT(
        json_int_on(&p, "POST", "/v1/logs/days/_query",
                    "{\"count\":true,\"where\":[{\"field\":\"day\",\"op\":\"eq\",\"value\":1}]}",
                    "count"),
        20);
    CHECK_INT(
        json_int_on(&p, "POST", "/v1/logs/days/_query",
                    "{\"count\":true,\"where\":[{\"field\":\"i\",\"op\":\"gte\",\"value\":10}]}",
                    "count"),
        20);
    CHECK_INT(json_int_on(&p, "GET", "/v1/logs/days/_stats", NULL, "records"), total);
    CHECK_INT(json_int_on(&p, "GET", "/v1/logs/days/_stats", NULL, "partitions"), 3);
    json_t *v = NULL;
    CHECK_INT(client_json(p.base, "GET", "/v1/logs/days/_verify", NULL, &v), 200);
    CHECK(json_is_true(json_object_get(v, "ok")));
    CHECK_INT(json_integer_value(json_object_get(json_object_get(v, "stats"), "records")), total);
    json_decref(v);
    char id[UUID7_LEN + 1], path[128];
    uuid7_generate(id, a.day_ms[0] + 5, NULL); /* not a record: 404 */
    snprintf(path, sizeof path, "/v1/logs/days/%s", id);
    r = req_on(&p, "GET", path);
    CHECK_INT(r.status, 404);
    client_free(&r);
    snprintf(path, sizeof path, "/v1/logs/days/%s", old_id);
    r = req_on(&p, "GET", path);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "{\"day\":0,\"i\":0}") != NULL);
    client_free(&r);
    snprintf(path, sizeof path, "/v1/logs/days/%s", today_id);
    r = req_on(&p, "GET", path);
    CHECK_INT(r.status, 200);
    client_free(&r);

    r = req_on(&p, "POST", "/v1/mirror/install?collection=days");
    CHECK_INT(r.status, 200);
    client_free(&r);
    CHECK_INT(json_int_on(&p, "POST", "/v1/mirror/push", NULL, "inserted"), total);
    CHECK_INT(json_int_on(&p, "POST", "/v1/mirror/push", NULL, "unchanged"), total);
    CHECK_INT(client_json(p.base, "GET", "/v1/mirror/verify", NULL, &v), 200);
    CHECK(json_is_true(json_object_get(v, "ok")));
    json_decref(v);

    CHECK_INT(daemon_stop(&p), 0);
    daemon_cleanup(&p);
    unlink(cfg);
    unlink(mdb);
}

static const test_case tests[] = {
    {"record_rewritten_by_rename_same_size_same_mtime_is_seen",
     record_rewritten_by_rename_same_size_same_mtime_is_seen},
    {"record_rewritten_by_engine_in_other_process_is_seen",
     record_rewritten_by_engine_in_other_process_is_seen},
    {"doc_with_integers_beyond_int64_reads_as_floats",
     doc_with_integers_beyond_int64_reads_as_floats},
    {"doc_stream_failing_midway_is_a_transfer_error",
     doc_stream_failing_midway_is_a_transfer_error},
    {"log_appends_deletes_reputs_by_other_process_are_seen",
     log_appends_deletes_reputs_by_other_process_are_seen},
    TEST_ENTRY(log_compaction_by_other_process_is_seen),
    TEST_ENTRY(log_reads_while_other_process_appends),
    {"log_and_queue_integers_beyond_int64_read_as_floats",
     log_and_queue_integers_beyond_int64_read_as_floats},
    {"log_stream_failing_midway_is_a_transfer_error",
     log_stream_failing_midway_is_a_transfer_error},
    TEST_ENTRY(partitioned_log_readers_see_every_partition),
};

DAEMON_TEST_MAIN(d, tests)
