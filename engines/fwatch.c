/* fwatch: see fwatch.h. States of the watch (w->fd):
 *   off   (-2): no inotify for this collection (init failed, a watch limit
 *               reached): every hit is validated by stat, for good.
 *   down  (-1): not set up yet, or torn down by an overflow, a failed read
 *               or a lost top watch; fwatch_arm sets it up again.
 *   up   (>=0): root, collection dir and data/ watched; shards watched as
 *               fwatch_arm meets them.
 * Any move to down advances every shard epoch, so no entry validated
 * before it is trusted again without a stat. */
#include "fwatch.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define SHARDS 256
#define FW_OFF (-2)
#define FW_DOWN (-1)
/* what changes a record file or the name it is reached by */
#define FILE_EVENTS                                                                                \
    (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE |            \
     IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
#define NAME_EVENTS                                                                                \
    (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)

enum { TOP_ROOT, TOP_COLL, TOP_DATA, TOPS };

struct fwatch {
    int fd;
    char *dir;        /* the collection dir */
    const char *name; /* its last component, inside dir */
    size_t rootlen;   /* dir[0..rootlen) is the root */
    int top[TOPS];    /* watch descriptors, -1 when not held */
    int shard[SHARDS];
    bool absent[SHARDS]; /* no such shard dir, and data/ watched for it */
    uint32_t epoch[SHARDS];
};

static atomic_bool disabled;
static _Atomic uint64_t t_drains, t_events, t_resets, t_watches;

void fwatch_set_enabled(bool on)
{
    atomic_store(&disabled, !on);
}

bool fwatch_enabled(void)
{
    return !atomic_load(&disabled);
}

void fwatch_totals(fwatch_stats *out)
{
    *out = (fwatch_stats){atomic_load(&t_drains), atomic_load(&t_events), atomic_load(&t_resets),
                          atomic_load(&t_watches)};
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The shard of a record id, or of a shard dir's name; -1 when none. */
static int shard_of(const char *two)
{
    int hi = hexval(two[0]), lo = hi < 0 ? -1 : hexval(two[1]);
    return lo < 0 ? -1 : hi * 16 + lo;
}

static void bump(fwatch *w, int s)
{
    if (++w->epoch[s] == 0)
        w->epoch[s] = 1;
}

fwatch *fwatch_new(const char *dir)
{
    if (!fwatch_enabled())
        return NULL;
    fwatch *w = calloc(1, sizeof *w);
    if (!w || !(w->dir = strdup(dir))) {
        free(w);
        return NULL;
    }
    const char *slash = strrchr(w->dir, '/');
    w->rootlen = slash ? (size_t)(slash - w->dir) : 0;
    w->name = slash ? slash + 1 : w->dir;
    w->fd = FW_DOWN;
    for (int i = 0; i < TOPS; i++)
        w->top[i] = -1;
    for (int s = 0; s < SHARDS; s++) {
        w->shard[s] = -1;
        w->epoch[s] = 1;
    }
    return w;
}

/* Closing an inotify descriptor waits for the kernel to retire its watches
 * (an SRCU grace period: about 13 ms here, more under load), which a
 * collection's close or eviction should not wait for: up to CLOSERS closes
 * run at once on detached threads, any more (or with no thread to be had)
 * inline, so the descriptors past the budget stay bounded. */
#define CLOSERS 4
static atomic_int t_closing;

static void *closer(void *arg)
{
    close((int)(intptr_t)arg);
    atomic_fetch_sub(&t_closing, 1);
    return NULL;
}

static void close_watch_fd(int fd)
{
    if (atomic_fetch_add(&t_closing, 1) < CLOSERS) {
        pthread_attr_t a;
        pthread_t th;
        if (pthread_attr_init(&a) == 0) {
            int rc = pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
            if (!rc)
                rc = pthread_create(&th, &a, closer, (void *)(intptr_t)fd);
            pthread_attr_destroy(&a);
            if (!rc)
                return;
        }
    }
    atomic_fetch_sub(&t_closing, 1);
    close(fd);
}

/* To down (or off): the descriptor closed (its watches with it) and every
 * epoch advanced. */
static void teardown(fwatch *w, bool off)
{
    if (w->fd >= 0)
        close_watch_fd(w->fd);
    w->fd = off ? FW_OFF : FW_DOWN;
    for (int i = 0; i < TOPS; i++)
        w->top[i] = -1;
    for (int s = 0; s < SHARDS; s++) {
        w->shard[s] = -1;
        w->absent[s] = false;
        bump(w, s);
    }
    atomic_fetch_add(&t_resets, 1);
}

void fwatch_free(fwatch *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close_watch_fd(w->fd);
    free(w->dir);
    free(w);
}

/* A watch limit or no inotify at all is for good (off); anything else (a
 * dir not there yet) is tried again at the next arm. */
static bool hard_failure(int e)
{
    return e == ENOSPC || e == ENOSYS || e == EMFILE || e == ENFILE || e == ENOMEM;
}

static int add(fwatch *w, const char *path, uint32_t mask)
{
    int wd = inotify_add_watch(w->fd, path, mask | IN_ONLYDIR);
    if (wd >= 0)
        atomic_fetch_add(&t_watches, 1);
    else if (hard_failure(errno))
        teardown(w, true);
    return wd;
}

/* down -> up: root, collection dir and data/ watched, top down. */
static bool setup(fwatch *w)
{
    if (w->fd == FW_OFF)
        return false;
    if (w->fd == FW_DOWN) {
        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0) {
            w->fd = FW_DOWN;
            teardown(w, hard_failure(errno));
            return false;
        }
    }
    char p[PATH_MAX];
    if (w->top[TOP_ROOT] < 0) {
        snprintf(p, sizeof p, "%.*s", (int)(w->rootlen ? w->rootlen : 1),
                 w->rootlen ? w->dir : "/");
        if ((w->top[TOP_ROOT] = add(w, p, NAME_EVENTS)) < 0)
            return false;
    }
    if (w->top[TOP_COLL] < 0 && (w->top[TOP_COLL] = add(w, w->dir, NAME_EVENTS)) < 0)
        return false;
    if (w->top[TOP_DATA] < 0) {
        if (snprintf(p, sizeof p, "%s/data", w->dir) >= (int)sizeof p)
            return false;
        if ((w->top[TOP_DATA] = add(w, p, NAME_EVENTS)) < 0)
            return false;
    }
    return true;
}

uint32_t fwatch_arm(fwatch *w, const char *id)
{
    int s = shard_of(id + 24);
    if (s < 0 || !setup(w))
        return 0;
    if (w->shard[s] < 0) {
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/data/%c%c", w->dir, id[24], id[25]) >= (int)sizeof p)
            return 0;
        int wd = add(w, p, FILE_EVENTS);
        if (wd < 0) {
            /* absent: its creation is an event on data/, which moves the
             * epoch on, so "no such record" holds until then */
            w->absent[s] = errno == ENOENT && w->fd >= 0;
            return w->absent[s] ? w->epoch[s] : 0;
        }
        w->shard[s] = wd;
        w->absent[s] = false;
    }
    return w->epoch[s];
}

uint32_t fwatch_epoch(const fwatch *w, const char *id)
{
    int s = shard_of(id + 24);
    return s < 0 || w->fd < 0 || (w->shard[s] < 0 && !w->absent[s]) ? 0 : w->epoch[s];
}

static int shard_of_wd(const fwatch *w, int wd)
{
    for (int s = 0; s < SHARDS; s++)
        if (w->shard[s] == wd)
            return s;
    return -1;
}

static bool is_record_name(const char *name, uint32_t len)
{
    return len >= 42 && strnlen(name, len) == 42 && !memcmp(name + 36, ".jsonc", 6);
}

/* One event; false when the whole watch must go down. */
static bool handle(fwatch *w, const struct inotify_event *ev,
                   void (*stale)(void *ctx, const char *id), void *ctx)
{
    if (ev->mask & IN_Q_OVERFLOW)
        return false;
    bool self_gone = ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT);
    if (ev->wd == w->top[TOP_ROOT]) /* the collection dir renamed or removed */
        return !self_gone && !(ev->len && !strcmp(ev->name, w->name));
    if (ev->wd == w->top[TOP_COLL])
        return !self_gone && !(ev->len && !strcmp(ev->name, "data"));
    if (ev->wd == w->top[TOP_DATA]) {
        if (self_gone)
            return false;
        int s = ev->len && strnlen(ev->name, ev->len) == 2 ? shard_of(ev->name) : -1;
        if (s >= 0) { /* a shard dir came, went or was replaced */
            if (w->shard[s] >= 0)
                inotify_rm_watch(w->fd, w->shard[s]);
            w->shard[s] = -1;
            w->absent[s] = false;
            bump(w, s);
        }
        return true;
    }
    int s = shard_of_wd(w, ev->wd);
    if (s < 0) /* the IN_IGNORED of a watch already let go */
        return true;
    if (self_gone) {
        if (!(ev->mask & IN_IGNORED))
            inotify_rm_watch(w->fd, w->shard[s]);
        w->shard[s] = -1;
        bump(w, s);
    } else if (ev->len && is_record_name(ev->name, ev->len)) {
        char id[37];
        memcpy(id, ev->name, 36);
        id[36] = '\0';
        stale(ctx, id);
    }
    return true;
}

void fwatch_drain(fwatch *w, void (*stale)(void *ctx, const char *id), void *ctx)
{
    if (w->fd < 0)
        return;
    atomic_fetch_add_explicit(&t_drains, 1, memory_order_relaxed);
    char b[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(w->fd, b, sizeof b);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) { /* a failed read: nothing known, everything unverified */
            teardown(w, false);
            return;
        }
        for (char *p = b; p < b + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            atomic_fetch_add_explicit(&t_events, 1, memory_order_relaxed);
            if (!handle(w, ev, stale, ctx)) {
                teardown(w, false);
                return;
            }
            p += sizeof *ev + ev->len;
        }
    }
}
