#include <string.h>

#include "../test.h"
#include "uuid7.h"

TEST(format_matches_storh)
{
    const uint8_t e[10] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11, 0xfe};
    char out[37];
    uuid7_format(INT64_C(1700000000000), e, out);
    CHECK_STR(out, "018bcfe5-6800-7234-9678-9abcdef011fe");
}

TEST(validate)
{
    CHECK(uuid7_is_valid("018bcfe5-6800-7234-9678-9abcdef011fe", 36));
    CHECK(uuid7_is_valid("018BCFE5-6800-7234-B678-9ABCDEF011FE", 36));
    CHECK(!uuid7_is_valid("018bcfe5-6800-6234-9678-9abcdef011fe", 36)); /* version 6 */
    CHECK(!uuid7_is_valid("018bcfe5-6800-7234-c678-9abcdef011fe", 36)); /* variant c */
    CHECK(!uuid7_is_valid("018bcfe5-6800-7234-9678-9abcdef011f", 35));
    CHECK(!uuid7_is_valid("018bcfe5-6800-7234-9678-9abcdef011fe\n", 37));
    CHECK(!uuid7_is_valid("018bcfe5x6800-7234-9678-9abcdef011fe", 36));
    CHECK(!uuid7_is_valid("../../../../etc/passwd-000000000000", 36));
}

/* Every byte at every position of a valid id, in both cases, against the
 * rule written out plainly: 8-4-4-4-12 hex digits, '7' at 14, 8/9/a/b (any
 * case) at 19. */
static bool plain_rule(const char *s)
{
    for (int i = 0; i < 36; i++) {
        char c = s[i];
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return false;
        } else if (i == 14) {
            if (c != '7')
                return false;
        } else if (i == 19) {
            if (!strchr("89abAB", c) || c == '\0')
                return false;
        } else if (!hex) {
            return false;
        }
    }
    return true;
}

TEST(validate_every_byte_at_every_position)
{
    const char *seeds[2] = {"018bcfe5-6800-7234-9678-9abcdef011fe",
                            "018BCFE5-6800-7234-B678-9ABCDEF011FE"};
    long differ = 0;
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 36; p++)
            for (int c = 0; c < 256; c++) {
                char s[37];
                memcpy(s, seeds[k], 37);
                s[p] = (char)c;
                if (uuid7_is_valid(s, 36) != plain_rule(s))
                    differ++;
            }
    CHECK_INT(differ, 0);
}

TEST(timestamp_and_bounds)
{
    int64_t ms = 0;
    CHECK_INT(uuid7_timestamp("018bcfe5-6800-7234-9678-9abcdef011fe", 36, &ms, NULL), 0);
    CHECK_INT(ms, INT64_C(1700000000000));
    storh_err err;
    CHECK_INT(uuid7_timestamp("nope", 4, &ms, &err), STORH_EINVAL);
    CHECK_STR(err.msg, "Invalid UUIDv7 value.");
    char b[37];
    uuid7_min_for_ms(INT64_C(1700000000000), b);
    CHECK_STR(b, "018bcfe5-6800-7000-8000-000000000000");
    uuid7_max_for_ms(INT64_C(1700000000000), b);
    CHECK_STR(b, "018bcfe5-6800-7fff-bfff-ffffffffffff");
}

TEST(explicit_ts_counts_up)
{
    char a[37], b[37];
    CHECK_INT(uuid7_generate(a, INT64_C(1700000000000), NULL), 0);
    CHECK_INT(uuid7_generate(b, INT64_C(1700000000000), NULL), 0);
    CHECK_PREFIX(a, "018bcfe5-6800-7");
    CHECK(strcmp(a, b) != 0);
    CHECK(uuid7_is_valid(b, 36));
    storh_err err;
    CHECK_INT(uuid7_generate(a, INT64_C(1) << 48, &err), STORH_EINVAL);
}

TEST(now_ids_are_monotonic)
{
    char prev[37] = "", cur[37];
    for (int i = 0; i < 200000; i++) {
        CHECK_INT(uuid7_generate(cur, -1, NULL), 0);
        if (strcmp(prev, cur) >= 0) {
            CHECK(strcmp(prev, cur) < 0);
            break;
        }
        if (!uuid7_is_valid(cur, 36)) {
            CHECK(uuid7_is_valid(cur, 36));
            break;
        }
        memcpy(prev, cur, 37);
    }
}

/* A batch of "now" ids (an enqueue's jobs without one) continues the
 * single ids' order, and the single ids after it continue the batch's. */
TEST(batch_ids_continue_the_monotonic_order)
{
    enum { N = 20000 };
    static char ids[N + 2][UUID7_LEN + 1];
    CHECK_INT(uuid7_generate(ids[0], -1, NULL), 0);
    CHECK_INT(uuid7_generate_many(ids + 1, N, NULL), 0);
    CHECK_INT(uuid7_generate(ids[N + 1], -1, NULL), 0);
    for (int i = 0; i < N + 2; i++) {
        if (!uuid7_is_valid(ids[i], UUID7_LEN)) {
            CHECK(uuid7_is_valid(ids[i], UUID7_LEN));
            break;
        }
        if (i && strcmp(ids[i - 1], ids[i]) >= 0) {
            CHECK(strcmp(ids[i - 1], ids[i]) < 0);
            break;
        }
    }
    CHECK_INT(uuid7_generate_many(ids, 0, NULL), 0);
}

static const test_case tests[] = {
    TEST_ENTRY(format_matches_storh),
    TEST_ENTRY(validate),
    TEST_ENTRY(timestamp_and_bounds),
    TEST_ENTRY(explicit_ts_counts_up),
    TEST_ENTRY(now_ids_are_monotonic),
    TEST_ENTRY(validate_every_byte_at_every_position),
    TEST_ENTRY(batch_ids_continue_the_monotonic_order),
};
TEST_MAIN(tests)
