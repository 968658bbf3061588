/* auth: RS256 JWT verification for /v1 and the page RPC. The public key is
 * parsed once at start (a PEM file, or a JWKS file whose keys are picked by
 * "kid"); libjwt parses the token, OpenSSL checks the signature against the
 * parsed key; alg must be RS256 (none, HS256 and the rest are refused);
 * exp/nbf with a leeway, iss and aud when configured. Verified tokens are
 * cached (found by a seeded 128-bit hash, matched on the whole token),
 * bounded by entries and by bytes, and never kept past their exp. Thread-safe; the auth owns its
 * key and cache. */
#ifndef STORHD_AUTH_H
#define STORHD_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef struct auth auth;

typedef struct auth_opts {
    const char *pem_path;  /* a PEM public key, or NULL */
    const char *jwks_path; /* a JWKS file, or NULL */
    const char *issuer;    /* required iss, or NULL */
    const char *audience;  /* required aud, or NULL */
    int leeway;            /* seconds of clock skew allowed for exp/nbf */
    size_t cache_entries, cache_bytes;
} auth_opts;

/* 0, or -1 with a message. */
int auth_new(const auth_opts *o, auth **out, char *msg, size_t cap);
void auth_free(auth *a);
/* Verifies a compact JWS. 0 and *claims (new reference), or -1 with why. */
int auth_verify(auth *a, const char *token, json_t **claims, char *msg, size_t cap);
/* The verified-token cache only (no signature check, cheap enough for an
 * event loop): 0 and *claims for a cached token, 1 when the token is not
 * cached (auth_verify must decide), -1 with why (a cached token not valid
 * yet). */
int auth_verify_cached(auth *a, const char *token, json_t **claims, char *msg, size_t cap);
/* Whether the claims grant scope (claims "scope": space separated, or
 * "scopes": array; "area:*" and "*" are wildcards). */
bool auth_has_scope(const json_t *claims, const char *scope);
/* The token cache and rejections, for /metrics. */
typedef struct auth_stats {
    unsigned long long hits, misses, evictions, rejected;
    size_t entries, bytes;
} auth_stats;
void auth_snapshot(auth *a, auth_stats *out);

#endif
