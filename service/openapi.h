/* openapi: renders the OpenAPI 3.1 document of the route table. Each route
 * carries its contract (operationId, query parameters, request schema,
 * statuses and their schemas: route.h); the schemas, parameters and headers
 * they name live in service/openapi/components.json, embedded at build
 * time. The statuses the HTTP layer answers for every route are added here. */
#ifndef STORHD_OPENAPI_H
#define STORHD_OPENAPI_H

#include <jansson.h>
#include <stddef.h>

#include "route.h"
#include "storh_err.h"

/* The document (new reference), or NULL with err set when a route names a
 * component that does not exist or misses its contract. */
json_t *openapi_build(const route *table, size_t n, const char *version, storh_err *err);

#endif
