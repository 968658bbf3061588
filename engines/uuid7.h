/* uuid7: UUIDv7 ids as storh lays them out (FORMAT.md 1.5): generation with
 * a process-wide monotonic state, validation, timestamp extraction, and the
 * smallest/largest id of a millisecond used by time-range queries. */
#ifndef STORH_UUID7_H
#define STORH_UUID7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storh_err.h"

#define UUID7_LEN 36
#define UUID7_MAX_TS ((INT64_C(1) << 48) - 1)

/* Writes a new lowercase id into out (37 bytes with NUL). ts_ms < 0 means
 * "now"; ids made for "now" in one process never go backwards, even when the
 * clock does or the counter of one millisecond runs out. An explicit ts_ms
 * follows storh: same ms -> counter + 1, other ms -> fresh entropy. */
int uuid7_generate(char out[UUID7_LEN + 1], int64_t ts_ms, storh_err *err);
/* n "now" ids in order, as n calls of uuid7_generate(.., -1, ..) made within
 * one millisecond would make them: one clock read and one lock for all (a
 * batch of jobs or rows). On error the ids before the failing one are made. */
int uuid7_generate_many(char (*out)[UUID7_LEN + 1], size_t n, storh_err *err);
/* storh's is_valid: case-insensitive 8-4-4-4-12, version 7, variant 8..b. */
bool uuid7_is_valid(const char *s, size_t len);
/* Millisecond timestamp of a valid id; STORH_EINVAL otherwise. */
int uuid7_timestamp(const char *s, size_t len, int64_t *ms, storh_err *err);
/* Bounds of one millisecond: min uses 7000-8000-0..0, max 7fff-bfff-f..f. */
void uuid7_min_for_ms(int64_t ms, char out[UUID7_LEN + 1]);
void uuid7_max_for_ms(int64_t ms, char out[UUID7_LEN + 1]);
/* Formats ts and 10 entropy bytes exactly as storh does (exposed for tests). */
void uuid7_format(int64_t ts_ms, const uint8_t e[10], char out[UUID7_LEN + 1]);

#endif
