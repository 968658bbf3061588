#include "docgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "docstore_int.h"
#include "estats.h"
#include "fault.h"
#include "fsx.h"
#include "wstats.h"

const double docgroup_size_le[DOCGROUP_SIZE_BUCKETS - 1] = {1, 2, 4, 8, 16, 32, 64, 128};
const double docgroup_wait_le[DOCGROUP_WAIT_BUCKETS - 1] = {0.0005, 0.001, 0.002, 0.005, 0.01,
                                                            0.02,   0.05,  0.1,   0.5};

static _Atomic uint64_t st_groups, st_ops, st_acked, st_syncs, st_wait_ns;
static _Atomic uint64_t st_size[DOCGROUP_SIZE_BUCKETS], st_wait[DOCGROUP_WAIT_BUCKETS];

static void add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void docgroup_stats_snapshot(docgroup_stats *out)
{
    memset(out, 0, sizeof *out);
    out->groups = atomic_load_explicit(&st_groups, memory_order_relaxed);
    out->ops = atomic_load_explicit(&st_ops, memory_order_relaxed);
    out->acked = atomic_load_explicit(&st_acked, memory_order_relaxed);
    out->syncs = atomic_load_explicit(&st_syncs, memory_order_relaxed);
    out->wait_sum_s = (double)atomic_load_explicit(&st_wait_ns, memory_order_relaxed) / 1e9;
    for (int i = 0; i < DOCGROUP_SIZE_BUCKETS; i++)
        out->size_bucket[i] = atomic_load_explicit(&st_size[i], memory_order_relaxed);
    for (int i = 0; i < DOCGROUP_WAIT_BUCKETS; i++)
        out->wait_bucket[i] = atomic_load_explicit(&st_wait[i], memory_order_relaxed);
}

/* syncfs reports writeback errors since Linux 5.8; before that it returned
 * 0 after a failed writeback, so only a per-file fsync is safe there. */
static atomic_int default_mode = -1;

void docgroup_set_default_mode(docgroup_sync mode)
{
    atomic_store(&default_mode, (int)mode);
}

docgroup_sync docgroup_default_mode(void)
{
    int m = atomic_load(&default_mode);
    if (m >= 0)
        return (docgroup_sync)m;
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
        (major > 5 || (major == 5 && minor >= 8)))
        m = DOCGROUP_SYNC_AUTO;
    else
        m = DOCGROUP_SYNC_EACH;
    atomic_store(&default_mode, m);
    return (docgroup_sync)m;
}

void docgroup_init(docgroup *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_cond_init(&g->lead_cv, &ca);
    g->gathering = false;
    pthread_condattr_destroy(&ca);
    g->arriving = 0;
    g->nqueued = g->last_size = 0;
    g->head = NULL;
    g->tail = &g->head;
    g->leading = false;
    g->poisoned = 0;
    g->sync_fd = -1;
    g->jobs = NULL;
    g->njobs = g->next_job = g->jobs_left = 0;
    g->mode = docgroup_default_mode();
}

void docgroup_destroy(docgroup *g)
{
    if (g->sync_fd >= 0)
        close(g->sync_fd);
    pthread_cond_destroy(&g->cv);
    pthread_cond_destroy(&g->lead_cv);
    pthread_mutex_destroy(&g->mu);
}

static int poison_error(int errnum, storh_err *err)
{
    return storh_err_sys(err, errnum,
                         "An earlier write or fsync of this collection failed; its writes are "
                         "refused until storhd is restarted");
}

/* Under g->mu. */
static void poison_locked(docgroup *g, const char *coll_dir, int errnum)
{
    if (g->poisoned)
        return;
    g->poisoned = errnum;
    const char *slash = strrchr(coll_dir, '/');
    wstats_poisoned(WSTATS_DOC, slash ? slash + 1 : coll_dir, errnum);
}

void docgroup_poison(docgroup *g, const char *coll_dir, int errnum)
{
    pthread_mutex_lock(&g->mu);
    poison_locked(g, coll_dir, errnum);
    pthread_mutex_unlock(&g->mu);
}

int docgroup_check(docgroup *g, storh_err *err)
{
    pthread_mutex_lock(&g->mu);
    int p = g->poisoned;
    pthread_mutex_unlock(&g->mu);
    return p ? poison_error(p, err) : 0;
}

#define GROUP_MAX_DIRS 258 /* 256 shards, plus room for odd layouts */

/* One op under the collection lock. 0, an op-only failure (in op->rc), or a
 * group failure (returned, err filled: the disk failed, something may be
 * half-applied). */
static int apply(docstore *ds, docgroup_op *op, docindex_batch *ib, storh_err *err)
{
    json_t *old = NULL;
    bool indexed = ib != NULL;
    if (indexed && !op->del)
        op->rc = docindex_batch_check_unique(ib, op->id, op->data, err);
    if (indexed && !op->rc)
        op->rc = docstore_old_record(ds, op->id, &old, err);
    if (op->rc == STORH_EIO || op->rc == STORH_ENOSPC)
        return op->rc; /* the disk failing fails the group */
    if (op->rc) {      /* a conflict, a corrupt record: this op alone */
        if (op->err)
            *op->err = *err;
        return 0;
    }
    int rc = 0;
    if (op->del) {
        if (unlink(op->final) == 0) {
            op->existed = true;
            estats_add(ESTAT_DOC_DELETE, 1);
        } else if (errno != ENOENT && errno != ENOTDIR) {
            rc = storh_err_sys(err, errno, "Could not delete storage record: %s", op->id);
        }
    } else {
        op->existed = access(op->final, F_OK) == 0;
        /* the cache's file state: the temp's inode, taken after the rename
         * (which changes its ctime) through a descriptor, so it is the file
         * this op published whatever happens to the path */
        int fd = ds->cache && op->bytes ? open(op->tmp, O_RDONLY | O_CLOEXEC) : -1;
        rc = fsx_rename(op->tmp, op->final, false, err);
        if (!rc) {
            op->applied = true;
            estats_add(ESTAT_DOC_PUT, 1);
            op->published = fd >= 0 && fstat(fd, &op->st) == 0;
        }
        if (fd >= 0)
            close(fd);
    }
    if (ds->cache)
        rcache_forget(ds->cache, op->id);
    if (!rc && indexed && (op->applied || (op->del && op->existed))) {
        rc = docindex_batch_update(ib, op->id, old, op->del ? NULL : op->data, err);
        if (rc && rc != STORH_EIO && rc != STORH_ENOSPC) {
            /* not the disk failing (a corrupt index file): this op fails
             * with its record applied and its index entries not, as a single
             * write did before groups; _verify reports it, _repair mends it */
            op->rc = rc;
            if (op->err)
                *op->err = *err;
            rc = 0;
        }
    }
    json_decref(old);
    return rc;
}

/* fsync of a file or directory by path: the temps were closed when written
 * (an fd opened later still reports a writeback error nobody saw yet). */
static int sync_path(const char *path, storh_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return storh_err_sys(err, errno, "Could not open for sync: %s", path);
    int rc = 0;
    if (fsync(fd) != 0)
        rc = storh_err_sys(err, errno, "Could not sync: %s", path);
    close(fd);
    return rc;
}

/* Runs queued fsyncs until none is left to take; g->mu held. */
static void run_jobs(docgroup *g)
{
    while (g->next_job < g->njobs) {
        size_t j = g->next_job++;
        pthread_mutex_unlock(&g->mu);
        storh_err e;
        int rc = sync_path(g->jobs[j], &e);
        pthread_mutex_lock(&g->mu);
        if (rc && !g->jobs_rc) {
            g->jobs_rc = rc;
            g->jobs_err = e;
        }
        if (--g->jobs_left == 0)
            pthread_cond_signal(&g->lead_cv);
    }
}

/* fsyncs the paths in parallel: every thread waiting on the group takes
 * some (on ext4 concurrent fsyncs share journal commits and their cache
 * flushes merge, where one after the other each pays its own). */
static int sync_parallel(docgroup *g, const char **paths, size_t n, storh_err *err)
{
    pthread_mutex_lock(&g->mu);
    g->jobs = paths;
    g->njobs = g->jobs_left = n;
    g->next_job = 0;
    g->jobs_rc = 0;
    pthread_cond_broadcast(&g->cv);
    run_jobs(g);
    while (g->jobs_left)
        pthread_cond_wait(&g->lead_cv, &g->mu);
    int rc = g->jobs_rc;
    if (rc && err)
        *err = g->jobs_err;
    g->jobs = NULL;
    g->njobs = g->next_job = 0;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

/* Remembers the directory d for the group's directory fsyncs (fsyncs it at
 * once when the list is full). */
static int add_dir(char (*dirs)[PATH_MAX], size_t *ndirs, const char *d, uint64_t *syncs,
                   storh_err *err)
{
    for (size_t j = 0; j < *ndirs; j++)
        if (!strcmp(dirs[j], d))
            return 0;
    if (*ndirs < GROUP_MAX_DIRS) {
        memcpy(dirs[(*ndirs)++], d, PATH_MAX);
        return 0;
    }
    (*syncs)++;
    return fsx_fsync_dir(d, err);
}

/* rc, or the failed sync a fault test injects for this collection
 * (STORH_FAULT_FAIL=fsync:name, as gcommit does for logs and queues). */
static int injected(const docstore *ds, int rc, storh_err *err)
{
    if (rc == 0 && fault_fails("fsync", ds->dir))
        rc = storh_err_sys(err, EIO, "Could not sync the group's files of %s", ds->dir);
    return rc;
}

/* The durability step of n files (temps written, lines appended): one
 * syncfs, or their fsyncs in parallel. */
static int sync_files(docstore *ds, docgroup *g, bool fs, const char **paths, size_t n,
                      uint64_t *syncs, storh_err *err)
{
    if (!n)
        return 0;
    if (fs) {
        (*syncs)++;
        if (syncfs(g->sync_fd) != 0)
            return storh_err_sys(err, errno, "Could not sync staged files of %s", ds->dir);
        estats_add(ESTAT_FSYNC_FS, 1);
        return injected(ds, 0, err);
    }
    *syncs += n;
    estats_add(ESTAT_FSYNC_FILE, n);
    return injected(ds, sync_parallel(g, paths, n, err), err);
}

/* Under the lock, after the records' renames: the group's index changes
 * become durable in one step, then replace the entry files (their
 * directories join dirs for the group's directory step). */
static int publish_index(docstore *ds, docgroup *g, docindex_batch *ib, bool fs,
                         char (*dirs)[PATH_MAX], size_t *ndirs, uint64_t *syncs, storh_err *err)
{
    const char **files;
    size_t nfiles, nidirs;
    char(*idirs)[PATH_MAX];
    int rc = docindex_batch_stage(ib, &files, &nfiles, err);
    if (!rc)
        rc = sync_files(ds, g, fs, files, nfiles, syncs, err);
    if (!rc)
        fault_point("docgroup.index.staged");
    if (!rc)
        rc = docindex_batch_publish(ib, &idirs, &nidirs, err);
    for (size_t j = 0; !rc && j < nidirs; j++)
        rc = add_dir(dirs, ndirs, idirs[j], syncs, err);
    return rc;
}

/* After a durable group: its puts' bytes go to the record cache with the
 * state of the files they were published as, checked once against the path
 * (a rewrite since, by anyone, changes that state), so the first read of a
 * record just written needs no stat where the watch serves. */
static void remember(docstore *ds, docgroup_op *ops)
{
    for (docgroup_op *op = ops; op; op = op->next) {
        if (!op->published || op->rc)
            continue;
        rcache_blob *b = rcache_blob_new(op->bytes, op->len);
        if (b)
            rcache_put_bytes(ds->cache, op->id, b, &op->st, NULL, op->final);
    }
}

/* The leader's work for the ops of one group, in queue order. 0, or a group
 * failure (err filled); *poison tells whether it may have left something
 * half-applied or in doubt (a failure before the barrier or the lock did
 * not). */
static int publish(docstore *ds, docgroup *g, docgroup_op *ops, uint64_t *syncs, bool *poison,
                   storh_err *err)
{
    size_t nops = 0, nputs = 0;
    for (docgroup_op *op = ops; op; op = op->next, nops++)
        nputs += !op->del;
    char(*dirs)[PATH_MAX] = malloc(sizeof *dirs * GROUP_MAX_DIRS);
    const char **paths = malloc(sizeof *paths * (nops > GROUP_MAX_DIRS ? nops : GROUP_MAX_DIRS));
    if (!dirs || !paths) {
        free(dirs);
        free(paths);
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    }
    bool fs = g->mode == DOCGROUP_SYNC_FS ||
              (g->mode == DOCGROUP_SYNC_AUTO && nops >= DOCGROUP_SYNCFS_MIN);
    /* every temp durable before any rename: one barrier for the group */
    int rc = 0;
    if (nputs) {
        size_t n = 0;
        for (docgroup_op *op = ops; op; op = op->next)
            if (!op->del)
                paths[n++] = op->tmp;
        rc = sync_files(ds, g, fs, paths, n, syncs, err);
    }
    /* a failed fsync is reported once: later temps may be gone too */
    *poison = rc != 0;
    fsx_lock l;
    if (rc || (rc = docstore_lock(ds, &l, err))) {
        free(dirs);
        free(paths);
        return rc;
    }
    docindex_batch *ib = NULL;
    if (docindex_active(&ds->ix))
        rc = docindex_batch_begin(&ds->ix, &ib, err);
    size_t ndirs = 0;
    for (docgroup_op *op = ops; !rc && op; op = op->next) {
        rc = apply(ds, op, ib, err);
        if (rc || !(op->applied || (op->del && op->existed)))
            continue;
        char d[PATH_MAX];
        fsx_dirname(op->final, d, sizeof d);
        rc = add_dir(dirs, &ndirs, d, syncs, err);
    }
    if (!rc && ib)
        rc = publish_index(ds, g, ib, fs, dirs, &ndirs, syncs, err);
    docindex_batch_free(ib);
    if (fs && ndirs) { /* one barrier for every touched directory */
        if (syncfs(g->sync_fd) != 0 && !rc)
            rc = storh_err_sys(err, errno, "Could not sync renamed records of %s", ds->dir);
        rc = injected(ds, rc, err);
        estats_add(ESTAT_FSYNC_FS, 1);
        (*syncs)++;
    } else if (ndirs && !rc) {
        for (size_t j = 0; j < ndirs; j++)
            paths[j] = dirs[j];
        rc = injected(ds, sync_parallel(g, paths, ndirs, err), err);
        estats_add(ESTAT_FSYNC_DIR, ndirs);
        *syncs += ndirs;
    }
    docstore_unlock(ds, &l);
    free(dirs);
    free(paths);
    *poison = rc != 0;
    if (!rc && ds->cache)
        remember(ds, ops);
    return rc;
}

static void account(docgroup_op *ops, uint64_t syncs, uint64_t end)
{
    uint64_t n = 0, acked = 0;
    for (docgroup_op *op = ops; op; op = op->next) {
        n++;
        acked += op->rc == 0;
        uint64_t w = end > op->queued_ns ? end - op->queued_ns : 0;
        add(&st_wait_ns, w);
        int b = 0;
        while (b < DOCGROUP_WAIT_BUCKETS - 1 && (double)w / 1e9 > docgroup_wait_le[b])
            b++;
        add(&st_wait[b], 1);
    }
    int b = 0;
    while (b < DOCGROUP_SIZE_BUCKETS - 1 && (double)n > docgroup_size_le[b])
        b++;
    add(&st_size[b], 1);
    add(&st_groups, 1);
    add(&st_ops, n);
    add(&st_acked, acked);
    add(&st_syncs, syncs);
}

/* The descriptor the group's syncfs(2) goes through, opened (g->mu held)
 * before the first file of the group is written: syncfs reports the
 * writeback errors since this open. The storage root, as the collection
 * may not exist yet. */
static int open_sync_fd(docgroup *g, const char *dir, storh_err *err)
{
    if (g->mode == DOCGROUP_SYNC_EACH || g->sync_fd >= 0)
        return 0;
    int rc = 0;
    char root[PATH_MAX];
    fsx_dirname(dir, root, sizeof root);
    g->sync_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g->sync_fd < 0 && errno == ENOENT && (rc = fsx_mkdirs(root, true, err)) == 0)
        g->sync_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* a new root */
    if (!rc && g->sync_fd < 0)
        rc = storh_err_sys(err, errno, "Could not open %s", root);
    return rc;
}

int docgroup_arrive(docgroup *g, const char *dir, storh_err *err)
{
    pthread_mutex_lock(&g->mu);
    int rc = open_sync_fd(g, dir, err);
    if (!rc)
        g->arriving++;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

static bool gathered(const docgroup *g)
{
    return g->arriving <= 0 && g->nqueued >= g->last_size;
}

void docgroup_leave(docgroup *g)
{
    pthread_mutex_lock(&g->mu);
    g->arriving--;
    if (g->gathering && gathered(g))
        pthread_cond_signal(&g->lead_cv);
    pthread_mutex_unlock(&g->mu);
}

/* Waits, g->mu held, until no request is writing its temp and as many ops
 * are queued as the last group had (its writers are likely coming back), or
 * DOCGROUP_GATHER_NS passed. A lone writer never waits. The leader waits on
 * a condition of its own, so queueing wakes no follower. */
static void gather(docgroup *g)
{
    if (gathered(g))
        return;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_nsec += DOCGROUP_GATHER_NS;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }
    g->gathering = true;
    while (!gathered(g) && pthread_cond_timedwait(&g->lead_cv, &g->mu, &dl) == 0)
        ;
    g->gathering = false;
}

int docgroup_commit(docstore *ds, docgroup_op *op)
{
    docgroup *g = &ds->grp;
    op->rc = 0;
    op->existed = op->applied = op->done = op->published = false;
    op->next = NULL;
    op->queued_ns = now_ns();
    pthread_mutex_lock(&g->mu);
    /* a delete writes no temp, so never arrived: a group of deletes alone
     * (the first writes after an open) still syncs its index files and
     * directories through the descriptor */
    int orc = open_sync_fd(g, ds->dir, op->err);
    if (orc) { /* a delete's: an op that arrived found the descriptor open */
        pthread_mutex_unlock(&g->mu);
        return op->rc = orc;
    }
    *g->tail = op;
    g->tail = &op->next;
    g->nqueued++;
    if (op->arrived)
        g->arriving--;
    if (g->gathering && gathered(g))
        pthread_cond_signal(&g->lead_cv);
    while (!op->done) {
        if (g->next_job < g->njobs) { /* help the leader with its directory fsyncs */
            run_jobs(g);
            continue;
        }
        if (g->leading) {
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        /* lead: wait a moment for the requests still writing their temps,
         * else the first one back after an answer would take a group of
         * one and split the writers in two cohorts; then take every op
         * queued, ours included */
        g->leading = true;
        gather(g);
        docgroup_op *ops = g->head;
        g->last_size = g->nqueued;
        g->head = NULL;
        g->tail = &g->head;
        g->nqueued = 0;
        int poisoned = g->poisoned;
        pthread_mutex_unlock(&g->mu);
        storh_err gerr;
        uint64_t syncs = 0;
        bool poison = false;
        int rc =
            poisoned ? poison_error(poisoned, &gerr) : publish(ds, g, ops, &syncs, &poison, &gerr);
        for (docgroup_op *o = ops; rc && o; o = o->next) { /* the group fails as one */
            o->rc = rc;
            if (o->err)
                *o->err = gerr;
        }
        account(ops, syncs, now_ns());
        pthread_mutex_lock(&g->mu);
        if (poison)
            poison_locked(g, ds->dir, rc == STORH_ENOSPC ? ENOSPC : EIO);
        if (rc == 0 && syncs > 0)
            wstats_batch(WSTATS_DOC, g->last_size);
        for (docgroup_op *o = ops; o;) {
            docgroup_op *next = o->next; /* o belongs to its thread once done */
            o->done = true;
            o = next;
        }
        g->leading = false;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return op->rc;
}
