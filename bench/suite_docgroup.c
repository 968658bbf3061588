/* suite_docgroup (bench): group commit: concurrent put() in each sync mode
 * against the disk's per-publish limit, measured back to back. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "suite.h"
#include "docgroup.h"
#include "docstore.h"
#include "fsx.h"

/* ---------- DocStore group commit ---------- */

typedef struct put_worker {
    docstore *ds;
    long n;
    pthread_t th;
} put_worker;

static json_t *record_1k(long i)
{
    static char pad[1001];
    if (!pad[0])
        memset(pad, 'x', sizeof pad - 1);
    return json_pack("{sisssi}", "n", (int)i, "pad", pad, "kind", (int)(i % 10));
}

static void *put_loop(void *arg)
{
    put_worker *w = arg;
    storh_err err;
    for (long i = 0; i < w->n; i++) {
        json_t *d = record_1k(i);
        char id[UUID7_LEN + 1];
        if (docstore_put(w->ds, NULL, d, id, NULL, &err))
            harness_die("put", &err);
        json_decref(d);
    }
    return NULL;
}

/* n puts spread over threads, into a fresh collection; records/s. With
 * gs, the docgroup figures of the run (a delta). */
static double concurrent_puts(const harness_opts *o, const char *name, int threads, int mode,
                              long n, docgroup_stats *gs)
{
    docgroup_stats before;
    docgroup_stats_snapshot(&before);
    docstore *ds;
    storh_err err;
    if (docstore_open(o->work, name, &ds, &err))
        harness_die("open", &err);
    docstore_set_group_sync(ds, mode);
    put_worker w[32];
    double t = harness_now();
    for (int i = 0; i < threads; i++) {
        w[i] = (put_worker){ds, n / threads + (i < n % threads), 0};
        if (pthread_create(&w[i].th, NULL, put_loop, &w[i]) != 0)
            harness_die("thread", NULL);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(w[i].th, NULL);
    double rate = n / (harness_now() - t);
    docstore_close(ds);
    if (gs) {
        docgroup_stats_snapshot(gs);
        gs->groups -= before.groups;
        gs->ops -= before.ops;
        gs->acked -= before.acked;
        gs->syncs -= before.syncs;
    }
    return rate;
}

/* The disk's per-publish limit: create, write 1 KiB, fsync, rename, fsync
 * the directory, one record after the other. */
static double disk_publish_rate(const harness_opts *o, long n)
{
    char dir[PATH_MAX], tmp[PATH_MAX], fin[PATH_MAX];
    fsx_pathf(dir, NULL, "%s/disk", o->work);
    storh_err err;
    if (fsx_mkdirs(dir, false, &err))
        harness_die("mkdir", &err);
    char data[1024];
    memset(data, 'x', sizeof data);
    double t = harness_now();
    for (long i = 0; i < n; i++) {
        fsx_pathf(tmp, NULL, "%s/.%ld.tmp", dir, i);
        fsx_pathf(fin, NULL, "%s/%ld.jsonc", dir, i);
        if (fsx_write_file(tmp, data, sizeof data, true, &err) || fsx_rename(tmp, fin, true, &err))
            harness_die("publish", &err);
    }
    return n / (harness_now() - t);
}

static double per(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

/* One run: the disk's limit, then one thread, then 32 in each mode, back
 * to back, so the ratios compare figures of the same minute. */
void suite_docgroup(const harness_opts *o, bench_result *r)
{
    long n = o->dataset < 4000 ? o->dataset : 4000;
    long n1 = n < 200 ? n : 200; /* the serial runs are the slow ones */
    int mode = docgroup_default_mode();
    double disk = disk_publish_rate(o, n1);
    docgroup_stats g, ge, gf;
    double one = concurrent_puts(o, "one", 1, mode, n1, NULL);
    double dflt = concurrent_puts(o, "dflt", 32, mode, n, &g);
    double each = concurrent_puts(o, "each", 32, DOCGROUP_SYNC_EACH, n, &ge);
    double fs = concurrent_puts(o, "syncfs", 32, DOCGROUP_SYNC_FS, n, &gf);
    bench_add(r, "docgroup.disk_publish", disk, "records/s", "higher",
              "the disk's per-publish limit: create, write, fsync, rename, dir fsync");
    bench_add(r, "docgroup.put_1", one, "records/s", "higher", "put() from one thread");
    bench_add(r, "docgroup.put_32", dflt, "records/s", "higher",
              "put() from 32 threads, grouped (the default --doc-sync)");
    bench_add(r, "docgroup.put_32_fsync", each, "records/s", "higher",
              "put() from 32 threads, temps and directories fsynced in parallel");
    bench_add(r, "docgroup.put_32_syncfs", fs, "records/s", "higher",
              "put() from 32 threads, one syncfs per step of a group");
    bench_add(r, "docgroup.group_size_32", per(g.ops, g.groups), "writes", "higher",
              "writes per group, 32 threads (the default)");
    bench_add(r, "docgroup.syncs_per_write_32", per(g.syncs, g.acked), "syncs", "lower",
              "fsync and syncfs calls per acknowledged write, 32 threads (the default)");
    bench_add(r, "docgroup.syncs_per_write_32_fsync", per(ge.syncs, ge.acked), "syncs", "lower",
              "fsyncs per acknowledged write, 32 threads, parallel fsyncs");
    bench_add(r, "docgroup.syncs_per_write_32_syncfs", per(gf.syncs, gf.acked), "syncs", "lower",
              "syncfs calls per acknowledged write, 32 threads");
    bench_add(r, "docgroup.put_32_vs_1", dflt / one, "x", "higher",
              "put_32 over put_1 in the same run");
    bench_add(r, "docgroup.put_32_vs_disk", dflt / disk, "x", "higher",
              "put_32 over disk_publish in the same run");
}
