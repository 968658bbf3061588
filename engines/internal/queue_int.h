/* queue_int: the private layout of a queue (struct queue, its in-memory
 * job state) and the helpers its modules share: queue_state.c (the state
 * machine, no files), queue.c (open, replay, operations), queue_events.c
 * (the event lines an operation writes and the notes it applies them
 * from), queue_bytes.c (the byte path) and queue_maint.c (counts, stats,
 * verify, repair).
 * Included only by those files. */
#ifndef STORH_QUEUE_INT_H
#define STORH_QUEUE_INT_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "fsx.h"
#include "gcommit.h"
#include "idmap.h"
#include "queue.h"

enum { JOB_GONE = 0, JOB_PENDING, JOB_PROCESSING, JOB_DONE };

/* How many jobs ahead a walk over many of them (a claim, a complete, the
 * apply of a batch) prefetches their map slots: enough to overlap the
 * cache misses of a table bigger than the cache, few enough that a small
 * operation computes no hash it does not use. */
enum { QUEUE_AHEAD = 8 };

/* The most an operation's line buffer keeps between operations: a typical
 * batch's lines (1,000 jobs of 150 bytes), not a big one's, for every
 * open queue of a many-tenant root. */
#define QUEUE_BATCH_KEEP ((size_t)256 << 10)

/* A job's payload is held one of two ways: as the canonical bytes of an
 * object (raw: what its enqueue line carried, reccanon.h), which a claim
 * copies as they are, or as a tree (payload) for any other payload. */
typedef struct job {
    uint8_t state;
    uint32_t rawlen;
    int64_t ts;      /* claim time (processing) or completion time (done) */
    json_t *payload; /* owned; NULL once dropped or when raw holds it */
    char *raw;       /* owned, NUL-ended; NULL once dropped or when payload holds it */
    uint64_t seq;    /* position of the latest enqueue/requeue */
    uint64_t mark;   /* the complete batch that last named it (qstate.mark) */
} job;

typedef struct order_ent {
    char id[UUID7_LEN];
    uint64_t seq;
} order_ent;

typedef struct qstate {
    idmap jobs;
    order_ent *order; /* claim order; stale entries are skipped lazily */
    size_t head, n, cap;
    uint64_t seq;
    uint64_t mark; /* the latest complete batch: its duplicates are skipped */
    size_t pending, processing, done;
} qstate;

typedef struct bad_ev {
    uint64_t off, len;
    long line;
    char msg[96];
} bad_ev;

struct queue {
    char dir[PATH_MAX];
    char log[PATH_MAX];
    pthread_mutex_t mu;
    fsx_lock lock;
    int fd;
    uint64_t consumed; /* bytes of queue.log applied to st */
    long lines;        /* whole lines consumed */
    qstate st;
    bad_ev *bad;
    size_t nbad;
    gcommit gc;
    /* the events of the running operation, applied as they are instead of
     * being decoded again from the lines written (with_lock_staged) */
    struct own_event *own;
    size_t nown, capown, nevents;
    bool own_failed;
    buf ev;    /* scratch: the event being encoded */
    buf batch; /* an operation's lines: the last one's memory, kept (up to
                * QUEUE_BATCH_KEEP bytes) for the next; used under mu */
    /* the running operation's lines already appended to queue.log while it
     * encodes the rest (queue__spill; an unstaged one only), and the errno
     * of a spill that failed */
    bool spill_on;
    size_t spilled;
    int spill_err;
    /* a claim's new st.head, taken once its lines are written (a claim
     * that fails leaves the jobs it picked where the next one looks) */
    bool head_set;
    size_t head_next;
    /* the text of the latest event ts (a batch's events share theirs) */
    int64_t ts_of;
    char ts_text[24];
    size_t ts_len;
};

typedef struct event_fields {
    const char *op;
    char id[UUID7_LEN + 1];
    int64_t ts; /* the replaying process's clock when the event has none */
    bool done;
    const json_t *payload; /* enqueue only; may be NULL */
    bool keyed;            /* payload has no integer key at the top (kept as is) */
    const char *raw;       /* enqueue: instead of payload, the canonical bytes of */
    size_t rawlen;         /* an object payload (borrowed; copied when applied) */
    job *hint;             /* the job of id when the writer looked it up, or NULL:
                            * set only by operations that insert no job (claim,
                            * complete, requeue, purge), so it stays valid until
                            * their events are applied */
    size_t hash;           /* idmap_hash(id) when already computed, else 0 */
} event_fields;

/* An event this process writes, with its line's place in the batch. */
typedef struct own_event {
    event_fields f;
    json_t *payload; /* owned; f.payload */
    size_t off, len;
} own_event;

typedef int (*locked_fn)(queue *q, void *arg, buf *lines, storh_err *err);

typedef struct age_arg {
    int64_t secs;
    size_t n;
} age_arg;

/* queue_state.c */
int64_t queue__now_s(void);
/* A job's payload as a tree (new reference; an empty object when it has
 * none, as storh answers a claim of a purged job), NULL when out of memory. */
json_t *queue__payload_tree(const job *j);
/* Appends a job's payload as a claim answer encodes it. */
int queue__payload_bytes(const job *j, buf *out, storh_err *err);
int queue__qstate_init(qstate *s);
/* Makes room for more jobs than the state holds (map and claim order), so
 * that an enqueue of that many grows nothing while it applies; grows as
 * the state would (doubling), never by less. -1 when out of memory (the
 * jobs and their order unchanged, though the map may have been rehashed;
 * the enqueue then grows as it goes). */
int queue__qstate_reserve(qstate *s, size_t more);
void queue__qstate_free(qstate *s);
bool queue__apply_line(qstate *s, const char *p, size_t n, char *msg, size_t cap);
bool queue__apply_event(qstate *s, const event_fields *f);

/* queue.c */
uint64_t queue__apply_bytes(queue *q, qstate *st, const char *b, uint64_t base, uint64_t len,
                            long *lines, bool record_bad);
int queue__replay(queue *q, storh_err *err);
int queue__sync_log(queue *q, storh_err *err);
int queue__with_lock(queue *q, locked_fn fn, void *arg, storh_err *err);
/* As queue__with_lock; with staged, a batch of more than one event goes
 * through a qstage, so a crash leaves all of its events or none. */
int queue__with_lock_staged(queue *q, locked_fn fn, void *arg, bool staged, storh_err *err);
/* queue_events.c. An event line under construction in q->ev: event_begin
 * writes {"op":"<op>","id":"<id>", the caller appends its fields, event_end
 * adds the ts, frames the line into lines and notes the event for applying
 * (payload: an enqueue's tree, taken; or NULL and raw, rawlen: its
 * canonical object bytes, borrowed until the operation ends). */
void queue__event_begin(queue *q, const char *op, const char *id);
void queue__event_end(queue *q, buf *lines, const char *op, const char *id, int64_t ts, bool done,
                      json_t *payload, bool keyed, const char *raw, size_t rawlen);
/* An unstaged operation's lines are appended to queue.log every
 * QUEUE_SPILL bytes (queue.h) while it encodes the rest, and their writeback
 * started (sync_file_range), so that a large claim or complete has the disk
 * write them while its CPU works: its fsync at the end then waits for
 * what is left. Called after an event that leaves QUEUE_SPILL bytes or
 * more not yet appended; nothing when the operation is
 * staged (its stage must be durable before the log takes a byte). A
 * failure is kept in spill_err (part of the write may have landed): the
 * operation fails, and what it appended is cut away (with_lock_staged). */
void queue__spill(queue *q, const buf *lines);
/* One event without a payload (claim, complete, requeue, purge), with the
 * JSON fields extra (or NULL) before ts, framed into lines and noted; j:
 * the job of id, which the operation found (event_fields.hint). */
void queue__event(queue *q, buf *lines, const char *op, const char *id, const char *extra,
                  int64_t ts, bool done, job *j);
/* The payload the state keeps for an enqueue of payload, whose encoding is
 * enc (a new reference); *keyed as event_fields.keyed. */
json_t *queue__own_payload(const json_t *payload, const char *enc, size_t len, bool *keyed);
/* Room for n more notes at once: a batch of n events grows nothing. */
void queue__own_reserve(queue *q, size_t n);
/* Before an enqueue of n jobs: room for their notes and their state, so
 * that neither grows (a copy and fresh pages per doubling) while the
 * batch is encoded and applied. */
void queue__reserve_enqueues(queue *q, size_t n);
/* Applies the operation's notes, as queue__apply_bytes would its lines
 * (written at log offset base); queue__own_clear drops them. */
void queue__apply_own(queue *q, uint64_t base);
void queue__own_clear(queue *q);
/* Records a bad event line (queue_verify lists them). */
void queue__note_bad(queue *q, uint64_t off, uint64_t len, long line, const char *msg);
/* Appends a claim event per pending job in claim order, up to limit, and
 * hands each job to fn first (a job fn refuses, by returning non-zero, is
 * not claimed and the operation fails with that code). */
typedef int (*queue_claim_fn)(const char *id, const job *j, void *ctx, storh_err *err);
int queue__claim_each(queue *q, buf *lines, size_t limit, queue_claim_fn fn, void *ctx, size_t *n,
                      storh_err *err);
int queue__do_requeue(queue *q, void *a, buf *lines, storh_err *err);

#endif
