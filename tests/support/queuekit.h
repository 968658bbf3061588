/* queuekit: the queue tests' shared helper: a queue opened (created) under
 * a test's scratch root, NULL with the reason on stderr. */
#ifndef STORHD_TEST_QUEUEKIT_H
#define STORHD_TEST_QUEUEKIT_H

#include <stdio.h>

#include "queue.h"

static inline queue *queuekit_open(const char *root, const char *name)
{
    queue *q = NULL;
    storh_err err;
    if (queue_open(root, name, true, &q, &err))
        fprintf(stderr, "open %s: %s\n", name, err.msg);
    return q;
}

#endif
