/* libFuzzer: JWT header and claims parsing and verification against a key
 * made at start (every input is some token to refuse or accept). */
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

static auth *a;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!a) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/storhd-fuzz-jwt.pem",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        EVP_PKEY *k = EVP_RSA_gen(2048);
        FILE *f = fopen(path, "w");
        if (!k || !f)
            abort();
        PEM_write_PUBKEY(f, k);
        fclose(f);
        EVP_PKEY_free(k);
        auth_opts o = {path, NULL, "iss", "aud", 30, 100, 1 << 16};
        char msg[160];
        if (auth_new(&o, &a, msg, sizeof msg) != 0)
            abort();
    }
    char *token = strndup((const char *)data, size);
    if (!token)
        return 0;
    json_t *claims = NULL;
    char why[160];
    if (auth_verify(a, token, &claims, why, sizeof why) == 0) {
        auth_has_scope(claims, "docs:read");
        json_decref(claims);
    }
    free(token);
    return 0;
}
