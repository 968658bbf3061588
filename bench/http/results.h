/* results: the document a trial run writes as results.json. A trial's
 * record joins wrk's summary with the probe's samples of the API; a
 * scenario's summary is the median across its trials of each figure
 * (latency: the median of the per-trial percentiles, as the reference
 * report does), with the range of the throughput. */
#ifndef STORHD_TRIAL_RESULTS_H
#define STORHD_TRIAL_RESULTS_H

#include <jansson.h>
#include <stddef.h>

#include "probe.h"

#define RESULTS_SCHEMA "storhd-http-trials/1"

/* One trial. wrk: done()'s summary (borrowed). s/n: the samples taken while
 * it measured; first/last: samples taken right before wrk started and right
 * after it ended (CPU per request is their difference over wrk's request
 * count); po names the watched series. New reference. */
json_t *results_trial(const char *scenario, int trial, int order, const json_t *wrk,
                      const probe_sample *s, size_t n, const probe_sample *first,
                      const probe_sample *last, const probe_opts *po);
/* Sets scenario["summary"] from scenario["trials"]. */
void results_summarize(json_t *scenario);
/* Median of v (sorted in place); 0 for n == 0. */
double results_median(double *v, size_t n);
/* Total of errors.total over every trial of every scenario. */
long long results_errors(const json_t *doc);

#endif
