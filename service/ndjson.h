/* ndjson: splits a streamed NDJSON request body into lines as chunks
 * arrive, without holding more than one line, and hands each non-blank line
 * to a row callback with its 1-based number. A line over the size limit is a
 * 413; a last line without '\n' is still a row. */
#ifndef STORHD_NDJSON_H
#define STORHD_NDJSON_H

#include <stddef.h>

#include "buf.h"

typedef struct http_req http_req;
/* Returns 0 to go on; non-zero stops the body (the callback has failed the
 * request with http_fail). */
typedef int (*ndjson_row_fn)(void *ctx, http_req *req, const char *line, size_t len, size_t lineno);

typedef struct ndjson_lines {
    buf line;
    size_t lineno, max;
    ndjson_row_fn fn;
    void *ctx;
    int stopped;
} ndjson_lines;

void ndjson_lines_init(ndjson_lines *l, size_t max_line, ndjson_row_fn fn, void *ctx);
/* data == NULL marks the end of the body. */
int ndjson_lines_feed(ndjson_lines *l, http_req *req, const char *data, size_t len);
void ndjson_lines_free(ndjson_lines *l);

#endif
