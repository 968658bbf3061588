/* gcommit: group commit for an append-only file. Writers append under their
 * owner's mutex and take a ticket for the bytes they wrote; gcommit_wait then
 * makes one of the waiting threads the leader, which fsyncs once for every
 * byte written so far while the others sleep, so N concurrent appends cost
 * one fsync. No ticket is released before its bytes are on disk. A failed
 * fsync poisons the file: every later wait fails too, since after a failed
 * fsync the kernel may have dropped the dirty pages and a later fsync could
 * report success for data that is gone.
 *
 *   written(t) --wait--> [leader: unlock, fsync, lock] --> synced >= t
 *                   \--> [follower: cond_wait until synced >= t]
 *   flush: fsync now, under the mutex, whatever a leader is doing
 *   switch(fd'): flush, then gen + 1 on fd'; the old fd is closed now, or by
 *                the leader still syncing it when its fsync returns
 *
 * flush and switch never release the owner's mutex, so an owner can make a
 * multi-step change (a segment roll, a file rewrite) that no append can
 * interleave with. */
#ifndef STORH_GCOMMIT_H
#define STORH_GCOMMIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "storh_err.h"
#include "wstats.h"

typedef struct gcommit {
    pthread_mutex_t *mu; /* the owner's mutex, held around every call */
    pthread_cond_t cv;
    int fd;
    uint64_t gen;     /* bumped when the file is switched (segment roll) */
    uint64_t written; /* bytes written to fd in this gen */
    uint64_t synced;  /* bytes of this gen known durable */
    bool syncing;
    int sync_fd;      /* the fd the leader is syncing, while syncing */
    int poisoned;     /* errno of a failed fsync, 0 if none */
    uint64_t pending; /* writes (tickets) since the last fsync began */
    wstats_kind kind; /* for the batch sizes and the poisoned list */
    char name[WSTATS_NAME_CAP];
} gcommit;

typedef struct gcommit_ticket {
    uint64_t gen, off;
} gcommit_ticket;

void gcommit_init(gcommit *g, pthread_mutex_t *mu, int fd, uint64_t size);
void gcommit_destroy(gcommit *g);
/* Names the store for /metrics and /readyz (after init): its kind and its
 * collection name. */
void gcommit_label(gcommit *g, wstats_kind kind, const char *name);
/* Records that fd now holds end bytes; the ticket covers them. */
gcommit_ticket gcommit_written(gcommit *g, uint64_t end);
/* Where the writes stand now: {gen, written}. Two positions are equal only
 * if nothing was written and the file was not switched in between. */
gcommit_ticket gcommit_position(const gcommit *g);
/* Blocks until t is durable. 0, or a STORH_E* code with err set. */
int gcommit_wait(gcommit *g, gcommit_ticket t, storh_err *err);
/* Makes everything written to the current fd durable now. 0, or the poison
 * error (a failed fsync poisons). */
int gcommit_flush(gcommit *g, storh_err *err);
/* 0, or the poison error: an append path asks before it writes anything. */
int gcommit_check(gcommit *g, storh_err *err);
/* Marks the file broken (a failed write could not be undone): every later
 * wait, flush and switch fails with errnum. */
void gcommit_poison(gcommit *g, int errnum);
/* Flushes, then switches to new_fd (of size new_size) and takes the old fd
 * over (the caller must not close it). On an error nothing is switched and
 * new_fd stays the caller's. */
int gcommit_switch(gcommit *g, int new_fd, uint64_t new_size, storh_err *err);

#endif
