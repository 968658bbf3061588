#include "reccanon.h"

#include <string.h>

#include "sjson.h"

#define MAX_DEPTH 64
#define MAX_KEYS 64 /* duplicate keys are looked for among this many */

typedef struct span {
    const char *p;
    size_t n;
} span;

typedef struct scan {
    const char *p, *end;
} scan;

static int cont(const unsigned char *s, size_t i, size_t n, unsigned char lo, unsigned char hi)
{
    return i < n && s[i] >= lo && s[i] <= hi;
}

/* A string as the encoder writes it: the short escapes it uses, no \u, raw
 * UTF-8 (valid, no U+2028/2029). */
static bool string(scan *s, span *out)
{
    const unsigned char *p = (const unsigned char *)s->p, *e = (const unsigned char *)s->end;
    if (p >= e || *p != '"')
        return false;
    const unsigned char *start = ++p;
    while (p < e) {
        unsigned char c = *p;
        if (c == '"') {
            if (out)
                *out = (span){(const char *)start, (size_t)(p - start)};
            s->p = (const char *)p + 1;
            return true;
        }
        if (c == '\\') {
            if (p + 1 >= e || !strchr("\"\\bfnrt", p[1]) || !p[1])
                return false;
            p += 2;
            continue;
        }
        if (c < 0x20)
            return false;
        if (c < 0x80) {
            p++;
            continue;
        }
        size_t n = (size_t)(e - p), k;
        if (c >= 0xC2 && c <= 0xDF)
            k = cont(p, 1, n, 0x80, 0xBF) ? 2 : 0;
        else if (c == 0xE0)
            k = cont(p, 1, n, 0xA0, 0xBF) && cont(p, 2, n, 0x80, 0xBF) ? 3 : 0;
        else if (c == 0xE2)
            k = cont(p, 1, n, 0x80, 0xBF) && cont(p, 2, n, 0x80, 0xBF) &&
                        !(p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9))
                    ? 3
                    : 0;
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
            k = cont(p, 1, n, 0x80, 0xBF) && cont(p, 2, n, 0x80, 0xBF) ? 3 : 0;
        else if (c == 0xED)
            k = cont(p, 1, n, 0x80, 0x9F) && cont(p, 2, n, 0x80, 0xBF) ? 3 : 0;
        else if (c == 0xF0)
            k = cont(p, 1, n, 0x90, 0xBF) && cont(p, 2, n, 0x80, 0xBF) && cont(p, 3, n, 0x80, 0xBF)
                    ? 4
                    : 0;
        else if (c >= 0xF1 && c <= 0xF3)
            k = cont(p, 1, n, 0x80, 0xBF) && cont(p, 2, n, 0x80, 0xBF) && cont(p, 3, n, 0x80, 0xBF)
                    ? 4
                    : 0;
        else if (c == 0xF4)
            k = cont(p, 1, n, 0x80, 0x8F) && cont(p, 2, n, 0x80, 0xBF) && cont(p, 3, n, 0x80, 0xBF)
                    ? 4
                    : 0;
        else
            k = 0;
        if (!k)
            return false;
        p += k;
    }
    return false;
}

/* An integer that decodes to an int64 and encodes back to the same digits
 * (no "-0", no leading zero, at most 18 digits); no fraction, no exponent. */
static bool integer(scan *s)
{
    const char *p = s->p, *e = s->end;
    bool neg = p < e && *p == '-';
    if (neg)
        p++;
    const char *d = p;
    while (p < e && *p >= '0' && *p <= '9')
        p++;
    size_t nd = (size_t)(p - d);
    if (nd == 0 || nd > 18 || (nd > 1 && *d == '0') || (neg && nd == 1 && *d == '0'))
        return false;
    if (p < e && (*p == '.' || *p == 'e' || *p == 'E'))
        return false;
    s->p = p;
    return true;
}

static bool literal(scan *s, const char *w, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n))
        return false;
    s->p += n;
    return true;
}

static bool value(scan *s, int depth);

static bool object(scan *s, int depth)
{
    span keys[MAX_KEYS];
    size_t nk = 0;
    s->p++; /* '{' */
    if (s->p < s->end && *s->p == '}')
        return false; /* {} encodes as [] */
    for (;;) {
        span k;
        if (nk == MAX_KEYS || !string(s, &k) || sjson_is_int_key(k.p, k.n))
            return false;
        for (size_t i = 0; i < nk; i++)
            if (keys[i].n == k.n && !memcmp(keys[i].p, k.p, k.n))
                return false;
        keys[nk++] = k;
        if (s->p >= s->end || *s->p++ != ':' || !value(s, depth + 1))
            return false;
        if (s->p >= s->end)
            return false;
        char c = *s->p++;
        if (c == '}')
            return true;
        if (c != ',')
            return false;
    }
}

static bool array(scan *s, int depth)
{
    s->p++; /* '[' */
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return true;
    }
    for (;;) {
        if (!value(s, depth + 1) || s->p >= s->end)
            return false;
        char c = *s->p++;
        if (c == ']')
            return true;
        if (c != ',')
            return false;
    }
}

static bool value(scan *s, int depth)
{
    if (depth > MAX_DEPTH || s->p >= s->end)
        return false;
    switch (*s->p) {
    case '{':
        return object(s, depth);
    case '[':
        return array(s, depth);
    case '"':
        return string(s, NULL);
    case 't':
        return literal(s, "true", 4);
    case 'f':
        return literal(s, "false", 5);
    case 'n':
        return literal(s, "null", 4);
    default:
        return integer(s);
    }
}

bool reccanon_is_canonical(const char *bytes, size_t len, const char *id)
{
    static const char head[] = "{\"id\":\"", mid[] = "\",\"data\":";
    size_t hl = sizeof head - 1, il = strlen(id), ml = sizeof mid - 1;
    if (len < hl + il + ml + 3 || memcmp(bytes, head, hl) || memcmp(bytes + hl, id, il) ||
        memcmp(bytes + hl + il, mid, ml) || memcmp(bytes + len - 2, "}\n", 2))
        return false;
    scan s = {bytes + hl + il + ml, bytes + len - 2};
    if (*s.p != '{' && *s.p != '[')
        return false;
    return value(&s, 0) && s.p == s.end;
}
