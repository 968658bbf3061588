/* idmap: a hash map from 36-byte UUID text to a fixed-size value, for the
 * in-memory state of the log (id -> line location), the queue (id -> job),
 * the mirror (id -> row, id -> file state) and the record cache. Keys are
 * copied in; values are plain bytes owned by the map (a value holding
 * pointers is the caller's to free before removal).
 *
 * The entries (key and value) sit in one array in the order they were
 * inserted, sized by the entries, and an open-addressing index of 8 bytes
 * a slot (the entry's place and 32 bits of its key's hash) finds them: a
 * map of n entries takes about n entries' bytes plus 8 to 16 bytes each,
 * where a table of whole entries kept a quarter to five eighths of its
 * slots empty (its first writes, fresh pages at 4 to 20 us each in the
 * virtual machines measured here, were most of a first mirror push), and
 * the maps' users, who insert and then read in one order (the ids of a
 * listing, of a table read in id order, of a queue's jobs), read the
 * entries in the order they lie. */
#ifndef STORH_IDMAP_H
#define STORH_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDMAP_KEY 36

typedef struct idmap {
    uint64_t *index;     /* cap slots: 0 empty, else hash tag << 32 | (entry + 1), or a tomb */
    unsigned char *ents; /* ecap entries of ent_size bytes: live byte, key, value */
    size_t cap;          /* index slots, a power of two */
    size_t len, tombs;   /* live entries; index slots of removed ones */
    size_t n, ecap;      /* entries used (removed ones until the next rebuild), room */
    size_t vsize, ent_size;
} idmap;

int idmap_init(idmap *m, size_t value_size);
void idmap_free(idmap *m);
/* Pointer to the value of key, or NULL. */
void *idmap_get(const idmap *m, const char *key);
/* For a walk over many keys known ahead (a claim of a thousand jobs): the
 * hash of a key, a prefetch of the slot it starts at, and the lookup that
 * reuses the hash. Each lookup of a big table is a cache miss; a walk that
 * prefetches a few keys ahead overlaps them. */
size_t idmap_hash(const char *key);
void idmap_prefetch(const idmap *m, size_t hash);
void *idmap_get_hashed(const idmap *m, const char *key, size_t hash);
/* idmap_put with the key's hash already computed (idmap_hash). */
void *idmap_put_hashed(idmap *m, const char *key, size_t hash, bool *created);
/* Removes the entry whose value is value (a pointer idmap_get or
 * idmap_put returned, still valid): idmap_del without the lookup. */
void idmap_remove(idmap *m, void *value);
/* Pointer to the value of key, inserted zeroed if absent (*created tells).
 * NULL on out of memory. Pointers stay valid until the next insert (a
 * removal moves nothing). */
void *idmap_put(idmap *m, const char *key, bool *created);
bool idmap_del(idmap *m, const char *key);
/* Makes room for n keys in all (those held counted, tombs dropped), so
 * that the puts up to n grow nothing: one allocation instead of a doubling
 * and rehash per power of two (each a fresh block's page faults). -1 on
 * out of memory (or a map not initialised), the map unchanged. */
int idmap_reserve(idmap *m, size_t n);
/* Iteration, in insertion order: start with *pos = 0; returns false at the
 * end. The entry just visited may be removed during it. */
bool idmap_next(const idmap *m, size_t *pos, const char **key, void **value);
void idmap_clear(idmap *m);

#endif
