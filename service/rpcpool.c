/* The states of a connection, and which function makes each move (all on
 * the I/O thread, which alone touches libpq):
 *
 *   DOWN --conn_open--> CONNECTING --conn_connect (PQconnectPoll OK)--> READY
 *   CONNECTING --conn_connect (failed, or past its deadline)--> DOWN
 *   READY --call_start--> BUSY --call_read (the last Sync)--> READY
 *   BUSY --call_read (lost) / expire (past the deadline)--> DOWN
 *   READY --conn_idle (the server closed it: a restart, pg_terminate_backend)--> DOWN
 *
 * A call is [Parse "rpc<i>", Sync] the first time a connection runs
 * statement i, then [Bind/Execute "rpc<i>", Sync], sent in one write in
 * pipeline mode: one round trip, and a failed call aborts nothing of the
 * prepare. Calls wait in a FIFO (q_head) for a READY connection; a waiting
 * call opens a DOWN connection when none is opening for it. */
#include "rpcpool.h"

#include <errno.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "pgerr.h"

#define MAX_STMTS 64

typedef struct pcall {
    struct pcall *next;
    int stmt;
    const char *p1, *p2; /* in the same allocation */
    rpcpool_done done;
    void *arg;
    double deadline; /* of its wait for a connection; 0: none */
} pcall;

enum cstate { C_DOWN, C_CONNECTING, C_READY, C_BUSY };

typedef struct pconn {
    PGconn *pg;
    enum cstate st;
    int fd; /* registered in the epoll set, or -1 */
    uint32_t events;
    bool prepared[MAX_STMTS];
    pcall *call;
    int syncs;        /* Sync results still to come */
    bool preparing;   /* the results before the first Sync are the Parse's */
    bool prep_failed; /* the kept error is the Parse's */
    PGresult *res;    /* the query's rows, or the first error */
    double deadline;  /* of the connect or the statement */
} pconn;

struct rpcpool {
    char *conninfo, *options, *ct;
    char **sql, **names;
    size_t nsql;
    int size, timeout_ms, queue, queue_timeout_ms;
    pconn *c;
    int ep, efd;
    pthread_t th;
    bool started;  /* its own I/O thread runs */
    bool external; /* driven by the HTTP loop thread (rpcpool_run) */
    bool drained;  /* external, stopping: no call is left */
    pthread_cond_t drained_cv;
    pthread_mutex_t mu; /* the inbox and the counters */
    pcall *in_head, *in_tail;
    bool signalled, stopping;
    int inflight; /* accepted and not answered */
    unsigned long long waits, rejected, timeouts;
    pcall *q_head, *q_tail; /* the I/O thread's: waiting for a connection */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- answers ---- */

static void answer(rpcpool *p, pcall *k, int rc, const storh_err *err, char *body, size_t len)
{
    pthread_mutex_lock(&p->mu);
    p->inflight--;
    p->timeouts += rc == STORH_ETIMEOUT;
    pthread_mutex_unlock(&p->mu);
    k->done(k->arg, rc, err, body, len);
    free(k);
}

static void fail(rpcpool *p, pcall *k, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(rpcpool *p, pcall *k, int code, const char *fmt, ...)
{
    storh_err err;
    char m[sizeof err.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    storh_err_set(&err, code, "%s", m);
    answer(p, k, code, &err, NULL, 0);
}

/* ---- the epoll set ---- */

static void watch(rpcpool *p, pconn *c, uint32_t events)
{
    int fd = c->pg ? PQsocket(c->pg) : -1;
    if (fd == c->fd && events == c->events)
        return;
    if (c->fd >= 0 && c->fd != fd)
        epoll_ctl(p->ep, EPOLL_CTL_DEL, c->fd, NULL); /* may be closed already */
    c->fd = fd;
    c->events = events;
    if (fd < 0)
        return;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(p->ep, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT)
        epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void conn_close(rpcpool *p, pconn *c)
{
    if (c->fd >= 0)
        epoll_ctl(p->ep, EPOLL_CTL_DEL, c->fd, NULL);
    c->fd = -1;
    c->events = 0;
    PQclear(c->res);
    c->res = NULL;
    if (c->pg)
        PQfinish(c->pg);
    c->pg = NULL;
    c->st = C_DOWN;
    c->call = NULL;
    memset(c->prepared, 0, sizeof c->prepared);
}

/* ---- connecting ---- */

static pcall *q_pop(rpcpool *p)
{
    pcall *k = p->q_head;
    if (k && !(p->q_head = k->next))
        p->q_tail = NULL;
    return k;
}

static void q_push(rpcpool *p, pcall *k, bool front)
{
    k->next = NULL;
    if (!p->q_head) {
        p->q_head = p->q_tail = k;
    } else if (front) {
        k->next = p->q_head;
        p->q_head = k;
    } else {
        p->q_tail->next = k;
        p->q_tail = k;
    }
}

/* A connection that could not be opened answers the call that waits
 * longest (each waiting call gets at most one failed attempt). */
static void conn_failed(rpcpool *p, pconn *c)
{
    char why[256];
    snprintf(why, sizeof why, "%s",
             c->pg ? PQerrorMessage(c->pg) : "could not allocate a connection");
    conn_close(p, c);
    pcall *k = q_pop(p);
    if (k)
        fail(p, k, STORH_EUNAVAIL, "PostgreSQL is unavailable: %s", why);
}

static void conn_open(rpcpool *p, pconn *c)
{
    const char *const keys[] = {"dbname", "connect_timeout", "fallback_application_name", "options",
                                NULL};
    const char *const values[] = {p->conninfo, p->ct, "storhd", p->options, NULL};
    c->pg = PQconnectStartParams(keys, values, 1);
    if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD) {
        conn_failed(p, c);
        return;
    }
    c->st = C_CONNECTING;
    c->deadline = now_s() + atoi(p->ct);
    watch(p, c, EPOLLOUT); /* libpq: first wait until the socket is writable */
}

static void conn_connect(rpcpool *p, pconn *c)
{
    switch (PQconnectPoll(c->pg)) {
    case PGRES_POLLING_READING:
        watch(p, c, EPOLLIN);
        return;
    case PGRES_POLLING_WRITING:
        watch(p, c, EPOLLOUT);
        return;
    case PGRES_POLLING_OK:
        if (PQsetnonblocking(c->pg, 1) == 0 && PQenterPipelineMode(c->pg) == 1) {
            c->st = C_READY;
            watch(p, c, EPOLLIN); /* a server that closes it is seen at once */
            return;
        }
        break;
    default:
        break;
    }
    conn_failed(p, c);
}

/* A READY connection is readable: a notice, or the server closing it. */
static void conn_idle(rpcpool *p, pconn *c)
{
    if (!PQconsumeInput(c->pg) || PQstatus(c->pg) != CONNECTION_OK)
        conn_close(p, c);
}

/* ---- calls ---- */

/* drop: the connection's state is unknown (a statement past its
 * deadline), or it is lost; it is re-opened for a later call. */
static void call_end(rpcpool *p, pconn *c, int rc, const storh_err *err, char *body, size_t len,
                     bool drop)
{
    pcall *k = c->call;
    c->call = NULL;
    PQclear(c->res);
    c->res = NULL;
    if (drop || rc == STORH_EUNAVAIL || !c->pg || PQstatus(c->pg) != CONNECTION_OK)
        conn_close(p, c);
    else
        c->st = C_READY;
    if (c->st == C_READY)
        watch(p, c, EPOLLIN);
    answer(p, k, rc, err, body, len);
}

/* The call's last Sync is in: its rows, or the error mapped (pgerr.h). */
static void call_answer(rpcpool *p, pconn *c)
{
    PGresult *q = c->res;
    const char *fn = p->names[c->call->stmt];
    storh_err err;
    if (PQresultStatus(q) == PGRES_TUPLES_OK && PQntuples(q) == 1) {
        size_t len = (size_t)PQgetlength(q, 0, 0);
        char *body = malloc(len + 1);
        if (!body) {
            storh_err_oom(&err);
            call_end(p, c, err.code, &err, NULL, 0, false);
            return;
        }
        memcpy(body, PQgetvalue(q, 0, 0), len + 1);
        call_end(p, c, 0, NULL, body, len, false);
        return;
    }
    int code = pgerr_code(c->pg, q, STORH_EINVAL);
    if (code == STORH_ETIMEOUT)
        storh_err_set(&err, code,
                      "%s did not answer within %d ms (--rpc-timeout); it was cancelled.", fn,
                      p->timeout_ms);
    else if (code == STORH_EUNAVAIL)
        storh_err_set(&err, code, "PostgreSQL is unavailable: %s",
                      q ? PQresultErrorMessage(q) : PQerrorMessage(c->pg));
    else if (c->prep_failed)
        storh_err_set(&err, code, "Could not prepare %s: %s", fn, PQresultErrorMessage(q));
    else
        storh_err_set(&err, code, "The function rejected the call: %s",
                      q ? PQresultErrorMessage(q) : "no result");
    call_end(p, c, code, &err, NULL, 0, false);
}

static void call_lost(rpcpool *p, pconn *c)
{
    storh_err err;
    storh_err_set(&err, STORH_EUNAVAIL, "PostgreSQL is unavailable: %s", PQerrorMessage(c->pg));
    call_end(p, c, STORH_EUNAVAIL, &err, NULL, 0, true);
}

static void call_start(rpcpool *p, pconn *c, pcall *k)
{
    char name[16];
    snprintf(name, sizeof name, "rpc%d", k->stmt);
    c->call = k;
    c->st = C_BUSY;
    c->preparing = !c->prepared[k->stmt];
    c->prep_failed = false;
    c->syncs = 0;
    const char *const vals[2] = {k->p1, k->p2};
    bool sent = true;
    if (c->preparing) {
        sent = PQsendPrepare(c->pg, name, p->sql[k->stmt], 2, NULL) && PQpipelineSync(c->pg);
        c->syncs += sent;
    }
    sent =
        sent && PQsendQueryPrepared(c->pg, name, 2, vals, NULL, NULL, 0) && PQpipelineSync(c->pg);
    c->syncs += sent;
    int flushed = sent ? PQflush(c->pg) : -1;
    if (flushed < 0) {
        if (c->syncs == 0) { /* nothing reached the server: another connection takes it */
            c->call = NULL;
            conn_close(p, c);
            q_push(p, k, true);
            return;
        }
        call_lost(p, c);
        return;
    }
    c->deadline = now_s() + (p->timeout_ms + 1000) / 1000.0;
    watch(p, c, EPOLLIN | (flushed ? EPOLLOUT : 0));
}

/* Reads what has come for a BUSY connection, result by result. */
static void call_read(rpcpool *p, pconn *c, uint32_t events)
{
    if (events & EPOLLOUT) {
        int f = PQflush(c->pg);
        if (f < 0) {
            call_lost(p, c);
            return;
        }
        watch(p, c, EPOLLIN | (f ? EPOLLOUT : 0));
    }
    if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !PQconsumeInput(c->pg)) {
        call_lost(p, c);
        return;
    }
    int nulls = 0;
    while (c->syncs > 0 && !PQisBusy(c->pg)) {
        PGresult *q = PQgetResult(c->pg);
        if (!q) { /* between two commands' results */
            if (PQstatus(c->pg) != CONNECTION_OK || ++nulls > 1)
                break;
            continue;
        }
        nulls = 0;
        ExecStatusType st = PQresultStatus(q);
        if (st == PGRES_PIPELINE_SYNC) {
            c->syncs--;
            if (c->preparing && !c->prep_failed)
                c->prepared[c->call->stmt] = true;
            c->preparing = false;
            PQclear(q);
        } else if ((st == PGRES_TUPLES_OK || st == PGRES_FATAL_ERROR) && !c->res) {
            c->res = q;
            c->prep_failed = c->preparing && st == PGRES_FATAL_ERROR;
        } else {
            PQclear(q); /* the Parse's OK, or a command the pipeline aborted */
        }
    }
    if (c->syncs == 0)
        call_answer(p, c);
    else if (PQstatus(c->pg) != CONNECTION_OK)
        call_lost(p, c);
}

/* ---- the I/O thread ---- */

static void expire(rpcpool *p, double now)
{
    for (int i = 0; i < p->size; i++) {
        pconn *c = &p->c[i];
        if (c->st == C_CONNECTING && now >= c->deadline) {
            conn_failed(p, c);
        } else if (c->st == C_BUSY && now >= c->deadline) {
            storh_err err;
            storh_err_set(&err, STORH_ETIMEOUT,
                          "%s did not answer within %d ms (--rpc-timeout); it was cancelled.",
                          p->names[c->call->stmt], p->timeout_ms);
            call_end(p, c, STORH_ETIMEOUT, &err, NULL, 0, true);
        }
    }
    /* the FIFO keeps calls in arrival order, but one put back in front
     * (its connection lost before the send) may wait longer: scan it all */
    for (pcall **kp = &p->q_head, *prev = NULL; *kp;) {
        pcall *k = *kp;
        if (!k->deadline || now < k->deadline) {
            prev = k;
            kp = &k->next;
            continue;
        }
        *kp = k->next;
        if (p->q_tail == k)
            p->q_tail = prev;
        pthread_mutex_lock(&p->mu);
        p->rejected++;
        pthread_mutex_unlock(&p->mu);
        fail(p, k, STORH_EUNAVAIL,
             "All %d PostgreSQL connections stayed busy for %d ms; retry later.", p->size,
             p->queue_timeout_ms);
    }
}

static void dispatch(rpcpool *p)
{
    for (int i = 0; i < p->size && p->q_head; i++)
        if (p->c[i].st == C_READY)
            call_start(p, &p->c[i], q_pop(p));
    int waiting = 0, opening = 0;
    for (pcall *k = p->q_head; k; k = k->next)
        waiting++;
    for (int i = 0; i < p->size; i++)
        opening += p->c[i].st == C_CONNECTING;
    for (int i = 0; i < p->size && opening < waiting && p->q_head; i++)
        if (p->c[i].st == C_DOWN) {
            conn_open(p, &p->c[i]);
            opening += p->c[i].st == C_CONNECTING;
            if (p->c[i].st != C_CONNECTING) /* it failed a call: count again */
                waiting--;
        }
}

static int next_wait_ms(rpcpool *p, double now)
{
    double until = 0;
    for (int i = 0; i < p->size; i++)
        if ((p->c[i].st == C_CONNECTING || p->c[i].st == C_BUSY) &&
            (!until || p->c[i].deadline < until))
            until = p->c[i].deadline;
    for (pcall *k = p->q_head; k; k = k->next)
        if (k->deadline && (!until || k->deadline < until))
            until = k->deadline;
    if (!until)
        return -1;
    double ms = (until - now) * 1000.0;
    return ms <= 0 ? 0 : (int)ms + 1;
}

/* Whether calls are still to answer (at a stop, the thread runs until
 * none is: each is bounded by its deadlines). */
static bool has_calls(const rpcpool *p)
{
    for (int i = 0; i < p->size; i++)
        if (p->c[i].st == C_BUSY)
            return true;
    return p->q_head != NULL;
}

/* One turn of the I/O loop after epoll reported n events; false once
 * stopping with no call left. */
static bool io_turn(rpcpool *p, const struct epoll_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        pconn *c = ev[i].data.ptr;
        if (!c) {
            uint64_t v;
            ssize_t got = read(p->efd, &v, sizeof v);
            (void)got;
        } else if (c->st == C_CONNECTING) {
            conn_connect(p, c);
        } else if (c->st == C_READY) {
            conn_idle(p, c);
        } else if (c->st == C_BUSY) {
            call_read(p, c, ev[i].events);
        }
    }
    pthread_mutex_lock(&p->mu);
    pcall *in = p->in_head;
    p->in_head = p->in_tail = NULL;
    p->signalled = false;
    bool stopping = p->stopping;
    pthread_mutex_unlock(&p->mu);
    while (in) {
        pcall *next = in->next;
        q_push(p, in, false);
        in = next;
    }
    expire(p, now_s());
    dispatch(p);
    return !stopping || has_calls(p);
}

static void fail_all(rpcpool *p)
{
    for (int i = 0; i < p->size; i++)
        if (p->c[i].st == C_BUSY) {
            q_push(p, p->c[i].call, false);
            conn_close(p, &p->c[i]);
        }
    for (pcall *k; (k = q_pop(p));)
        fail(p, k, STORH_EUNAVAIL, "The service is shutting down.");
}

static void *io_main(void *arg)
{
    rpcpool *p = arg;
    struct epoll_event ev[64];
    int n = 0;
    while (io_turn(p, ev, n))
        n = epoll_wait(p->ep, ev, 64, next_wait_ms(p, now_s()));
    fail_all(p);
    return NULL;
}

/* The pool the calling thread drives (rpcpool_attach): a call it submits
 * is sent at once, with no wake-up. */
static _Thread_local rpcpool *driving;

void rpcpool_attach(rpcpool *p)
{
    driving = p;
}

int rpcpool_fd(const rpcpool *p)
{
    return p->external ? p->ep : -1;
}

int rpcpool_wait_ms(rpcpool *p)
{
    return next_wait_ms(p, now_s());
}

void rpcpool_run(rpcpool *p)
{
    struct epoll_event ev[64];
    int n = epoll_wait(p->ep, ev, 64, 0);
    if (!io_turn(p, ev, n < 0 ? 0 : n)) {
        pthread_mutex_lock(&p->mu);
        p->drained = true;
        pthread_cond_broadcast(&p->drained_cv);
        pthread_mutex_unlock(&p->mu);
    }
}

/* ---- the API ---- */

/* The conninfo's own options, if any, and our statement timeout. */
static char *merged_options(const char *conninfo, int timeout_ms)
{
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &err);
    PQfreemem(err);
    const char *theirs = "";
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (!strcmp(o->keyword, "options") && o->val)
            theirs = o->val;
    size_t cap = strlen(theirs) + 48;
    char *out = malloc(cap);
    if (out)
        snprintf(out, cap, "%s%s-c statement_timeout=%d", theirs, *theirs ? " " : "", timeout_ms);
    PQconninfoFree(opts);
    return out;
}

int rpcpool_new(const rpcpool_opts *o, rpcpool **out, char *msg, size_t cap)
{
    *out = NULL;
    if (o->nsql > MAX_STMTS)
        return snprintf(msg, cap, "at most %d rpc functions", MAX_STMTS), -1;
    rpcpool *p = calloc(1, sizeof *p);
    if (!p)
        return snprintf(msg, cap, "Out of memory."), -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->drained_cv, NULL);
    p->ep = p->efd = -1;
    p->external = o->external;
    p->size = o->size > 0 ? o->size : 8;
    p->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 5000;
    p->queue = o->queue >= 0 ? o->queue : 0;
    p->queue_timeout_ms = o->queue_timeout_ms > 0 ? o->queue_timeout_ms : 1000;
    p->conninfo = strdup(o->conninfo ? o->conninfo : "");
    p->options = merged_options(p->conninfo ? p->conninfo : "", p->timeout_ms);
    p->ct = malloc(16);
    if (p->ct) /* a server that does not answer costs a bounded wait */
        snprintf(p->ct, 16, "%d", p->timeout_ms / 1000 > 2 ? p->timeout_ms / 1000 : 2);
    p->nsql = o->nsql;
    p->sql = calloc(o->nsql + 1, sizeof *p->sql);
    p->names = calloc(o->nsql + 1, sizeof *p->names);
    p->c = calloc((size_t)p->size, sizeof *p->c);
    bool ok = p->conninfo && p->options && p->ct && p->sql && p->names && p->c;
    for (size_t i = 0; ok && i < o->nsql; i++)
        ok = (p->sql[i] = strdup(o->sql[i])) && (p->names[i] = strdup(o->names[i]));
    for (int i = 0; p->c && i < p->size; i++)
        p->c[i].fd = -1;
    if (!ok) {
        rpcpool_free(p);
        return snprintf(msg, cap, "Out of memory."), -1;
    }
    p->ep = epoll_create1(EPOLL_CLOEXEC);
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (p->ep < 0 || p->efd < 0 || epoll_ctl(p->ep, EPOLL_CTL_ADD, p->efd, &ev) != 0 ||
        (!p->external && pthread_create(&p->th, NULL, io_main, p) != 0)) {
        snprintf(msg, cap, "Could not start the PostgreSQL I/O thread: %s", strerror(errno));
        p->external = true; /* nothing to join */
        rpcpool_free(p);
        return -1;
    }
    p->started = !p->external;
    *out = p;
    return 0;
}

static void wake(rpcpool *p)
{
    uint64_t one = 1;
    ssize_t n = write(p->efd, &one, sizeof one);
    (void)n; /* a full counter still wakes the thread */
}

void rpcpool_shutdown(rpcpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    bool was = p->stopping;
    p->stopping = true;
    pthread_mutex_unlock(&p->mu);
    if (p->external && !was) { /* the HTTP loop answers what is under way */
        wake(p);
        pthread_mutex_lock(&p->mu);
        while (!p->drained)
            pthread_cond_wait(&p->drained_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    if (!p->started)
        return;
    wake(p);
    pthread_join(p->th, NULL);
    p->started = false;
}

void rpcpool_free(rpcpool *p)
{
    if (!p)
        return;
    if (p->started || !p->external)
        rpcpool_shutdown(p);
    if (p->c)
        fail_all(p); /* external, never shut down: no loop answers them now */
    for (int i = 0; p->c && i < p->size; i++)
        conn_close(p, &p->c[i]);
    if (p->ep >= 0)
        close(p->ep);
    if (p->efd >= 0)
        close(p->efd);
    for (size_t i = 0; i < p->nsql; i++) {
        free(p->sql ? p->sql[i] : NULL);
        free(p->names ? p->names[i] : NULL);
    }
    free(p->sql);
    free(p->names);
    free(p->c);
    free(p->conninfo);
    free(p->options);
    free(p->ct);
    pthread_cond_destroy(&p->drained_cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int rpcpool_submit(rpcpool *p, int stmt, const char *p1, const char *p2, rpcpool_done done,
                   void *arg, storh_err *err)
{
    size_t l1 = strlen(p1) + 1, l2 = strlen(p2) + 1;
    pcall *k = malloc(sizeof *k + l1 + l2);
    if (!k)
        return storh_err_oom(err);
    char *s = (char *)(k + 1);
    memcpy(s, p1, l1);
    memcpy(s + l1, p2, l2);
    *k = (pcall){.stmt = stmt, .p1 = s, .p2 = s + l1, .done = done, .arg = arg};
    pthread_mutex_lock(&p->mu);
    if (p->stopping || p->inflight >= p->size + p->queue) {
        bool stopping = p->stopping;
        p->rejected += !stopping;
        pthread_mutex_unlock(&p->mu);
        free(k);
        if (stopping)
            return storh_err_set(err, STORH_EUNAVAIL, "The service is shutting down.");
        return storh_err_set(err, STORH_EUNAVAIL,
                             "All %d PostgreSQL connections are busy and %d calls wait already; "
                             "retry later.",
                             p->size, p->queue);
    }
    if (p->inflight >= p->size) { /* it waits for a connection, bounded */
        p->waits++;
        k->deadline = now_s() + p->queue_timeout_ms / 1000.0;
    }
    p->inflight++;
    if (p->in_tail)
        p->in_tail->next = k;
    else
        p->in_head = k;
    p->in_tail = k;
    bool signal = !p->signalled && driving != p;
    p->signalled |= signal;
    pthread_mutex_unlock(&p->mu);
    if (driving == p) /* the loop thread that drives the pool: send it now */
        io_turn(p, NULL, 0);
    else if (signal)
        wake(p);
    return 0;
}

void rpcpool_snapshot(rpcpool *p, rpcpool_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = (rpcpool_stats){p->waits, p->rejected, p->timeouts, p->size,
                           p->inflight < p->size ? p->inflight : p->size};
    pthread_mutex_unlock(&p->mu);
}
