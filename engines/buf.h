/* buf: a growable byte buffer used by every encoder and reader.
 * A buf owns its bytes; buf_free releases them. Allocation failure is sticky:
 * appends after a failure are ignored and buf_failed() reports it, so callers
 * check once after a sequence of appends instead of after each one. */
#ifndef STORH_BUF_H
#define STORH_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct buf {
    char *data; /* always NUL-terminated when cap > 0 */
    size_t len;
    size_t cap;
    bool oom;
} buf;

#define BUF_INIT                                                                                   \
    {                                                                                              \
        NULL, 0, 0, false                                                                          \
    }

bool buf_reserve(buf *b, size_t extra);
void buf_append(buf *b, const void *p, size_t n);
void buf_appends(buf *b, const char *s);
void buf_appendc(buf *b, char c);
void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Decimal text of v, as printf's %lld / %llu writes it (without its
 * format parsing: these run once per encoded integer and log line). */
void buf_append_i64(buf *b, long long v);
void buf_append_u64(buf *b, unsigned long long v);
void buf_reset(buf *b);
void buf_free(buf *b);
/* Removes the first n bytes, keeping the rest. */
void buf_consume(buf *b, size_t n);
static inline bool buf_failed(const buf *b)
{
    return b->oom;
}

#endif
