/* logwatch: see logwatch.h. Two watches of dirwatch.h per log, each with a
 * filter: the collection dir's (its manifest) and segments/'s (the dir and
 * the segment files; tmp files, sparse indexes and writer markers do not
 * concern a log). A log is quiet while both stamps are what they were when
 * it last checked by stat; one drain of the process's inotify queue gives
 * both. A watch whose dir went away (deleted, moved, unmounted) is dead:
 * its log stats on every read from then on. */
#include "logwatch.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dirwatch.h"

struct logwatch {
    dirwatch *w[2]; /* the collection dir, segments/ */
    logwatch_mark seen;
    bool valid;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* seen, valid */
static atomic_bool disabled;
static _Atomic uint64_t t_checks, t_quiet;

void logwatch_set_enabled(bool on)
{
    atomic_store(&disabled, !on);
}

void logwatch_totals(logwatch_stats *out)
{
    dirwatch_stats d;
    dirwatch_totals(&d);
    *out = (logwatch_stats){atomic_load(&t_checks), atomic_load(&t_quiet), d.events, d.overflows};
}

/* The names whose change a log must see: its manifest, its segments dir,
 * a segment file. */
static bool concerns(const char *name)
{
    size_t n = strlen(name);
    return !strcmp(name, "manifest.jsonc") || !strcmp(name, "segments") ||
           (n > 7 && !strcmp(name + n - 7, ".ndjson"));
}

logwatch *logwatch_new(const char *dir)
{
    if (atomic_load(&disabled))
        return NULL;
    char segs[PATH_MAX];
    if (snprintf(segs, sizeof segs, "%s/segments", dir) >= (int)sizeof segs)
        return NULL;
    logwatch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    if ((w->w[0] = dirwatch_add(dir, concerns)) == NULL ||
        (w->w[1] = dirwatch_add(segs, concerns)) == NULL) {
        logwatch_free(w);
        return NULL;
    }
    return w;
}

void logwatch_free(logwatch *w)
{
    if (!w)
        return;
    dirwatch_release(w->w[0]);
    dirwatch_release(w->w[1]);
    free(w);
}

bool logwatch_quiet(logwatch *w, logwatch_mark *now)
{
    atomic_fetch_add_explicit(&t_checks, 1, memory_order_relaxed);
    uint64_t s[2];
    dirwatch_stamps(w->w, 2, s);
    *now = (logwatch_mark){s[0], s[1]};
    pthread_mutex_lock(&mu);
    bool quiet = s[0] && s[1] && w->valid && !memcmp(now, &w->seen, sizeof *now);
    pthread_mutex_unlock(&mu);
    if (quiet)
        atomic_fetch_add_explicit(&t_quiet, 1, memory_order_relaxed);
    return quiet;
}

void logwatch_validated(logwatch *w, const logwatch_mark *at)
{
    pthread_mutex_lock(&mu);
    w->seen = *at;
    w->valid = true;
    pthread_mutex_unlock(&mu);
}
