/* dirwatch: tells a cache whether anything in a directory has changed
 * since it last checked a file there by stat, so that a lookup can skip
 * that stat. One inotify descriptor serves every watched directory of the
 * process (the engines' descriptor budget is not touched). Used by the
 * index's entry cache (docindex_mem.c: an entry file is replaced by a
 * rename into its directory, or unlinked, or its directory removed by a
 * rebuild, and each of these queues an event before the writer's call
 * returns; a rebuild's swap of the tree above is seen by a watch on the
 * dir that holds it) and by the logs' watch (logwatch.h). Thread-safe (one mutex). */
#ifndef STORH_DIRWATCH_H
#define STORH_DIRWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dirwatch dirwatch;

/* Which names in a watched dir concern its caller (NULL: every name);
 * events about the dir itself always do. */
typedef bool (*dirwatch_filter)(const char *name);

/* A watch over dir for the names concerns passes (counted: callers of one
 * dir with one filter share a slot, and every slot of a dir the kernel's
 * watch); NULL when watches are off (dirwatch_set_enabled), inotify is
 * missing, out of descriptors or memory, or dir cannot be watched: the
 * caller then stats on every lookup; errno says why (ENOENT: no such dir
 * yet). Give it back with dirwatch_release. */
dirwatch *dirwatch_add(const char *dir, dirwatch_filter concerns);
void dirwatch_release(dirwatch *w);
/* Process-wide switch (default on), set by --cache-watch. */
void dirwatch_set_enabled(bool on);
/* Reads every queued event (one read(), EAGAIN when nothing changed) and
 * returns w's stamp: it stays the same until an event names something in
 * dir that concerns w (or dir itself), the queue overflows or a read
 * fails. 0 when the watch is dead (dir deleted or moved): never equal to
 * a stamp taken before; add the dir again to watch what stands at its
 * path now. A stamp taken before a stat validates what that stat saw for
 * as long as the stamp stays the same. */
uint64_t dirwatch_stamp(dirwatch *w);
/* As dirwatch_stamp for n watches, after one drain: out[i] is ws[i]'s. */
void dirwatch_stamps(dirwatch *const *ws, size_t n, uint64_t *out);

typedef struct dirwatch_stats {
    uint64_t stamps, events, overflows, watches;
} dirwatch_stats;
/* Process-wide totals (tests). */
void dirwatch_totals(dirwatch_stats *out);

#endif
