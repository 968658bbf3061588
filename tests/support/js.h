/* js: a JSON value from a literal, through the engines' decoder (sjson), for
 * the unit tests; NULL if it does not parse. */
#ifndef STORHD_TEST_JS_H
#define STORHD_TEST_JS_H

#include <string.h>

#include "sjson.h"

static inline json_t *js(const char *s)
{
    return sjson_decode(s, strlen(s), NULL);
}

#endif
