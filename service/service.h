/* service: what every handler can reach: the settings, the route table and
 * the engine registry. One instance lives for the process. */
#ifndef STORHD_SERVICE_H
#define STORHD_SERVICE_H

#include <stddef.h>

#include "budget.h"
#include "config.h"
#include "registry.h"
#include "route.h"
#include "workpool.h"

typedef struct service {
    config cfg;
    const route *routes;
    size_t nroutes;
    registry *reg;
    workpool *pool;          /* ROUTE_RUN_POOL handlers run here */
    workpool *side;          /* ROUTE_RUN_SIDE handlers run here */
    struct auth *auth;       /* NULL: no JWT key, /v1 on loopback only */
    struct rpc *rpc;         /* NULL: no page RPC configured */
    struct mirror **mirrors; /* from the config's "mirrors" (or the default) */
    size_t nmirrors;
    budget budget; /* descriptors and memory, decided at start */
} service;

#endif
