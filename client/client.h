/* client: a small libcurl HTTP client for integration tests and the trial
 * runner, and a free loopback port for the server they start. A response
 * owns its body and headers; client_free releases them. */
#ifndef STORHD_CLIENT_H
#define STORHD_CLIENT_H

#include <jansson.h>
#include <stddef.h>

typedef struct client_resp {
    long status;
    char *body; /* NUL-terminated */
    size_t len;
    char *headers; /* raw header block */
} client_resp;

/* body may be NULL; ctype NULL sends no Content-Type. extra_header like
 * "If-None-Match: x" (several separated by newlines) or NULL. chunked: send the body with chunked
 * transfer encoding in pieces of chunk bytes (0 = as one). Returns 0 on a transfer. */
int client_do(const char *base, const char *method, const char *path, const char *ctype,
              const char *body, size_t len, const char *extra_header, size_t chunk,
              client_resp *out);
/* A JSON request: body (NULL for none) sent as application/json. Returns the
 * status, 0 when the server did not answer; with out, the reply decoded
 * (new reference, NULL when it is not JSON). */
long client_json(const char *base, const char *method, const char *path, const char *body,
                 json_t **out);
/* A loopback TCP port free right now (for a server under test), or -1. */
int client_free_port(void);
/* The value of a response header (copied into out), or NULL. */
const char *client_header(const client_resp *r, const char *name, char *out, size_t cap);
void client_free(client_resp *r);

#endif
