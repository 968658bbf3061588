#include "idmap.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mempolicy.h"
#include "xxhash.h"

enum { SLOT_EMPTY = 0, SLOT_FULL = 1, SLOT_TOMB = 2 };

/* slot layout: state byte, key[36], padding to 8, value */
#define VALUE_OFF 40

static unsigned char *slot(const idmap *m, size_t i)
{
    return m->slots + i * m->slot_size;
}

/* n slots of size bytes, zeroed; NULL on overflow or out of memory
 * (mempolicy_table: written, not calloc'd, since a page first read as the
 * shared zero page faults again at a put's write; a small table from the
 * heap, which hands out pages it had again at 0.1 us where a fresh one
 * costs 4 to 20 us at its first write in the virtual machines measured
 * here, bench/NOTES.md "Fresh pages"; a table of some MiB on huge pages, a
 * fault per 2 MiB). */
static unsigned char *zeroed(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return mempolicy_table(n * size);
}

int idmap_init(idmap *m, size_t value_size)
{
    memset(m, 0, sizeof *m);
    m->vsize = value_size;
    m->slot_size = VALUE_OFF + ((value_size + 7) & ~(size_t)7);
    m->cap = 64;
    m->slots = zeroed(m->cap, m->slot_size);
    return m->slots ? 0 : -1;
}

void idmap_free(idmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

void idmap_clear(idmap *m)
{
    memset(m->slots, 0, m->cap * m->slot_size);
    m->len = m->tombs = 0;
}

size_t idmap_hash(const char *key)
{
    return (size_t)XXH3_64bits(key, IDMAP_KEY);
}

/* Index of key's slot (its hash h), or of the slot to insert into (first
 * tomb or empty). */
static size_t probe_hashed(const idmap *m, const char *key, size_t h, bool *found)
{
    size_t mask = m->cap - 1, i = h & mask, insert = (size_t)-1;
    for (;;) {
        unsigned char *s = slot(m, i);
        if (s[0] == SLOT_EMPTY) {
            *found = false;
            return insert != (size_t)-1 ? insert : i;
        }
        if (s[0] == SLOT_TOMB) {
            if (insert == (size_t)-1)
                insert = i;
        } else if (memcmp(s + 1, key, IDMAP_KEY) == 0) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
}

static size_t probe(const idmap *m, const char *key, bool *found)
{
    return probe_hashed(m, key, idmap_hash(key), found);
}

/* Rehashes the live keys into cap slots (a power of two), dropping tombs. */
static int rehash(idmap *m, size_t cap)
{
    unsigned char *old = m->slots;
    size_t oldcap = m->cap;
    m->slots = zeroed(cap, m->slot_size);
    if (!m->slots) {
        m->slots = old;
        return -1;
    }
    m->cap = cap;
    m->len = m->tombs = 0;
    for (size_t i = 0; i < oldcap; i++) {
        unsigned char *s = old + i * m->slot_size;
        if (s[0] != SLOT_FULL)
            continue;
        bool found;
        size_t j = probe(m, (const char *)s + 1, &found);
        memcpy(slot(m, j), s, m->slot_size);
        m->len++;
    }
    free(old);
    return 0;
}

static int grow(idmap *m)
{
    return rehash(m, (m->len * 2 + 2 > m->cap) ? m->cap * 2 : m->cap); /* else: just drop tombs */
}

int idmap_reserve(idmap *m, size_t n)
{
    size_t cap = m->cap;
    if (!cap || n > SIZE_MAX / 8)
        return -1;
    while ((n + 1) * 4 > cap * 3) /* the load idmap_put keeps */
        cap *= 2;
    /* the same size again drops the tombs, which count against the load */
    if (cap == m->cap && (n + m->tombs + 1) * 4 <= cap * 3)
        return 0;
    return rehash(m, cap);
}

void *idmap_get(const idmap *m, const char *key)
{
    bool found;
    size_t i = probe(m, key, &found);
    return found ? slot(m, i) + VALUE_OFF : NULL;
}

void idmap_prefetch(const idmap *m, size_t hash)
{
    const unsigned char *s = slot(m, hash & (m->cap - 1));
    /* every cache line of the slot (an 88-byte slot may touch three) */
    for (size_t at = 0; at < m->slot_size; at += 64)
        __builtin_prefetch(s + at);
    __builtin_prefetch(s + m->slot_size - 1);
}

void *idmap_get_hashed(const idmap *m, const char *key, size_t hash)
{
    bool found;
    size_t i = probe_hashed(m, key, hash, &found);
    return found ? slot(m, i) + VALUE_OFF : NULL;
}

void *idmap_put(idmap *m, const char *key, bool *created)
{
    return idmap_put_hashed(m, key, idmap_hash(key), created);
}

void *idmap_put_hashed(idmap *m, const char *key, size_t hash, bool *created)
{
    if ((m->len + m->tombs + 1) * 4 > m->cap * 3 && grow(m) != 0)
        return NULL;
    bool found;
    size_t i = probe_hashed(m, key, hash, &found);
    unsigned char *s = slot(m, i);
    if (created)
        *created = !found;
    if (!found) {
        if (s[0] == SLOT_TOMB)
            m->tombs--;
        s[0] = SLOT_FULL;
        memcpy(s + 1, key, IDMAP_KEY);
        memset(s + VALUE_OFF, 0, m->slot_size - VALUE_OFF);
        m->len++;
    }
    return s + VALUE_OFF;
}

bool idmap_del(idmap *m, const char *key)
{
    bool found;
    size_t i = probe(m, key, &found);
    if (!found)
        return false;
    slot(m, i)[0] = SLOT_TOMB;
    m->len--;
    m->tombs++;
    return true;
}

void idmap_remove(idmap *m, void *value)
{
    unsigned char *s = (unsigned char *)value - VALUE_OFF;
    assert(s[0] == SLOT_FULL); /* a live entry's value, or len and tombs go wrong */
    if (s[0] != SLOT_FULL)
        return;
    s[0] = SLOT_TOMB;
    m->len--;
    m->tombs++;
}

bool idmap_next(const idmap *m, size_t *pos, const char **key, void **value)
{
    for (; *pos < m->cap; (*pos)++) {
        unsigned char *s = slot(m, *pos);
        if (s[0] == SLOT_FULL) {
            *key = (const char *)s + 1;
            *value = s + VALUE_OFF;
            (*pos)++;
            return true;
        }
    }
    return false;
}
