/* storh-token: mints an RS256 JWT for tests and trials with libjwt:
 *   storh-token PRIVATE_KEY.pem '{"tenant":7,"scope":"*"}' [EXPIRES_IN_S [KID]]
 * adds exp (now + EXPIRES_IN_S, default 3600) unless the claims have one. */
#include <jansson.h>
#include <jwt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: storh-token KEY.pem CLAIMS_JSON [EXPIRES_IN_S [KID]]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    char key[16384];
    size_t kl = fread(key, 1, sizeof key - 1, f);
    fclose(f);
    key[kl] = '\0';
    json_t *claims = json_loads(argv[2], 0, NULL);
    if (!json_is_object(claims)) {
        fprintf(stderr, "claims must be a JSON object\n");
        return 2;
    }
    if (!json_object_get(claims, "exp"))
        json_object_set_new(
            claims, "exp",
            json_integer((json_int_t)time(NULL) + (argc > 3 ? atol(argv[3]) : 3600)));
    char *text = json_dumps(claims, JSON_COMPACT);
    jwt_t *jwt = NULL;
    int rc = jwt_new(&jwt) || jwt_add_grants_json(jwt, text) ||
             (argc > 4 && jwt_add_header(jwt, "kid", argv[4])) ||
             jwt_set_alg(jwt, JWT_ALG_RS256, (unsigned char *)key, (int)kl);
    char *token = rc ? NULL : jwt_encode_str(jwt);
    if (token)
        printf("%s\n", token);
    else
        fprintf(stderr, "could not sign the token\n");
    free(token);
    free(text);
    jwt_free(jwt);
    json_decref(claims);
    return token ? 0 : 1;
}
