#include "ndjson.h"

#include <string.h>

#include "http.h"

void ndjson_lines_init(ndjson_lines *l, size_t max_line, ndjson_row_fn fn, void *ctx)
{
    memset(l, 0, sizeof *l);
    l->max = max_line;
    l->fn = fn;
    l->ctx = ctx;
}

void ndjson_lines_free(ndjson_lines *l)
{
    buf_free(&l->line);
}

static int row(ndjson_lines *l, http_req *req, const char *p, size_t n)
{
    l->lineno++;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
        i++;
    if (i == n)
        return 0; /* blank lines are skipped */
    if ((l->stopped = l->fn(l->ctx, req, p, n, l->lineno)))
        return l->stopped;
    return 0;
}

int ndjson_lines_feed(ndjson_lines *l, http_req *req, const char *data, size_t len)
{
    if (l->stopped)
        return l->stopped;
    if (!data) {
        int rc = l->line.len ? row(l, req, l->line.data, l->line.len) : 0;
        buf_reset(&l->line);
        return rc;
    }
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (l->line.len + take > l->max)
            return l->stopped = http_fail(req, 413, "Line %zu is over the limit of %zu bytes.",
                                          l->lineno + 1, l->max);
        int rc = 0;
        if (nl && l->line.len == 0) {
            rc = row(l, req, data, take); /* the whole line is in this chunk */
        } else {
            buf_append(&l->line, data, take);
            if (buf_failed(&l->line))
                return l->stopped = http_fail(req, 503, "Out of memory.");
            if (nl) {
                rc = row(l, req, l->line.data, l->line.len);
                buf_reset(&l->line);
            }
        }
        if (rc)
            return rc;
        if (!nl)
            break;
        data = nl + 1;
        len -= take + 1;
    }
    return 0;
}
