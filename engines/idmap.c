#include "idmap.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mempolicy.h"
#include "xxhash.h"

/* entry layout: live byte, key[36], padding to 8, value */
#define VALUE_OFF 40
/* an index slot whose entry was removed: no place (low half 0), not 0 */
#define SLOT_TOMB ((uint64_t)1 << 32)
/* entry places are stored + 1 in 32 bits */
#define ENT_MAX ((size_t)UINT32_MAX - 1)

static unsigned char *ent(const idmap *m, size_t i)
{
    return m->ents + i * m->ent_size;
}

/* The entry index slot i (a live one) points to. */
static unsigned char *slot_ent(const idmap *m, size_t i)
{
    return ent(m, (uint32_t)m->index[i] - 1);
}

static uint64_t slot_of(size_t hash, size_t at)
{
    return ((uint64_t)hash >> 32) << 32 | (uint64_t)(at + 1);
}

/* n index slots, zeroed; NULL on overflow or out of memory
 * (mempolicy_table: written, not calloc'd, since a page first read as the
 * shared zero page faults again at a put's write; a small index from the
 * heap, which hands out pages it had again at 0.1 us where a fresh one
 * costs 4 to 20 us at its first write in the virtual machines measured
 * here, bench/NOTES.md "Fresh pages"; an index of some MiB on huge pages,
 * a fault per 2 MiB). The entries are not zeroed: each is written whole
 * when it is inserted. */
static uint64_t *zeroed(size_t n)
{
    if (n > SIZE_MAX / sizeof(uint64_t))
        return NULL;
    return mempolicy_table(n * sizeof(uint64_t));
}

int idmap_init(idmap *m, size_t value_size)
{
    memset(m, 0, sizeof *m);
    m->vsize = value_size;
    m->ent_size = VALUE_OFF + ((value_size + 7) & ~(size_t)7);
    m->cap = 64;
    m->index = zeroed(m->cap);
    return m->index ? 0 : -1;
}

void idmap_free(idmap *m)
{
    free(m->index);
    free(m->ents);
    memset(m, 0, sizeof *m);
}

void idmap_clear(idmap *m)
{
    memset(m->index, 0, m->cap * sizeof *m->index);
    m->len = m->tombs = m->n = 0;
}

size_t idmap_hash(const char *key)
{
    return (size_t)XXH3_64bits(key, IDMAP_KEY);
}

/* Index of key's slot (its hash h), or of the slot to insert into (first
 * tomb or empty). The slot's tag (the hash's high half) is compared before
 * the entry is read. */
static size_t probe_hashed(const idmap *m, const char *key, size_t h, bool *found)
{
    size_t mask = m->cap - 1, i = h & mask, insert = SIZE_MAX;
    uint32_t tag = (uint32_t)((uint64_t)h >> 32);
    for (;;) {
        uint64_t s = m->index[i];
        if (s == 0) {
            *found = false;
            return insert != SIZE_MAX ? insert : i;
        }
        uint32_t at = (uint32_t)s;
        if (at == 0) {
            if (insert == SIZE_MAX)
                insert = i;
        } else if ((uint32_t)(s >> 32) == tag && !memcmp(ent(m, at - 1) + 1, key, IDMAP_KEY)) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
}

/* The entry array grown to ecap entries (its entries kept); -1 on
 * overflow or out of memory, the map unchanged. */
static int grow_ents(idmap *m, size_t ecap)
{
    if (ecap > ENT_MAX || ecap > SIZE_MAX / m->ent_size)
        return -1;
    unsigned char *e = realloc(m->ents, ecap * m->ent_size);
    if (!e)
        return -1;
    m->ents = e;
    m->ecap = ecap;
    return 0;
}

/* The live entries moved to the front of an entry array of ecap (in their
 * order) and indexed again in cap slots (a power of two): removed entries
 * and tombs dropped. On out of memory the map is unchanged. */
static int rebuild(idmap *m, size_t cap, size_t ecap)
{
    uint64_t *index = zeroed(cap);
    if (!index)
        return -1;
    if (ecap > m->ecap && grow_ents(m, ecap) != 0) {
        free(index);
        return -1;
    }
    free(m->index);
    m->index = index;
    m->cap = cap;
    size_t w = 0, mask = cap - 1;
    for (size_t r = 0; r < m->n; r++) {
        unsigned char *e = ent(m, r);
        if (!e[0])
            continue;
        if (w != r)
            memcpy(ent(m, w), e, m->ent_size);
        size_t h = idmap_hash((const char *)ent(m, w) + 1), i = h & mask;
        while (index[i])
            i = (i + 1) & mask;
        index[i] = slot_of(h, w);
        w++;
    }
    m->n = m->len = w;
    m->tombs = 0;
    return 0;
}

/* Room for one more entry, called when the index is past three quarters
 * full or the array is full: the index rebuilt (twice the slots when over
 * half of them are live, else the same: tombs dropped), the entries moved
 * up when the array is full and half of them are removed ones, else the
 * array doubled. */
static int room_for_one(idmap *m)
{
    size_t cap = m->cap, ecap = m->ecap;
    bool index_full = (m->len + m->tombs + 1) * 4 > cap * 3;
    if (index_full && m->len * 2 + 2 > cap)
        cap *= 2;
    if (m->n == ecap && (m->n - m->len) * 2 < m->n + 2)
        ecap = ecap ? ecap * 2 : 64;
    if (!index_full && ecap > m->ecap) /* only the array grows: no need to index again */
        return grow_ents(m, ecap);
    return rebuild(m, cap, ecap);
}

int idmap_reserve(idmap *m, size_t n)
{
    size_t cap = m->cap;
    if (!cap || n > SIZE_MAX / 8)
        return -1;
    if (n < m->len)
        n = m->len;
    while ((n + 1) * 4 > cap * 3) /* the load idmap_put keeps */
        cap *= 2;
    /* the same size again drops the tombs, which count against the load
     * (twice the size when over half of it is live, as a put grows it) */
    if (cap == m->cap && (n + m->tombs + 1) * 4 <= cap * 3 && m->n + (n - m->len) <= m->ecap)
        return 0;
    if (cap == m->cap && (n + m->tombs + 1) * 4 > cap * 3 && n * 2 + 2 > cap)
        cap *= 2;
    /* the entries are moved up when that frees half the array, else the
     * array at least doubles: reserving a few more at each call (a queue's
     * enqueue, beside its completions' removals) moves the entries a few
     * times in all, not at every call */
    size_t ecap = m->ecap;
    if (m->n + (n - m->len) > ecap && n * 2 > ecap)
        ecap = n > ecap * 2 ? n : ecap * 2;
    return rebuild(m, cap, ecap);
}

void *idmap_get(const idmap *m, const char *key)
{
    return idmap_get_hashed(m, key, idmap_hash(key));
}

void idmap_prefetch(const idmap *m, size_t hash)
{
    __builtin_prefetch(&m->index[hash & (m->cap - 1)]);
}

void *idmap_get_hashed(const idmap *m, const char *key, size_t hash)
{
    bool found;
    size_t i = probe_hashed(m, key, hash, &found);
    return found ? slot_ent(m, i) + VALUE_OFF : NULL;
}

void *idmap_put(idmap *m, const char *key, bool *created)
{
    return idmap_put_hashed(m, key, idmap_hash(key), created);
}

void *idmap_put_hashed(idmap *m, const char *key, size_t hash, bool *created)
{
    bool found;
    size_t i = probe_hashed(m, key, hash, &found);
    if (created)
        *created = !found;
    if (found)
        return slot_ent(m, i) + VALUE_OFF;
    if ((m->len + m->tombs + 1) * 4 > m->cap * 3 || m->n == m->ecap) {
        if (room_for_one(m) != 0)
            return NULL;
        i = probe_hashed(m, key, hash, &found); /* the index may be new */
    }
    if (m->index[i] == SLOT_TOMB)
        m->tombs--;
    unsigned char *e = ent(m, m->n);
    e[0] = 1;
    memcpy(e + 1, key, IDMAP_KEY);
    memset(e + 1 + IDMAP_KEY, 0, m->ent_size - 1 - IDMAP_KEY);
    m->index[i] = slot_of(hash, m->n);
    m->n++;
    m->len++;
    return e + VALUE_OFF;
}

/* Index slot i's entry removed: the entry marked, the slot a tomb. */
static void remove_at(idmap *m, size_t i)
{
    slot_ent(m, i)[0] = 0;
    m->index[i] = SLOT_TOMB;
    m->len--;
    m->tombs++;
}

bool idmap_del(idmap *m, const char *key)
{
    bool found;
    size_t i = probe_hashed(m, key, idmap_hash(key), &found);
    if (found)
        remove_at(m, i);
    return found;
}

void idmap_remove(idmap *m, void *value)
{
    unsigned char *e = (unsigned char *)value - VALUE_OFF;
    assert(e[0]); /* a live entry's value, or len and tombs go wrong */
    if (!e[0])
        return;
    /* its slot: the one whose place is this entry's (its key's chain) */
    size_t at = (size_t)(e - m->ents) / m->ent_size, mask = m->cap - 1;
    size_t i = idmap_hash((const char *)e + 1) & mask;
    while ((uint32_t)m->index[i] != (uint32_t)(at + 1)) {
        assert(m->index[i] != 0);
        i = (i + 1) & mask;
    }
    remove_at(m, i);
}

bool idmap_next(const idmap *m, size_t *pos, const char **key, void **value)
{
    for (; *pos < m->n; (*pos)++) {
        unsigned char *e = ent(m, *pos);
        if (e[0]) {
            *key = (const char *)e + 1;
            *value = e + VALUE_OFF;
            (*pos)++;
            return true;
        }
    }
    return false;
}
