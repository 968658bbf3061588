/* queue: storh's LogQueue (FORMAT.md 4): one queue.log of framed
 * enqueue/claim/complete/requeue/purge events and a queue.lock flock. The
 * state is replayed from the log on open, and before every operation the
 * queue reads what other processes appended, under the lock, so several
 * processes never claim one job twice.
 *
 * Job states. Each move is an event line written by the operation (under
 * the flock, in queue.c) and applied by apply_event (queue_state.c), both
 * live and on replay:
 *
 *   (unknown) --enqueue (queue_enqueue_many)--> pending
 *   pending --claim (queue_claim, FIFO)--> processing
 *   processing --complete (queue_complete_many)--> done (keep_done) or gone
 *   processing --requeue (queue_requeue_timed_out, queue_repair)--> pending
 *   done --purge (queue_purge_done)--> gone (forgotten: out of memory too)
 *   any --enqueue of a known id--> pending again, with the new payload
 *
 * Two storh quirks kept on purpose: complete with "done":true puts the id in
 * done whatever it was, even unknown (a done job with no payload), and purge
 * of a job that is not done drops its payload but keeps its state.
 * Error states: a bad event line is skipped and listed (queue_verify reports
 * it, queue_repair quarantines it); an append that fails is cut back, and
 * when it cannot be cut or a later fsync fails, gcommit poisons the queue:
 * every write refuses until a restart replays the log as the disk has it.
 *
 * Unlike storh, a bad event line between good ones is skipped (verify
 * reports it, repair quarantines it) instead of cutting the log there; only
 * an unterminated tail, a torn write, is truncated. Appends are durable on
 * return and share fsyncs between threads (gcommit). */
#ifndef STORH_QUEUE_H
#define STORH_QUEUE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "storh_err.h"
#include "uuid7.h"

/* A large operation's event lines are appended every QUEUE_SPILL bytes
 * while it encodes the rest, each write's writeback started at once
 * (sync_file_range), and made durable by one fsync at the end. */
#define QUEUE_SPILL ((size_t)256 << 10)

typedef struct queue queue;

/* Without create a missing queue is STORH_ENOTFOUND. Close with
 * queue_close. */
int queue_open(const char *root, const char *name, bool create, queue **out, storh_err *err);
void queue_close(queue *q);

/* The checks an enqueue makes of its jobs before it writes (an array of
 * objects, ids UUIDv7 where given), for a caller that must refuse bad jobs
 * before it creates the queue. */
int queue_check_jobs(const json_t *jobs, storh_err *err);
/* jobs: an array of jobs (string "id" supplies the id, object "payload" the
 * payload, else the whole job is the payload). *ids: a new array of the ids
 * in order. One append and one fsync for the whole batch. The queue may keep
 * references to the payloads (no copy): the caller must not change them
 * after the call. */
int queue_enqueue_many(queue *q, const json_t *jobs, json_t **ids, storh_err *err);
/* Claims up to limit jobs in FIFO order: *jobs = new array of
 * {"id","payload"} (empty when none is pending). */
int queue_claim(queue *q, size_t limit, json_t **jobs, storh_err *err);

/* The byte path (queue_bytes.c): jobs read straight from the bytes of a
 * request body and claims answered as bytes, with no JSON tree per job. */
typedef struct queue_job_bytes {
    const char *id;      /* the job's given id (36 bytes), NULL: one is made */
    const char *payload; /* its payload's canonical bytes */
    size_t len;
} queue_job_bytes;
typedef struct queue_jobs {
    queue_job_bytes *v;
    size_t n, cap;
    bool bad; /* scratch of queue_jobs_read */
    const char *id, *payload;
    size_t len;
} queue_jobs;
#define QUEUE_JOBS_INIT                                                                            \
    {                                                                                              \
        0                                                                                          \
    }
/* Reads body, a list of jobs or one job as queue_enqueue_many takes them,
 * when it is in canonical form (reccanon.h: compact, the encoder's own
 * escapes, no floats) and every job is an object with a valid id or none:
 * true, and jobs lists them, pointing into body. False otherwise: decode
 * the body and call queue_enqueue_many, which gives the same result, or
 * the error. Free jobs with queue_jobs_free either way. */
bool queue_jobs_read(const char *body, size_t len, queue_jobs *jobs);
void queue_jobs_free(queue_jobs *jobs);
/* Enqueues what queue_jobs_read read (its body still alive) as
 * queue_enqueue_many would the decoded body: the same log lines, state and
 * ids; ids (jobs->n of them) receives each job's id. */
int queue_enqueue_jobs(queue *q, const queue_jobs *jobs, char (*ids)[UUID7_LEN + 1],
                       storh_err *err);
/* queue_claim, answered as bytes: appends each claimed job as the object
 * sjson_encode writes for queue_claim's, comma-separated, to out; *n: how
 * many were claimed. */
int queue_claim_bytes(queue *q, size_t limit, buf *out, size_t *n, storh_err *err);
/* ids: array of id strings; ignores ids that are not processing.
 * *completed counts the jobs completed. */
int queue_complete_many(queue *q, const json_t *ids, bool keep_done, size_t *completed,
                        storh_err *err);
/* Reads a complete's body {"ids":["<id>",...]} (other members ignored)
 * when it is in canonical form and every id is a valid UUIDv7: true, and
 * ids lists them, pointing into body. False otherwise: decode the body
 * (the tree path gives the error). Free ids with queue_ids_free. */
typedef struct queue_ids {
    const char **v; /* UUID7_LEN bytes each, not NUL-ended */
    size_t n, cap;
    bool seen, bad; /* scratch of queue_ids_read */
} queue_ids;
#define QUEUE_IDS_INIT                                                                             \
    {                                                                                              \
        0                                                                                          \
    }
bool queue_ids_read(const char *body, size_t len, queue_ids *ids);
void queue_ids_free(queue_ids *ids);
/* queue_complete_many of the ids queue_ids_read read (its body alive). */
int queue_complete_ids(queue *q, const queue_ids *ids, bool keep_done, size_t *completed,
                       storh_err *err);
/* Requeues processing jobs claimed at least timeout_s seconds ago. */
int queue_requeue_timed_out(queue *q, int64_t timeout_s, size_t *n, storh_err *err);
/* Purges done jobs completed at least older_than_s seconds ago (<= 0: all). */
int queue_purge_done(queue *q, int64_t older_than_s, size_t *n, storh_err *err);
/* {"pending","processing","done"} (+ "bytes" for stats). */
int queue_counts(queue *q, json_t **out, storh_err *err);
int queue_stats(queue *q, json_t **out, storh_err *err);
/* Pending jobs right now (after reading other processes' appends). */
int queue_pending(queue *q, size_t *n, storh_err *err);
/* {"ok","errors","stats"}: bad lines and state drift. */
int queue_verify(queue *q, json_t **out, storh_err *err);
/* Quarantines bad lines, rewrites the log without them, requeues jobs
 * processing for at least timeout_s: {"ok":true,"quarantined","requeued"}. */
int queue_repair(queue *q, int64_t timeout_s, json_t **out, storh_err *err);

#endif
