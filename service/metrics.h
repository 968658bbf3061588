/* metrics: the Prometheus counters and histograms of /metrics. Requests are
 * counted per route, status and method with lock-free atomics in arrays sized
 * at start, so recording a request never allocates or locks. Process figures
 * (CPU, RSS, fds) and engine counters are read when /metrics is scraped. */
#ifndef STORHD_METRICS_H
#define STORHD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "route.h"

/* Routes are the table's entries; index n_routes stands for "unmatched". */
int metrics_init(const route *table, size_t n_routes);
void metrics_free(void);
void metrics_observe(int route_index, int status, uint64_t usec, uint64_t bytes_in,
                     uint64_t bytes_out);
/* An extra section rendered at the end of every scrape (engine gauges). */
void metrics_set_extra(void (*fn)(buf *out, void *ctx), void *ctx);
/* Appends the whole exposition (text format 0.0.4) to out. */
void metrics_render(buf *out);

#endif
