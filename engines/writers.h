/* writers: storh's writer markers and the temp-file sweep on open
 * (FORMAT.md 1.7). A marker <coll>/.storh/writers/<pid>.<8hex> tells other
 * processes (PHP or C) that temp files named .<pid>.<8hex>.<n>.tmp belong to a
 * live writer; on open, temps of dead writers are removed. */
#ifndef STORH_WRITERS_H
#define STORH_WRITERS_H

#include <stdbool.h>

#include "storh_err.h"

/* "<pid>.<8hex>" into out (at least 32 bytes). */
int writers_identity(char *out, storh_err *err);
/* Creates the marker file for identity under coll. */
int writers_register(const char *coll, const char *identity, storh_err *err);
/* Removes the marker (at close). */
void writers_unregister(const char *coll, const char *identity);
/* storh's cleanup_temp_files_on_open: sweep when .storh/writers is absent or
 * any marker is stale, then create the directory / drop stale markers.
 * *swept (NULL: not wanted): it swept (a writer may have died). */
int writers_cleanup_on_open(const char *coll, bool *swept, storh_err *err);
/* Whether a marker of a dead writer is there (one that may have died in
 * the middle of a write). */
bool writers_any_stale(const char *coll);
/* The sweep itself (also run by repair). */
int writers_sweep(const char *coll, storh_err *err);
bool writers_pid_alive(long pid);

#endif
