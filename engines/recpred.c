#include "recpred.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "buf.h"
#include "reccanon.h"
#include "recpred_int.h"
#include "sjson.h"

typedef struct span {
    const char *p;
    size_t n;
} span;

/* ---- deciding ---- */

/* memcmp(a, b, n) == 0 inlined for the short keys and values of records:
 * overlapping word loads instead of a call. */
static inline bool eqn(const char *a, const char *b, size_t n)
{
    uint64_t x, y;
    uint32_t u, v;
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 < n; i += 8) {
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y)
                return false;
        }
        memcpy(&x, a + n - 8, 8);
        memcpy(&y, b + n - 8, 8);
        return x == y;
    }
    if (n >= 4) {
        memcpy(&u, a, 4);
        memcpy(&v, b, 4);
        if (u != v)
            return false;
        memcpy(&u, a + n - 4, 4);
        memcpy(&v, b + n - 4, 4);
        return u == v;
    }
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Past the string literal at q (canonical: its escapes are complete). On
 * little-endian machines a word at a time while 8 bytes remain: the lowest
 * high bit of the zero-byte masks of x ^ '"'... and x ^ '\\'... is the first
 * quote or backslash. */
__attribute__((always_inline)) static inline const char *skip_string(const char *q, const char *e)
{
    q++;
    while (q < e) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (e - q >= 8) {
            uint64_t x, a, b, m;
            memcpy(&x, q, 8);
            a = x ^ (ONES * '"');
            b = x ^ (ONES * '\\');
            m = ((a - ONES) & ~a & HIGHS) | ((b - ONES) & ~b & HIGHS);
            if (!m) {
                q += 8;
                continue;
            }
            q += __builtin_ctzll(m) / 8;
        }
#endif
        if (*q == '"')
            return q + 1;
        q += *q == '\\' ? 2 : 1;
    }
    return NULL;
}

static const char *skip_value(const char *q, const char *e)
{
    if (*q == '"')
        return skip_string(q, e);
    if (*q == '{' || *q == '[') {
        int depth = 0;
        while (q < e) {
            char c = *q;
            if (c == '"') {
                if (!(q = skip_string(q, e)))
                    return NULL;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return q + 1;
            q++;
        }
        return NULL;
    }
    while (q < e && *q != ',' && *q != '}' && *q != ']')
        q++;
    return q;
}

/* The values of p's fields in canonical data (p stays NULL for a missing
 * one); false when the bytes are not shaped as canonical data. */
static bool collect(const recpred *p, bool skip_id, const char *s, size_t len, span *vals)
{
    const char *q = s, *e = s + len;
    if (len < 2)
        return false;
    if (*q == '[')
        return true; /* a list: no field */
    if (*q != '{' || e[-1] != '}')
        return false;
    size_t need = p->nf - (skip_id ? 1 : 0), found = 0;
    if (need == 0)
        return true;
    q++;
    while (q < e && *q == '"') {
        const char *k = q, *v = NULL;
        for (size_t i = 0; i < p->nf; i++) {
            const pfield *f = &p->f[i];
            /* enc is a whole literal, so matching it at k means the key is it */
            if ((size_t)(e - k) > f->enclen && k[f->enclen] == ':' && eqn(k, f->enc, f->enclen) &&
                !(skip_id && f->is_id)) {
                v = k + f->enclen + 1;
                q = skip_value(v, e);
                if (!q || q >= e)
                    return false;
                if (!vals[i].p) {
                    vals[i] = (span){v, (size_t)(q - v)};
                    if (++found == need)
                        return true;
                }
                break;
            }
        }
        if (!v) {
            if (!(q = skip_string(k, e)) || q >= e || *q != ':' || ++q >= e ||
                !(q = skip_value(q, e)) || q >= e)
                return false;
        }
        if (*q == '}')
            return q + 1 == e;
        if (*q != ',')
            return false;
        q++;
    }
    return false;
}

static int cmp_span(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    if (c)
        return c < 0 ? -1 : 1;
    return al < bl ? -1 : al > bl;
}

/* query_compare(v, w)'s sign, or 2 when the bytes do not decide it. */
static int compare(span v, const pval *w)
{
    int rv = rank_of(v.p[0]);
    if (rv < 0 || w->rank < 0)
        return 2;
    if (rv != w->rank)
        return rv < w->rank ? -1 : 1;
    switch (rv) {
    case 0:
        if (memchr(v.p, '\\', v.n) || memchr(w->p, '\\', w->n))
            return 2;
        return cmp_span(v.p + 1, v.n - 2, w->p + 1, w->n - 2);
    case 1: {
        long long x;
        if (!int_of(v.p, v.n, &x))
            return 2; /* a float */
        return x < w->i ? -1 : x > w->i;
    }
    default: /* false, null, true: one value each */
        return 0;
    }
}

static bool same(span v, const pval *w)
{
    return v.n == w->n && eqn(v.p, w->p, v.n);
}

/* c on its field's value v (v.p NULL: missing): 1, 0, or -1 when unsure. */
static int cond(const pcond *c, span v)
{
    bool exists = v.p != NULL;
    int x, y;
    switch (c->op) {
    case QOP_EQ:
        return exists && same(v, &c->v[0]);
    case QOP_NEQ:
        return !exists || !same(v, &c->v[0]);
    case QOP_IN:
    case QOP_NOTIN: {
        bool any = false;
        for (size_t i = 0; exists && !any && i < c->nv; i++)
            any = same(v, &c->v[i]);
        return c->op == QOP_IN ? exists && any : !exists || !any;
    }
    case QOP_EXISTS:
        return exists;
    case QOP_MISSING:
        return !exists;
    case QOP_PREFIX: {
        size_t pl = c->v[0].n - 2; /* no escapes in it: its bytes as they are */
        return exists && v.p[0] == '"' && v.n - 2 >= pl && !memcmp(v.p + 1, c->v[0].p + 1, pl);
    }
    default:
        break;
    }
    if (!exists)
        return 0;
    if ((x = compare(v, &c->v[0])) == 2)
        return -1;
    switch (c->op) {
    case QOP_GT:
        return x > 0;
    case QOP_GTE:
        return x >= 0;
    case QOP_LT:
        return x < 0;
    case QOP_LTE:
        return x <= 0;
    default: /* between */
        if (x < 0)
            return 0;
        if ((y = compare(v, &c->v[1])) == 2)
            return -1;
        return y <= 0;
    }
}

static int decide(const recpred *p, const span *vals)
{
    bool unsure = false;
    size_t i = 0;
    for (size_t g = 0; g < p->ng; g++) {
        int all = 1;
        for (; i < p->gend[g]; i++) {
            int r = cond(&p->c[i], vals[p->c[i].field]);
            if (r == 0) {
                all = 0;
                break;
            }
            if (r < 0)
                all = -1;
        }
        i = p->gend[g];
        if (all == 1)
            return RECPRED_YES;
        if (all < 0)
            unsure = true;
    }
    return unsure ? RECPRED_UNSURE : RECPRED_NO;
}

/* The record's id as the value of "id": false when it would need escapes. */
static bool id_value(const recpred *p, const char *id, span *vals, char *tmp, size_t cap)
{
    size_t n = strlen(id);
    if (n + 2 > cap || strpbrk(id, "\"\\"))
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] < 0x20)
            return false;
    tmp[0] = '"';
    memcpy(tmp + 1, id, n);
    tmp[n + 1] = '"';
    for (size_t i = 0; i < p->nf; i++)
        if (p->f[i].is_id)
            vals[i] = (span){tmp, n + 2};
    return true;
}

/* Past a member "key":value whose key and string or scalar value lie in
 * the 16 bytes at q without an escape: its delimiter, found from the masks
 * of quotes and delimiters in one load. NULL: take the long way. */
static inline const char *skip_member16(const char *q, const char *e)
{
#if defined(__SSE2__)
    if (e - q < 16)
        return NULL;
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
    unsigned qm = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    unsigned bm = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    qm &= qm - 1; /* past the key's opening quote */
    if (!qm)
        return NULL;
    unsigned kc = (unsigned)__builtin_ctz(qm); /* the key's closing quote */
    if (kc > 13 || q[kc + 1] != ':')
        return NULL;
    unsigned end;
    char c = q[kc + 2];
    if (c == '"') {
        qm &= qm - 1; /* the value's opening quote */
        qm &= qm - 1;
        if (!qm)
            return NULL;
        end = (unsigned)__builtin_ctz(qm) + 1;
    } else if (c == '{' || c == '[') {
        return NULL;
    } else { /* a number or a literal: up to the next ',' or '}' */
        unsigned dm = (unsigned)_mm_movemask_epi8(_mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8(',')), _mm_cmpeq_epi8(v, _mm_set1_epi8('}'))));
        dm &= ~((4u << kc) - 1);
        if (!dm)
            return NULL;
        end = (unsigned)__builtin_ctz(dm);
    }
    if (bm & ((1u << end) - 1))
        return NULL; /* an escape before it: the quotes are not what they seem */
    return q + end;
#else
    (void)q;
    (void)e;
    return NULL;
#endif
}

#define NOT_THE_KEY 2

/* What the member at q says of eq1's needle: RECPRED_YES or RECPRED_NO when
 * its key is the field, else NOT_THE_KEY. The needle's key part is a whole
 * literal and ':', so matching it at q means the key is the field; its
 * value part is a whole value, so matching it after means the value is the
 * operand (the delimiter after it rules out a longer number). */
static inline int member_verdict(const recpred *p, const char *q, const char *e)
{
#if defined(__SSE2__)
    if (p->n32ok && e - q > 32) { /* two 16-byte lanes against the needle's */
        unsigned m0 = (unsigned)_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)q),
                           _mm_loadu_si128((const __m128i *)(const void *)p->n32)));
        if ((m0 & p->kbits) != p->kbits)
            return NOT_THE_KEY;
        unsigned m1 = 0;
        if (p->nbits1)
            m1 = (unsigned)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(q + 16)),
                               _mm_loadu_si128((const __m128i *)(const void *)(p->n32 + 16))));
        char d = q[p->nlen];
        return (m0 & p->nbits0) == p->nbits0 && (m1 & p->nbits1) == p->nbits1 &&
                       (d == ',' || d == '}')
                   ? RECPRED_YES
                   : RECPRED_NO;
    }
#endif
    bool key;
    if (e - q >= 8) { /* a key of up to 7 bytes and its ':': one masked word */
        uint64_t x;
        memcpy(&x, q, 8);
        key = (x & p->km) == p->kw &&
              (p->klen1 <= 8 || ((size_t)(e - q) > p->klen1 && eqn(q, p->needle, p->klen1)));
    } else {
        key = (size_t)(e - q) > p->klen1 && eqn(q, p->needle, p->klen1);
    }
    if (!key)
        return NOT_THE_KEY;
    const char *v = q + p->klen1;
    size_t wn = p->nlen - p->klen1;
    return (size_t)(e - v) > wn && eqn(v, p->needle + p->klen1, wn) &&
                   (v[wn] == ',' || v[wn] == '}')
               ? RECPRED_YES
               : RECPRED_NO;
}

/* Where eq1's key is among the members after the first (the caller tried
 * it) that start in the 16 bytes after the object's '{'; NULL: walk the
 * members. The first position holding an unescaped quote, the key's first
 * byte and its colon where the key would end, with no escape and no
 * container before it, is an opening quote outside any string (the byte
 * after it cannot follow a closing quote: f16ok) of a member of this
 * object. */
static inline const char *first16(const recpred *p, const char *s, const char *e)
{
#if defined(__SSE2__)
    if (!p->f16ok || e - s < (ptrdiff_t)p->klen1 + 16 || *s != '{')
        return NULL;
    const char *b = s + 1;
    __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)b);
    __m128i c =
        _mm_and_si128(_mm_cmpeq_epi8(v0, _mm_set1_epi8('"')),
                      _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(b + 1)),
                                     _mm_loadu_si128((const __m128i *)(const void *)p->c1)));
    c = _mm_and_si128(
        c, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(b + p->klen1 - 1)),
                          _mm_set1_epi8(':')));
    unsigned cand = (unsigned)_mm_movemask_epi8(c) & ~1u; /* the caller tried the first */
    if (!cand)
        return NULL;
    __m128i r = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v0, _mm_set1_epi8('\\')),
                                          _mm_cmpeq_epi8(v0, _mm_set1_epi8('{'))),
                             _mm_cmpeq_epi8(v0, _mm_set1_epi8('[')));
    unsigned j = (unsigned)__builtin_ctz(cand);
    const char *q = b + j;
    if ((unsigned)_mm_movemask_epi8(r) & ((1u << j) - 1) || (q[-1] != ',' && q[-1] != '{'))
        return NULL;
    return q;
#else
    (void)p;
    (void)s;
    (void)e;
    return NULL;
#endif
}

/* The common filter, one field equal to one value: the first member whose
 * key is the field's decides, without collecting anything. */
static int eq1_match(const recpred *p, const char *s, size_t len)
{
    const char *q = s, *e = s + len, *at;
    if (len < 2)
        return RECPRED_UNSURE;
    if (*q == '[')
        return RECPRED_NO; /* a list: no field */
    if (*q != '{' || e[-1] != '}' || *++q != '"')
        return RECPRED_UNSURE;
    int v = member_verdict(p, q, e);
    if (v != NOT_THE_KEY)
        return v;
    /* the first member is not it: the others near it at once */
    if ((at = first16(p, s, e)) && (v = member_verdict(p, at, e)) != NOT_THE_KEY)
        return v;
    for (;;) { /* q: a member that is not the field's */
        const char *next = skip_member16(q, e);
        if (next) {
            q = next;
        } else {
            if (!(q = skip_string(q, e)) || q >= e || *q != ':' || ++q >= e)
                return RECPRED_UNSURE;
            q = *q == '"' ? skip_string(q, e) : skip_value(q, e);
            if (!q || q >= e)
                return RECPRED_UNSURE;
        }
        if (*q == '}')
            return q + 1 == e ? RECPRED_NO : RECPRED_UNSURE;
        if (*q != ',' || ++q >= e || *q != '"')
            return RECPRED_UNSURE;
        if ((v = member_verdict(p, q, e)) != NOT_THE_KEY)
            return v;
    }
}

/* Every other predicate: the fields' values collected in one scan, then
 * the groups decided on them. */
static int general_match(const recpred *p, const char *id, const char *data, size_t len)
{
    span vals[MAX_FIELDS];
    memset(vals, 0, p->nf * sizeof *vals);
    char idq[72];
    bool by_id = id && p->has_id;
    if (!collect(p, by_id, data, len, vals))
        return RECPRED_UNSURE;
    if (by_id && !id_value(p, id, vals, idq, sizeof idq))
        return RECPRED_UNSURE;
    return decide(p, vals);
}

int recpred_match_data(const recpred *p, const char *id, const char *data, size_t len)
{
    return p->eq1 ? eq1_match(p, data, len) : general_match(p, id, data, len);
}

int recpred_match_canonical(const recpred *p, const char *id, const char *bytes, size_t len)
{
    size_t at = 7 + strlen(id) + 9; /* {"id":"<id>","data": */
    return recpred_match_data(p, id, bytes + at, len - at - 2);
}

int recpred_match_record(const recpred *p, const char *id, const char *bytes, size_t len)
{
    /* one pass to know the bytes are the encoder's, one to decide on them */
    if (!reccanon_is_canonical(bytes, len, id))
        return RECPRED_UNSURE;
    return recpred_match_canonical(p, id, bytes, len);
}
