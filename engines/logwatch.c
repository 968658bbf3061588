/* logwatch: see logwatch.h. One inotify descriptor for the process, opened
 * by the first log that asks and kept for the process's life; a slot per
 * watched dir (two logs of one dir share the kernel's watch, so slots are
 * counted); a generation per slot moved on by every event that names the
 * manifest, the segments dir or a segment file, and one epoch moved on by
 * a queue overflow or a failed read. A log is quiet while the generations
 * of its two slots and the epoch are what they were when it last checked
 * by stat. Events are queued by the writer's own write() or rename()
 * before it returns, so one read at the start of a read sees every change
 * that returned before it began. A slot whose dir went away (deleted,
 * moved, unmounted) is dead: its logs stat on every read from then on. */
#include "logwatch.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define LW_UNSET (-1)
#define LW_OFF (-2)
#define MASK                                                                                       \
    (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY | IN_DELETE_SELF |            \
     IN_MOVE_SELF | IN_ONLYDIR)

typedef struct slot {
    struct slot *next;
    int wd; /* -1 once the watch is gone */
    int refs;
    uint64_t gen;
} slot;

struct logwatch {
    slot *coll, *segs;
    logwatch_mark seen;
    bool valid;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int fd = LW_UNSET;
static slot *slots;
static uint64_t epoch;
static atomic_bool disabled;
static _Atomic uint64_t t_checks, t_quiet, t_events, t_overflows;

void logwatch_set_enabled(bool on)
{
    atomic_store(&disabled, !on);
}

void logwatch_totals(logwatch_stats *out)
{
    *out = (logwatch_stats){atomic_load(&t_checks), atomic_load(&t_quiet), atomic_load(&t_events),
                            atomic_load(&t_overflows)};
}

/* Under mu: the slot of dir (a new one or a shared one, counted). */
static slot *watch_dir(const char *dir)
{
    int wd = inotify_add_watch(fd, dir, MASK);
    if (wd < 0)
        return NULL;
    for (slot *s = slots; s; s = s->next)
        if (s->wd == wd) {
            s->refs++;
            return s;
        }
    slot *s = calloc(1, sizeof *s);
    if (!s) {
        inotify_rm_watch(fd, wd);
        return NULL;
    }
    *s = (slot){slots, wd, 1, 0};
    slots = s;
    return s;
}

static void unwatch(slot *s)
{
    if (!s || --s->refs > 0)
        return;
    if (s->wd >= 0)
        inotify_rm_watch(fd, s->wd);
    for (slot **p = &slots; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    free(s);
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
    pthread_mutex_lock(&mu);
    if (fd == LW_UNSET) {
        fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0) /* no inotify here: for good; out of descriptors: retried */
            fd = errno == ENOSYS || errno == EINVAL ? LW_OFF : LW_UNSET;
    }
    if (fd >= 0 && (w->coll = watch_dir(dir)) != NULL && !(w->segs = watch_dir(segs))) {
        unwatch(w->coll);
        w->coll = NULL;
    }
    pthread_mutex_unlock(&mu);
    if (!w->segs) {
        free(w);
        return NULL;
    }
    return w;
}

void logwatch_free(logwatch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&mu);
    unwatch(w->coll);
    unwatch(w->segs);
    pthread_mutex_unlock(&mu);
    free(w);
}

/* The names whose change a log must see: its manifest, its segments dir,
 * a segment file (tmp files, sparse indexes and writer markers are not). */
static bool concerns(const struct inotify_event *ev)
{
    if (!ev->len)
        return true;
    size_t n = strnlen(ev->name, ev->len);
    return !strcmp(ev->name, "manifest.jsonc") || !strcmp(ev->name, "segments") ||
           (n > 7 && !strcmp(ev->name + n - 7, ".ndjson"));
}

static void handle(const struct inotify_event *ev)
{
    atomic_fetch_add_explicit(&t_events, 1, memory_order_relaxed);
    if (ev->mask & IN_Q_OVERFLOW) {
        epoch++;
        atomic_fetch_add_explicit(&t_overflows, 1, memory_order_relaxed);
        return;
    }
    slot *s = slots;
    while (s && s->wd != ev->wd)
        s = s->next;
    if (!s) /* the IN_IGNORED of a watch already let go */
        return;
    if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
        if (!(ev->mask & IN_IGNORED))
            inotify_rm_watch(fd, s->wd);
        s->wd = -1; /* dead: its logs stat from now on */
        s->gen++;
    } else if (concerns(ev)) {
        s->gen++;
    }
}

/* Under mu: every queued event applied. */
static void drain(void)
{
    char b[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(fd, b, sizeof b);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) { /* a failed read: nothing known */
            epoch++;
            return;
        }
        for (char *p = b; p < b + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            handle(ev);
            p += sizeof *ev + ev->len;
        }
        /* a read takes every queued event that fits: room left for the
         * largest one means the queue was empty when it was read (what
         * came since is the next check's) */
        if (sizeof b - (size_t)n >= sizeof(struct inotify_event) + NAME_MAX + 1)
            return;
    }
}

bool logwatch_quiet(logwatch *w, logwatch_mark *now)
{
    atomic_fetch_add_explicit(&t_checks, 1, memory_order_relaxed);
    pthread_mutex_lock(&mu);
    drain();
    *now = (logwatch_mark){w->coll->gen, w->segs->gen, epoch};
    bool alive = w->coll->wd >= 0 && w->segs->wd >= 0;
    bool quiet = alive && w->valid && !memcmp(now, &w->seen, sizeof *now);
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
