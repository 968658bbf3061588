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
#include <unistd.h>

#include "../support/client.h"
#include "../support/daemon.h"
#include "../test.h"
#include "buf.h"
#include "docstore.h"
#include "docstore_int.h"
#include "fsx.h"
#include "seglog.h"

static daemon_proc d;

static client_resp req(const char *method, const char *path, const char *body)
{
    client_resp r;
    client_do(d.base, method, path, body ? "application/json" : NULL, body, body ? strlen(body) : 0,
              NULL, 0, &r);
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

static void record_path(const char *coll, const char *id, char *out)
{
    docstore *ds;
    storh_err err;
    if (docstore_open(d.root, coll, &ds, &err) == 0) {
        docstore_record_path(ds, id, out);
        docstore_close(ds);
    }
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

static const test_case tests[] = {
    {"record_rewritten_by_rename_same_size_same_mtime_is_seen",
     record_rewritten_by_rename_same_size_same_mtime_is_seen},
    {"record_rewritten_by_engine_in_other_process_is_seen",
     record_rewritten_by_engine_in_other_process_is_seen},
    {"doc_with_integers_beyond_int64_reads_as_floats",
     doc_with_integers_beyond_int64_reads_as_floats},
    {"doc_stream_failing_midway_is_a_transfer_error",
     doc_stream_failing_midway_is_a_transfer_error},
};

DAEMON_TEST_MAIN(d, tests)
