#include "sjson.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hexdig[] = "0123456789abcdef";

/* The bytes that sjson_encode_string cannot copy as they are: controls,
 * quote, backslash, and 0xE2 (the lead byte of U+2028 and U+2029). */
static bool needs_care(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\' || c == 0xE2;
}

#define BYTES1 UINT64_C(0x0101010101010101)
#define BYTES80 UINT64_C(0x8080808080808080)

/* Whether any of the 8 bytes at p needs care (exact, by the SWAR "has a
 * zero byte" and "has a byte below n" tests): a long run of plain bytes
 * is passed over a word at a time. */
static bool word_needs_care(const char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    uint64_t q = w ^ (BYTES1 * '"'), b = w ^ (BYTES1 * '\\'), e = w ^ (BYTES1 * 0xE2);
    return (((q - BYTES1) & ~q) | ((b - BYTES1) & ~b) | ((e - BYTES1) & ~e) |
            ((w - BYTES1 * 0x20) & ~w)) &
           BYTES80;
}

void sjson_encode_string(buf *out, const char *s, size_t len)
{
    if (!buf_reserve(out, len + 2))
        return;
    size_t plain = 0;
    while (len - plain >= 8 && !word_needs_care(s + plain))
        plain += 8;
    while (plain < len && !needs_care((unsigned char)s[plain]))
        plain++;
    if (plain == len) { /* most strings: copied in place, quoted */
        char *p = out->data + out->len;
        *p = '"';
        memcpy(p + 1, s, len);
        p[len + 1] = '"';
        out->len += len + 2;
        out->data[out->len] = '\0';
        return;
    }
    buf_appendc(out, '"');
    size_t run = 0; /* start of the pending unescaped run */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char ubuf[7];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c < 0x20) {
            switch (c) {
            case '\b':
                esc = "\\b";
                break;
            case '\f':
                esc = "\\f";
                break;
            case '\n':
                esc = "\\n";
                break;
            case '\r':
                esc = "\\r";
                break;
            case '\t':
                esc = "\\t";
                break;
            default:
                ubuf[0] = '\\';
                ubuf[1] = 'u';
                ubuf[2] = '0';
                ubuf[3] = '0';
                ubuf[4] = hexdig[c >> 4];
                ubuf[5] = hexdig[c & 0xf];
                ubuf[6] = '\0';
                esc = ubuf;
            }
        } else if (c == 0xE2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
                   ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) {
            /* U+2028 / U+2029 are escaped although other non-ASCII is not. */
            buf_append(out, s + run, i - run);
            buf_appends(out, (unsigned char)s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029");
            i += 2;
            run = i + 1;
            continue;
        }
        if (esc) {
            buf_append(out, s + run, i - run);
            buf_appends(out, esc);
            run = i + 1;
        }
    }
    buf_append(out, s + run, len - run);
    buf_appendc(out, '"');
}

/* The significant digits of v (non-negative) with the fewest of at least
 * from_prec + 1 digits that round-trips, up to 17: digits (no trailing
 * zeros) and decpt with value = 0.DIGITS x 10^decpt. from_prec 0 gives the
 * shortest string, 16 the 17 digits of %.17G. */
static void sig_digits(double v, int from_prec, char digits[20], int *ndig, int *decpt)
{
    char tmp[40];
    for (int prec = from_prec; prec <= 16; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec, v);
        if (strtod(tmp, NULL) == v || prec == 16)
            break;
    }
    /* tmp = "d.ddde[+-]X" (v is non-negative here) */
    int n = 0;
    const char *p = tmp;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[n++] = *p;
    int exp10 = atoi(p + 1);
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
    *ndig = n;
    *decpt = exp10 + 1;
}

/* Writes v as PHP prints a float with precision 17 (serialize_precision -1
 * or %.17G): positional between 1e-4 and 1e17, else d.ddd with exponent
 * letter e; zero_fraction keeps ".0" on a whole number (json_encode's
 * PRESERVE_ZERO_FRACTION). Returns the length written. */
static int format_php(double v, int from_prec, char e, bool zero_fraction, char out[32])
{
    char *o = out;
    if (signbit(v)) {
        *o++ = '-';
        v = -v;
    }
    if (v == 0) {
        const char *z = zero_fraction ? "0.0" : "0";
        size_t zl = strlen(z);
        memcpy(o, z, zl + 1);
        return (int)(o - out) + (int)zl;
    }
    char d[20];
    int n, decpt;
    sig_digits(v, from_prec, d, &n, &decpt);
    if (decpt > 17 || decpt < -3) {
        *o++ = d[0];
        *o++ = '.';
        if (n > 1) {
            memcpy(o, d + 1, (size_t)n - 1);
            o += n - 1;
        } else {
            *o++ = '0';
        }
        o += sprintf(o, "%c%c%d", e, decpt - 1 >= 0 ? '+' : '-', abs(decpt - 1));
    } else if (decpt <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -decpt; i++)
            *o++ = '0';
        memcpy(o, d, (size_t)n);
        o += n;
    } else {
        for (int i = 0; i < decpt; i++)
            *o++ = i < n ? d[i] : '0';
        if (n > decpt) {
            *o++ = '.';
            memcpy(o, d + decpt, (size_t)(n - decpt));
            o += n - decpt;
        } else if (zero_fraction) {
            *o++ = '.';
            *o++ = '0';
        }
    }
    *o = '\0';
    return (int)(o - out);
}

int sjson_format_double(double v, char out[32])
{
    return format_php(v, 0, 'e', true, out);
}

int sjson_format_g17(double v, char out[32])
{
    return format_php(v, 16, 'E', false, out);
}

bool sjson_is_int_key(const char *k, size_t len)
{
    if (len == 0 || len > 20)
        return false;
    size_t i = 0;
    bool neg = k[0] == '-';
    if (neg)
        i = 1;
    if (i == len)
        return false;
    if (k[i] == '0')
        return len == 1; /* "0" yes; "05", "-0" no */
    for (size_t j = i; j < len; j++)
        if (k[j] < '0' || k[j] > '9')
            return false;
    /* int64 range: compare digit strings against the limits */
    size_t nd = len - i;
    const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
    if (nd < 19)
        return true;
    if (nd > 19)
        return false;
    return memcmp(k + i, lim, 19) <= 0;
}

bool sjson_object_is_list(const json_t *obj)
{
    const char *key;
    size_t klen;
    json_t *val;
    size_t idx = 0;
    json_object_keylen_foreach ((json_t *)obj, key, klen, val) {
        (void)val;
        /* key must be idx in decimal (no printf: this runs for every object
         * encoded) */
        char want[24], *e = want + sizeof want, *p = e;
        size_t x = idx;
        do {
            *--p = (char)('0' + x % 10);
            x /= 10;
        } while (x);
        if ((size_t)(e - p) != klen || memcmp(key, p, klen) != 0)
            return false;
        idx++;
    }
    return true;
}

bool sjson_top_keys_ok(const json_t *obj)
{
    if (!json_is_object(obj))
        return false;
    const char *key;
    size_t klen;
    json_t *val;
    json_object_keylen_foreach ((json_t *)obj, key, klen, val) {
        (void)val;
        if (sjson_is_int_key(key, klen))
            return false;
    }
    return true;
}

static void indent(buf *out, int depth)
{
    buf_appendc(out, '\n');
    for (int i = 0; i < depth; i++)
        buf_append(out, "    ", 4);
}

static int encode(buf *out, const json_t *v, unsigned flags, int depth, storh_err *err)
{
    bool pretty = flags & SJSON_PRETTY;
    if (depth > SJSON_MAX_DEPTH)
        return storh_err_set(err, STORH_EINVAL, "JSON nesting is deeper than %d levels.",
                             SJSON_MAX_DEPTH);
    switch (json_typeof(v)) {
    case JSON_NULL:
        buf_append(out, "null", 4);
        return 0;
    case JSON_TRUE:
        buf_append(out, "true", 4);
        return 0;
    case JSON_FALSE:
        buf_append(out, "false", 5);
        return 0;
    case JSON_INTEGER:
        buf_append_i64(out, (long long)json_integer_value(v));
        return 0;
    case JSON_REAL: {
        double d = json_real_value(v);
        if (!isfinite(d))
            return storh_err_set(err, STORH_EINVAL, "Inf and NaN cannot be JSON encoded.");
        char tmp[32];
        int n = sjson_format_double(d, tmp);
        buf_append(out, tmp, (size_t)n);
        return 0;
    }
    case JSON_STRING:
        sjson_encode_string(out, json_string_value(v), json_string_length(v));
        return 0;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        buf_appendc(out, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                buf_appendc(out, ',');
            if (pretty)
                indent(out, depth + 1);
            int rc = encode(out, json_array_get(v, i), flags, depth + 1, err);
            if (rc)
                return rc;
        }
        if (pretty && n)
            indent(out, depth);
        buf_appendc(out, ']');
        return 0;
    }
    case JSON_OBJECT: {
        bool list = sjson_object_is_list(v);
        buf_appendc(out, list ? '[' : '{');
        const char *key;
        size_t klen;
        json_t *val;
        bool first = true;
        json_object_keylen_foreach ((json_t *)v, key, klen, val) {
            if (!first)
                buf_appendc(out, ',');
            first = false;
            if (pretty)
                indent(out, depth + 1);
            if (!list) {
                sjson_encode_string(out, key, klen);
                buf_append(out, pretty ? ": " : ":", pretty ? 2 : 1);
            }
            int rc = encode(out, val, flags, depth + 1, err);
            if (rc)
                return rc;
        }
        if (pretty && !first)
            indent(out, depth);
        buf_appendc(out, list ? ']' : '}');
        return 0;
    }
    }
    return storh_err_set(err, STORH_EINVAL, "Unknown JSON value type.");
}

int sjson_encode(buf *out, const json_t *v, unsigned flags, storh_err *err)
{
    int rc = encode(out, v, flags, 0, err);
    if (rc == 0 && buf_failed(out))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory while encoding JSON.");
    return rc;
}

int sjson_encode_doc(buf *out, const json_t *obj, unsigned flags, storh_err *err)
{
    if (json_is_object(obj) && json_object_size(obj) == 0) {
        buf_append(out, "{}\n", 3);
        return buf_failed(out) ? storh_err_set(err, STORH_ENOMEM, "Out of memory.") : 0;
    }
    int rc = sjson_encode(out, obj, flags, err);
    if (rc == 0)
        buf_appendc(out, '\n');
    return rc;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* An integer literal ("-"? digits) beyond int64, which PHP reads as a float. */
static bool int_beyond_int64(const char *p, size_t n)
{
    size_t i = p[0] == '-';
    size_t nd = n - i;
    if (nd != 19)
        return nd > 19;
    return memcmp(p + i, i ? "9223372036854775808" : "9223372036854775807", 19) > 0;
}

/* s with ".0" after every integer literal beyond int64 outside strings, so
 * jansson reads it with strtod, as PHP's json_decode does. */
static void widen_big_ints(buf *out, const char *s, size_t len)
{
    size_t run = 0, i = 0;
    while (i < len) {
        char c = s[i];
        if (c == '"') {
            for (i++; i < len && s[i] != '"'; i += s[i] == '\\' ? 2 : 1)
                ;
            i++;
            continue;
        }
        if (c != '-' && !is_digit(c)) {
            i++;
            continue;
        }
        size_t j = i + 1;
        bool integral = true;
        for (; j < len && (is_digit(s[j]) || (s[j] && strchr(".eE+-", s[j]))); j++)
            integral = integral && is_digit(s[j]);
        if (integral && int_beyond_int64(s + i, j - i)) {
            buf_append(out, s + run, j - run);
            buf_append(out, ".0", 2);
            run = j;
        }
        i = j;
    }
    if (run < len)
        buf_append(out, s + run, len - run);
}

json_t *sjson_loadb(const char *s, size_t len, size_t flags, json_error_t *error)
{
    json_error_t local = {0};
    json_error_t *e = error ? error : &local;
    json_t *v = json_loadb(s, len, flags, e);
    if (v || json_error_code(e) != json_error_numeric_overflow)
        return v;
    buf w = BUF_INIT;
    widen_big_ints(&w, s, len);
    if (!buf_failed(&w))
        v = json_loadb(w.data ? w.data : "", w.len, flags, e);
    buf_free(&w);
    return v;
}

json_t *sjson_decode(const char *s, size_t len, storh_err *err)
{
    json_error_t je;
    json_t *v = sjson_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!v)
        storh_err_set(err, STORH_EINVAL, "Invalid JSON at line %d, column %d: %s", je.line,
                      je.column, je.text);
    return v;
}

static bool php_trim_char(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0' || c == '\v';
}

static void trim(const char **s, size_t *len)
{
    while (*len && php_trim_char(**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len && php_trim_char((*s)[*len - 1]))
        (*len)--;
}

static bool braced(const char *s, size_t len)
{
    return len >= 2 && s[0] == '{' && s[len - 1] == '}';
}

void sjson_strip_jsonc(buf *out, const char *s, size_t len)
{
    buf nc = BUF_INIT; /* without comments */
    buf_reserve(&nc, len);
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < len && s[j] != '"')
                j += (s[j] == '\\') ? 2 : 1;
            if (j > len)
                j = len;
            size_t end = j < len ? j + 1 : len;
            buf_append(&nc, s + i, end - i);
            i = end;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n' && s[i] != '\r')
                i++;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            size_t j = i + 2;
            while (j + 1 < len && !(s[j] == '*' && s[j + 1] == '/'))
                j++;
            bool closed = j + 1 < len;
            size_t stop = closed ? j : (len ? len - 1 : 0);
            for (size_t k = i; k < stop; k++)
                buf_appendc(&nc, (s[k] == '\n' || s[k] == '\r') ? s[k] : ' ');
            i = closed ? j + 2 : len;
        } else {
            buf_appendc(&nc, c);
            i++;
        }
    }
    /* trailing commas: a ',' followed only by whitespace and then } or ] */
    const char *t = nc.data ? nc.data : "";
    size_t tl = nc.len;
    for (size_t i = 0; i < tl;) {
        char c = t[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < tl && t[j] != '"')
                j += (t[j] == '\\') ? 2 : 1;
            size_t end = j < tl ? j + 1 : tl;
            buf_append(out, t + i, end - i);
            i = end;
            continue;
        }
        if (c == ',') {
            size_t j = i + 1;
            while (j < tl && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r' ||
                              t[j] == '\v' || t[j] == '\f'))
                j++;
            if (j < tl && (t[j] == '}' || t[j] == ']')) {
                i++;
                continue;
            }
        }
        buf_appendc(out, c);
        i++;
    }
    buf_free(&nc);
}

static json_t *check_object(json_t *v, storh_err *err)
{
    if (!v || sjson_top_keys_ok(v))
        return v;
    json_decref(v);
    storh_err_set(err, STORH_ECORRUPT, "JSONC document must decode to an object.");
    return NULL;
}

json_t *sjson_decode_jsonc_object(const char *s, size_t len, storh_err *err)
{
    const char *t = s;
    size_t tl = len;
    trim(&t, &tl);
    if (braced(t, tl)) {
        json_t *v = sjson_loadb(t, tl, JSON_ALLOW_NUL, NULL);
        if (v)
            return check_object(v, err);
    }
    buf clean = BUF_INIT;
    sjson_strip_jsonc(&clean, s, len);
    const char *c = clean.data ? clean.data : "";
    size_t cl = clean.len;
    trim(&c, &cl);
    json_t *v = NULL;
    if (!braced(c, cl)) {
        storh_err_set(err, STORH_ECORRUPT, "JSONC document must decode to an object.");
    } else {
        json_error_t je;
        v = sjson_loadb(c, cl, JSON_ALLOW_NUL, &je);
        if (!v)
            storh_err_set(err, STORH_ECORRUPT, "Invalid JSONC at line %d, column %d: %s", je.line,
                          je.column, je.text);
        else
            v = check_object(v, err);
    }
    buf_free(&clean);
    return v;
}

json_t *sjson_string_keyed(const json_t *d)
{
    if (!json_is_object(d))
        return json_object(); /* arrays are lists: all their keys are integers */
    const char *k;
    size_t kl;
    json_t *v;
    bool intkeys = false;
    json_object_keylen_foreach ((json_t *)d, k, kl, v) {
        (void)v;
        if (sjson_is_int_key(k, kl))
            intkeys = true;
    }
    if (!intkeys)
        return json_incref((json_t *)d);
    json_t *out = json_object();
    json_object_keylen_foreach ((json_t *)d, k, kl, v) {
        if (!sjson_is_int_key(k, kl))
            json_object_setn(out, k, kl, v);
    }
    return out;
}

json_t *sjson_row(const char *id, json_t *data)
{
    json_t *row = data ? json_object() : NULL;
    json_t *jid = NULL;
    if (row) { /* ids are ASCII as a rule: that needs no UTF-8 decoding */
        size_t n = 0;
        unsigned char hi = 0;
        for (; id[n]; n++)
            hi |= (unsigned char)id[n];
        jid = hi < 0x80 ? json_stringn_nocheck(id, n) : json_stringn(id, n);
    }
    /* jansson's _new setters take their value also when they fail */
    if (!jid || json_object_set_new_nocheck(row, "id", jid)) {
        json_decref(data);
        json_decref(row);
        return NULL;
    }
    if (json_object_set_new_nocheck(row, "data", data)) {
        json_decref(row);
        return NULL;
    }
    return row;
}

json_t *sjson_count(long long n)
{
    json_t *o = json_object();
    if (o && json_object_set_new_nocheck(o, "count", json_integer((json_int_t)n))) {
        json_decref(o);
        return NULL;
    }
    return o;
}
