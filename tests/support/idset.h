/* idset: a growable set of UUIDv7 ids for the fault suites' ledgers
 * (acknowledged, completed, claimed). Add freely, sort once, then look up.
 * Zero-initialise; idset_free releases it. */
#ifndef STORHD_TEST_IDSET_H
#define STORHD_TEST_IDSET_H

#include <stdbool.h>
#include <stddef.h>

#include "uuid7.h"

typedef struct idset {
    char (*id)[UUID7_LEN + 1];
    size_t n, cap;
} idset;

/* Aborts when out of memory (a test cannot go on without its ledger). */
void idset_add(idset *v, const char *id);
/* For idset_has: call once after the last add. */
void idset_sort(idset *v);
bool idset_has(const idset *v, const char *id);
void idset_free(idset *v);

#endif
