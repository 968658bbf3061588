/* seglog: storh's SegmentedLogStore (FORMAT.md 3): an append-only log of
 * framed put/delete envelopes in segment files, a manifest listing sealed
 * segments and the active one, and an in-memory state index (id -> live
 * line) rebuilt by replay on open.
 *
 * Segment life (the manifest write is the commit point of every move; the
 * functions are in seglog_manifest.c, seglog_batch.c and seglog_compact.c):
 *
 *   (open: seglog_open, replay cuts a torn tail) --> active
 *   active --append (seglog__append_lines, size >= max)--> roll
 *   roll (seglog__roll): sparse index, new seg-N, dir fsync, flush,
 *       manifest names seg-N --> old one sealed, seg-N active
 *     roll fails before the manifest --> active unchanged (ROLL FAILED:
 *       the append that triggered it still succeeds; the next one retries)
 *     gcommit_switch fails after it --> POISONED (gcommit: every write
 *       refuses until a restart reopens the log as the disk has it)
 *   bulk commit (seglog_batch_commit -> publish_spool): spool renamed to
 *       seg-N, manifest seals the active one and names seg-N active
 *     fails before the manifest --> nothing changed (spool unlinked)
 *     fails after it --> POISONED
 *   sealed --compact (compact_locked: roll, compact-<token>-NNNNNN written
 *       and fsynced, manifest swap)--> replaced by the outputs (old seg-*
 *       files stay on disk for concurrent readers, as storh does)
 *     fails before the swap --> unchanged; outputs removed
 *       (seglog__remove_unreferenced, also on every open)
 *   seglog_retain: tombstones for old ids, then compact_locked.
 *   bad line inside a segment --> skipped and listed (s->bad);
 *       seglog_verify reports it, seglog_repair quarantines and rewrites.
 *
 * Unlike storh, nothing valid is ever cut away: on open only an invalid
 * unterminated tail (a torn, never acknowledged write) is truncated; a bad
 * line between good ones is skipped and reported by verify, and repair
 * moves it to .storh/corrupt/ and rewrites the segment without it. A valid
 * last line without LF gets its LF before the next append.
 *
 * Appends are durable on return and share fsyncs (gcommit). Threads share a
 * seglog: every operation takes its mutex; mutations also take the flock
 * that excludes other processes (PHP storh included). Every read (get,
 * iterate, count, stats) and every write first catches up with what other
 * processes published: a stat of the manifest and of the active segment,
 * then only the new lines are read (a changed manifest replays the log);
 * while the log's inotify watch (logwatch.c) saw nothing change since the
 * last such check, one empty read of it instead of the stats. */
#ifndef STORH_SEGLOG_H
#define STORH_SEGLOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recquery.h"
#include "storh_err.h"
#include "uuid7.h"

enum { SEGLOG_PART_NONE = 0, SEGLOG_PART_DAILY, SEGLOG_PART_MONTHLY };

typedef struct seglog_opts {
    size_t max_segment_bytes; /* >= 256; default 1 MiB */
    int sparse_interval;      /* >= 1; default 64 */
    int partition;            /* SEGLOG_PART_* */
    int64_t partition_ts_ms;  /* < 0: now */
} seglog_opts;

typedef struct seglog seglog;
typedef struct seglog_iter seglog_iter;
typedef struct seglog_batch seglog_batch;

void seglog_opts_default(seglog_opts *o);
/* The collection directory for name under root with o's partition, into
 * out (PATH_MAX). */
int seglog_dir(const char *root, const char *name, const seglog_opts *o, char *out, storh_err *err);
/* Opens (and with create, creates) the log; recovers torn tails. Without
 * create a missing log is STORH_ENOTFOUND. Close with seglog_close. */
int seglog_open(const char *root, const char *name, const seglog_opts *o, bool create, seglog **out,
                storh_err *err);
void seglog_close(seglog *s);

int seglog_put(seglog *s, const char *id, json_t *data, char out_id[UUID7_LEN + 1], storh_err *err);
/* Appends a tombstone if id is live; *existed says whether it was. */
int seglog_delete(seglog *s, const char *id, bool *existed, storh_err *err);
/* STORH_ENOTFOUND when absent or deleted; *data new reference. */
int seglog_get(seglog *s, const char *id, json_t **data, storh_err *err);

/* Bulk appends: rows are encoded into a spool file as they arrive and
 * appended (with one fsync) only at commit, so a bad row changes nothing. */
int seglog_batch_begin(seglog *s, seglog_batch **out, storh_err *err);
/* putMany element rule (string "id", object "data", else the whole row). */
int seglog_batch_element(seglog_batch *b, json_t *elem, char out_id[UUID7_LEN + 1], storh_err *err);
size_t seglog_batch_count(const seglog_batch *b);
int seglog_batch_commit(seglog_batch *b, size_t *written, storh_err *err);
void seglog_batch_abort(seglog_batch *b);

/* Live records in log order, filtered by q (borrowed, may be NULL; it must
 * outlive the iterator). Segments outside q's id window are skipped. A
 * compaction during the read (here or elsewhere) is followed: each live
 * record once, in order, or STORH_EUNAVAIL when the place reached cannot
 * be found again (seglog_iter.c). */
int seglog_iter_open(seglog *s, const recquery *q, seglog_iter **out, storh_err *err);
/* 1 = record (id valid until the next call; *data new reference), 0 = end,
 * < 0 = error. */
int seglog_iter_next(seglog_iter *it, const char **id, json_t **data, storh_err *err);
/* As seglog_iter_next, for a reader that only renders the data: when the
 * record's line holds the data exactly as sjson_encode writes what
 * seglog_iter_next would hand out (a canonical put line whose data passes
 * reccanon), *raw and *rawlen are those bytes (valid until the next call)
 * and *data is NULL; else *raw is NULL and *data the decoded data (new
 * reference). A query's field conditions are matched on the decoded data
 * either way. */
int seglog_iter_next_raw(seglog_iter *it, const char **id, const char **raw, size_t *rawlen,
                         json_t **data, storh_err *err);
void seglog_iter_close(seglog_iter *it);

/* compact(): {"ok":true,"segments":n,"records":n} (new reference). */
int seglog_compact(seglog *s, json_t **report, storh_err *err);
/* Deletes live records whose id timestamp is <= cutoff_ms, then compacts. */
int seglog_retain(seglog *s, int64_t cutoff_ms, size_t *deleted, storh_err *err);
/* stats(): {"segments","records","deleted","bytes"}. */
int seglog_stats(seglog *s, json_t **out, storh_err *err);
/* verify(): {"ok","errors","stats"}: bad lines, state drift. */
int seglog_verify(seglog *s, json_t **out, storh_err *err);
/* repair(): quarantine bad lines, rewrite their segments, recover. */
int seglog_repair(seglog *s, json_t **out, storh_err *err);
/* Live records into *n. */
int seglog_count(seglog *s, size_t *n, storh_err *err);
/* count() of field == value from the equality counters (storh's fast path):
 * *served false when the field cannot be counted that way (more than 64
 * distinct values, or a non-scalar value); the caller then scans. */
int seglog_count_eq(seglog *s, const char *field, const json_t *value, size_t *n, bool *served,
                    storh_err *err);

/* The data member of an envelope as storh hands it out: a non-object
 * becomes {}, and if any key is an integer all integer keys are dropped.
 * New reference. */
json_t *seglog_envelope_data(const json_t *envelope);

#endif
