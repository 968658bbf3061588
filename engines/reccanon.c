#include "reccanon.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "buf.h"
#include "sjson.h"

#define MAX_DEPTH 64
#define MAX_KEYS 64 /* duplicate keys are looked for among this many */

typedef struct span {
    const char *p;
    size_t n;
} span;

typedef struct scan {
    const char *p, *end;
    reccanon_member_fn fn; /* the members of the objects at fn_depth, if set */
    reccanon_item_fn item; /* the items of the top list, if set */
    int fn_depth;
    void *ctx;
} scan;

static int cont(const unsigned char *s, size_t i, size_t n, unsigned char lo, unsigned char hi)
{
    return i < n && s[i] >= lo && s[i] <= hi;
}

#if defined(__SSE2__)
/* Bit i set when byte i of the 16 at p needs the byte-wise check: a quote,
 * a backslash, a control byte or a byte of a multi-byte sequence (signed,
 * 0x80 and up are below 0x20). */
static unsigned special16(const unsigned char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m =
        _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
    m = _mm_or_si128(m, _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)));
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* A string as the encoder writes it: the short escapes it uses, no \u, raw
 * UTF-8 (valid, no U+2028/2029). */
static bool string(scan *s, span *out)
{
    const unsigned char *p = (const unsigned char *)s->p, *e = (const unsigned char *)s->end;
    if (p >= e || *p != '"')
        return false;
    const unsigned char *start = ++p;
    while (p < e) {
#if defined(__SSE2__)
        /* plain ASCII goes 16 bytes at a time, to the next byte to check */
        if (e - p >= 16) {
            unsigned m = special16(p);
            if (!m) {
                p += 16;
                continue;
            }
            p += __builtin_ctz(m);
        }
#endif
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
        if (s->p >= s->end || *s->p++ != ':')
            return false;
        const char *v = s->p;
        if (!value(s, depth + 1))
            return false;
        if (depth == s->fn_depth && s->fn) {
            if (memchr(k.p, '\\', k.n))
                return false; /* the caller would need the key decoded */
            s->fn(k.p, k.n, v, (size_t)(s->p - v), s->ctx);
        }
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
        const char *v = s->p;
        if (!value(s, depth + 1) || s->p >= s->end)
            return false;
        if (depth == 0 && s->item)
            s->item(v, (size_t)(s->p - v), s->ctx);
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

static bool check(const char *bytes, size_t len, const char *id, reccanon_member_fn fn, void *ctx)
{
    static const char head[] = "{\"id\":\"", mid[] = "\",\"data\":";
    size_t hl = sizeof head - 1, il = strlen(id), ml = sizeof mid - 1;
    if (len < hl + il + ml + 3 || memcmp(bytes, head, hl) || memcmp(bytes + hl, id, il) ||
        memcmp(bytes + hl + il, mid, ml) || memcmp(bytes + len - 2, "}\n", 2))
        return false;
    scan s = {bytes + hl + il + ml, bytes + len - 2, fn, NULL, 0, ctx};
    if (*s.p != '{' && *s.p != '[')
        return false;
    return value(&s, 0) && s.p == s.end;
}

bool reccanon_is_canonical(const char *bytes, size_t len, const char *id)
{
    return check(bytes, len, id, NULL, NULL);
}

bool reccanon_members(const char *bytes, size_t len, const char *id, reccanon_member_fn fn,
                      void *ctx)
{
    return check(bytes, len, id, fn, ctx);
}

typedef struct proj {
    const char *const *fields;
    size_t n;
    json_t *out;
    bool failed;
} proj;

/* A member's value bytes (canonical, so plain scalars need no parser). */
static json_t *decode_value(const char *v, size_t n)
{
    if (n >= 2 && v[0] == '"' && !memchr(v, '\\', n))
        return json_stringn(v + 1, n - 2);
    if (n == 4 && !memcmp(v, "true", 4))
        return json_true();
    if (n == 5 && !memcmp(v, "false", 5))
        return json_false();
    if (n == 4 && !memcmp(v, "null", 4))
        return json_null();
    if (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
        /* an integer check() accepted: a sign, then 1 to 18 digits (no
         * overflow), and nothing else */
        bool neg = v[0] == '-';
        long long x = 0;
        for (size_t i = neg; i < n; i++)
            x = x * 10 + (v[i] - '0');
        return json_integer(neg ? -x : x);
    }
    return sjson_loadb(v, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
}

static void keep_member(const char *k, size_t kl, const char *v, size_t vl, void *ctx)
{
    proj *p = ctx;
    for (size_t i = 0; i < p->n; i++) {
        if (strlen(p->fields[i]) != kl || memcmp(p->fields[i], k, kl))
            continue;
        json_t *val = decode_value(v, vl);
        /* the key: valid UTF-8 without escapes, as check() accepted it */
        if (!val || json_object_setn_new_nocheck(p->out, k, kl, val))
            p->failed = true;
        return;
    }
}

json_t *reccanon_project(const char *bytes, size_t len, const char *id, const char *const *fields,
                         size_t n)
{
    size_t at = 7 + strlen(id) + 9; /* {"id":"<id>","data": */
    bool list = len > at && bytes[at] == '[';
    proj p = {fields, n, list ? json_array() : json_object(), false};
    if (!p.out)
        return NULL;
    if (!reccanon_members(bytes, len, id, keep_member, &p) || p.failed) {
        json_decref(p.out);
        return NULL;
    }
    return p.out;
}

/* ---- building the tree of bytes check() accepted ---- */

/* A validated string literal at *p (escapes only the short ones) into its
 * value: out gets the bytes, unescaped. */
static void unescape(const char **p, buf *out)
{
    const char *q = *p + 1;
    buf_reset(out);
    for (;;) {
        const char *run = q;
        while (*q != '"' && *q != '\\')
            q++;
        buf_append(out, run, (size_t)(q - run));
        if (*q == '"')
            break;
        char c = q[1];
        buf_appendc(out, c == 'b'   ? '\b'
                         : c == 'f' ? '\f'
                         : c == 'n' ? '\n'
                         : c == 'r' ? '\r'
                         : c == 't' ? '\t'
                                    : c);
        q += 2;
    }
    *p = q + 1;
}

static json_t *build(const char **p, buf *tmp)
{
    const char *q = *p;
    json_t *v;
    switch (*q) {
    case '{': {
        v = json_object();
        q++;
        for (;;) {
            unescape(&q, tmp);
            if (buf_failed(tmp)) {
                json_decref(v);
                return NULL;
            }
            size_t kl = tmp->len;
            char kbuf[256], *k = kl < sizeof kbuf ? kbuf : malloc(kl + 1);
            if (k)
                memcpy(k, tmp->data ? tmp->data : "", kl + 1);
            q++; /* ':' */
            json_t *e = k ? build(&q, tmp) : NULL;
            if (!v || !e || json_object_setn_new_nocheck(v, k, kl, e)) {
                if (k != kbuf)
                    free(k);
                json_decref(v);
                return NULL;
            }
            if (k != kbuf)
                free(k);
            if (*q++ == '}')
                break;
        }
        break;
    }
    case '[':
        v = json_array();
        q++;
        if (*q == ']') {
            q++;
            break;
        }
        for (;;) {
            json_t *e = build(&q, tmp);
            if (!v || !e || json_array_append_new(v, e)) {
                json_decref(v);
                return NULL;
            }
            if (*q++ == ']')
                break;
        }
        break;
    case '"': {
        const char *r = q + 1;
        while (*r != '"' && *r != '\\')
            r++;
        if (*r == '"') { /* no escapes: the bytes as they are (UTF-8 checked) */
            v = json_stringn_nocheck(q + 1, (size_t)(r - q - 1));
            q = r + 1;
        } else {
            unescape(&q, tmp);
            v = buf_failed(tmp) ? NULL : json_stringn_nocheck(tmp->data, tmp->len);
        }
        break;
    }
    case 't':
        v = json_true();
        q += 4;
        break;
    case 'f':
        v = json_false();
        q += 5;
        break;
    case 'n':
        v = json_null();
        q += 4;
        break;
    default: {
        char *end;
        v = json_integer(strtoll(q, &end, 10)); /* at most 18 digits */
        q = end;
    }
    }
    *p = q;
    return v;
}

json_t *reccanon_decode(const char *bytes, size_t len, const char *id)
{
    if (!check(bytes, len, id, NULL, NULL))
        return NULL;
    return reccanon_decode_checked(bytes, id);
}

json_t *reccanon_decode_checked(const char *bytes, const char *id)
{
    const char *p = bytes + 7 + strlen(id) + 9; /* {"id":"<id>","data": */
    buf tmp = BUF_INIT;
    json_t *v = build(&p, &tmp);
    buf_free(&tmp);
    return v;
}

/* ---- a value on its own (a log line's data) ---- */

bool reccanon_value_is_canonical(const char *bytes, size_t len)
{
    if (!len || (*bytes != '{' && *bytes != '['))
        return false;
    scan s = {bytes, bytes + len, NULL, NULL, 0, NULL};
    return value(&s, 0) && s.p == s.end;
}

size_t reccanon_value_span(const char *bytes, size_t len)
{
    if (!len || (*bytes != '{' && *bytes != '['))
        return 0;
    scan s = {bytes, bytes + len, NULL, NULL, 0, NULL};
    return value(&s, 0) ? (size_t)(s.p - bytes) : 0;
}

bool reccanon_value_members(const char *bytes, size_t len, reccanon_member_fn fn, void *ctx)
{
    if (!len || *bytes != '{')
        return false;
    scan s = {bytes, bytes + len, fn, NULL, 0, ctx};
    return value(&s, 0) && s.p == s.end;
}

bool reccanon_list_members(const char *bytes, size_t len, reccanon_member_fn fn,
                           reccanon_item_fn item, void *ctx)
{
    if (!len || *bytes != '[')
        return false;
    scan s = {bytes, bytes + len, fn, item, 1, ctx};
    return value(&s, 0) && s.p == s.end;
}

json_t *reccanon_value_decode(const char *bytes, size_t len)
{
    if (!reccanon_value_is_canonical(bytes, len))
        return NULL;
    const char *p = bytes;
    buf tmp = BUF_INIT;
    json_t *v = build(&p, &tmp);
    buf_free(&tmp);
    return v;
}
