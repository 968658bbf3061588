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
#include <stddef.h>

/* True only if decoding bytes as a record of id (a valid UUIDv7) and
 * encoding it again gives the same bytes. */
bool reccanon_is_canonical(const char *bytes, size_t len, const char *id);

#endif
