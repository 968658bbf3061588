/* jwtkit: test keys and tokens: an RSA key pair made at start, its public
 * key as a PEM file and as a JWKS, and tokens minted with libjwt. */
#ifndef STORHD_TEST_JWTKIT_H
#define STORHD_TEST_JWTKIT_H

#include <jwt.h>

/* Makes the key pair and writes dir/pub.pem; 0 on success. */
int jwtkit_init(const char *dir);
void jwtkit_free(void);
const char *jwtkit_pub_path(void);
const char *jwtkit_pub_pem(void);
/* Writes a JWKS with the public key under kid to path. */
int jwtkit_write_jwks(const char *path, const char *kid);
/* A token with claims (JSON text), signed with alg: RS256 uses the private
 * key; other algs use secret. Caller frees. */
char *jwtkit_mint(const char *claims, jwt_alg_t alg, const char *secret, const char *kid);

#endif
