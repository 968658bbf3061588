/* registry: the engine handles storhd has opened, one per collection name,
 * shared by all worker threads for the life of the process. Opening is lazy
 * and creates nothing on disk (an engine creates its directory on its first
 * write). Names must be validated (route_valid_name) before they get here. */
#ifndef STORHD_REGISTRY_H
#define STORHD_REGISTRY_H

#include "docstore.h"
#include "storh_err.h"

typedef struct registry registry;

registry *registry_new(const char *root);
void registry_free(registry *r);
/* The docstore for name; owned by the registry (do not close). */
int registry_docstore(registry *r, const char *name, docstore **out, storh_err *err);

#endif
