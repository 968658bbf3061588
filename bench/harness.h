/* harness (bench): what every engine suite shares: the run's options, the
 * clock, the fatal-error exit, and the records and ids the suites write. */
#ifndef STORHD_BENCH_HARNESS_H
#define STORHD_BENCH_HARNESS_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "storh_err.h"
#include "uuid7.h"

typedef struct harness_opts {
    bool quiet; /* no report on stdout (ci prints only its verdicts) */
    long dataset;
    const char *engine;
    int cache_mode;
    int repeat;
    const char *out;
    char work[PATH_MAX];
} harness_opts;

/* Monotonic seconds. */
double harness_now(void);
/* The median of v[0..n), which it sorts (the mean of the middle two for an
 * even n; NAN for none): how every suite reports repeated passes. */
double harness_median(double *v, int n);
/* Prints what failed (err's message, else errno) and exits 1. */
void harness_die(const char *what, const storh_err *err);
/* The epoch of the suites' time-ordered ids and of publishedAt (storh's). */
#define HARNESS_BASE_MS INT64_C(1700000000000)
/* The benchmark record number i: storh's bench row {kind, status, bucket,
 * slug, publishedAt}. New reference. */
json_t *harness_record(long i);
/* Appends the bytes sjson_encode writes for harness_record(i), built
 * straight (what an HTTP client sends for the row). */
void harness_record_bytes(long i, buf *out);
/* n UUIDv7s at base_ms, base_ms + 1, ...; caller frees with free(). */
char (*harness_make_ids(long n, int64_t base_ms))[UUID7_LEN + 1];
/* Removes a scratch directory tree. */
void harness_clean(const char *dir);

#endif
