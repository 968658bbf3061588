/* buf: a growable byte buffer used by every encoder and reader.
 * A buf owns its bytes; buf_free releases them. Allocation failure is sticky:
 * appends after a failure are ignored and buf_failed() reports it, so callers
 * check once after a sequence of appends instead of after each one. */
#ifndef STORH_BUF_H
#define STORH_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

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
/* The out-of-line halves of buf_append and buf_appendc: they grow. */
void buf__append_grow(buf *b, const void *p, size_t n);
void buf__appendc_grow(buf *b, char c);
/* Inline while the bytes fit: encoders append a few bytes at a time, and
 * a call per append cost as much as the copy (a queue batch makes 11 a
 * job). */
static inline void buf_append(buf *b, const void *p, size_t n)
{
    if (b->oom || b->len + n >= b->cap) {
        buf__append_grow(b, p, n);
        return;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}
static inline void buf_appendc(buf *b, char c)
{
    if (b->oom || b->len + 1 >= b->cap) {
        buf__appendc_grow(b, c);
        return;
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}
void buf_appends(buf *b, const char *s);
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
