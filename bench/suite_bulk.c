/* suite_bulk (bench): the bulk durable figures (doc.put_stream,
 * doc.import_jsonl, and the batches of mirror.pull) and their limit,
 * limit.bulk_publish: the least a durable bulk of N record files can do,
 * timed batch for batch next to them, interleaved, so both see the same
 * disk and the same inode allocator (see bulk_limit_batch). */
#include "suite_bulk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "docstore.h"
#include "fsx.h"
#include "suite.h"

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c - 'a' + 10;
}

/* A descriptor on the record shard of id in a fresh directory, the shard
 * made on first use (as a bulk into a new collection makes them). */
static int shard_fd(int data_fd, const char *id, int *fds)
{
    int sh = (hexval(id[24]) * 16 + hexval(id[25])) & 255;
    if (fds[sh] < 0) {
        char name[3] = {id[24], id[25], 0};
        if (mkdirat(data_fd, name, 0755) && errno != EEXIST)
            harness_die("bulk limit mkdir", NULL);
        fds[sh] = openat(data_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fds[sh] < 0)
            harness_die("bulk limit open", NULL);
    }
    return fds[sh];
}

double bulk_limit_batch(const char *dir, long n)
{
    /* the records' bytes, ids and names are made before the clock: the
     * limit is the file system's work alone */
    char(*ids)[UUID7_LEN + 1] = harness_make_ids(n, HARNESS_BASE_MS);
    buf *bytes = calloc((size_t)n, sizeof *bytes);
    if (!ids || !bytes)
        harness_die("bulk limit", NULL);
    for (long i = 0; i < n; i++) {
        json_t *d = harness_record(i);
        if (docstore_encode_record(&bytes[i], ids[i], d, NULL))
            harness_die("bulk limit encode", NULL);
        json_decref(d);
    }
    char data[PATH_MAX], tmp[64], fin[64];
    fsx_pathf(data, NULL, "%s/data", dir);
    int fds[256];
    for (int i = 0; i < 256; i++)
        fds[i] = -1;
    double t = harness_now();
    if (mkdir(dir, 0755) || mkdir(data, 0755))
        harness_die("bulk limit mkdir", NULL);
    int sync_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int data_fd = open(data, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sync_fd < 0 || data_fd < 0)
        harness_die("bulk limit open", NULL);
    /* N creates + writes + closes, each temp in its record's shard, by
     * name in a descriptor on it (no path walk) */
    for (long i = 0; i < n; i++) {
        snprintf(tmp, sizeof tmp, ".%s.tmp", ids[i]);
        int fd = openat(shard_fd(data_fd, ids[i], fds), tmp,
                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, bytes[i].data, bytes[i].len) != (ssize_t)bytes[i].len || close(fd))
            harness_die("bulk limit write", NULL);
    }
    /* every temp durable with one barrier, then the renames, then one
     * barrier for every directory they touched (cheaper here than one
     * fsync per shard directory) */
    if (syncfs(sync_fd))
        harness_die("bulk limit syncfs", NULL);
    for (long i = 0; i < n; i++) {
        int sfd = shard_fd(data_fd, ids[i], fds);
        snprintf(tmp, sizeof tmp, ".%s.tmp", ids[i]);
        snprintf(fin, sizeof fin, "%s.jsonc", ids[i]);
        if (renameat(sfd, tmp, sfd, fin))
            harness_die("bulk limit rename", NULL);
    }
    if (syncfs(sync_fd))
        harness_die("bulk limit syncfs", NULL);
    double el = harness_now() - t;
    for (int i = 0; i < 256; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    close(data_fd);
    close(sync_fd);
    for (long i = 0; i < n; i++)
        buf_free(&bytes[i]);
    free(bytes);
    free(ids);
    return el;
}

/* One putStream() batch of the dataset into a fresh collection: seconds. */
static double put_stream_batch(const harness_opts *o, const char *coll)
{
    docstore *ds;
    docstore_stage *st;
    storh_err err;
    if (docstore_open(o->work, coll, &ds, &err))
        harness_die("open", &err);
    suite_service_cache(o, ds); /* a bulk's rows stay in it, as the service's */
    double t = harness_now();
    docstore_stage_begin(ds, &st, NULL);
    for (long i = 0; i < o->dataset; i++) {
        json_t *d = harness_record(i);
        char id[UUID7_LEN + 1];
        if (docstore_stage_put(st, NULL, d, id, &err))
            harness_die("stage", &err);
        json_decref(d);
    }
    if (docstore_stage_commit(st, NULL, &err))
        harness_die("commit", &err);
    double el = harness_now() - t;
    docstore_close(ds);
    return el;
}

/* One importJsonl() of the file at jsonl into a fresh collection: seconds;
 * *rows = the rows it imported. */
static double import_batch(const harness_opts *o, const char *coll, const char *jsonl, long *rows)
{
    docstore *imp;
    docstore_stage *st;
    storh_err err;
    if (docstore_open(o->work, coll, &imp, &err))
        harness_die("open", &err);
    suite_service_cache(o, imp);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    *rows = 0;
    double t = harness_now();
    FILE *f = fopen(jsonl, "r");
    if (!f)
        harness_die("import open", NULL);
    docstore_stage_begin(imp, &st, NULL);
    while ((len = getline(&line, &cap, f)) > 0) {
        char id[UUID7_LEN + 1];
        if (docstore_stage_import_line(st, line, (size_t)len, id, &err))
            harness_die("import", &err);
        *rows += id[0] != '\0';
    }
    if (docstore_stage_commit(st, NULL, &err))
        harness_die("import commit", &err);
    double el = harness_now() - t;
    fclose(f);
    free(line);
    docstore_close(imp);
    return el;
}

void suite_bulk_doc(const harness_opts *o, bench_result *r, const char *jsonl)
{
    double lim[BULK_BATCHES], put[BULK_BATCHES], imp[BULK_BATCHES];
    long n = o->dataset, rows = 0;
    for (int b = 0; b < BULK_BATCHES; b++)
        /* each takes the first place once: the first creates after a
         * clean-up pay for the inodes it freed (the file system skips
         * recently deleted inodes, one lookup each, until it reuses them) */
        for (int k = 0; k < 3; k++) {
            char name[64], dir[PATH_MAX];
            switch ((b + k) % 3) {
            case 0:
                snprintf(name, sizeof name, "bulk-limit-%d", b);
                fsx_pathf(dir, NULL, "%s/%s", o->work, name);
                lim[b] = n / bulk_limit_batch(dir, n);
                break;
            case 1:
                snprintf(name, sizeof name, "streamed-%d", b);
                put[b] = n / put_stream_batch(o, name);
                break;
            default:
                snprintf(name, sizeof name, "imported-%d", b);
                double el = import_batch(o, name, jsonl, &rows);
                if (rows != n)
                    harness_die("import: the export is not the dataset", NULL);
                imp[b] = rows / el;
            }
        }
    bench_add(r, "limit.bulk_publish", harness_median(lim, BULK_BATCHES), "records/s", "higher",
              "limit: N creates + writes into the record shards, syncfs, N renames, syncfs "
              "(median batch)");
    bench_add(r, "doc.put_stream", harness_median(put, BULK_BATCHES), "records/s", "higher",
              "putStream() bulk insert (median batch)");
    bench_add(r, "doc.import_jsonl", harness_median(imp, BULK_BATCHES), "records/s", "higher",
              "importJsonl() (median batch)");
}
