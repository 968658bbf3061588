/* routes: storhd's route table (every route it serves, in one place) and the
 * OpenAPI document generated from it, so the two cannot drift apart. */
#ifndef STORHD_ROUTES_H
#define STORHD_ROUTES_H

#include <jansson.h>
#include <stddef.h>

#include "route.h"

const route *routes_table(size_t *n);
/* Built on first use; owned by the module. */
const json_t *routes_openapi(void);

#endif
