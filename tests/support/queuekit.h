/* queuekit: the queue tests' shared helpers: a queue opened (created)
 * under a test's scratch root, its counts, its log's bytes. */
#ifndef STORHD_TEST_QUEUEKIT_H
#define STORHD_TEST_QUEUEKIT_H

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "fsx.h"
#include "queue.h"

/* NULL with the reason on stderr when it cannot be opened. */
static inline queue *queuekit_open(const char *root, const char *name)
{
    queue *q = NULL;
    storh_err err;
    if (queue_open(root, name, true, &q, &err))
        fprintf(stderr, "open %s: %s\n", name, err.msg);
    return q;
}

/* The count of key ("pending", "processing", "done"); -1 when the queue
 * answers none. */
static inline long long queuekit_count(queue *q, const char *key)
{
    json_t *c;
    if (queue_counts(q, &c, NULL))
        return -1;
    long long v = json_integer_value(json_object_get(c, key));
    json_decref(c);
    return v;
}

/* The bytes of root/name/queue.log, NUL-ended ("" when there is none); the
 * caller frees them. */
static inline char *queuekit_log(const char *root, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/queue.log", root, name);
    buf b = BUF_INIT;
    fsx_read_all(p, &b, NULL);
    return b.data ? b.data : strdup("");
}

#endif
