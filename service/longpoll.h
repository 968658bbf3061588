/* longpoll: parked requests waiting for something to happen on a key (a
 * queue name). A parked request holds no thread: its connection stays
 * suspended until longpoll_kick(key) or its deadline, or a periodic re-poll
 * (which catches enqueues by other processes), sends it back to the worker
 * pool to try again. Generations close the race between "found nothing"
 * and "parked": a kick in between makes the park retry at once. */
#ifndef STORHD_LONGPOLL_H
#define STORHD_LONGPOLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct http_req http_req;

int longpoll_start(void);
/* Re-runs every parked request once (so each answers), then stops. */
void longpoll_stop(void);
/* The kick count of key, read before trying. */
uint64_t longpoll_generation(const char *key);
/* From a deferred fn that found nothing: park req until kicked, the next
 * re-poll, or deadline_us (CLOCK_MONOTONIC); then fn runs again on the
 * pool. seen is what longpoll_generation returned before trying. Returns
 * false when no more waiting is possible (shutting down): reply now. */
bool longpoll_park(const char *key, http_req *req, uint64_t deadline_us, int (*fn)(http_req *req),
                   uint64_t seen);
void longpoll_kick(const char *key);
/* How many requests are parked now (for /metrics). */
size_t longpoll_parked(void);
uint64_t longpoll_now_us(void);

#endif
