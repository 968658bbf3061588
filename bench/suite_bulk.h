/* suite_bulk (bench): the bulk durable figures and their limit,
 * limit.bulk_publish, timed batch for batch next to each other (a median of
 * BULK_BATCHES batches of the dataset each, each into a fresh directory). */
#ifndef STORHD_BENCH_SUITE_BULK_H
#define STORHD_BENCH_SUITE_BULK_H

#include "harness.h"
#include "metrics.h"

#define BULK_BATCHES 3

/* The least a durable bulk of n record files can do, in dir (made here,
 * must not exist): the shard dirs, n creates + writes + closes of the
 * records' bytes, one syncfs, n renames into the shards, one syncfs; each
 * file by its name in a descriptor on its shard (no path walked).
 * Returns the seconds it took. */
double bulk_limit_batch(const char *dir, long n);
/* doc.put_stream, doc.import_jsonl (of the export at jsonl, the dataset)
 * and limit.bulk_publish, batches interleaved, each first in turn: limit,
 * put, import; put, import, limit; import, limit, put. */
void suite_bulk_doc(const harness_opts *o, bench_result *r, const char *jsonl);

#endif
