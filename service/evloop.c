#include "evloop.h"

#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rpc.h"

struct evloop {
    struct MHD_Daemon *d;
    rpc *r;
    pthread_t th;
    int ep, stop_fd;
};

enum { LOOP_MHD = 1, LOOP_RPC, LOOP_STOP, LOOP_WAKE };

static int wake_fd = -1; /* one evloop per process */
static _Thread_local bool on_loop, resumed_on_loop;

void evloop_resumed(void)
{
    resumed_on_loop = on_loop;
    if (wake_fd >= 0 && !on_loop) {
        uint64_t one = 1;
        ssize_t n = write(wake_fd, &one, sizeof one);
        (void)n; /* a full counter still wakes the loop */
    }
}

/* MHD's epoll set, the RPC pool's, the stop and wake eventfds in one set;
 * each is run when it has input or its deadline passed. PostgreSQL answers
 * resume connections, which MHD_run then serves in the same turn. */
static void *loop_main(void *arg)
{
    evloop *l = arg;
    rpc_loop_attach(l->r);
    on_loop = true;
    MHD_run(l->d); /* MHD puts its listening socket in its set on a first run */
    for (;;) {
        MHD_UNSIGNED_LONG_LONG to;
        int ms = MHD_get_timeout(l->d, &to) == MHD_YES ? (to > INT_MAX ? INT_MAX : (int)to) : -1;
        int pm = rpc_loop_wait_ms(l->r);
        if (pm >= 0 && (ms < 0 || pm < ms))
            ms = pm;
        struct epoll_event ev[4];
        int n = epoll_wait(l->ep, ev, 4, ms);
        bool mhd = n == 0, pg = n == 0;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.u32 == LOOP_STOP)
                return NULL;
            if (ev[i].data.u32 == LOOP_WAKE) {
                uint64_t v;
                ssize_t got = read(wake_fd, &v, sizeof v);
                (void)got;
            }
            mhd |= ev[i].data.u32 == LOOP_MHD || ev[i].data.u32 == LOOP_WAKE;
            pg |= ev[i].data.u32 == LOOP_RPC;
        }
        if (pg)
            rpc_loop_run(l->r);
        if (mhd || pg || resumed_on_loop)
            do {
                resumed_on_loop = false;
                MHD_run(l->d);
            } while (resumed_on_loop);
    }
}

static void loop_close(evloop *l)
{
    if (l->ep >= 0)
        close(l->ep);
    if (l->stop_fd >= 0)
        close(l->stop_fd);
    if (wake_fd >= 0)
        close(wake_fd);
    wake_fd = -1;
    free(l);
}

int evloop_start(struct MHD_Daemon *d, rpc *r, evloop **out)
{
    evloop *l = calloc(1, sizeof *l);
    if (!l)
        return -1;
    l->d = d;
    l->r = r;
    const union MHD_DaemonInfo *mi = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    bool ok = mi && l->ep >= 0 && l->stop_fd >= 0 && wake_fd >= 0;
    const int fds[4] = {mi ? mi->epoll_fd : -1, rpc_loop_fd(r), l->stop_fd, wake_fd};
    for (int i = 0; ok && i < 4; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)(LOOP_MHD + i)};
        ok = epoll_ctl(l->ep, EPOLL_CTL_ADD, fds[i], &ev) == 0;
    }
    int e = 0;
    if (ok && (e = pthread_create(&l->th, NULL, loop_main, l)) != 0)
        errno = e;
    if (!ok || e) {
        loop_close(l);
        return -1;
    }
    *out = l;
    return 0;
}

void evloop_stop(evloop *l)
{
    if (!l)
        return;
    uint64_t one = 1;
    ssize_t n = write(l->stop_fd, &one, sizeof one);
    (void)n;
    pthread_join(l->th, NULL);
    loop_close(l);
}
