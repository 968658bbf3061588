/* suite_queue (bench): the Queue figures, one job at a time and in bulk. */
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <unistd.h>

#include "fsx.h"
#include "queue.h"
#include "sjson.h"
#include "suite.h"

/* ---------- the bulk calls and their limits ---------- */

/* Passes of the bulk calls, each on a fresh queue; the figures are the
 * median pass, each call's limit the median of the limits measured right
 * after it (the disk's rate moves within a run). */
#define BULK_PASSES 3

static double median3(const double *v)
{
    double s[BULK_PASSES];
    memcpy(s, v, sizeof s);
    return harness_median(s, BULK_PASSES);
}

/* The bytes [from, to) of the queue's log: what the call just wrote. */
static char *log_bytes(const char *work, const char *name, off_t from, off_t to)
{
    char path[PATH_MAX];
    fsx_pathf(path, NULL, "%s/%s/queue.log", work, name);
    char *b = malloc((size_t)(to - from) + 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!b || fd < 0 || pread(fd, b, (size_t)(to - from), from) != to - from)
        harness_die("queue log read", NULL);
    close(fd);
    return b;
}

static off_t log_size(const char *work, const char *name)
{
    char path[PATH_MAX];
    struct stat st;
    fsx_pathf(path, NULL, "%s/%s/queue.log", work, name);
    return stat(path, &st) == 0 ? st.st_size : 0;
}

/* Appends b as the queue appends a large batch (queue__spill): in writes
 * of QUEUE_SPILL bytes, each one's writeback started at once. */
static void append_spilled(int fd, const char *b, size_t len)
{
    off_t at = lseek(fd, 0, SEEK_END);
    for (size_t done = 0; done < len;) {
        size_t n = len - done < QUEUE_SPILL ? len - done : QUEUE_SPILL;
        if (write(fd, b + done, n) != (ssize_t)n)
            harness_die("limit append", NULL);
        (void)sync_file_range(fd, at + (off_t)done, (off_t)n, SYNC_FILE_RANGE_WRITE);
        done += n;
    }
}

/* Seconds to append b and fsync it, in the queue's writes: the least a
 * durable batch of these events costs. */
static double append_fsync_secs(int fd, const char *b, size_t len)
{
    double t = harness_now();
    append_spilled(fd, b, len);
    if (fsync(fd))
        harness_die("limit append", NULL);
    return harness_now() - t;
}

/* append_fsync_secs in one write: storh's syscalls. */
static double append_once_secs(int fd, const char *b, size_t len)
{
    double t = harness_now();
    if (write(fd, b, len) != (ssize_t)len || fsync(fd))
        harness_die("limit append", NULL);
    return harness_now() - t;
}

/* Seconds for what an all-or-nothing enqueue of b cannot avoid (qstage):
 * publish a stage of the bytes (header line, create, write, fsync, close,
 * rename, directory fsync), append them in one write, fsync, unlink. */
static double staged_secs(const char *dir, int fd, const char *b, size_t len)
{
    char tmp[PATH_MAX], fin[PATH_MAX], head[64];
    fsx_pathf(tmp, NULL, "%s/.stage.tmp", dir);
    fsx_pathf(fin, NULL, "%s/stage", dir);
    int hl = snprintf(head, sizeof head, "{\"offset\":0,\"length\":%zu}\n", len);
    double t = harness_now();
    int sfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    struct iovec iov[2] = {{head, (size_t)hl}, {(void *)b, len}};
    if (sfd < 0 || writev(sfd, iov, 2) != (ssize_t)(len + (size_t)hl) || fsync(sfd) || close(sfd))
        harness_die("limit stage", NULL);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rename(tmp, fin) || dfd < 0 || fsync(dfd) || close(dfd))
        harness_die("limit stage rename", NULL);
    append_spilled(fd, b, len);
    if (fsync(fd) || unlink(fin))
        harness_die("limit stage append", NULL);
    return harness_now() - t;
}

/* The body an HTTP client sends to enqueue jobs 0..n-1 (the harness's
 * rows): built per row, as storh's bench builds its rows in the call. */
static void jobs_body(long n, buf *body)
{
    buf_reserve(body, (size_t)n * 112 + 2);
    buf_appendc(body, '[');
    for (long i = 0; i < n; i++) {
        if (i)
            buf_appendc(body, ',');
        harness_record_bytes(i, body);
    }
    buf_appendc(body, ']');
}

/* Dies unless the rows' bytes are what sjson writes for their trees: both
 * paths must enqueue the same jobs. */
static void check_rows(void)
{
    for (long i = 0; i < 6; i++) {
        buf a = BUF_INIT, b = BUF_INIT;
        json_t *t = harness_record(i);
        harness_record_bytes(i, &a);
        sjson_encode(&b, t, 0, NULL);
        json_decref(t);
        bool same = a.len == b.len && !memcmp(a.data, b.data, a.len);
        buf_free(&a);
        buf_free(&b);
        if (!same)
            harness_die("harness_record_bytes differs from harness_record", NULL);
    }
}

/* One pass of the bulk calls as storh's bench makes them: one
 * enqueueMany() of every job (building the rows included), one
 * claimMany(n), one completeMany() of every id; each call followed by its
 * limit, sized from the bytes the call appended. storhd's calls are the
 * byte path HTTP takes: the jobs read from the body's bytes, the claim
 * answered as bytes, the complete's ids read from its body (tree_pass times
 * the tree API). */
static void bulk_pass(const harness_opts *o, int k, double op[3][BULK_PASSES],
                      double lim[3][BULK_PASSES], double plain[BULK_PASSES])
{
    long n = o->dataset;
    char name[32], ldir[PATH_MAX], lpath[PATH_MAX], ppath[PATH_MAX];
    snprintf(name, sizeof name, k ? "many%d" : "many", k);
    fsx_pathf(ldir, NULL, "%s/limit-%s", o->work, name);
    fsx_pathf(lpath, NULL, "%s/queue.log", ldir);
    fsx_pathf(ppath, NULL, "%s/plain.log", ldir);
    if (mkdir(ldir, 0755))
        harness_die("limit mkdir", NULL);
    int lfd = open(lpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int pfd = open(ppath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (lfd < 0 || pfd < 0)
        harness_die("limit open", NULL);
    queue *q;
    storh_err err;
    if (queue_open(o->work, name, true, &q, &err))
        harness_die("queue open", &err);
    off_t at = log_size(o->work, name), end;
    double t = harness_now();
    buf body = BUF_INIT;
    jobs_body(n, &body);
    queue_jobs js = QUEUE_JOBS_INIT;
    char(*ids)[UUID7_LEN + 1] = malloc((size_t)n * sizeof *ids);
    if (!ids || !queue_jobs_read(body.data, body.len, &js) || js.n != (size_t)n)
        harness_die("enqueueMany: the body is not read as jobs", NULL);
    if (queue_enqueue_jobs(q, &js, ids, &err))
        harness_die("enqueueMany", &err);
    op[0][k] = harness_now() - t;
    queue_jobs_free(&js);
    buf_free(&body);
    char *b = log_bytes(o->work, name, at, end = log_size(o->work, name));
    lim[0][k] = staged_secs(ldir, lfd, b, (size_t)(end - at));
    plain[k] = append_once_secs(pfd, b, (size_t)(end - at));
    free(b);

    at = end;
    buf answer = BUF_INIT;
    size_t got;
    t = harness_now();
    if (queue_claim_bytes(q, (size_t)n, &answer, &got, &err))
        harness_die("claimMany", &err);
    op[1][k] = harness_now() - t;
    if (got != (size_t)n)
        harness_die("claimMany: not every job claimed", NULL);
    buf_free(&answer);
    b = log_bytes(o->work, name, at, end = log_size(o->work, name));
    lim[1][k] = append_fsync_secs(lfd, b, (size_t)(end - at));
    free(b);

    /* the body a client sends to complete them all */
    buf idb = BUF_INIT;
    buf_appends(&idb, "{\"ids\":[");
    for (long i = 0; i < n; i++) {
        buf_append(&idb, i ? ",\"" : "\"", i ? 2 : 1);
        buf_append(&idb, ids[i], UUID7_LEN);
        buf_appendc(&idb, '"');
    }
    buf_appends(&idb, "]}");
    free(ids);
    size_t done;
    at = end;
    t = harness_now();
    queue_ids qi = QUEUE_IDS_INIT;
    if (!queue_ids_read(idb.data, idb.len, &qi) || qi.n != (size_t)n)
        harness_die("completeMany: the body is not read as ids", NULL);
    if (queue_complete_ids(q, &qi, true, &done, &err))
        harness_die("completeMany", &err);
    op[2][k] = harness_now() - t;
    queue_ids_free(&qi);
    buf_free(&idb);
    b = log_bytes(o->work, name, at, end = log_size(o->work, name));
    lim[2][k] = append_fsync_secs(lfd, b, (size_t)(end - at));
    free(b);
    queue_close(q);
    close(lfd);
    close(pfd);
}

/* One pass of enqueueMany and claimMany through the tree API (jansson rows
 * in, jansson jobs out), for the cost of the trees beside bulk_pass. */
static void tree_pass(const harness_opts *o, double *enq, double *claim)
{
    long n = o->dataset;
    queue *q;
    storh_err err;
    if (queue_open(o->work, "many-tree", true, &q, &err))
        harness_die("queue open", &err);
    json_t *ids, *all;
    double t = harness_now();
    json_t *jobs = json_array();
    for (long i = 0; i < n; i++)
        json_array_append_new(jobs, harness_record(i));
    if (queue_enqueue_many(q, jobs, &ids, &err))
        harness_die("enqueueMany", &err);
    *enq = harness_now() - t;
    json_decref(ids);
    json_decref(jobs);
    t = harness_now();
    if (queue_claim(q, (size_t)n, &all, &err))
        harness_die("claimMany", &err);
    *claim = harness_now() - t;
    json_decref(all);
    queue_close(q);
}

/* ---------- Queue ---------- */

/* One job at a time, next to its limit: every ROUND calls, the same number
 * of appends of the bytes those calls added to queue.log (each with its
 * fsync) to a plain file beside it; the two take turns going first, so
 * that both figures are of one disk moment (as log.put's). */
enum { ROUND = 50 };

typedef struct qone {
    queue *q;
    const harness_opts *o;
    json_t *claimed; /* what claim returned, for complete */
    int limit_fd;
    double t_op, t_limit;
} qone;

typedef void (*qone_fn)(qone *c, long i);

static void one_enqueue(qone *c, long i)
{
    storh_err err;
    json_t *one = json_array(), *ids;
    json_array_append_new(one, harness_record(i));
    if (queue_enqueue_many(c->q, one, &ids, &err))
        harness_die("enqueue", &err);
    json_decref(ids);
    json_decref(one);
}

static void one_claim(qone *c, long i)
{
    (void)i;
    storh_err err;
    json_t *got;
    if (queue_claim(c->q, 1, &got, &err))
        harness_die("claim", &err);
    json_array_extend(c->claimed, got);
    json_decref(got);
}

static void one_complete(qone *c, long i)
{
    storh_err err;
    json_t *id = json_pack("[O]", json_object_get(json_array_get(c->claimed, (size_t)i), "id"));
    size_t done;
    if (queue_complete_many(c->q, id, true, &done, &err))
        harness_die("complete", &err);
    json_decref(id);
}

/* Seconds for k appends of len bytes, each fsynced. */
static double limit_appends(int fd, long k, size_t len)
{
    static char line[4096];
    if (len > sizeof line)
        len = sizeof line;
    memset(line, 'x', len);
    double t = 0;
    for (long i = 0; i < k; i++)
        t += append_once_secs(fd, line, len);
    return t;
}

/* n calls of fn in rounds, each beside its limit round; the times add up
 * in c->t_op and c->t_limit. A round whose limit goes first appends the
 * size per call of the round before it (the calls' lines barely vary). */
static void one_by_one(qone *c, long n, qone_fn fn)
{
    c->t_op = c->t_limit = 0;
    size_t per = 0;
    for (long at = 0, k = 0; at < n; at += ROUND, k++) {
        long end = at + ROUND < n ? at + ROUND : n;
        bool limit_first = k % 2 && per;
        if (limit_first)
            c->t_limit += limit_appends(c->limit_fd, end - at, per);
        off_t before = log_size(c->o->work, "jobs");
        double t = harness_now();
        for (long i = at; i < end; i++)
            fn(c, i);
        c->t_op += harness_now() - t;
        per = (size_t)(log_size(c->o->work, "jobs") - before) / (size_t)(end - at);
        if (!limit_first)
            c->t_limit += limit_appends(c->limit_fd, end - at, per);
    }
}

/* enqueue, claim and complete one job at a time, each beside its limit */
static void one_rows(const harness_opts *o, bench_result *r)
{
    long n = o->dataset;
    queue *q;
    storh_err err;
    if (queue_open(o->work, "jobs", true, &q, &err))
        harness_die("queue open", &err);
    char lpath[PATH_MAX];
    fsx_pathf(lpath, NULL, "%s/queue-limit.log", o->work);
    qone c = {.q = q, .o = o, .claimed = json_array()};
    c.limit_fd = open(lpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (c.limit_fd < 0 || fsx_fsync_dir(o->work, NULL))
        harness_die("queue limit file", NULL);
    static const qone_fn fns[3] = {one_enqueue, one_claim, one_complete};
    static const char *const names[3] = {"queue.enqueue", "queue.claim", "queue.complete"};
    static const char *const labels[3] = {"enqueue(), fsync after every event", "claim()",
                                          "complete()"};
    static const char *const lnames[3] = {"limit.queue_enqueue", "limit.queue_claim",
                                          "limit.queue_complete"};
    for (int k = 0; k < 3; k++) {
        one_by_one(&c, n, fns[k]);
        bench_add(r, names[k], n / c.t_op, "jobs/s", "higher", labels[k]);
        char ll[160];
        snprintf(ll, sizeof ll,
                 "limit: each %s's bytes appended and fsynced, in rounds interleaved with the "
                 "calls",
                 names[k] + 6);
        bench_add(r, lnames[k], n / c.t_limit, "jobs/s", "higher", ll);
    }
    close(c.limit_fd);
    json_decref(c.claimed);
    queue_close(q);
}

void suite_queue(const harness_opts *o, bench_result *r)
{
    long n = o->dataset;
    one_rows(o, r);

    double op[3][BULK_PASSES], lim[3][BULK_PASSES], plain[BULK_PASSES];
    check_rows();
    for (int k = 0; k < BULK_PASSES; k++)
        bulk_pass(o, k, op, lim, plain);
    double tenq, tclaim;
    tree_pass(o, &tenq, &tclaim);
    static const char *const names[3] = {"queue.enqueue_many", "queue.claim_many",
                                         "queue.complete_many"};
    static const char *const labels[3] = {
        "enqueueMany() of every job: the body's bytes built per row and read as jobs (the byte "
        "path of POST /v1/queues/{q}/jobs)",
        "claimMany(n), one call: the answer's bytes (the byte path of POST .../claim)",
        "completeMany() of every id, one call: the ids read from the body's bytes (the byte "
        "path of POST .../complete)"};
    static const char *const lnames[3] = {"limit.queue_enqueue_many", "limit.queue_claim_many",
                                          "limit.queue_complete_many"};
    static const char *const llabels[3] = {
        "limit: enqueue_many's bytes staged (create, write, fsync, rename, dir fsync), "
        "appended as the queue appends a batch (writes of 256 KiB, each one's writeback "
        "started), fsync, stage unlinked",
        "limit: claim_many's bytes appended as the queue appends a batch (writes of 256 KiB, "
        "each one's writeback started) + fsync",
        "limit: complete_many's bytes appended as the queue appends a batch (writes of 256 KiB, "
        "each one's writeback started) + fsync"};
    for (int i = 0; i < 3; i++) {
        bench_add(r, names[i], n / median3(op[i]), "jobs/s", "higher", labels[i]);
        bench_add(r, lnames[i], n / median3(lim[i]), "jobs/s", "higher", llabels[i]);
    }
    bench_add(r, "queue.enqueue_many_tree", n / tenq, "jobs/s", "higher",
              "enqueueMany() of jansson rows (the tree API), one pass");
    bench_add(r, "queue.claim_many_tree", n / tclaim, "jobs/s", "higher",
              "claimMany(n) into jansson jobs (the tree API), one pass");
    bench_add(r, "limit.queue_enqueue_many_append", n / median3(plain), "jobs/s", "higher",
              "limit: enqueue_many's bytes appended in one write + fsync (no stage: storh's "
              "syscalls)");
}
