/* runner (bench): runs the selected suites, writes the run's JSON and
 * reports, and compares or gates two runs' JSON documents. */
#ifndef STORHD_BENCH_RUNNER_H
#define STORHD_BENCH_RUNNER_H

#include <stdbool.h>

#include "harness.h"

/* Runs o->engine (or all) o->repeat times; writes o->out and its .md/.html. */
int runner_run(harness_opts *o);
/* Prints a markdown table of the metrics both documents have. */
int runner_compare(const char *a, const char *b);
/* 1 when a metric of base is worse in cur by more than threshold percent. */
int runner_gate(const char *base, const char *cur, double threshold, char **only, int nonly,
                bool verbose);

#endif
