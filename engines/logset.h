/* logset: a log stream as its readers see it (FORMAT.md 3.1): the one
 * seglog of an unpartitioned stream, or every partition of a daily or
 * monthly one (<root>/<name>/partitions/YYYY-MM-DD or YYYY-MM, each a
 * complete log), oldest first. The one resolver every reader of a stream
 * uses (stream, _query, _stats, _verify, the mirror), with reads across the
 * set. The seglog handles belong to the opener passed in (the registry);
 * a logset owns only its array. */
#ifndef STORH_LOGSET_H
#define STORH_LOGSET_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "recquery.h"
#include "seglog.h"
#include "storh_err.h"

/* Opens one existing log (never creates one); STORH_ENOTFOUND when there is
 * none. The handle stays the opener's. */
typedef int (*logset_open_fn)(void *ctx, const char *name, const seglog_opts *o, seglog **out,
                              storh_err *err);

typedef struct logset {
    seglog **logs;
    char (*part)[16]; /* each log's partition name; NULL when unpartitioned */
    size_t n;
} logset;

/* Resolves stream name under root: with o->partition NONE its one log, else
 * every partition directory (daily or monthly by its name, whatever o says
 * today), oldest first. A stream with no log at all is STORH_ENOTFOUND.
 * Release with logset_free. */
int logset_open(logset *ls, const char *root, const char *name, const seglog_opts *o,
                logset_open_fn open_fn, void *ctx, storh_err *err);
void logset_free(logset *ls);

typedef struct logset_iter logset_iter;
/* Live records of every log in order, filtered by q (borrowed, may be NULL;
 * it must outlive the iterator); q's limit counts over the whole set. */
int logset_iter_open(const logset *ls, const recquery *q, logset_iter **out, storh_err *err);
/* As seglog_iter_next: 1 = record, 0 = end, < 0 = error. */
int logset_iter_next(logset_iter *it, const char **id, json_t **data, storh_err *err);
/* As seglog_iter_next_raw (data bytes as they are, or a tree). */
int logset_iter_next_raw(logset_iter *it, const char **id, const char **raw, size_t *rawlen,
                         json_t **data, storh_err *err);
void logset_iter_close(logset_iter *it);

/* The record with this id in whichever log holds it (newest first);
 * STORH_ENOTFOUND when none does. *data new reference. */
int logset_get(const logset *ls, const char *id, json_t **data, storh_err *err);
int logset_count(const logset *ls, size_t *n, storh_err *err);
/* seglog_count_eq summed; *served only when every log could serve it. */
int logset_count_eq(const logset *ls, const char *field, const json_t *value, size_t *n,
                    bool *served, storh_err *err);
/* seglog_stats summed; a partitioned stream adds "partitions":n. */
int logset_stats(const logset *ls, json_t **out, storh_err *err);
/* seglog_verify of each log: ok when all are, their errors (prefixed with
 * the partition's directory name when partitioned), stats summed. */
int logset_verify(const logset *ls, json_t **out, storh_err *err);

#endif
