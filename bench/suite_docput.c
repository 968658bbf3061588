/* suite_docput (bench): doc.put and its limit, limit.doc_put, timed in
 * turns. The limit is what a single durable put cannot do without in the
 * kernel, for the same bytes in the same shard layout: the record's temp
 * created in its shard, written, fsynced, closed, renamed over its name,
 * the shard directory fsynced; and where the put's shard is new, the shard
 * made and its parent fsynced first (a new collection's first puts make
 * most of the 256 shards: a quarter of the puts at 1,000 records, 2.5% at
 * 10,000). */
#include "suite_docput.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fsx.h"

typedef struct put_limit {
    char data[PATH_MAX];
    bool shard[256];
    char (*ids)[UUID7_LEN + 1]; /* the limit's own ids: shards as random as the puts' */
    buf *bytes;                 /* the record files' bytes, made before the clock */
} put_limit;

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c - 'a' + 10;
}

static void fsync_path(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) || close(fd))
        harness_die("put limit dir fsync", NULL);
}

/* Seconds for the limit's records at..end. */
static double limit_round(put_limit *l, long at, long end)
{
    char shard[PATH_MAX], tmp[PATH_MAX], fin[PATH_MAX];
    double t = harness_now();
    for (long i = at; i < end; i++) {
        const char *id = l->ids[i];
        int sh = hexval(id[24]) * 16 + hexval(id[25]);
        fsx_pathf(shard, NULL, "%s/%c%c", l->data, id[24], id[25]);
        if (!l->shard[sh]) {
            if (mkdir(shard, 0755) && errno != EEXIST)
                harness_die("put limit mkdir", NULL);
            fsync_path(l->data);
            l->shard[sh] = true;
        }
        fsx_pathf(tmp, NULL, "%s/.%s.tmp", shard, id);
        fsx_pathf(fin, NULL, "%s/%s.jsonc", shard, id);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || fsx_write_all(fd, l->bytes[i].data, l->bytes[i].len) || fsync(fd) ||
            close(fd) || rename(tmp, fin))
            harness_die("put limit publish", NULL);
        fsync_path(shard);
    }
    return harness_now() - t;
}

/* Seconds for the puts of records at..end; their ids into ids. */
static double put_round(docstore *ds, char (*ids)[UUID7_LEN + 1], long at, long end)
{
    storh_err err;
    double t = harness_now();
    for (long i = at; i < end; i++) {
        json_t *d = harness_record(i);
        if (docstore_put(ds, NULL, d, ids[i], NULL, &err))
            harness_die("put", &err);
        json_decref(d);
    }
    return harness_now() - t;
}

void suite_docput(const harness_opts *o, docstore *ds, char (*ids)[UUID7_LEN + 1], bench_result *r)
{
    enum { ROUND = 50 };
    long n = o->dataset;
    put_limit l = {.ids = harness_make_ids(n, HARNESS_BASE_MS)};
    l.bytes = calloc((size_t)n, sizeof *l.bytes);
    if (!l.ids || !l.bytes)
        harness_die("put limit", NULL);
    for (long i = 0; i < n; i++) {
        json_t *d = harness_record(i);
        if (docstore_encode_record(&l.bytes[i], l.ids[i], d, NULL))
            harness_die("put limit encode", NULL);
        json_decref(d);
    }
    char dir[PATH_MAX];
    fsx_pathf(dir, NULL, "%s/put-limit", o->work);
    fsx_pathf(l.data, NULL, "%s/data", dir);
    if (fsx_mkdirs(l.data, true, NULL))
        harness_die("put limit dir", NULL);
    double tput = 0, tlim = 0;
    for (long at = 0, k = 0; at < n; at += ROUND, k++) {
        long end = at + ROUND < n ? at + ROUND : n;
        if (k % 2) {
            tlim += limit_round(&l, at, end);
            tput += put_round(ds, ids, at, end);
        } else {
            tput += put_round(ds, ids, at, end);
            tlim += limit_round(&l, at, end);
        }
    }
    bench_add(r, "doc.put", n / tput, "records/s", "higher", "put(), one durable file per record");
    bench_add(r, "limit.doc_put", n / tlim, "records/s", "higher",
              "limit: each put's record file created in its shard, written, fsynced, renamed, "
              "shard fsynced (a new shard made and its parent fsynced first), interleaved with "
              "the puts");
    harness_clean(dir);
    for (long i = 0; i < n; i++)
        buf_free(&l.bytes[i]);
    free(l.bytes);
    free(l.ids);
}
