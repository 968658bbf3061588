/* test_idmap: the map from UUID text to fixed-size values, entries in
 * insertion order behind an open-addressing index
 * (round trips, values zeroed on insert, keys that collide on one slot and
 * deletes in the middle of their probe chain, growth, room reserved at
 * once (a table of megabytes), churn that drops tombstones instead of
 * growing, iteration and clear, the walk's hashed lookups, prefetches and
 * removal by value, the walk in insertion order and removals that move
 * nothing). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "idmap.h"
#include "xxhash.h"

typedef struct val {
    uint64_t n;
    char tag[20];
} val;

/* The n-th test key: 36 bytes of UUID-shaped text, NUL-terminated. */
static void key(char out[IDMAP_KEY + 1], unsigned long n)
{
    snprintf(out, IDMAP_KEY + 1, "018bcfe5-6800-7000-8000-%012lu", n);
}

TEST(put_get_del_round_trip)
{
    idmap m;
    CHECK_INT(idmap_init(&m, sizeof(val)), 0);
    char k[IDMAP_KEY + 1];
    key(k, 1);
    CHECK(idmap_get(&m, k) == NULL);
    bool created = false;
    val *v = idmap_put(&m, k, &created);
    CHECK(v != NULL);
    if (!v)
        return;
    CHECK(created);
    /* a new value is all zero bytes */
    val zero;
    memset(&zero, 0, sizeof zero);
    CHECK(memcmp(v, &zero, sizeof zero) == 0);
    v->n = 42;
    snprintf(v->tag, sizeof v->tag, "first");
    CHECK_INT(m.len, 1);
    /* the same key again: the same value, not created */
    val *again = idmap_put(&m, k, &created);
    CHECK(again == v);
    CHECK(!created);
    CHECK_INT(again->n, 42);
    CHECK_INT(m.len, 1);
    val *got = idmap_get(&m, k);
    CHECK(got == v);
    CHECK_STR(got->tag, "first");
    /* keys are copied in: the caller's buffer may change */
    k[0] = 'f';
    CHECK(idmap_get(&m, k) == NULL);
    key(k, 1);
    CHECK(idmap_get(&m, k) != NULL);
    /* a key differing only in its last byte is another key */
    char k2[IDMAP_KEY + 1];
    key(k2, 2);
    CHECK(idmap_get(&m, k2) == NULL);
    CHECK(!idmap_del(&m, k2));
    CHECK(idmap_del(&m, k));
    CHECK(!idmap_del(&m, k)); /* twice: already gone */
    CHECK(idmap_get(&m, k) == NULL);
    CHECK_INT(m.len, 0);
    /* re-inserted after delete: created again, zeroed again */
    v = idmap_put(&m, k, &created);
    CHECK(created);
    CHECK_INT(v->n, 0);
    CHECK_INT(m.len, 1);
    /* created may be NULL */
    CHECK(idmap_put(&m, k2, NULL) != NULL);
    CHECK_INT(m.len, 2);
    idmap_free(&m);
    CHECK(m.index == NULL && m.ents == NULL);
    CHECK_INT(m.len, 0);
}

/* Keys whose hash lands on the same slot of a fresh (64-slot) map. */
static size_t colliding(char keys[][IDMAP_KEY + 1], size_t want, size_t cap)
{
    char k[IDMAP_KEY + 1];
    key(k, 0);
    uint64_t target = XXH3_64bits(k, IDMAP_KEY) & (cap - 1);
    size_t n = 0;
    for (unsigned long i = 0; n < want && i < 1000000; i++) {
        key(k, i);
        if ((XXH3_64bits(k, IDMAP_KEY) & (cap - 1)) == target)
            memcpy(keys[n++], k, sizeof k);
    }
    return n;
}

TEST(colliding_keys_probe_past_each_other_and_past_deletes)
{
    idmap m;
    CHECK_INT(idmap_init(&m, sizeof(uint64_t)), 0);
    CHECK_INT(m.cap, 64);
    char keys[6][IDMAP_KEY + 1];
    CHECK_INT(colliding(keys, 6, m.cap), 6);
    for (int i = 0; i < 6; i++) {
        uint64_t *v = idmap_put(&m, keys[i], NULL);
        CHECK(v != NULL);
        if (v)
            *v = (uint64_t)i + 100;
    }
    CHECK_INT(m.cap, 64); /* no growth: one chain of six */
    for (int i = 0; i < 6; i++) {
        uint64_t *v = idmap_get(&m, keys[i]);
        CHECK(v != NULL && *v == (uint64_t)i + 100);
    }
    /* deletes at the head and the middle of the chain leave the rest found */
    CHECK(idmap_del(&m, keys[0]));
    CHECK(idmap_del(&m, keys[3]));
    CHECK_INT(m.tombs, 2);
    for (int i = 0; i < 6; i++) {
        uint64_t *v = idmap_get(&m, keys[i]);
        if (i == 0 || i == 3) {
            CHECK(v == NULL);
        } else {
            CHECK(v != NULL && *v == (uint64_t)i + 100);
        }
    }
    /* a key already in the chain past a tomb is found, not inserted twice */
    bool created = true;
    uint64_t *v5 = idmap_put(&m, keys[5], &created);
    CHECK(!created);
    CHECK(v5 != NULL && *v5 == 105);
    CHECK_INT(m.len, 4);
    /* a new key reuses the first tomb */
    uint64_t *v0 = idmap_put(&m, keys[0], &created);
    CHECK(created);
    CHECK(v0 != NULL && *v0 == 0);
    CHECK_INT(m.tombs, 1);
    CHECK_INT(m.len, 5);
    idmap_free(&m);
}

TEST(grows_past_three_quarters_and_keeps_every_value)
{
    idmap m;
    CHECK_INT(idmap_init(&m, sizeof(val)), 0);
    char k[IDMAP_KEY + 1];
    enum { N = 5000 };
    for (unsigned long i = 0; i < N; i++) {
        key(k, i);
        val *v = idmap_put(&m, k, NULL);
        CHECK(v != NULL);
        if (!v)
            break;
        v->n = i * 7;
        snprintf(v->tag, sizeof v->tag, "v%lu", i);
    }
    CHECK_INT(m.len, N);
    CHECK(m.cap >= N * 4 / 3);
    CHECK((m.cap & (m.cap - 1)) == 0); /* a power of two */
    int bad = 0;
    for (unsigned long i = 0; i < N; i++) {
        key(k, i);
        val *v = idmap_get(&m, k);
        char tag[20];
        snprintf(tag, sizeof tag, "v%lu", i);
        if (!v || v->n != i * 7 || strcmp(v->tag, tag) != 0)
            bad++;
    }
    CHECK_INT(bad, 0);
    key(k, N);
    CHECK(idmap_get(&m, k) == NULL);
    idmap_free(&m);
}

TEST(reserve_makes_room_once_and_keeps_every_value)
{
    idmap m;
    CHECK_INT(idmap_init(&m, sizeof(val)), 0);
    char k[IDMAP_KEY + 1];
    for (unsigned long i = 0; i < 100; i++) {
        key(k, i);
        ((val *)idmap_put(&m, k, NULL))->n = i + 1;
    }
    size_t cap = m.cap;
    CHECK_INT(idmap_reserve(&m, 50), 0); /* fewer than it holds: nothing to do */
    CHECK_INT(m.cap, cap);
    /* 40,000 keys of 72-byte slots: a table of megabytes */
    enum { N = 40000 };
    CHECK_INT(idmap_reserve(&m, N), 0);
    CHECK(m.cap * 3 >= (size_t)N * 4);
    CHECK((m.cap & (m.cap - 1)) == 0);
    CHECK_INT(m.len, 100);
    uint64_t *index = m.index;
    unsigned char *ents = m.ents;
    cap = m.cap;
    /* the puts up to N grow nothing: the table and a value's place stay */
    key(k, 0);
    val *first = idmap_get(&m, k);
    for (unsigned long i = 100; i < N; i++) {
        key(k, i);
        val *v = idmap_put(&m, k, NULL);
        CHECK(v != NULL && v->n == 0);
        if (!v)
            break;
        v->n = i + 1;
    }
    CHECK(m.index == index && m.ents == ents);
    CHECK_INT(m.cap, cap);
    key(k, 0);
    CHECK(idmap_get(&m, k) == first);
    int bad = 0;
    for (unsigned long i = 0; i < N; i++) {
        key(k, i);
        val *v = idmap_get(&m, k);
        bad += !v || v->n != i + 1;
    }
    CHECK_INT(bad, 0);
    /* past N it grows again, every value kept */
    for (unsigned long i = N; i < 2 * N; i++) {
        key(k, i);
        ((val *)idmap_put(&m, k, NULL))->n = i + 1;
    }
    CHECK(m.cap > cap);
    for (unsigned long i = 0; i < 2 * N; i++) {
        key(k, i);
        val *v = idmap_get(&m, k);
        bad += !v || v->n != i + 1;
    }
    CHECK_INT(bad, 0);
    idmap_clear(&m);
    CHECK_INT(m.len, 0);
    key(k, 5);
    CHECK(idmap_get(&m, k) == NULL);
    idmap_free(&m);
    CHECK(m.index == NULL && m.ents == NULL);
}

TEST(churn_drops_tombstones_instead_of_growing)
{
    idmap m;
    CHECK_INT(idmap_init(&m, 8), 0);
    char k[IDMAP_KEY + 1], keep[IDMAP_KEY + 1];
    key(keep, 999999);
    *(uint64_t *)idmap_put(&m, keep, NULL) = 7;
    /* many keys in and out, never more than two live at once */
    for (unsigned long i = 0; i < 20000; i++) {
        key(k, i);
        CHECK(idmap_put(&m, k, NULL) != NULL);
        CHECK(idmap_del(&m, k));
    }
    CHECK_INT(m.len, 1);
    CHECK_INT(m.cap, 64);
    CHECK(m.tombs < m.cap);
    CHECK(m.ecap <= 64); /* the removed entries' room is used again */
    uint64_t *v = idmap_get(&m, keep);
    CHECK(v != NULL && *v == 7);
    idmap_free(&m);
}

TEST(next_visits_each_live_key_once_and_clear_empties)
{
    idmap m;
    CHECK_INT(idmap_init(&m, sizeof(uint64_t)), 0);
    char k[IDMAP_KEY + 1];
    enum { N = 300 };
    for (unsigned long i = 0; i < N; i++) {
        key(k, i);
        *(uint64_t *)idmap_put(&m, k, NULL) = i;
    }
    for (unsigned long i = 0; i < N; i += 3) {
        key(k, i);
        CHECK(idmap_del(&m, k));
    }
    static unsigned char seen[N];
    memset(seen, 0, sizeof seen);
    size_t pos = 0, visits = 0;
    const char *kp;
    void *vp;
    int mismatched = 0;
    while (idmap_next(&m, &pos, &kp, &vp)) {
        uint64_t n = *(uint64_t *)vp;
        key(k, (unsigned long)n);
        if (n >= N || memcmp(k, kp, IDMAP_KEY) != 0)
            mismatched++;
        else
            seen[n]++;
        visits++;
    }
    CHECK_INT(mismatched, 0);
    CHECK_INT(visits, m.len);
    CHECK_INT(visits, N - (N + 2) / 3);
    int wrong = 0;
    for (unsigned long i = 0; i < N; i++)
        if (seen[i] != (i % 3 ? 1 : 0))
            wrong++;
    CHECK_INT(wrong, 0);
    /* the end stays the end */
    CHECK(!idmap_next(&m, &pos, &kp, &vp));
    size_t cap = m.cap;
    idmap_clear(&m);
    CHECK_INT(m.len, 0);
    CHECK_INT(m.tombs, 0);
    CHECK_INT(m.cap, cap);
    pos = 0;
    CHECK(!idmap_next(&m, &pos, &kp, &vp));
    key(k, 1);
    CHECK(idmap_get(&m, k) == NULL);
    bool created = false;
    CHECK(idmap_put(&m, k, &created) != NULL);
    CHECK(created);
    idmap_free(&m);
}

/* The walk is in insertion order, may remove the entry it visits, and a
 * removal moves no other value. */
TEST(next_walks_in_insertion_order_and_removal_moves_nothing)
{
    idmap m;
    CHECK_INT(idmap_init(&m, sizeof(val)), 0);
    enum { N = 3000 };
    char k[IDMAP_KEY + 1];
    CHECK_INT(idmap_reserve(&m, N), 0);
    for (unsigned long i = 0; i < N; i++) {
        key(k, (i * 7919) % N); /* not the keys' order */
        ((val *)idmap_put(&m, k, NULL))->n = (i * 7919) % N;
    }
    key(k, (2 * 7919) % N); /* the third inserted: kept */
    val *kept = idmap_get(&m, k);
    size_t pos = 0, i = 0;
    const char *kp;
    void *vp;
    int wrong = 0;
    while (idmap_next(&m, &pos, &kp, &vp)) {
        wrong += ((val *)vp)->n != (i * 7919) % N;
        if (i++ % 2)
            idmap_remove(&m, vp); /* the one just visited */
    }
    CHECK_INT(wrong, 0);
    CHECK_INT(i, N);
    CHECK_INT(m.len, N / 2);
    CHECK(kept != NULL && idmap_get(&m, k) == kept); /* removals moved nothing */
    int bad = 0;
    for (unsigned long j = 0; j < N; j++) {
        key(k, (j * 7919) % N);
        val *v = idmap_get(&m, k);
        bad += j % 2 ? v != NULL : !v || v->n != (j * 7919) % N;
    }
    CHECK_INT(bad, 0);
    /* an insert may move them: the removed entries' room is taken back */
    for (unsigned long j = N; j < 2 * N; j++) {
        key(k, j);
        ((val *)idmap_put(&m, k, NULL))->n = j;
    }
    CHECK_INT(m.len, N / 2 + N);
    for (unsigned long j = 0; j < 2 * N; j++) {
        unsigned long id = j < N ? (j * 7919) % N : j;
        key(k, id);
        val *v = idmap_get(&m, k);
        bad += j < N && j % 2 ? v != NULL : !v || v->n != id;
    }
    CHECK_INT(bad, 0);
    idmap_free(&m);
}

TEST(a_value_of_zero_bytes_is_a_set)
{
    idmap m;
    CHECK_INT(idmap_init(&m, 0), 0);
    char k[IDMAP_KEY + 1];
    key(k, 5);
    bool created = false;
    CHECK(idmap_put(&m, k, &created) != NULL);
    CHECK(created);
    CHECK(idmap_get(&m, k) != NULL);
    key(k, 6);
    CHECK(idmap_get(&m, k) == NULL);
    idmap_free(&m);
}

/* What a walk over many keys uses (queue claims and completes): the hashed
 * lookups and puts agree with the plain ones, a prefetch changes nothing,
 * and removal by value is idmap_del without the lookup (a tomb: the keys
 * probing past it are still found). */
TEST(hashed_calls_and_removal_by_value_agree_with_the_plain_ones)
{
    enum { N = 5000 };
    idmap m;
    CHECK_INT(idmap_init(&m, sizeof(val)), 0);
    char k[IDMAP_KEY + 1];
    for (unsigned long i = 0; i < N; i++) {
        key(k, i);
        size_t h = idmap_hash(k);
        CHECK_INT(h, idmap_hash(k));
        idmap_prefetch(&m, h);
        bool created = false;
        val *v = idmap_put_hashed(&m, k, h, &created);
        CHECK(v != NULL && created);
        if (!v)
            break;
        v->n = i;
    }
    CHECK_INT(m.len, N);
    for (unsigned long i = 0; i < N; i++) {
        key(k, i);
        val *a = idmap_get(&m, k), *b = idmap_get_hashed(&m, k, idmap_hash(k));
        CHECK(a != NULL && a == b);
        if (a && a->n != i)
            CHECK_INT(a->n, i);
    }
    /* every other key removed by its value */
    for (unsigned long i = 0; i < N; i += 2) {
        key(k, i);
        idmap_remove(&m, idmap_get(&m, k));
    }
    CHECK_INT(m.len, N / 2);
    CHECK_INT(m.tombs, N / 2);
    for (unsigned long i = 0; i < N; i++) {
        key(k, i);
        val *v = idmap_get_hashed(&m, k, idmap_hash(k));
        CHECK((v == NULL) == (i % 2 == 0));
        if (v && v->n != i)
            CHECK_INT(v->n, i);
    }
    /* a removed key comes back as a new, zeroed value */
    key(k, 0);
    bool created = false;
    val *v = idmap_put_hashed(&m, k, idmap_hash(k), &created);
    CHECK(v != NULL && created && v->n == 0);
    CHECK_INT(m.len, N / 2 + 1);
    idmap_free(&m);
}

static const test_case tests[] = {
    TEST_ENTRY(put_get_del_round_trip),
    TEST_ENTRY(next_walks_in_insertion_order_and_removal_moves_nothing),
    TEST_ENTRY(colliding_keys_probe_past_each_other_and_past_deletes),
    TEST_ENTRY(grows_past_three_quarters_and_keeps_every_value),
    TEST_ENTRY(reserve_makes_room_once_and_keeps_every_value),
    TEST_ENTRY(churn_drops_tombstones_instead_of_growing),
    TEST_ENTRY(next_visits_each_live_key_once_and_clear_empties),
    TEST_ENTRY(a_value_of_zero_bytes_is_a_set),
    TEST_ENTRY(hashed_calls_and_removal_by_value_agree_with_the_plain_ones),
};

TEST_MAIN(tests)
