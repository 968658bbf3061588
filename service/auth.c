#include "auth.h"

#include <ctype.h>
#include <jwt.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sjson.h"
#include "xxhash.h"

#define ENTRY_OVERHEAD 96

typedef struct key {
    char *kid; /* NULL for a PEM key */
    EVP_PKEY *pkey;
} key;

typedef struct centry {
    char digest[33];
    char *token; /* compared whole on a hit: the digest only finds the entry */
    json_t *claims;
    long long exp; /* 0: no exp claim */
    size_t bytes;
} centry;

struct auth {
    key *keys;
    size_t nkeys;
    char *issuer, *audience;
    int leeway;
    pthread_mutex_t mu;
    json_t *cache; /* digest -> index into ring */
    centry *ring;  /* FIFO eviction */
    size_t cap, head, count, bytes, max_bytes;
    unsigned long long hits, misses, evictions, failures;
    XXH64_hash_t seed; /* random per process: digests nobody can aim at */
};

/* ---- keys ---- */

static EVP_PKEY *pem_key(const char *path, char *msg, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, cap, "cannot open JWT public key %s", path);
        return NULL;
    }
    EVP_PKEY *k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
    fclose(f);
    if (!k || EVP_PKEY_get_base_id(k) != EVP_PKEY_RSA) {
        EVP_PKEY_free(k);
        snprintf(msg, cap, "%s is not an RSA public key in PEM", path);
        return NULL;
    }
    return k;
}

/* base64url (no padding) to bytes via OpenSSL's decoder. */
static unsigned char *b64url(const char *s, size_t n, size_t *out_len)
{
    size_t padded = (n + 3) / 4 * 4;
    char *t = malloc(padded + 1);
    unsigned char *out = malloc(padded / 4 * 3 + 1);
    if (!t || !out) {
        free(t);
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        t[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
    for (size_t i = n; i < padded; i++)
        t[i] = '=';
    t[padded] = '\0';
    int len = EVP_DecodeBlock(out, (unsigned char *)t, (int)padded);
    free(t);
    if (len < 0 || n % 4 == 1) {
        free(out);
        return NULL;
    }
    *out_len = (size_t)len - (padded - n); /* DecodeBlock counts the padding */
    return out;
}

static EVP_PKEY *jwk_key(const json_t *k)
{
    const char *n = json_string_value(json_object_get(k, "n"));
    const char *e = json_string_value(json_object_get(k, "e"));
    if (!n || !e)
        return NULL;
    size_t nl, el;
    unsigned char *nb = b64url(n, strlen(n), &nl), *eb = b64url(e, strlen(e), &el);
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn = nb ? BN_bin2bn(nb, (int)nl, NULL) : NULL,
           *be = eb ? BN_bin2bn(eb, (int)el, NULL) : NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (bn && be && bld && ctx && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) &&
        (params = OSSL_PARAM_BLD_to_param(bld)) && EVP_PKEY_fromdata_init(ctx) > 0)
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    free(nb);
    free(eb);
    return pkey;
}

static int add_key(auth *a, const char *kid, EVP_PKEY *k)
{
    key *n = realloc(a->keys, (a->nkeys + 1) * sizeof *n);
    if (!n)
        return -1;
    a->keys = n;
    a->keys[a->nkeys].kid = kid ? strdup(kid) : NULL;
    a->keys[a->nkeys++].pkey = k;
    return 0;
}

int auth_new(const auth_opts *o, auth **out, char *msg, size_t cap)
{
    auth *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(msg, cap, "Out of memory.");
        return -1;
    }
    pthread_mutex_init(&a->mu, NULL);
    a->issuer = o->issuer ? strdup(o->issuer) : NULL;
    a->audience = o->audience ? strdup(o->audience) : NULL;
    a->leeway = o->leeway;
    a->cap = o->cache_entries ? o->cache_entries : 1;
    a->max_bytes = o->cache_bytes ? o->cache_bytes : 1;
    a->ring = calloc(a->cap, sizeof *a->ring);
    a->cache = json_object();
    int rc = RAND_bytes((unsigned char *)&a->seed, sizeof a->seed) == 1
                 ? 0
                 : (snprintf(msg, cap, "no random bytes for the JWT cache"), -1);
    if (!rc && o->pem_path) {
        EVP_PKEY *k = pem_key(o->pem_path, msg, cap);
        rc = k ? add_key(a, NULL, k) : -1;
    }
    if (!rc && o->jwks_path) {
        json_error_t je;
        json_t *j = json_load_file(o->jwks_path, 0, &je);
        size_t i;
        json_t *k;
        json_array_foreach (json_object_get(j, "keys"), i, k) {
            const char *kty = json_string_value(json_object_get(k, "kty"));
            const char *kid = json_string_value(json_object_get(k, "kid"));
            EVP_PKEY *pk = kty && !strcmp(kty, "RSA") ? jwk_key(k) : NULL;
            if (pk && add_key(a, kid, pk) != 0)
                EVP_PKEY_free(pk);
        }
        if (!j)
            snprintf(msg, cap, "JWKS %s: %s", o->jwks_path, je.text), rc = -1;
        else if (a->nkeys == 0)
            snprintf(msg, cap, "JWKS %s has no RSA key", o->jwks_path), rc = -1;
        json_decref(j);
    }
    if (!rc && a->nkeys == 0)
        snprintf(msg, cap, "no JWT key configured"), rc = -1;
    if (rc) {
        auth_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

void auth_free(auth *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nkeys; i++) {
        EVP_PKEY_free(a->keys[i].pkey);
        free(a->keys[i].kid);
    }
    free(a->keys);
    for (size_t i = 0; i < a->cap; i++) {
        json_decref(a->ring[i].claims);
        free(a->ring[i].token);
    }
    free(a->ring);
    json_decref(a->cache);
    free(a->issuer);
    free(a->audience);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* ---- cache ---- */

/* The cache's key of a token: a 128-bit XXH3 with the process's random
 * seed, in hex. A few nanoseconds per KB where SHA-256 cost a hit ~2 us;
 * safe because a hit also compares the whole token (cache_get), so a
 * colliding token is verified like any other. */
static void digest_of(const auth *a, const char *token, char out[33])
{
    XXH128_hash_t h = XXH3_128bits_withSeed(token, strlen(token), a->seed);
    static const char hexdig[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) { /* by hand: snprintf showed in a hit's profile */
        out[15 - i] = hexdig[(h.high64 >> (4 * i)) & 0xf];
        out[31 - i] = hexdig[(h.low64 >> (4 * i)) & 0xf];
    }
    out[32] = '\0';
}

/* Frees entry e's contents (under mu) and unindexes it. */
static void drop(auth *a, centry *e)
{
    json_object_del(a->cache, e->digest);
    a->bytes -= e->bytes;
    json_decref(e->claims);
    e->claims = NULL;
    free(e->token);
    e->token = NULL;
}

static void evict_one(auth *a)
{
    size_t oldest = (a->head + a->cap - a->count) % a->cap;
    centry *e = &a->ring[oldest];
    if (e->claims) {
        drop(a, e);
        a->evictions++;
    }
    a->count--;
}

static json_t *cache_get(auth *a, const char *digest, const char *token, long long now)
{
    json_t *slot = json_object_get(a->cache, digest);
    if (!slot)
        return NULL;
    centry *e = &a->ring[json_integer_value(slot)];
    if (strcmp(e->token, token)) /* another token, same digest: not this one's claims */
        return NULL;
    if (e->exp && now > e->exp + a->leeway) { /* expired: drop, verify again */
        drop(a, e);
        return NULL;
    }
    return json_incref(e->claims);
}

static void cache_put(auth *a, const char *digest, const char *token, json_t *claims, long long exp)
{
    buf b = BUF_INIT;
    sjson_encode(&b, claims, 0, NULL);
    size_t tlen = strlen(token);
    size_t cost = ENTRY_OVERHEAD + 32 + tlen + b.len;
    buf_free(&b);
    if (cost > a->max_bytes)
        return;
    json_t *slot = json_object_get(a->cache, digest);
    if (slot) /* a racing verification of it, or another token of the same digest */
        drop(a, &a->ring[json_integer_value(slot)]);
    while (a->count && (a->count == a->cap || a->bytes + cost > a->max_bytes))
        evict_one(a);
    centry *e = &a->ring[a->head];
    if (e->claims) /* not reached: the slot at head is free once count < cap */
        drop(a, e);
    if (!(e->token = strdup(token)))
        return;
    memcpy(e->digest, digest, sizeof e->digest);
    e->claims = json_incref(claims);
    e->exp = exp;
    e->bytes = cost;
    json_object_set_new(a->cache, digest, json_integer((json_int_t)a->head));
    a->bytes += cost;
    a->head = (a->head + 1) % a->cap;
    a->count++;
}

/* ---- verification ---- */

static int fail(auth *a, char *msg, size_t cap, const char *why)
{
    pthread_mutex_lock(&a->mu);
    a->failures++;
    pthread_mutex_unlock(&a->mu);
    snprintf(msg, cap, "%s", why);
    return -1;
}

static bool aud_ok(const json_t *aud, const char *want)
{
    if (json_is_string(aud))
        return !strcmp(json_string_value(aud), want);
    size_t i;
    json_t *v;
    json_array_foreach (aud, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), want))
            return true;
    return false;
}

static bool signature_ok(EVP_PKEY *k, const char *token)
{
    const char *dot2 = strrchr(token, '.');
    if (!dot2 || dot2 == token)
        return false;
    size_t sl;
    unsigned char *sig = b64url(dot2 + 1, strlen(dot2 + 1), &sl);
    if (!sig)
        return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok =
        ctx && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, k) == 1 &&
        EVP_DigestVerify(ctx, sig, sl, (const unsigned char *)token, (size_t)(dot2 - token)) == 1;
    EVP_MD_CTX_free(ctx);
    free(sig);
    return ok;
}

/* The compact JWS shape, checked before libjwt sees a token: three
 * non-empty unpadded base64url segments, 8 KiB at most. libjwt 1.10.2 writes a
 * byte past a zero-byte buffer when it decodes an empty segment (valgrind
 * found it), so "..." must never reach jwt_decode. */
#define AUTH_TOKEN_MAX 8192

static bool token_shape_ok(const char *t)
{
    size_t seg = 0, len = 0;
    int dots = 0;
    for (const char *p = t; *p; p++) {
        if (++len > AUTH_TOKEN_MAX)
            return false;
        if (*p == '.') {
            if (seg == 0)
                return false;
            dots++;
            seg = 0;
        } else if (isalnum((unsigned char)*p) || *p == '-' || *p == '_') {
            seg++;
        } else {
            return false;
        }
    }
    return dots == 2 && seg > 0;
}

/* The cache part of a verification: 0 with *claims on a hit, 1 when the
 * token is not cached (a miss is counted only if count_miss), -1 with why. */
static int lookup(auth *a, const char *digest, const char *token, long long now, bool count_miss,
                  json_t **claims, char *msg, size_t cap)
{
    pthread_mutex_lock(&a->mu);
    json_t *hit = cache_get(a, digest, token, now);
    if (hit)
        a->hits++;
    else if (count_miss)
        a->misses++;
    pthread_mutex_unlock(&a->mu);
    if (!hit)
        return 1;
    json_t *nbf = json_object_get(hit, "nbf");
    if (json_is_integer(nbf) && now + a->leeway < json_integer_value(nbf)) {
        json_decref(hit);
        return fail(a, msg, cap, "Token is not valid yet (nbf).");
    }
    *claims = hit;
    return 0;
}

int auth_verify_cached(auth *a, const char *token, json_t **claims, char *msg, size_t cap)
{
    char digest[33];
    digest_of(a, token, digest);
    return lookup(a, digest, token, (long long)time(NULL), false, claims, msg, cap);
}

int auth_verify(auth *a, const char *token, json_t **claims, char *msg, size_t cap)
{
    long long now = (long long)time(NULL);
    char digest[33];
    digest_of(a, token, digest);
    int rc = lookup(a, digest, token, now, true, claims, msg, cap);
    if (rc <= 0)
        return rc;
    /* a cached token was verified (and shaped) already: only misses pay */
    jwt_t *jwt = NULL;
    if (!token_shape_ok(token) || jwt_decode(&jwt, token, NULL, 0) != 0 || !jwt)
        return fail(a, msg, cap, "Malformed token.");
    /* decoded without a key, libjwt reports alg none: read the header */
    const char *alg = jwt_get_header(jwt, "alg");
    if (!alg || strcmp(alg, "RS256") != 0) {
        jwt_free(jwt);
        return fail(a, msg, cap, "Token alg must be RS256.");
    }
    const char *kid = jwt_get_header(jwt, "kid");
    EVP_PKEY *k = NULL;
    for (size_t i = 0; i < a->nkeys && !k; i++)
        if (!a->keys[i].kid || (kid && !strcmp(a->keys[i].kid, kid)))
            k = a->keys[i].pkey;
    char *grants = jwt_get_grants_json(jwt, NULL);
    jwt_free(jwt);
    json_t *c = grants ? json_loads(grants, 0, NULL) : NULL;
    free(grants);
    if (!k || !signature_ok(k, token)) {
        json_decref(c);
        return fail(a, msg, cap, k ? "Bad token signature." : "Unknown token key (kid).");
    }
    if (!json_is_object(c)) {
        json_decref(c);
        return fail(a, msg, cap, "Malformed token claims.");
    }
    json_t *exp = json_object_get(c, "exp"), *nbf = json_object_get(c, "nbf");
    const char *why = NULL;
    if (exp && (!json_is_integer(exp) || now > json_integer_value(exp) + a->leeway))
        why = "Token has expired (exp).";
    else if (nbf && (!json_is_integer(nbf) || now + a->leeway < json_integer_value(nbf)))
        why = "Token is not valid yet (nbf).";
    else if (a->issuer && (!json_is_string(json_object_get(c, "iss")) ||
                           strcmp(json_string_value(json_object_get(c, "iss")), a->issuer)))
        why = "Token issuer (iss) is not accepted.";
    else if (a->audience && !aud_ok(json_object_get(c, "aud"), a->audience))
        why = "Token audience (aud) is not accepted.";
    if (why) {
        json_decref(c);
        return fail(a, msg, cap, why);
    }
    pthread_mutex_lock(&a->mu);
    cache_put(a, digest, token, c, exp ? json_integer_value(exp) : 0);
    pthread_mutex_unlock(&a->mu);
    *claims = c;
    return 0;
}

static bool grants(const char *have, size_t hl, const char *want)
{
    if (hl == 1 && have[0] == '*')
        return true;
    if (hl == strlen(want) && !memcmp(have, want, hl))
        return true;
    const char *colon = strchr(want, ':');
    return colon && hl == (size_t)(colon - want) + 2 && !memcmp(have, want, hl - 1) &&
           have[hl - 1] == '*';
}

bool auth_has_scope(const json_t *claims, const char *scope)
{
    const char *s = json_string_value(json_object_get(claims, "scope"));
    while (s && *s) {
        while (*s == ' ')
            s++;
        size_t n = strcspn(s, " ");
        if (n && grants(s, n, scope))
            return true;
        s += n;
    }
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(claims, "scopes"), i, v) {
        if (json_is_string(v) && grants(json_string_value(v), json_string_length(v), scope))
            return true;
    }
    return false;
}

void auth_snapshot(auth *a, auth_stats *out)
{
    pthread_mutex_lock(&a->mu);
    *out = (auth_stats){a->hits, a->misses, a->evictions, a->failures, json_object_size(a->cache),
                        a->bytes};
    pthread_mutex_unlock(&a->mu);
}
