/* frame: the framed lines of the segmented log and the queue (FORMAT.md 3.2,
 * 4.2): "<len>\t<xxh32 hex>\t<json>\n", where len and the hash cover exactly
 * the JSON bytes. Encoding, and the two readers' acceptance rules: the log's
 * lenient one (PHP (int) cast on the length) and the queue's strict one. */
#ifndef STORH_FRAME_H
#define STORH_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "storh_err.h"

/* Appends one framed line for json[0..len) to out. */
void frame_encode(buf *out, const char *json, size_t len);
/* Checks one line (without its LF; trailing CR/LF are ignored). strict:
 * the length must be all digits (queue rule). On success points *json into
 * line. Errors are STORH_ECORRUPT with storh's messages. */
int frame_decode(const char *line, size_t len, bool strict, const char **json, size_t *jlen,
                 storh_err *err);
/* xxh32 of s as 8 lowercase hex digits into out[9]. */
void frame_xxh32_hex(const char *s, size_t len, char out[9]);

#endif
