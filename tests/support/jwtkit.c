#include "jwtkit.h"

#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static EVP_PKEY *key;
static char *priv_pem, *pub_pem;
static char pub_path[PATH_MAX];

static char *pem_of(EVP_PKEY *k, bool priv)
{
    BIO *b = BIO_new(BIO_s_mem());
    if (priv)
        PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
    else
        PEM_write_bio_PUBKEY(b, k);
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *out = strndup(p, (size_t)n);
    BIO_free(b);
    return out;
}

int jwtkit_init(const char *dir)
{
    key = EVP_RSA_gen(2048);
    if (!key)
        return -1;
    priv_pem = pem_of(key, true);
    pub_pem = pem_of(key, false);
    snprintf(pub_path, sizeof pub_path, "%s/pub.pem", dir);
    FILE *f = fopen(pub_path, "w");
    if (!f)
        return -1;
    fputs(pub_pem, f);
    fclose(f);
    return 0;
}

void jwtkit_free(void)
{
    free(priv_pem);
    free(pub_pem);
    EVP_PKEY_free(key);
}

const char *jwtkit_pub_path(void)
{
    return pub_path;
}

const char *jwtkit_pub_pem(void)
{
    return pub_pem;
}

static char *b64url_bn(const char *param)
{
    BIGNUM *bn = NULL;
    EVP_PKEY_get_bn_param(key, param, &bn);
    int n = BN_num_bytes(bn);
    unsigned char *raw = malloc((size_t)n), *enc = malloc((size_t)n * 2 + 4);
    BN_bn2bin(bn, raw);
    int l = EVP_EncodeBlock(enc, raw, n);
    while (l > 0 && enc[l - 1] == '=')
        l--;
    enc[l] = '\0';
    for (int i = 0; i < l; i++)
        enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
    free(raw);
    BN_free(bn);
    return (char *)enc;
}

int jwtkit_write_jwks(const char *path, const char *kid)
{
    char *n = b64url_bn(OSSL_PKEY_PARAM_RSA_N), *e = b64url_bn(OSSL_PKEY_PARAM_RSA_E);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"%s\",\"n\":\"%s\",\"e\":\"%s\"}]}", kid,
                n, e);
        fclose(f);
    }
    free(n);
    free(e);
    return f ? 0 : -1;
}

char *jwtkit_mint(const char *claims, jwt_alg_t alg, const char *secret, const char *kid)
{
    jwt_t *j;
    jwt_new(&j);
    jwt_add_grants_json(j, claims);
    if (kid)
        jwt_add_header(j, "kid", kid);
    const char *k = alg == JWT_ALG_RS256 ? priv_pem : secret;
    jwt_set_alg(j, alg, (const unsigned char *)k, k ? (int)strlen(k) : 0);
    char *t = jwt_encode_str(j);
    jwt_free(j);
    return t;
}
