/* docgroup: group commit of a collection's single-document writes (PUT with
 * or without id, DELETE). Each request writes its temp file as it arrives and
 * queues an op; one of the waiting threads becomes the leader and publishes
 * every op queued so far in one step: the durability barrier of the temps,
 * the collection lock (mutex + flock, so PHP storh still excludes), each
 * op's own checks, rename or unlink and index update in queue order, one
 * fsync per touched directory, unlock; only then are the ops answered, and
 * a durable group's puts are remembered by the collection's record cache
 * (their bytes and the state of their files after the rename), so a get
 * after a put is a validated hit; a failed group leaves nothing cached.
 *
 *   queued --leader takes the queue--> [barrier, lock, apply in order,
 *                                        dir fsyncs, unlock] --> done
 *
 * An op's own failure (unique conflict, corrupt old record or index file)
 * fails that op alone. A failed barrier, rename, unlink or directory fsync,
 * or the disk failing a read or write (EIO, ENOSPC), fails every op of the
 * group and poisons the store: after a failed fsync
 * the kernel may have dropped dirty pages, so no later write is accepted
 * until storhd restarts (as gcommit does for logs). */
#ifndef STORH_DOCGROUP_H
#define STORH_DOCGROUP_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "storh_err.h"
#include "uuid7.h"

struct docstore;

/* How the temps of a group become durable before their renames. */
typedef enum {
    DOCGROUP_SYNC_EACH, /* the group's threads fsync its temps, then its directories,
                           in parallel */
    DOCGROUP_SYNC_FS,   /* temps unsynced; the leader syncfs(2)es once per group, and
                           once more instead of the directory fsyncs */
    DOCGROUP_SYNC_AUTO, /* SYNC_FS for a group of DOCGROUP_SYNCFS_MIN writes or more,
                           else SYNC_EACH: syncfs also writes back everything else
                           dirty on the filesystem, which a small group should not wait
                           for, while a big one saves many fsyncs (and their CPU) */
} docgroup_sync;
#define DOCGROUP_SYNCFS_MIN 4

typedef struct docgroup_op {
    bool del;             /* DELETE; otherwise a put of tmp to final */
    const char *id, *tmp; /* tmp: put only */
    char final[PATH_MAX]; /* the record path */
    const json_t *data;   /* put: the new data (indexes, unique checks) */
    const char *bytes;    /* put: its canonical bytes for the record cache, or NULL */
    size_t len;
    struct stat st;           /* the published file's state, when published is set */
    bool published;           /* renamed and fstat'ed after the rename: cache it */
    int rc;                   /* out: 0 or a STORH_E* code, err filled */
    storh_err *err;           /* the op's own error */
    bool existed, applied;    /* out: a record was there; tmp was renamed */
    bool done;                /* set by the leader when answered */
    bool arrived;             /* the caller called docgroup_arrive first */
    uint64_t queued_ns;       /* monotonic time it was queued */
    struct docgroup_op *next; /* queue link */
} docgroup_op;

typedef struct docgroup {
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* followers: their op done, or fsyncs to take */
    pthread_cond_t lead_cv; /* the leader: gathered, or its fsyncs done */
    bool gathering;
    docgroup_op *head, **tail; /* ops waiting for the next leader */
    bool leading;
    int arriving;              /* requests writing their temps, not queued yet */
    size_t nqueued, last_size; /* ops queued; ops in the last group */
    int poisoned;              /* errno of the failure that poisoned the store, 0 if none */
    int sync_fd;               /* on the collection, for syncfs; opened at the first group */
    /* the leader's fsyncs (temps, then directories), taken by any waiting
     * thread */
    const char **jobs;
    size_t njobs, next_job, jobs_left;
    int jobs_rc;
    storh_err jobs_err;
    docgroup_sync mode;
} docgroup;

/* What a new collection uses: SYNC_AUTO where syncfs reports writeback
 * errors (Linux >= 5.8; measured in README "Group commit of document
 * writes"); else SYNC_EACH. */
docgroup_sync docgroup_default_mode(void);
/* Overrides it for every collection opened later (storhd --doc-sync). */
void docgroup_set_default_mode(docgroup_sync mode);
void docgroup_init(docgroup *g);
void docgroup_destroy(docgroup *g);
/* How long a new leader waits at most for requests still writing their
 * temps to join its group. */
#define DOCGROUP_GATHER_NS 2000000
/* A put announces itself before it writes its temp (so a leader can wait
 * for it), and then either queues its op (arrived = true) or leaves. */
int docgroup_arrive(docgroup *g, const char *coll_dir, storh_err *err);
void docgroup_leave(docgroup *g);
/* Queues op and blocks until a leader answered it: op->rc (also returned)
 * with op->err filled on failure. */
int docgroup_commit(struct docstore *ds, docgroup_op *op);
/* 0, or the poison error. */
int docgroup_check(docgroup *g, storh_err *err);
/* Poisons the store of coll_dir (no-op when it is already): a failure left
 * something on disk only its next open can finish (a bulk kept for it). */
void docgroup_poison(docgroup *g, const char *coll_dir, int errnum);

/* Process-wide figures for /metrics (relaxed counters). */
#define DOCGROUP_SIZE_BUCKETS 9 /* 1 2 4 8 16 32 64 128 +Inf */
#define DOCGROUP_WAIT_BUCKETS 10
typedef struct docgroup_stats {
    uint64_t groups, ops, acked; /* groups published, ops in them, ops answered 2xx */
    uint64_t syncs;              /* fsyncs and syncfs calls that made the groups durable */
    uint64_t size_bucket[DOCGROUP_SIZE_BUCKETS]; /* not cumulative */
    uint64_t wait_bucket[DOCGROUP_WAIT_BUCKETS]; /* not cumulative */
    double wait_sum_s;
} docgroup_stats;
extern const double docgroup_size_le[DOCGROUP_SIZE_BUCKETS - 1];
extern const double docgroup_wait_le[DOCGROUP_WAIT_BUCKETS - 1];
void docgroup_stats_snapshot(docgroup_stats *out);

#endif
