/* routes: storhd's route table (every route it serves, in one place) and the
 * OpenAPI document generated from it, so the two cannot drift apart. */
#ifndef STORHD_ROUTES_H
#define STORHD_ROUTES_H

#include <stddef.h>

#include "route.h"

const route *routes_table(size_t *n);
/* The OpenAPI document as JSON text (len bytes), built on first use and
 * owned by the module; NULL if it could not be built. */
const char *routes_openapi(size_t *len);

#endif
