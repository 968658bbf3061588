/* evloop: the one event-loop thread of the HTTP server when it runs a
 * single loop and the page RPC is configured: it drives MHD in external
 * epoll mode and the RPC's PostgreSQL connections (rpc_loop_*) from one
 * epoll set, so a cache miss is sent and answered on the thread that read
 * the request. It owns that thread, its epoll set and two eventfds (stop,
 * and the wake-up of a connection resumed from another thread). */
#ifndef STORHD_EVLOOP_H
#define STORHD_EVLOOP_H

struct MHD_Daemon;
struct rpc;

typedef struct evloop evloop;

/* d was started with MHD_USE_EPOLL (no internal thread); one evloop per
 * process. -1 with errno set on failure. */
int evloop_start(struct MHD_Daemon *d, struct rpc *r, evloop **out);
/* Stops and joins the thread (before MHD_stop_daemon), frees l. */
void evloop_stop(evloop *l);
/* After MHD_resume_connection, from any thread: MHD in external mode needs
 * MHD_run to serve a resumed connection, so the loop is woken (another
 * thread) or runs MHD again before it sleeps (its own). A no-op without an
 * evloop. */
void evloop_resumed(void);

#endif
