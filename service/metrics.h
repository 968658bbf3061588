/* metrics: /metrics in one place. Requests are counted per route, status and
 * method with lock-free atomics in arrays sized at start (no allocation or
 * lock per request). Every other subsystem hands over a snapshot struct at
 * scrape time, and metrics_render prints each family once: HELP, TYPE, then
 * all its samples, as the exposition format requires. */
#ifndef STORHD_METRICS_H
#define STORHD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "route.h"

typedef struct service service;

/* Routes are the table's entries; index n_routes stands for "unmatched". */
int metrics_init(const route *table, size_t n_routes);
void metrics_free(void);
void metrics_observe(int route_index, int status, uint64_t usec, uint64_t bytes_in,
                     uint64_t bytes_out);
/* Appends the whole exposition (text format 0.0.4) of svc to out. */
void metrics_render(buf *out, service *svc);
/* The HELP and TYPE lines that open a family; its samples follow. */
void metrics_family(buf *out, const char *name, const char *type, const char *help);

#endif
