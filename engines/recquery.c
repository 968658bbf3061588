#include "recquery.h"

#include <stdint.h>
#include <string.h>

void recquery_init(recquery *q)
{
    memset(q, 0, sizeof *q);
}

void recquery_clear(recquery *q)
{
    json_decref(q->where);
    recquery_init(q);
}

int recquery_after(recquery *q, const char *id, size_t len, storh_err *err)
{
    if (!uuid7_is_valid(id, len))
        return storh_err_set(err, STORH_EINVAL, "Invalid UUIDv7 value.");
    memcpy(q->after, id, UUID7_LEN);
    q->after[UUID7_LEN] = '\0';
    q->has_after = true;
    return 0;
}

int recquery_time_range(recquery *q, bool has_from, int64_t from_ms, bool has_until,
                        int64_t until_ms, storh_err *err)
{
    if ((has_from && (from_ms < 0 || from_ms > UUID7_MAX_TS)) ||
        (has_until && (until_ms < 0 || until_ms > UUID7_MAX_TS)))
        return storh_err_set(err, STORH_EINVAL, "Time range is outside the 48-bit range.");
    q->has_from = has_from;
    q->has_until = has_until;
    if (has_from)
        uuid7_min_for_ms(from_ms, q->min_id);
    if (has_until)
        uuid7_max_for_ms(until_ms, q->max_id);
    return 0;
}

int recquery_where_equal(recquery *q, const char *field, json_t *value, storh_err *err)
{
    size_t n = strlen(field);
    size_t lead = strspn(field, " \t\n\r\v");
    if (lead == n)
        return storh_err_set(err, STORH_EINVAL, "Record query field cannot be empty.");
    if (json_is_object(value) || json_is_array(value))
        return storh_err_set(err, STORH_EINVAL, "Record query value must be scalar or null.");
    if (!q->where && !(q->where = json_object()))
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (json_object_set(q->where, field, value) != 0)
        return storh_err_set(err, STORH_EINVAL, "Record query field is not valid UTF-8.");
    return 0;
}

int recquery_limit(recquery *q, long long n, storh_err *err)
{
    if (n < 1)
        return storh_err_set(err, STORH_EINVAL, "Record query limit must be at least 1.");
    q->limit = (size_t)n;
    return 0;
}

/* memcmp's sign for ids of n <= UUID7_LEN bytes: ids of one stream share
 * their leading bytes, so a word at a time (big-endian, as memcmp orders)
 * decides in two or three steps instead of a call. */
__attribute__((always_inline)) static inline int id_cmp(const char *a, const char *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            x = __builtin_bswap64(x);
            y = __builtin_bswap64(y);
#endif
            return x < y ? -1 : 1;
        }
    }
    return memcmp(a + i, b + i, n - i);
}

bool recquery_match_id(const recquery *q, const char *id, size_t len)
{
    if (q->has_after && (len != UUID7_LEN || id_cmp(id, q->after, UUID7_LEN) <= 0))
        return false;
    if (q->has_from && id_cmp(id, q->min_id, len < UUID7_LEN ? len : UUID7_LEN) < 0)
        return false;
    if (q->has_until && id_cmp(id, q->max_id, len < UUID7_LEN ? len : UUID7_LEN) > 0)
        return false;
    return true;
}

bool recquery_strict_equal(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        /* PHP === on arrays: same keys, same order, strictly equal values */
        if (json_object_size(a) != json_object_size(b))
            return false;
        void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
        while (ia && ib) {
            size_t la = json_object_iter_key_len(ia), lb = json_object_iter_key_len(ib);
            if (la != lb || memcmp(json_object_iter_key(ia), json_object_iter_key(ib), la) != 0)
                return false;
            if (!recquery_strict_equal(json_object_iter_value(ia), json_object_iter_value(ib)))
                return false;
            ia = json_object_iter_next((json_t *)a, ia);
            ib = json_object_iter_next((json_t *)b, ib);
        }
        return true;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!recquery_strict_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    default:
        return json_equal((json_t *)a, (json_t *)b);
    }
}

bool recquery_match_data(const recquery *q, const json_t *data)
{
    if (!q->where)
        return true;
    const char *key;
    json_t *want;
    json_object_foreach (q->where, key, want) {
        json_t *have = json_is_object(data) ? json_object_get(data, key) : NULL;
        if (!have || !recquery_strict_equal(have, want))
            return false;
    }
    return true;
}
