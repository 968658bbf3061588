/* workpool: a fixed set of worker threads that run blocking engine calls
 * (anything that may wait for fsync) off the HTTP event loops. Tasks run in
 * FIFO order; the pool owns nothing of what a task points at. */
#ifndef STORHD_WORKPOOL_H
#define STORHD_WORKPOOL_H

typedef struct workpool workpool;

workpool *workpool_new(int threads);
/* Runs fn(arg) on some worker; 0, or -1 when out of memory or shut down. */
int workpool_submit(workpool *p, void (*fn)(void *), void *arg);
/* Finishes the queued tasks and joins the workers; later submits fail. */
void workpool_shutdown(workpool *p);
/* Shuts down if needed, then frees the pool. */
void workpool_free(workpool *p);

#endif
