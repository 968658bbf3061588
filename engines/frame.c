#include "frame.h"

#include <stdio.h>
#include <string.h>

#include "xxhash.h"

void frame_xxh32_hex(const char *s, size_t len, char out[9])
{
    static const char hexdig[] = "0123456789abcdef";
    unsigned h = XXH32(s, len, 0);
    for (int i = 7; i >= 0; i--) {
        out[i] = hexdig[h & 0xf];
        h >>= 4;
    }
    out[8] = '\0';
}

void frame_encode(buf *out, const char *json, size_t len)
{
    /* one reservation and the bytes written in place: a batch frames one
     * line per event */
    char head[32], *h = head + sizeof head;
    *--h = '\t';
    size_t v = len;
    do
        *--h = (char)('0' + v % 10);
    while ((v /= 10));
    size_t hl = (size_t)(head + sizeof head - h);
    if (!buf_reserve(out, hl + 8 + 1 + len + 1))
        return;
    char *p = out->data + out->len;
    memcpy(p, h, hl);
    p += hl;
    frame_xxh32_hex(json, len, p); /* its NUL is overwritten below */
    p += 8;
    *p++ = '\t';
    memcpy(p, json, len);
    p += len;
    *p++ = '\n';
    *p = '\0';
    out->len = (size_t)(p - out->data);
}

/* PHP's (int) cast: leading whitespace, optional sign, digits, rest ignored. */
static long long php_atoi(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\v' ||
                     s[i] == '\f'))
        i++;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    long long v = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > (1LL << 50))
            return -1; /* longer than any line can be */
        v = v * 10 + (s[i] - '0');
    }
    return neg ? -v : v;
}

int frame_decode(const char *line, size_t len, bool strict, const char **json, size_t *jlen,
                 storh_err *err)
{
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    const char *t1 = memchr(line, '\t', len);
    const char *t2 = t1 ? memchr(t1 + 1, '\t', len - (size_t)(t1 + 1 - line)) : NULL;
    if (!t2)
        return storh_err_set(err, STORH_ECORRUPT,
                             strict ? "Malformed log queue line."
                                    : "Malformed segmented log line.");
    size_t l1 = (size_t)(t1 - line);
    const char *j = t2 + 1;
    size_t jl = len - (size_t)(j - line);
    long long want;
    if (strict) {
        if (l1 == 0)
            return storh_err_set(err, STORH_ECORRUPT, "Malformed log queue line.");
        want = 0;
        for (size_t i = 0; i < l1; i++) {
            if (line[i] < '0' || line[i] > '9' || want > (1LL << 50))
                return storh_err_set(err, STORH_ECORRUPT, "Malformed log queue line.");
            want = want * 10 + (line[i] - '0');
        }
    } else {
        want = php_atoi(line, l1);
    }
    char hex[9];
    frame_xxh32_hex(j, jl, hex);
    size_t hl = (size_t)(t2 - t1 - 1);
    if (want != (long long)jl || hl != 8 || memcmp(t1 + 1, hex, 8) != 0)
        return storh_err_set(err, STORH_ECORRUPT,
                             strict ? "Corrupt log queue line." : "Corrupt segmented log line.");
    *json = j;
    *jlen = jl;
    return 0;
}
