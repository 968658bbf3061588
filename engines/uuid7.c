#include "uuid7.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static const char hexdig[] = "0123456789abcdef";

static pthread_mutex_t gen_mu = PTHREAD_MUTEX_INITIALIZER;
/* "now" ids and explicit-timestamp ids keep separate state, so a caller that
 * asks for a far-future ms cannot drag later "now" ids along with it. */
static int64_t gen_last_ts = -1;
static uint8_t gen_last_e[10];
static int64_t exp_last_ts = -1;
static uint8_t exp_last_e[10];

static void put_hex(char *out, uint64_t v, int digits)
{
    for (int i = digits - 1; i >= 0; i--) {
        out[i] = hexdig[v & 0xf];
        v >>= 4;
    }
}

static void put_byte(char *out, unsigned b)
{
    out[0] = hexdig[(b >> 4) & 0xf];
    out[1] = hexdig[b & 0xf];
}

void uuid7_format(int64_t ts_ms, const uint8_t e[10], char out[UUID7_LEN + 1])
{
    uint64_t ts = (uint64_t)ts_ms;
    /* 12 timestamp digits: 8, a dash, 4 (written out: the loop costs more
     * than the clock read it follows) */
    for (int i = 0; i < 6; i++) {
        unsigned b = (unsigned)(ts >> (40 - 8 * i)) & 0xff;
        put_byte(out + 2 * i + (i >= 4), b);
    }
    out[8] = '-';
    out[13] = '-';
    out[14] = '7';
    out[15] = hexdig[e[0] & 0x0f];
    put_byte(out + 16, e[1]);
    out[18] = '-';
    put_byte(out + 19, 0x80u | (e[2] & 0x3fu));
    put_byte(out + 21, e[3]);
    out[23] = '-';
    for (int i = 0; i < 6; i++)
        put_byte(out + 24 + 2 * i, e[4 + i]);
    out[36] = '\0';
}

static int fill_random(uint8_t *p, size_t n, storh_err *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0)
            return storh_err_sys(err, errno, "Could not read random bytes");
        got += (size_t)r;
    }
    return 0;
}

/* Adds one to the 80-bit big-endian counter; true if it wrapped. */
static bool incr80(uint8_t e[10])
{
    for (int i = 9; i >= 0; i--)
        if (++e[i] != 0)
            return false;
    return true;
}

/* Adds one to the 74 bits that reach the text form (e0 low nibble, e1, e2 low
 * six bits, e3..e9); true if they overflowed. */
static bool incr74(uint8_t e[10])
{
    for (int i = 9; i >= 3; i--)
        if (++e[i] != 0)
            return false;
    e[2] = (uint8_t)((e[2] & 0x3f) + 1);
    if (e[2] <= 0x3f)
        return false;
    e[2] = 0;
    if (++e[1] != 0)
        return false;
    e[0] = (uint8_t)((e[0] & 0x0f) + 1);
    if (e[0] <= 0x0f)
        return false;
    e[0] = 0;
    return true;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The next "now" id for a clock reading of ts_ms, under gen_mu. */
static int next_now(int64_t ts_ms, char out[UUID7_LEN + 1], storh_err *err)
{
    int rc = 0;
    if (gen_last_ts >= 0 && ts_ms <= gen_last_ts) {
        ts_ms = gen_last_ts;
        if (incr74(gen_last_e)) {
            ts_ms++;
            rc = fill_random(gen_last_e, 10, err);
        }
    } else {
        rc = fill_random(gen_last_e, 10, err);
    }
    if (rc == 0) {
        gen_last_ts = ts_ms;
        uuid7_format(ts_ms, gen_last_e, out);
    }
    return rc;
}

int uuid7_generate(char out[UUID7_LEN + 1], int64_t ts_ms, storh_err *err)
{
    if (ts_ms < 0)
        return uuid7_generate_many((char(*)[UUID7_LEN + 1]) out, 1, err);
    if (ts_ms > UUID7_MAX_TS)
        return storh_err_set(err, STORH_EINVAL, "UUIDv7 timestamp is outside the 48-bit range.");
    pthread_mutex_lock(&gen_mu);
    int rc = 0;
    if (ts_ms == exp_last_ts)
        incr80(exp_last_e);
    else
        rc = fill_random(exp_last_e, 10, err);
    if (rc == 0) {
        exp_last_ts = ts_ms;
        uuid7_format(ts_ms, exp_last_e, out);
    }
    pthread_mutex_unlock(&gen_mu);
    return rc;
}

int uuid7_generate_many(char (*out)[UUID7_LEN + 1], size_t n, storh_err *err)
{
    int64_t ts_ms = now_ms();
    if (ts_ms > UUID7_MAX_TS)
        return storh_err_set(err, STORH_EINVAL, "UUIDv7 timestamp is outside the 48-bit range.");
    pthread_mutex_lock(&gen_mu);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = next_now(ts_ms, out[i], err);
    pthread_mutex_unlock(&gen_mu);
    return rc;
}

#if !defined(__SSE2__)
/* 1 for every byte that is not a hex digit (either case) */
static const uint8_t u7_nothex[256] = {
    /* clang-format off */
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 0,0,0,0,0,0,0,0,0,0,1,1,1,1,1,1,
    1,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    /* clang-format on */
};
#endif

#if defined(__SSE2__)
/* Bit i set when byte i of the 16 at p is a hex digit, either case. Signed
 * compares: bytes from 0x80 up are negative and fail both ranges. */
static unsigned u7_hexmask16(const unsigned char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i dig = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
                                _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
    __m128i l = _mm_or_si128(x, _mm_set1_epi8(0x20));
    __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(l, _mm_set1_epi8('a' - 1)),
                                  _mm_cmplt_epi8(l, _mm_set1_epi8('f' + 1)));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(dig, alpha));
}

/* Bit i set when byte i of the 16 at p is '-'. */
static unsigned u7_dashmask16(const unsigned char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('-')));
}
#endif

bool uuid7_is_valid(const char *s, size_t len)
{
    if (len != UUID7_LEN)
        return false;
    const unsigned char *u = (const unsigned char *)s;
    unsigned v = u[19] | 0x20u; /* the variant: 8, 9, a or b, either case */
    bool variant = (v - '8') < 2u || (v - 'a') < 2u;
#if defined(__SSE2__)
    /* bit i of each mask: byte i is a hex digit, a dash; from the bytes
     * 0-15, 16-31 and (overlapping) 20-35, no branch per byte */
    const uint64_t dashes =
        (UINT64_C(1) << 8) | (UINT64_C(1) << 13) | (UINT64_C(1) << 18) | (UINT64_C(1) << 23);
    uint64_t hex = (uint64_t)u7_hexmask16(u) | (uint64_t)u7_hexmask16(u + 16) << 16 |
                   (uint64_t)u7_hexmask16(u + 20) << 20;
    uint64_t dash = (uint64_t)u7_dashmask16(u) | (uint64_t)u7_dashmask16(u + 16) << 16 |
                    (uint64_t)u7_dashmask16(u + 20) << 20;
    return (hex | dashes) == UINT64_C(0xfffffffff) && dash == dashes && u[14] == '7' && variant;
#else
    /* no branch per byte: every check ORs into bad */
    unsigned bad = (u[8] ^ '-') | (u[13] ^ '-') | (u[18] ^ '-') | (u[23] ^ '-') | (u[14] ^ '7');
    bad |= (unsigned)!variant;
    /* the other 31 hex digits, written out (a loop over a position table
     * costs twice the instructions) */
#define U7_X(i) u7_nothex[u[i]]
    bad |= U7_X(0) | U7_X(1) | U7_X(2) | U7_X(3) | U7_X(4) | U7_X(5) | U7_X(6) | U7_X(7);
    bad |= U7_X(9) | U7_X(10) | U7_X(11) | U7_X(12) | U7_X(15) | U7_X(16) | U7_X(17);
    bad |= U7_X(19) | U7_X(20) | U7_X(21) | U7_X(22) | U7_X(24) | U7_X(25) | U7_X(26);
    bad |= U7_X(27) | U7_X(28) | U7_X(29) | U7_X(30) | U7_X(31) | U7_X(32) | U7_X(33);
    bad |= U7_X(34) | U7_X(35);
#undef U7_X
    return bad == 0;
#endif
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c - 'A' + 10;
}

int uuid7_timestamp(const char *s, size_t len, int64_t *ms, storh_err *err)
{
    if (!uuid7_is_valid(s, len))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    int64_t v = 0;
    for (int i = 0; i < 13; i++) {
        if (i == 8)
            continue;
        v = (v << 4) | hexval(s[i]);
    }
    *ms = v;
    return 0;
}

static void bound(int64_t ms, const char *tail20, char out[UUID7_LEN + 1])
{
    char h[32];
    put_hex(h, (uint64_t)ms, 12);
    memcpy(h + 12, tail20, 20);
    const char *p = h;
    char *o = out;
    static const int groups[5] = {8, 4, 4, 4, 12};
    for (int g = 0; g < 5; g++) {
        if (g)
            *o++ = '-';
        memcpy(o, p, (size_t)groups[g]);
        o += groups[g];
        p += groups[g];
    }
    *o = '\0';
}

void uuid7_min_for_ms(int64_t ms, char out[UUID7_LEN + 1])
{
    bound(ms, "70008000000000000000", out);
}

void uuid7_max_for_ms(int64_t ms, char out[UUID7_LEN + 1])
{
    bound(ms, "7fffbfffffffffffffff", out);
}
