/* suite (bench): the engine suites, one file each (suite_doc.c, suite_log.c,
 * ...). A suite runs its engine in process under the scratch root o->work
 * and adds its figures to r. */
#ifndef STORHD_BENCH_SUITE_H
#define STORHD_BENCH_SUITE_H

#include "harness.h"
#include "metrics.h"

struct docstore;
/* The record cache storhd's service gives a collection it opens (its
 * defaults: --cache-entries 100000, --cache-bytes 64 MiB; o->cache_mode),
 * as storh's DocPerFileStore keeps what it writes and reads. */
void suite_service_cache(const harness_opts *o, struct docstore *ds);
void suite_limits(const harness_opts *o, bench_result *r);
/* SQLite's own insert rate for n of the mirror's rows: the mirror's table
 * and indexes, its journal and sync settings, one transaction, one
 * prepared single-row INSERT; the rows' text is made before the clock
 * starts. In a fresh database file under o->work (rows/s). replace: the
 * rows are inserted first (untimed) and the timed transaction empties the
 * table before inserting them again, as a rebuild does. */
double suite_sqlite_insert_rate(const harness_opts *o, long n, const char *file, bool replace);
/* Every shard of a data directory listed and one fstatat of each record
 * file relative to its shard (nothing read): seconds; *n the files. */
double suite_stat_scan(const char *data, long *n);
void suite_doc(const harness_opts *o, bench_result *r);
void suite_cache(const harness_opts *o, bench_result *r);
void suite_docgroup(const harness_opts *o, bench_result *r);
void suite_log(const harness_opts *o, bench_result *r);
void suite_queue(const harness_opts *o, bench_result *r);
void suite_mirror(const harness_opts *o, bench_result *r);
void suite_uuid(const harness_opts *o, bench_result *r);
void suite_filter(const harness_opts *o, bench_result *r);

#endif
