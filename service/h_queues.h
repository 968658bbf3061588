/* h_queues: the /v1/queues handlers: enqueue (one or many), claim with an
 * optional long poll (the connection is parked, no thread waits, and an
 * enqueue wakes it), complete, requeue, purge, counts, verify, repair. */
#ifndef STORHD_H_QUEUES_H
#define STORHD_H_QUEUES_H

typedef struct http_req http_req;

int h_queues_enqueue(http_req *req);
int h_queues_claim(http_req *req);
int h_queues_complete_one(http_req *req);
int h_queues_complete_many(http_req *req);
int h_queues_requeue(http_req *req);
int h_queues_purge(http_req *req);
int h_queues_stats(http_req *req);
int h_queues_verify(http_req *req);
int h_queues_repair(http_req *req);

#endif
