#include "gcommit.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "estats.h"
#include "fault.h"

void gcommit_init(gcommit *g, pthread_mutex_t *mu, int fd, uint64_t size)
{
    g->mu = mu;
    pthread_cond_init(&g->cv, NULL);
    g->fd = fd;
    g->gen = 0;
    g->written = g->synced = size;
    g->syncing = false;
    g->sync_fd = -1;
    g->poisoned = 0;
    g->pending = 0;
    g->kind = WSTATS_LOG;
    g->name[0] = '\0';
}

void gcommit_label(gcommit *g, wstats_kind kind, const char *name)
{
    g->kind = kind;
    snprintf(g->name, sizeof g->name, "%s", name);
}

/* fsync, or the failure a fault test injects for this store. */
static int do_fsync(gcommit *g, int fd)
{
    int rc = fsync(fd);
    if (rc == 0 && fault_fails("fsync", g->name)) {
        errno = EIO;
        return -1;
    }
    return rc;
}

/* Every poisoning goes through here, so /readyz and /metrics see it. */
static void set_poison(gcommit *g, int errnum)
{
    if (!g->poisoned)
        wstats_poisoned(g->kind, g->name[0] ? g->name : "unnamed", errnum);
    g->poisoned = errnum;
}

void gcommit_destroy(gcommit *g)
{
    pthread_cond_destroy(&g->cv);
}

gcommit_ticket gcommit_written(gcommit *g, uint64_t end)
{
    if (end > g->written) {
        g->written = end;
        g->pending++;
    }
    return (gcommit_ticket){g->gen, end};
}

gcommit_ticket gcommit_position(const gcommit *g)
{
    return (gcommit_ticket){g->gen, g->written};
}

static int poisoned(gcommit *g, storh_err *err)
{
    return storh_err_sys(err, g->poisoned,
                         "An earlier write or fsync of this file failed; its writes are refused "
                         "until storhd is restarted");
}

int gcommit_wait(gcommit *g, gcommit_ticket t, storh_err *err)
{
    for (;;) {
        if (g->poisoned)
            return poisoned(g, err);
        if (t.gen < g->gen || g->synced >= t.off)
            return 0;
        if (g->syncing) {
            pthread_cond_wait(&g->cv, g->mu);
            continue;
        }
        g->syncing = true;
        uint64_t target = g->written, gen = g->gen, batch = g->pending;
        g->pending = 0;
        int fd = g->sync_fd = g->fd;
        pthread_mutex_unlock(g->mu);
        int rc = do_fsync(g, fd);
        int e = errno;
        pthread_mutex_lock(g->mu);
        g->syncing = false;
        g->sync_fd = -1;
        if (rc != 0) {
            set_poison(g, e);
        } else {
            estats_add(ESTAT_FSYNC_FILE, 1);
            wstats_batch(g->kind, batch);
            /* a switch meanwhile flushed this gen itself */
            if (gen == g->gen && target > g->synced)
                g->synced = target;
        }
        if (gen != g->gen)
            close(fd); /* the switch left the fd being synced to us */
        pthread_cond_broadcast(&g->cv);
    }
}

int gcommit_check(gcommit *g, storh_err *err)
{
    return g->poisoned ? poisoned(g, err) : 0;
}

void gcommit_poison(gcommit *g, int errnum)
{
    set_poison(g, errnum ? errnum : EIO);
    pthread_cond_broadcast(&g->cv);
}

int gcommit_flush(gcommit *g, storh_err *err)
{
    int rc = gcommit_check(g, err);
    if (rc || g->synced >= g->written)
        return rc;
    if (do_fsync(g, g->fd) != 0) {
        gcommit_poison(g, errno);
        return poisoned(g, err);
    }
    estats_add(ESTAT_FSYNC_FILE, 1);
    wstats_batch(g->kind, g->pending);
    g->pending = 0;
    g->synced = g->written;
    pthread_cond_broadcast(&g->cv);
    return 0;
}

int gcommit_switch(gcommit *g, int new_fd, uint64_t new_size, storh_err *err)
{
    int rc = gcommit_flush(g, err);
    if (rc)
        return rc;
    int old = g->fd;
    if (!(g->syncing && g->sync_fd == old))
        close(old);
    g->fd = new_fd;
    g->gen++;
    g->written = g->synced = new_size;
    g->pending = 0;
    pthread_cond_broadcast(&g->cv);
    return 0;
}
