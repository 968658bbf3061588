/* logwatch: tells an open log whether anything another writer could have
 * changed (its manifest, a segment file, the dirs holding them) has changed
 * since the log last checked by stat, so that a read can skip that stat
 * pair. The process's one inotify descriptor (dirwatch.h, outside the
 * engines' descriptor budget) watches each log's collection dir and
 * segments/ dir. Thread-safe. */
#ifndef STORH_LOGWATCH_H
#define STORH_LOGWATCH_H

#include <stdbool.h>
#include <stdint.h>

typedef struct logwatch logwatch;

/* What a log last validated against: its two dirs' stamps at a moment. */
typedef struct logwatch_mark {
    uint64_t coll, segs;
} logwatch_mark;

/* A watch over the log whose collection dir is dir; NULL when watches are
 * off (logwatch_set_enabled), inotify is missing or the dirs cannot be
 * watched: the log then stats on every read. Caller frees with
 * logwatch_free. */
logwatch *logwatch_new(const char *dir);
void logwatch_free(logwatch *w);
/* Process-wide switch (default on), set by --cache-watch. */
void logwatch_set_enabled(bool on);
/* Reads every queued event (one read(), EAGAIN when nothing changed).
 * true: nothing that concerns w happened since logwatch_validated; else
 * *now is the moment to pass to logwatch_validated once the caller has
 * checked by stat (events after this call are seen by the next one). */
bool logwatch_quiet(logwatch *w, logwatch_mark *now);
/* The caller's stat check taken after logwatch_quiet found the log as
 * its state has it: later calls are quiet until something changes. */
void logwatch_validated(logwatch *w, const logwatch_mark *at);

typedef struct logwatch_stats {
    uint64_t checks, quiet, events, overflows;
} logwatch_stats;
/* Process-wide totals (tests); events and overflows are the process's
 * inotify queue's (dirwatch_totals). */
void logwatch_totals(logwatch_stats *out);

#endif
