/* mmemo: what the SQL mirror remembers of the record files it read: per
 * record id, the state of the file (device, inode, size, ns mtime and
 * ctime, as the record cache validates) and the hash of the data it held.
 * A push or a flush whose file still has that state and whose row holds
 * that hash leaves the row as it is without reading the file: an unchanged
 * record costs a stat. The memo states facts about files only (never about
 * the table), so it stays right when PHP storh or another storhd writes
 * the same mirror: the row's hash is still read from the table and
 * compared. Used under the mirror's mutex. */
#ifndef STORHD_MMEMO_H
#define STORHD_MMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "idmap.h"

#define MMEMO_MAX 1000000 /* records remembered per collection (about 150 bytes each) */

typedef struct mmemo {
    idmap map; /* id -> mmemo_ent */
    uint32_t gen;
    bool ready;
} mmemo;

void mmemo_free(mmemo *m);
/* The 32 hex digits of the hash of id's data when st is the state of the
 * file it was read from, else NULL. A match counts as seen by the walk. */
const char *mmemo_hash(mmemo *m, const char *id, const struct stat *st);
/* Remembers id's file state and its data's hash (hash: 32 hex digits).
 * Out of memory or over MMEMO_MAX only forgets. */
void mmemo_put(mmemo *m, const char *id, const struct stat *st, const char *hash);
void mmemo_forget(mmemo *m, const char *id);
/* Room for n records, made at once before a walk that will put about
 * that many (a first push), instead of growing a power of two at a time;
 * out of memory leaves the puts to grow it. */
void mmemo_reserve(mmemo *m, size_t n);
/* A full walk: mmemo_walk_begin, mmemo_hash or mmemo_put for each record
 * found, then mmemo_walk_end drops every id the walk did not see (deleted
 * records, or changed and not read again). */
void mmemo_walk_begin(mmemo *m);
void mmemo_walk_end(mmemo *m);

#endif
