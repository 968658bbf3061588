/* suite_docput (bench): doc.put and its limit, limit.doc_put, timed in
 * turns of 50 records, each first every other turn, so both figures are of
 * one disk moment (the disk's rate moves 2-4x within a run). */
#ifndef STORHD_BENCH_SUITE_DOCPUT_H
#define STORHD_BENCH_SUITE_DOCPUT_H

#include "docstore.h"
#include "harness.h"
#include "metrics.h"

/* Puts the dataset's records into ds (their ids into ids, o->dataset of
 * them) and adds doc.put and limit.doc_put to r. */
void suite_docput(const harness_opts *o, docstore *ds, char (*ids)[UUID7_LEN + 1], bench_result *r);

#endif
