/* reccanon: tells, without decoding, whether the bytes of a record file are
 * exactly the canonical record docstore_encode_record would write for them
 * ({"id":"<id>","data":...} and a newline), so an export or a stream can
 * pass a file on as it is instead of decoding and encoding it again. It is
 * conservative: whatever it is not sure of (escapes other than the
 * encoder's own, \u escapes, floats, empty or integer-keyed objects,
 * duplicate keys, deep nesting, U+2028/U+2029) answers false, and the
 * caller decodes and encodes as before. */
#ifndef STORH_RECCANON_H
#define STORH_RECCANON_H

#include <stdbool.h>
#include <jansson.h>
#include <stddef.h>

/* True only if decoding bytes as a record of id (a valid UUIDv7) and
 * encoding it again gives the same bytes. */
bool reccanon_is_canonical(const char *bytes, size_t len, const char *id);

/* As reccanon_is_canonical, and for a canonical record whose data is an
 * object, calls fn with each of the data's own members: its key (as in the
 * file, no escapes in it) and its value's bytes. A false answer may come
 * after some calls: the caller drops what they gave. */
typedef void (*reccanon_member_fn)(const char *key, size_t klen, const char *val, size_t vlen,
                                   void *ctx);
bool reccanon_members(const char *bytes, size_t len, const char *id, reccanon_member_fn fn,
                      void *ctx);

/* For a canonical record: its data with only the given top-level fields
 * (an empty list when the data is a list), decoded as the whole record
 * would be. NULL when the bytes are not canonical: decode them instead.
 * New reference. */
json_t *reccanon_project(const char *bytes, size_t len, const char *id, const char *const *fields,
                         size_t n);

/* For a canonical record: its data, built straight from the bytes (the
 * tree docstore_decode_record gives, without a general parser). NULL when
 * the bytes are not canonical (or memory ran out): decode them instead.
 * New reference. */
json_t *reccanon_decode(const char *bytes, size_t len, const char *id);
/* reccanon_decode of bytes reccanon_is_canonical already accepted for id
 * (the record cache's, checked when they were cached), without checking
 * them again: anything else is undefined. */
json_t *reccanon_decode_checked(const char *bytes, const char *id);

/* The same rule for a value on its own (an object or a list, as a log
 * line's data): true only if decoding bytes and encoding the value again
 * gives the same bytes. */
bool reccanon_value_is_canonical(const char *bytes, size_t len);
/* The length of the canonical value (an object or a list) that bytes
 * start with, 0 when they do not start with one: what follows it is not
 * looked at (a value inside a line). */
size_t reccanon_value_span(const char *bytes, size_t len);
/* For canonical bytes of an object: fn with each of its own members, as
 * reccanon_members gives a record's data's. */
bool reccanon_value_members(const char *bytes, size_t len, reccanon_member_fn fn, void *ctx);
/* For canonical bytes of a list: for each item in order, fn with each of
 * its own members when it is an object, then item with the item's bytes.
 * As with reccanon_members, a false answer may come after some calls. */
typedef void (*reccanon_item_fn)(const char *item, size_t len, void *ctx);
bool reccanon_list_members(const char *bytes, size_t len, reccanon_member_fn fn,
                           reccanon_item_fn item, void *ctx);
/* For canonical value bytes: the value, built straight from them. NULL when
 * they are not canonical (or memory ran out). New reference. */
json_t *reccanon_value_decode(const char *bytes, size_t len);

#endif
