/* libFuzzer: the route matcher and param validation over the real table
 * ("METHOD PATH" inputs). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "routes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = strndup((const char *)data, size);
    if (!s)
        return 0;
    char *sp = strchr(s, ' ');
    const char *method = "GET";
    char *path = s;
    if (sp) {
        *sp = '\0';
        method = s;
        path = sp + 1;
    }
    size_t n;
    const route *t = routes_table(&n);
    route_match m;
    if (route_find(t, n, method, path, &m) == 0) {
        char msg[160];
        route_check_params(&m, msg, sizeof msg);
    }
    free(s);
    return 0;
}
