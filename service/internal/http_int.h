/* http_int: a request's state inside the HTTP front end, shared by its
 * files (http.c the request life and the daemon, http_req.c what handlers
 * read, http_reply.c the responses). Nothing outside those files includes
 * it; the life (http_life) and its moves are drawn atop http.c. */
#ifndef STORHD_HTTP_INT_H
#define STORHD_HTTP_INT_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "http.h"
#include "registry.h"
#include "route.h"

/* Where a request is in its life (the diagram in http.c). */
typedef enum http_life {
    HTTP_NEW,      /* made by on_uri; the first on_access call routes it */
    HTTP_BODY,     /* accepted: its body (if any) comes in, then it runs */
    HTTP_FAILED,   /* http_fail decided the reply; the rest of the body is dropped */
    HTTP_DRAINING, /* failed before its body: the body is read and dropped first */
    HTTP_DEFERRED, /* its handler runs off the loop (http_defer); not queued yet */
    HTTP_POOL,     /* connection suspended, its handler queued or running on a pool */
    HTTP_PARKED,   /* its pool handler parked it (long-poll) until http_requeue */
    HTTP_REPLIED,  /* the response is queued with MHD (a stream may still run) */
} http_life;

struct http_req {
    struct MHD_Connection *conn;
    service *svc;
    const char *method;
    char *url;  /* as received (for the log) */
    char *path; /* split by the router; params point into it */
    route_match m;
    const route *route;
    buf body;
    http_life life;
    int fail_status; /* HTTP_FAILED, HTTP_DRAINING: the reply decided */
    char fail_msg[512];
    char log_error[256]; /* the message of a 5xx reply */
    struct MHD_Response *resp;
    int status;
    uint64_t t0_us;
    uint64_t bytes_in;
    _Atomic uint64_t bytes_out;
    atomic_int refs; /* the connection, plus a streamed response */
    void *state;
    void (*state_free)(void *);
    json_t *claims;                 /* of the verified token, when auth is on */
    bool encoded_slash;             /* the raw path held %2F: never a separator */
    int (*deferred)(http_req *req); /* what runs on the pool (http_defer, http_requeue) */
    /* the token was not in the cache: the pool verifies it before the
     * handler. A fact about the credentials, not a step of the life: it
     * holds through HTTP_BODY, HTTP_DEFERRED and into HTTP_POOL. */
    bool verify_pending;
    registry_holder engines; /* released when the request is freed */
};

/* Drops a reference; the last one frees the request and its state. */
void http_req_unref(http_req *req);
/* Makes r the response (replacing any) with status. */
void http_set_resp(http_req *req, int status, struct MHD_Response *r);
/* Out of descriptors, memory or engine room: /readyz says so for a while,
 * and idle engines give their descriptors back for the retry. */
void http_note_limit(http_req *req, const storh_err *err);

#endif
