/* report: the HTML page of a trial run, drawn from results.json alone, in
 * the sections of the reference load report: results, workload and
 * environment, method, how to reproduce. Each trial gets its plots
 * (throughput and API memory over time, latency by percentile) and the page
 * links the JSON for download. */
#ifndef STORHD_TRIAL_REPORT_H
#define STORHD_TRIAL_REPORT_H

#include <jansson.h>
#include <stddef.h>

/* Writes the page to html_path; json_href is the link to the results file
 * (relative to the page). 0, or -1 with a message. */
int report_write(const json_t *results, const char *html_path, const char *json_href, char *msg,
                 size_t cap);

#endif
