/* metrics (bench): the result set of one harness run: named metrics with a
 * unit and a direction, and the JSON and report renderings every subcommand
 * (run, repeat, range, compare, gate) shares. */
#ifndef STORHD_BENCH_METRICS_H
#define STORHD_BENCH_METRICS_H

#include <jansson.h>
#include <stdbool.h>

typedef struct bench_result {
    json_t *metrics; /* name -> {"value","unit","better","runs":[...]} */
} bench_result;

void bench_result_init(bench_result *r);
void bench_result_free(bench_result *r);
/* Adds one run's value of a metric; better is "higher" or "lower". */
void bench_add(bench_result *r, const char *name, double value, const char *unit,
               const char *better, const char *label);
/* Sets every metric's value to the median of its runs. */
void bench_finish(bench_result *r);
/* The whole document: build, machine, dataset, repeat, metrics. New ref. */
json_t *bench_document(const bench_result *r, long dataset, int repeat, const char *engines);
/* v with 3 or 4 significant digits and a k/M suffix, into out. Returns out. */
const char *bench_fmt_value(double v, char *out, size_t cap);
/* Markdown table and an HTML page with one bar chart per metric group. */
int bench_write_reports(const json_t *doc, const char *md_path, const char *html_path);

#endif
