/* compare (bench): storhd's figures next to PHP storh's. Owns the one table
 * that maps storh's bench metrics (bench/bench.php --output FILE: seconds per
 * timed block) to storhd's, with each metric's class goal and the limit it
 * is held against; renders the side-by-side table (compare-storh) and adds
 * the fraction-of-limit figures to a run (which `bench ci` gates). */
#ifndef STORHD_BENCH_COMPARE_H
#define STORHD_BENCH_COMPARE_H

#include "metrics.h"

/* Adds "<metric>.of_limit" (percent of the limit measured in the same
 * repetition) for every mapped metric whose limit r holds. Call before
 * bench_finish. */
void compare_add_fractions(bench_result *r);
/* php and cur are comma-separated lists of storh and storhd JSON files of
 * interleaved runs; each figure is the median over its list. Prints the
 * markdown table to stdout. 0, or 2 when a file cannot be read. */
int compare_storh(const char *php, const char *cur);

#endif
