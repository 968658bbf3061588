#include "tokens.h"

#include <jansson.h>
#include <jwt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *read_key(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *key = malloc(16384);
    *len = key ? fread(key, 1, 16383, f) : 0;
    fclose(f);
    if (key)
        key[*len] = '\0';
    return key;
}

int tokens_mint(const char *key_path, int n, long ttl_s, const char *path, char **first, char *msg,
                size_t cap)
{
    size_t kl;
    char *key = read_key(key_path, &kl);
    FILE *out = fopen(path, "w");
    if (!key || !out) {
        snprintf(msg, cap, "could not read %s or write %s", key_path, path);
        free(key);
        if (out)
            fclose(out);
        return -1;
    }
    *first = NULL;
    int rc = 0;
    json_int_t exp = (json_int_t)time(NULL) + ttl_s;
    for (int i = 0; i < n && rc == 0; i++) {
        char sub[32];
        snprintf(sub, sizeof sub, "trial-%d", i);
        json_t *claims = json_pack("{sssisssssI}", "sub", sub, "tenant", (7 * i) % 100, "role",
                                   "reader", "scope", "docs:* logs:* queues:*", "exp", exp);
        char *text = json_dumps(claims, JSON_COMPACT);
        jwt_t *jwt = NULL;
        char *token = NULL;
        if (text && jwt_new(&jwt) == 0 && jwt_add_grants_json(jwt, text) == 0 &&
            jwt_set_alg(jwt, JWT_ALG_RS256, (unsigned char *)key, (int)kl) == 0)
            token = jwt_encode_str(jwt);
        if (!token) {
            snprintf(msg, cap, "could not sign a token with %s (an RSA private key in PEM?)",
                     key_path);
            rc = -1;
        } else {
            fprintf(out, "%s\n", token);
            if (i == 0)
                *first = token;
            else
                free(token);
        }
        jwt_free(jwt);
        free(text);
        json_decref(claims);
    }
    if (fclose(out) != 0 && rc == 0) {
        snprintf(msg, cap, "could not write %s", path);
        rc = -1;
    }
    free(key);
    if (rc) {
        free(*first);
        *first = NULL;
    }
    return rc;
}
