/* dirwatch: see dirwatch.h. One inotify descriptor for the process, opened
 * by the first caller that asks and kept for the process's life; a slot
 * per watched dir (callers of one dir share the kernel's watch, so slots
 * are counted). Stamps come from one process-wide clock: every event that
 * names a slot's dir moves that slot's generation to the next tick, and a
 * queue overflow or a failed read moves the epoch to it, so a stamp never
 * repeats, even across a slot given up and a new one for the same path.
 * A slot has a filter of the names that concern it (the logs' watch
 * passes only manifests and segments); slots of one dir with different
 * filters share the kernel's watch. Events are queued by the writer's own
 * rename(), unlink() or write() before it returns, so one read at the
 * start of a lookup sees every change that returned before it began.
 * What it cannot see: a directory above the watched one renamed (an index
 * rebuild swaps entries/ above the entry dirs: docindex_mem.c watches the
 * dir that holds it for that). */
#include "dirwatch.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

#define DW_UNSET (-1)
#define DW_OFF (-2)
#define MASK                                                                                       \
    (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY | IN_DELETE_SELF |            \
     IN_MOVE_SELF | IN_ONLYDIR)

struct dirwatch {
    struct dirwatch *next;
    int wd; /* -1 once the watch is gone */
    int refs;
    uint64_t gen;
    dirwatch_filter concerns;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int fd = DW_UNSET;
static dirwatch *slots;
static uint64_t tick, epoch;
static atomic_bool disabled;
static _Atomic uint64_t t_stamps, t_events, t_overflows, t_watches;

void dirwatch_set_enabled(bool on)
{
    atomic_store(&disabled, !on);
}

void dirwatch_totals(dirwatch_stats *out)
{
    *out = (dirwatch_stats){atomic_load(&t_stamps), atomic_load(&t_events),
                            atomic_load(&t_overflows), atomic_load(&t_watches)};
}

/* Under mu: whether another live slot than w holds wd. */
static bool wd_shared(const dirwatch *w, int wd)
{
    for (const dirwatch *o = slots; o; o = o->next)
        if (o != w && o->wd == wd)
            return true;
    return false;
}

dirwatch *dirwatch_add(const char *dir, dirwatch_filter concerns)
{
    if (atomic_load(&disabled)) {
        errno = ENOTSUP;
        return NULL;
    }
    dirwatch *w = NULL;
    int e = 0;
    pthread_mutex_lock(&mu);
    if (fd == DW_UNSET) {
        fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0) /* no inotify here: for good; out of descriptors: retried */
            fd = errno == ENOSYS || errno == EINVAL ? DW_OFF : DW_UNSET;
    }
    int wd = fd >= 0 ? inotify_add_watch(fd, dir, MASK) : -1;
    if (wd < 0)
        e = fd >= 0 ? errno : ENOTSUP;
    if (wd >= 0) {
        for (w = slots; w && !(w->wd == wd && w->concerns == concerns); w = w->next)
            ;
        if (w) {
            w->refs++;
        } else if ((w = calloc(1, sizeof *w)) != NULL) {
            *w = (dirwatch){slots, wd, 1, ++tick, concerns};
            slots = w;
            atomic_fetch_add_explicit(&t_watches, 1, memory_order_relaxed);
        } else {
            if (!wd_shared(NULL, wd))
                inotify_rm_watch(fd, wd);
            e = ENOMEM;
        }
    }
    pthread_mutex_unlock(&mu);
    if (!w)
        errno = e;
    return w;
}

void dirwatch_release(dirwatch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&mu);
    if (--w->refs == 0) {
        if (w->wd >= 0 && !wd_shared(w, w->wd))
            inotify_rm_watch(fd, w->wd);
        for (dirwatch **p = &slots; *p; p = &(*p)->next)
            if (*p == w) {
                *p = w->next;
                break;
            }
        free(w);
    }
    pthread_mutex_unlock(&mu);
}

/* Under mu: the event applied to every slot of its watch. */
static void handle(const struct inotify_event *ev)
{
    atomic_fetch_add_explicit(&t_events, 1, memory_order_relaxed);
    if (ev->mask & IN_Q_OVERFLOW) {
        epoch = ++tick;
        atomic_fetch_add_explicit(&t_overflows, 1, memory_order_relaxed);
        return;
    }
    bool gone = ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT);
    if (gone && !(ev->mask & IN_IGNORED) && ev->wd >= 0)
        inotify_rm_watch(fd, ev->wd);
    int wd = ev->wd;
    for (dirwatch *w = slots; w; w = w->next) {
        if (w->wd != wd) /* (none: the IN_IGNORED of a watch already let go) */
            continue;
        if (gone)
            w->wd = -1; /* dead: stamps are 0 from now on */
        if (gone || !ev->len || !w->concerns || w->concerns(ev->name))
            w->gen = ++tick;
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
            epoch = ++tick;
            return;
        }
        for (char *p = b; p < b + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            handle(ev);
            p += sizeof *ev + ev->len;
        }
        /* a read takes every queued event that fits: room left for the
         * largest one means the queue was empty when it was read */
        if (sizeof b - (size_t)n >= sizeof(struct inotify_event) + NAME_MAX + 1)
            return;
    }
}

void dirwatch_stamps(dirwatch *const *ws, size_t n, uint64_t *out)
{
    atomic_fetch_add_explicit(&t_stamps, 1, memory_order_relaxed);
    pthread_mutex_lock(&mu);
    drain();
    for (size_t i = 0; i < n; i++) {
        const dirwatch *w = ws[i];
        out[i] = w->wd < 0 ? 0 : w->gen > epoch ? w->gen : epoch;
    }
    pthread_mutex_unlock(&mu);
}

uint64_t dirwatch_stamp(dirwatch *w)
{
    uint64_t s;
    dirwatch_stamps(&w, 1, &s);
    return s;
}
