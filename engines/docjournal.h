/* docjournal: all-or-nothing DocStore bulk writes across a crash. A bulk
 * <identity>.<n> holds an flock on <coll>/.storh/bulk/<identity>.<n>.lock
 * while its writer lives, and stages row i of a record in shard ss as
 * data/ss/.<identity>.<n>.<i>.row, beside the record it becomes: a name no
 * listing takes for a record (not *.jsonc) and no temp sweep removes (not
 * *.tmp), storh's or ours; its rename is within one directory, and a bulk
 * makes no directory the records do not need (staged under .storh/bulk/
 * rows/ss/ before, a fresh collection's bulk made 256 more). Once the rows
 * are durable, the commit record <identity>.<n>.journal.jsonc (published:
 * fsync, rename, directory fsync) lists each row's record path and what
 * that path held then; from that moment the bulk is committed. The renames
 * follow; the record is removed only after they are durable. Whoever opens
 * the collection next rolls a dead writer's committed bulk forward (a row
 * whose record path changed since, by another writer, is left to that
 * writer; a commit record without "staged" has its rows under .storh/bulk/
 * rows/) and drops the rows of uncommitted ones (walking data/'s shards
 * only when it found a dead bulk or a writer that died, then also for rows
 * whose stage is gone).
 *
 *   begin --rows--> staged --commit--> committed --renames, end--> gone
 *      \--(crash/abort)--> dropped on open  \--(crash)--> rolled forward */
#ifndef STORH_DOCJOURNAL_H
#define STORH_DOCJOURNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "storh_err.h"

typedef struct docjournal docjournal;

/* Takes the bulk's flock (before any of its rows exists, so an opener never
 * finds a live bulk it can lock). */
int docjournal_begin(const char *coll, const char *identity, unsigned long n, docjournal **out,
                     storh_err *err);
/* The staged file of row i of record id, into out (PATH_MAX): in the
 * record's shard directory. */
int docjournal_row_path(const docjournal *j, size_t i, const char *id, char *out, storh_err *err);
/* What the commit record needs of row i: its record's id and its record
 * path (into final, PATH_MAX). */
typedef void (*docjournal_row_fn)(void *ctx, size_t i, const char **id, char *final);
/* The commit record for rows 0..n-1, each described by row(ctx, i) (every
 * staged file durable already), written to its file as it is encoded, so
 * it holds a bounded piece of itself in memory whatever n is. After it
 * returns 0 the bulk is committed. On an error no commit record is left
 * (the caller drops the rows), unless the record was renamed into place,
 * its directory's sync failed and it could not be taken back durably: then
 * *keep, and the caller leaves the stage (docjournal_release) whole for the
 * next open, which rolls it forward or drops it whole. */
int docjournal_commit(docjournal *j, size_t n, docjournal_row_fn row, void *ctx, bool *keep,
                      storh_err *err);
/* Row i of record id staged: its file created and written (not synced:
 * the commit's syncfs does that), through a descriptor on data/ kept by
 * j, its shard directory made when it is missing (and left when the bulk
 * is dropped: an empty shard is what storh leaves after deletes too).
 * written (NULL: not wanted): the file's fstat as it was closed, or all
 * zero (st_ino 0) when it could not be taken. */
int docjournal_write_row(docjournal *j, size_t i, const char *id, const void *data, size_t len,
                         struct stat *written, storh_err *err);
/* Row i of record id renamed to final (its record path, in the shard
 * directory the row was staged in), as docjournal_rename, through the
 * descriptor j keeps on data/. */
int docjournal_rename_row(docjournal *j, size_t i, const char *id, const char *final,
                          storh_err *err);
/* rename(from, to), making to's directory when it is missing. */
int docjournal_rename(const char *from, const char *to, storh_err *err);
/* Removes the commit record and the lock and frees j (the caller removes
 * rows it did not rename). Call it once the renames are durable, or before
 * the commit to drop the bulk. */
void docjournal_end(docjournal *j);
/* Frees j and its flock but leaves the bulk on disk: a committed bulk
 * whose renames failed is then finished by the next open. */
void docjournal_release(docjournal *j);
/* Under the collection lock, on open: finishes committed stages of dead
 * writers and drops uncommitted ones. writer_died: the open found a
 * writer's marker stale (a process died since), so rows whose stage is
 * gone may be left in data/'s shards: they are looked for too. *rolled: a
 * committed stage was found (its rows' index entries must be rebuilt). */
int docjournal_recover(const char *coll, bool writer_died, bool *rolled, storh_err *err);

#endif
