/* sjson: storh's JSON dialect over jansson values (FORMAT.md 1.2, 1.3).
 * Encodes exactly what PHP json_encode writes for storh (unescaped unicode
 * and slashes, 1.0 stays 1.0, PHP list/map duality: {} and {"0":..,"1":..}
 * come out as arrays), and decodes strict JSON and storh's JSONC. Values are
 * jansson json_t; this module never owns them unless a function says so. */
#ifndef STORH_SJSON_H
#define STORH_SJSON_H

#include <jansson.h>
#include <stdbool.h>

#include "buf.h"
#include "storh_err.h"

#define SJSON_PRETTY 1u
#define SJSON_MAX_DEPTH 512

/* Appends the encoding of v to out. Fails (STORH_EINVAL) on nesting deeper
 * than SJSON_MAX_DEPTH or a non-finite number; out may then hold a partial
 * encoding, so callers reset it. */
int sjson_encode(buf *out, const json_t *v, unsigned flags, storh_err *err);
/* An "object file": the encoding plus one '\n'; an empty map is "{}\n". */
int sjson_encode_doc(buf *out, const json_t *obj, unsigned flags, storh_err *err);
/* Appends s as a JSON string literal with storh's escapes. */
void sjson_encode_string(buf *out, const char *s, size_t len);
/* The SJSON text of a finite double ("1.0", "1.0e+17", "-0.0"); returns the
 * length written to out (at most 31 bytes plus NUL). */
int sjson_format_double(double v, char out[32]);
/* PHP's sprintf('%.17G') of a finite double ("0.10000000000000001",
 * "1.0E+17", "-0"), the text of a float in docindex keys; returns the
 * length written to out (at most 31 bytes plus NUL). */
int sjson_format_g17(double v, char out[32]);

/* jansson's json_loadb (same flags and error) with PHP json_decode's rule
 * for integers outside int64: they decode as floats (12345678901234567890
 * -> 1.2345678901234567e+19), while integers that fit stay integers. Every
 * reader of storh's files decodes through this. */
json_t *sjson_loadb(const char *s, size_t len, size_t flags, json_error_t *error);
/* Strict JSON of any type. Returns a new reference (caller decrefs) or NULL
 * with err set (STORH_EINVAL, message names line and column). */
json_t *sjson_decode(const char *s, size_t len, storh_err *err);
/* storh's JSONC object reader: strict first, then comments and trailing
 * commas stripped; the top level must be a non-list map whose keys are not
 * integers. New reference or NULL with err set. */
json_t *sjson_decode_jsonc_object(const char *s, size_t len, storh_err *err);
/* Strips // and block comments and trailing commas as storh does; appends the
 * result to out (exposed for tests and the fuzzer). */
void sjson_strip_jsonc(buf *out, const char *s, size_t len);

/* True if k is a canonical decimal int64 ("0", "-5"; not "05", "-0"), which
 * PHP turns into an integer array key. */
bool sjson_is_int_key(const char *k, size_t len);
/* True if obj is a JSON object PHP would treat as a list: keys "0".."n-1" in
 * order (an empty object is a list too). */
bool sjson_object_is_list(const json_t *obj);
/* v as storh's log and queue hand payloads out: a non-object becomes {},
 * and if any key is an integer all integer keys are dropped (so a list
 * becomes {}). New reference. */
json_t *sjson_string_keyed(const json_t *v);
/* True if obj is an object and none of its top-level keys is an int key. */
bool sjson_top_keys_ok(const json_t *obj);

/* A result row {"id": id, "data": data}, built without json_pack's format
 * parsing (a query's rows are its hot path). Steals data, also when it
 * fails; NULL when out of memory or id is not UTF-8. */
json_t *sjson_row(const char *id, json_t *data);
/* {"count": n}, the same way. NULL when out of memory. */
json_t *sjson_count(long long n);

#endif
