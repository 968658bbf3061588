/* accesslog: one JSON line per request on stderr (method, route pattern,
 * path, status, microseconds, bytes in and out, and the error message of a
 * 5xx reply), written with a single
 * write(2) so lines from worker threads never interleave. */
#ifndef STORHD_ACCESSLOG_H
#define STORHD_ACCESSLOG_H

#include <stdint.h>

void accesslog_write(const char *method, const char *route, const char *path, int status,
                     uint64_t usec, uint64_t bytes_in, uint64_t bytes_out, const char *error);
/* A service event (start, stop, warning) as a JSON line; fields is a jansson
 * object the function steals. */
void accesslog_event(const char *msg, void *fields);

#endif
