/* pubset: many files published as one durable step, for a rebuild that
 * replaces a whole tree of them (an index build). Each file is written to
 * a temp beside it (<dir>/.<basename>.<12hex>.tmp, storh's generic temp
 * name) without an fsync; the commit makes every temp durable at once (one
 * syncfs(2) through a descriptor opened before the first write, where
 * syncfs reports writeback errors; else an fsync each), renames them into
 * place, and makes the renames durable (one syncfs again, else an fsync of
 * each directory renamed in). A crash before the commit returns leaves
 * each file old or new, never torn. Not thread-safe. */
#ifndef STORH_PUBSET_H
#define STORH_PUBSET_H

#include <stdbool.h>
#include <stddef.h>

#include "storh_err.h"

typedef struct pubset pubset;

/* A set whose syncs go through the filesystem of dir (use_syncfs: the
 * caller's sync mode, docgroup_default_mode() != DOCGROUP_SYNC_EACH). */
int pubset_begin(const char *dir, bool use_syncfs, pubset **out, storh_err *err);
/* Writes data as path's next content, to a temp (path's directory must
 * exist). */
int pubset_add(pubset *p, const char *path, const void *data, size_t len, storh_err *err);
/* Durable, renamed, durable again; frees p whatever it returns (a failure
 * before the renames removes the temps; after, the renamed files stay). */
int pubset_commit(pubset *p, storh_err *err);
/* Removes the temps written so far and frees p (NULL is fine). */
void pubset_abort(pubset *p);

#endif
