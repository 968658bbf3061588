/* rpcpool: the page RPC's PostgreSQL connections, driven without blocking
 * by one thread that owns them all (libpq in non-blocking pipeline mode,
 * their sockets in an epoll set): an I/O thread of its own, or the HTTP
 * server's event loop when that is a single thread (external). Another
 * thread hands a call over through a mutex-guarded inbox and an eventfd
 * (written only when the owner is not already woken; the owner itself
 * sends at once), and the callback runs on the owner with the answer: no
 * thread waits for a round trip. The pool is bounded: `size` connections
 * (opened when calls need them, re-opened after a loss), at most `queue`
 * calls waiting for one, each at most queue_timeout_ms (STORH_EUNAVAIL:
 * 503), a statement at most timeout_ms (PostgreSQL's statement_timeout,
 * set at connect, and a deadline a second later that drops the
 * connection: STORH_ETIMEOUT, 504). */
#ifndef STORHD_RPCPOOL_H
#define STORHD_RPCPOOL_H

#include <stdbool.h>
#include <stddef.h>

#include "storh_err.h"

typedef struct rpcpool rpcpool;

typedef struct rpcpool_opts {
    const char *conninfo;
    int size, timeout_ms, queue, queue_timeout_ms;
    /* statement i (2 text parameters) is prepared as "rpc<i>" on first
     * use on each connection; names[i] names it in messages */
    const char *const *sql;
    const char *const *names;
    size_t nsql;
    /* no I/O thread: the one HTTP event-loop thread drives the pool
     * (rpcpool_attach, then rpcpool_run whenever rpcpool_fd is readable or
     * rpcpool_wait_ms has passed), so a miss costs no thread switch */
    bool external;
} rpcpool_opts;

int rpcpool_new(const rpcpool_opts *o, rpcpool **out, char *msg, size_t cap);
/* Refuses new calls, answers those under way (each bounded by its
 * timeouts) and stops the I/O thread. */
void rpcpool_shutdown(rpcpool *p);
/* Shuts down if needed, then closes the connections. */
void rpcpool_free(rpcpool *p);

/* The answer of a call: rc 0 and body (malloc'd, NUL-terminated, the
 * callee's to free) holding the first column of the one row, or rc < 0
 * with err. Runs on the thread that owns the connections. */
typedef void (*rpcpool_done)(void *arg, int rc, const storh_err *err, char *body, size_t len);
/* Queues statement stmt with parameters p1 and p2 (copied). 0: done will
 * run once, later; STORH_EUNAVAIL (err set, done never runs): saturated,
 * `queue` calls wait already. */
int rpcpool_submit(rpcpool *p, int stmt, const char *p1, const char *p2, rpcpool_done done,
                   void *arg, storh_err *err);

/* External mode: the driving thread says so once, before it runs the pool
 * (its own submits are then sent at once); fd is an epoll set to watch
 * for input; run never blocks; wait_ms is how long the loop may sleep (-1:
 * until fd is readable). */
void rpcpool_attach(rpcpool *p);
int rpcpool_fd(const rpcpool *p);
void rpcpool_run(rpcpool *p);
int rpcpool_wait_ms(rpcpool *p);

typedef struct rpcpool_stats {
    unsigned long long waits;    /* calls that found every connection taken */
    unsigned long long rejected; /* saturated: queue full or wait timed out */
    unsigned long long timeouts; /* statements over the timeout */
    int size, busy;
} rpcpool_stats;
void rpcpool_snapshot(rpcpool *p, rpcpool_stats *out);

#endif
